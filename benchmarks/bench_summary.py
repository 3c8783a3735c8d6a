"""What the benchmark reports: per point the median/min/max and the ratios
to raw-c, iperf3, DCMTK, corba and raw-c-durable (summary.json), the same as
Markdown tables (summary.md), and the issue's goals as measured."""

import os
import platform
import statistics
import time

from bench_schema import MiB, NO_VERIFY, group_by_point


def summarize(results):
    rows = []
    for key, values in sorted(group_by_point(results).items(),
                              key=lambda kv: (kv[0][0], kv[0][2], kv[0][5], kv[0][4], kv[0][3], kv[0][1])):
        link, name, direction, blob, count, buf = key
        rows.append({"link": link, "variant": name, "direction": direction, "blob_bytes": blob, "count": count,
                     "socket_buffer": buf, "runs": len(values), "median_MBps": statistics.median(values),
                     "min_MBps": min(values), "max_MBps": max(values)})
    index = {(r["link"], r["variant"], r["direction"], r["blob_bytes"], r["count"], r["socket_buffer"]): r
             for r in rows}

    def ratio(r, reference):
        return r["median_MBps"] / reference["median_MBps"] if reference and reference["median_MBps"] else None

    def same_point(r, variant):
        return index.get((r["link"], variant, r["direction"], r["blob_bytes"], r["count"], r["socket_buffer"]))

    for r in rows:
        r["ratio_to_raw_c"] = ratio(r, same_point(r, "raw-c"))
        r["ratio_to_iperf3"] = ratio(r, index.get((r["link"], "iperf3", r["direction"], 0, 0, r["socket_buffer"])))
        r["ratio_to_dcmtk_default"] = ratio(r, index.get((r["link"], "dcmtk/default", r["direction"],
                                                          r["blob_bytes"], r["count"], "auto")))
        r["ratio_to_corba"] = ratio(r, same_point(r, "corba"))
        r["ratio_to_raw_c_durable"] = ratio(r, same_point(r, "raw-c-durable"))  # push only
    return rows


