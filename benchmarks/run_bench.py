#!/usr/bin/env python3
"""Runs the push/pull benchmark suite and writes its results.

Starts, on 127.0.0.1 with ephemeral ports, one bsbench server per socket
variant (raw-c, ace, corba), omniNames and two blobstored daemons (a
MemoryStore and a FileStore) for the blobstreaming variant, and iperf3 as
the single-stream ceiling; runs every variant over every point (blob size or
series, direction, socket buffer) in this one invocation; stops every process
it started by its PID.

Writes into --out:
  results.json  {"machine": ..., "config": ..., "results": [one iperf3-shaped
                object per run, with variant, target, direction, blob_bytes,
                count, socket_buffer, link, run]}
  summary.json  median/min/max per point and the ratios to raw-c and iperf3
  summary.md    the same as a Markdown table

Exit status: 0 when every run of every variant moved the right bytes
(SHA-256 checked by bsbench outside the timed interval), 1 otherwise or when
a process failed. Speed never fails the run.
"""

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (read-only in distcheck)
import bench_link  # noqa: E402
import dcmtk_peer  # noqa: E402

MiB = 1 << 20

FULL = {
    "sizes": [MiB // 2, MiB, 8 * MiB, 16 * MiB, 32 * MiB, 256 * MiB],
    "series": [(MiB // 2, 200)],
    "buffers": ["8K", "64K", "256K", "4M", "auto"],
    "runs": 20,
    "iperf3_runs": 3,
    "iperf3_seconds": 2,
    "dcmtk_runs": 20,
}
QUICK = {
    "sizes": [MiB // 2, 32 * MiB],
    "series": [(MiB // 2, 200)],
    "buffers": ["auto", "64K"],
    "runs": 3,
    "iperf3_runs": 1,
    "iperf3_seconds": 1,
    "dcmtk_runs": 1,
}
# Links between namespaces are slower (155 Mbit/s) or delayed (20 ms RTT):
# fewer points, so that `make bench` stays within about 1.5 hours.
NET = {
    "sizes": [MiB // 2, 32 * MiB],
    "series": [(MiB // 2, 200)],
    "buffers": ["256K", "auto"],
    "runs": 3,
    "iperf3_runs": 3,
    "iperf3_seconds": 3,
    "dcmtk_runs": 1,
}
SOCKET_VARIANTS = ["raw-c", "ace", "corba"]
STORE_TARGETS = ["memory", "file"]
# Variant suffix: pulls with the client library's SHA-256 check off
# (bsbench --no-verify), to compare the transfer path alone with raw-c.
NO_VERIFY = "-noverify"
VARIANTS = SOCKET_VARIANTS + ["blobstreaming-" + t + s for t in STORE_TARGETS for s in ("", NO_VERIFY)] + \
    ["iperf3", "dcmtk"]


def log(message):
    print("run_bench: " + message, file=sys.stderr, flush=True)


def buffer_bytes(text):
    """'64K' -> 65536; 'auto' -> 0."""
    if text == "auto":
        return 0
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Process:
    """A child process started by this script, stopped by its PID."""

    def __init__(self, name, argv, ready=None, timeout=30.0, env=None, stdout_path=None):
        self.name = name
        self.argv = argv
        self.lines = []
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._err,
                                     stdin=subprocess.DEVNULL, text=True, env=env)
        self._ready = threading.Event()
        self._match = ready
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if ready is not None and not self._ready.wait(timeout):
            self.stop()
            raise RuntimeError("%s did not become ready within %.0f s: %s" % (name, timeout, self.stderr()))

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if self._match is not None and self._match in line:
                self._ready.set()

    def ready_line(self):
        for line in self.lines:
            if self._match in line:
                return line
        return ""

    def stderr(self):
        self._err.seek(0)
        return self._err.read().decode(errors="replace")[-2000:]

    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._reader.join(timeout=5)


def field(line, key):
    """Value of key=VALUE in a ready line."""
    for word in line.split():
        if word.startswith(key + "="):
            return word[len(key) + 1:]
    raise RuntimeError("no %s= in %r" % (key, line))


def peak_rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Suite:
    def __init__(self, args, plan):
        self.args = args
        self.plan = plan
        self.results = []
        self.failures = []
        self.rss = []
        self.tmp = tempfile.mkdtemp(prefix="bsbench.")
        self.processes = []
        self.link = bench_link.loopback()
        self.skipped = None
        self.host = self.link.server_host

    # ---- processes ------------------------------------------------------
    def start(self, *a, **kw):
        p = Process(*a, **kw)
        self.processes.append(p)
        return p

    def stop(self, p):
        p.stop()
        self.processes.remove(p)

    def stop_all(self):
        for p in list(reversed(self.processes)):
            if p in self.processes:
                self.stop(p)
        self.link.close()

    def start_naming(self):
        port = free_port()
        data = os.path.join(self.tmp, "ns")
        os.makedirs(data, exist_ok=True)
        p = self.start("omniNames", self.link.srv + [self.args.omninames, "-start", str(port), "-always",
                                                     "-datadir", data, "-errlog", os.path.join(data, "ns.err"),
                                                     "-ORBendPoint", "giop:tcp:%s:%d" % (self.host, port)])
        url = "corbaname::%s:%d" % (self.host, port)
        for _ in range(100):
            r = subprocess.run(self.link.cli + ["nameclt", "-ORBInitRef", "NameService=" + url, "list"],
                               capture_output=True, timeout=10)
            if r.returncode == 0:
                return p, port
            if p.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError("omniNames on port %d did not answer" % port)

    def start_store(self, target, buffer_text, ns_port, capacity):
        name = "bench-%s-%s" % (target, buffer_text.lower())
        store = "memory:%d" % capacity if target == "memory" else "file:" + os.path.join(self.tmp, name)
        argv = self.link.srv + [self.args.blobstored, "--name", name, "--store", store,
                                "--naming", "corbaname::%s:%d" % (self.host, ns_port),
                                "--control-address", self.host + ":0", "--data-address", self.host + ":0", "-q"]
        if buffer_bytes(buffer_text):
            argv += ["--socket-buffer", str(buffer_bytes(buffer_text))]
        p = self.start("blobstored " + name, argv, ready="blobstored ready", timeout=30)
        return p, name

    def start_bsbench_server(self, variant, buffer_text):
        argv = self.link.srv + [self.args.bsbench, "-s", "-B", self.host, "-p", "0", "--variant", variant,
                                "--socket-buffer", buffer_text, "--chunk", self.args.chunk]
        p = self.start("bsbench server " + variant, argv, ready="bsbench server ready", timeout=30)
        return p, int(field(p.ready_line(), "address").rsplit(":", 1)[1])

    # ---- clients --------------------------------------------------------
    def client(self, variant, port, direction, size, count, buffer_text, store=None, verify=True):
        argv = self.link.cli + [self.args.bsbench, "-c", self.host, "-p", str(port), "--variant", variant,
                                "--direction", direction, "--size", str(size), "--count", str(count),
                                "--runs", str(self.plan["runs"]), "--socket-buffer", buffer_text,
                                "--chunk", self.args.chunk, "--link", self.link.label, "-J"]
        if store:
            argv += ["--store", store]
        if not verify:
            argv.append("--no-verify")
        label = "%s%s%s %s %d x%d buffer %s" % (variant, "/" + store if store else "", "" if verify else NO_VERIFY,
                                                direction, size, count, buffer_text)
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=self.args.point_timeout)
        except subprocess.TimeoutExpired:
            self.failures.append(label + ": timed out after %d s" % self.args.point_timeout)
            log("FAIL " + self.failures[-1])
            return
        records = []
        for line in r.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                records.append(json.loads(line))
        bad = [rec for rec in records if "error" in rec or not rec.get("end", {}).get("sha256_verified", False)]
        for rec in records:
            if "start" in rec:
                self.results.append(rec)
        if r.returncode != 0 or bad or len([x for x in records if "start" in x]) != self.plan["runs"]:
            why = bad[0].get("error") if bad else (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
            self.failures.append("%s: exit %d: %s" % (label, r.returncode, why))
            log("FAIL " + self.failures[-1])
            return
        med = statistics.median(rec["end"]["sum_received"]["bits_per_second"] for rec in records) / 8e6
        log("%-55s median %9.1f MB/s" % (label, med))

    def iperf3(self, direction, buffer_text):
        for run in range(1, self.plan["iperf3_runs"] + 1):
            port = free_port()
            server = self.start("iperf3 -s", self.link.srv + ["iperf3", "-s", "-1", "-p", str(port), "-B", self.host])
            argv = self.link.cli + ["iperf3", "-c", self.host, "-p", str(port), "-J",
                                    "-t", str(self.plan["iperf3_seconds"])]
            if direction == "pull":
                argv.append("-R")
            if buffer_bytes(buffer_text):
                argv += ["-w", str(buffer_bytes(buffer_text))]
            rec = None
            for _attempt in range(50):  # the server may not listen yet
                r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
                try:
                    rec = json.loads(r.stdout)
                except ValueError:
                    rec = {"error": r.stderr.strip() or "no JSON"}
                if "error" not in rec or "connect" not in rec["error"] or server.proc.poll() is not None:
                    break
                time.sleep(0.1)
            self.stop(server)
            if "error" in rec:
                self.failures.append("iperf3 %s buffer %s: %s" % (direction, buffer_text, rec["error"]))
                log("FAIL " + self.failures[-1])
                return
            rec.update({"variant": "iperf3", "target": "none", "direction": direction, "blob_bytes": 0,
                        "count": 0, "socket_buffer": buffer_bytes(buffer_text) or "auto", "link": self.link.label,
                        "run": run})
            self.results.append(rec)
        log("%-55s %9.1f MB/s" % ("iperf3 %s buffer %s" % (direction, buffer_text),
                                  rec["end"]["sum_received"]["bits_per_second"] / 8e6))

    def check_the_checks(self):
        """Runs each socket variant against a server that flips a byte of every
        blob: every run must then fail its digest (exit 24), or the digest
        check itself is broken."""
        for variant in SOCKET_VARIANTS:
            if variant not in self.args.variants:
                continue
            p = self.start("bsbench corrupting server " + variant,
                           [self.args.bsbench, "-s", "-p", "0", "--variant", variant, "--corrupt"],
                           ready="bsbench server ready", timeout=30)
            port = int(field(p.ready_line(), "address").rsplit(":", 1)[1])
            for direction in self.args.directions:
                r = subprocess.run([self.args.bsbench, "-c", "127.0.0.1", "-p", str(port), "--variant", variant,
                                    "--direction", direction, "--size", "64K", "--runs", "2", "-J"],
                                   capture_output=True, text=True, timeout=60)
                recs = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
                caught = (r.returncode == 24 and len(recs) == 2 and
                          all(not x["end"]["sha256_verified"] and "wrong bytes" in x.get("error", "") for x in recs))
                if caught:
                    log("self-test %s %s: corrupted bytes detected (exit 24), as they must be" % (variant, direction))
                else:
                    self.failures.append("self-test %s %s: corrupted bytes NOT detected (exit %d)" % (
                        variant, direction, r.returncode))
                    log("FAIL " + self.failures[-1])
            self.stop(p)

    def dcmtk(self):
        """storescu -> storescp on the same points (push only), out of the box
        and tuned, on files of 512x512x16-bit frames."""
        missing = [t for t in ("storescu", "storescp", "echoscu") if shutil.which(t) is None]
        if missing:
            log("SKIP dcmtk: %s not found (Debian package dcmtk)" % ", ".join(missing))
            return
        if "push" not in self.args.directions:
            return
        frame = 512 * 512 * 2
        studies = []
        for size, count in self.points():
            if size % frame == 0:
                paths, digests = dcmtk_peer.make_study(os.path.join(self.tmp, "dicom"), "p%dx%d" % (size, count),
                                                       count, frame, size // frame)
                studies.append((size, count, paths, digests))
        for tuned in (False, True):
            port = free_port()
            out_dir = os.path.join(self.tmp, "storescp-%s" % ("tuned" if tuned else "default"))
            os.makedirs(out_dir, exist_ok=True)
            p = self.start("storescp", self.link.srv + dcmtk_peer.storescp_argv(port, out_dir, tuned),
                           env=dcmtk_peer.storescp_env(tuned))
            if not dcmtk_peer.wait_ready(self.link.cli, self.host, port):
                self.failures.append("storescp on port %d did not answer C-ECHO: %s" % (port, p.stderr()))
                self.stop(p)
                return
            for size, count, paths, digests in studies:
                label = "dcmtk/%s push %d x%d" % ("tuned" if tuned else "default", size, count)
                values = []
                for run in range(1, self.plan["dcmtk_runs"] + 1):
                    seconds, total, error = dcmtk_peer.send(self.link.cli, self.host, port, paths, out_dir, digests,
                                                            tuned, self.args.point_timeout)
                    rec = dcmtk_peer.record(seconds, total, error, size, count, tuned, self.link.label, run)
                    self.results.append(rec)
                    if error:
                        self.failures.append(label + ": " + error)
                        log("FAIL " + self.failures[-1])
                        break
                    values.append(rec["end"]["sum_received"]["bits_per_second"] / 8e6)
                if values:
                    log("%-55s median %9.1f MB/s" % (label, statistics.median(values)))
            self.stop(p)
        shutil.rmtree(os.path.join(self.tmp, "dicom"), ignore_errors=True)

    # ---- the suite ------------------------------------------------------
    def points(self):
        return [(size, 1) for size in self.plan["sizes"]] + list(self.plan["series"])

    def run(self):
        if self.args.quick:
            self.check_the_checks()
        if self.args.link != "loopback":
            try:
                self.link = bench_link.namespaces(
                    self.args.rate, self.args.rtt_ms,
                    lambda name, argv, ready: self.start(name, argv, ready=ready, timeout=30),
                    os.path.join(os.path.dirname(os.path.abspath(__file__)), "tun_delay.py"))
            except bench_link.LinkUnavailable as e:
                log("SKIP link %s: %s" % (self.args.link, e))
                self.skipped = str(e)
                return
            self.host = self.link.server_host
            log("link %s: servers on %s" % (self.link.label, self.host))
        variants = self.args.variants
        biggest = max(size * count for size, count in self.points())
        if "dcmtk" in variants:
            self.dcmtk()
        _, ns_port = self.start_naming()
        for buffer_text in self.plan["buffers"]:
            if "iperf3" in variants:
                for direction in self.args.directions:
                    self.iperf3(direction, buffer_text)
            for variant in SOCKET_VARIANTS:
                if variant not in variants:
                    continue
                server, port = self.start_bsbench_server(variant, buffer_text)
                for size, count in self.points():
                    for direction in self.args.directions:
                        self.client(variant, port, direction, size, count, buffer_text)
                self.stop(server)
            for target in STORE_TARGETS:
                verified = "blobstreaming-" + target in variants
                unverified = "blobstreaming-" + target + NO_VERIFY in variants and "pull" in self.args.directions
                if not verified and not unverified:
                    continue
                daemon, store = self.start_store(target, buffer_text, ns_port, 2 * biggest + 64 * MiB)
                for size, count in self.points():
                    for direction in self.args.directions:
                        if verified:
                            self.client("blobstreaming", ns_port, direction, size, count, buffer_text, store)
                    if unverified:
                        self.client("blobstreaming", ns_port, "pull", size, count, buffer_text, store, verify=False)
                self.rss.append({"target": target, "socket_buffer": buffer_text,
                                 "largest_blob_bytes": max(s for s, _ in self.points()),
                                 "peak_rss_kib": peak_rss_kib(daemon.pid())})
                self.stop(daemon)


def series_name(rec):
    if rec["variant"] in ("blobstreaming", "dcmtk"):
        return rec["variant"] + "/" + rec["target"] + ("" if rec.get("verify", True) else NO_VERIFY)
    return rec["variant"]


def summarize(results):
    groups = {}
    for rec in results:
        key = (rec["link"], series_name(rec), rec["direction"], rec["blob_bytes"], rec["count"],
               str(rec["socket_buffer"]))
        groups.setdefault(key, []).append(rec["end"]["sum_received"]["bits_per_second"] / 8e6)
    rows = []
    for key, values in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][5], kv[0][4], kv[0][3],
                                                                  kv[0][1])):
        link, name, direction, blob, count, buf = key
        rows.append({"link": link, "variant": name, "direction": direction, "blob_bytes": blob, "count": count,
                     "socket_buffer": buf, "runs": len(values), "median_MBps": statistics.median(values),
                     "min_MBps": min(values), "max_MBps": max(values)})
    index = {(r["link"], r["variant"], r["direction"], r["blob_bytes"], r["count"], r["socket_buffer"]): r
             for r in rows}
    for r in rows:
        raw = index.get((r["link"], "raw-c", r["direction"], r["blob_bytes"], r["count"], r["socket_buffer"]))
        ceiling = index.get((r["link"], "iperf3", r["direction"], 0, 0, r["socket_buffer"]))
        r["ratio_to_raw_c"] = r["median_MBps"] / raw["median_MBps"] if raw and raw["median_MBps"] else None
        r["ratio_to_iperf3"] = (r["median_MBps"] / ceiling["median_MBps"]
                                if ceiling and ceiling["median_MBps"] else None)
        dicom = index.get((r["link"], "dcmtk/default", r["direction"], r["blob_bytes"], r["count"], "auto"))
        r["ratio_to_dcmtk_default"] = (r["median_MBps"] / dicom["median_MBps"]
                                       if dicom and dicom["median_MBps"] else None)
    return rows


def size_text(n):
    if n == 0:
        return "-"
    if n % MiB == 0:
        return "%d MiB" % (n // MiB)
    return "%g MiB" % (n / MiB)


def markdown(rows, rss):
    out = ["| link | direction | buffer | blob | count | variant | runs | median MB/s | min | max | ×raw-c | ×iperf3 "
           "| ×dcmtk |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fmt = lambda v: "%.2f" % v if v is not None else "-"  # noqa: E731
        out.append("| %s | %s | %s | %s | %s | %s | %d | %.1f | %.1f | %.1f | %s | %s | %s |" % (
            r["link"], r["direction"], r["socket_buffer"], size_text(r["blob_bytes"]), r["count"] or "-",
            r["variant"], r["runs"], r["median_MBps"], r["min_MBps"], r["max_MBps"], fmt(r["ratio_to_raw_c"]),
            fmt(r["ratio_to_iperf3"]), fmt(r["ratio_to_dcmtk_default"])))
    if rss:
        out += ["", "| blobstored target | buffer | largest blob | peak RSS (VmHWM) |", "|---|---|---|---|"]
        for x in rss:
            out.append("| %s | %s | %s | %s |" % (x["target"], x["socket_buffer"], size_text(x["largest_blob_bytes"]),
                                                 "%.1f MiB" % (x["peak_rss_kib"] / 1024) if x["peak_rss_kib"] else "-"))
    return "\n".join(out) + "\n"


# The goals, reported (never asserted): (label, variant, direction,
# blob_bytes, count, ratio key, goal).
TARGETS = [
    ("push 32 MiB, MemoryStore", "blobstreaming/memory", "push", 32 * MiB, 1, "ratio_to_raw_c", 0.95),
    ("pull 32 MiB, MemoryStore", "blobstreaming/memory", "pull", 32 * MiB, 1, "ratio_to_raw_c", 0.95),
    ("push 32 MiB, FileStore", "blobstreaming/file", "push", 32 * MiB, 1, "ratio_to_raw_c", 0.95),
    ("pull 32 MiB, FileStore (sendfile)", "blobstreaming/file", "pull", 32 * MiB, 1, "ratio_to_raw_c", 1.0),
    ("pull 32 MiB, FileStore (sendfile), library's SHA-256 check off", "blobstreaming/file" + NO_VERIFY, "pull",
     32 * MiB, 1, "ratio_to_raw_c", 1.0),
    ("push 200 x 0.5 MiB, MemoryStore", "blobstreaming/memory", "push", MiB // 2, 200, "ratio_to_raw_c", 0.8),
    ("pull 200 x 0.5 MiB, MemoryStore", "blobstreaming/memory", "pull", MiB // 2, 200, "ratio_to_raw_c", 0.8),
    ("push 200 x 0.5 MiB, FileStore", "blobstreaming/file", "push", MiB // 2, 200, "ratio_to_raw_c", 0.8),
    ("push 200 x 0.5 MiB, MemoryStore vs DCMTK out of the box", "blobstreaming/memory", "push", MiB // 2, 200,
     "ratio_to_dcmtk_default", 20.0),
    ("push 200 x 0.5 MiB, FileStore vs DCMTK out of the box", "blobstreaming/file", "push", MiB // 2, 200,
     "ratio_to_dcmtk_default", 20.0),
    ("push 32 MiB, MemoryStore vs iperf3 (delayed links)", "blobstreaming/memory", "push", 32 * MiB, 1,
     "ratio_to_iperf3", 0.9),
    ("pull 32 MiB, MemoryStore vs iperf3 (delayed links)", "blobstreaming/memory", "pull", 32 * MiB, 1,
     "ratio_to_iperf3", 0.9),
]


def targets(rows, rss):
    """Markdown: each goal of the issue at default ("auto") buffers, as measured."""
    out = ["| goal | link | measured | goal | met |", "|---|---|---|---|---|"]
    for label, variant, direction, blob, count, key, goal in TARGETS:
        for r in rows:
            if (r["variant"], r["direction"], r["blob_bytes"], r["count"], r["socket_buffer"]) != \
                    (variant, direction, blob, count, "auto"):
                continue
            if key == "ratio_to_iperf3" and "rtt" not in r["link"]:
                continue
            if r.get(key) is None:
                continue
            out.append("| %s | %s | %.3f × %s | ≥ %g | %s |" % (
                label, r["link"], r[key], key[len("ratio_to_"):].replace("_", "-"), goal,
                "yes" if r[key] >= goal else "**no**"))
    for x in rss:
        if x["target"] == "file" and x["socket_buffer"] == "auto" and x["peak_rss_kib"]:
            mib = x["peak_rss_kib"] / 1024
            out.append("| blobstored (FileStore) peak RSS, largest blob %s | - | %.1f MiB | ≤ 64 MiB for 256 MiB | %s |" % (
                size_text(x["largest_blob_bytes"]), mib,
                ("yes" if mib <= 64 else "**no**") if x["largest_blob_bytes"] >= 256 * MiB else "not measured (no 256 MiB blob)"))
    return "\n".join(out) + "\n"


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"hostname": platform.node(), "kernel": platform.release(), "cpu": cpu, "cpus": os.cpu_count(),
            "python": platform.python_version(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bsbench", required=True)
    ap.add_argument("--blobstored", required=True)
    ap.add_argument("--omninames", default=shutil.which("omniNames") or "/usr/bin/omniNames")
    ap.add_argument("--out", default="bench-results")
    ap.add_argument("--quick", action="store_true", help="smoke run: few sizes and runs (CI)")
    ap.add_argument("--plan", choices=["full", "quick", "net"], default="full",
                    help="points to run: full (default), quick (= --quick), net (for --link netns)")
    ap.add_argument("--runs", type=int, help="runs per point (default 20; quick 3)")
    ap.add_argument("--sizes", help="comma-separated blob sizes, e.g. 512K,32M")
    ap.add_argument("--buffers", help="comma-separated socket buffers, e.g. 64K,auto")
    ap.add_argument("--no-series", action="store_true", help="skip the 200 x 0.5 MiB series")
    ap.add_argument("--variants", default="raw-c,ace,corba,blobstreaming-memory,blobstreaming-file,"
                    "blobstreaming-file" + NO_VERIFY + ",iperf3,dcmtk",
                    help="comma-separated, from: " + ",".join(VARIANTS) + "; the " + NO_VERIFY +
                    " ones pull with the client library's SHA-256 check off (bsbench --no-verify)")
    ap.add_argument("--directions", default="push,pull")
    ap.add_argument("--chunk", default="1M", help="bytes per read/write or CORBA call (bsbench --chunk)")
    ap.add_argument("--link", default="loopback", choices=["loopback", "netns"],
                    help="netns: two network namespaces (root), veth or, with --rtt-ms, TUN + tun_delay.py")
    ap.add_argument("--rate", default="", help="netns: tc tbf rate on both ends, e.g. 1gbit or 155mbit")
    ap.add_argument("--rtt-ms", type=float, default=0.0, help="netns: added round-trip time (TUN forwarder)")
    ap.add_argument("--point-timeout", type=int, default=900, help="seconds per client invocation")
    args = ap.parse_args()
    args.variants = args.variants.split(",")
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        ap.error("--variants: unknown %s; allowed: %s" % (",".join(unknown), ",".join(VARIANTS)))
    args.directions = args.directions.split(",")

    if args.quick:
        args.plan = "quick"
    args.quick = args.plan == "quick"
    plan = dict({"full": FULL, "quick": QUICK, "net": NET}[args.plan])
    if args.runs:
        plan["runs"] = args.runs
        plan["dcmtk_runs"] = min(plan["dcmtk_runs"], args.runs)
    if args.sizes:
        plan["sizes"] = [buffer_bytes(s) for s in args.sizes.split(",")]
    if args.buffers:
        plan["buffers"] = args.buffers.split(",")
    if args.no_series:
        plan["series"] = []

    for tool in ("nameclt", "iperf3") if "iperf3" in args.variants else ("nameclt",):
        if shutil.which(tool) is None:
            log("%s not found in PATH" % tool)
            return 1

    os.makedirs(args.out, exist_ok=True)
    suite = Suite(args, plan)
    started = time.monotonic()
    try:
        suite.run()
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        suite.failures.append(str(e))
        log("FAIL " + str(e))
    finally:
        suite.stop_all()
        shutil.rmtree(suite.tmp, ignore_errors=True)

    rows = summarize(suite.results)
    doc = {"machine": machine(), "config": {"plan": plan, "variants": args.variants, "directions": args.directions,
                                            "link": suite.link.label, "quick": args.quick,
                                            "skipped": suite.skipped},
           "results": suite.results}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(doc, f)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"machine": doc["machine"], "summary": rows, "blobstored_peak_rss": suite.rss,
                   "failures": suite.failures}, f, indent=1)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(markdown(rows, suite.rss))
        f.write("\nGoals of the issue (default buffers; reported, not asserted):\n\n" + targets(rows, suite.rss))
    log("%d runs in %.0f s; wrote %s/{results.json,summary.json,summary.md}" % (
        len(suite.results), time.monotonic() - started, args.out))
    if suite.failures:
        log("%d FAILURES (wrong bytes or failed transfers):" % len(suite.failures))
        for failure in suite.failures:
            log("  " + failure)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
