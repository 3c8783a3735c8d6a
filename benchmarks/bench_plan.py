"""What the benchmark runs: the plans (blob sizes, series, socket buffers,
runs per point, the whole-program steps), the variants and the points of a
plan."""

from bench_schema import NO_VERIFY, MiB, buffer_bytes


def _plan(sizes, buffers, runs, iperf3_runs, iperf3_seconds, dcmtk_runs, same_host=None, cli=None):
    """same_host, cli: (blob bytes, runs) of the whole-program steps
    (bench_cli.py), None when the plan has none."""
    return {"sizes": sizes, "series": [(MiB // 2, 200)], "buffers": buffers, "runs": runs,
            "iperf3_runs": iperf3_runs, "iperf3_seconds": iperf3_seconds, "dcmtk_runs": dcmtk_runs,
            "same-host": same_host, "cli": cli}


PLANS = {
    # 10 runs per point (the medians the goals ask for). No 8K buffers: omniORB
    # moves 1.5 MB/s through them (a 256 MiB point took 30 minutes per
    # direction); `--buffers 8K,...` still measures them.
    "full": _plan([MiB // 2, MiB, 8 * MiB, 16 * MiB, 32 * MiB, 256 * MiB], ["64K", "256K", "4M", "auto"],
                  runs=10, iperf3_runs=3, iperf3_seconds=2, dcmtk_runs=10, same_host=(256 * MiB, 10),
                  cli=(1 << 30, 10)),
    # CI: the whole-program steps small, so that they add well under a minute.
    "quick": _plan([MiB // 2, 32 * MiB], ["auto", "64K"], runs=3, iperf3_runs=1, iperf3_seconds=1, dcmtk_runs=1,
                   same_host=(32 * MiB, 3), cli=(64 * MiB, 3)),
    # Links between namespaces are slower (155 Mbit/s) or delayed (20 ms
    # RTT): fewer points, so that `make bench` stays within about an hour.
    # The whole-program steps are loopback only.
    "net": _plan([MiB // 2, 32 * MiB], ["256K", "auto"], runs=3, iperf3_runs=3, iperf3_seconds=3, dcmtk_runs=1),
}
SOCKET_VARIANTS = ["raw-c", "raw-c-durable", "ace", "corba"]
# raw-c-durable (raw-c whose receiver fdatasync()s a file per blob before its
# Ack, the promise of a FileStore push) and DCMTK run at push points only.
PUSH_ONLY = ("raw-c-durable", "dcmtk")
STORE_TARGETS = ["memory", "file"]
VARIANTS = SOCKET_VARIANTS + ["blobstreaming-" + t + s for t in STORE_TARGETS for s in ("", NO_VERIFY)] + \
    ["iperf3", "memcpy", "dcmtk"]
# The ceilings: iperf3 (one TCP stream, no transactions) and memcpy (one
# copy in memory, no socket: bsbench --variant memcpy) at every point.
DEFAULT_VARIANTS = ["raw-c", "raw-c-durable", "ace", "corba", "blobstreaming-memory", "blobstreaming-file",
                    "blobstreaming-file" + NO_VERIFY, "iperf3", "memcpy", "dcmtk"]


def make_plan(name, runs=None, sizes=None, buffers=None, no_series=False, step_sizes=None):
    """The plan `name` with the command line's overrides applied;
    step_sizes: {step: (bytes or None, runs or None)} for the whole-program
    steps (None: the plan's)."""
    plan = dict(PLANS[name])
    for step, (size, step_runs) in (step_sizes or {}).items():
        default = plan[step] or PLANS["full"][step]
        plan[step] = (size or default[0], step_runs or default[1]) if plan[step] or size or step_runs else None
    if runs:
        plan["runs"] = runs
        plan["dcmtk_runs"] = min(plan["dcmtk_runs"], runs)
    if sizes:
        plan["sizes"] = [buffer_bytes(s) for s in sizes.split(",")]
    if buffers:
        plan["buffers"] = buffers.split(",")
    if no_series:
        plan["series"] = []
    return plan


def directions_of(variant, directions):
    """The directions of `directions` that `variant` runs (PUSH_ONLY)."""
    return [d for d in directions if d == "push" or variant not in PUSH_ONLY]


# A point of small Blobs gets more runs: enough to move MIN_POINT_BYTES,
# at most MAX_POINT_RUNS. One run of 1 MiB lasts about a millisecond,
# shorter than a scheduler's time slice on a shared VM: 7 of them measured
# 0.32 and 0.77 x raw-c at the same point in two runs of the suite.
MIN_POINT_BYTES = 256 * MiB
MAX_POINT_RUNS = 50


def point_runs(plan, size, count):
    """Runs of the point (size, count): the plan's, or more for small Blobs."""
    wanted = -(-MIN_POINT_BYTES // (size * count))
    return max(plan["runs"], min(MAX_POINT_RUNS, wanted))


def points(plan):
    """(blob size, count) of every point: single blobs, then the series."""
    return [(size, 1) for size in plan["sizes"]] + list(plan["series"])
