"""Runs the benchmark's points with the test harness (tests/harness): one
bsbench server per socket variant, omniNames and blobstored daemons for the
blobstreaming variants, iperf3 and DCMTK as references, every process
stopped by its PID. Results are iperf3-shaped records (bench_schema). Then
the whole-program steps of bench_cli.py on the same Naming Service."""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
import bench_cli  # noqa: E402
import bench_link  # noqa: E402
import bench_paced  # noqa: E402
import bench_summary  # noqa: E402
import dcmtk_peer  # noqa: E402
import harness  # noqa: E402
from bench_plan import SOCKET_VARIANTS, STORE_TARGETS, buffer_bytes, directions_of, point_runs, points  # noqa: E402
from bench_schema import MiB, NO_VERIFY, megabytes_per_second, size_text  # noqa: E402
from harness.daemons import READY as BLOBSTORED_READY, blobstored_argv  # noqa: E402
from harness.naming import naming_url, nameclt_answers, omninames_argv  # noqa: E402

BSBENCH_READY = "bsbench server ready"


def log(message):
    print("run_bench: " + message, file=sys.stderr, flush=True)


def peak_rss_kib(pid):
    """VmHWM of a running process in KiB, or None when /proc cannot tell."""
    try:
        return harness.peak_rss_kib(pid)
    except (OSError, harness.TestFailure):
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
        self.link_label = self.link.label  # also when a netns link could not be built
        self.skipped = None
        self.skipped_steps = {}  # {step: why} (bench_schema.STEPS)
        self.same_host = []  # bench_schema SAME_HOST records
        self.cli = []  # CLI records
        self.cli_rss = None  # CLI_RSS record
        self.host = self.link.server_host

    # ---- processes ------------------------------------------------------
    def start(self, name, argv, ready=None, timeout=30.0, env=None):
        """Starts a tracked process (stdout and stderr logged under the
        suite's directory); with `ready`, waits for its line starting so."""
        base = os.path.join(self.tmp, "%s-%d" % (re.sub(r"[^A-Za-z0-9.-]+", "-", name), len(self.processes)))
        try:
            p = harness.start_service(name, argv, ready, timeout, env=env, out_path=base + ".out",
                                      err_path=base + ".err", text=True, track=self.processes)
        except harness.TestFailure as e:
            raise RuntimeError("%s: %s" % (e, self.stderr_tail(self.processes[-1]))) from None
        return p

    @staticmethod
    def stderr_tail(p):
        with open(p.log_paths[1], errors="replace") as f:  # [stdout, stderr] (start_service)
            return f.read()[-2000:]

    def stop(self, p):
        p.stop(timeout=10)
        self.processes.remove(p)

    def stop_all(self):
        for p in list(reversed(self.processes)):
            if p in self.processes:
                self.stop(p)
        self.link.close()

    def start_naming(self):
        port = harness.free_port()
        data = os.path.join(self.tmp, "ns")
        os.makedirs(data, exist_ok=True)
        p = self.start("omniNames", self.link.srv + omninames_argv(self.args.omninames, port, data, self.host))
        url = naming_url(self.host, port)
        for _ in range(100):
            if nameclt_answers(url, prefix=self.link.cli):
                return p, port
            if not p.running():
                break
            time.sleep(0.1)
        raise RuntimeError("omniNames on port %d did not answer" % port)

    def start_store(self, target, buffer_text, ns_port, capacity, name=None, extra=()):
        """A blobstored (-q) named `name` (default after target and buffer),
        its FileStore in the suite's directory; returns (Service, name)."""
        name = name or "bench-%s-%s" % (target, buffer_text.lower())
        store = "memory:%d" % capacity if target == "memory" else "file:" + os.path.join(self.tmp, name)
        extra = ["-q"] + list(extra)
        if buffer_bytes(buffer_text):
            extra += ["--socket-buffer", str(buffer_bytes(buffer_text))]
        argv = self.link.srv + blobstored_argv(self.args.blobstored, name, store, naming_url(self.host, ns_port),
                                               self.host, extra=extra)
        return self.start("blobstored " + name, argv, ready=BLOBSTORED_READY.strip(), timeout=30), name

    def start_bsbench_server(self, variant, buffer_text, corrupt=False):
        if corrupt:  # on loopback, without the link: the self-test
            argv = [self.args.bsbench, "-s", "-p", "0", "--variant", variant, "--corrupt"]
        else:
            argv = self.link.srv + [self.args.bsbench, "-s", "-B", self.host, "-p", "0", "--variant", variant,
                                    "--socket-buffer", buffer_text, "--chunk", self.args.chunk]
        if variant == "raw-c-durable":  # its files on the FileStores' file system
            argv += ["--dir", self.tmp]
        p = self.start("bsbench %sserver %s" % ("corrupting " if corrupt else "", variant), argv,
                       ready=BSBENCH_READY, timeout=30)
        return p, int(p.ready["address"].rsplit(":", 1)[1])

    def fail(self, message):
        self.failures.append(message)
        log("FAIL " + message)

    # ---- clients --------------------------------------------------------
    def client_argv(self, variant, port, direction, size, count, buffer_text, store=None, verify=True):
        """(label, argv) of one bsbench client of the point's runs (point_runs)."""
        argv = self.link.cli + [self.args.bsbench, "-c", self.host]
        if port is not None:  # memcpy has no server
            argv += ["-p", str(port)]
        argv += ["--variant", variant, "--direction", direction, "--size", str(size), "--count", str(count),
                 "--runs", str(point_runs(self.plan, size, count)), "--socket-buffer", buffer_text,
                 "--chunk", self.args.chunk, "--link", self.link.label, "-J"]
        if store:
            argv += ["--store", store]
        if not verify:
            argv.append("--no-verify")
        return bench_paced.client_label(variant, store, verify, direction, size, count, buffer_text), argv

    def iperf3(self, direction, buffer_text):
        for run in range(1, self.plan["iperf3_runs"] + 1):
            port = harness.free_port()
            server = self.start("iperf3 -s", self.link.srv + ["iperf3", "-s", "-1", "-p", str(port), "-B", self.host])
            argv = self.link.cli + ["iperf3", "-c", self.host, "-p", str(port), "-J",
                                    "-t", str(self.plan["iperf3_seconds"])]
            if direction == "pull":
                argv.append("-R")
            if buffer_bytes(buffer_text):
                argv += ["-w", str(buffer_bytes(buffer_text))]
            rec = bench_link.iperf3_client(argv, server, 60)
            self.stop(server)
            if "error" in rec:
                return self.fail("iperf3 %s buffer %s: %s" % (direction, buffer_text, rec["error"]))
            rec.update({"variant": "iperf3", "target": "none", "direction": direction, "blob_bytes": 0,
                        "count": 0, "socket_buffer": buffer_bytes(buffer_text) or "auto", "link": self.link.label,
                        "run": run})
            self.results.append(rec)
        log("%-55s %9.1f MB/s" % ("iperf3 %s buffer %s" % (direction, buffer_text), megabytes_per_second(rec)))

    def check_the_checks(self):
        """Runs each socket variant against a server that flips a byte of every
        blob: every run must then fail its digest (exit 24), or the digest
        check itself is broken."""
        for variant in SOCKET_VARIANTS:
            if variant not in self.args.variants:
                continue
            p, port = self.start_bsbench_server(variant, None, corrupt=True)
            for direction in directions_of(variant, self.args.directions):
                r = subprocess.run([self.args.bsbench, "-c", "127.0.0.1", "-p", str(port), "--variant", variant,
                                    "--direction", direction, "--size", "64K", "--runs", "2", "-J"],
                                   capture_output=True, text=True, timeout=60)
                recs = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
                caught = (r.returncode == 24 and len(recs) == 2 and
                          all(not x["end"]["sha256_verified"] and "wrong bytes" in x.get("error", "") for x in recs))
                if caught:
                    log("self-test %s %s: corrupted bytes detected (exit 24), as they must be" % (variant, direction))
                else:
                    self.fail("self-test %s %s: corrupted bytes NOT detected (exit %d)" % (
                        variant, direction, r.returncode))
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
        for size, count in points(self.plan):
            if size % frame == 0:
                paths, digests = dcmtk_peer.make_study(os.path.join(self.tmp, "dicom"), "p%dx%d" % (size, count),
                                                       count, frame, size // frame)
                studies.append((size, count, paths, digests))
        for tuned in (False, True):
            port = harness.free_port()
            out_dir = os.path.join(self.tmp, "storescp-%s" % ("tuned" if tuned else "default"))
            os.makedirs(out_dir, exist_ok=True)
            p = self.start("storescp", self.link.srv + dcmtk_peer.storescp_argv(port, out_dir, tuned),
                           env=dcmtk_peer.storescp_env(tuned))
            if not dcmtk_peer.wait_ready(self.link.cli, self.host, port):
                self.failures.append("storescp on port %d did not answer C-ECHO: %s" % (port, self.stderr_tail(p)))
                self.stop(p)
                return
            for size, count, paths, digests in studies:
                label = "dcmtk/%s push %d x%d" % ("tuned" if tuned else "default", size, count)
                values = []
                for run in range(1, self.plan["dcmtk_runs"] + 1):
                    seconds, total, error, timed = dcmtk_peer.send(self.link.cli, self.host, port, paths, out_dir,
                                                                   digests, tuned, self.args.point_timeout)
                    rec = dcmtk_peer.record(seconds, total, error, size, count, tuned, self.link.label, run, timed)
                    if timed != "association":
                        log("%s run %d: storescu's log did not show its association; timed the whole process "
                            "(start-up included)" % (label, run))
                    self.results.append(rec)
                    if error:
                        self.fail(label + ": " + error)
                        break
                    values.append(megabytes_per_second(rec))
                if values:
                    log("%-55s median %9.1f MB/s" % (label, statistics.median(values)))
            self.stop(p)
        shutil.rmtree(os.path.join(self.tmp, "dicom"), ignore_errors=True)

    # ---- the suite ------------------------------------------------------
    def run(self):
        if self.args.quick and "points" in self.args.steps:
            self.check_the_checks()
        if self.args.link != "loopback":
            self.link_label = bench_link.namespaces_label(self.args.rate, self.args.rtt_ms)
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
        _, ns_port = self.start_naming()
        if "points" in self.args.steps:
            self.run_points(ns_port)
        else:
            self.skipped_steps["points"] = "not run (--steps)"
        for step in ("same-host", "cli"):
            self.program_step(step, ns_port)

    def run_points(self, ns_port):
        """Every variant at every point of the plan; at each point the runs
        of the variants interleaved (bench_paced.py), every server already
        running."""
        variants = self.args.variants
        biggest = max(size * count for size, count in points(self.plan))
        if "dcmtk" in variants:
            self.dcmtk()
        for buffer_text in self.plan["buffers"]:
            if "iperf3" in variants:
                for direction in self.args.directions:
                    self.iperf3(direction, buffer_text)
            servers = {}  # variant: (process, port)
            for variant in SOCKET_VARIANTS:
                if variant in variants and directions_of(variant, self.args.directions):
                    servers[variant] = self.start_bsbench_server(variant, buffer_text)
            stores = {}  # target: (daemon, store name)
            for target in STORE_TARGETS:
                if any(v in variants for v in ("blobstreaming-" + target, "blobstreaming-" + target + NO_VERIFY)):
                    stores[target] = self.start_store(target, buffer_text, ns_port, 2 * biggest + 64 * MiB)
            for size, count in points(self.plan):
                for direction in self.args.directions:
                    clients = self.point_clients(servers, stores, direction, size, count, buffer_text, ns_port)
                    self.results += bench_paced.interleave(clients, point_runs(self.plan, size, count),
                                                           self.args.point_timeout, log, self.fail)
            for target, (daemon, _) in stores.items():
                self.rss.append({"target": target, "socket_buffer": buffer_text,
                                 "largest_blob_bytes": max(s for s, _ in points(self.plan)),
                                 "peak_rss_kib": peak_rss_kib(daemon.pid)})
                self.stop(daemon)
            for server, _ in servers.values():
                self.stop(server)

    def point_clients(self, servers, stores, direction, size, count, buffer_text, ns_port):
        """[(label, argv, server pid or None)] of every variant at one point
        and direction, in the order of VARIANTS."""
        out = []
        for variant, (server, port) in servers.items():
            if direction in directions_of(variant, [direction]):
                out.append(self.client_argv(variant, port, direction, size, count, buffer_text) + (server.pid,))
        for target, (daemon, store) in stores.items():
            for verify in (True, False):
                if "blobstreaming-" + target + ("" if verify else NO_VERIFY) not in self.args.variants:
                    continue
                if verify or direction == "pull":
                    out.append(self.client_argv("blobstreaming", ns_port, direction, size, count, buffer_text,
                                                store, verify) + (daemon.pid,))
        if "memcpy" in self.args.variants:
            out.append(self.client_argv("memcpy", None, direction, size, count, buffer_text) + (None,))
        return out

    def program_step(self, step, ns_port):
        """One whole-program step of bench_cli.py, when the plan, --steps,
        the link and the programs allow it (else why not, in skipped_steps);
        a failure fails the run and ends this step only."""
        programs = {"same-host": [self.args.blob, self.args.bsbench], "cli": [self.args.blob, self.args.plain_pair]}
        missing = [p for p in programs[step] if not os.access(p, os.X_OK)]
        why = ("not run (--steps)" if step not in self.args.steps else
               "not in the %s plan" % self.args.plan if not self.plan[step] else
               "loopback only (this run: link %s)" % self.link_label if self.link_label != "loopback" else
               "%s not built (make bench builds it)" % ", ".join(missing) if missing else None)
        if why:
            log("SKIP step %s: %s" % (step, why))
            self.skipped_steps[step] = why
            return
        size, runs = self.plan[step]
        started = time.monotonic()
        try:
            if step == "same-host":
                self.same_host = bench_cli.same_host_pull(self, ns_port, size, runs)
            else:
                self.cli, self.cli_rss = bench_cli.cli_transfers(self, ns_port, size, runs)
        except (RuntimeError, OSError, subprocess.SubprocessError, harness.TestFailure) as e:
            return self.fail("step %s: %s" % (step, e))
        log("step %s: %s x %d runs in %.0f s" % (step, size_text(size), runs, time.monotonic() - started))
        if step == "same-host":
            for r in bench_summary.same_host_rows(self.same_host):
                log("same-host pull to %-6s %s: TCP %.3f s, same-host %.3f s (medians): %.2f x TCP" % (
                    r["destination"], size_text(size), r["tcp_median_s"], r["local_median_s"], r["ratio_to_tcp"]))
        else:
            for r in bench_summary.cli_rows(self.cli):
                log("blob %s %s: %.3f s, plain_pair %.3f s (medians, whole processes): %.2f x plain_pair" % (
                    r["direction"], size_text(size), r["blob_median_s"], r["plain_pair_median_s"],
                    r["ratio_to_plain_pair"]))
            log("blobstored (FileStore) peak RSS after the cli step: %.1f MiB" % (self.cli_rss["peak_rss_kib"] / 1024))
