"""What the benchmark reports: per point the median/min/max and the ratios
to raw-c, iperf3, DCMTK, corba and raw-c-durable (summary.json), the same as
Markdown tables (summary.md), and the medians of the whole-program steps
(same-host pulls, blob against plain_pair). The issue's goals are in
bench_targets.py."""

import os
import platform
import statistics
import time

from bench_schema import group_by_point, size_text


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


def _paired_rows(records, group_field, side_field, reference, measured, ratio_field):
    """Per (group_field, blob_bytes) of records that time `measured` and
    `reference` (values of side_field): runs, the median seconds and MB/s of
    each (named after the side: tcp_median_s, local_MBps…) and ratio_field,
    the reference's median time / the measured one's (above 1: faster)."""
    groups = {}
    for rec in records:
        sides = groups.setdefault((rec[group_field], rec["blob_bytes"]), {reference: [], measured: []})
        sides[rec[side_field]].append(rec["seconds"])
    rows = []
    for (group, blob), times in sorted(groups.items(), key=lambda kv: (kv[0][0] != "push", kv[0])):
        if not times[reference] or not times[measured]:
            continue
        row = {group_field: group, "blob_bytes": blob, "runs": min(len(t) for t in times.values())}
        for side in (reference, measured):
            row[side + "_median_s"] = statistics.median(times[side])
            row[side + "_MBps"] = blob / row[side + "_median_s"] / 1e6
            row[side + "_seconds"] = list(times[side])  # every run, in order
            row[side + "_spread"] = max(times[side]) / min(times[side]) if min(times[side]) > 0 else None
        row[ratio_field] = row[reference + "_median_s"] / row[measured + "_median_s"]
        rows.append(row)
    return rows


def same_host_rows(records):
    """SAME_HOST_ROW per destination (bench_schema), from the step's records."""
    return _paired_rows(records, "destination", "mode", "tcp", "local", "ratio_to_tcp")


def cli_rows(records):
    """CLI_ROW per kind of store (FileStore first) and direction, push first
    (bench_schema), from the cli step's records (without "store": a
    FileStore's)."""
    rows = []
    for store in sorted({rec.get("store", "file") for rec in records}, key=lambda k: k != "file"):
        for row in _paired_rows([rec for rec in records if rec.get("store", "file") == store], "direction",
                                "program", "plain_pair", "blob", "ratio_to_plain_pair"):
            rows.append(dict(row, store=store))
    return rows


def _paired_table(title, rows, group_field, reference, measured, names, ratio_field):
    """Markdown of _paired_rows' rows; names: how the table calls
    (reference, measured)."""
    out = ["", title, "", "| %s | blob | runs | %s median s | %s median s | %s MB/s | %s MB/s | ×%s |" % (
        (group_field,) + names * 2 + names[:1]), "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| %s | %s | %d | %.3f | %.3f | %.1f | %.1f | %.2f |" % (
            r[group_field], size_text(r["blob_bytes"]), r["runs"], r[reference + "_median_s"],
            r[measured + "_median_s"], r[reference + "_MBps"], r[measured + "_MBps"], r[ratio_field]))
    return out


STORE_NAMES = {"file": "FileStore", "memory": "MemoryStore"}


def programs_markdown(same_host, cli, cli_rss):
    """The whole-program steps as tables (empty when neither ran)."""
    out = []
    if same_host:
        out += _paired_table("Same-host pulls against TCP (one FileStore Blob, alternately; file: `blob pull` from "
                             "fork to exit, memory: bsbench's timed run):", same_host, "destination", "tcp", "local",
                             ("TCP", "same-host"), "ratio_to_tcp")
    for store, server in (("file", "its file server (fdatasync)"), ("memory", "its --memory server (fresh "
                                                                            "malloc per push)")):
        rows = [r for r in cli if r.get("store", "file") == store]
        if rows:
            out += _paired_table("`blob push` / `blob pull --no-local` against plain_pair (plain C), whole processes "
                                 "(fork to exit), %s against %s:" % (STORE_NAMES[store], server), rows,
                                 "direction", "plain_pair", "blob", ("plain_pair", "blob"), "ratio_to_plain_pair")
            out += ["", "Every run (s), slowest / fastest:", ""]
            for r in rows:
                for side in ("plain_pair", "blob"):
                    out.append("- %s %s: %s; spread %.2f" % (
                        side, r["direction"], ", ".join("%.3f" % t for t in r[side + "_seconds"]),
                        r[side + "_spread"] or 0))
    if cli_rss:
        out += ["", "Peak RSS (VmHWM) of the cli step's blobstored (FileStore, fresh) after %d pushes and pulls of %s: "
                "%.1f MiB." % (cli_rss["rounds"], size_text(cli_rss["blob_bytes"]), cli_rss["peak_rss_kib"] / 1024)]
    return "\n".join(out) + "\n" if out else ""


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
