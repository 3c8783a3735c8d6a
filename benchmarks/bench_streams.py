#!/usr/bin/env python3
"""Parallel streams on a long fat link (`make bench-streams`).

Two network namespaces joined by the TUN delay forwarder (tun_delay.py,
--rtt-ms, default 20 ms round trip) and rate-limited with tbf (--rate,
default 1gbit), every socket buffer capped at --socket-buffer (default
256 KiB: a site link without window tuning, where one TCP connection's
window, not the link, limits the rate). omniNames and a memory blobstored
(--socket-buffer) in the server namespace; `blob` processes in the client
namespace, each timed from fork to exit:

- pull of one --size Blob (default 256 MiB) with --streams 1, 2 and 4 (to
  a file; each run's bytes compared with the pushed file);
- push of the same Blob with --streams 1, 2 and 4 (--replace; each run's
  committed checksum compared with the file's);
- iperf3 -P 1 and -P 4 (-R for the store -> client direction, -w the same
  buffer) on the same link in the same run.

Cases alternate, --runs timed runs each after an untimed one. Each run
records two rates: `MBps`, the process from fork to exit (naming lookup,
tickets and TCP slow start included), and `transfer_MBps`, the library's
own time of the transfer (`seconds` of `--json`: from the data connections'
start to the checked end). Writes --out/results.json (every run) and
--out/summary.{json,md}: median MB/s per case, pull and push 4 streams / 1
stream (target >= 3) and / iperf3 -P 4 in that direction (target >= 0.9), on
both rates. Targets are reported, never asserted: exit 0 when every transfer
was complete and right. Needs root (namespaces); without it the run is
skipped with a message (exit 77)."""

import argparse
import filecmp
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)
import bench_link  # noqa: E402
import harness  # noqa: E402
from harness import MiB  # noqa: E402

from bench_output import write_outputs  # noqa: E402
from harness.daemons import READY as BLOBSTORED_READY, blobstored_argv  # noqa: E402
from harness.naming import naming_url, nameclt_answers, omninames_argv  # noqa: E402

TARGET_OVER_ONE = 3.0
TARGET_OVER_IPERF = 0.9
STREAMS = (1, 2, 4)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build tree (blobstore/blobstored, clients/blob)")
    ap.add_argument("--out", required=True, help="directory for results.json and summary.{json,md}")
    ap.add_argument("--size", type=int, default=256 * MiB, help="bytes of the Blob (default 256 MiB)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per case (default 3)")
    ap.add_argument("--rate", default="1gbit", help="tbf rate (default 1gbit)")
    ap.add_argument("--rtt-ms", type=float, default=20.0, help="round trip in ms (default 20)")
    ap.add_argument("--socket-buffer", type=int, default=256 * 1024, help="SO_SNDBUF/SO_RCVBUF (default 262144)")
    ap.add_argument("--iperf3-seconds", type=int, default=5, help="seconds per iperf3 run (default 5)")
    args = ap.parse_args()
    for name in ("size", "runs", "socket_buffer", "iperf3_seconds"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')}: {getattr(args, name)}; allowed: 1 or more")
    if args.rtt_ms <= 0:
        ap.error(f"--rtt-ms: {args.rtt_ms}; allowed: more than 0 (the TUN link)")
    return args


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="bsbench-streams.")
        self.processes = []
        self.link = None
        self.blob = os.path.join(os.path.abspath(args.build), "clients", "blob")
        self.blobstored = os.path.join(os.path.abspath(args.build), "blobstore", "blobstored")

    def start(self, name, argv, ready=None, timeout=30.0):
        base = os.path.join(self.tmp, f"{name.replace(' ', '-')}-{len(self.processes)}")
        return harness.start_service(name, argv, ready, timeout, out_path=base + ".out", err_path=base + ".err",
                                     text=True, track=self.processes)

    def stop(self, p):
        p.stop(timeout=10)
        self.processes.remove(p)

    def close(self):
        for p in list(reversed(self.processes)):
            self.stop(p)
        if self.link is not None:
            self.link.close()

    def run_blob(self, *argv, timeout=600):
        cmd = self.link.cli + [self.blob, "--naming", self.naming, "--socket-buffer", str(self.args.socket_buffer),
                               "--no-local", "--json", "-q", *argv]
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        seconds = time.monotonic() - t0
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
        return seconds, json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}

    def iperf3(self, streams, reverse):
        port = harness.free_port()
        server = self.start("iperf3 -s", self.link.srv + ["iperf3", "-s", "-1", "-p", str(port),
                                                          "-B", self.link.server_host])
        argv = self.link.cli + ["iperf3", "-c", self.link.server_host, "-p", str(port), "-J", "-P", str(streams),
                                "-t", str(self.args.iperf3_seconds), "-w", str(self.args.socket_buffer)]
        if reverse:
            argv.append("-R")
        rec = bench_link.iperf3_client(argv, server, self.args.iperf3_seconds + 60)
        self.stop(server)
        if "error" in rec:
            raise RuntimeError(f"iperf3 -P {streams}: {rec['error']}")
        return rec["end"]["sum_received"]["bits_per_second"] / 8 / 1e6

    def main(self):
        a = self.args
        self.link = bench_link.namespaces(a.rate, a.rtt_ms, self.start, os.path.join(HERE, "tun_delay.py"))
        ns_port = harness.free_port()
        nsdir = os.path.join(self.tmp, "ns")
        os.makedirs(nsdir)
        ns = self.start("omniNames", self.link.srv + omninames_argv("omniNames", ns_port, nsdir,
                                                                    self.link.server_host))
        self.naming = naming_url(self.link.server_host, ns_port)
        for _ in range(100):
            if nameclt_answers(self.naming, prefix=self.link.cli):
                break
            if not ns.running():
                raise RuntimeError("omniNames exited")
            time.sleep(0.1)
        capacity = f"memory:{max(256, 3 * a.size // MiB)}M"
        self.start("blobstored", self.link.srv + blobstored_argv(
            self.blobstored, "streams", capacity, self.naming, self.link.server_host,
            extra=["-q", "--socket-buffer", str(a.socket_buffer)]), ready=BLOBSTORED_READY.strip())
        src = os.path.join(self.tmp, "blob")
        harness.write_random(src, a.size, algorithm=None)
        self.run_blob("push", "--store", "streams", "--name", "B", src)
        want = harness.checksum_file(src, "crc32c")

        cases = [("pull", n) for n in STREAMS] + [("push", n) for n in STREAMS]
        records = []
        for run in range(a.runs + 1):  # run 0 untimed
            for direction, n in (cases if run % 2 == 0 else list(reversed(cases))):
                if direction == "pull":
                    out = os.path.join(self.tmp, "pulled")
                    seconds, j = self.run_blob("pull", "--store", "streams", "--streams", str(n), "B", out)
                    if j.get("streams") != n:
                        raise RuntimeError(f"pull --streams {n} ran over {j.get('streams')} streams")
                    if not filecmp.cmp(src, out, shallow=False):
                        raise RuntimeError(f"pull --streams {n}: the pulled bytes differ")
                    os.unlink(out)
                else:
                    seconds, j = self.run_blob("push", "--store", "streams", "--streams", str(n), "--replace",
                                               "--name", "B", src)
                    if j.get("streams") != n:
                        raise RuntimeError(f"push --streams {n} ran over {j.get('streams')} streams")
                    if j.get("checksum") != want:
                        raise RuntimeError(f"push --streams {n}: committed {j.get('checksum')}, the file has {want}")
                mbps = a.size / seconds / 1e6
                transfer = a.size / j["seconds"] / 1e6 if j.get("seconds") else None
                print(f"{'timed' if run else 'warm-up'} {direction} streams {n}: {seconds:.2f} s, {mbps:.1f} MB/s "
                      f"(transfer {j.get('seconds', 0):.2f} s, {transfer or 0:.1f} MB/s)", flush=True)
                if run:
                    records.append({"case": f"{direction}-{n}", "direction": direction, "streams": n, "run": run,
                                    "bytes": a.size, "seconds": seconds, "MBps": mbps,
                                    "transfer_seconds": j.get("seconds"), "transfer_MBps": transfer})
            if run:
                for p in (1, 4):
                    for direction, reverse in (("pull", True), ("push", False)):
                        mbps = self.iperf3(p, reverse)
                        print(f"iperf3 -P {p} {direction}: {mbps:.1f} MB/s", flush=True)
                        records.append({"case": f"iperf3-{direction}-P{p}", "direction": direction, "streams": p,
                                        "run": run, "MBps": mbps, "transfer_MBps": mbps})
        return records


