#!/usr/bin/env python3
"""The performance issue's goals as measured: one row per goal (TARGET,
bench_schema), with the measured value, the goal and whether it is met, or
"not measured" and why. Reported, never asserted.

run_bench.py writes them for its own invocation (summary.json "targets",
summary.md); `make bench` then joins the invocations of every link:

  bench_targets.py DIR... [--out DIR]   reads DIR/summary.json of each, prints
                                        the table, writes targets.md and
                                        targets.json into --out

Goals (loopback, default socket buffers, medians, verification on):
  push and pull, MemoryStore, every single-blob point of 1 MiB or more   >= 0.95 x raw-c (a row each)
  pull, FileStore, every single-blob point of 1 MiB or more              >= 0.9 x raw-c (a row each)
  push 32 MiB, FileStore                        >= 0.9 x raw-c-durable
  200 x 0.5 MiB series, MemoryStore, push, pull >= 0.8 x raw-c
  200 x 0.5 MiB series, FileStore push          >= 0.8 x raw-c-durable
  every single-blob point of 1 MiB or more      Blob Streaming >= corba (a row each: memory push and pull,
                                                file pull; a durable FileStore push is not compared)
  one 0.5 MiB Blob, memory push and pull, file pull   >= 1.0 x corba (one round trip: named requests)
  same-host pull of 256 MiB, to a file and to memory   >= 1.0 x TCP pull of the same Blob
  1 Gbit/s + 20 ms RTT link (tun-1gbit-rtt20ms), 32 MiB, MemoryStore, push and pull  >= 0.95 x iperf3
  blobstored peak RSS after 1 GiB FileStore pushes and pulls   <= 64 MiB
  blob push / blob pull of 1 GiB, whole process >= 0.9 x plain_pair (plain C), FileStore and MemoryStore
                                                (a row each, with each side's spread: slowest / fastest run)
  1 GiB push into a MemoryStore                 >= 0.9 x plain_pair keeping it in fresh memory (--memory),
                                                with both spreads; reused memory should make ours the steadier
  store events, 100 `blob watch` subscribers    p50 <= 5 ms, p99 <= 20 ms from commit to line
                                                (bench_events.py's summary.json: `make bench-events`)
"""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
from bench_schema import MiB, NO_VERIFY, size_text  # noqa: E402

