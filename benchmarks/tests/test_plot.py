#!/usr/bin/env python3
"""plot.py draws every series in its one colour (bench_schema.SERIES_COLOURS)
in every panel, and its one legend names every series of every panel: checked
on a results.json in which `ace` is missing from one panel (the case in which
colours assigned per panel used to shift and the legend, drawn from the last
panel, mislabelled them), and beside it the records of the whole-program
steps, which plot.py leaves alone. Skips (77) when no interpreter has
matplotlib."""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.dont_write_bytecode = True
import plot  # noqa: E402
from bench_plan import VARIANTS  # noqa: E402
from bench_schema import MiB, NO_VERIFY, SERIES_COLOURS, series_colour  # noqa: E402

FAILURES = []


def check(ok, message):
    if not ok:
        FAILURES.append(message)
        print("FAIL " + message, file=sys.stderr)


def record(variant, direction, blob, buffer, mbps, target="memory"):
    bps = mbps * 8e6
    return {"variant": variant, "target": target, "direction": direction, "blob_bytes": blob,
            "count": 0 if variant == "iperf3" else 1, "socket_buffer": buffer, "link": "loopback", "run": 1,
            "end": {"sum_received": {"bits_per_second": bps}, "sha256_verified": True}}


def results():
    """Two panels (64 KiB, auto); ace only in the first, raw-c-durable push only."""
    out = []
    for buffer in (65536, "auto"):
        for direction in ("push", "pull"):
            out.append(record("iperf3", direction, 0, buffer, 2000))
            for blob in (MiB // 2, 32 * MiB):
                names = ["raw-c", "corba", "blobstreaming"] + (["ace"] if buffer == 65536 else [])
                if direction == "push":
                    names.append("raw-c-durable")
                for i, name in enumerate(names):
                    out.append(record(name, direction, blob, buffer, 1000 + 100 * i, target="file"))
    return out


def hex_of(colour):
    import matplotlib.colors
    return matplotlib.colors.to_hex(colour)


def main():
    plt = plot.pyplot()  # may run this test again under python3 with matplotlib
    if plt is None:
        print("SKIP: matplotlib not installed for any python3 (Debian: python3-matplotlib)")
        return 77

    names = [v for v in VARIANTS if not v.startswith(("blobstreaming", "dcmtk"))]
    names += ["blobstreaming/" + v[len("blobstreaming-"):] for v in VARIANTS if v.startswith("blobstreaming")]
    names += ["dcmtk/default", "dcmtk/tuned"]
    check(all(n in SERIES_COLOURS for n in names), "a series without a fixed colour: %s" % sorted(
        n for n in names if n not in SERIES_COLOURS))
    check(len(set(SERIES_COLOURS.values())) == len(SERIES_COLOURS), "two series share a colour")
    check("blobstreaming/file" + NO_VERIFY in names, "series names of the plan changed: %s" % names)

    with tempfile.TemporaryDirectory(prefix="test_plot.") as tmp:
        path = os.path.join(tmp, "results.json")
        with open(path, "w") as f:
            # With the records of the whole-program steps beside "results",
            # which plot.py does not read (bench_schema).
            json.dump({"machine": {}, "config": {}, "results": results(),
                       "same_host_pull": [{"destination": "file", "mode": "tcp", "blob_bytes": 32 * MiB, "run": 1,
                                           "seconds": 0.3, "link": "loopback"}],
                       "cli": [{"program": "blob", "direction": "push", "blob_bytes": 64 * MiB, "run": 1,
                                "seconds": 0.5, "link": "loopback"}],
                       "cli_peak_rss": {"target": "file", "blob_bytes": 64 * MiB, "rounds": 4,
                                        "peak_rss_kib": 20000}}, f)
        stats = plot.medians(results())

        panels = plot.throughput_figure(plt, stats, "loopback", "push", os.path.join(tmp, "push.png"))
        check(len(panels) == 2, "expected 2 throughput panels, got %d" % len(panels))
        check("ace" in panels[0] and "ace" not in panels[1], "ace must be in the 64 KiB panel only")
        for i, panel in enumerate(panels):
            for name, line in panel.items():
                check(hex_of(line.get_color()) == series_colour(name),
                      "panel %d: %s drawn in %s, its colour is %s" % (i, name, hex_of(line.get_color()),
                                                                       series_colour(name)))

        fig, axes = plt.subplots(1, 2)
        drawn = [plot.throughput_panel(ax, stats, "loopback", "push", buf, ["ace", "blobstreaming/file", "raw-c"])
                 for ax, buf in zip(axes, ("65536", "auto"))]
        plot.legend_of_all(axes[-1], drawn)
        legend = axes[-1].get_legend()
        labels = [t.get_text() for t in legend.get_texts()]
        check("ace" in labels, "the legend (last panel, which has no ace) must still list ace: %s" % labels)
        for handle, label in zip(legend.legend_handles if hasattr(legend, "legend_handles") else legend.legendHandles,
                                 labels):
            name = "iperf3" if label.startswith("iperf3") else label
            check(hex_of(handle.get_color()) == series_colour(name),
                  "legend: %s shown in %s, drawn in %s" % (label, hex_of(handle.get_color()), series_colour(name)))
        plt.close(fig)

        bars = plot.ratio_figure(plt, stats, "loopback", os.path.join(tmp, "ratio.png"))
        check("raw-c-durable" in bars[0] and "raw-c-durable" not in bars[1], "raw-c-durable: push bars only")
        for i, panel in enumerate(bars):
            for name, container in panel.items():
                check(hex_of(container.patches[0].get_facecolor()) == series_colour(name),
                      "ratio panel %d: %s in the wrong colour" % (i, name))

        r = subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "plot.py"), path, "--out", tmp],
                           capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "plot.py exit %d: %s" % (r.returncode, r.stderr))
        for png in ("throughput-push.png", "throughput-pull.png", "ratio.png"):
            check(os.path.getsize(os.path.join(tmp, png)) > 0 if os.path.exists(os.path.join(tmp, png)) else False,
                  "plot.py did not write " + png)

    if FAILURES:
        return 1
    print("ok: every series in its one colour in every panel; one legend for all panels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
