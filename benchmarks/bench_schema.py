"""The schema of the benchmark's JSON, shared by its writer (run_bench.py and
its modules) and its readers (plot.py): field names, units, and how records
group into the points of a table or a plot.

results.json  {"machine": MACHINE, "config": {...}, "results": [RECORD, ...]}
  RECORD: one run, shaped like iperf3 -J (start, intervals, end.sum_sent,
  end.sum_received.bits_per_second, end.sha256_verified) plus the fields of
  RECORD_FIELDS; a blobstreaming record also has "verify" (false: pulled
  with bsbench --no-verify).
summary.json  {"machine": ..., "summary": [ROW, ...], "blobstored_peak_rss": [RSS, ...], "failures": [...]}
  ROW: POINT_FIELDS + ROW_FIELDS; RSS: RSS_FIELDS.
"""

MiB = 1 << 20

# Variant suffix: pulls with the client library's SHA-256 check off
# (bsbench --no-verify), to compare the transfer path alone with raw-c.
NO_VERIFY = "-noverify"

# Fields every record adds to iperf3's: which variant moved what, how.
RECORD_FIELDS = ("variant", "target", "direction", "blob_bytes", "count", "socket_buffer", "link", "run")
# A point of the summary: records with equal values of these are one group.
POINT_FIELDS = ("link", "variant", "direction", "blob_bytes", "count", "socket_buffer")
# Per point: number of runs, throughput in MB/s (10^6 bytes per second),
# ratios of medians (None when the reference was not measured at that point:
# raw-c-durable and DCMTK push only). Fields are only ever added here, never
# renamed, so that older readers of summary.json keep working.
ROW_FIELDS = ("runs", "median_MBps", "min_MBps", "max_MBps", "ratio_to_raw_c", "ratio_to_iperf3",
              "ratio_to_dcmtk_default", "ratio_to_corba", "ratio_to_raw_c_durable")
# Peak resident set size (VmHWM, KiB) of each blobstored after its points.
RSS_FIELDS = ("target", "socket_buffer", "largest_blob_bytes", "peak_rss_kib")


# One colour per series (series_name), the same in every panel of every
# plot, so that one legend is right for all of them.
SERIES_COLOURS = {
    "raw-c": "#1f77b4",
    "raw-c-durable": "#17becf",
    "ace": "#ff7f0e",
    "corba": "#2ca02c",
    "blobstreaming/memory": "#d62728",
    "blobstreaming/memory" + NO_VERIFY: "#ff9896",
    "blobstreaming/file": "#9467bd",
    "blobstreaming/file" + NO_VERIFY: "#c5b0d5",
    "dcmtk/default": "#8c564b",
    "dcmtk/tuned": "#e377c2",
    "iperf3": "#7f7f7f",
}
OTHER_COLOUR = "#000000"  # a series this table does not know yet


def series_colour(name):
    """The fixed colour of a series (SERIES_COLOURS), black when unknown."""
    return SERIES_COLOURS.get(name, OTHER_COLOUR)


def buffer_bytes(text):
    """A socket buffer as given (--buffers) or recorded: '64K' -> 65536,
    '65536' -> 65536, 'auto' (the kernel's default, not set) -> 0."""
    if text == "auto":
        return 0
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def series_name(rec):
    """The variant of a record as tables and plots name it: blobstreaming
    and dcmtk with their target (blobstreaming/file, dcmtk/tuned…)."""
    if rec["variant"] in ("blobstreaming", "dcmtk"):
        return rec["variant"] + "/" + rec["target"] + ("" if rec.get("verify", True) else NO_VERIFY)
    return rec["variant"]


def megabytes_per_second(rec):
    """Throughput of one record in MB/s (received bytes)."""
    return rec["end"]["sum_received"]["bits_per_second"] / 8e6


def group_by_point(results):
    """{(link, series_name, direction, blob_bytes, count, str(socket_buffer)): [MB/s, ...]}."""
    groups = {}
    for rec in results:
        key = (rec["link"], series_name(rec), rec["direction"], rec["blob_bytes"], rec["count"],
               str(rec["socket_buffer"]))
        groups.setdefault(key, []).append(megabytes_per_second(rec))
    return groups
