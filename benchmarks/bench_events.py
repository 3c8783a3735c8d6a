#!/usr/bin/env python3
"""Commit -> subscriber notified (`make bench-events`): how long after a
store commits a Blob its `blob watch` subscribers print the event.

Starts omniNames, `blobstored --store memory:64M` and, for each count of
--subscribers, that many `blob watch --json` processes (each a subscriber
of its own, as separate workstations would be). Then `--samples` times, one
at a time: `blob push` of a 1 KiB Blob, and the wait until every watcher has
printed its `committed` event. A sample's latency is the moment this script
sees the watcher's line (time.time_ns(), same host and clock) less the
event's `time_ns` (when the store's commit returned): it includes the
watcher's write to its pipe and this script's wake-up (the moment select()
returned with the pipe readable, taken once for all pipes ready then), an
upper bound of the delivery. The daemon runs with the caps per client
address raised (the watchers stand for separate workstations but share
127.0.0.1). Pushes are sequential so that latencies measure delivery, not a
queue of commits.

Prints and writes --out/summary.json: per subscriber count, the median
(p50), p90, p99 and max in milliseconds over every (sample, watcher) pair,
and the CPU time the daemon and the watchers together spent per commit
(/proc/PID/stat, user + system): with two cores shared by the daemon and 100
watchers, that CPU bounds the latency of the last watcher. Then the goals
(bench_targets.EVENT_TARGETS: with 100 subscribers p50 <= 5 ms and
p99 <= 20 ms) as rows of the goals table, in summary.json's "targets" and
printed; `bench_targets.py` joins them with the other runs'. Reported, never
asserted: exit 0 unless a watcher missed an event or a process failed."""

import argparse
import json
import os
import selectors
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import harness  # noqa: E402
import bench_targets  # noqa: E402


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def start_watchers(c, count):
    watchers = []
    for i in range(count):
        err = open(c.path(f"watch-{count}-{i}.err"), "wb")
        watchers.append(c.spawn(f"watch {i}", [harness.program("clients/blob"), "--naming", c.naming, "watch",
                                               "--json", "--events", "committed", "--store", "events"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err))
        err.close()
        watchers[-1].log_paths.append(err.name)
    for w in watchers:
        harness.wait_for(lambda w=w: "blob watch: watching" in open(w.log_paths[0]).read() or not w.running(), 60,
                         f"{w.name}'s subscription")
        if not w.running():
            raise harness.TestFailure(f"{w.name} exited: {open(w.log_paths[0]).read()}")
    return watchers


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (0 when it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(c, watchers, samples, blob_file):
    sel = selectors.DefaultSelector()
    buffers = {}
    for w in watchers:
        os.set_blocking(w.popen.stdout.fileno(), False)
        sel.register(w.popen.stdout, selectors.EVENT_READ, w)
        buffers[w] = b""
    latencies = []
    push_err = c.path("push.err")
    for n in range(samples):
        name = f"EV.{len(watchers)}.{n}"
        # The watchers are read while the push's process still ends: its
        # exit is no part of the delivery (waiting for it first put it in
        # every sample).
        with open(push_err, "wb") as err:
            push = subprocess.Popen([harness.program("clients/blob"), "--naming", c.naming, "--store", "events", "-q",
                                     "push", "--name", name, blob_file], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err, env=c.env)
        waiting = set(watchers)
        deadline = time.monotonic() + 30
        while waiting:
            if push.poll():
                raise harness.TestFailure(f"blob push {name} exited {push.returncode}: {open(push_err).read()}")
            if time.monotonic() > deadline:
                raise harness.TestFailure(f"{len(waiting)} watchers did not print {name} within 30 s")
            ready = sel.select(timeout=1)
            # Every line read below was in its pipe when select() returned:
            # that moment bounds each one, not the later one at which this
            # loop gets to it after parsing the others.
            now = time.time_ns()
            for key, _ in ready:
                w = key.data
                buffers[w] += key.fileobj.read() or b""
                *lines, buffers[w] = buffers[w].split(b"\n")
                for line in lines:
                    event = json.loads(line)
                    if event["name"] == name:
                        latencies.append((now - event["time_ns"]) / 1e6)
                        waiting.discard(w)
        if push.wait(timeout=60) != 0:
            raise harness.TestFailure(f"blob push {name} exited {push.returncode}: {open(push_err).read()}")
    sel.close()
    return latencies


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build tree (blobstore/blobstored, clients/blob)")
    ap.add_argument("--out", required=True, help="directory for summary.json")
    ap.add_argument("--subscribers", default="1,100", help="subscriber counts, comma-separated (default 1,100)")
    ap.add_argument("--samples", type=int, default=100, help="commits per count (default 100)")
    args = ap.parse_args()
    counts = [int(x) for x in args.subscribers.split(",")]
    os.environ["BS_BUILDDIR"] = os.path.abspath(args.build)
    os.makedirs(args.out, exist_ok=True)
    c = harness.Cluster("bench-events")
    summary = {"kind": bench_targets.EVENTS_KIND, "link": bench_targets.LOOPBACK, "samples": args.samples,
               "results": []}
    try:
        c.start_naming()
        # The watchers stand for separate workstations: one address here, so
        # the caps per client address are raised to let 100 of them in.
        most = str(max(counts) + 16)
        daemon = c.start_daemon("events", "memory:64M", extra=["--max-client-subscriptions", most,
                                                      "--max-control-connections-per-peer", most])
        blob_file = c.path("blob")
        with open(blob_file, "wb") as f:
            f.write(os.urandom(1024))
        for count in counts:
            watchers = start_watchers(c, count)
            before = (cpu_seconds(daemon.pid), sum(cpu_seconds(w.pid) for w in watchers))
            lat = measure(c, watchers, args.samples, blob_file)
            after = (cpu_seconds(daemon.pid), sum(cpu_seconds(w.pid) for w in watchers))
            row = {"subscribers": count, "median_ms": statistics.median(lat), "p50_ms": percentile(lat, 50),
                   "p90_ms": percentile(lat, 90), "p99_ms": percentile(lat, 99), "max_ms": max(lat),
                   "deliveries": len(lat),
                   "daemon_cpu_ms_per_commit": (after[0] - before[0]) * 1000 / args.samples,
                   "watchers_cpu_ms_per_commit": (after[1] - before[1]) * 1000 / args.samples}
            summary["results"].append(row)
            print(f"{count:4d} subscribers: commit -> notified p50 {row['p50_ms']:.2f} ms, "
                  f"p90 {row['p90_ms']:.2f} ms, p99 {row['p99_ms']:.2f} ms, max {row['max_ms']:.2f} ms "
                  f"({len(lat)} deliveries); CPU per commit: daemon {row['daemon_cpu_ms_per_commit']:.2f} ms, "
                  f"watchers {row['watchers_cpu_ms_per_commit']:.2f} ms", flush=True)
            for w in watchers:
                w.stop()
    finally:
        c.close()
    summary["targets"] = bench_targets.events_targets([summary])
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print("\nGoals (reported, not asserted):\n\n" + bench_targets.markdown(summary["targets"]), flush=True)


if __name__ == "__main__":
    main()
