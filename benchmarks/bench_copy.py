#!/usr/bin/env python3
"""Precaching a study to several stores with `blob copy` (`make bench-copy`):
a study of --slices Blobs of --slice-size bytes (default 200 x 0.5 MiB) in a
central file store is copied to 1 store and to --fanout stores (default 4)
in the same run, alternating, each copy a whole `blob copy` process timed
from fork to exit; the destinations are memory stores (the copies measure
the transfer, not a disk); every round replaces what the last one copied
(--replace).

Two sources hold the same study, both file stores on this host:
"central" offers its files (the default), so every destination maps the
source's sealed image of the file (one copy in memory for all, no socket:
the cases "one" and "fanout", the target's); "central-port" runs with --no-local, as a source on another host
would be seen, so the destinations chain through their data ports (each
fetches from the one before it, the source sends each Blob once: the cases
"one-port" and "fanout-port"). Every copy is checked: each destination's
`blob ls` must list every slice with the source's checksum.

Writes --out/results.json (every run) and --out/summary.{json,md}: medians
and the ratio time(fan-out) / time(one store), the issue's target being
<= 1.5 on loopback. Each run also records the CPU time it cost: every
daemon's (from /proc/PID/stat) and the `blob copy` process's (its rusage).
On one host every destination's work shares the same cores, so the
summary gives the floor the machine sets: the fan-out's median CPU time
spread over all cores without a pause, divided by the one-store time
("cpu_floor_ratio"); a ratio near the floor is bound by the cores, one
far above it by waiting (or by other work on the machine: the floor
assumes every core free). "cpu_ratio_fanout_over_one" is what the
fan-out costs in CPU time against one copy, whatever the cores. Exit 0 when every copy was complete and right;
speed never fails the run."""

import argparse
import os
import resource
import statistics
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import harness  # noqa: E402
from harness import MiB  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_output import write_outputs  # noqa: E402

TARGET = 1.5


def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build tree (blobstore/blobstored, clients/blob)")
    ap.add_argument("--out", required=True, help="directory for results.json and summary.{json,md}")
    ap.add_argument("--slices", type=int, default=200, help="Blobs in the study (default 200)")
    ap.add_argument("--slice-size", type=int, default=MiB // 2, help="bytes per Blob (default 524288)")
    ap.add_argument("--fanout", type=int, default=4, help="destinations of the fan-out (default 4)")
    ap.add_argument("--runs", type=int, default=5, help="timed rounds (default 5)")
    args = ap.parse_args()
    for name in ("slices", "slice_size", "fanout", "runs"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')}: {getattr(args, name)}; allowed: 1 or more")
    return args


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.environ["BS_BUILDDIR"] = os.path.abspath(args.build)
    c = harness.Cluster("bench-copy")
    records = []
    try:
        c.start_naming()
        daemons = [c.start_daemon("central", "file", tier="central", extra=["--no-sync"]),
                   c.start_daemon("central-port", "file", tier="central", extra=["--no-sync", "--no-local"])]
        room = f"{max(64, 2 * args.slices * args.slice_size // MiB)}M"
        dests = [f"ws{i}" for i in range(args.fanout)]
        for d in dests:
            daemons.append(c.start_daemon(d, f"memory:{room}", tier="workstation"))
        names, files = [], []
        for i in range(args.slices):
            names.append(f"CT.{i:04d}")
            files.append(c.path(names[-1]))
            harness.write_random(files[-1], args.slice_size, algorithm=None)
        for source in ("central", "central-port"):
            c.blob("push", *files, store=source, timeout=600).ok()
        want = {b["name"]: b["checksum"] for b in c.blob("ls", store="central").ok()["blobs"]}
        for f in files:
            os.unlink(f)

        cases = [("one", dests[:1], "central"), ("fanout", dests, "central"),
                 ("one-port", dests[:1], "central-port"), ("fanout-port", dests, "central-port")]
        for n in range(args.runs + 1):  # round 0 untimed
            order = cases if n % 2 == 0 else list(reversed(cases))
            for case, to, source in order:
                argv = ["copy", *names, "--to", ",".join(to), "--from", source, "--replace", "-q"]
                cpu0 = sum(cpu_seconds(d.pid) for d in daemons) + children_cpu()
                t0 = time.monotonic()
                c.blob(*argv, json_out=False, timeout=900).ok()
                seconds = time.monotonic() - t0
                cpu = sum(cpu_seconds(d.pid) for d in daemons) + children_cpu() - cpu0
                for d in to:
                    got = {b["name"]: b["checksum"] for b in c.blob("ls", store=d).ok()["blobs"]}
                    harness.check_equal(got, want, f"{case}: the Blobs at {d}")
                if n:
                    records.append({"case": case, "stores": len(to), "run": n, "seconds": seconds,
                                    "cpu_seconds": cpu, "bytes": args.slices * args.slice_size * len(to)})
    finally:
        c.close()
    cases = ("one", "fanout", "one-port", "fanout-port")
    med = {case: statistics.median(r["seconds"] for r in records if r["case"] == case) for case in cases}
    cpu = {case: statistics.median(r["cpu_seconds"] for r in records if r["case"] == case) for case in cases}
    cores = len(os.sched_getaffinity(0))
    floor = cpu["fanout"] / cores / med["one"]
    summary = {"slices": args.slices, "slice_bytes": args.slice_size, "fanout": args.fanout, "runs": args.runs,
               "median_s": med, "median_cpu_s": cpu, "cores": cores,
               "ratio_fanout_over_one": med["fanout"] / med["one"],
               "ratio_port_fanout_over_one": med["fanout-port"] / med["one-port"], "cpu_floor_ratio": floor,
               "cpu_ratio_fanout_over_one": cpu["fanout"] / cpu["one"],
               "target": TARGET, "met": med["fanout"] / med["one"] <= TARGET}
    md = (f"`blob copy` of {args.slices} x {args.slice_size} bytes, medians of {args.runs} runs\n\n"
          f"| case | stores | median s | / one store (same source) | CPU s (all processes) | cores busy |\n"
          f"|---|---|---|---|---|---|\n" +
          "".join(f"| {case} | {1 if case.startswith('one') else args.fanout} | {med[case]:.3f} | "
                  f"{med[case] / med['one-port' if case.endswith('port') else 'one']:.2f} | {cpu[case]:.3f} | "
                  f"{cpu[case] / med[case]:.2f} |\n"
                  for case in cases) +
          f"\nTarget: fan-out <= {TARGET} x one store: {'met' if summary['met'] else 'not met'}. "
          f"The floor on this machine ({cores} cores, the fan-out's CPU time spread over all of them): "
          f"{floor:.2f} x one store; the fan-out costs {cpu['fanout'] / cpu['one']:.2f} x the CPU time of one "
          f"copy.\n")
    write_outputs(args.out, records, summary, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
