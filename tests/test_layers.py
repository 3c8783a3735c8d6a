#!/usr/bin/env python3
"""The folders are layers: every #include between top-level folders points
down the order in LAYERS, so the folder-level include graph has no cycle.

Reads every C++ source and header of the tree, resolves each #include of our
own (<blobstreaming/...>, "dir/File.h", the omniidl stubs) to the top-level
folder that holds it, and fails naming the file and line of each include that
points up or sideways. `--print` shows the graph (folder -> folder: count).

Private sub-folders (PRIVATE) are one program's implementation: besides the
includes, every local.mk is read, and a source compiled, a header folder put
on the include path or a library linked across such a boundary fails too.
"""

import argparse
import glob
import os
import re
import sys
from collections import Counter, defaultdict

# Bottom first. A folder may include only folders listed before it (and
# itself). tests/ sits above everything: it drives every layer.
LAYERS = ["common", "idl", "sdc", "transporter", "blobstore", "clients", "gateway", "benchmarks", "tests"]

# What a folder may reach below it, when that is less than "everything
# below" (the intent, not just the order).
ALLOWED = {
    "common": set(),
    "idl": set(),
    "sdc": {"common"},
    "transporter": {"common", "idl"},
    "blobstore": {"common", "idl", "sdc", "transporter"},
    # The client library reads a FileStore's file on the same host
    # (FileStore.h, installed); it never includes the daemon's internals.
    "clients": {"common", "idl", "transporter", "blobstore"},
    # blob-dicomd: a server, as blobstored is, and a client of the stores
    # (libblobclient, the study index of clients/dicom). What it shares with
    # blobstored comes from transporter/ (libblobdaemon), never blobstore/.
    "gateway": {"common", "idl", "transporter", "clients"},
    "benchmarks": {"common", "idl", "transporter", "clients"},
    "tests": set(LAYERS) - {"tests"},
}

# Sub-folders private to one program, and who may use them: the files under
# `users` (includes) and the build fragments in `makefiles` (sources
# compiled, -I, libraries built of them). What two programs share is a
# library of its own (transporter/src/daemon: libblobdaemon).
BLOBSTORED = {"users": ["blobstore/src/", "blobstore/tests/", "tests/fuzz/"],
              "makefiles": ["blobstore/local.mk", "tests/fuzz/local.mk"]}
DAEMONS = {"users": ["transporter/", "blobstore/src/", "blobstore/tests/", "gateway/", "tests/fuzz/"],
           "makefiles": ["transporter/local.mk", "blobstore/local.mk", "gateway/local.mk"]}
PRIVATE = {
    # The daemon's data plane, store service, servants and start-up (libblobserver,
    # blobstored). tests/fuzz feeds its option parser directly.
    "blobstore/src/server": BLOBSTORED,
    "blobstore/src/service": BLOBSTORED,
    "blobstore/src/servants": BLOBSTORED,
    "blobstore/src/blobstored": BLOBSTORED,
    # blob-dicomd, the DICOM gateway.
    "gateway": {"users": ["gateway/"], "makefiles": ["gateway/local.mk"]},
    # libblobdaemon: what the two servers share; no client includes or links it.
    "transporter/src/daemon": DAEMONS,
    "transporter/include/blobstreaming/transporter/daemon": DAEMONS,
}

# Public headers: <blobstreaming/NAME/...> lives in this folder.
PUBLIC = {"common": "common", "blobstore": "blobstore", "transporter": "transporter",
          "client": "clients", "sdc": "sdc"}
# Internal headers reached through -I of another folder: which files of a
# folder may be included from outside it (none but the public ones).
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCES = (".cpp", ".cc", ".h", ".hh", ".hpp")


def top_of(path):
    return path.split(os.sep, 1)[0]


def index_tree(root):
    """Relative path of every source file, and for each path suffix the files
    that end with it (to resolve "server/DataServer.h" whichever -I is used)."""
    files = []
    for folder in LAYERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "_")) and d not in ("venv", "corpus")]
            for name in filenames:
                if name.endswith(SOURCES):
                    files.append(os.path.relpath(os.path.join(dirpath, name), root))
    by_suffix = defaultdict(list)
    for f in files:
        parts = f.split(os.sep)
        for i in range(1, len(parts)):
            by_suffix["/".join(parts[i:])].append(f)
    return files, by_suffix


def resolve_file(including, target, by_suffix):
    """The file of ours that an #include names ("File.h", <blobstreaming/...>), or None."""
    here = os.path.dirname(including)
    if os.path.exists(os.path.join(ROOT, here, target)):
        return os.path.normpath(os.path.join(here, target))
    candidates = by_suffix.get(target, [])
    if not candidates:
        return None
    own = [c for c in candidates if top_of(c) == top_of(including)]
    return own[0] if own else candidates[0]


def resolve(including, kind, target, by_suffix):
    """The top-level folder that `target` comes from, or None (system header)."""
    if target.startswith("blobstreaming/"):
        name = target.split("/")[1]
        return PUBLIC.get(name)
    if target in ("BlobStreaming.hh", "idl/BlobStreaming.hh") or target.startswith("BsBench"):
        return "idl" if target.endswith("BlobStreaming.hh") else top_of(including)
    if kind == "<":
        return None
    found = resolve_file(including, target, by_suffix)
    return top_of(found) if found else None


