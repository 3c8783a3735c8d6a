#!/usr/bin/env python3
"""C-MOVE of a study from blob-dicomd to DCMTK's storescp against storescu
sending the same files to the same storescp (`make bench-dicom-move`),
reported, never asserted (docs/DICOM.md, "C-MOVE against storescu").

A study of --slices CT slices (512x512, 16 bit: 0.5 MiB each, made with
pydicom by tests/tools/dicom_objects.py) is stored once in blob-dicomd (a
file store, the SQLite index). One storescp receives for both senders
(--bit-preserving --max-pdu 131072, its output directory emptied before each
run, TCP_NODELAY=1 in its environment: DCMTK's receivers leave Nagle on
otherwise, and it is the same process, so the same settings, for both).
The senders: storescu sends the files (TCP_NODELAY=1 in its environment
too); movescu asks blob-dicomd to move the study to that storescp (a
--destination): the instances are pulled from the store (verified) and sent
on the gateway's own association (TCP_NODELAY set by the gateway).

Each sender runs once untimed first (page cache, the store's and the
index's caches, the gateway's buffers). Then rounds, each running both
senders once, in turns: storescu first in even rounds, C-MOVE first in odd
ones (with a third sender, each first in turn), so that none always
runs after another. --runs rounds at most,
stopping after --seconds (and at least --min-runs rounds) so that a loaded
machine bounds the time. Timed: the storescu and movescu processes,
association set-up included. Also the CPU time each run costs (mean over
the rounds): the sender process, storescp, and for a C-MOVE the gateway
and its store, from /proc, and their context switches (all their
threads; the median): on a loaded machine each switch is a wait for a
core, and the time follows the CPU and the switches a run needs. The issue's target: C-MOVE throughput >= 0.8 x
storescu's, as the ratio of the medians; also each round's own ratio
(storescu / C-MOVE time of the same round), their median, least and
greatest, and the share of rounds at or above the target.

--baseline-build DIR adds a third sender in the same rounds: the same move
from the blob-dicomd of another build tree (its own file store and index,
the same study, the same storescp): before and after a change in one
invocation, under the same load.

Prints and writes --out/summary.json."""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import harness  # noqa: E402
from harness.dicom import AE, Gateway, make_objects  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_copy import children_cpu, cpu_seconds  # noqa: E402

STORESCP_OPTIONS = ["--bit-preserving", "--max-pdu", "131072"]
TARGET = 0.8


def timed(c, argv):
    started = time.monotonic()
    code, _, err = c.run(argv, timeout=600)
    seconds = time.monotonic() - started
    if code != 0 or "Failed" in err or "Refused" in err:
        raise harness.TestFailure(f"{argv[0]} exited {code}: {err[-2000:]}")
    return seconds


def switches(pid):
    """Context switches of every thread of process `pid` so far (each one a
    wait for the scheduler on a loaded machine)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                total += sum(int(line.split()[1]) for line in f if "ctxt_switches" in line)
        except OSError:
            pass  # a thread that ended meanwhile
    return total


def children_switches():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_nvcsw + usage.ru_nivcsw


def quartiles(values):
    """(25th percentile, median, 75th percentile) of `values`."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[1], q[2]


