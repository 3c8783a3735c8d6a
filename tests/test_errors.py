#!/usr/bin/env python3
"""One test per bad input or state, each with the exit code of docs/CLI.md
and the specific message: unknown Blob, range past the end, a full store
(other Blobs intact), an existing name, an unknown store, no Naming Service,
a store that does not answer (SIGSTOP), invalid Blob names, an unreadable
input file, usage errors."""

import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, step  # noqa: E402


def test(c):
    central = c.start_daemon("central", "file", tier="central", extra=["--capacity", "1M"])
    c.start_daemon("mem", "memory:1M", tier="memory")
    small = c.path("small")
    small_digest = harness.write_random(small, 1000)
    c.blob("push", "--name", "CT.small", small, store="central").ok()

    step("unknown Blob: 20")
    for args in (("stat", "nope"), ("pull", "nope", c.path("nope")), ("rm", "nope")):
        c.blob(*args, store="central").error(EXIT["no_such_blob"], 'blob "nope" not found')
    check(not os.path.exists(c.path("nope")), "a failed pull left an output file behind")
    plain = c.blob("stat", "nope", store="central", json_out=False)
    plain.error(EXIT["no_such_blob"], 'blob "nope" not found')
    check(plain.stderr.strip().splitlines()[-1].startswith("blob: "),
          f"error line does not start with 'blob: ': {plain.stderr!r}")
    r = c.blob("stat", "nope", store="central")
    check(r.json is not None and isinstance(r.json.get("error"), dict),
          f"--json failure printed no {{\"error\": ...}} object: {r.describe()}")
    check_equal(r.json["error"].get("name"), "no_such_blob", "JSON error name")
    check_equal(r.json["error"].get("code"), EXIT["no_such_blob"], "JSON error code")

    step("range past the end: 12, over TCP and through the same-host fast path")
    for local in (["--no-local"], []):
        c.blob(*local, "pull", "CT.small", "-", "--offset", 900, "--length", 200, store="central",
               binary=True).error(EXIT["invalid_range"], "range [900, 1100) is outside the blob of 1000 bytes")
        c.blob(*local, "pull", "CT.small", "-", "--offset", 1001, "--length", 1, store="central",
               binary=True).error(EXIT["invalid_range"], "is outside the blob of 1000 bytes")

    step("store full: 30, the other Blobs intact")
    big = c.path("big")
    harness.write_random(big, 700 * 1024)
    c.blob("push", "--name", "CT.first", big, store="central").ok()
    c.blob("push", "--name", "CT.second", big, store="central").error(EXIT["out_of_space"], 'no room for blob "CT.second"')
    c.blob("stat", "CT.second", store="central").error(EXIT["no_such_blob"], 'blob "CT.second" not found')
    two_mb = c.path("two-mb")
    harness.write_random(two_mb, 2 * harness.MiB)
    c.blob("push", "--name", "CT.huge", two_mb, store="mem").error(EXIT["out_of_space"], 'no room for blob "CT.huge"')
    names = sorted(b["name"] for b in c.blob("ls", store="central").ok()["blobs"])
    check_equal(names, ["CT.first", "CT.small"], "Blobs of central after the refused push")
    out = c.path("small.pulled")
    c.blob("--no-local", "pull", "CT.small", out, store="central").ok()
    check_equal(harness.checksum_file(out), small_digest, "CT.small after the refused push")
    leftovers = os.listdir(os.path.join(central.store_dir, "tmp"))
    check_equal(leftovers, [], "reservation files left in central's tmp/ after the refused push")

    step("existing name: 21; --replace overwrites")
    c.blob("push", "--name", "CT.first", small, store="central").error(EXIT["already_exists"], 'blob "CT.first" already exists')
    replaced = c.blob("push", "--name", "CT.first", small, "--replace", store="central").ok()
    check_equal(replaced.get("checksum"), small_digest, "push --replace: checksum")
    check_equal(c.blob("stat", "CT.first", store="central").ok().get("size"), 1000, "size of CT.first after --replace")

    step("unknown store: 26")
    for args in (("stat", "CT.small"), ("push", "--name", "CT.x", small), ("ls",)):
        c.blob(*args, store="zzz").error(EXIT["unknown_store"], 'no store named "zzz" is registered')

    step("no Naming Service: 52")
    # A port bound but not listening: connections are refused, and no other
    # process can take it while the checks run.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as hold:
        hold.bind(("127.0.0.1", 0))
        nowhere = f"corbaname::127.0.0.1:{hold.getsockname()[1]}"
        for args in (("ls",), ("stat", "CT.small"), ("push", "--name", "CT.y", small)):
            c.blob(*args, store="central", naming=nowhere, timeout=60).error(
                EXIT["unreachable"], f"cannot contact the naming service at {nowhere}")

    step("a store that does not answer: 51 after the inactivity timeout, then it serves again")
    os.kill(central.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        c.blob("--timeout", "1", "stat", "CT.small", store="central", timeout=60).error(
            EXIT["timeout"], 'store "central"')
        elapsed = time.monotonic() - started
        check(elapsed < 15, f"blob --timeout 1 took {elapsed:.1f} s to give up on a stopped store")
    finally:
        os.kill(central.pid, signal.SIGCONT)
    check_equal(c.blob("stat", "CT.small", store="central").ok().get("checksum"), small_digest,
                "stat CT.small after the store answers again")

    step("invalid Blob names: 11")
    for bad in ("../etc/passwd", ".hidden", "a/b", "x" * 201):
        c.blob("push", "--name", bad, small, store="central").error(EXIT["invalid_name"], "invalid blob name")
        c.blob("stat", bad, store="central").error(EXIT["invalid_name"], "invalid blob name")
    names = sorted(b["name"] for b in c.blob("ls", store="central").ok()["blobs"])
    check_equal(names, ["CT.first", "CT.small"], "Blobs of central after the invalid names")

    step("unreadable input file: 40; usage errors: 1")
    missing = c.path("does-not-exist")
    c.blob("push", "--name", "CT.z", missing, store="central").error(EXIT["io_error"], missing)
    c.blob("--no-such-option", "ls", store="central").error(EXIT["usage"], "--no-such-option")
    c.blob("frobnicate", store="central").error(EXIT["usage"], "frobnicate")
    c.blob("pull", store="central").error(EXIT["usage"], "")


if __name__ == "__main__":
    harness.main(test)
