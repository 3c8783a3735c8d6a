#!/usr/bin/env python3
"""The Debian packages built from this tree, installed and used
(`make check-packages`; not part of `make check`, CI runs it after the
suite; needs the packages of `scripts/install-deps --packaging`):

- a copy of the source tree (the files git tracks or would track) is built
  with `dpkg-buildpackage -us -uc -b` in $BS_BUILDDIR/check-packages (the
  source tree gets no artefact), with ccache when it is installed;
- the five packages hold what docs/DEPLOYMENT.md says each holds;
- `lintian` on the .changes and every .deb reports no error and no warning;
- every package's Depends is installed on this machine;
- installed with `dpkg --root` into a root of their own (no container, the
  machine's dpkg database untouched), the unit's ExecStart
  (`blobstored --name %i --config /etc/blobstreaming/%i.conf`, paths into
  the root; its postinst created the blobstreaming user there) starts with a configuration naming a file store in the test's
  directory and an omniNames the test started on an ephemeral port; the
  installed `blob` pushes 3 MiB + 1 byte and pulls it back bit-exact; a
  program built against the installed headers and blobstreaming.pc lists
  the store's Blob.

Skipped (77) when dpkg-buildpackage, debhelper or lintian is missing.
`--keep` leaves the work directory for a look at the packages; `--work
DIR` builds in DIR instead of $BS_BUILDDIR/check-packages (emptied first).
With ccache, a build in the same directory as before is mostly cache hits
(the compiler flags name the directory)."""

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402

PACKAGES = {
    "blobstreaming-daemon": ["./usr/bin/blobstored", "./usr/bin/blob-activatord",
                             "./lib/systemd/system/blobstored@.service", "./usr/lib/sysusers.d/blobstreaming.conf",
                             "./usr/share/doc/blobstreaming-daemon/blobstored.conf.example",
                             "./usr/share/man/man8/blobstored.8.gz", "./usr/share/man/man8/blob-activatord.8.gz"],
    "blobstreaming-client": ["./usr/bin/blob", "./usr/share/man/man1/blob.1.gz", "libblobclient.so.0"],
    "libblobclient-dev": ["./usr/include/blobstreaming/client/Session.h", "blobstreaming.pc", "libblobclient.so"],
    "blobstreaming-dicom": ["./usr/bin/blob-dicomd", "./lib/systemd/system/blob-dicomd@.service",
                            "./usr/share/man/man8/blob-dicomd.8.gz"],
    "blobstreaming-sdc": ["./usr/bin/sdc-provider", "./usr/bin/sdc-get", "./usr/share/man/man1/sdc-provider.1.gz",
                          "./usr/share/man/man1/sdc-get.1.gz"],
}

LISTING = r"""
#include <blobstreaming/client/Session.h>
#include <iostream>
int main(int argc, char** argv) {
    if (argc != 3) return 2;
    blobstreaming::client::Session::Options options;
    options.naming_url = argv[1];
    blobstreaming::client::Session session(options);
    for (const auto& blob : session.list(argv[2])) std::cout << blob.info.name << "\n";
}
"""


def run(argv, what, timeout, **kw):
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, **kw)
    check(r.returncode == 0, f"{what} exited {r.returncode}:\n{(r.stdout + r.stderr)[-4000:]}")
    return r.stdout


def source_copy(src, dest):
    """The files of the tree (tracked, or untracked but not ignored) copied
    to `dest`: no build directory, no artefact of an earlier build."""
    r = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       capture_output=True, timeout=60)
    if r.returncode != 0:
        raise harness.TestFailure(f"{src} is not a git checkout: `git ls-files` exited {r.returncode} "
                                  f"({r.stderr.decode(errors='replace').strip()})")
    for rel in r.stdout.decode().split("\0"):
        if not rel or not os.path.lexists(os.path.join(src, rel)):
            continue  # deleted in the work tree, not yet committed
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(os.path.join(src, rel), os.path.join(dest, rel), follow_symlinks=False)


