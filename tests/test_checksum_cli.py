#!/usr/bin/env python3
"""`blob checksum` against an independent CRC32C: the system tests take the
expected checksum of a file from this command (harness.checksum_file), so it
must be right on its own.

- A CRC32C written here (Castagnoli, reflected polynomial 0x82F63B78,
  initial and final XOR 0xFFFFFFFF, its table made bit by bit), itself
  checked against the catalogue's check value (crc32c("123456789") =
  e3069283) and the iSCSI vectors of RFC 3720 B.4, gives the expected text `crc32c:` + 8 hex digits (the CRC big-endian) of:
  an empty file, "123456789", 100 KiB of random bytes, and a file larger
  than the command's 1 MiB read buffer; by path and by standard input ('-'),
  in text (`CHECKSUM  PATH`) and --json ({"files": [{path, size, checksum}]}).
- `--checksum sha256` gives hashlib's SHA-256; `--checksum crc32c` the default.
- A missing file or a directory: exit 40 (io_error) naming the path and why;
  an unknown algorithm, or no FILE: exit 1 (usage) saying what is allowed.

No Naming Service or store is needed.
"""
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, MiB, check_equal, step  # noqa: E402


def _crc_of_byte(value):
    """Eight steps of the bitwise CRC32C register (reflected polynomial
    0x82F63B78) starting from one byte: the entry of the lookup table."""
    crc = value
    for _ in range(8):
        crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc


TABLE = [_crc_of_byte(i) for i in range(256)]


def crc32c(data, crc=0):
    """CRC32C as the CRC catalogue defines it (initial and final XOR
    0xFFFFFFFF), a byte at a time through TABLE: nothing shared with the
    implementation under test."""
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc = (crc >> 8) ^ TABLE[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFFFFFF


def crc32c_text(data):
    return f"crc32c:{crc32c(data):08x}"


def blob_checksum(*args, stdin=None):
    """`blob checksum ARGS...` (no --naming: it needs no store)."""
    argv = [harness.program("clients/blob"), "checksum", *map(str, args)]
    io = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    try:
        r = subprocess.run(argv, capture_output=True, timeout=120, **io)
    except subprocess.TimeoutExpired:
        raise harness.TestFailure(f"`{' '.join(argv)}` did not finish within 120 s") from None
    return harness.BlobResult(argv, r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr)


def test(ws):
    step("the reference CRC32C against published values")
    check_equal(crc32c(b"123456789"), 0xE3069283, "reference crc32c('123456789')")
    check_equal(crc32c(bytes(32)), 0x8A9136AA, "reference crc32c of 32 zero bytes (RFC 3720 B.4)")
    check_equal(crc32c(b"\xff" * 32), 0x62A8AB43, "reference crc32c of 32 0xff bytes (RFC 3720 B.4)")
    check_equal(crc32c(bytes(range(32))), 0x46DD794E, "reference crc32c of 0x00..0x1f (RFC 3720 B.4)")
    check_equal(crc32c(bytes(range(31, -1, -1))), 0x113FDB5C, "reference crc32c of 0x1f..0x00 (RFC 3720 B.4)")

    step("blob checksum of files against the reference, text and --json")
    contents = {
        "empty": b"",
        "check": b"123456789",
        "random": os.urandom(100 * 1024),
        "past-buffer": os.urandom(MiB + 4097),  # two reads of the command's 1 MiB buffer
    }
    paths = {}
    for name, data in contents.items():
        paths[name] = ws.path(name)
        with open(paths[name], "wb") as f:
            f.write(data)
    expected = {name: crc32c_text(data) for name, data in contents.items()}
    check_equal(expected["check"], "crc32c:e3069283", "the catalogue's check value as text")
    check_equal(expected["empty"], "crc32c:00000000", "checksum of nothing")

    r = blob_checksum(*paths.values())
    r.ok()
    check_equal(r.stdout, "".join(f"{expected[n]}  {p}\n" for n, p in paths.items()),
                "text output of `blob checksum FILE...`")
    r = blob_checksum("--json", *paths.values())
    check_equal(r.ok(), {"files": [{"path": p, "size": len(contents[n]), "checksum": expected[n]}
                                   for n, p in paths.items()]}, "`blob checksum --json FILE...`")
    r = blob_checksum("--checksum", "crc32c", paths["random"])
    r.ok()
    check_equal(r.stdout, f"{expected['random']}  {paths['random']}\n", "`--checksum crc32c` is the default")

    step("standard input ('-')")
    for name in ("empty", "check", "random"):
        r = blob_checksum("--json", "-", stdin=contents[name])
        check_equal(r.ok(), {"files": [{"path": "-", "size": len(contents[name]), "checksum": expected[name]}]},
                    f"`blob checksum --json -` of {name}")
    r = blob_checksum("-", stdin=contents["check"])
    r.ok()
    check_equal(r.stdout, "crc32c:e3069283  -\n", "text output of `blob checksum -`")

    step("--checksum sha256 against hashlib")
    r = blob_checksum("--checksum", "sha256", "--json", *paths.values())
    check_equal(r.ok(), {"files": [{"path": p, "size": len(contents[n]),
                                    "checksum": "sha256:" + hashlib.sha256(contents[n]).hexdigest()}
                                   for n, p in paths.items()]}, "`blob checksum --checksum sha256 --json FILE...`")
    r = blob_checksum("--checksum", "sha256", paths["check"])
    r.ok()
    check_equal(r.stdout, "sha256:15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225  "
                          f"{paths['check']}\n", "`blob checksum --checksum sha256` of '123456789'")

    step("errors: a missing file, a directory, an unknown algorithm, no FILE")
    missing = ws.path("missing")
    blob_checksum(missing).error(EXIT["io_error"], f"blob: checksum: cannot open {missing}: No such file or directory")
    r = blob_checksum("--json", paths["check"], missing)
    r.error(EXIT["io_error"], f"checksum: cannot open {missing}: No such file or directory")
    check_equal(r.json.get("error", {}).get("name"), "io_error", "JSON error name of a missing file")
    blob_checksum(ws.root).error(EXIT["io_error"], f"checksum: cannot read {ws.root} after 0 bytes: Is a directory")
    for algorithm in ("md5", "crc32", "SHA256", ""):
        r = blob_checksum("--checksum", algorithm, paths["check"])
        r.error(EXIT["usage"],
                f'blob: --checksum: "{algorithm}" is not a checksum algorithm (allowed: crc32c, sha256)')
        check_equal(r.stdout, "", f"output of `blob checksum --checksum {algorithm!r}`")
    blob_checksum().error(EXIT["usage"], "checksum: expected 1 to 64 argument(s), got 0")


if __name__ == "__main__":
    harness.run(test, harness.Workspace)
