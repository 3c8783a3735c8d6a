#!/usr/bin/env python3
"""A FileStore on a real, small file system without fallocate (ext2 in a
loop-mounted image; as root) that fills up — without and with TLS.

ext2 cannot allocate a file's blocks in advance (fallocate: EOPNOTSUPP), so
a reservation there is a sparse file: bytes received into a mapping of it
would hit pages the full disk cannot back (SIGBUS under TLS, EFAULT "Bad
address" from recv() without). The store checks the free space at reserve
time and writes such files with pwrite. Checked each time:
- a push larger than the free space: out_of_space (exit 30) at reserve,
  naming the store's directory;
- a push whose space is taken by another writer after the reservation
  (idl_probe --leave-reservation, then a filler file, then `push --resume`):
  out_of_space (exit 30) when the disk fills, naming the store;
- the daemon lives, the earlier Blob is intact, nothing partial is listed,
  tmp/ is empty, and a push fits again once the filler is gone.
Skipped (77) only when this machine cannot mount a loop image (not root,
no loop device)."""

import errno
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_tls  # noqa: E402
from harness import EXIT, MiB, check, check_equal, step  # noqa: E402

IMAGE_SIZE = 8 * MiB


class Mount:
    """An ext2 image loop-mounted at a directory of the test; unmounted and
    removed by close()."""

    def __init__(self, c, name):
        self.image = c.path(f"{name}.img")
        self.point = c.path(name)
        self.mounted = False
        with open(self.image, "wb") as f:
            f.truncate(IMAGE_SIZE)
        mkfs = shutil.which("mkfs.ext2") or shutil.which("mke2fs")
        if mkfs is None:
            raise harness.TestFailure("mkfs.ext2 is not installed (e2fsprogs; see scripts/install-deps)")
        r = subprocess.run([mkfs, "-q", "-F", "-m", "0", "-b", "1024", self.image], capture_output=True, text=True,
                           timeout=60)
        check_equal(r.returncode, 0, f"mkfs.ext2 of {self.image} ({r.stderr.strip()})")
        os.makedirs(self.point)
        r = subprocess.run(["mount", "-t", "ext2", "-o", "loop", self.image, self.point], capture_output=True,
                           text=True, timeout=60)
        if r.returncode != 0:
            raise harness.TestSkipped(f"cannot loop-mount an ext2 image here (uid {os.getuid()}): {r.stderr.strip()}")
        self.mounted = True

    def close(self):
        if self.mounted:
            r = subprocess.run(["umount", self.point], capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                raise harness.TestFailure(f"umount {self.point}: {r.stderr.strip()}")
            self.mounted = False
        if os.path.exists(self.image):
            os.unlink(self.image)


def fill(path):
    """Writes zeros to `path` until the file system is full; returns the bytes written."""
    block = b"\0" * 65536
    written = 0
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                n = f.write(block)
            except OSError as e:
                check_equal(e.errno, errno.ENOSPC, f"error of the filler {path}")
                break
            written += n
            if written > 2 * IMAGE_SIZE:
                raise harness.TestFailure(f"the filler wrote {written} bytes into a {IMAGE_SIZE}-byte file system")
    os.sync()
    return written


def scenario(c, label, tls_daemon=(), tls_client=()):
    mount = Mount(c, f"fs-{label}")
    daemon = None
    try:
        store_dir = os.path.join(mount.point, "store")
        daemon = c.start_daemon(f"disk-{label}", "file", store_dir=store_dir, extra=list(tls_daemon))
        store = f"disk-{label}"
        tmp_dir = os.path.join(store_dir, "tmp")
        blob = lambda *args: c.blob(*tls_client, *args, store=store)  # noqa: E731

        step(f"{label}: an earlier Blob")
        one = c.path(f"one-{label}")
        one_digest = harness.write_random(one, MiB)
        blob("push", "--name", "CT.earlier", one).ok()

        step(f"{label}: a push larger than the free space is refused at reserve")
        big = c.path(f"big-{label}")
        harness.write_random(big, 2 * IMAGE_SIZE)
        r = blob("push", "--name", "CT.big", big).error(
            EXIT["out_of_space"], f'no room for blob "CT.big": the file system of {store_dir} has ')
        step(f"{label}: {r.stderr.strip()}")
        check_equal(os.listdir(tmp_dir), [], "tmp/ after the refused push")

        step(f"{label}: the disk fills between reserve and the bytes")
        two = c.path(f"two-{label}")
        harness.write_random(two, 2 * MiB)
        code, out, err = c.run([harness.program("tests/tools/idl_probe"), "--naming", c.naming, "--store", store,
                                "--leave-reservation", str(2 * MiB), *tls_client], timeout=60)
        check_equal(code, 0, f"idl_probe --leave-reservation ({out!r} {err!r})")
        filler = os.path.join(mount.point, "filler")
        step(f"{label}: filler of {fill(filler)} bytes")
        r = blob("push", "--resume", "--name", "probe.left", two).error(
            EXIT["out_of_space"], f'no room for blob "probe.left" in file store {store_dir}: its file system filled '
                                  'up after ')
        step(f"{label}: {r.stderr.strip()}")
        check(daemon.running(), f"blobstored ({label}) died when the disk filled up")
        check_equal(os.listdir(tmp_dir), [], "tmp/ after the push that hit the full disk")
        listed = {b["name"]: b for b in blob("ls").ok()["blobs"]}
        check_equal(sorted(listed), ["CT.earlier"], "Blobs listed after the full disk")
        check_equal(listed["CT.earlier"]["checksum"], one_digest, "checksum of the earlier Blob")
        out_path = c.path(f"earlier-{label}")
        blob("--no-local", "pull", "CT.earlier", out_path).ok()
        check_equal(harness.checksum_file(out_path), one_digest, "checksum of the earlier Blob pulled")
        usage = [s for s in c.blob(*tls_client, "stores").ok()["stores"] if s["name"] == store][0]
        check_equal(usage["reserved"], 0, "bytes still reserved after the full disk")

        step(f"{label}: with the filler gone, the push fits")
        os.unlink(filler)
        pushed = blob("push", "--name", "CT.after", two).ok()
        check_equal(pushed["checksum"], harness.checksum_file(two), "checksum of the push after the filler was removed")
    finally:
        if daemon is not None:
            daemon.stop()
        mount.close()


def test(c):
    scenario(c, "plain")
    if shutil.which("openssl") is None:
        raise harness.TestSkipped("openssl is not installed (the TLS half of the test)")
    test_tls.make_ca(c, "ca")
    store = test_tls.make_cert(c, "ca", "store", "/CN=store.disk", "serverAuth,clientAuth", san="IP:127.0.0.1")
    client = test_tls.make_cert(c, "ca", "client", "/CN=modality1", "clientAuth")
    scenario(c, "tls", tls_daemon=test_tls.tls_args(c, *store) + ["--allow-read", "*", "--allow-write", "*"],
             tls_client=test_tls.tls_args(c, *client))


if __name__ == "__main__":
    harness.main(test)
