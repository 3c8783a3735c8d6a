#!/usr/bin/env python3
"""Compression on the wire (`blob push/pull --compress`): a series of
synthetic CT slices (tests/harness ct_slice: 512 x 512 x 16 bit with the
noise of a routine dose, ~2.2x with zstd -1) as one Blob, pushed and pulled
with `--compress none`, `zstd` and `auto`, alternating in each round, on
loopback and on an emulated link (two network namespaces joined by a veth
pair rate-limited with tc tbf, bench_link.namespaces; root only: skipped
with a message otherwise).

Whole processes: the `blob` CLI in the client namespace against a
blobstored MemoryStore in the server namespace, pulls over TCP
(--no-local) to a file. The figure of each transfer is the CLI's own
`seconds` (the data connection, after the control round trips); one
untimed round first on each link (--warmup).

Output (--out FILE): iperf3-shaped JSON, `start` (the parameters),
`intervals` (one record per transfer: variant compress-MODE, direction,
link, blob_bytes, seconds, MBps, compression, wire_bytes, round) and `end`
(per link and direction, the median seconds of each mode and the speed-ups
zstd/none and auto/none, each ratio from the same invocation's medians).
The goals (issue 36): zstd at least 1.8x on the 155 Mbit/s link, auto
never slower than none on loopback; printed, never asserted."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
sys.path.insert(0, HERE)
import bench_link  # noqa: E402
import harness  # noqa: E402
from harness.daemons import READY as BLOBSTORED_READY, blobstored_argv  # noqa: E402
from harness.naming import naming_url, nameclt_answers, omninames_argv  # noqa: E402

MODES = ("none", "zstd", "auto")


def log(message):
    print("bench_compress: " + message, file=sys.stderr, flush=True)


class Run:
    """omniNames and one blobstored on a link; every process stopped by PID."""

    def __init__(self, args, link, tmp):
        self.args, self.link, self.tmp = args, link, tmp
        self.processes = []
        port = harness.free_port()
        data = os.path.join(tmp, "ns-" + link.label)
        os.makedirs(data, exist_ok=True)
        self.start("omniNames", link.srv + omninames_argv(args.omninames, port, data, link.server_host), None)
        self.naming = naming_url(link.server_host, port)
        harness.wait_for(lambda: nameclt_answers(self.naming, prefix=link.cli), 30, "omniNames answers")
        argv = link.srv + blobstored_argv(os.path.join(args.build, "blobstore/blobstored"), "bench-compress",
                                          "memory:%d" % (4 * args.slices * 512 * 1024 + (64 << 20)), self.naming,
                                          link.server_host, extra=["-q"])
        self.start("blobstored", argv, BLOBSTORED_READY.strip())

    def start(self, name, argv, ready):
        base = os.path.join(self.tmp, "%s-%s-%d" % (name, self.link.label, len(self.processes)))
        harness.start_service(name, argv, ready, 30, out_path=base + ".out", err_path=base + ".err", text=True,
                              track=self.processes)

    def blob(self, *args):
        argv = self.link.cli + [os.path.join(self.args.build, "clients/blob"), "--naming", self.naming, "--store",
                                "bench-compress", "--json"] + [str(a) for a in args]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise RuntimeError("`%s` exited %d: %s" % (" ".join(argv), r.returncode, r.stderr.strip()))
        return json.loads(r.stdout)

    def stop(self):
        for p in reversed(self.processes):
            p.stop(timeout=10)
        self.processes = []


def measure(args, link, src, size, tmp):
    records = []
    run = Run(args, link, tmp)
    try:
        out = os.path.join(tmp, "pulled")
        for round_ in range(-args.warmup, args.rounds):
            for mode in MODES:
                pushed = run.blob("push", "--replace", "--compress", mode, "--name", "CT.series", src)
                pulled = run.blob("--no-local", "pull", "--compress", mode, "CT.series", out)
                if os.path.getsize(out) != size:
                    raise RuntimeError("pull --compress %s: %d bytes, expected %d" % (mode, os.path.getsize(out), size))
                os.remove(out)
                if round_ < 0:
                    continue  # warm-up: not recorded
                for direction, r in (("push", pushed), ("pull", pulled)):
                    records.append({"variant": "compress-" + mode, "direction": direction, "link": link.label,
                                    "blob_bytes": size, "seconds": r["seconds"], "MBps": r["MBps"],
                                    "compression": r.get("compression"), "wire_bytes": r.get("wire_bytes"),
                                    "round": round_})
                log("%s round %d --compress %s: push %.2f MB/s (%s), pull %.2f MB/s (%s)" % (
                    link.label, round_, mode, pushed["MBps"], pushed.get("compression"), pulled["MBps"],
                    pulled.get("compression")))
    finally:
        run.stop()
    return records


def summarize(records):
    rows = []
    for link in sorted({r["link"] for r in records}):
        for direction in ("push", "pull"):
            median = {}
            for mode in MODES:
                secs = [r["seconds"] for r in records
                        if r["link"] == link and r["direction"] == direction and r["variant"] == "compress-" + mode]
                if secs:
                    median[mode] = statistics.median(secs)
            if "none" not in median:
                continue
            row = {"link": link, "direction": direction,
                   "median_seconds": median,
                   "speedup_zstd": median["none"] / median["zstd"] if "zstd" in median else None,
                   "speedup_auto": median["none"] / median["auto"] if "auto" in median else None}
            rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build tree (blobstore/blobstored, clients/blob)")
    ap.add_argument("--omninames", default="omniNames")
    ap.add_argument("--out", required=True, help="the JSON file to write")
    ap.add_argument("--rate", default="155mbit", help="tc tbf rate of the emulated link (default 155mbit)")
    ap.add_argument("--slices", type=int, default=96, help="CT slices of 0.5 MiB in the Blob (default 96)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each mode once per round (default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed rounds first on each link (default 1)")
    ap.add_argument("--links", default="loopback,netns", help="loopback, netns or both (default)")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="bench-compress.")
    try:
        src = os.path.join(tmp, "ct-series.raw")
        size = harness.write_ct_slices(src, args.slices)
        log("%d CT slices, %d bytes" % (args.slices, size))
        records, skipped = [], {}
        for which in args.links.split(","):
            if which == "loopback":
                link = bench_link.loopback()
            else:
                try:
                    link = bench_link.namespaces(args.rate, 0, None, None)
                except bench_link.LinkUnavailable as e:
                    skipped[bench_link.namespaces_label(args.rate, 0)] = str(e)
                    log("skipped the %s link: %s" % (args.rate, e))
                    continue
            try:
                records += measure(args, link, src, size, tmp)
            finally:
                link.close()
        summary = summarize(records)
        doc = {"start": {"test": "compress", "slices": args.slices, "blob_bytes": size, "rounds": args.rounds,
                         "warmup": args.warmup,
                         "rate": args.rate, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
               "intervals": records, "end": {"summary": summary, "skipped": skipped}}
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
        for row in summary:
            m = row["median_seconds"]
            log("%s %s: none %.3f s, zstd %.3f s (%.2fx), auto %.3f s (%.2fx)" % (
                row["link"], row["direction"], m["none"], m.get("zstd", 0), row["speedup_zstd"] or 0,
                m.get("auto", 0), row["speedup_auto"] or 0))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
