"""The schema of the benchmark's JSON, shared by its writer (run_bench.py and
its modules) and its readers (plot.py): field names, units, and how records
group into the points of a table or a plot.

results.json  {"machine": MACHINE, "config": {...}, "results": [RECORD, ...]}
  RECORD: one run, shaped like iperf3 -J (start, intervals, end.sum_sent,
  end.sum_received.bits_per_second, end.sha256_verified) plus the fields of
  RECORD_FIELDS; a blobstreaming record also has "verify" (false: pulled
  with bsbench --no-verify).
  Besides "results" (which plot.py reads), the whole-program steps
  (bench_cli.py), loopback only: "same_host_pull": [SAME_HOST, ...],
  "cli": [CLI, ...], "cli_peak_rss": CLI_RSS or null.
summary.json  {"machine": ..., "link": LABEL, "config": {...}, "summary": [ROW, ...],
               "blobstored_peak_rss": [RSS, ...], "same_host_pull": [SAME_HOST_ROW, ...],
               "cli": [CLI_ROW, ...], "cli_peak_rss": CLI_RSS or null, "targets": [TARGET, ...],
               "failures": [...]}
  ROW: POINT_FIELDS + ROW_FIELDS; RSS: RSS_FIELDS; the others: the fields
  named so below. "config" holds what the targets need to say why a row was
  not measured: "variants", "plan", "skipped" (the link could not be built),
  "skipped_steps" ({step: why}).
"""

MiB = 1 << 20

# Variant suffix: pulls with the client library's SHA-256 check off
# (bsbench --no-verify), to compare the transfer path alone with raw-c.
NO_VERIFY = "-noverify"

# Fields every record adds to iperf3's: which variant moved what, how.
# An interleaved run (bench_paced.py) also has "order" (its place in its
# round), "client" (the driver's label of its bsbench client) and
# "server_cpu" {seconds, user_seconds, system_seconds}.
RECORD_FIELDS = ("variant", "target", "direction", "blob_bytes", "count", "socket_buffer", "link", "run")
# A point of the summary: records with equal values of these are one group.
POINT_FIELDS = ("link", "variant", "direction", "blob_bytes", "count", "socket_buffer")
# Per point: number of runs, throughput in MB/s (10^6 bytes per second),
# ratios of medians (None when the reference was not measured at that point:
# raw-c-durable and DCMTK push only). Fields are only ever added here, never
# renamed, so that older readers of summary.json keep working.
# interleaved: the point's runs alternated with the other variants'
# (bench_paced.py); then ratio_to_X_rounds {median, min, max, rounds}: the
# ratio of each round's two runs (X: raw_c, corba, raw_c_durable, memcpy).
# The CPU per GB moved: client_cpu_{user,system}_s_per_GB and, for
# interleaved runs, server_cpu_s_per_GB and server_cpu_{user,system}_s_per_GB.
ROW_FIELDS = ("runs", "median_MBps", "min_MBps", "max_MBps", "ratio_to_raw_c", "ratio_to_iperf3",
              "ratio_to_dcmtk_default", "ratio_to_corba", "ratio_to_raw_c_durable", "ratio_to_memcpy", "interleaved")
# Peak resident set size (VmHWM, KiB) of each blobstored after its points.
RSS_FIELDS = ("target", "socket_buffer", "largest_blob_bytes", "peak_rss_kib")

# The steps of a run: the points above, and the whole-program steps of
# bench_cli.py (127.0.0.1 only).
STEPS = ("points", "same-host", "cli")
# One pull of the same-host step: destination "file" (`blob pull`, seconds
# from fork to exit; also the library's transfer_seconds and the client's
# cpu_seconds) or "memory" (bsbench's timed run); mode "tcp" or "local".
SAME_HOST_FIELDS = ("destination", "mode", "blob_bytes", "run", "seconds", "link")
# Per destination: medians, MB/s, and ratio_to_tcp = TCP's median time / the
# same-host path's (above 1: the same-host path is faster).
SAME_HOST_ROW_FIELDS = ("destination", "blob_bytes", "runs", "tcp_median_s", "local_median_s", "tcp_MBps",
                        "local_MBps", "ratio_to_tcp")
# One whole process of the cli step: program "blob" or "plain_pair",
# seconds from fork to exit, store "file" or "memory" (the kind of store
# and of plain_pair server; older records without it: "file").
CLI_FIELDS = ("program", "direction", "blob_bytes", "run", "seconds", "link", "store")
# Per kind of store and direction: medians, MB/s, ratio_to_plain_pair =
# plain_pair's median time / blob's (1: as fast as the plain pair), every
# run's seconds of each program and its spread (slowest / fastest).
CLI_ROW_FIELDS = ("store", "direction", "blob_bytes", "runs", "blob_median_s", "plain_pair_median_s", "blob_MBps",
                  "plain_pair_MBps", "ratio_to_plain_pair", "blob_seconds", "plain_pair_seconds", "blob_spread",
                  "plain_pair_spread")
# VmHWM of the cli step's blobstored (fresh, FileStore) after `rounds`
# pushes and pulls of blob_bytes (one round untimed).
CLI_RSS_FIELDS = ("target", "blob_bytes", "rounds", "peak_rss_kib")
# One goal of the issue as measured (bench_targets.py): measured is a ratio
# (unit "× REFERENCE") or MiB; met is None when not measured (not_measured
# says why); note names a size other than the goal's (a quick run). A point
# row also has per_round (ratio_to_X_rounds of the summary: the spread of
# the interleaved rounds' ratios, or None), MBps (its median) and its
# ratio_to_iperf3 and ratio_to_memcpy (how far from the ceilings).
TARGET_FIELDS = ("target", "link", "measured", "unit", "comparison", "goal", "runs", "met", "note",
                 "not_measured", "per_round", "MBps", "ratio_to_iperf3", "ratio_to_memcpy")


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
    "memcpy": "#bcbd22",
}
OTHER_COLOUR = "#000000"  # a series this table does not know yet


def series_colour(name):
    """The fixed colour of a series (SERIES_COLOURS), black when unknown."""
    return SERIES_COLOURS.get(name, OTHER_COLOUR)


def size_text(n):
    """Bytes as a table shows them: 32 MiB, 0.5 MiB, 1 GiB; 0 as "-"."""
    if n == 0:
        return "-"
    if n >= 1 << 30 and n % (1 << 30) == 0:
        return "%d GiB" % (n >> 30)
    if n % MiB == 0:
        return "%d MiB" % (n // MiB)
    return "%g MiB" % (n / MiB)


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


def group_by_point(results, values=True):
    """{(link, series_name, direction, blob_bytes, count, str(socket_buffer)): [MB/s, ...]}
    (values=False: [record, ...])."""
    groups = {}
    for rec in results:
        key = (rec["link"], series_name(rec), rec["direction"], rec["blob_bytes"], rec["count"],
               str(rec["socket_buffer"]))
        groups.setdefault(key, []).append(megabytes_per_second(rec) if values else rec)
    return groups
