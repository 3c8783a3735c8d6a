"""Interleaved runs of one point: every variant's bsbench client is started
with --paced and opened and warmed up one after the other (its one untimed
transaction), then the driver asks for run 1 of each, run 2 of each, and so
on, the order rotated every round (ABC, BCA, CAB, ...). A change of load on
the machine (other processes on the same cores, CPU frequency, steal) then
falls on every variant alike instead of on whichever ran its runs at that
moment, and the runs of one round can be compared pairwise. Each record also
gets the CPU time its server (bsbench server, blobstored) spent during that
run's timed interval (bsbench prints a line when it ends, before its
untimed digests): /proc/PID/task/*/schedstat and /proc/PID/stat."""

import json
import os
import select
import statistics
import subprocess
import tempfile
import time

from bench_schema import NO_VERIFY, megabytes_per_second

READY = "bsbench client ready"
TIMED = "bsbench run timed"  # the timed interval of a run is over; its digests follow
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """(total, user, system) CPU seconds of process `pid` so far, or None
    when /proc cannot tell: the total exact (the sum of its live threads'
    run time, /proc/PID/task/*/schedstat), user and system in clock ticks
    (/proc/PID/stat, 10 ms: meaningful only summed over many runs)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total = 0
        for task in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
                    total += int(f.read().split()[0])
            except OSError:
                pass  # a thread that ended meanwhile
        return total / 1e9, int(fields[11]) / CLOCK_TICKS, int(fields[12]) / CLOCK_TICKS  # utime, stime (proc(5))
    except (OSError, IndexError, ValueError):
        return None


class PacedClient:
    """One bsbench client process started with --paced."""

    def __init__(self, label, argv, server_pid, timeout):
        self.label = label
        self.server_pid = server_pid
        self.timeout = timeout
        self.runs = 0
        self.values = []  # MB/s of each run
        self.failed = None  # why, once it failed
        self.err = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen(argv + ["--paced"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err)
        self.pending = b""

    def _line(self, deadline):
        """The next line of its standard output, None at EOF or after `deadline`."""
        fd = self.p.stdout.fileno()
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode(errors="replace").strip()

    def wait_ready(self):
        deadline = time.monotonic() + self.timeout
        while True:
            line = self._line(deadline)
            if line == READY:
                return True
            if line is None or line.startswith("{"):  # EOF, timeout, or its error record
                self.failed = "did not get ready (open and warm-up): %s" % (
                    json.loads(line).get("error") if line else self.stderr_tail() or "no output")
                return False

    def run(self):
        """One timed run: its record (server_cpu added), or None (failed says why)."""
        before = cpu_seconds(self.server_pid) if self.server_pid else None
        try:
            self.p.stdin.write(b"\n")
            self.p.stdin.flush()
        except OSError as e:
            self.failed = "cannot start run %d: %s; %s" % (self.runs + 1, e, self.stderr_tail())
            return None
        deadline = time.monotonic() + self.timeout
        after = None
        while True:
            line = self._line(deadline)
            if line == TIMED:
                after = cpu_seconds(self.server_pid) if self.server_pid else None
                continue
            rec = json.loads(line) if line and line.startswith("{") else None
            if line is None or rec is not None:
                break
        if rec is None:
            self.failed = "run %d: no record within %d s: %s" % (self.runs + 1, self.timeout, self.stderr_tail())
            return None
        self.runs += 1
        rec["client"] = self.label
        if "end" in rec:
            self.values.append(megabytes_per_second(rec))
        if before and after:
            rec["server_cpu"] = {"seconds": after[0] - before[0], "user_seconds": after[1] - before[1],
                                 "system_seconds": after[2] - before[2]}
        if "error" in rec or not rec.get("end", {}).get("sha256_verified", False):
            self.failed = "run %d: %s" % (self.runs, rec.get("error", "not verified"))
        return rec

    def finish(self):
        """Closes its input (no more runs) and waits; its exit status
        (None: killed after the timeout)."""
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            rc = self.p.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            rc = None
        self.p.stdout.close()
        return rc

    def stderr_tail(self):
        self.err.flush()
        self.err.seek(0)
        lines = self.err.read().strip().splitlines()
        return lines[-1] if lines else ""


def client_label(variant, store, verify, direction, size, count, buffer_text):
    return "%s%s%s %s %d x%d buffer %s" % (variant, "/" + store if store else "", "" if verify else NO_VERIFY,
                                           direction, size, count, buffer_text)


def interleave(clients, runs, timeout, log, fail):
    """clients: [(label, argv, server_pid or None)]. Starts each (in turn,
    so that no warm-up overlaps another), then `runs` rounds in rotated
    order. Returns the records; calls fail(message) for a client that
    failed, which then leaves the rounds."""
    records = []
    started = []
    try:
        for label, argv, server_pid in clients:
            c = PacedClient(label, argv, server_pid, timeout)
            started.append(c)
            if not c.wait_ready():
                fail("%s: %s" % (label, c.failed))
        for round_index in range(runs):
            alive = [c for c in started if not c.failed]
            if not alive:
                break
            shift = round_index % len(alive)
            for position, c in enumerate(alive[shift:] + alive[:shift]):
                rec = c.run()
                if rec is not None:
                    rec["order"] = position
                    records.append(rec)
                if c.failed:
                    fail("%s: %s" % (c.label, c.failed))
    finally:
        for c in started:
            rc = c.finish()
            if not c.failed and rc != 0:
                c.failed = "exit %s: %s" % (rc, c.stderr_tail())
                fail("%s: %s" % (c.label, c.failed))
            elif not c.failed and c.runs != runs:
                c.failed = "%d of %d runs" % (c.runs, runs)
                fail("%s: %s" % (c.label, c.failed))
    for c in started:
        if c.values:
            log("%-55s median %9.1f MB/s (min %.1f, max %.1f, %d runs, interleaved)" % (
                c.label, statistics.median(c.values), min(c.values), max(c.values), len(c.values)))
    return records
