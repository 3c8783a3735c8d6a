#!/usr/bin/env python3
"""Draws the benchmark's PNGs from results.json (written by run_bench.py) only,
read through bench_schema.py.

  throughput-push.png, throughput-pull.png
      median throughput vs blob size per variant, one panel per socket
      buffer size (min-max as error bars, iperf3 as a dashed ceiling), like
      Figure 3 of the 1996 paper
  ratio.png
      median throughput of each variant / raw-c, per point (blob size or
      series), push and pull, default ("auto") socket buffers

Every series has one colour (bench_schema.SERIES_COLOURS) in every panel, and
the one legend lists every series drawn in any panel.

Needs matplotlib (Debian: python3-matplotlib).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True
from bench_schema import MiB, buffer_bytes, group_by_point, series_colour  # noqa: E402  (same directory)


def medians(results):
    """{(link, variant, direction, blob_bytes, count, buffer): (median, min, max)} in MB/s."""
    return {k: (statistics.median(v), min(v), max(v)) for k, v in group_by_point(results).items()}


def buffer_order(text):
    """Socket buffers in increasing size, "auto" (not set) last."""
    return buffer_bytes(text) or 1 << 62


def buffer_label(text):
    if text == "auto":
        return "auto (not set)"
    n = int(text)
    return "%d KiB" % (n >> 10) if n < MiB else "%d MiB" % (n >> 20)


def throughput_panel(ax, stats, link, direction, buf, variants):
    """One panel: a line per variant of `variants` measured at buffer `buf`
    (single blobs), in its fixed colour, and iperf3's ceiling. Returns
    {series name: Line2D} of what it drew."""
    lines = {}
    for variant in variants:
        pts = sorted((k[3], v) for k, v in stats.items()
                     if k[0] == link and k[1] == variant and k[2] == direction and k[4] == 1 and k[5] == buf)
        if not pts:
            continue
        xs = [p[0] / MiB for p in pts]
        med = [p[1][0] for p in pts]
        lo = [p[1][0] - p[1][1] for p in pts]
        hi = [p[1][2] - p[1][0] for p in pts]
        drawn = ax.errorbar(xs, med, yerr=[lo, hi], marker="o", markersize=4, capsize=2, label=variant,
                            color=series_colour(variant))
        lines[variant] = drawn.lines[0]  # the data line (the container holds the label)
        lines[variant].set_label(variant)
    ceiling = [v[0] for k, v in stats.items() if k[0] == link and k[1] == "iperf3" and k[2] == direction
               and k[5] == buf]
    if ceiling:
        lines["iperf3"] = ax.axhline(ceiling[0], linestyle="--", color=series_colour("iperf3"),
                                     label="iperf3 (ceiling)")
    ax.set_xscale("log", base=2)
    ax.set_title("socket buffer " + buffer_label(buf))
    ax.set_xlabel("blob size (MiB)")
    ax.grid(True, which="both", alpha=0.3)
    return lines


def legend_of_all(ax, panels):
    """One legend on `ax` for the series of every panel ({name: artist}
    each), each series once, in name order."""
    handles = {}
    for panel in panels:
        for name, artist in panel.items():
            handles.setdefault(name, artist)
    names = sorted(handles)
    ax.legend([handles[n] for n in names], [handles[n].get_label() for n in names], fontsize="small")


def throughput_figure(plt, stats, link, direction, path):
    """Writes `path`; returns [{series: Line2D} per panel] (empty: nothing to draw)."""
    buffers = sorted({k[5] for k in stats if k[0] == link and k[2] == direction}, key=buffer_order)
    variants = sorted({k[1] for k in stats if k[0] == link and k[2] == direction and k[1] != "iperf3"})
    if not buffers:
        return []
    fig, axes = plt.subplots(1, len(buffers), figsize=(max(6.5, 4.2 * len(buffers)), 4.4), sharey=True, squeeze=False)
    panels = [throughput_panel(ax, stats, link, direction, buf, variants) for ax, buf in zip(axes[0], buffers)]
    axes[0][0].set_ylabel("throughput (MB/s, median)")
    legend_of_all(axes[0][-1], panels)
    fig.suptitle("%s on %s: throughput vs blob size" % (direction, link))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return panels


def ratio_figure(plt, stats, link, path):
    """Writes `path` when there is a ratio to draw; returns [{series:
    BarContainer} per panel] (empty: nothing drawn)."""
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), sharey=True)
    panels = []
    for ax, direction in zip(axes, ("push", "pull")):
        bars = {}
        buf = "auto"
        points = sorted({(k[3], k[4]) for k in stats if k[0] == link and k[2] == direction and k[5] == buf
                         and k[1] != "iperf3"})
        variants = sorted({k[1] for k in stats if k[0] == link and k[2] == direction and k[1] not in
                           ("iperf3", "raw-c")})
        width = 0.8 / max(1, len(variants))
        for i, variant in enumerate(variants):
            xs, ys = [], []
            for j, (blob, count) in enumerate(points):
                raw = stats.get((link, "raw-c", direction, blob, count, buf))
                mine = stats.get((link, variant, direction, blob, count, buf))
                if raw and mine and raw[0] > 0:
                    xs.append(j + i * width)
                    ys.append(mine[0] / raw[0])
            if xs:
                bars[variant] = ax.bar(xs, ys, width=width, label=variant, color=series_colour(variant))
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(points))])
        ax.set_xticklabels(["%g MiB" % (b / MiB) if c == 1 else "%d×%g MiB" % (c, b / MiB) for b, c in points],
                           rotation=30)
        ax.set_title("%s, socket buffer auto" % direction)
        ax.grid(True, axis="y", alpha=0.3)
        panels.append(bars)
    drawn = any(panels)
    axes[0].set_ylabel("median throughput / raw-c median")
    if drawn:
        legend_of_all(axes[1], panels)
    fig.suptitle("ratio to raw-c on %s (same invocation)" % link)
    fig.tight_layout()
    if drawn:
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return panels if drawn else []


def pyplot():
    """matplotlib.pyplot on the Agg backend. Without matplotlib, runs this
    program again under the first of python3 (PATH) and /usr/bin/python3 that
    has it (make's $(PYTHON) may be another interpreter than the one Debian's
    python3-matplotlib serves); None when none has it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        pass
    tried = os.environ.get("BSBENCH_PLOT_TRIED", "").split(os.pathsep)
    for candidate in (shutil.which("python3"), "/usr/bin/python3"):
        if not candidate or not os.access(candidate, os.X_OK):
            continue
        real = os.path.realpath(candidate)
        if real == os.path.realpath(sys.executable) or real in tried:
            continue
        os.environ["BSBENCH_PLOT_TRIED"] = os.pathsep.join(tried + [os.path.realpath(sys.executable), real])
        if subprocess.run([candidate, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            os.execv(candidate, [candidate] + sys.argv)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="results.json written by run_bench.py")
    ap.add_argument("--out", default=".", help="directory for the PNGs")
    args = ap.parse_args()
    plt = pyplot()
    if plt is None:
        print("plot.py: matplotlib is not installed (Debian: apt-get install python3-matplotlib); no plots drawn",
              file=sys.stderr)
        return 2
    with open(args.results) as f:
        results = json.load(f)["results"]
    stats = medians(results)
    os.makedirs(args.out, exist_ok=True)
    written = []
    for link in sorted({k[0] for k in stats}):
        suffix = "" if link == "loopback" else "-" + link
        for direction in ("push", "pull"):
            path = os.path.join(args.out, "throughput-%s%s.png" % (direction, suffix))
            if throughput_figure(plt, stats, link, direction, path):
                written.append(path)
        path = os.path.join(args.out, "ratio%s.png" % suffix)
        if ratio_figure(plt, stats, link, path):
            written.append(path)
    for path in written:
        print("plot.py: wrote " + path, file=sys.stderr)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
