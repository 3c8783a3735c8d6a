#!/usr/bin/env python3
"""Every C++ program in the documentation compiles against the installed
library with the flags of its blobstreaming.pc, and runs, against a real
omniNames and blobstored.

The convention (docs/CLIENT_API.md): each fenced ```cpp block of
docs/*.md and README.md is a complete program, marked on the line before
its fence by an HTML comment

    <!-- snippet: NAME [pkg=MOD,MOD...] [libs=-lX...] -->

(`pkg`: the pkg-config modules to compile and link with, default
`blobstreaming`; `libs`: more linker arguments). A ```cpp block without a
marker, or a marker without a block, fails the test: declarations and
excerpts go in unmarked ``` blocks. `make check` stages the library as
installed into tests/snippet-root (headers and .pc by `make install-data
DESTDIR=…`, the shared libraries copied; see tests/local.mk) and
every program is compiled with `$CXX` (default g++) -Wall -Wextra -Werror
and the installed blobstreaming.pc's Cflags and Libs (its prefix pointed at
the staging directory), then run in a directory of its own holding
study/slice-001.dcm … slice-003.dcm (4-8 KiB of random bytes) and mdib.xml
(sdc/tests/data/mdib.xml), with `corbaname::127.0.0.1:2809` in its source
replaced by the test's Naming Service, which serves a FileStore `ws1`. Each
must exit 0 within 120 s."""

import glob
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import TestFailure, TestSkipped, build_dir, check, check_equal, src_dir, step  # noqa: E402

DEFAULT_NAMING = "corbaname::127.0.0.1:2809"
MARKER = re.compile(r"^<!--\s*snippet:\s*(?P<name>[A-Za-z0-9_]+)(?P<attrs>(?:\s+[a-z]+=\S+)*)\s*-->\s*$")
FENCE = re.compile(r"^```(?P<lang>\S*)\s*$")


