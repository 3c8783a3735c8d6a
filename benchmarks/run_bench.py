#!/usr/bin/env python3
"""Runs the push/pull benchmark suite and writes its results.

Starts, on 127.0.0.1 with ephemeral ports, one bsbench server per socket
variant (raw-c, raw-c-durable for pushes, ace, corba), omniNames and two blobstored daemons (a
MemoryStore and a FileStore) for the blobstreaming variant, and iperf3 as
the single-stream ceiling; runs every variant over every point (blob size or
series, direction, socket buffer) in this one invocation. Then, on loopback,
the whole-program steps (bench_cli.py): same-host pulls against TCP pulls of
one FileStore Blob, and `blob push`/`blob pull` against plain_pair (a plain C
client/server pair) as whole processes, with that blobstored's peak RSS.
Stops every process it started by its PID.

Writes into --out:
  results.json  {"machine": ..., "config": ..., "results": [one iperf3-shaped
                object per run, with variant, target, direction, blob_bytes,
                count, socket_buffer, link, run], "same_host_pull": [...],
                "cli": [...], "cli_peak_rss": {...}}
  summary.json  median/min/max per point and the ratios to raw-c, raw-c-durable
                (push), corba, iperf3 and DCMTK (push); the steps' medians and
                ratios; the issue's goals as measured (bench_targets.py)
  summary.md    the same as Markdown tables
and prints the goals table.

Exit status: 0 when every run of every variant moved the right bytes
(SHA-256 checked by bsbench outside the timed interval; files compared by
the steps), 1 otherwise or when a process failed. Speed never fails the run.
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
import bench_targets  # noqa: E402
from bench_plan import DEFAULT_VARIANTS, VARIANTS, make_plan  # noqa: E402
from bench_runner import Suite, harness, log  # noqa: E402
from bench_schema import NO_VERIFY, STEPS, buffer_bytes  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bsbench", required=True)
    ap.add_argument("--blobstored", required=True)
    ap.add_argument("--blob", help="the blob CLI (default: clients/blob of bsbench's build tree)")
    ap.add_argument("--plain-pair", help="plain_pair (default: beside bsbench)")
    ap.add_argument("--omninames", default=shutil.which("omniNames") or "/usr/bin/omniNames")
    ap.add_argument("--out", default="bench-results")
    ap.add_argument("--quick", action="store_true", help="smoke run: few sizes and runs (CI)")
    ap.add_argument("--plan", choices=["full", "quick", "net"], default="full",
                    help="points to run: full (default), quick (= --quick), net (for --link netns)")
    ap.add_argument("--runs", type=int, help="runs per point (default 10; quick 3)")
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
    ap.add_argument("--steps", default=",".join(STEPS),
                    help="comma-separated, from: " + ",".join(STEPS) + " (points: the variants above; same-host: "
                    "same-host against TCP pulls; cli: blob against plain_pair, whole processes, and the peak RSS)")
    for step, what in (("same-host", "the same-host step's Blob (full plan 256M, quick 32M)"),
                       ("cli", "the cli step's file (full plan 1G, quick 64M)")):
        ap.add_argument("--%s-size" % step, help=what)
        ap.add_argument("--%s-runs" % step, type=int, help="runs of the %s step (full plan 10, quick 3)" % step)
    args = ap.parse_args()
    for option, values, allowed in (("--variants", args.variants, VARIANTS), ("--steps", args.steps, STEPS)):
        unknown = [v for v in values.split(",") if v not in allowed]
        if unknown:
            ap.error("%s: unknown %s; allowed: %s" % (option, ",".join(unknown), ",".join(allowed)))
    args.variants = args.variants.split(",")
    args.steps = args.steps.split(",")
    build = os.path.dirname(os.path.dirname(os.path.abspath(args.bsbench)))
    args.blob = args.blob or os.path.join(build, "clients", "blob")
    args.plain_pair = args.plain_pair or os.path.join(os.path.dirname(os.path.abspath(args.bsbench)), "plain_pair")
    args.step_sizes = {}
    for step in ("same-host", "cli"):
        size, runs = getattr(args, step.replace("-", "_") + "_size"), getattr(args, step.replace("-", "_") + "_runs")
        try:
            nbytes = buffer_bytes(size) if size else None
        except ValueError:
            nbytes = 0
        if nbytes is not None and nbytes <= 0:
            ap.error("--%s-size: %r is not allowed (a whole number of bytes, at least 1, or with K, M, G: 256M)" % (
                step, size))
        if runs is not None and runs < 1:
            ap.error("--%s-runs: %d (allowed: 1 or more)" % (step, runs))
        args.step_sizes[step] = (nbytes, runs)
    args.directions = args.directions.split(",")
    if args.quick:
        args.plan = "quick"
    args.quick = args.plan == "quick"
    return args


def write(out, suite, plan, args):
    """results.json, summary.json and summary.md (bench_schema); returns the
    goals table (Markdown)."""
    rows = bench_summary.summarize(suite.results)
    config = {"plan": plan, "plan_name": args.plan, "variants": args.variants, "directions": args.directions,
              "steps": args.steps, "link": suite.link_label, "quick": args.quick, "skipped": suite.skipped,
              "skipped_steps": suite.skipped_steps}
    doc = {"machine": bench_summary.machine(), "config": config, "results": suite.results,
           "same_host_pull": suite.same_host, "cli": suite.cli, "cli_peak_rss": suite.cli_rss}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(doc, f)
    summary = {"machine": doc["machine"], "link": suite.link_label, "config": config, "summary": rows,
               "blobstored_peak_rss": suite.rss, "same_host_pull": bench_summary.same_host_rows(suite.same_host),
               "cli": bench_summary.cli_rows(suite.cli), "cli_peak_rss": suite.cli_rss,
               "failures": suite.failures}
    summary["targets"] = bench_targets.evaluate([summary])
    goals = bench_targets.markdown(summary["targets"], bench_targets.informative([summary]),
                                   bench_targets.ceilings([summary]))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(bench_summary.markdown(rows, suite.rss))
        f.write(bench_summary.dcmtk_timing_note(suite.results))
        f.write(bench_summary.programs_markdown(summary["same_host_pull"], summary["cli"], suite.cli_rss))
        f.write("\nGoals of the issue (default buffers; reported, not asserted):\n\n" + goals)
    return goals


def main():
    args = parse_args()
    plan = make_plan(args.plan, args.runs, args.sizes, args.buffers, args.no_series, args.step_sizes)
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

    goals = write(args.out, suite, plan, args)
    print("\nGoals of the issue, link %s (default buffers; reported, not asserted):\n\n%s" % (
        suite.link_label, goals), file=sys.stderr, flush=True)
    log("%d runs in %.0f s; wrote %s/{results.json,summary.json,summary.md}" % (
        len(suite.results) + len(suite.same_host) + len(suite.cli), time.monotonic() - started, args.out))
    if suite.failures:
        log("%d FAILURES (wrong bytes or failed transfers):" % len(suite.failures))
        for failure in suite.failures:
            log("  " + failure)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
