"""GetMdState round-trip benchmark of the SDC get-service path, after
Kasparick et al., "Measuring latencies of IEEE 11073 compliant service-oriented
medical device stacks" (SOCNE 2017).

Series (consumer -> provider), all on 127.0.0.1 with ephemeral ports, each
with a pause between round trips (the paper's 20 ms) and back-to-back:
  ours-ours             sdc-bench -> sdc-provider (structural checks, the default)
  ours-ours-novalidate  sdc-bench -> sdc-provider --no-validate
  ours-ours-xsd         sdc-bench -> sdc-provider --schema-dir (BICEPS XSD validation)
  ours-ours-tls         sdc-bench -> sdc-provider --tls-* (TLS 1.3, client certificates, keep-alive)
  raw-tcp               t_net: plain TCP exchanges of the same request and response sizes
  sdc11073-ours         sdc11073 SdcConsumer -> sdc-provider
  sdc11073-sdc11073     sdc11073 SdcConsumer -> sdc11073 SdcProvider (as shipped)
Full: 40,000 rounds per series; the sdc11073 pairs (about 45 ms per round
trip as shipped) are capped by --peer-rounds or SDC_BENCH_PEER_ROUNDS.
--quick: 300 rounds, a smoke run that checks that every pair answers.

Then report delivery (not round trips): metric changes made through
sdc-provider's --commands FIFO, with the pause and back-to-back:
  reports-ours-ours     one MdibMirror (sdc-bench --reports): the provider's
                        time just before set_metric -> the notification's
                        header at the mirror -> the mirror's callback
  reports-ours-ours-50  50 mirrors: the first and the last callback, and the
                        provider's CPU time per report (/proc/PID/stat)
  reports-ours-sdc11073 sdc11073's start_all() + ConsumerMdib: the command
                        written -> the value in the ConsumerMdib

Writes OUT/results.json (statistics, the t0..t6 breakdown as fractions of
the RTT, the middleware share, the targets met or missed), OUT/summary.md,
OUT/rtt-samples.json and, with Debian's python3-matplotlib, OUT/rtt.png
(every round trip), OUT/per100.png (medians of each 100, the paper's Fig. 6),
OUT/box.png (box plots) and OUT/breakdown.png (the paper's Fig. 5). The
sdc11073 pairs and the XSD series need the test venv (sdc/tests/sdclib.py, on tests/harness);
without PyPI they are left out with a message.
"""

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import uuid

sys.dont_write_bytecode = True
SRC = os.environ.get("BS_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "sdc", "tests"))
sys.path.insert(0, os.path.join(SRC, "tests"))
import harness  # noqa: E402
import sdclib  # noqa: E402

MDIB = "mdib.xml"
HANDLE = "numeric.ch0.vmd0"
OURS = ("ours-ours", "ours-ours-novalidate", "ours-ours-xsd", "ours-ours-tls")
PAIRS = OURS + ("raw-tcp", "sdc11073-ours", "sdc11073-sdc11073")
# Named steps of a round trip (the paper's deltas), from the timestamps t0..t6.
DELTAS = [("δReqCon", "t0", "t1"), ("δReqNet", "t1", "t2"), ("δReqProv", "t2", "t3"), ("δRespProv", "t3", "t4"),
          ("δRespNet", "t4", "t5"), ("δRespCon", "t5", "t6")]
TARGETS = {"median_us": 300.0, "p99_us": 1000.0, "provider_share_us": 300.0, "speedup": 50.0,
           "report_median_us": 500.0, "report_p99_us": 2000.0, "tls_median_us": 500.0}
# Report delivery series (docs/SDC.md): our provider to our mirrors (1 and 50
# subscribers) and to sdc11073's ConsumerMdib.
REPORT_SERIES = ("reports-ours-ours", "reports-ours-ours-50", "reports-ours-sdc11073")


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, int(round(p / 100.0 * (len(sorted_values) - 1)))))
    return sorted_values[k]


