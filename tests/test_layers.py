#!/usr/bin/env python3
"""The folders are layers: every #include between top-level folders points
down the order in LAYERS, so the folder-level include graph has no cycle.

Reads every C++ source and header of the tree, resolves each #include of our
own (<blobstreaming/...>, "dir/File.h", the omniidl stubs) to the top-level
folder that holds it, and fails naming the file and line of each include that
points up or sideways. `--print` shows the graph (folder -> folder: count).
"""

import argparse
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


def resolve(including, kind, target, by_suffix):
    """The top-level folder that `target` comes from, or None (system header)."""
    if target.startswith("blobstreaming/"):
        name = target.split("/")[1]
        return PUBLIC.get(name)
    if target in ("BlobStreaming.hh", "idl/BlobStreaming.hh") or target.startswith("BsBench"):
        return "idl" if target.endswith("BlobStreaming.hh") else top_of(including)
    if kind == "<":
        return None
    here = os.path.dirname(including)
    if os.path.exists(os.path.join(ROOT, here, target)):
        return top_of(including)
    candidates = by_suffix.get(target, [])
    if not candidates:
        return None
    own = [c for c in candidates if top_of(c) == top_of(including)]
    return top_of(own[0] if own else candidates[0])


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