def summarize(args, records, label):
    cases = []
    for r in records:
        if r["case"] not in cases:
            cases.append(r["case"])
    med = {c: statistics.median(r["MBps"] for r in records if r["case"] == c) for c in cases}
    tmed = {c: statistics.median(r["transfer_MBps"] for r in records if r["case"] == c) for c in cases}
    ratios = {}
    for d in ("pull", "push"):
        ratios[f"{d}_4_over_1"] = med[f"{d}-4"] / med[f"{d}-1"]
        ratios[f"{d}_4_over_iperf3_P4"] = med[f"{d}-4"] / med[f"iperf3-{d}-P4"]
        ratios[f"transfer_{d}_4_over_1"] = tmed[f"{d}-4"] / tmed[f"{d}-1"]
        ratios[f"transfer_{d}_4_over_iperf3_P4"] = tmed[f"{d}-4"] / tmed[f"iperf3-{d}-P4"]
    targets = {k: TARGET_OVER_ONE if k.endswith("over_1") else TARGET_OVER_IPERF for k in ratios}
    summary = {"link": label, "socket_buffer": args.socket_buffer, "blob_bytes": args.size, "runs": args.runs,
               "median_MBps": med, "median_transfer_MBps": tmed, "ratios": ratios, "targets": targets,
               "met": {k: ratios[k] >= targets[k] for k in ratios}}
    md = (f"Parallel streams, {label}, socket buffers {args.socket_buffer} bytes, {args.size} byte Blob, "
          f"medians of {args.runs} runs\n\n| case | median MB/s (process) | median MB/s (transfer) |\n"
          f"|---|---|---|\n" + "".join(f"| {c} | {med[c]:.1f} | {tmed[c]:.1f} |\n" for c in cases) + "\n" +
          "".join(f"- {k}: {ratios[k]:.2f} (target >= {targets[k]}: {'met' if summary['met'][k] else 'not met'})\n"
                  for k in ratios))
    return summary, md


def main():
    args = parse_args()
    os.environ["BS_BUILDDIR"] = os.path.abspath(args.build)  # the harness's checksum tool
    os.makedirs(args.out, exist_ok=True)
    bench = Bench(args)
    try:
        records = bench.main()
        label = bench.link.label
    except bench_link.LinkUnavailable as e:
        print(f"bench-streams: skipped: {e}")
        return 77
    finally:
        bench.close()
    summary, md = summarize(args, records, label)
    write_outputs(args.out, records, summary, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
