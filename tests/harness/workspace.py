"""The temporary directory, environment and processes of one test run:
every process is stopped by PID and the directory removed when the run ends,
whatever the outcome; on failure the logs of every process are shown."""

import os
import shutil
import subprocess
import sys
import tempfile

from .checks import TestFailure
from .processes import Process

SANITIZER_MARKERS = ("WARNING: ThreadSanitizer", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "runtime error:")


class Workspace:
    """A directory under $BS_TEST_TMPDIR (or the system's) and the processes
    started in it; `env` is the environment they get (LC_ALL=C)."""

    stop_timeout = 20  # seconds between SIGTERM and SIGKILL in close()

    def __init__(self, test_name):
        self.test_name = test_name
        self.root = tempfile.mkdtemp(prefix=f"bs-{test_name}-", dir=os.environ.get("BS_TEST_TMPDIR") or None)
        self.processes = []
        self.env = dict(os.environ)
        self.env["LC_ALL"] = "C"

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def spawn(self, name, argv, **popen_args):
        """Starts a client process whose life the test controls; stopped at the end."""
        popen = subprocess.Popen(argv, env=popen_args.pop("env", self.env), **popen_args)
        proc = Process(name, popen, [])
        self.processes.append(proc)
        return proc

    def dump_logs(self, limit=8000):
        for proc in self.processes:
            for path in proc.log_paths:
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                if not data.strip():
                    continue
                text = data.decode("utf-8", "replace")
                if len(text) > limit:
                    # A sanitizer report is read from its first line (the
                    # direct leak, the first race); otherwise the tail.
                    first = min((i for i in (text.find(m) for m in SANITIZER_MARKERS) if i >= 0), default=-1)
                    if first >= 0:
                        text = "...\n" + text[first:first + limit] + ("\n..." if len(text) > first + limit else "")
                    else:
                        text = "...\n" + text[-limit:]
                sys.stdout.write(f"----- {proc.name} (pid {proc.pid}): {os.path.basename(path)} -----\n"
                                 f"{text.rstrip()}\n")
        sys.stdout.flush()

    def stop_all(self):
        for proc in reversed(self.processes):
            proc.stop()

    def sanitizer_reports(self):
        """Lines of the processes' logs where a sanitizer (configure
        --enable-sanitizers or --enable-tsan) reported a problem."""
        found = []
        for proc in self.processes:
            for path in proc.log_paths:
                try:
                    with open(path, encoding="utf-8", errors="replace") as f:
                        for line in f:
                            if any(m in line for m in SANITIZER_MARKERS):
                                found.append(f"{proc.name}: {os.path.basename(path)}: {line.strip()}")
                except OSError:
                    continue
        return found

    def check_sanitizers(self):
        """Stops every process (sanitizers report leaks and races at exit),
        then fails on any sanitizer report in their logs."""
        self.stop_all()
        reports = self.sanitizer_reports()
        if reports:
            raise TestFailure("sanitizer reports in the logs:\n  " + "\n  ".join(reports[:20]))

    def close(self):
        for proc in reversed(self.processes):
            try:
                proc.stop(timeout=self.stop_timeout)
            except Exception as e:  # keep stopping the others
                print(f"could not stop {proc.name} (pid {proc.pid}): {e}", flush=True)
        if os.environ.get("BS_KEEP_TMP"):
            print(f"kept {self.root}", flush=True)
        else:
            shutil.rmtree(self.root, ignore_errors=True)