def build(work, env):
    src = os.path.join(work, "src")
    step(f"source copy in {src}")
    source_copy(harness.src_dir(), src)
    env = dict(env)
    env["DEB_BUILD_OPTIONS"] = f"parallel={os.cpu_count() or 1} nocheck"
    if shutil.which("ccache"):
        # A fixed work path, so that a second build hits the cache.
        env.update(CC="ccache gcc", CXX="ccache g++", CCACHE_BASEDIR=src)
    step("dpkg-buildpackage -us -uc -b (log: build.log)")
    t0 = time.monotonic()
    with open(os.path.join(work, "build.log"), "w") as log:
        r = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, env=env, stdin=subprocess.DEVNULL,
                           stdout=log, stderr=subprocess.STDOUT, timeout=3600)
    if r.returncode != 0:
        with open(os.path.join(work, "build.log"), errors="replace") as f:
            tail = f.read()[-6000:]
        raise harness.TestFailure(f"dpkg-buildpackage exited {r.returncode}:\n{tail}")
    step(f"packages built in {time.monotonic() - t0:.0f} s")
    debs = {}
    for path in glob.glob(os.path.join(work, "*.deb")):
        name = os.path.basename(path).split("_")[0]
        if not name.endswith("-dbgsym"):
            debs[name] = path
    check_equal(sorted(debs), sorted(PACKAGES), "packages built")
    changes = glob.glob(os.path.join(work, "*.changes"))
    check_equal(len(changes), 1, f"one .changes file in {work}")
    return debs, changes[0]


def contents(debs):
    step("each package holds its files")
    for name, path in debs.items():
        listing = run(["dpkg-deb", "-c", path], f"dpkg-deb -c {path}", 60)
        files = [line.split()[5] for line in listing.splitlines()]
        for want in PACKAGES[name]:
            ok = want in files if want.startswith("./") else any(f.endswith("/" + want) for f in files)
            check(ok, f"{name} does not hold {want}: {files}")


def lintian(changes):
    step("lintian: no error, no warning")
    r = subprocess.run(["lintian", "--fail-on", "error,warning", changes],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
    complaints = [line for line in r.stdout.splitlines() if line[:2] in ("E:", "W:")]
    check(r.returncode == 0 and not complaints, f"lintian exited {r.returncode}:\n{r.stdout}{r.stderr}")


def depends_installed(debs):
    step("every Depends is installed on this machine")
    ours = set(PACKAGES)
    # The installed packages and the virtual ones they provide (libspdlog1.10
    # provides libspdlog1.10-fmt9).
    listing = run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}|${Package}|${Provides}\n"], "dpkg-query -W", 60)
    present = set()
    for line in listing.splitlines():
        status, package, provides = line.split("|", 2)
        if status.startswith("ii"):
            present.add(package)
            present.update(re.split(r"[ (:]", p.strip())[0] for p in provides.split(",") if p.strip())
    for name, path in debs.items():
        fields = run(["dpkg-deb", "-f", path, "Depends"], f"dpkg-deb -f {path} Depends", 60)
        for dep in filter(None, (d.strip() for d in fields.split(","))):
            names = [re.split(r"[ (:]", alt.strip())[0] for alt in dep.split("|")]
            if ours.intersection(names):
                continue
            check(present.intersection(names), f"{name} depends on {dep}, which is not installed here")


