#!/usr/bin/env python3
"""Malformed arguments on the control plane, sent straight to blobstored's
CORBA interface (tests/tools/idl_probe): empty and hostile names, lengths and
offsets past 2^63, unknown reservations. Each must raise its typed IDL
exception with a message that says why — never a crash, a CORBA system
exception or an allocation by the client's length — on a FileStore without a
capacity limit and on a MemoryStore; afterwards the daemon still serves, its
peak memory stayed small and no probe Blob is visible."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bslib  # noqa: E402
from bslib import MiB, check, check_equal, step  # noqa: E402

# case -> (IDL exception, text the message must contain)
EXPECTED = {
    "stat-empty": ("InvalidName", "the name is empty"),
    "stat-traversal": ("InvalidName", "the name starts with '.'"),
    "contains-empty": ("InvalidName", "the name is empty"),
    "remove-empty": ("InvalidName", "the name is empty"),
    "remove-absolute": ("InvalidName", "character '/' at position 0 is not allowed"),
    "find-local-empty": ("InvalidName", "the name is empty"),
    "resumable-empty": ("InvalidName", "the name is empty"),
    "resumable-none": ("NoSuchReservation", '"probe.never"'),
    "verify-traversal": ("InvalidName", "the name starts with '.'"),
    "verify-missing": ("NoSuchBlob", '"probe.missing" not found'),
    "reserve-empty-name": ("InvalidName", "the name is empty"),
    "reserve-long-name": ("InvalidName", "the name is 100000 characters long"),
    "reserve-2^64-1": ("OutOfSpace", "18446744073709551615 bytes"),
    "reserve-2^63": ("OutOfSpace", "9223372036854775808 bytes"),
    "send-empty-name": ("InvalidName", "the name is empty"),
    "send-missing": ("NoSuchBlob", '"probe.missing" not found'),
    "send-length-2^64-1": ("InvalidRange", "beyond 2^64"),
    "send-offset-2^63": ("InvalidRange", "[9223372036854775813, 9223372036854775814) is outside the blob of 1000 bytes"),
    "send-offset-2^64-1": ("InvalidRange", "is outside the blob of 1000 bytes"),
    "send-timeout-2^64-1": ("returned", ""),
    "recv-unknown-reservation": ("NoSuchReservation", "18446744073709551615"),
    "commit-unknown-reservation": ("NoSuchReservation", "18446744073709551615"),
    "abort-unknown-reservation": ("NoSuchReservation", "123456789"),
    "cancel-unknown-ticket": ("returned", ""),
    "recv-offset-2^63": ("InvalidRange", "a push continues at offset 0 to the end of the Blob (length 1000), not"),
    "recv-length-2^64-1": ("InvalidRange", "a push continues at offset 0 to the end of the Blob (length 1000), not"),
    "commit-incomplete": ("TransferFailed", "0 of 1000 bytes written"),
    "abort-after-failed-commit": ("NoSuchReservation", ""),
    "stat-after-probe": ("NoSuchBlob", '"probe.reserved" not found'),
}



def probe(c, daemon, store):
    source = c.path(f"probe-{store}")
    digest = bslib.write_random(source, 1000)
    c.blob("push", source, "CT.probe", store=store).ok()
    code, out, err = c.run([bslib.program("tests/tools/idl_probe"), "--naming", c.naming, "--store", store,
                            "--blob", "CT.probe"], timeout=120)
    check_equal(code, 0, f"idl_probe exit status (stdout {out.strip()!r}, stderr {err.strip()!r})")
    results = {}
    for line in out.splitlines():
        r = json.loads(line)
        results[r["case"]] = r
    check_equal(sorted(results), sorted(EXPECTED), "cases reported by idl_probe")
    wrong = []
    for case, (raised, text) in EXPECTED.items():
        r = results[case]
        step(f"{store}: {case}: {r['raised']} {r['message'][:200]!r}")
        if r["raised"] != raised or text not in r["message"]:
            wrong.append(f"{case}: expected {raised} with {text!r}, got {r['raised']} {r['message']!r}")
    check(not wrong, f"{store}: " + "; ".join(wrong))
    check(daemon.running(), f"blobstored {store} died during the probe")
    rss = bslib.peak_rss_kib(daemon.pid)
    step(f"{store}: blobstored peak RSS {rss / 1024:.1f} MiB after the probe")
    check(rss < 512 * 1024, f"blobstored {store} peak RSS {rss} KiB: something allocated by a client's length")
    names = sorted(b["name"] for b in c.blob("ls", store=store).ok().get("blobs", []))
    check_equal(names, ["CT.probe"], f"Blobs listed by {store} after the probe")
    out_path = c.path(f"pulled-{store}")
    c.blob("--no-local", "pull", "CT.probe", out_path, store=store).ok()
    check_equal(bslib.sha256_file(out_path), digest, f"SHA-256 of CT.probe pulled from {store} after the probe")


def test(c):
    disk = c.start_daemon("disk", "file")
    probe(c, disk, "disk")
    ram = c.start_daemon("ram", f"memory:{64 * MiB}")
    probe(c, ram, "ram")


if __name__ == "__main__":
    bslib.main(test)
