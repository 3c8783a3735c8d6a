#!/usr/bin/env python3
"""A store at its capacity (--capacity): a push that does not fit is refused
at reserve time with out_of_space (exit 30) and a message giving need, free,
capacity, used and reserved; nothing of it is listed or reserved afterwards;
the other Blobs stay intact; the daemon keeps serving. Of concurrent pushes
competing for the last free bytes, exactly as many succeed as fit. Removing
a Blob frees its space for the next push."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, MiB, check, check_equal, step  # noqa: E402

CAPACITY = 8 * MiB


def usage(c):
    s = [s for s in c.blob("stores").ok()["stores"] if s["name"] == "full"][0]
    return s["used"], s["reserved"], s["capacity"]


def test(c):
    daemon = c.start_daemon("full", "file", extra=["--capacity", str(CAPACITY)])
    three = c.path("three")
    three_digest = harness.write_random(three, 3 * MiB)
    c.blob("push", "--name", "CT.a", three, store="full").ok()
    c.blob("push", "--name", "CT.b", three, store="full").ok()
    check_equal(usage(c), (6 * MiB, 0, CAPACITY), "used, reserved, capacity with two Blobs")

    step("a push that does not fit: out_of_space with the numbers")
    c.blob("push", "--name", "CT.c", three, store="full").error(
        EXIT["out_of_space"],
        f'no room for blob "CT.c": need {3 * MiB} bytes, {2 * MiB} free of capacity {CAPACITY} '
        f'({6 * MiB} used, 0 reserved)')
    c.blob("stat", "CT.c", store="full").error(EXIT["no_such_blob"], 'blob "CT.c" not found')
    check_equal(usage(c), (6 * MiB, 0, CAPACITY), "used and reserved after the refused push")
    check_equal(os.listdir(os.path.join(daemon.store_dir, "tmp")), [], "reservation files after the refusal")

    step("four concurrent 1 MiB pushes for 2 MiB of free space: two succeed, two are refused")
    one = c.path("one")
    one_digest = harness.write_random(one, MiB)
    procs = []
    for i in range(4):
        procs.append(subprocess.Popen(
            [harness.program("clients/blob"), "--naming", c.naming, "--store", "full", "push", "--name", f"CT.race{i}", one],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=c.env))
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        results.append((p.returncode, err.strip()))
    step(f"exit codes of the racing pushes: {[r[0] for r in results]}")
    check_equal(sorted(r[0] for r in results), [0, 0, EXIT["out_of_space"], EXIT["out_of_space"]],
                f"exit codes of the racing pushes ({results})")
    for code, err in results:
        if code:
            check("no room for blob" in err and "free of capacity 8388608" in err,
                  f"message of a refused racing push: {err!r}")
    check_equal(usage(c), (CAPACITY, 0, CAPACITY), "used and reserved when full")

    step("full to the byte: even one byte is refused; the Blobs are intact and served")
    byte = c.path("byte")
    harness.write_random(byte, 1)
    c.blob("push", "--name", "CT.byte", byte, store="full").error(
        EXIT["out_of_space"], f'no room for blob "CT.byte": need 1 bytes, 0 free of capacity {CAPACITY}')
    listed = {b["name"]: b for b in c.blob("ls", store="full").ok()["blobs"]}
    winners = sorted(n for n in listed if n.startswith("CT.race"))
    check_equal(len(winners), 2, f"racing pushes listed ({sorted(listed)})")
    for name in ["CT.a", "CT.b"] + winners:
        expected = three_digest if name in ("CT.a", "CT.b") else one_digest
        check_equal(listed[name]["checksum"], expected, f"checksum of {name} in the full store")
    out = c.path("a.pulled")
    c.blob("--no-local", "pull", "CT.a", out, store="full").ok()
    check_equal(harness.checksum_file(out), three_digest, "checksum of CT.a pulled from the full store")

    step("removing a Blob makes room")
    c.blob("rm", "CT.b", store="full").ok()
    check_equal(usage(c), (5 * MiB, 0, CAPACITY), "used after rm")
    pushed = c.blob("push", "--name", "CT.c", three, store="full").ok()
    check_equal(pushed["checksum"], three_digest, "checksum of CT.c pushed after rm")
    check(daemon.running(), "blobstored exited")


if __name__ == "__main__":
    harness.main(test)
