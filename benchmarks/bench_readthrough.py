#!/usr/bin/env python3
"""The first pull through a read-through cache (`make bench-readthrough`): a
Blob of --size bytes (default 256 MiB) in a central file store; a
workstation memory store with --read-through. Each round, in the same run,
alternating: a pull straight from central, and the first pull of it through
the workstation (which fetches it from central while the client receives
it), then the workstation's copy removed again. Every pull is a whole `blob
pull NAME -` process timed from fork to exit, its output discarded; `blob`
verifies the whole-Blob checksum of every pull (exit 0 only when right).

Writes --out/results.json (every run) and --out/summary.{json,md}: medians
of the time to the first byte and to the end, and the ratio time(through
the cache) / time(straight). A cache that sent nothing on before its
commit would show the whole fetch in its time to the first byte; one that
forwards while it receives, a few milliseconds. The whole pull through the
cache moves the bytes twice (central to cache, cache to client): about
1 x where there are cores for both hops, up to 2 x where they share one
or two. Reported, never asserted: exit 0 when every pull succeeded."""

import argparse
import fcntl
import os
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import harness  # noqa: E402
from harness import MiB  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_output import write_outputs  # noqa: E402

F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ from Python 3.10 on


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build tree (blobstore/blobstored, clients/blob)")
    ap.add_argument("--out", required=True, help="directory for results.json and summary.{json,md}")
    ap.add_argument("--size", type=int, default=256 * MiB, help="bytes of the Blob (default 268435456)")
    ap.add_argument("--runs", type=int, default=5, help="timed rounds (default 5)")
    args = ap.parse_args()
    for name in ("size", "runs"):
        if getattr(args, name) < 1:
            ap.error(f"--{name}: {getattr(args, name)}; allowed: 1 or more")
    return args


def timed_pull(c, store, name):
    """(seconds to the first byte, seconds to exit) of one whole pull."""
    argv = [harness.program("clients/blob"), "--naming", c.naming, "--no-local", "pull", name, "-", "--store", store]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=c.env, bufsize=0)
    fd = p.stdout.fileno()
    try:
        fcntl.fcntl(fd, F_SETPIPE_SZ, MiB)  # fewer wake-ups of this reader
    except OSError:
        pass
    first = os.read(fd, 1)
    ttfb = time.monotonic() - t0
    while os.read(fd, MiB):
        pass
    _, err = p.communicate(timeout=900)
    seconds = time.monotonic() - t0
    harness.check(p.returncode == 0 and first, f"pull {name} from {store}: exit {p.returncode}: {err!r}")
    return ttfb, seconds


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.environ["BS_BUILDDIR"] = os.path.abspath(args.build)
    c = harness.Cluster("bench-readthrough")
    records = []
    try:
        c.start_naming()
        c.start_daemon("central", "file", tier="central", extra=["--no-sync"])
        c.start_daemon("ws", f"memory:{max(64, 2 * args.size // MiB)}M", tier="workstation",
                       extra=["--read-through"])
        src = c.path("blob")
        harness.write_random(src, args.size, algorithm=None)
        c.blob("push", "--name", "CT.big", src, store="central", timeout=600).ok()
        os.unlink(src)
        cases = [("straight", "central"), ("through-cache", "ws")]
        for n in range(args.runs + 1):  # round 0 untimed
            order = cases if n % 2 == 0 else list(reversed(cases))
            for case, store in order:
                ttfb, seconds = timed_pull(c, store, "CT.big")
                if store == "ws":
                    c.blob("rm", "CT.big", store="ws").ok()
                if n:
                    records.append({"case": case, "run": n, "seconds": seconds, "first_byte_s": ttfb,
                                    "bytes": args.size})
    finally:
        c.close()
    cases = ("straight", "through-cache")
    med = {case: statistics.median(r["seconds"] for r in records if r["case"] == case) for case in cases}
    first = {case: statistics.median(r["first_byte_s"] for r in records if r["case"] == case) for case in cases}
    summary = {"bytes": args.size, "runs": args.runs, "median_s": med, "median_first_byte_s": first,
               "ratio_through_cache_over_straight": med["through-cache"] / med["straight"],
               "first_byte_ratio": first["through-cache"] / first["straight"]}
    md = (f"first pull of {args.size} bytes, medians of {args.runs} runs\n\n"
          "| case | first byte s | whole pull s | MB/s | whole / straight |\n|---|---|---|---|---|\n" +
          "".join(f"| {case} | {first[case]:.3f} | {med[case]:.3f} | {args.size / med[case] / 1e6:.0f} | "
                  f"{med[case] / med['straight']:.2f} |\n" for case in cases))
    write_outputs(args.out, records, summary, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