def stats_us(values_ns):
    raw = [x / 1000.0 for x in values_ns]
    v = sorted(raw)
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
    """Per named step: the median in µs and the mean fraction of the RTT
    (Fig. 5 of the paper); δStack is the network and kernel part
    (δReqNet + δRespNet). None when the provider's t2..t4 are unknown."""
    if samples.get("t2") is None:
        return None
    rtt = [b - a for a, b in zip(samples["t0"], samples["t6"])]
    out = {}
    for name, a, b in DELTAS:
        d = [y - x for x, y in zip(samples[a], samples[b])]
        out[name] = {"median_us": statistics.median(d) / 1000.0,
                     "fraction": statistics.fmean(x / r for x, r in zip(d, rtt) if r > 0)}
    out["δStack"] = {"median_us": out["δReqNet"]["median_us"] + out["δRespNet"]["median_us"],
                     "fraction": out["δReqNet"]["fraction"] + out["δRespNet"]["fraction"]}
    return out


def run_ours(env, rounds, pause_ms, provider, tls=()):
    result = env.run([harness.program("sdc/sdc-bench"), *tls, "--url", provider.ready["url"], "--handle", HANDLE,
                      "--rounds", str(rounds), "--pause-ms", str(pause_ms)],
                     timeout=rounds * (pause_ms / 1000 + 0.05) + 120)
    samples = json.loads(result.stdout)["samples"]
    rtt = [b - a for a, b in zip(samples["t0"], samples["t6"])]
    return rtt, {"breakdown": breakdown(samples)}


def run_raw(env, rounds, pause_ms, sizes):
    result = env.run([harness.program("sdc/sdc-bench"), "--raw", f"{sizes[0]}:{sizes[1]}", "--rounds", str(rounds),
                      "--pause-ms", str(pause_ms)], timeout=rounds * (pause_ms / 1000 + 0.05) + 120)
    return json.loads(result.stdout)["rtt_ns"], {"request_bytes": sizes[0], "response_bytes": sizes[1]}


def recent_provider_times(provider, n):
    """The provider's t2..t4 of its last n requests (GET /timestamps?last=n)."""
    host, port = provider.ready["address"].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("GET", f"/timestamps?last={n}")
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    if response.status != 200:
        raise harness.TestFailure(f"GET /timestamps?last={n}: {response.status} {body[:200]!r}")
    return json.loads(body)["timestamps"]


def run_peer(env, python, url, rounds, pause_ms, provider=None):
    result = env.run([python, sdclib.peer_script("sdc11073_consumer.py"), "--url", url, "--handle", HANDLE,
                      "--rounds", str(rounds), "--pause-ms", str(pause_ms)],
                     timeout=rounds * (pause_ms / 1000 + 0.2) + 300)
    rtt = json.loads(result.stdout.strip().splitlines()[-1])["rtt_ns"]
    extra = {}
    if provider is not None:  # our provider: its own share of each round trip
        stamps = recent_provider_times(provider, rounds)
        share = [s["t4"] - s["t2"] for s in stamps if s["t4"] and s["t2"]]
        if share:
            s = stats_us(share)
            extra["provider_share"] = {"n": s["n"], "median_us": s["median_us"], "p99_us": s["p99_us"],
                                       "fraction_of_median_rtt": s["median_us"] / statistics.median(rtt) * 1000.0}
    return rtt, extra


def provider_acks(provider, since):
    """value -> t (CLOCK_MONOTONIC ns just before the change) from the
    acknowledgements sdc-provider printed after byte offset `since`."""
    acks = {}
    with open(provider.log_paths[0]) as out:
        out.seek(since)
        for line in out:
            words = line.split()
            if len(words) == 5 and words[0] == "set" and words[4].startswith("t="):
                acks[words[2]] = int(words[4][2:])
    return acks


