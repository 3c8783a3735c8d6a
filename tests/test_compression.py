#!/usr/bin/env python3
"""Compression on the wire (`blob push/pull --compress auto|zstd|none`,
`blobstored --compress zstd|none`; docs/PROTOCOL.md, "Compression on the
wire"), with real daemons on 127.0.0.1 and synthetic CT slices
(harness.write_ct_slices: 512 x 512 x 16 bit with the noise of a routine
dose, about 2x with zstd -1).

1. `--compress zstd` into a FileStore: --json says zstd and fewer bytes on
   the wire than the Blob has, the checksum is the file's, the daemon's
   transfer line says `wire=zstd wire_bytes=` the same count, and the
   stored file holds the original bytes (not the compressed ones).
2. `pull --no-local --compress zstd`: whole, a range inside and the last
   byte, bit-identical and reported compressed.
3. `auto` (and the default) on loopback: not compressed (--json
   "compression": "none", wire bytes = bytes, no `wire=` in the daemon's
   line), push and pull.
4. A store run with `--compress none`: a compressed push is refused
   (53, naming the option), nothing is stored; a pull asking for
   compression gets the raw bytes (falls back), bit-identical; `auto`
   pushes there.
5. A push of unknown length (`push -` without --size) refuses `zstd` (10)
   and goes uncompressed with `auto`.
6. Over TLS on both planes, through 16 KiB socket buffers (TLS writes
   that stop part way): push and pull with --compress zstd, bit-identical
   and compressed (skipped without openssl).
7. Usage errors: `--compress fast`, `stat --compress`, `blobstored
   --compress fast` (1, naming the value and what is allowed)."""

import glob
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, log_text, step  # noqa: E402
from harness.daemons import blobstored_argv  # noqa: E402
from test_tls import make_ca, make_cert, tls_args  # noqa: E402

SLICES = 12  # 6 MiB


def read(path):
    with open(path, "rb") as f:
        return f.read()


def stored_bytes(daemon, name):
    [path] = glob.glob(os.path.join(daemon.store_dir, "blobs", "*", name))
    with open(path, "rb") as f:
        f.seek(harness.FILE_HEADER)
        return f.read()


def transfer_lines(daemon, direction, name):
    return [line for line in log_text(daemon).splitlines()
            if f"transfer direction={direction} blob={name} " in line and "outcome=ok" in line]


def compressed(r, expected, size, what):
    check_equal(r.get("compression"), expected, f"{what}: compression")
    wire = r.get("wire_bytes")
    if expected == "zstd":
        check(wire * 3 < size * 2, f"{what}: {wire} bytes on the wire for {size}: not compressed 1.5x")
    else:
        check_equal(wire, size, f"{what}: bytes on the wire")
    return wire


def push_and_pull_zstd(c, disk, src, size, crc):
    r = c.blob("push", "--compress", "zstd", "--name", "CT.1", src, store="disk").ok()
    wire = compressed(r, "zstd", size, "push --compress zstd")
    check_equal(r.get("checksum"), crc, "push --compress zstd: checksum of the Blob")
    check(stored_bytes(disk, "CT.1") == read(src), "the FileStore's file does not hold the original bytes")
    [line] = transfer_lines(disk, "push", "CT.1")
    check(f" wire=zstd wire_bytes={wire}" in line, f"the daemon's transfer line lacks wire=zstd wire_bytes={wire}: "
                                                   f"{line}")
    step(f"push --compress zstd: {size} bytes as {wire} on the wire ({size / wire:.2f}x), stored as they were, "
         f"checksum {crc}")

    out = c.path("CT.1.out")
    r = c.blob("--no-local", "pull", "--compress", "zstd", "CT.1", out, store="disk").ok()
    wire = compressed(r, "zstd", size, "pull --compress zstd")
    check(read(out) == read(src), "pull --compress zstd: the pulled file differs from the original")
    check_equal(r.get("checksum"), crc, "pull --compress zstd: checksum")
    check(any(" wire=zstd " in line for line in transfer_lines(disk, "pull", "CT.1")),
          "the daemon's pull line does not say wire=zstd")
    step(f"pull --compress zstd: bit-identical, {wire} bytes on the wire")

    for offset, length in ((1000003, 3000001), (size - 1, 1), (0, 5)):
        part = c.path(f"CT.1.{offset}")
        r = c.blob("--no-local", "pull", "--compress", "zstd", "--offset", offset, "--length", length, "CT.1", part,
                   store="disk").ok()
        check(read(part) == harness.read_range(src, offset, length),
              f"range [{offset}, +{length}) with --compress zstd differs")
        check_equal(r.get("compression"), "zstd", f"range [{offset}, +{length}): compression")
    step("ranges (inside, the last byte, the first 5) with --compress zstd: bit-identical")


