#!/usr/bin/env python3
"""Two builds of blobstored side by side: one omniNames, a daemon of each
build with the same kind of store, and one bsbench client per daemon whose
runs interleave (bench_paced.py), so that the load of a shared machine
falls on both alike. For a change to the daemon's data path, measured
against the daemon without it in one invocation:

  ab_daemons.py --bsbench _build/benchmarks/bsbench --a OLD/blobstored --b NEW/blobstored \\
      [--store memory|file] [--direction pull|push] [--size 1M] [--runs 300]

Prints each daemon's median, min and max MB/s, the p25 and median time per
transfer, the daemon's CPU per transfer (its threads' run time across each
run, /proc/PID/task/*/schedstat) and the ratio b / a of the medians and of
each round's two runs. Exit 1 when a run failed."""

import argparse
import os
import statistics
import sys
import types

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_paced  # noqa: E402
import bench_runner  # noqa: E402
from bench_schema import megabytes_per_second  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bsbench", required=True)
    ap.add_argument("--a", required=True, help="blobstored of the reference build")
    ap.add_argument("--b", required=True, help="blobstored of the build measured against it")
    ap.add_argument("--omninames", default="/usr/bin/omniNames")
    ap.add_argument("--store", choices=["memory", "file"], default="memory")
    ap.add_argument("--direction", choices=["push", "pull"], default="pull")
    ap.add_argument("--size", default="1M")
    ap.add_argument("--runs", type=int, default=300)
    args = ap.parse_args()
    failures = []
    suite_args = types.SimpleNamespace(bsbench=args.bsbench, blobstored=args.a, omninames=args.omninames,
                                       link="loopback", chunk="1M", quick=False, steps=[])
    suite = bench_runner.Suite(suite_args, {"runs": args.runs})
    try:
        _, ns_port = suite.start_naming()
        clients = []
        for label, program in (("a", args.a), ("b", args.b)):
            suite_args.blobstored = program
            daemon, store = suite.start_store(args.store, "auto", ns_port, 1 << 30, name="ab-%s-%s" % (
                label, args.store))
            clients.append((label, [args.bsbench, "-c", "127.0.0.1", "-p", str(ns_port), "--variant",
                                    "blobstreaming", "--direction", args.direction, "--size", args.size,
                                    "--runs", str(args.runs), "--store", store, "-J"], daemon.pid))
        records = bench_paced.interleave(clients, args.runs, 300, bench_runner.log, failures.append)
    finally:
        suite.stop_all()
    if failures or not records:
        return 1
    values = {label: {rec["run"]: megabytes_per_second(rec) for rec in records if rec["client"] == label}
              for label in ("a", "b")}
    for label, program in (("a", args.a), ("b", args.b)):
        v = list(values[label].values())
        mine = [rec for rec in records if rec["client"] == label]
        micros = sorted(1e6 * rec["end"]["sum_received"]["seconds"] for rec in mine)
        cpu = [rec["server_cpu"]["seconds"] for rec in mine if "server_cpu" in rec]
        print("%s %s: median %.1f MB/s (min %.1f, max %.1f, %d runs); per transfer p25/p50 %.0f/%.0f us, "
              "the daemon's CPU median/mean %.0f/%.0f us" % (
                  label, program, statistics.median(v), min(v), max(v), len(v), micros[len(micros) // 4],
                  statistics.median(micros), 1e6 * statistics.median(cpu) if cpu else 0,
                  1e6 * sum(cpu) / max(len(cpu), 1)))
    per_round = [values["b"][run] / values["a"][run] for run in values["b"] if values["a"].get(run)]
    print("b / a: %.3f of the medians; per round median %.3f (min %.3f, max %.3f, %d rounds)" % (
        statistics.median(values["b"].values()) / statistics.median(values["a"].values()),
        statistics.median(per_round), min(per_round), max(per_round), len(per_round)))
    return 0

if __name__ == "__main__":
    sys.exit(main())