def extract(path):
    """The marked programs of one Markdown file: [(name, attrs, source, line)]."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    found, pending, i = [], None, 0
    where = os.path.relpath(path, src_dir())
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line.strip())
        if m:
            check(pending is None, f"{where}:{i + 1}: a snippet marker follows another one without a ```cpp block")
            attrs = dict(a.split("=", 1) for a in m.group("attrs").split())
            pending = (m.group("name"), attrs, i + 1)
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            lang = fence.group("lang")
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
            check(end is not None, f"{where}:{i + 1}: a fenced block that never ends")
            if lang in ("cpp", "c++", "cxx"):
                check(pending is not None,
                      f"{where}:{i + 1}: a ```{lang} block without a <!-- snippet: NAME --> marker on the line "
                      "before (every C++ block is a complete program that make check compiles and runs; put "
                      "excerpts in an unmarked ``` block)")
                name, attrs, marker_line = pending
                check(marker_line == i, f"{where}:{marker_line}: the marker of snippet {name} is not right before "
                                        "its ```cpp fence")
                found.append((name, attrs, "\n".join(lines[i + 1:end]) + "\n", f"{where}:{i + 1}"))
            else:
                check(pending is None, f"{where}:{pending[2] if pending else 0}: snippet marker before a "
                                       f"```{lang} block, not a ```cpp one")
            pending = None
            i = end + 1
            continue
        if line.strip():
            check(pending is None, f"{where}:{pending[2] if pending else 0}: a snippet marker not followed by a "
                                   "```cpp block")
        i += 1
    check(pending is None, f"{where}:{pending[2] if pending else 0}: a snippet marker at the end of the file")
    return found


def staged_prefix():
    """The prefix under tests/snippet-root where `make check` staged the
    library (its blobstreaming.pc), and that .pc file."""
    root = os.path.join(build_dir(), "tests", "snippet-root")
    pcs = glob.glob(os.path.join(root, "**", "pkgconfig", "blobstreaming.pc"), recursive=True)
    if not pcs:
        raise TestSkipped(f"no blobstreaming.pc under {root}: run through `make check` (it stages the library "
                          "there first)")
    pc = pcs[0]
    with open(pc, encoding="utf-8") as f:
        installed_prefix = next(line.split("=", 1)[1].strip() for line in f if line.startswith("prefix="))
    return root + installed_prefix, pc


def pkg_flags(modules, prefix, pc):
    """Cflags and Libs of `modules`: blobstreaming from the staged .pc (its
    prefix redefined to the staging directory), the others from the system."""
    flags = []
    for module in modules:
        argv = ["pkg-config", "--cflags", "--libs", module]
        env = dict(os.environ)
        if module == "blobstreaming":
            argv[1:1] = ["--define-variable=prefix=" + prefix]
            env["PKG_CONFIG_PATH"] = os.path.dirname(pc)
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env)
        check(r.returncode == 0, f"`{' '.join(argv)}` failed: {r.stderr.strip()}")
        flags += r.stdout.split()
    return flags


def make_fixtures(directory):
    os.makedirs(os.path.join(directory, "study"))
    for i, size in enumerate((4096, 6000, 8192), start=1):
        harness.write_random(os.path.join(directory, "study", f"slice-{i:03d}.dcm"), size, algorithm=None)
    shutil.copy(os.path.join(src_dir(), "sdc", "tests", "data", "mdib.xml"), os.path.join(directory, "mdib.xml"))


def test(c):
    docs = sorted(glob.glob(os.path.join(src_dir(), "docs", "*.md"))) + [os.path.join(src_dir(), "README.md")]
    snippets = [s for path in docs for s in extract(path)]
    names = [s[0] for s in snippets]
    check_equal(sorted(set(names)), sorted(names), "snippet names (each once)")
    check(len(snippets) >= 6, f"only {len(snippets)} snippets found in {docs}")
    step(f"{len(snippets)} snippets: {', '.join(names)}")

    prefix, pc = staged_prefix()
    with open(pc, encoding="utf-8") as f:
        cflags_line = next(line for line in f if line.startswith("Cflags:"))
    check("-std=c++17" in cflags_line.split(), f"blobstreaming.pc gives no language level: {cflags_line!r}")
    cxx = os.environ.get("CXX", "g++").split()
    env = dict(c.env)
    env["LD_LIBRARY_PATH"] = os.path.join(prefix, "lib") + (":" + env["LD_LIBRARY_PATH"]
                                                             if env.get("LD_LIBRARY_PATH") else "")
    c.start_daemon("ws1", "file")

    for name, attrs, source, where in snippets:
        step(f"snippet {name} ({where})")
        directory = c.path(f"snippet-{name}")
        make_fixtures(directory)
        cpp = os.path.join(directory, f"{name}.cpp")
        with open(cpp, "w", encoding="utf-8") as f:
            f.write(source.replace(DEFAULT_NAMING, c.naming))
        flags = pkg_flags(attrs.get("pkg", "blobstreaming").split(","), prefix, pc)
        # -rpath-link: the staged libraries' own dependencies (libblobtransporter)
        # are where an installed system's linker would find them by itself.
        argv = cxx + ["-Wall", "-Wextra", "-Werror", cpp, "-o", os.path.join(directory, name)] + flags + \
            attrs.get("libs", "").split() + ["-Wl,-rpath-link," + os.path.join(prefix, "lib")]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise TestFailure(f"snippet {name} ({where}) does not compile:\n  {' '.join(argv)}\n{r.stderr[-4000:]}")
        try:
            run = subprocess.run([os.path.join(directory, name)], cwd=directory, capture_output=True, text=True,
                                 timeout=120, env=env, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"snippet {name} ({where}) did not finish within 120 s") from None
        step(f"  exit {run.returncode}; stdout: {run.stdout.strip()[:300]!r}")
        check(run.returncode == 0, f"snippet {name} ({where}) exited {run.returncode}\n  stdout: {run.stdout!r}\n"
                                   f"  stderr: {run.stderr[-3000:]!r}")


if __name__ == "__main__":
    harness.main(test)
