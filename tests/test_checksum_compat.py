#!/usr/bin/env python3
"""Blobs stored by a release before CRC32C stay readable and verifiable.

A FileStore Blob file of that release has header format version 1: SHA-256
only, the name at byte 66. The test pushes a Blob, stops the daemon and
rewrites the Blob's header in the version-1 layout by hand (from the format's
description, not with the product's code), then restarts the daemon on the
directory and checks that the Blob is a SHA-256 Blob everywhere: `stat`,
`ls`, `verify`, pulls over TCP and the same-host path, each checked against
hashlib. A byte flipped on disk is then found by `verify` (corrupt) and by a
pull (digest_mismatch, nothing kept), with the recorded SHA-256 named. A
default push next to it is CRC32C."""

import hashlib
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, EXIT, check, check_equal, step  # noqa: E402

HEADER = 4096
NAME = "CT.old.1"


def blob_file(store_dir, name):
    """The file under blobs/ whose header names `name`."""
    for root, _, files in os.walk(os.path.join(store_dir, "blobs")):
        for f in files:
            path = os.path.join(root, f)
            with open(path, "rb") as fh:
                h = fh.read(HEADER)
            if h[:8] != b"BLOBSTR1":
                continue
            n = struct.unpack_from("<H", h, 64)[0]
            at = 68 if struct.unpack_from("<I", h, 8)[0] == 2 else 66  # version 2: the name at 68
            if h[at:at + n] == name.encode():
                return path
    raise harness.TestFailure(f"no Blob file of {name!r} under {store_dir}/blobs")


def rewrite_as_version_1(path, name, sha256):
    """The header of format version 1: magic, version 1, header size, blob
    size, commit ns, SHA-256 at 32, name length at 64, name at 66, and the
    SHA-256 of bytes [0, 4064) at 4064. Size and commit time are kept."""
    with open(path, "r+b") as f:
        old = f.read(HEADER)
        size, commit_ns = struct.unpack_from("<QQ", old, 16)
        h = bytearray(HEADER)
        h[0:8] = b"BLOBSTR1"
        struct.pack_into("<IIQQ", h, 8, 1, HEADER, size, commit_ns)
        h[32:64] = sha256
        struct.pack_into("<H", h, 64, len(name))
        h[66:66 + len(name)] = name.encode()
        h[HEADER - 32:] = hashlib.sha256(bytes(h[:HEADER - 32])).digest()
        f.seek(0)
        f.write(bytes(h))
        f.flush()
        os.fsync(f.fileno())


def test(c):
    daemon = c.start_daemon("central", "file", tier="central")
    source = c.path("old-source")
    harness.write_random(source, 3 * MiB + 17)
    with open(source, "rb") as f:
        data = f.read()
    sha = hashlib.sha256(data).digest()
    expected = "sha256:" + sha.hex()
    pushed = c.blob("push", "--name", NAME, source, store="central").ok()
    check(pushed["checksum"].startswith("crc32c:"), f"a default push is CRC32C: {pushed['checksum']}")

    step("stop the daemon, rewrite the Blob's header as a release before CRC32C wrote it, restart")
    path = blob_file(daemon.store_dir, NAME)
    daemon.stop()
    rewrite_as_version_1(path, NAME, sha)
    daemon = c.restart_daemon(daemon)

    stat = c.blob("stat", NAME, store="central").ok()
    check_equal((stat["size"], stat["checksum"]), (len(data), expected), "stat of the version-1 Blob")
    listed = {b["name"]: b["checksum"] for b in c.blob("ls", store="central").ok()["blobs"]}
    check_equal(listed.get(NAME), expected, "ls of the version-1 Blob")
    check_equal(c.blob("verify", NAME, store="central").ok()["checksum"], expected, "verify of the version-1 Blob")
    for how in (["--no-local"], []):
        out = c.path("pulled" + ("-tcp" if how else "-local"))
        r = c.blob(*how, "pull", NAME, out, store="central").ok()
        check_equal(r["checksum"], expected, f"pull {' '.join(how) or '(same host)'}: checksum reported")
        check_equal(harness.checksum_file(out, "sha256"), expected, f"pull {' '.join(how)}: the bytes")
        os.unlink(out)

    step("a byte flipped on disk: verify and pulls find it against the recorded SHA-256")
    with open(path, "r+b") as f:
        f.seek(HEADER + 123457)
        b = f.read(1)
        f.seek(HEADER + 123457)
        f.write(bytes([b[0] ^ 0x40]))
    c.blob("verify", NAME, store="central").error(EXIT["corrupt"], "recorded at commit: " + expected)
    for how in (["--no-local"], []):
        out = c.path("pulled-bad" + ("-tcp" if how else "-local"))
        c.blob(*how, "pull", NAME, out, store="central").error(EXIT["digest_mismatch"],
                                                              "not the Blob's " + expected)
        check(not os.path.exists(out), f"pull {' '.join(how) or '(same host)'} left {out} after the mismatch")


if __name__ == "__main__":
    harness.main(test)
