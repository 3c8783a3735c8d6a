#!/usr/bin/env python3
"""Malformed arguments on the control plane, sent straight to blobstored's
CORBA interface (tests/tools/idl_probe): empty and hostile names, lengths and
offsets past 2^63, unknown reservations. Each must raise its typed IDL
exception with a message that says why — never a crash, a CORBA system
exception or an allocation by the client's length — on a FileStore without a
capacity limit and on a MemoryStore; afterwards the daemon still serves, its
peak memory stayed small and no probe Blob is visible.

Then every operation of BlobStore, BlobTransporter and BlobLocator once
(idl_probe --each-op) where the store cannot serve it — a FileStore whose
directory was removed, a client at its reservation limit: each raises only
what its IDL `raises` clause declares, or a CORBA system exception other
than UNKNOWN that carries the store's Errc and message (the reply's error
context), naming the missing directory."""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, MiB, check, check_equal, step  # noqa: E402

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
    "commit-checksum-too-long": ("TransferFailed", "a crc32c checksum has 4 bytes, not 32"),
    "commit-checksum-no-algorithm": ("TransferFailed", "the checksum names no algorithm (allowed: crc32c, sha256)"),
    "commit-incomplete": ("TransferFailed", "0 of 1000 bytes written"),
    "abort-after-failed-commit": ("NoSuchReservation", ""),
    "stat-after-probe": ("NoSuchBlob", '"probe.reserved" not found'),
}



def probe(c, daemon, store):
    source = c.path(f"probe-{store}")
    digest = harness.write_random(source, 1000)
    c.blob("push", "--name", "CT.probe", source, store=store).ok()
    code, out, err = c.run([harness.program("tests/tools/idl_probe"), "--naming", c.naming, "--store", store,
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
    rss = harness.peak_rss_kib(daemon.pid)
    step(f"{store}: blobstored peak RSS {rss / 1024:.1f} MiB after the probe")
    check(rss < 512 * 1024, f"blobstored {store} peak RSS {rss} KiB: something allocated by a client's length")
    names = sorted(b["name"] for b in c.blob("ls", store=store).ok().get("blobs", []))
    check_equal(names, ["CT.probe"], f"Blobs listed by {store} after the probe")
    out_path = c.path(f"pulled-{store}")
    c.blob("--no-local", "pull", "CT.probe", out_path, store=store).ok()
    check_equal(harness.checksum_file(out_path), digest, f"checksum of CT.probe pulled from {store} after the probe")


# operation -> the IDL exceptions of its raises clause (idl/BlobStreaming.idl)
DECLARED = {
    "name": [], "status": [], "contains": ["InvalidName"], "stat": ["NoSuchBlob", "InvalidName"], "list": [],
    "findLocalFile": ["NoSuchBlob", "InvalidName"], "shareImage": ["NoSuchBlob", "InvalidName"],
    "findLocalFiles": ["LimitReached"],
    "verify": ["NoSuchBlob", "InvalidName", "Corrupt"],
    "resumable": ["InvalidName", "NoSuchReservation"], "dataAddress": [], "openTransporter": ["LimitReached"],
    "reserve": ["InvalidName", "OutOfSpace", "AlreadyExists", "LimitReached"],
    "send": ["NoSuchBlob", "InvalidName", "InvalidRange", "TransferFailed"],
    "recv": ["NoSuchReservation", "InvalidRange", "TransferFailed"], "poll": [], "observe": [], "cancel": [],
    "commit": ["NoSuchReservation", "TransferFailed"], "abort": ["NoSuchReservation"],
    "remove": ["NoSuchBlob", "InvalidName"], "close": [], "locate": ["InvalidName"],
    "place": ["OutOfSpace"],
}


def each_op(c, store, blob):
    """idl_probe --each-op: {operation: result}, each checked against its raises clause."""
    code, out, err = c.run([harness.program("tests/tools/idl_probe"), "--naming", c.naming, "--store", store,
                            "--each-op", blob], timeout=120)
    check_equal(code, 0, f"idl_probe --each-op exit status (stdout {out.strip()!r}, stderr {err.strip()!r})")
    results = {r["case"]: r for r in (json.loads(line) for line in out.splitlines())}
    check_equal(sorted(results), sorted(DECLARED), "operations reported by idl_probe --each-op")
    wrong = []
    for op, r in results.items():
        step(f"{store}: {op}: {r['raised']} (code {r['code']}) {(r['detail'] or r['message'])[:160]!r}")
        raised = r["raised"]
        if raised == "returned" or raised in DECLARED[op]:
            continue
        if raised.startswith("CORBA::") and raised != "CORBA::UNKNOWN" and r["code"] and r["detail"]:
            continue
        wrong.append(f"{op} raised {raised} (code {r['code']}, {r['message']!r}, {r['detail']!r}); "
                     f"declared: {DECLARED[op]}")
    check(not wrong, f"{store}: operations raised what their IDL does not declare: " + "; ".join(wrong))
    return results


def undeclared(c):
    step("a FileStore whose directory was removed under the daemon")
    broken = c.start_daemon("broken", "file")
    source = c.path("broken-source")
    harness.write_random(source, 1000)
    c.blob("push", "--name", "CT.here", source, store="broken").ok()
    shutil.rmtree(broken.store_dir)
    results = each_op(c, "broken", "CT.here")
    for op in ("contains", "stat", "list", "findLocalFile", "shareImage", "verify", "reserve", "send", "remove"):
        r = results[op]
        text = r["detail"] or r["message"]
        check(r["code"] == EXIT["io_error"] and f"cannot access its directory {broken.store_dir}" in text,
              f"{op} on the removed store: expected io_error naming {broken.store_dir}, got {r}")
    check(broken.running(), "blobstored died after its directory was removed")

    step("a client at its reservation limit (--max-reservations-per-client 1)")
    c.start_daemon("limited", "file", extra=["--max-reservations-per-client", "1"])
    c.blob("push", "--name", "CT.here", source, store="limited").ok()
    code, out, err = c.run([harness.program("tests/tools/idl_probe"), "--naming", c.naming, "--store", "limited",
                            "--leave-reservation", "10"], timeout=60)
    check_equal(code, 0, f"idl_probe --leave-reservation ({out!r} {err!r})")
    results = each_op(c, "limited", "CT.here")
    check_equal((results["reserve"]["raised"], results["reserve"]["code"]), ("LimitReached", EXIT["limit_reached"]),
                "reserve over the client's limit")
    check('client "127.0.0.1" already holds 1 open reservations' in results["reserve"]["message"],
          f"message of the refused reserve: {results['reserve']['message']!r}")


def test(c):
    disk = c.start_daemon("disk", "file")
    probe(c, disk, "disk")
    ram = c.start_daemon("ram", f"memory:{64 * MiB}")
    probe(c, ram, "ram")
    undeclared(c)


if __name__ == "__main__":
    harness.main(test)
