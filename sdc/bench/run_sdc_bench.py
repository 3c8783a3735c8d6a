"""GetMdState round-trip benchmark of the SDC get-service path.

Pairs (consumer -> provider), each on 127.0.0.1 with ephemeral ports:
  ours-ours          sdc-bench -> sdc-provider (with t0..t6 per round trip)
  sdc11073-ours      sdc11073 SdcConsumer -> sdc-provider (round-trip time only)
  sdc11073-sdc11073  sdc11073 SdcConsumer -> sdc11073 SdcProvider
Series: N rounds with a pause between them (the paper's setting) and N
back-to-back. Full: 40,000 rounds, 20 ms pause; --quick: 300 rounds.
Writes OUT/results.json (statistics and the t0..t6 breakdown), OUT/summary.md
and, with matplotlib, OUT/rtt.png. The sdc11073 pairs need the test venv
(see sdc/tests/sdclib.py); without PyPI they are left out with a message.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("BS_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                                "sdc", "tests"))
import sdclib  # noqa: E402

MDIB = "mdib.xml"
HANDLE = "numeric.ch0.vmd0"


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, int(round(p / 100.0 * (len(sorted_values) - 1)))))
    return sorted_values[k]


def stats_us(values_ns):
    v = sorted(x / 1000.0 for x in values_ns)
    raw = [x / 1000.0 for x in values_ns]
    return {
        "n": len(v),
        "median_us": statistics.median(v),
        "mean_us": statistics.fmean(v),
        "stdev_us": statistics.stdev(v) if len(v) > 1 else 0.0,
        "p99_us": percentile(v, 99),
        "p99_9_us": percentile(v, 99.9),
        "max_us": v[-1],
        "min_us": v[0],
        "median_first100_us": statistics.median(raw[:100]),
        "median_last100_us": statistics.median(raw[-100:]),
    }


def breakdown(samples):
    """Medians of t1-t0 ... t6-t5 (µs) when the provider's t2..t4 are known."""
    out = {}
    keys = ["t0", "t1", "t2", "t3", "t4", "t5", "t6"]
    if samples.get("t2") is None:
        keys = ["t0", "t1", "t5", "t6"]
    for a, b in zip(keys, keys[1:]):
        out[f"{b}-{a}"] = statistics.median((y - x) / 1000.0 for x, y in zip(samples[a], samples[b]))
    return out


def run_ours(env, rounds, pause_ms, provider):
    result = env.run([sdclib.program("sdc/sdc-bench"), "--url", provider.ready["url"], "--handle", HANDLE,
                      "--rounds", str(rounds), "--pause-ms", str(pause_ms)], timeout=rounds * (pause_ms / 1000 + 0.05) + 120)
    samples = json.loads(result.stdout)["samples"]
    rtt = [b - a for a, b in zip(samples["t0"], samples["t6"])]
    return rtt, breakdown(samples)


def run_peer(env, python, url, rounds, pause_ms):
    result = env.run([python, sdclib.peer_script("sdc11073_consumer.py"), "--url", url, "--handle", HANDLE,
                      "--rounds", str(rounds), "--pause-ms", str(pause_ms)], timeout=rounds * (pause_ms / 1000 + 0.2) + 300)
    return json.loads(result.stdout.strip().splitlines()[-1])["rtt_ns"], None