def auto_on_loopback(c, disk, src, size):
    for name, extra in (("CT.2", ["--compress", "auto"]), ("CT.3", [])):
        r = c.blob("push", *extra, "--name", name, src, store="disk").ok()
        compressed(r, "none", size, f"push {' '.join(extra) or '(default)'} on loopback")
        check(all(" wire=" not in line for line in transfer_lines(disk, "push", name)),
              f"push {name} on loopback: the daemon's line says it was compressed")
        out = c.path(name + ".out")
        r = c.blob("--no-local", "pull", *extra, name, out, store="disk").ok()
        compressed(r, "none", size, f"pull {' '.join(extra) or '(default)'} on loopback")
        check(read(out) == read(src), f"pull {name}: differs")
    r = c.blob("push", "--compress", "none", "--name", "CT.4", src, store="disk").ok()
    compressed(r, "none", size, "push --compress none")
    step("auto (and the default) on loopback, and none: not compressed, push and pull")


def store_without_compression(c, src, size):
    r = c.blob("push", "--compress", "zstd", "--name", "CT.5", src, store="plain")
    r.error(EXIT["refused"], "this store takes no compressed data connections (blobstored --compress none); "
                             "push with --compress none")
    c.blob("stat", "CT.5", store="plain").error(EXIT["no_such_blob"], "CT.5")
    r = c.blob("push", "--compress", "auto", "--name", "CT.5", src, store="plain").ok()
    compressed(r, "none", size, "push --compress auto to a store without compression")
    out = c.path("CT.5.out")
    r = c.blob("--no-local", "pull", "--compress", "zstd", "CT.5", out, store="plain").ok()
    compressed(r, "none", size, "pull --compress zstd from a store without compression (falls back)")
    check(read(out) == read(src), "pull from a store without compression: differs")
    step("blobstored --compress none: a compressed push refused (53), nothing stored; a pull falls back to raw")


def unknown_length(c, src):
    data = read(src)[: 3 * 1024 * 1024 + 7]
    r = c.blob("push", "--compress", "zstd", "--name", "US.1", "-", store="disk", stdin=data)
    r.error(EXIT["invalid_argument"], "a push of unknown length cannot be compressed on the wire (compression "
                                      "zstd); push it with compression auto or none")
    c.blob("stat", "US.1", store="disk").error(EXIT["no_such_blob"], "US.1")
    r = c.blob("push", "--compress", "auto", "--name", "US.1", "-", store="disk", stdin=data).ok()
    check_equal(r.get("compression"), "none", "push - --compress auto: compression")
    check_equal(r.get("checksum"), harness.checksum_bytes(data), "push - --compress auto: checksum")
    step("a push of unknown length: zstd refused (10), auto goes uncompressed")


def over_tls(c, src, size):
    if shutil.which("openssl") is None:
        step("over TLS: skipped (no openssl)")
        return
    make_ca(c, "ca")
    store_cert, store_key = make_cert(c, "ca", "store", "/CN=store.sealed", "serverAuth,clientAuth",
                                      san="IP:127.0.0.1")
    client = tls_args(c, *make_cert(c, "ca", "client", "/CN=modality1", "clientAuth"))
    c.start_daemon("sealed", "memory:64M", extra=tls_args(c, store_cert, store_key) +
                   ["--allow-read", "*", "--allow-write", "*", "--socket-buffer", "16K"])
    r = c.blob(*client, "--socket-buffer", "16K", "push", "--compress", "zstd", "--name", "CT.tls", src,
               store="sealed").ok()
    compressed(r, "zstd", size, "push --compress zstd over TLS")
    out = c.path("CT.tls.out")
    r = c.blob(*client, "--socket-buffer", "16K", "--no-local", "pull", "--compress", "zstd", "CT.tls", out,
               store="sealed").ok()
    compressed(r, "zstd", size, "pull --compress zstd over TLS")
    check(read(out) == read(src), "pull --compress zstd over TLS: differs")
    step("over TLS through 16 KiB socket buffers: push and pull with --compress zstd, bit-identical")


def usage(c):
    c.blob("push", "--compress", "fast", "--name", "X", c.path("ct.raw"), store="disk").error(
        EXIT["usage"], "--compress fast: expected auto, zstd or none")
    c.blob("stat", "--compress", "zstd", "CT.1", store="disk").error(
        EXIT["usage"], "--compress applies to push and pull only, not stat")
    argv = blobstored_argv(harness.program("blobstore/blobstored"), "bad", "memory:1M", c.naming,
                           extra=["--compress", "fast"])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=c.env, stdin=subprocess.DEVNULL)
    check_equal(r.returncode, EXIT["usage"], f"blobstored --compress fast: exit code ({r.stderr.strip()})")
    check('--compress: "fast" is not a compression mode (allowed: zstd, none)' in r.stderr,
          f"blobstored --compress fast: message: {r.stderr.strip()}")
    step("--compress fast, stat --compress, blobstored --compress fast: usage errors (1)")


def test(c):
    disk = c.start_daemon("disk", "file", extra=["--no-sync"])
    c.start_daemon("plain", "memory:64M", extra=["--compress", "none"])
    src = c.path("ct.raw")
    size = harness.write_ct_slices(src, SLICES)
    crc = harness.checksum_file(src)
    push_and_pull_zstd(c, disk, src, size, crc)
    auto_on_loopback(c, disk, src, size)
    store_without_compression(c, src, size)
    unknown_length(c, src)
    over_tls(c, src, size)
    usage(c)
    check(re.search(r"wire=zstd", log_text(disk)) is not None, "no compressed transfer logged")


if __name__ == "__main__":
    harness.main(test)
