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

Needs matplotlib (Debian: python3-matplotlib).
"""

import argparse
import json
import os
import statistics
import sys

sys.dont_write_bytecode = True
from bench_schema import MiB, buffer_bytes, group_by_point  # noqa: E402  (same directory)


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


def throughput_figure(plt, stats, link, direction, path):
    buffers = sorted({k[5] for k in stats if k[0] == link and k[2] == direction}, key=buffer_order)
    variants = sorted({k[1] for k in stats if k[0] == link and k[2] == direction and k[1] != "iperf3"})
    if not buffers:
        return False
    fig, axes = plt.subplots(1, len(buffers), figsize=(max(6.5, 4.2 * len(buffers)), 4.4), sharey=True, squeeze=False)
    for ax, buf in zip(axes[0], buffers):
        for variant in variants:
            pts = sorted((k[3], v) for k, v in stats.items()
                         if k[0] == link and k[1] == variant and k[2] == direction and k[4] == 1 and k[5] == buf)
            if not pts:
                continue
            xs = [p[0] / MiB for p in pts]
            med = [p[1][0] for p in pts]
            lo = [p[1][0] - p[1][1] for p in pts]
            hi = [p[1][2] - p[1][0] for p in pts]
            ax.errorbar(xs, med, yerr=[lo, hi], marker="o", markersize=4, capsize=2, label=variant)
        ceiling = [v[0] for k, v in stats.items() if k[0] == link and k[1] == "iperf3" and k[2] == direction
                   and k[5] == buf]
        if ceiling:
            ax.axhline(ceiling[0], linestyle="--", color="grey", label="iperf3 (ceiling)")
        ax.set_xscale("log", base=2)
        ax.set_title("socket buffer " + buffer_label(buf))
        ax.set_xlabel("blob size (MiB)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("throughput (MB/s, median)")
    axes[0][-1].legend(fontsize="small")
    fig.suptitle("%s on %s: throughput vs blob size" % (direction, link))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def ratio_figure(plt, stats, link, path):
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), sharey=True)
    drawn = False
    for ax, direction in zip(axes, ("push", "pull")):
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
                ax.bar(xs, ys, width=width, label=variant)
                drawn = True
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(points))])
        ax.set_xticklabels(["%g MiB" % (b / MiB) if c == 1 else "%d×%g MiB" % (c, b / MiB) for b, c in points],
                           rotation=30)
        ax.set_title("%s, socket buffer auto" % direction)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("median throughput / raw-c median")
    axes[1].legend(fontsize="small")
    fig.suptitle("ratio to raw-c on %s (same invocation)" % link)
    fig.tight_layout()
    if drawn:
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return drawn


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="results.json written by run_bench.py")
    ap.add_argument("--out", default=".", help="directory for the PNGs")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        # Debian's python3-matplotlib serves /usr/bin/python3 only; make's
        # $(PYTHON) may be another interpreter.
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.access(system, os.X_OK) \
                and "BSBENCH_PLOT_REEXEC" not in os.environ:
            os.environ["BSBENCH_PLOT_REEXEC"] = "1"
            os.execv(system, [system] + sys.argv)
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
