"""What the benchmark reports: per point the median/min/max and the ratios
to raw-c, iperf3, DCMTK, corba and raw-c-durable (summary.json), the same as
Markdown tables (summary.md), and the medians of the whole-program steps
(same-host pulls, blob against plain_pair). The issue's goals are in
bench_targets.py."""

import os
import platform
import statistics
import time

from bench_schema import group_by_point, megabytes_per_second, size_text


# The references a row's ratios are taken to: (field suffix, variant, whether
# it is measured at the same blob size or, iperf3, per direction only).
REFERENCES = [("raw_c", "raw-c", True), ("iperf3", "iperf3", False), ("dcmtk_default", "dcmtk/default", True),
              ("corba", "corba", True), ("raw_c_durable", "raw-c-durable", True), ("memcpy", "memcpy", True)]
# Paired (interleaved) references: the ratio of each round's runs too.
PAIRED = ("raw_c", "corba", "raw_c_durable", "memcpy")


def _cpu_per_gb(records):
    """CPU seconds per GB (10^9 bytes) moved, summed over `records`: the
    client's (bsbench's own getrusage, every thread) and, where the runs
    were interleaved, its server's (/proc/PID/stat), user and system."""
    moved = sum(rec["end"]["sum_received"]["bytes"] for rec in records)
    if not moved:
        return {}
    out = {}
    client = [rec for rec in records if "cpu_utilization_percent" in rec.get("end", {})]
    if client and client[0]["variant"] not in ("iperf3", "dcmtk"):
        for field, key in (("user", "host_user"), ("system", "host_system")):
            seconds = sum(rec["end"]["cpu_utilization_percent"][key] / 100 * rec["end"]["sum_received"]["seconds"]
                          for rec in client)
            out["client_cpu_%s_s_per_GB" % field] = seconds / moved * 1e9
    served = [rec for rec in records if "server_cpu" in rec]
    if served and len(served) == len(records):
        out["server_cpu_s_per_GB"] = sum(rec["server_cpu"]["seconds"] for rec in served) / moved * 1e9
        for field in ("user", "system"):
            out["server_cpu_%s_s_per_GB" % field] = sum(rec["server_cpu"][field + "_seconds"] for rec in served) / \
                moved * 1e9
    return out


def summarize(results):
    records = group_by_point(results, values=False)
    rows = []
    for key, recs in sorted(records.items(),
                            key=lambda kv: (kv[0][0], kv[0][2], kv[0][5], kv[0][4], kv[0][3], kv[0][1])):
        link, name, direction, blob, count, buf = key
        values = [megabytes_per_second(rec) for rec in recs]
        row = {"link": link, "variant": name, "direction": direction, "blob_bytes": blob, "count": count,
               "socket_buffer": buf, "runs": len(values), "median_MBps": statistics.median(values),
               "min_MBps": min(values), "max_MBps": max(values),
               "interleaved": bool(recs) and all("order" in rec for rec in recs)}
        row.update(_cpu_per_gb(recs))
        rows.append(row)
    index = {(r["link"], r["variant"], r["direction"], r["blob_bytes"], r["count"], r["socket_buffer"]): r
             for r in rows}

    def ratio(r, reference):
        return r["median_MBps"] / reference["median_MBps"] if reference and reference["median_MBps"] else None

    def reference_key(r, variant, same_size):
        if variant == "dcmtk/default":
            return r["link"], variant, r["direction"], r["blob_bytes"], r["count"], "auto"
        if not same_size:
            return r["link"], variant, r["direction"], 0, 0, r["socket_buffer"]
        return r["link"], variant, r["direction"], r["blob_bytes"], r["count"], r["socket_buffer"]

    for r in rows:
        key = (r["link"], r["variant"], r["direction"], r["blob_bytes"], r["count"], r["socket_buffer"])
        for suffix, variant, same_size in REFERENCES:
            ref_key = reference_key(r, variant, same_size)
            r["ratio_to_" + suffix] = ratio(r, index.get(ref_key))  # raw-c-durable, dcmtk: push only
            if suffix in PAIRED and r["ratio_to_" + suffix] is not None and r["interleaved"]:
                ours = {rec["run"]: megabytes_per_second(rec) for rec in records[key]}
                theirs = {rec["run"]: megabytes_per_second(rec) for rec in records[ref_key] if "order" in rec}
                per_round = [ours[run] / theirs[run] for run in ours if theirs.get(run)]
                if per_round:
                    r["ratio_to_%s_rounds" % suffix] = {"median": statistics.median(per_round),
                                                        "min": min(per_round), "max": max(per_round),
                                                        "rounds": len(per_round)}
    return rows


# The ratio columns of the Markdown table: (header, ROW_FIELDS key).
RATIO_COLUMNS = [("×raw-c", "ratio_to_raw_c"), ("×raw-c-durable", "ratio_to_raw_c_durable"),
                 ("×corba", "ratio_to_corba"), ("×iperf3", "ratio_to_iperf3"),
                 ("×dcmtk", "ratio_to_dcmtk_default"), ("×memcpy", "ratio_to_memcpy")]
# The CPU columns: seconds per GB moved (bench_summary._cpu_per_gb).
CPU_COLUMNS = [("client user", "client_cpu_user_s_per_GB"), ("client sys", "client_cpu_system_s_per_GB"),
               ("server", "server_cpu_s_per_GB"), ("server user", "server_cpu_user_s_per_GB"),
               ("server sys", "server_cpu_system_s_per_GB")]


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
    cpu = [r for r in rows if any(key in r for _, key in CPU_COLUMNS)]
    if cpu:
        out += ["", "Where the CPU goes: seconds per GB moved (client: bsbench's getrusage, every thread; server: "
                "the bsbench server's or blobstored's threads' run time during the interleaved runs, "
                "/proc/PID/task/*/schedstat; its user/sys split from /proc/PID/stat in 10 ms ticks, rough for short runs):", "",
                "| direction | buffer | blob | count | variant | " + " | ".join(h for h, _ in CPU_COLUMNS) + " |",
                "|---|---|---|---|---|" + "---|" * len(CPU_COLUMNS)]
        for r in cpu:
            out.append("| %s | %s | %s | %s | %s | %s |" % (
                r["direction"], r["socket_buffer"], size_text(r["blob_bytes"]), r["count"] or "-", r["variant"],
                " | ".join("%.3f" % r[key] if key in r else "-" for _, key in CPU_COLUMNS)))
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