def plot(results, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.access(system, os.X_OK):
            # matplotlib from Debian lives in the system interpreter.
            subprocess.run([system, os.path.abspath(__file__), "--plot-only", "--out", out], timeout=300, check=False)
        else:
            print("matplotlib is not installed (Debian python3-matplotlib): no plot", flush=True)
        return
    series = [r for r in results if r.get("rtt_ns")]
    fig, axes = plt.subplots(len(series), 1, figsize=(9, 2.4 * len(series)), squeeze=False)
    for ax, r in zip(axes[:, 0], series):
        ax.plot([x / 1000.0 for x in r["rtt_ns"]], ".", markersize=1)
        ax.set_yscale("log")
        ax.set_ylabel("RTT [µs]")
        s = r["stats"]
        ax.set_title(f"{r['pair']}, pause {r['pause_ms']} ms: median {s['median_us']:.0f} µs, "
                     f"p99 {s['p99_us']:.0f} µs, max {s['max_us']:.0f} µs", fontsize=9)
    axes[-1, 0].set_xlabel("round trip #")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rtt.png"), dpi=110)
    print(f"wrote {os.path.join(out, 'rtt.png')}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--pause-ms", type=float, default=20.0)
    parser.add_argument("--pairs", default="ours-ours,sdc11073-ours,sdc11073-sdc11073")
    parser.add_argument("--plot-only", action="store_true", help="only plot OUT/rtt-samples.json")
    args = parser.parse_args()
    if args.plot_only:
        with open(os.path.join(args.out, "rtt-samples.json")) as f:
            samples = json.load(f)
        for r in samples:
            r["stats"] = stats_us(r["rtt_ns"])
        plot(samples, args.out)
        return 0
    rounds = args.rounds or (300 if args.quick else 40000)
    os.makedirs(args.out, exist_ok=True)
    env = sdclib.SdcEnv("sdc-bench")
    results = []
    try:
        python = None
        pairs = args.pairs.split(",")
        if any(p.startswith("sdc11073") for p in pairs):
            try:
                python = sdclib.sdc11073_python()
            except sdclib.TestSkipped as e:
                print(f"sdc11073 pairs left out: {e}", flush=True)
                pairs = [p for p in pairs if not p.startswith("sdc11073")]
        mdib = sdclib.mdib_file(MDIB)
        ours = env.start_provider(mdib, "--no-discovery")
        theirs = None
        if "sdc11073-sdc11073" in pairs:
            theirs = env.start("sdc11073-provider", [python, sdclib.peer_script("sdc11073_provider.py"), "--mdib", mdib],
                               "sdc11073-provider ready", timeout=120)
        for pair in pairs:
            for pause in (args.pause_ms, 0.0):
                sdclib.step(f"{pair}: {rounds} GetMdState, pause {pause} ms")
                started = time.monotonic()
                if pair == "ours-ours":
                    rtt, parts = run_ours(env, rounds, pause, ours)
                elif pair == "sdc11073-ours":
                    rtt, parts = run_peer(env, python, ours.ready["url"], rounds, pause)
                else:
                    rtt, parts = run_peer(env, python, theirs.ready["url"], rounds, pause)
                r = {"pair": pair, "pause_ms": pause, "rounds": rounds, "stats": stats_us(rtt),
                     "breakdown_median_us": parts, "seconds": time.monotonic() - started, "rtt_ns": rtt}
                s = r["stats"]
                sdclib.step(f"  median {s['median_us']:.1f} µs, mean {s['mean_us']:.1f}, stdev {s['stdev_us']:.1f}, "
                            f"p99 {s['p99_us']:.1f}, p99.9 {s['p99_9_us']:.1f}, max {s['max_us']:.1f}"
                            + (f"; breakdown {parts}" if parts else ""))
                results.append(r)
    finally:
        env.close()
    report = {"mdib": MDIB, "handle": HANDLE, "quick": args.quick, "rounds": rounds,
              "results": [{k: v for k, v in r.items() if k != "rtt_ns"} for r in results]}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(args.out, "rtt-samples.json"), "w") as f:
        json.dump([{"pair": r["pair"], "pause_ms": r["pause_ms"], "rtt_ns": r["rtt_ns"]} for r in results], f)
    lines = ["| pair | pause ms | n | median µs | mean µs | stdev µs | p99 µs | p99.9 µs | max µs | "
             "median first/last 100 µs |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s = r["stats"]
        lines.append(f"| {r['pair']} | {r['pause_ms']:g} | {s['n']} | {s['median_us']:.1f} | {s['mean_us']:.1f} | "
                     f"{s['stdev_us']:.1f} | {s['p99_us']:.1f} | {s['p99_9_us']:.1f} | {s['max_us']:.1f} | "
                     f"{s['median_first100_us']:.1f} / {s['median_last100_us']:.1f} |")
    for r in results:
        if r["breakdown_median_us"]:
            parts = ", ".join(f"{k} {v:.1f}" for k, v in r["breakdown_median_us"].items())
            lines.append(f"\n{r['pair']} (pause {r['pause_ms']:g} ms), medians µs: {parts}")
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    plot(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
