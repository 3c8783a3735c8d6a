"""Child processes of a test or benchmark: stopped by PID (SIGTERM, SIGKILL
after a deadline), servers awaited on their ready line, JSON-line shells, and
what /proc says about a process (peak RSS, threads)."""

import json
import os
import queue
import resource
import signal
import subprocess
import threading
import time

from .checks import TestFailure, TestSkipped, step


class Process:
    """A started process, stopped by PID."""

    def __init__(self, name, popen, log_paths):
        self.name = name
        self.popen = popen
        self.log_paths = log_paths

    @property
    def pid(self):
        return self.popen.pid

    def running(self):
        return self.popen.poll() is None

    def stop(self, timeout=20):
        """SIGTERM, then SIGKILL after `timeout` s; returns the exit status."""
        if self.popen.poll() is None:
            try:
                os.kill(self.popen.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                step(f"{self.name} (pid {self.pid}) ignored SIGTERM for {timeout} s; SIGKILL")
                self.kill()
        return self.popen.returncode

    def kill(self):
        if self.popen.poll() is None:
            try:
                os.kill(self.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.popen.wait(timeout=20)
        return self.popen.returncode


def ready_fields(line):
    """The key=value words of a ready line, as a dict."""
    return dict(word.split("=", 1) for word in line.split() if "=" in word)


class Service(Process):
    """A started server whose stdout is drained for its whole life (so that
    the pipe never fills) into `lines` and, with `out_path`, a log file;
    `ready` holds the key=value fields of its ready line (wait_ready())."""

    def __init__(self, name, popen, log_paths, out_path=None):
        super().__init__(name, popen, log_paths)
        self.ready = {}
        self.ready_line = ""
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, args=(out_path,), daemon=True).start()

    def _pump(self, out_path):
        out = open(out_path, "w") if out_path else None
        try:
            for raw in self.popen.stdout:
                line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
                if out:
                    out.write(line)
                    out.flush()
                self.lines.put(line)
        finally:
            if out:
                out.close()
            self.lines.put(None)

    def wait_ready(self, prefix, timeout):
        """Waits (deadline `timeout` s) for a line starting with `prefix`;
        TestFailure when none came or the process exited first."""
        argv = " ".join(str(a) for a in self.popen.args)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TestFailure(f"{self.name} printed no '{prefix.strip()}' line within {timeout} s: {argv}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                self.popen.wait(timeout=20)
                raise TestFailure(f"{self.name} exited with {self.popen.returncode} before it was ready: {argv}")
            if line.startswith(prefix):
                self.ready_line = line.strip()
                self.ready = ready_fields(line)
                return self.ready_line


def start_service(name, argv, ready, timeout, env=None, out_path=None, err_path=None, **popen_args):
    """Starts `argv` with stdout pumped (to `out_path`), stderr to `err_path`
    (or discarded) and waits for its line starting with `ready` (or not, when
    `ready` is None); its log_paths are those of [out_path, err_path] given.
    The caller tracks the returned Service (to stop it even when the wait
    fails): pass `track`, a list it is appended to."""
    track = popen_args.pop("track", None)
    err = open(err_path, "wb") if err_path else subprocess.DEVNULL
    try:
        popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=env,
                                 **popen_args)
    finally:
        if err_path:
            err.close()
    service = Service(name, popen, [p for p in (out_path, err_path) if p], out_path)
    if track is not None:
        track.append(service)
    if ready is not None:
        service.wait_ready(ready, timeout)
    return service


class JsonLines:
    """A started process driven by commands on stdin that answers each with
    one JSON line on stdout (tests/tools/client_driver shell,
    transporter_probe hold); stderr goes to `err_path`."""

    def __init__(self, c, name, argv, err_path, env=None):
        self.err = open(err_path, "wb")
        self.proc = c.spawn(name, argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True,
                            env=env if env is not None else c.env)
        self.proc.log_paths.append(err_path)
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.popen.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def read(self, timeout=60):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TestFailure(f"{self.proc.name} gave no answer within {timeout} s") from None
        if line is None:
            raise TestFailure(f"{self.proc.name} exited ({self.proc.popen.poll()})")
        return json.loads(line)

    def do(self, command, timeout=90):
        self.proc.popen.stdin.write(command + "\n")
        self.proc.popen.stdin.flush()
        answer = self.read(timeout)
        step(f"{self.proc.name}: {command} -> {answer}")
        return answer


def proc_status(pid, field):
    """A number of /proc/PID/status: "VmHWM", "VmRSS" (KiB), "Threads"."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise TestFailure(f"/proc/{pid}/status has no {field} line")


def peak_rss_kib(pid):
    """The peak resident set size (VmHWM) of a running process, in KiB."""
    return proc_status(pid, "VmHWM")


def cpu_seconds(pid):
    """utime + stime of a process, in seconds (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ensure_descriptors(need):
    """Raises this process's soft descriptor limit to `need` (a flood test's
    own sockets); TestSkipped when the hard limit does not allow it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= need:
        return
    if hard != resource.RLIM_INFINITY and hard < need:
        raise TestSkipped(f"the flood needs {need} descriptors, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def log_text(proc):
    """What a started process (a Daemon, a Service) has logged so far: its first log file."""
    with open(proc.log_paths[0], encoding="utf-8", errors="replace") as f:
        return f.read()