def spread(values):
    low, mid, high = quartiles(values)
    return {"median": mid, "min": min(values), "max": max(values), "p25": low, "p75": high}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build tree")
    ap.add_argument("--out", required=True, help="directory for summary.json")
    ap.add_argument("--slices", type=int, default=200)
    ap.add_argument("--runs", type=int, default=15, help="rounds at most (each: both senders once)")
    ap.add_argument("--min-runs", type=int, default=5, help="rounds at least, whatever --seconds says")
    ap.add_argument("--seconds", type=float, default=60, help="no new round after this many seconds of rounds")
    ap.add_argument("--baseline-build", help="another build tree whose blob-dicomd moves the study too, in turn")
    args = ap.parse_args()
    if args.runs < 1 or args.min_runs < 1 or args.min_runs > args.runs:
        ap.error(f"--runs {args.runs} and --min-runs {args.min_runs}: both at least 1, --min-runs at most --runs")
    os.environ["BS_BUILDDIR"] = os.path.abspath(args.build)
    os.makedirs(args.out, exist_ok=True)
    c = harness.Cluster("bench-dicom-move")
    c.env["TCP_NODELAY"] = "1"
    load = [os.getloadavg()[0]]
    try:
        c.start_naming()
        study_dir = c.path("study")
        study = make_objects(c, "study", study_dir, str(args.slices), "BENCH", "20261128", "CT", "512")
        total = sum(os.path.getsize(e["path"]) for e in study)
        received = c.path("storescp-out")
        os.makedirs(received)
        port = harness.free_port()
        scp = c.spawn("storescp", ["storescp", *STORESCP_OPTIONS, "-aet", "STORESCP", "-od", received, str(port)],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        harness.wait_for(lambda: c.run(["echoscu", "-aec", "STORESCP", "127.0.0.1", str(port)], timeout=30)[0] == 0,
                         30, "storescp answering C-ECHO")
        ws1 = c.start_daemon("ws1", "file")
        gw = Gateway(c, "ws1", "gateway", extra=["--destination", f"STORESCP=127.0.0.1:{port}"])
        timed(c, ["storescu", "-aet", "MODALITY", "-aec", AE, "127.0.0.1", str(gw.port), "+sd", study_dir])
        kinds = ["storescu", "c-move"]
        baseline = None
        if args.baseline_build:
            ws2 = c.start_daemon("ws2", "file")
            os.environ["BS_BUILDDIR"] = os.path.abspath(args.baseline_build)
            try:
                baseline = Gateway(c, "ws2", "baseline", extra=["--destination", f"STORESCP=127.0.0.1:{port}"])
            finally:
                os.environ["BS_BUILDDIR"] = os.path.abspath(args.build)
            timed(c, ["storescu", "-aet", "MODALITY", "-aec", AE, "127.0.0.1", str(baseline.port), "+sd", study_dir])
            kinds.append("c-move-baseline")
        move = ["movescu", "-S", "-aet", "VIEWER", "-aec", AE, "-aem", "STORESCP", "-k", "QueryRetrieveLevel=STUDY",
                "-k", f"StudyInstanceUID={study[0]['study']}", "127.0.0.1"]
        senders = {
            "storescu": ["storescu", "-aet", "MODALITY", "-aec", "STORESCP", "127.0.0.1", str(port), "+sd", study_dir],
            "c-move": move + [str(gw.port)],
        }
        if baseline:
            senders["c-move-baseline"] = move + [str(baseline.port)]

        # The processes each sender keeps busy besides itself, for the CPU
        # time a run costs: the receiver, and a C-MOVE's gateway and store.
        busy = {"storescu": {"storescp": scp.pid}, "c-move": {"storescp": scp.pid, "gateway": gw.proc.pid,
                                                              "store": ws1.pid}}
        if baseline:
            busy["c-move-baseline"] = {"storescp": scp.pid, "gateway": baseline.proc.pid, "store": ws2.pid}
        cpu = {kind: [] for kind in kinds}
        ctx = {kind: [] for kind in kinds}

        def run(kind):
            shutil.rmtree(received)
            os.makedirs(received)
            before = {name: cpu_seconds(pid) for name, pid in busy[kind].items()}
            before["sender"] = children_cpu()
            switched = {name: switches(pid) for name, pid in busy[kind].items()}
            switched["sender"] = children_switches()
            seconds = timed(c, senders[kind])
            after = {name: cpu_seconds(pid) for name, pid in busy[kind].items()}
            after["sender"] = children_cpu()
            cpu[kind].append({name: after[name] - before[name] for name in before})
            now = {name: switches(pid) for name, pid in busy[kind].items()}
            now["sender"] = children_switches()
            ctx[kind].append({name: now[name] - switched[name] for name in now})
            if len(os.listdir(received)) != args.slices:
                raise harness.TestFailure(f"{kind}: storescp wrote {len(os.listdir(received))} files, "
                                          f"not {args.slices}")
            return seconds

        warm = {kind: run(kind) for kind in kinds}
        for kind in kinds:
            cpu[kind].clear()
            ctx[kind].clear()
        times = {kind: [] for kind in kinds}
        started = time.monotonic()
        rounds = 0
        while rounds < args.runs and (rounds < args.min_runs or time.monotonic() - started < args.seconds):
            # Each sender first in turn (two: storescu first in even rounds).
            order = kinds[rounds % len(kinds):] + kinds[:rounds % len(kinds)]
            for kind in order:
                times[kind].append(run(kind))
            rounds += 1
        rounds_s = time.monotonic() - started
        load.append(os.getloadavg()[0])
        scp.stop()
        shutil.copy(gw.err, os.path.join(args.out, os.path.basename(gw.err)))
        if baseline:
            shutil.copy(baseline.err, os.path.join(args.out, os.path.basename(baseline.err)))
    finally:
        c.close()
    su, mv = spread(times["storescu"]), spread(times["c-move"])
    per_round = [s / m for s, m in zip(times["storescu"], times["c-move"])]
    pr = spread(per_round)
    ratio = su["median"] / mv["median"]
    summary = {"slices": args.slices, "bytes": total, "runs": rounds, "rounds_s": rounds_s,
               "order": "storescu first in even rounds, C-MOVE first in odd ones; one untimed run of each before",
               "storescp_options": " ".join(STORESCP_OPTIONS), "load_average": load, "warm_s": warm,
               "storescu_s": times["storescu"], "move_s": times["c-move"],
               "storescu": su, "move": mv,
               "storescu_median_s": su["median"], "move_median_s": mv["median"],
               "storescu_MBps": total / su["median"] / 1e6, "move_MBps": total / mv["median"] / 1e6,
               "ratio": ratio, "round_ratios": per_round, "round_ratio": pr,
               "rounds_meeting_target": sum(r >= TARGET for r in per_round), "target": TARGET,
               "cpu_s": {kind: {name: statistics.mean(r[name] for r in runs) for name in runs[0]}
                         for kind, runs in cpu.items()},
               "context_switches": {kind: {name: statistics.median(r[name] for r in runs) for name in runs[0]}
                                    for kind, runs in ctx.items()}}
    print(f"C-MOVE of {args.slices} slices ({total / 2**20:.1f} MiB) to storescp, {rounds} interleaved rounds in "
          f"{rounds_s:.0f} s, load {load[0]:.1f}-{load[-1]:.1f}: storescu median {su['median']:.3f} s "
          f"(p25-p75 {su['p25']:.3f}-{su['p75']:.3f}, {total / su['median'] / 1e6:.1f} MB/s), C-MOVE median "
          f"{mv['median']:.3f} s (p25-p75 {mv['p25']:.3f}-{mv['p75']:.3f}, {total / mv['median'] / 1e6:.1f} MB/s): "
          f"C-MOVE/storescu throughput {ratio:.2f} (target >= {TARGET}); per round {pr['median']:.2f} median, "
          f"{pr['min']:.2f}-{pr['max']:.2f}, {summary['rounds_meeting_target']} of {rounds} rounds >= {TARGET}",
          flush=True)
    for kind, by in summary["cpu_s"].items():
        print(f"  CPU per run of {kind}, mean: " + ", ".join(f"{name} {t * 1000:.0f} ms" for name, t in by.items()) +
              f"; total {sum(by.values()) * 1000:.0f} ms; context switches (median): " +
              ", ".join(f"{name} {n:.0f}" for name, n in summary["context_switches"][kind].items()), flush=True)
    print(f"  runs storescu {['%.3f' % t for t in times['storescu']]}", flush=True)
    print(f"  runs C-MOVE   {['%.3f' % t for t in times['c-move']]}", flush=True)
    if baseline:
        bl = spread(times["c-move-baseline"])
        bl_rounds = spread([s / m for s, m in zip(times["storescu"], times["c-move-baseline"])])
        summary["baseline"] = {"build": os.path.abspath(args.baseline_build), "move_s": times["c-move-baseline"],
                               "move": bl, "ratio": su["median"] / bl["median"], "round_ratio": bl_rounds}
        print(f"  runs C-MOVE of {args.baseline_build} {['%.3f' % t for t in times['c-move-baseline']]}: median "
              f"{bl['median']:.3f} s, C-MOVE/storescu {su['median'] / bl['median']:.2f} (per round "
              f"{bl_rounds['median']:.2f} median, {bl_rounds['min']:.2f}-{bl_rounds['max']:.2f}); this build / it: "
              f"{bl['median'] / mv['median']:.2f} x the throughput", flush=True)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
