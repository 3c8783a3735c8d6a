#!/usr/bin/env python3
"""The goals table (bench_targets.py) and the steps' medians
(bench_summary.py) on made-up summaries: every goal of the issue has a row,
measured ones with their value, goal and met yes/no, the others "not
measured" with the reason (a step left out, a variant not run, a netns link
skipped or not part of the run); the corba goal has one row per Blob
Streaming store, direction and single-blob point of 1 MiB or more; a quick
run's smaller sizes are named. No network, no programs run but
bench_targets.py itself."""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.dont_write_bytecode = True
import bench_summary  # noqa: E402
import bench_targets  # noqa: E402
from bench_schema import MiB, TARGET_FIELDS  # noqa: E402

FAILURES = []
GiB = 1 << 30


def check(ok, message):
    if not ok:
        FAILURES.append(message)
        print("FAIL " + message, file=sys.stderr)


def point(variant, direction, blob, count=1, buffer="auto", link="loopback", **ratios):
    row = {"link": link, "variant": variant, "direction": direction, "blob_bytes": blob, "count": count,
           "socket_buffer": buffer, "runs": 20, "median_MBps": 1000.0, "min_MBps": 900.0, "max_MBps": 1100.0}
    for key in ("raw_c", "iperf3", "dcmtk_default", "corba", "raw_c_durable", "memcpy"):
        row["ratio_to_" + key] = ratios.get(key)
    if "rounds" in ratios:
        row["ratio_to_raw_c_rounds"] = ratios["rounds"]
    return row