def cpu_seconds(pid):
    """User + system CPU time of a process so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_reports(env, provider, fifo, rounds, pause_ms, subscribers):
    """Our mirrors: set (provider side) -> notification header / first and
    last callback, and the provider's CPU time per report."""
    since = os.path.getsize(provider.log_paths[0])
    cpu0 = cpu_seconds(provider.popen.pid)
    started = time.monotonic()
    result = env.run([harness.program("sdc/sdc-bench"), "--url", provider.ready["url"], "--handle", HANDLE,
                      "--reports", str(rounds), "--fifo", fifo, "--subscribers", str(subscribers),
                      "--pause-ms", str(pause_ms)], timeout=rounds * (pause_ms / 1000 + 0.5) + 120)
    elapsed = time.monotonic() - started
    cpu = cpu_seconds(provider.popen.pid) - cpu0
    d = json.loads(result.stdout)
    acks = harness.wait_for(lambda: (lambda a: a if all(v in a for v in d["value"]) else None)(
        provider_acks(provider, since)), 10, "the provider's acknowledgements")
    t_set = [acks[v] for v in d["value"]]
    out = {"subscribers": subscribers, "rounds": rounds, "pause_ms": pause_ms,
           "set_to_header": stats_us([b - a for a, b in zip(t_set, d["first_received"])]),
           "set_to_callback": stats_us([b - a for a, b in zip(t_set, d["first_callback"])]),
           "set_to_last_callback": stats_us([b - a for a, b in zip(t_set, d["last_callback"])]),
           "fifo_to_set": stats_us([b - a for a, b in zip(d["t_write"], t_set)]),
           "provider_cpu_us_per_report": cpu / rounds * 1e6,
           "seconds": elapsed}
    return out


def run_peer_reports(env, python, provider, fifo, rounds, pause_ms):
    """sdc11073's ConsumerMdib: command written -> value in the ConsumerMdib."""
    result = env.run([python, sdclib.peer_script("sdc11073_watch.py"), "--url", provider.ready["url"], "--handle",
                      HANDLE, "--fifo", fifo, "--rounds", str(rounds), "--pause-ms", str(pause_ms),
                      "--first-value", "2000000"], timeout=rounds * (pause_ms / 1000 + 0.5) + 300)
    got = json.loads(result.stdout.strip().splitlines()[-1])
    harness.check(len(got["latency_ns"]) == rounds, f"sdc11073 ConsumerMdib: {len(got['latency_ns'])} of {rounds}")
    return {"subscribers": 1, "rounds": rounds, "pause_ms": pause_ms, "write_to_consumer_mdib": stats_us(
        got["latency_ns"])}


