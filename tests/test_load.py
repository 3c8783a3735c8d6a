#!/usr/bin/env python3
"""Load: many concurrent clients, each with its own libblobclient Session,
alternate pushes and pulls of Blobs of mixed sizes against one blobstored
(tests/tools/client_driver load). Every transfer must succeed and every
digest match; the aggregate MB/s and the daemon's peak RSS (VmHWM) are
reported, never asserted (the machine is shared).

`make check` runs a small variant (16 clients x 6 transfers, 0.5-8 MiB);
`make check-load` (BS_LOAD_FULL=1) the full one: 64 clients x 20 transfers,
0.5-32 MiB."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step  # noqa: E402



def test(c):
    full = os.environ.get("BS_LOAD_FULL") == "1"
    clients, transfers, max_size = (64, 20, 32 * MiB) if full else (16, 6, 8 * MiB)
    daemon = c.start_daemon("load", "file", extra=["--timeout", "120"])
    step(f"{clients} clients x {transfers} transfers, sizes {MiB // 2} to {max_size} bytes")
    code, out, err = c.run([harness.program("tests/tools/client_driver"), "load", "--naming", c.naming,
                            "--store", "load", "--clients", str(clients), "--transfers", str(transfers),
                            "--min-size", str(MiB // 2), "--max-size", str(max_size), "--seed", "7"],
                           timeout=1800 if full else 600)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    step(f"client_driver exited {code}: {lines[-1] if lines else out.strip()[-2000:]}")
    check(lines, f"client_driver printed no result: {out[-2000:]!r} {err[-4000:]!r}")
    result = json.loads(lines[-1])
    hwm = harness.peak_rss_kib(daemon.pid)
    step(f"LOAD RESULT: {result['transfers']} transfers, {result['bytes'] / 1e6:.1f} MB in {result['seconds']:.2f} s: "
         f"aggregate {result['mbps']:.1f} MB/s; blobstored peak RSS (VmHWM) {hwm / 1024:.1f} MiB")
    check_equal(result["errors"], 0, f"errors ({result['first_errors']})")
    check_equal(result["digest_mismatches"], 0, "digest mismatches")
    check_equal(result["transfers"], clients * transfers, "transfers completed")
    check_equal(code, 0, "client_driver exit status")
    check(daemon.running(), "blobstored died under load")
    stores = c.blob("stores").ok()["stores"]
    usage = [s for s in stores if s["name"] == "load"][0]
    check_equal(usage["reserved"], 0, "bytes still reserved after the load")
    check_equal(usage["blobs"], clients * ((transfers + 1) // 2), "Blobs stored after the load")


if __name__ == "__main__":
    harness.main(test)