def loopback_summary():
    """Measured: the 32 MiB points, the series except the FileStore push,
    corba at 1 and 32 MiB (and at 0.5 MiB and 64K buffers, which do not
    count), the same-host step to a file at 32 MiB; the cli step skipped."""
    rows = [point("blobstreaming/memory", "push", 32 * MiB, raw_c=0.95, corba=1.2, iperf3=0.5, memcpy=0.1,
                  rounds={"median": 0.96, "min": 0.8, "max": 1.1, "rounds": 20}),
            point("blobstreaming/memory", "pull", 32 * MiB, raw_c=0.85, corba=0.8),
            point("blobstreaming/file", "pull", 32 * MiB, raw_c=0.91, corba=1.0),
            point("blobstreaming/file", "push", 32 * MiB, raw_c=0.2, raw_c_durable=0.5, corba=0.3),
            point("blobstreaming/memory", "push", MiB // 2, 200, raw_c=0.8, dcmtk_default=30.0),
            point("blobstreaming/memory", "pull", MiB // 2, 200, raw_c=0.79),
            point("blobstreaming/memory", "push", MiB, corba=1.5),
            point("blobstreaming/memory", "push", MiB // 2, corba=0.1),
            point("blobstreaming/file", "pull", 32 * MiB, buffer="65536", raw_c=0.1, corba=0.1),
            point("blobstreaming/file-noverify", "pull", 32 * MiB, raw_c=1.1),
            dict(point("iperf3", "push", 0, 0), median_MBps=2000.0, runs=3),
            dict(point("memcpy", "push", 32 * MiB), median_MBps=10000.0),
            dict(point("memcpy", "push", MiB), median_MBps=9000.0)]
    same_host = bench_summary.same_host_rows(
        [{"destination": "file", "mode": mode, "blob_bytes": 32 * MiB, "run": run, "seconds": seconds,
          "link": "loopback"}
         for run in (1, 2, 3) for mode, seconds in (("tcp", 0.3 + run / 100), ("local", 0.2 + run / 100))])
    return {"link": "loopback", "summary": rows, "same_host_pull": same_host, "cli": [], "cli_peak_rss": None,
            "config": {"variants": ["raw-c", "raw-c-durable", "corba", "blobstreaming-memory", "blobstreaming-file"],
                       "skipped": None, "skipped_steps": {"cli": "not run (--steps)"}}}


def delayed_summary(skipped=None):
    rows = [] if skipped else [point("blobstreaming/memory", "push", 32 * MiB, link="tun-1gbit-rtt20ms", iperf3=0.97),
                               point("blobstreaming/memory", "pull", 32 * MiB, link="tun-1gbit-rtt20ms", iperf3=0.9)]
    return {"link": "tun-1gbit-rtt20ms", "summary": rows, "same_host_pull": [], "cli": [], "cli_peak_rss": None,
            "config": {"variants": None, "skipped": skipped, "skipped_steps": {}}}


def cli_summary():
    """The cli step alone, at 1 GiB: FileStore (records of before the store
    field) blob push 0.9 x, pull 0.5 x plain_pair; MemoryStore push 0.6 s
    steady against plain_pair's 0.5 s to 3.5 s (median 1.0 s), pull 1.0 x."""
    records = [{"program": program, "direction": direction, "blob_bytes": GiB, "run": run, "seconds": seconds,
                "link": "loopback"}
               for run in range(1, 11)
               for program, direction, seconds in (("plain_pair", "push", 2.7), ("blob", "push", 3.0),
                                                   ("plain_pair", "pull", 1.0), ("blob", "pull", 2.0 + run / 100))]
    plain_memory = [0.5, 3.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 0.9]
    records += [{"program": program, "direction": direction, "blob_bytes": GiB, "run": run, "seconds": seconds,
                 "link": "loopback", "store": "memory"}
                for run in range(1, 11)
                for program, direction, seconds in (("plain_pair", "push", plain_memory[run - 1]),
                                                    ("blob", "push", 0.6 if run > 1 else 0.66),
                                                    ("plain_pair", "pull", 0.4), ("blob", "pull", 0.4))]
    return {"link": "loopback", "summary": [], "same_host_pull": [], "cli": bench_summary.cli_rows(records),
            "cli_peak_rss": {"target": "file", "blob_bytes": GiB, "rounds": 11, "peak_rss_kib": 80 * 1024},
            "config": {"variants": [], "skipped": None,
                       "skipped_steps": {"points": "not run (--steps)", "same-host": "not run (--steps)"}}}


def by_target(targets):
    return {t["target"]: t for t in targets}


def main():
    targets = bench_targets.evaluate([loopback_summary()])
    t = by_target(targets)
    check(all(set(x) == set(TARGET_FIELDS) for x in targets), "a target row without the fields of TARGET_FIELDS")
    for label, value, met in (("push 32 MiB, MemoryStore", 0.95, True), ("pull 32 MiB, MemoryStore", 0.85, False),
                              ("pull 32 MiB, FileStore", 0.91, True), ("push 32 MiB, FileStore", 0.5, False),
                              ("push 200 × 0.5 MiB series, MemoryStore", 0.8, True),
                              ("pull 200 × 0.5 MiB series, MemoryStore", 0.79, False)):
        check(t[label]["measured"] == value and t[label]["met"] is met and t[label]["runs"] == 20,
              "%s: expected %s, met %s: %s" % (label, value, met, t[label]))
    one = t["push 1 MiB, MemoryStore"]
    check(one["goal"] == 0.95 and one["not_measured"] == "raw-c not measured at the point of blobstreaming/memory "
          "push 1 MiB", "every point of 1 MiB or more has a raw-c row, 0.95 for MemoryStore: %s" % one)
    check(t["pull 32 MiB, FileStore"]["goal"] == 0.9, "the FileStore pull's goal: 0.9 x raw-c")
    check(t["push 32 MiB, MemoryStore"]["per_round"]["max"] == 1.1 and t["push 32 MiB, MemoryStore"]["MBps"] == 1000,
          "a point row carries its rounds' spread and MB/s: %s" % t["push 32 MiB, MemoryStore"])
    series = t["push 200 × 0.5 MiB series, FileStore"]
    check(series["met"] is None and "no blobstreaming/file push 0.5 MiB × 200" in series["not_measured"],
          "the missing FileStore series must say which row is missing: %s" % series)
    corba = [x for x in targets if x["target"].startswith("any point ≥ 1 MiB")]
    check([(x["target"], x["measured"]) for x in corba] ==
          [("any point ≥ 1 MiB: push 1 MiB, MemoryStore", 1.5),
           ("any point ≥ 1 MiB: push 32 MiB, MemoryStore", 1.2),
           ("any point ≥ 1 MiB: pull 32 MiB, MemoryStore", 0.8), ("any point ≥ 1 MiB: pull 32 MiB, FileStore", 1.0)],
          "corba rows: memory push and pull, file pull (a durable FileStore push is not compared), one per point "
          "of at least 1 MiB at auto buffers: %s" % corba)
    check([x["met"] for x in corba] == [True, True, False, True], "corba rows: met %s" % corba)
    to_file, to_memory = t["same-host pull of 256 MiB, to a file"], t["same-host pull of 256 MiB, to memory"]
    check(abs(to_file["measured"] - 0.32 / 0.22) < 1e-9 and to_file["met"] and to_file["runs"] == 3 and
          to_file["note"] == "at 32 MiB, not 256 MiB", "same-host to a file: TCP 0.32 s / 0.22 s: %s" % to_file)
    check(to_memory["met"] is None and to_memory["not_measured"] == "the same-host step failed (see failures)",
          "same-host to memory, not in the records: %s" % to_memory)
    for label in ("blobstored peak RSS, 1 GiB FileStore push and pull",
                  "`blob push` of 1 GiB, whole process, FileStore", "`blob pull` of 1 GiB, whole process, FileStore",
                  "`blob push` of 1 GiB, whole process, MemoryStore", "`blob pull` of 1 GiB, whole process, MemoryStore",
                  "push of 1 GiB into a MemoryStore (vs a receiver keeping it in fresh memory)"):
        check(t[label]["not_measured"] == "the cli step not run (--steps)", "%s: the skipped step's reason: %s" % (
            label, t[label]))
    for label in ("1 Gbit/s + 20 ms RTT, push 32 MiB, MemoryStore", "1 Gbit/s + 20 ms RTT, pull 32 MiB, MemoryStore"):
        check("not part of this invocation" in (t[label]["not_measured"] or ""), "%s: %s" % (label, t[label]))

    text = bench_targets.markdown(targets, bench_targets.informative([loopback_summary()]),
                                  bench_targets.ceilings([loopback_summary()]))
    goal_rows = [line for line in text.split("\n\n")[0].splitlines()[2:]]
    for label in ("store events, 100 watchers: p50 from commit to line",
                  "store events, 100 watchers: p99 from commit to line"):
        check("no bench_events.py run with 100 subscribers" in (t[label]["not_measured"] or ""), "%s: %s" % (
            label, t[label]))
    check(len(goal_rows) == len(targets) == 4 + 4 + 4 + 3 + 2 + 2 + 1 + 4 + 1 + 2, "%d goal rows, %d targets: %s" % (
        len(goal_rows), len(targets), text))
    check("| push 32 MiB, MemoryStore | loopback | 0.950 × raw-c (20 runs); per round 0.80–1.10 | ≥ 0.95 × raw-c | "
          "yes | 1000 MB/s, 0.50 × iperf3, 0.10 × memcpy |" in text, "a row with its spread and ceilings:\n" + text)
    check("| iperf3 push (one TCP stream) | loopback | 2000.0 (3 runs) |" in text and
          "| memcpy 32 MiB, one copy in memory | loopback | 10000.0 (20 runs) |" in text,
          "the ceilings, memcpy at its largest point:\n" + text)
    check(all(x["target"] in text for x in targets), "a target missing from the Markdown table")
    check("| push 32 MiB, FileStore | loopback | 0.500 × raw-c-durable (20 runs) | ≥ 0.9 × raw-c-durable | **no** |"
          in text, "the Markdown row of a missed goal:\n" + text)
    check("yes (at 32 MiB, not 256 MiB)" in text, "a quick run's size must be named:\n" + text)
    check("| pull 32 MiB, FileStore, the library's check off | loopback | 1.100 × raw-c (20 runs) |" in text,
          "the informative rows:\n" + text)

    skipped = by_target(bench_targets.evaluate([loopback_summary(), delayed_summary("needs root")]))
    check(skipped["1 Gbit/s + 20 ms RTT, push 32 MiB, MemoryStore"]["not_measured"] ==
          "link tun-1gbit-rtt20ms skipped: needs root", "a skipped link: %s" % skipped)
    joined = bench_targets.evaluate([loopback_summary(), delayed_summary(), cli_summary()])
    j = by_target(joined)
    check(j["1 Gbit/s + 20 ms RTT, push 32 MiB, MemoryStore"]["met"] is True and
          j["1 Gbit/s + 20 ms RTT, pull 32 MiB, MemoryStore"]["met"] is False, "the delayed link's rows: %s" % joined)
    rss = j["blobstored peak RSS, 1 GiB FileStore push and pull"]
    check(rss["measured"] == 80 and rss["met"] is False and rss["note"] == "", "RSS 80 MiB at 1 GiB: %s" % rss)
    push, pull = j["`blob push` of 1 GiB, whole process, FileStore"], j["`blob pull` of 1 GiB, whole process, FileStore"]
    check(abs(push["measured"] - 0.9) < 1e-9 and push["met"] and push["runs"] == 10, "cli push 2.7/3.0: %s" % push)
    check(abs(pull["measured"] - 1.0 / 2.055) < 1e-9 and not pull["met"], "cli pull 1.0/2.055 (median): %s" % pull)
    check(push["note"] == "spread (slowest / fastest run): blob 1.00, plain_pair 1.00", "cli push spread: %s" % push)
    memory = j["push of 1 GiB into a MemoryStore (vs a receiver keeping it in fresh memory)"]
    check(abs(memory["measured"] - 1.0 / 0.6) < 1e-9 and memory["met"] and
          memory["note"] == "spread (slowest / fastest run): blob 1.10, plain_pair 7.00; ours the steadier",
          "the MemoryStore push against fresh memory: %s" % memory)
    check(j["`blob pull` of 1 GiB, whole process, MemoryStore"]["measured"] == 1.0, "MemoryStore pull: %s" % joined)
    events = {"kind": "events", "link": "loopback", "samples": 100,
              "results": [{"subscribers": 1, "p50_ms": 1.0, "p99_ms": 2.0, "deliveries": 100},
                          {"subscribers": 100, "p50_ms": 4.5, "p99_ms": 25.0, "deliveries": 10000}]}
    e = by_target(bench_targets.evaluate([loopback_summary(), events]))
    p50, p99 = (e["store events, 100 watchers: %s from commit to line" % p] for p in ("p50", "p99"))
    check(p50["measured"] == 4.5 and p50["met"] and p50["unit"] == "ms" and p50["runs"] == 10000,
          "events p50: %s" % p50)
    check(p99["measured"] == 25.0 and p99["met"] is False, "events p99: %s" % p99)
    check(e["push 32 MiB, MemoryStore"]["met"] is True, "an events summary does not hide the loopback run")
    check("| store events, 100 watchers: p99 from commit to line | loopback | 25.00 ms (10000 deliveries) | ≤ 20 ms "
          "| **no** |" in bench_targets.markdown(list(e.values())), "the events row in Markdown")
    check(j["push 32 MiB, MemoryStore"]["met"] is True, "the last loopback summary with the row is used")

    with tempfile.TemporaryDirectory(prefix="test_targets.") as tmp:
        dirs = []
        for name, doc in (("loopback", loopback_summary()), ("netns", delayed_summary("needs root"))):
            os.makedirs(os.path.join(tmp, name))
            with open(os.path.join(tmp, name, "summary.json"), "w") as f:
                json.dump(doc, f)
            dirs.append(os.path.join(tmp, name))
        r = subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "bench_targets.py")] + dirs +
                           ["--out", tmp], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and "link tun-1gbit-rtt20ms skipped: needs root" in r.stdout,
              "bench_targets.py: exit %d: %s%s" % (r.returncode, r.stdout, r.stderr))
        with open(os.path.join(tmp, "targets.json")) as f:
            check(len(json.load(f)["targets"]) == len(targets), "targets.json: one object per goal row")
        r = subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "bench_targets.py"),
                            os.path.join(tmp, "nowhere")], capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and "nowhere/summary.json" in r.stderr, "a missing summary.json: exit %d: %s" % (
            r.returncode, r.stderr))

    if FAILURES:
        return 1
    print("ok: %d goal rows, measured or not measured with the reason" % len(targets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