LOOPBACK = "loopback"
DELAYED = "tun-1gbit-rtt20ms"  # bench_link.namespaces_label("1gbit", 20)
STORES = {"blobstreaming/memory": "MemoryStore", "blobstreaming/file": "FileStore"}
SERIES = (MiB // 2, 200)

# Against raw-c at every single-blob point of at least 1 MiB (32 MiB when
# none was measured): (series, direction, goal).
RAW_C_TARGETS = [("blobstreaming/memory", "push", 0.95), ("blobstreaming/memory", "pull", 0.95),
                 ("blobstreaming/file", "pull", 0.9)]
# (label, link, series, direction, (blob_bytes, count), reference, goal);
# the ratio is the summary row's ratio_to_<reference>.
POINT_TARGETS = [
    ("push 32 MiB, FileStore", LOOPBACK, "blobstreaming/file", "push", (32 * MiB, 1), "raw-c-durable", 0.9),
    ("push 200 × 0.5 MiB series, MemoryStore", LOOPBACK, "blobstreaming/memory", "push", SERIES, "raw-c", 0.8),
    ("pull 200 × 0.5 MiB series, MemoryStore", LOOPBACK, "blobstreaming/memory", "pull", SERIES, "raw-c", 0.8),
    ("push 200 × 0.5 MiB series, FileStore", LOOPBACK, "blobstreaming/file", "push", SERIES, "raw-c-durable", 0.8),
]
CORBA_GOAL = 1.0  # every single-blob point of at least 1 MiB, each Blob Streaming store and direction
# One small Blob at the cost of one round trip (a pooled connection names the
# Blob, no control call): corba moves it in one call. A FileStore push is
# durable (fsync'ed), corba's is not: not compared here.
SMALL_TARGETS = [
    ("one 0.5 MiB Blob, push, MemoryStore", LOOPBACK, "blobstreaming/memory", "push", (MiB // 2, 1), "corba", 1.0),
    ("one 0.5 MiB Blob, pull, MemoryStore", LOOPBACK, "blobstreaming/memory", "pull", (MiB // 2, 1), "corba", 1.0),
    ("one 0.5 MiB Blob, pull, FileStore", LOOPBACK, "blobstreaming/file", "pull", (MiB // 2, 1), "corba", 1.0),
]
DELAYED_TARGETS = [
    ("1 Gbit/s + 20 ms RTT, push 32 MiB, MemoryStore", DELAYED, "blobstreaming/memory", "push", (32 * MiB, 1),
     "iperf3", 0.95),
    ("1 Gbit/s + 20 ms RTT, pull 32 MiB, MemoryStore", DELAYED, "blobstreaming/memory", "pull", (32 * MiB, 1),
     "iperf3", 0.95),
]
SAME_HOST_SIZE, SAME_HOST_GOAL = 256 * MiB, 1.0
CLI_SIZE, CLI_GOAL = 1 << 30, 0.9
CLI_STORES = (("file", "FileStore"), ("memory", "MemoryStore"))
MEMORY_PUSH_GOAL = 0.9
RSS_GOAL_MIB = 64
# bench_events.py's summary.json is marked with this "kind"; its goals:
# (label, subscribers, the result's field, goal in ms).
EVENTS_KIND = "events"
EVENT_SUBSCRIBERS = 100
EVENT_TARGETS = [("store events, %d watchers: p50 from commit to line" % EVENT_SUBSCRIBERS, "p50_ms", 5.0),
                 ("store events, %d watchers: p99 from commit to line" % EVENT_SUBSCRIBERS, "p99_ms", 20.0)]
# Figures shown under the goals, without one: (label, series, direction, point, reference).
INFORMATIVE = [
    ("push 32 MiB, FileStore", "blobstreaming/file", "push", (32 * MiB, 1), "raw-c"),
    ("pull 32 MiB, FileStore, the library's check off", "blobstreaming/file" + NO_VERIFY, "pull", (32 * MiB, 1),
     "raw-c"),
    ("push 200 × 0.5 MiB series, MemoryStore", "blobstreaming/memory", "push", SERIES, "dcmtk-default"),
    ("push 200 × 0.5 MiB series, FileStore", "blobstreaming/file", "push", SERIES, "dcmtk-default"),
]


def ratio_key(reference):
    return "ratio_to_" + reference.replace("-", "_")


def row(label, link, reference, comparison, goal, unit=None):
    return {"target": label, "link": link, "measured": None, "unit": unit or "× " + reference,
            "comparison": comparison, "goal": goal, "runs": None, "met": None, "note": "", "not_measured": None,
            "per_round": None, "MBps": None, "ratio_to_iperf3": None, "ratio_to_memcpy": None}


def measured(r, value, runs, size=None, goal_size=None):
    """Fills row `r` with a measured value; a size other than the goal's
    (a quick run) is named in its note."""
    r.update(measured=value, runs=runs, met=value >= r["goal"] if r["comparison"] == ">=" else value <= r["goal"])
    if size is not None and size != goal_size:
        r["note"] = "at %s, not %s" % (size_text(size), size_text(goal_size))
    return r


def not_measured(r, why):
    r["not_measured"] = why
    return r


def lookup(docs, link, pick, why_not):
    """(pick(summary), None) from the newest summary of an invocation on
    `link` where pick finds something (not None), else (None, why): no such
    invocation, the link skipped, or why_not(the newest summary)."""
    runs = [doc for doc in reversed(docs) if doc.get("link") == link]
    if not runs:
        if link == LOOPBACK:
            return None, "no loopback run among the results read"
        return None, "link %s is not part of this invocation (`make bench` runs it in network namespaces, as root)" % (
            link)
    built = [doc for doc in runs if not doc.get("config", {}).get("skipped")]
    if not built:
        return None, "link %s skipped: %s" % (link, runs[0]["config"]["skipped"])
    for doc in built:
        found = pick(doc)
        if found is not None:
            return found, None
    return None, why_not(built[0])


def why_no_point(doc, series, what):
    config = doc.get("config", {})
    step = config.get("skipped_steps", {}).get("points")
    if step:
        return "the points " + step
    variant = series.replace("/", "-")
    if config.get("variants") is not None and variant not in config["variants"]:
        return "variant %s not run (--variants)" % variant
    return "no %s at default buffers in this run (--sizes, --buffers, --no-series, or it failed)" % what


def summary_row(doc, link, series, direction, blob, count):
    for s in doc.get("summary", []):
        if (s["link"], s["variant"], s["direction"], s["blob_bytes"], s["count"], str(s["socket_buffer"])) == \
                (link, series, direction, blob, count, "auto"):
            return s
    return None


def point_target(docs, label, link, series, direction, point, reference, goal):
    r = row(label, link, reference, ">=", goal)
    blob, count = point
    what = "%s %s %s%s" % (series, direction, size_text(blob), " × %d" % count if count > 1 else "")
    found, why = lookup(docs, link, lambda doc: summary_row(doc, link, series, direction, blob, count),
                        lambda doc: why_no_point(doc, series, what))
    if found is None:
        return not_measured(r, why)
    if found.get(ratio_key(reference)) is None:
        return not_measured(r, "%s not measured at the point of %s" % (reference, what))
    # How far from the physical limits (iperf3: one TCP stream; memcpy: one
    # copy in memory), and the spread of the interleaved rounds' ratios.
    r.update(per_round=found.get(ratio_key(reference) + "_rounds"), MBps=found.get("median_MBps"),
             ratio_to_iperf3=found.get("ratio_to_iperf3"), ratio_to_memcpy=found.get("ratio_to_memcpy"))
    return measured(r, found[ratio_key(reference)], found["runs"])


def single_points(docs, wanted):
    """[(blob_bytes, series, direction)] of the single-blob points of at
    least 1 MiB (loopback, default buffers) of the newest loopback summary
    that has any whose (series, direction) is in `wanted`; (None, why) when none."""
    def pick(doc):
        return sorted({(s["blob_bytes"], s["variant"], s["direction"]) for s in doc.get("summary", [])
                       if s["link"] == LOOPBACK and (s["variant"], s["direction"]) in wanted and s["count"] == 1
                       and s["blob_bytes"] >= MiB and str(s["socket_buffer"]) == "auto"},
                      key=lambda p: (p[0], p[2] != "push", p[1] != "blobstreaming/memory")) or None

    return lookup(docs, LOOPBACK, pick,
                  lambda doc: why_no_point(doc, "blobstreaming/memory", "single blob of 1 MiB or more"))


def raw_c_targets(docs):
    """One row per single-blob point of at least 1 MiB and RAW_C_TARGETS
    entry; the rows of 32 MiB (not measured, and why) when there is none."""
    goals = {(series, direction): goal for series, direction, goal in RAW_C_TARGETS}
    points, _ = single_points(docs, set(goals))
    points = points or [(32 * MiB, series, direction) for series, direction, _ in RAW_C_TARGETS]
    return [point_target(docs, "%s %s, %s" % (direction, size_text(blob), STORES[series]), LOOPBACK, series,
                         direction, (blob, 1), "raw-c", goals[(series, direction)])
            for blob, series, direction in points]


def corba_targets(docs):
    """One row per Blob Streaming store, direction and single-blob point of
    at least 1 MiB (default buffers, loopback): memory push and pull, file
    pull, as the issue names them. A FileStore push is durable (fsync'ed),
    corba's is not: it is held against raw-c-durable instead."""
    compared = {(series, d) for series in STORES for d in ("push", "pull")} - {("blobstreaming/file", "push")}
    points, why = single_points(docs, compared)
    if not points:
        return [not_measured(row("any point ≥ 1 MiB: Blob Streaming vs corba", LOOPBACK, "corba", ">=",
                                 CORBA_GOAL), why)]
    return [point_target(docs, "any point ≥ 1 MiB: %s %s, %s" % (direction, size_text(blob), STORES[series]),
                         LOOPBACK, series, direction, (blob, 1), "corba", CORBA_GOAL)
            for blob, series, direction in points]


def ceilings(docs):
    """(label, link, MB/s, runs) of the physical ceilings each invocation
    measured beside the goals, default buffers: iperf3 (one TCP stream, no
    transactions) per direction, and memcpy (one copy in memory) at its
    largest single-blob point."""
    out = []
    for doc in docs:
        rows = [s for s in doc.get("summary", []) if str(s["socket_buffer"]) == "auto"]
        for s in rows:
            if s["variant"] == "iperf3":
                out.append(("iperf3 %s (one TCP stream)" % s["direction"], s["link"], s["median_MBps"], s["runs"]))
        copies = [s for s in rows if s["variant"] == "memcpy" and s["count"] == 1]
        for direction in ("push", "pull"):
            biggest = [s for s in copies if s["direction"] == direction]
            if biggest:
                s = max(biggest, key=lambda x: x["blob_bytes"])
                out.append(("memcpy %s, one copy in memory" % size_text(s["blob_bytes"]), s["link"],
                            s["median_MBps"], s["runs"]))
    return out


def why_no_step(step):
    return lambda doc: "the %s step %s" % (step, doc.get("config", {}).get("skipped_steps", {}).get(step) or
                                           "failed (see failures)")


def step_row(docs, step, key, field, value):
    """(the row of summary[key] whose `field` is `value`, None) or (None, why) (lookup)."""
    return lookup(docs, LOOPBACK, lambda doc: next((x for x in doc.get(key, []) if x[field] == value), None),
                  why_no_step(step))


def same_host_targets(docs):
    out = []
    for destination in ("file", "memory"):
        r = row("same-host pull of %s, to %s" % (size_text(SAME_HOST_SIZE), "a file" if destination == "file"
                                                 else "memory"), LOOPBACK, "TCP", ">=", SAME_HOST_GOAL)
        found, why = step_row(docs, "same-host", "same_host_pull", "destination", destination)
        out.append(measured(r, found["ratio_to_tcp"], found["runs"], found["blob_bytes"], SAME_HOST_SIZE)
                   if found else not_measured(r, why))
    return out


def rss_target(docs):
    r = row("blobstored peak RSS, %s FileStore push and pull" % size_text(CLI_SIZE), LOOPBACK, None, "<=",
            RSS_GOAL_MIB, unit="MiB")
    rss, why = lookup(docs, LOOPBACK, lambda doc: doc["cli_peak_rss"] if (doc.get("cli_peak_rss") or {}).get(
        "peak_rss_kib") else None, why_no_step("cli"))
    return measured(r, rss["peak_rss_kib"] / 1024, rss["rounds"], rss["blob_bytes"], CLI_SIZE) if rss else \
        not_measured(r, why)


def spread_note(found):
    return "spread (slowest / fastest run): blob %.2f, plain_pair %.2f" % (found.get("blob_spread") or 0,
                                                                          found.get("plain_pair_spread") or 0)


def cli_row(docs, store, direction):
    """(the cli step's summary row of `store` and `direction`, None) or (None, why)."""
    return lookup(docs, LOOPBACK, lambda doc: next((x for x in doc.get("cli", []) if x.get("store", "file") == store
                                                    and x["direction"] == direction), None),
                  lambda doc: "the cli step %s" % (doc.get("config", {}).get("skipped_steps", {}).get("cli") or
                                                   "has no %s %s (failed, or an older run)" % (store, direction)))


def cli_targets(docs):
    out = []
    for store, name in CLI_STORES:
        for direction in ("push", "pull"):
            r = row("`blob %s` of %s, whole process, %s" % (direction, size_text(CLI_SIZE), name), LOOPBACK,
                    "plain_pair", ">=", CLI_GOAL)
            found, why = cli_row(docs, store, direction)
            if not found:
                out.append(not_measured(r, why))
                continue
            measured(r, found["ratio_to_plain_pair"], found["runs"], found["blob_bytes"], CLI_SIZE)
            r["note"] = "; ".join(x for x in (r["note"], spread_note(found)) if x)
            out.append(r)
    return out


def memory_push_target(docs):
    """A 1 GiB push into a MemoryStore against plain_pair keeping the bytes
    in fresh memory: the cli step's MemoryStore push, both spreads noted."""
    r = row("push of %s into a MemoryStore (vs a receiver keeping it in fresh memory)" % size_text(CLI_SIZE),
            LOOPBACK, "plain_pair --memory", ">=", MEMORY_PUSH_GOAL)
    found, why = cli_row(docs, "memory", "push")
    if not found:
        return not_measured(r, why)
    measured(r, found["ratio_to_plain_pair"], found["runs"], found["blob_bytes"], CLI_SIZE)
    steadier = (found.get("blob_spread") or 0) <= (found.get("plain_pair_spread") or 0)
    r["note"] = "; ".join(x for x in (r["note"], spread_note(found),
                                      "ours the steadier" if steadier else "ours NOT the steadier") if x)
    return r


def events_targets(docs):
    """The EVENT_TARGETS rows from the newest bench_events.py summary among
    `docs` with a result for EVENT_SUBSCRIBERS subscribers."""
    out = []
    found = None
    for doc in reversed(docs):
        if doc.get("kind") == EVENTS_KIND:
            found = next((r for r in doc.get("results", []) if r["subscribers"] == EVENT_SUBSCRIBERS), None)
            if found:
                break
    for label, field, goal in EVENT_TARGETS:
        r = row(label, LOOPBACK, None, "<=", goal, unit="ms")
        if found is None or found.get(field) is None:
            out.append(not_measured(r, "no bench_events.py run with %d subscribers among the results read "
                                       "(`make bench-events`)" % EVENT_SUBSCRIBERS))
        else:
            out.append(measured(r, found[field], found["deliveries"]))
    return out


def evaluate(docs):
    """[TARGET] of the issue from the summaries (summary.json objects) of one
    or more invocations, in the order of the issue's table."""
    events = [doc for doc in docs if doc.get("kind") == EVENTS_KIND]
    docs = [doc for doc in docs if doc.get("kind") != EVENTS_KIND]
    return (raw_c_targets(docs) + [point_target(docs, *t) for t in POINT_TARGETS] + corba_targets(docs) +
            [point_target(docs, *t) for t in SMALL_TARGETS] + same_host_targets(docs) +
            [point_target(docs, *t) for t in DELAYED_TARGETS] + [rss_target(docs)] + cli_targets(docs) +
            [memory_push_target(docs)] +
            events_targets(events))


def informative(docs):
    """(label, link, ratio, reference, runs) of the INFORMATIVE figures measured."""
    out = []
    for doc in docs:
        for label, series, direction, (blob, count), reference in INFORMATIVE:
            for s in doc.get("summary", []):
                if ((s["variant"], s["direction"], s["blob_bytes"], s["count"], str(s["socket_buffer"])) ==
                        (series, direction, blob, count, "auto") and s.get(ratio_key(reference)) is not None):
                    out.append((label, s["link"], s[ratio_key(reference)], reference, s["runs"]))
    return out


def _limits(t):
    """The MB/s and ceilings column of a measured point row."""
    if t["MBps"] is None:
        return ""
    parts = ["%.0f MB/s" % t["MBps"]]
    for key, name in (("ratio_to_iperf3", "iperf3"), ("ratio_to_memcpy", "memcpy")):
        if t[key] is not None:
            parts.append("%.2f × %s" % (t[key], name))
    return ", ".join(parts)


def markdown(targets, extra=(), limits=()):
    out = ["| goal | link | measured | goal | met | MB/s, × ceilings |", "|---|---|---|---|---|---|"]
    for t in targets:
        sign = "≥" if t["comparison"] == ">=" else "≤"
        goal = "%s %g %s" % (sign, t["goal"], t["unit"])
        if t["not_measured"]:
            out.append("| %s | %s | not measured: %s | %s | - | |" % (t["target"], t["link"], t["not_measured"],
                                                                      goal))
            continue
        if t["unit"].startswith("×"):
            value = "%.3f %s (%d runs)" % (t["measured"], t["unit"], t["runs"])
            if t.get("per_round"):
                value += "; per round %.2f–%.2f" % (t["per_round"]["min"], t["per_round"]["max"])
        elif t["unit"] == "ms":
            value = "%.2f ms (%d deliveries)" % (t["measured"], t["runs"])
        else:
            value = "%.1f %s (after %d pushes and pulls)" % (t["measured"], t["unit"], t["runs"])
        met = "yes" if t["met"] else "**no**"
        out.append("| %s | %s | %s | %s | %s%s | %s |" % (
            t["target"], t["link"], value, goal, met, " (%s)" % t["note"] if t["note"] else "", _limits(t)))
    if limits:
        out += ["", "Ceilings, measured in the same invocation (default buffers):", "",
                "| ceiling | link | median MB/s |", "|---|---|---|"]
        out += ["| %s | %s | %.1f (%d runs) |" % x for x in limits]
    if extra:
        out += ["", "Other figures, no goal (default buffers):", "", "| figure | link | measured |", "|---|---|---|"]
        out += ["| %s | %s | %.3f × %s (%d runs) |" % x for x in extra]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", help="directories with a summary.json (run_bench.py --out)")
    ap.add_argument("--out", help="write targets.md and targets.json here")
    args = ap.parse_args()
    docs = []
    for d in args.dirs:
        path = os.path.join(d, "summary.json")
        try:
            with open(path) as f:
                docs.append(json.load(f))
        except (OSError, ValueError) as e:
            print("bench_targets.py: %s: %s" % (path, e), file=sys.stderr)
            return 2
    targets = evaluate(docs)
    text = markdown(targets, informative(docs), ceilings(docs))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "targets.md"), "w") as f:
            f.write(text)
        with open(os.path.join(args.out, "targets.json"), "w") as f:
            json.dump({"sources": args.dirs, "targets": targets}, f, indent=1)
    print("Goals of the issue (loopback and the 1 Gbit/s + 20 ms link; reported, not asserted):\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