def exchange_sizes(provider):
    """Bytes on the wire (HTTP header + body) of one GetMdState request with
    a HandleRef, as our consumer sends it, and of its response."""
    host, port = provider.ready["address"].rsplit(":", 1)
    path = urllib.parse.urlparse(provider.ready["url"]).path + "/Get"
    body = ('<?xml version="1.0" encoding="UTF-8"?><s12:Envelope xmlns:s12="http://www.w3.org/2003/05/soap-envelope" '
            'xmlns:wsa="http://www.w3.org/2005/08/addressing" '
            'xmlns:msg="http://standards.ieee.org/downloads/11073/11073-10207-2017/message"><s12:Header>'
            f'<wsa:To>{provider.ready["url"]}/Get</wsa:To>'
            '<wsa:Action>http://standards.ieee.org/downloads/11073/11073-20701-2018/GetService/GetMdState</wsa:Action>'
            f'<wsa:MessageID>urn:uuid:{uuid.uuid4()}</wsa:MessageID></s12:Header><s12:Body><msg:GetMdState>'
            f'<msg:HandleRef>{HANDLE}</msg:HandleRef></msg:GetMdState></s12:Body></s12:Envelope>').encode()
    request = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/soap+xml; charset=utf-8\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            data += s.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int([line.split(b":", 1)[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")][0])
        while len(rest) < length:
            rest += s.recv(65536)
    return len(request), len(head) + 4 + length


def evaluate(results):
    """The issue's targets (reported, not asserted), from this run."""
    by = {(r["pair"], r["pause_ms"]): r for r in results}
    out = []
    for pause in sorted({r["pause_ms"] for r in results}, reverse=True):
        ours = by.get(("ours-ours-novalidate", pause))
        if ours:
            s = ours["stats"]
            out.append({"target": f"ours↔ours median ≤ 0.3 ms (validation off, pause {pause:g} ms)",
                        "measured": f"{s['median_us']:.1f} µs", "met": s["median_us"] <= TARGETS["median_us"]})
            out.append({"target": f"ours↔ours p99 ≤ 1 ms (validation off, pause {pause:g} ms)",
                        "measured": f"{s['p99_us']:.1f} µs", "met": s["p99_us"] <= TARGETS["p99_us"]})
        for name in ("ours-ours", "ours-ours-xsd"):
            r = by.get((name, pause))
            if r:
                out.append({"target": f"{name} median, reported (pause {pause:g} ms)",
                            "measured": f"{r['stats']['median_us']:.1f} µs", "met": None})
        peer = by.get(("sdc11073-ours", pause))
        if peer and peer.get("provider_share"):
            p = peer["provider_share"]
            out.append({"target": f"our provider's share (δReqProv + δRespProv) under sdc11073 ≤ 0.3 ms "
                                  f"(pause {pause:g} ms)",
                        "measured": f"{p['median_us']:.1f} µs median", "met": p["median_us"] <= TARGETS["provider_share_us"]})
        theirs = by.get(("sdc11073-sdc11073", pause))
        if ours and theirs:
            ratio = theirs["stats"]["median_us"] / ours["stats"]["median_us"]
            out.append({"target": f"ours↔ours ≥ 50× faster than sdc11073↔sdc11073 (medians, pause {pause:g} ms)",
                        "measured": f"{ratio:.0f}×", "met": ratio >= TARGETS["speedup"]})
    return out


def evaluate_reports(results, reports):
    """The targets of the report series and of GetMdState over TLS."""
    out = []
    for r in reports:
        if r["series"] == "reports-ours-ours":
            s = r["set_to_callback"]
            out.append({"target": f"ours→ours report median ≤ 0.5 ms (pause {r['pause_ms']:g} ms)",
                        "measured": f"{s['median_us']:.1f} µs", "met": s["median_us"] <= TARGETS["report_median_us"]})
            out.append({"target": f"ours→ours report p99 ≤ 2 ms (pause {r['pause_ms']:g} ms)",
                        "measured": f"{s['p99_us']:.1f} µs", "met": s["p99_us"] <= TARGETS["report_p99_us"]})
    for r in results:
        if r["pair"] == "ours-ours-tls":
            s = r["stats"]
            out.append({"target": f"GetMdState over TLS median ≤ 0.5 ms (pause {r['pause_ms']:g} ms)",
                        "measured": f"{s['median_us']:.1f} µs", "met": s["median_us"] <= TARGETS["tls_median_us"]})
    return out


def middleware_shares(results):
    """(t_total − t_net) / t_total per series of ours, from medians of the same run and pause."""
    net = {r["pause_ms"]: r["stats"]["median_us"] for r in results if r["pair"] == "raw-tcp"}
    for r in results:
        if r["pair"] in OURS + ("sdc11073-ours", "sdc11073-sdc11073") and r["pause_ms"] in net:
            total = r["stats"]["median_us"]
            r["t_net_median_us"] = net[r["pause_ms"]]
            r["middleware_share"] = (total - net[r["pause_ms"]]) / total if total > 0 else None


def series_label(r):
    return f"{r['pair']}\npause {r['pause_ms']:g} ms"


def plot(results, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.access(system, os.X_OK):
            # matplotlib from Debian lives in the system interpreter.
            subprocess.run([system, os.path.abspath(__file__), "--plot-only", "--out", out], timeout=600, check=False)
        else:
            print("matplotlib is not installed (Debian python3-matplotlib): no plots", flush=True)
        return
    series = [r for r in results if r.get("rtt_ns")]
    label = [series_label(r) for r in series]

    fig, axes = plt.subplots(len(series), 1, figsize=(9, 2.2 * len(series)), squeeze=False)
    for ax, r in zip(axes[:, 0], series):
        ax.plot([x / 1000.0 for x in r["rtt_ns"]], ".", markersize=1)
        ax.set_yscale("log")
        ax.set_ylabel("RTT [µs]")
        s = r["stats"]
        ax.set_title(f"{r['pair']}, pause {r['pause_ms']:g} ms: median {s['median_us']:.0f} µs, "
                     f"p99 {s['p99_us']:.0f} µs, max {s['max_us']:.0f} µs", fontsize=9)
    axes[-1, 0].set_xlabel("round trip #")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rtt.png"), dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(10, 5))
    for r, name in zip(series, label):
        v = [x / 1000.0 for x in r["rtt_ns"]]
        medians = [statistics.median(v[i:i + 100]) for i in range(0, len(v) - 99, 100)]
        ax.plot([100 * (i + 1) for i in range(len(medians))], medians, label=name.replace("\n", ", "))
    ax.set_yscale("log")
    ax.set_xlabel("round trip #")
    ax.set_ylabel("median of each 100 round trips [µs]")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "per100.png"), dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(series)), 5))
    ax.boxplot([[x / 1000.0 for x in r["rtt_ns"]] for r in series], whis=(1, 99), showfliers=False)
    ax.set_xticks(range(1, len(series) + 1), label, fontsize=7, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("RTT [µs] (whiskers: 1st and 99th percentile)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "box.png"), dpi=100)
    plt.close(fig)

    parts = [r for r in results if r.get("breakdown")]
    if parts:
        fig, ax = plt.subplots(figsize=(max(7, 1.2 * len(parts)), 4.5))
        names = [d[0] for d in DELTAS]
        bottom = [0.0] * len(parts)
        for name in names:
            values = [r["breakdown"][name]["fraction"] for r in parts]
            ax.bar(range(len(parts)), values, bottom=bottom, label=name)
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.set_xticks(range(len(parts)), [series_label(r) for r in parts], fontsize=7, rotation=30, ha="right")
        ax.set_ylabel("mean fraction of the RTT")
        ax.legend(fontsize=7, loc="upper right")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "breakdown.png"), dpi=100)
        plt.close(fig)
    print(f"wrote {out}/rtt.png, per100.png, box.png" + (", breakdown.png" if parts else ""), flush=True)