def private_of(path):
    """The PRIVATE sub-folder that holds `path` (a file or a folder), or None."""
    for folder in PRIVATE:
        if path == folder or path.startswith(folder + "/"):
            return folder
    return None


def may_use(folder, user):
    return any(user.startswith(prefix) for prefix in PRIVATE[folder]["users"])


ASSIGNMENT = re.compile(r"^\s*([A-Za-z0-9_@]+)\s*[+:]?=(.*)$")


def makefile_assignments(path):
    """The variable assignments of a make fragment (continuations joined,
    comments dropped): (name, [(line number, word), ...]) each."""
    assignments, name, words = [], None, []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            continued = line.endswith("\\")
            text = (line[:-1] if continued else line).split("#", 1)[0]
            if name is None:
                match = ASSIGNMENT.match(text)
                if match:
                    name, text = match.group(1), match.group(2)
                elif continued:
                    name, text = "", ""  # a continued rule or recipe: skipped
            if name is not None:
                words += [(lineno, word) for word in text.split()]
                if not continued:
                    if name:
                        assignments.append((name, words))
                    name, words = None, []
    return assignments


def build_violations(root):
    """Sources, -I folders and libraries of a PRIVATE sub-folder that a
    local.mk not listed for it names."""
    makefiles = sorted(os.path.relpath(p, root) for folder in LAYERS
                       for p in glob.glob(os.path.join(root, folder, "**", "local.mk"), recursive=True))
    parsed = {m: makefile_assignments(os.path.join(root, m)) for m in makefiles}
    # A library built of private sources only (of folders with the same
    # users) is as private as they are.
    private_libs = {}
    for assignments in parsed.values():
        sources = {name: [w for _, w in words] for name, words in assignments if name.endswith("_SOURCES")}
        for _, words in assignments:
            for _, lib in words:
                if not lib.endswith(".la"):
                    continue
                own = sources.get(re.sub(r"[^A-Za-z0-9_@]", "_", lib) + "_SOURCES", [])
                folders = [private_of(src) for src in own]
                if own and None not in folders and len({tuple(PRIVATE[f]["makefiles"]) for f in folders}) == 1:
                    private_libs[lib] = folders[0]
    violations = []
    for m, assignments in parsed.items():
        for name, words in assignments:
            for lineno, word in words:
                path = re.sub(r"^(-I)?\$\((top_)?srcdir\)/", "", word)
                if word.startswith("-I") and path == word:
                    continue
                if path in private_libs:
                    folder, what = private_libs[path], "links " + path + ", built of"
                elif word.startswith("-I"):
                    folder, what = private_of(path.rstrip("/")), "puts on the include path " + path + ", of"
                elif path.endswith(SOURCES):
                    folder, what = private_of(path), "compiles " + path + ", of"
                else:
                    continue
                if folder and m not in PRIVATE[folder]["makefiles"]:
                    violations.append(f"{m}:{lineno}: {what} {folder}/, which only "
                                      f"{', '.join(PRIVATE[folder]['makefiles'])} may build")
    return violations


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--print", action="store_true", help="print the folder-level include graph")
    parser.add_argument("--root", default=os.environ.get("BS_SRCDIR") or
                        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = parser.parse_args()
    global ROOT
    ROOT = args.root
    files, by_suffix = index_tree(ROOT)
    edges = Counter()
    violations = []
    for f in files:
        src = top_of(f)
        with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                if m.group(1) == '"' or m.group(2).startswith("blobstreaming/"):
                    target = resolve_file(f, m.group(2), by_suffix)
                    folder = private_of(os.path.dirname(target)) if target else None
                    if folder and not may_use(folder, f):
                        violations.append(f"{f}:{lineno}: includes {target}, private to {folder}/ (used by "
                                          f"{', '.join(PRIVATE[folder]['users'])} only)")
                dst = resolve(f, m.group(1), m.group(2), by_suffix)
                if dst is None or dst == src:
                    continue
                edges[(src, dst)] += 1
                if dst not in ALLOWED[src]:
                    violations.append(f"{f}:{lineno}: {src}/ includes {m.group(2)} from {dst}/, "
                                      f"which {src}/ may not use (allowed: {', '.join(sorted(ALLOWED[src])) or 'nothing'})")
    if args.print:
        for (src, dst), n in sorted(edges.items(), key=lambda e: (LAYERS.index(e[0][0]), LAYERS.index(e[0][1]))):
            print(f"{src:12} -> {dst:12} {n:4}")
    violations += build_violations(ROOT)
    # A cycle is impossible when every edge points down LAYERS; check anyway,
    # so that a change to ALLOWED cannot hide one.
    graph = defaultdict(set)
    for src, dst in edges:
        graph[src].add(dst)
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in graph[node]:
            if state.get(nxt) == "open":
                violations.append("cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in list(graph):
        if node not in state:
            visit(node, [node])
    for v in violations:
        print(v, file=sys.stderr)
    print(f"{len(files)} files, {sum(edges.values())} includes between {len(edges)} folder pairs, "
          f"{len(violations)} against the layers")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