def install(work, debs):
    root = os.path.join(work, "root")
    step(f"dpkg --root {root} --install (the machine's dpkg database untouched)")
    for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "var/log", "etc"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    open(os.path.join(root, "var/lib/dpkg/status"), "w").close()
    # Depends are checked against this machine above; the maintainer scripts
    # run outside the root (there is no shell inside) with $DPKG_ROOT set.
    run(["dpkg", f"--root={root}", "--force-depends", "--force-script-chrootless", "--force-not-root",
         "--log=/dev/null", "--install", *debs.values()], "dpkg --root --install", 300,
        env={**os.environ, "PATH": os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"})
    status = run(["dpkg-query", f"--admindir={root}/var/lib/dpkg", "-W", "-f=${Package} ${db:Status-Abbrev}\n"],
                 "dpkg-query", 60)
    check_equal(sorted(status.split("\n")[:-1]), sorted(f"{p} ii " for p in PACKAGES), "installed packages")
    with open(os.path.join(root, "etc/passwd")) as f:
        check(re.search(r"^blobstreaming:x:\d+:\d+:", f.read(), re.M),
              "the daemon's postinst (systemd-sysusers) did not create the blobstreaming user in the root")
    return root


def serve_and_transfer(c, root):
    libdir = os.path.dirname(glob.glob(os.path.join(root, "usr/lib/*/libblobclient.so.0"))[0])
    c.env["LD_LIBRARY_PATH"] = libdir
    with open(os.path.join(root, "lib/systemd/system/blobstored@.service")) as f:
        unit = f.read()
    m = re.search(r"^ExecStart=(.*)$", unit, re.M)
    check(m, "no ExecStart in the installed unit")
    argv = [a.replace("%i", "pkg") for a in shlex.split(m.group(1))]
    check_equal(argv[:1], ["/usr/bin/blobstored"], "the unit's program")
    step(f"the unit's command line: {' '.join(argv)}")
    config = argv[argv.index("--config") + 1]
    os.makedirs(os.path.dirname(root + config), exist_ok=True)
    with open(os.path.join(root, "usr/share/doc/blobstreaming-daemon/blobstored.conf.example")) as f:
        example = f.read()
    text = re.sub(r"^store = .*$", f"store = file:{c.path('store')}", example, flags=re.M)
    text = re.sub(r"^naming = .*$", f"naming = {c.naming}", text, flags=re.M)
    text += "control-address = 127.0.0.1:0\ndata-address = 127.0.0.1:0\n"
    with open(root + config, "w") as f:
        f.write(text)
    argv = [root + argv[0]] + [root + a if a == config else a for a in argv[1:]]
    daemon = harness.start_service("blobstored (installed)", argv, "blobstored ready", 60, env=c.env,
                                   out_path=c.path("blobstored.out"), err_path=c.path("blobstored.err"),
                                   track=c.processes)
    step(daemon.ready_line.strip())

    blob = os.path.join(root, "usr/bin/blob")
    source = c.path("image.bin")
    harness.write_random(source, 3 * harness.MiB + 1)
    step("installed blob: push, then pull over TCP, bit-exact")
    run([blob, "--naming", c.naming, "--store", "pkg", "push", "--name", "image.bin", source], "blob push", 120,
        env=c.env)
    pulled = c.path("pulled.bin")
    run([blob, "--naming", c.naming, "--store", "pkg", "--no-local", "pull", "image.bin", pulled], "blob pull", 120,
        env=c.env)
    with open(source, "rb") as a, open(pulled, "rb") as b:
        check(a.read() == b.read(), "the pulled bytes differ from the pushed ones")

    step("a program built with the installed headers and blobstreaming.pc lists the Blob")
    pcdir = os.path.join(libdir, "pkgconfig")
    pc_env = {**c.env, "PKG_CONFIG_PATH": pcdir, "PKG_CONFIG_SYSROOT_DIR": root}
    flags = run(["pkg-config", "--cflags", "--libs", "blobstreaming"], "pkg-config blobstreaming", 60,
                env=pc_env).split()
    program_src = c.path("listing.cpp")
    with open(program_src, "w") as f:
        f.write(LISTING)
    run(["g++", "-Wall", "-Wextra", "-Werror", program_src, "-o", c.path("listing"), *flags], "g++ listing.cpp", 300, env=c.env)
    out = run([c.path("listing"), c.naming, "pkg"], "listing", 60, env=c.env)
    check_equal(out, "image.bin\n", "the Blobs the program lists")
    daemon.stop()
    check_equal(daemon.popen.returncode, 0, "blobstored's exit status after SIGTERM")


def test(c):
    for tool in ("dpkg-buildpackage", "dh", "lintian", "fakeroot"):
        if not shutil.which(tool):
            raise harness.TestSkipped(f"{tool} is not installed (scripts/install-deps --packaging)")
    args = sys.argv[1:]
    work = os.path.abspath(args[args.index("--work") + 1]) if "--work" in args else \
        os.path.join(harness.build_dir(), "check-packages")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    debs, changes = build(work, c.env)
    contents(debs)
    lintian(changes)
    depends_installed(debs)
    root = install(work, debs)
    c.start_naming()
    serve_and_transfer(c, root)
    if "--keep" not in args:
        shutil.rmtree(work, ignore_errors=True)
    else:
        step(f"kept {work}")


if __name__ == "__main__":
    harness.run(test, harness.Cluster)
