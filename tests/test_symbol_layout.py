#!/usr/bin/env python3
"""Objects that our binaries share with the libraries they load have one size.

A C++ template's static data member or an inline function's static variable
(Boost.Asio's call stacks, fmt's tables, ...) is defined in every shared
object that uses it, and the dynamic linker binds all of them to one
definition: the first in the process (for GNU-unique symbols, whatever the
load order). When two objects were compiled with different settings, the
same name can stand for objects of different layouts, and the library whose
definition lost reads and writes ours as its own. librados did exactly that
with Boost.Asio's `call_stack<...>::top_` (1 byte in ours, a 4-byte pthread
key in libceph-common's): the sanitizer build of blobstored crashed in
MonClient::handle_config, the plain build overwrote its neighbours.

For every ELF program and library of the build tree, this lists the system
libraries it loads (ldd), and compares the size of every data object both
define (nm -D -S). Any difference fails, naming the object, both sizes and
both files. Exit 77 (skipped) when the tree is not built.
"""

import os
import re
import subprocess
import sys
from collections import defaultdict

SKIP = 77
# Data objects: initialised, read-only, BSS, weak and GNU-unique objects.
DATA_TYPES = set("BDRVvu")
LDD_LINE = re.compile(r"^\s*(\S+)\s+=>\s+(/\S+)\s+\(0x[0-9a-f]+\)")


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def our_objects(build):
    """The real ELF files of the build: programs and shared libraries (libtool
    keeps those it wraps under .libs/)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(build):
        dirnames[:] = [d for d in dirnames if d not in ("venv", "bench-results", "corpus", "artifacts")]
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or name.endswith((".o", ".lo", ".a", ".la")):
                continue
            if os.path.basename(dirpath) == ".libs" or os.access(path, os.X_OK):
                if is_elf(path):
                    found.append(path)
    return sorted(found)


def data_objects(path):
    """{name: size} of the data objects `path` defines and exports."""
    out = subprocess.run(["nm", "-D", "-S", "--defined-only", path], capture_output=True, text=True)
    objects = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in DATA_TYPES:
            objects[parts[3]] = int(parts[1], 16)
    return objects


def loaded_libraries(path, libdirs, build):
    """(ours, system): the shared objects the process of `path` loads, ours
    being those of the build tree."""
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(libdirs))
    out = subprocess.run(["ldd", path], capture_output=True, text=True, env=env)
    ours, system = set(), set()
    inside = os.path.realpath(build) + os.sep
    for line in out.stdout.splitlines():
        m = LDD_LINE.match(line)
        if m:
            real = os.path.realpath(m.group(2))
            (ours if real.startswith(inside) else system).add(real)
    return ours, system


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    lines = out.stdout.splitlines()
    return lines if len(lines) == len(names) else list(names)


def main():
    build = os.environ.get("BS_BUILDDIR")
    if not build or not os.path.isdir(build):
        print("BS_BUILDDIR is not set (run through `make check`, or export it)")
        return SKIP
    ours = our_objects(build)
    if not ours:
        print(f"no built programs or libraries in {build}")
        return SKIP
    libdirs = sorted({os.path.dirname(p) for p in ours if ".so" in os.path.basename(p)})
    symbols = {}

    def objects_of(path):
        if path not in symbols:
            symbols[path] = data_objects(path)
        return symbols[path]

    # One process: the program (or library), our libraries and the system's
    # it loads. Every pair (ours, the system's) in it is compared once.
    pairs = set()
    system_libs = set()
    for path in ours:
        our_libs, system = loaded_libraries(path, libdirs, build)
        system_libs |= system
        for mine in {os.path.realpath(path)} | our_libs:
            pairs.update((mine, lib) for lib in system)
    mismatches = []
    compared = 0
    shared_names = set()
    for mine_path, lib in sorted(pairs):
        mine, theirs = objects_of(mine_path), objects_of(lib)
        for name in mine.keys() & theirs.keys():
            compared += 1
            shared_names.add(name)
            if mine[name] != theirs[name]:
                mismatches.append((name, mine_path, mine[name], lib, theirs[name]))
    readable = dict(zip([m[0] for m in mismatches], demangle([m[0] for m in mismatches])))
    for name, path, size, lib, other in mismatches:
        print(f"{readable[name]}: {size} bytes in {os.path.relpath(path, build)}, {other} bytes in {lib}",
              file=sys.stderr)
    print(f"{len(ours)} programs and libraries, {len(system_libs)} system libraries, "
          f"{compared} shared data objects compared ({len(shared_names)} names), {len(mismatches)} of another size")
    if compared == 0:
        print("no data object is shared with a system library: the comparison proved nothing", file=sys.stderr)
        return 1
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