def summary(report):
    lines = [f"GetMdState round trips, handle {report['handle']} of {report['mdib']}; rounds {report['rounds']}, "
             f"sdc11073 pairs {report['peer_rounds']}.", "",
             "| pair | pause ms | n | median µs | mean µs | stdev µs | p99 µs | p99.9 µs | max µs | "
             "median first/last 100 µs | middleware share |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        s = r["stats"]
        share = r.get("middleware_share")
        lines.append(f"| {r['pair']} | {r['pause_ms']:g} | {s['n']} | {s['median_us']:.1f} | {s['mean_us']:.1f} | "
                     f"{s['stdev_us']:.1f} | {s['p99_us']:.1f} | {s['p99_9_us']:.1f} | {s['max_us']:.1f} | "
                     f"{s['median_first100_us']:.1f} / {s['median_last100_us']:.1f} | "
                     f"{'' if share is None else f'{100 * share:.0f} %'} |")
    rows = [r for r in report["results"] if r.get("breakdown")]
    if rows:
        names = [d[0] for d in DELTAS] + ["δStack"]
        lines += ["", "Breakdown (median µs / mean fraction of the RTT):", "",
                  "| pair | pause ms | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
        for r in rows:
            b = r["breakdown"]
            lines.append(f"| {r['pair']} | {r['pause_ms']:g} | " + " | ".join(
                f"{b[n]['median_us']:.1f} / {100 * b[n]['fraction']:.0f} %" for n in names) + " |")
    for r in report["results"]:
        if r.get("provider_share"):
            p = r["provider_share"]
            lines.append(f"\n{r['pair']} (pause {r['pause_ms']:g} ms): our provider's share t4 − t2 median "
                         f"{p['median_us']:.1f} µs, p99 {p['p99_us']:.1f} µs ({100 * p['fraction_of_median_rtt']:.1f} % "
                         f"of the median RTT)")
        if r["pair"] == "raw-tcp" and r is next(x for x in report["results"] if x["pair"] == "raw-tcp"):
            lines.append(f"\nraw-tcp: {r['request_bytes']} request and {r['response_bytes']} response bytes "
                         f"(one GetMdState with a HandleRef, HTTP header included)")
    if report.get("reports"):
        lines += ["", "Report delivery (metric change in our provider → the value in the consumer; µs):", "",
                  "| series | subscribers | pause ms | n | measured span | median | p99 | max | provider CPU µs/report |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in report["reports"]:
            for span in ("set_to_header", "set_to_callback", "set_to_last_callback", "write_to_consumer_mdib"):
                s = r.get(span)
                if s is None or (span == "set_to_last_callback" and r["subscribers"] == 1):
                    continue
                cpu = r.get("provider_cpu_us_per_report")
                lines.append(f"| {r['series']} | {r['subscribers']} | {r['pause_ms']:g} | {s['n']} | {span} | "
                             f"{s['median_us']:.1f} | {s['p99_us']:.1f} | {s['max_us']:.1f} | "
                             f"{'' if cpu is None else f'{cpu:.1f}'} |")
    if report["targets"]:
        lines += ["", "Targets (reported, not asserted):", "", "| target | measured | met |", "|---|---|---|"]
        for t in report["targets"]:
            lines.append(f"| {t['target']} | {t['measured']} | "
                         f"{'-' if t['met'] is None else ('yes' if t['met'] else '**no**')} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, help="round trips per series (default 40000, --quick 300)")
    parser.add_argument("--peer-rounds", type=int, default=int(os.environ.get("SDC_BENCH_PEER_ROUNDS", "0")) or None,
                        help="round trips of the sdc11073 series (default: --rounds; env SDC_BENCH_PEER_ROUNDS)")
    parser.add_argument("--rounds-for", default="",
                        help="per-series overrides, e.g. ours-ours-xsd@20=10000 (PAIR@PAUSE=N, comma-separated)")
    parser.add_argument("--pause-ms", type=float, default=20.0)
    parser.add_argument("--pairs", default=",".join(PAIRS))
    parser.add_argument("--plot-only", action="store_true", help="only plot OUT/rtt-samples.json")
    parser.add_argument("--report-rounds", type=int, help="changes per report series (default 10000, --quick 200; "
                        "the 50-subscriber and sdc11073 series use a tenth, at least 50)")
    parser.add_argument("--no-reports", action="store_true", help="leave the report delivery series out")
    args = parser.parse_args()
    if args.plot_only:
        with open(os.path.join(args.out, "rtt-samples.json")) as f:
            samples = json.load(f)
        with open(os.path.join(args.out, "results.json")) as f:
            parts = {(r["pair"], r["pause_ms"]): r.get("breakdown") for r in json.load(f)["results"]}
        for r in samples:
            r["stats"] = stats_us(r["rtt_ns"])
            r["breakdown"] = parts.get((r["pair"], r["pause_ms"]))
        plot(samples, args.out)
        return 0
    rounds = args.rounds or (300 if args.quick else 40000)
    peer_rounds = args.peer_rounds or rounds
    overrides = {}
    for item in filter(None, args.rounds_for.split(",")):
        key, _, n = item.partition("=")
        pair, _, pause = key.partition("@")
        overrides[(pair, float(pause))] = int(n)
    pairs = args.pairs.split(",")
    unknown = [p for p in pairs if p not in PAIRS]
    if unknown:
        parser.error(f"unknown pair(s) {', '.join(unknown)} (known: {', '.join(PAIRS)})")
    os.makedirs(args.out, exist_ok=True)
    env = sdclib.SdcEnv("sdc-bench")
    results = []
    reports = []
    try:
        python = schemas = None
        if any(p.startswith("sdc11073") or p == "ours-ours-xsd" for p in pairs):
            try:
                python = sdclib.sdc11073_python()
                schemas = sdclib.biceps_schema_dir()
            except harness.TestSkipped as e:
                print(f"sdc11073 pairs and the XSD series left out: {e}", flush=True)
                pairs = [p for p in pairs if not p.startswith("sdc11073") and p != "ours-ours-xsd"]
        mdib = sdclib.mdib_file(MDIB)
        fifo = env.path("commands.fifo")
        os.mkfifo(fifo)
        providers = {"ours-ours": env.start_provider(mdib, "--no-discovery", "--commands", fifo)}
        tls = ()
        if "ours-ours-tls" in pairs:
            pki = sdclib.make_pki(env.path())
            tls = sdclib.tls_options(pki, "consumer")
            providers["ours-ours-tls"] = env.start_provider(mdib, "--no-discovery", *sdclib.tls_options(pki, "provider"),
                                                            name="sdc-provider-tls")
        if "ours-ours-novalidate" in pairs:
            providers["ours-ours-novalidate"] = env.start_provider(mdib, "--no-discovery", "--no-validate",
                                                                   name="sdc-provider-novalidate")
        if "ours-ours-xsd" in pairs:
            providers["ours-ours-xsd"] = env.start_provider(mdib, "--no-discovery", "--schema-dir", schemas,
                                                            name="sdc-provider-xsd")
        sizes = exchange_sizes(providers["ours-ours"])
        theirs = None
        if "sdc11073-sdc11073" in pairs:
            theirs = env.start("sdc11073-provider", [python, sdclib.peer_script("sdc11073_provider.py"), "--mdib", mdib],
                               "sdc11073-provider ready", timeout=120)
        for pair in pairs:
            for pause in (args.pause_ms, 0.0):
                n = overrides.get((pair, pause), peer_rounds if pair.startswith("sdc11073") else rounds)
                harness.step(f"{pair}: {n} GetMdState, pause {pause:g} ms")
                started = time.monotonic()
                if pair in OURS:
                    rtt, extra = run_ours(env, n, pause, providers[pair], tls if pair == "ours-ours-tls" else ())
                elif pair == "raw-tcp":
                    rtt, extra = run_raw(env, n, pause, sizes)
                elif pair == "sdc11073-ours":
                    rtt, extra = run_peer(env, python, providers["ours-ours"].ready["url"], n, pause,
                                          providers["ours-ours"])
                else:
                    rtt, extra = run_peer(env, python, theirs.ready["url"], n, pause)
                harness.check(len(rtt) == n, f"{pair}: {len(rtt)} round trips measured, {n} asked")
                r = {"pair": pair, "pause_ms": pause, "rounds": n, "stats": stats_us(rtt),
                     "seconds": time.monotonic() - started, "rtt_ns": rtt, **extra}
                s = r["stats"]
                harness.step(f"  median {s['median_us']:.1f} µs, mean {s['mean_us']:.1f}, stdev {s['stdev_us']:.1f}, "
                            f"p99 {s['p99_us']:.1f}, p99.9 {s['p99_9_us']:.1f}, max {s['max_us']:.1f}")
                results.append(r)
        report_rounds = args.report_rounds or (200 if args.quick else 10000)
        if not args.no_reports:
            for series in REPORT_SERIES:
                if series == "reports-ours-sdc11073" and python is None:
                    continue
                for pause in (args.pause_ms, 0.0):
                    n = report_rounds if series == "reports-ours-ours" else max(50, report_rounds // 10)
                    harness.step(f"{series}: {n} metric changes, pause {pause:g} ms")
                    if series == "reports-ours-sdc11073":
                        r = run_peer_reports(env, python, providers["ours-ours"], fifo, n, pause)
                        s = r["write_to_consumer_mdib"]
                    else:
                        r = run_reports(env, providers["ours-ours"], fifo, n, pause,
                                        50 if series.endswith("-50") else 1)
                        s = r["set_to_callback"]
                    r["series"] = series
                    harness.step(f"  median {s['median_us']:.1f} µs, p99 {s['p99_us']:.1f}" +
                                 (f", provider CPU {r['provider_cpu_us_per_report']:.1f} µs/report"
                                  if "provider_cpu_us_per_report" in r else ""))
                    reports.append(r)
    finally:
        env.close()
    middleware_shares(results)
    report = {"mdib": MDIB, "handle": HANDLE, "quick": args.quick, "rounds": rounds, "peer_rounds": peer_rounds,
              "exchange_bytes": {"request": sizes[0], "response": sizes[1]},
              "results": [{k: v for k, v in r.items() if k != "rtt_ns"} for r in results],
              "reports": reports,
              "targets": evaluate(results) + evaluate_reports(results, reports)}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
    with open(os.path.join(args.out, "rtt-samples.json"), "w") as f:
        json.dump([{"pair": r["pair"], "pause_ms": r["pause_ms"], "rtt_ns": r["rtt_ns"]} for r in results], f)
    text = summary(report)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text)
    print(text, flush=True)
    plot(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