def size_text(n):
    if n == 0:
        return "-"
    if n % MiB == 0:
        return "%d MiB" % (n // MiB)
    return "%g MiB" % (n / MiB)


# The ratio columns of the Markdown table: (header, ROW_FIELDS key).
RATIO_COLUMNS = [("×raw-c", "ratio_to_raw_c"), ("×raw-c-durable", "ratio_to_raw_c_durable"),
                 ("×corba", "ratio_to_corba"), ("×iperf3", "ratio_to_iperf3"),
                 ("×dcmtk", "ratio_to_dcmtk_default")]


def dcmtk_timing_note(results):
    """A line for under the table: what the DCMTK figures time (dcmtk_peer.send)."""
    timed = {rec.get("timed", "process") for rec in results if rec.get("variant") == "dcmtk"}
    if not timed:
        return ""
    if timed == {"association"}:
        return ("\nDCMTK rows (and ×dcmtk) time storescu's association, from its own log: connection, "
                "negotiation and every C-STORE, without process start-up.\n")
    return ("\nSome DCMTK runs (and their ×dcmtk) time the whole storescu process, start-up included "
            "(its log did not show the association).\n")


def markdown(rows, rss):
    out = ["| link | direction | buffer | blob | count | variant | runs | median MB/s | min | max | " +
           " | ".join(header for header, _ in RATIO_COLUMNS) + " |",
           "|---|---|---|---|---|---|---|---|---|---|" + "---|" * len(RATIO_COLUMNS)]
    for r in rows:
        fmt = lambda v: "%.2f" % v if v is not None else "-"  # noqa: E731
        out.append("| %s | %s | %s | %s | %s | %s | %d | %.1f | %.1f | %.1f | %s |" % (
            r["link"], r["direction"], r["socket_buffer"], size_text(r["blob_bytes"]), r["count"] or "-",
            r["variant"], r["runs"], r["median_MBps"], r["min_MBps"], r["max_MBps"],
            " | ".join(fmt(r.get(key)) for _, key in RATIO_COLUMNS)))
    if rss:
        out += ["", "| blobstored target | buffer | largest blob | peak RSS (VmHWM) |", "|---|---|---|---|"]
        for x in rss:
            out.append("| %s | %s | %s | %s |" % (x["target"], x["socket_buffer"], size_text(x["largest_blob_bytes"]),
                                                 "%.1f MiB" % (x["peak_rss_kib"] / 1024) if x["peak_rss_kib"] else "-"))
    return "\n".join(out) + "\n"


# The goals, reported (never asserted): (label, variant, direction,
# blob_bytes, count, ratio key, goal).
TARGETS = [
    ("push 32 MiB, MemoryStore", "blobstreaming/memory", "push", 32 * MiB, 1, "ratio_to_raw_c", 0.95),
    ("pull 32 MiB, MemoryStore", "blobstreaming/memory", "pull", 32 * MiB, 1, "ratio_to_raw_c", 0.95),
    ("push 32 MiB, FileStore", "blobstreaming/file", "push", 32 * MiB, 1, "ratio_to_raw_c", 0.95),
    ("push 32 MiB, FileStore vs the same durability promise", "blobstreaming/file", "push", 32 * MiB, 1,
     "ratio_to_raw_c_durable", 0.95),
    ("pull 32 MiB, FileStore (sendfile)", "blobstreaming/file", "pull", 32 * MiB, 1, "ratio_to_raw_c", 1.0),
    ("pull 32 MiB, FileStore (sendfile), library's SHA-256 check off", "blobstreaming/file" + NO_VERIFY, "pull",
     32 * MiB, 1, "ratio_to_raw_c", 1.0),
    ("push 200 x 0.5 MiB, MemoryStore", "blobstreaming/memory", "push", MiB // 2, 200, "ratio_to_raw_c", 0.8),
    ("pull 200 x 0.5 MiB, MemoryStore", "blobstreaming/memory", "pull", MiB // 2, 200, "ratio_to_raw_c", 0.8),
    ("push 200 x 0.5 MiB, FileStore", "blobstreaming/file", "push", MiB // 2, 200, "ratio_to_raw_c", 0.8),
    ("push 200 x 0.5 MiB, FileStore vs the same durability promise", "blobstreaming/file", "push", MiB // 2, 200,
     "ratio_to_raw_c_durable", 0.8),
    ("push 200 x 0.5 MiB, MemoryStore vs DCMTK out of the box", "blobstreaming/memory", "push", MiB // 2, 200,
     "ratio_to_dcmtk_default", 20.0),
    ("push 200 x 0.5 MiB, FileStore vs DCMTK out of the box", "blobstreaming/file", "push", MiB // 2, 200,
     "ratio_to_dcmtk_default", 20.0),
    ("push 32 MiB, MemoryStore vs iperf3 (delayed links)", "blobstreaming/memory", "push", 32 * MiB, 1,
     "ratio_to_iperf3", 0.9),
    ("pull 32 MiB, MemoryStore vs iperf3 (delayed links)", "blobstreaming/memory", "pull", 32 * MiB, 1,
     "ratio_to_iperf3", 0.9),
]


def targets(rows, rss):
    """Markdown: each goal of the issue at default ("auto") buffers, as measured."""
    out = ["| goal | link | measured | goal | met |", "|---|---|---|---|---|"]
    for label, variant, direction, blob, count, key, goal in TARGETS:
        for r in rows:
            if (r["variant"], r["direction"], r["blob_bytes"], r["count"], r["socket_buffer"]) != \
                    (variant, direction, blob, count, "auto"):
                continue
            if key == "ratio_to_iperf3" and "rtt" not in r["link"]:
                continue
            if r.get(key) is None:
                continue
            out.append("| %s | %s | %.3f × %s | ≥ %g | %s |" % (
                label, r["link"], r[key], key[len("ratio_to_"):].replace("_", "-"), goal,
                "yes" if r[key] >= goal else "**no**"))
    for x in rss:
        if x["target"] == "file" and x["socket_buffer"] == "auto" and x["peak_rss_kib"]:
            mib = x["peak_rss_kib"] / 1024
            out.append("| blobstored (FileStore) peak RSS, largest blob %s | - | %.1f MiB | ≤ 64 MiB for 256 MiB | %s |" % (
                size_text(x["largest_blob_bytes"]), mib,
                ("yes" if mib <= 64 else "**no**") if x["largest_blob_bytes"] >= 256 * MiB else "not measured (no 256 MiB blob)"))
    return "\n".join(out) + "\n"


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"hostname": platform.node(), "kernel": platform.release(), "cpu": cpu, "cpus": os.cpu_count(),
            "python": platform.python_version(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
