#!/usr/bin/env python3
"""Runs the push/pull benchmark suite and writes its results.

Starts, on 127.0.0.1 with ephemeral ports, one bsbench server per socket
variant (raw-c, raw-c-durable for pushes, ace, corba), omniNames and two blobstored daemons (a
MemoryStore and a FileStore) for the blobstreaming variant, and iperf3 as
the single-stream ceiling; runs every variant over every point (blob size or
series, direction, socket buffer) in this one invocation; stops every process
it started by its PID.

Writes into --out:
  results.json  {"machine": ..., "config": ..., "results": [one iperf3-shaped
                object per run, with variant, target, direction, blob_bytes,
                count, socket_buffer, link, run]}
  summary.json  median/min/max per point and the ratios to raw-c, raw-c-durable
                (push), corba, iperf3 and DCMTK (push)
  summary.md    the same as a Markdown table

Exit status: 0 when every run of every variant moved the right bytes
(SHA-256 checked by bsbench outside the timed interval), 1 otherwise or when
a process failed. Speed never fails the run.
"""
# The command line; what runs is in bench_plan.py, how in bench_runner.py
# (with tests/harness), what is written in bench_summary.py and
# bench_schema.py.

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (read-only in distcheck)
import bench_summary  # noqa: E402
from bench_plan import DEFAULT_VARIANTS, VARIANTS, make_plan  # noqa: E402
from bench_runner import Suite, harness, log  # noqa: E402
from bench_schema import NO_VERIFY  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bsbench", required=True)
    ap.add_argument("--blobstored", required=True)
    ap.add_argument("--omninames", default=shutil.which("omniNames") or "/usr/bin/omniNames")
    ap.add_argument("--out", default="bench-results")
    ap.add_argument("--quick", action="store_true", help="smoke run: few sizes and runs (CI)")
    ap.add_argument("--plan", choices=["full", "quick", "net"], default="full",
                    help="points to run: full (default), quick (= --quick), net (for --link netns)")
    ap.add_argument("--runs", type=int, help="runs per point (default 20; quick 3)")
    ap.add_argument("--sizes", help="comma-separated blob sizes, e.g. 512K,32M")
    ap.add_argument("--buffers", help="comma-separated socket buffers, e.g. 64K,auto")
    ap.add_argument("--no-series", action="store_true", help="skip the 200 x 0.5 MiB series")
    ap.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                    help="comma-separated, from: " + ",".join(VARIANTS) + "; the " + NO_VERIFY +
                    " ones pull with the client library's SHA-256 check off (bsbench --no-verify)")
    ap.add_argument("--directions", default="push,pull")
    ap.add_argument("--chunk", default="1M", help="bytes per read/write or CORBA call (bsbench --chunk)")
    ap.add_argument("--link", default="loopback", choices=["loopback", "netns"],
                    help="netns: two network namespaces (root), veth or, with --rtt-ms, TUN + tun_delay.py")
    ap.add_argument("--rate", default="", help="netns: tc tbf rate on both ends, e.g. 1gbit or 155mbit")
    ap.add_argument("--rtt-ms", type=float, default=0.0, help="netns: added round-trip time (TUN forwarder)")
    ap.add_argument("--point-timeout", type=int, default=900, help="seconds per client invocation")
    args = ap.parse_args()
    args.variants = args.variants.split(",")
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        ap.error("--variants: unknown %s; allowed: %s" % (",".join(unknown), ",".join(VARIANTS)))
    args.directions = args.directions.split(",")
    if args.quick:
        args.plan = "quick"
    args.quick = args.plan == "quick"
    return args


def write(out, suite, plan, args):
    """results.json, summary.json and summary.md (bench_schema)."""
    rows = bench_summary.summarize(suite.results)
    doc = {"machine": bench_summary.machine(),
           "config": {"plan": plan, "variants": args.variants, "directions": args.directions,
                      "link": suite.link.label, "quick": args.quick, "skipped": suite.skipped},
           "results": suite.results}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(doc, f)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"machine": doc["machine"], "summary": rows, "blobstored_peak_rss": suite.rss,
                   "failures": suite.failures}, f, indent=1)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(bench_summary.markdown(rows, suite.rss))
        f.write(bench_summary.dcmtk_timing_note(suite.results))
        f.write("\nGoals of the issue (default buffers; reported, not asserted):\n\n" +
                bench_summary.targets(rows, suite.rss))


def main():
    args = parse_args()
    plan = make_plan(args.plan, args.runs, args.sizes, args.buffers, args.no_series)
    for tool in ("nameclt", "iperf3") if "iperf3" in args.variants else ("nameclt",):
        if shutil.which(tool) is None:
            log("%s not found in PATH" % tool)
            return 1

    os.makedirs(args.out, exist_ok=True)
    suite = Suite(args, plan)
    started = time.monotonic()
    try:
        suite.run()
    except (RuntimeError, OSError, subprocess.SubprocessError, harness.TestFailure) as e:
        suite.fail(str(e))
    finally:
        suite.stop_all()
        shutil.rmtree(suite.tmp, ignore_errors=True)

    write(args.out, suite, plan, args)
    log("%d runs in %.0f s; wrote %s/{results.json,summary.json,summary.md}" % (
        len(suite.results), time.monotonic() - started, args.out))
    if suite.failures:
        log("%d FAILURES (wrong bytes or failed transfers):" % len(suite.failures))
        for failure in suite.failures:
            log("  " + failure)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
