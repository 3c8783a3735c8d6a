"""Harness of the multi-process system tests: a private omniNames, blobstored
daemons and the blob CLI on 127.0.0.1 with ephemeral ports, in one temporary
directory.

Every process is started through a Cluster, which stops it by PID (SIGTERM,
then SIGKILL after a deadline) and removes the directory when the test ends,
whatever the outcome. Every wait is on a condition with a deadline; every
subprocess call has a timeout. Environment (set by `make check`):
BS_BUILDDIR (required), OMNINAMES (default: omniNames on PATH).

A test script is a function of a Cluster, run by `main(test)`: exit 0 pass,
1 fail (with the logs of every process), 77 skip.
"""

import hashlib
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

SKIP = 77
# Exit codes of the blob CLI (docs/CLI.md; the values of blobstreaming::Errc).
EXIT = {
    "ok": 0, "usage": 1, "invalid_argument": 10, "invalid_name": 11, "invalid_range": 12,
    "no_such_blob": 20, "already_exists": 21, "incomplete": 23, "digest_mismatch": 24,
    "unknown_store": 26, "blob_changed": 27, "out_of_space": 30, "store_busy": 31, "limit_reached": 32, "io_error": 40, "corrupt": 41,
    "transfer_failed": 50, "timeout": 51, "unreachable": 52, "refused": 53, "protocol_error": 54, "cancelled": 55,
    "invalid_mdib": 13, "unknown_handle": 14, "not_a_metric": 15, "peer_fault": 56, "no_provider": 57,
}

MiB = 1 << 20
STEP_T0 = time.monotonic()


class TestFailure(Exception):
    """A checked expectation did not hold."""


class TestSkipped(Exception):
    """The test cannot run here (a program is not built)."""


def step(message):
    """A progress line in the test's log, with the time since the start."""
    print(f"[{time.monotonic() - STEP_T0:7.2f} s] {message}", flush=True)


def check(condition, message):
    if not condition:
        raise TestFailure(message)


def check_equal(actual, expected, what):
    if actual != expected:
        raise TestFailure(f"{what}: expected {expected!r}, got {actual!r}")


def build_dir():
    build = os.environ.get("BS_BUILDDIR")
    if not build:
        raise TestSkipped("BS_BUILDDIR is not set (run through `make check`, or export it)")
    return build


def program(relative):
    """Path of a program of the build tree; skips the test when it is not built."""
    path = os.path.join(build_dir(), relative)
    if not os.access(path, os.X_OK):
        raise TestSkipped(f"{relative} is not built in {build_dir()}")
    return path


def free_port():
    """An ephemeral port that was free a moment ago (omniNames has no port 0 mode)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(4 * MiB), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def write_random(path, size, seed_block=MiB):
    """A file of `size` pseudo-random bytes, fast: one random block, rotated
    between writes so that no two blocks are equal. Returns its SHA-256."""
    block = os.urandom(seed_block)
    h = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        shift = 1
        while left:
            n = min(left, len(block))
            chunk = block[:n]
            f.write(chunk)
            h.update(chunk)
            left -= n
            block = block[shift:] + block[:shift]
            shift = shift % 4093 + 1
    return h.hexdigest()


def read_range(path, offset, length):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)


FILE_HEADER = 4096  # FileStore: byte i of a Blob is at file offset 4096 + i


def reservation_written_past(tmp_dir, offset):
    """The FileStore reservation file in `tmp_dir` whose page at Blob offset
    `offset` is no longer the zeros of fallocate (the tests push random data:
    a written page is never all zeros), or None."""
    try:
        entries = os.listdir(tmp_dir)
    except FileNotFoundError:
        return None
    for entry in entries:
        path = os.path.join(tmp_dir, entry)
        try:
            with open(path, "rb") as f:
                f.seek(FILE_HEADER + offset)
                page = f.read(4096)
        except OSError:
            continue
        if page and any(page):
            return path
    return None


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


def wait_for(condition, timeout, what, interval=0.02):
    """Polls `condition()` until it returns a true value (returned) or
    `timeout` seconds pass (TestFailure naming `what`)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TestFailure(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class BlobResult:
    """Outcome of one `blob` run: exit code, stdout, stderr and the parsed
    --json object (from stdout, or from stderr when the data went to stdout)."""

    def __init__(self, argv, code, stdout, stderr, json_from_stderr=False):
        self.argv = argv
        self.code = code
        self.stdout = stdout
        self.stderr = stderr if isinstance(stderr, str) else stderr.decode("utf-8", "replace")
        self.json = None
        text = self.stderr if json_from_stderr else stdout
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        for line in reversed(text.strip().splitlines() if text else []):
            line = line.strip()
            if line.startswith("{"):
                try:
                    self.json = json.loads(line)
                    break
                except ValueError:
                    pass
        if self.json is None and text and text.strip().startswith("{"):
            try:
                self.json = json.loads(text)
            except ValueError:
                pass

    def describe(self):
        out = self.stdout if isinstance(self.stdout, str) else f"<{len(self.stdout)} bytes>"
        return (f"`{' '.join(self.argv)}` exited {self.code}\n  stdout: {out.strip()[:2000]!r}\n"
                f"  stderr: {self.stderr.strip()[:2000]!r}")

    def ok(self):
        """Checks exit 0 and returns the JSON object (if --json was given)."""
        if self.code != 0:
            raise TestFailure("expected success of " + self.describe())
        return self.json

    def error(self, code, text):
        """Checks a failure with exit `code` whose message contains `text`,
        on stderr (`blob: <message>`) or in the JSON error object."""
        if self.code != code:
            raise TestFailure(f"expected exit {code} with message containing {text!r}, got " + self.describe())
        messages = [self.stderr]
        if self.json and isinstance(self.json.get("error"), dict):
            err = self.json["error"]
            messages.append(str(err.get("message", "")))
            if err.get("code") != code:
                raise TestFailure(f"JSON error code {err.get('code')!r} differs from exit {code}: "
                                  + self.describe())
        if not any(text in m for m in messages):
            raise TestFailure(f"expected a message containing {text!r}, got " + self.describe())
        return self


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


class Daemon(Process):
    """A blobstored; `ready` holds the fields of its ready line."""

    def __init__(self, name, popen, log_paths, argv, store_dir):
        super().__init__(name, popen, log_paths)
        self.argv = argv
        self.store_dir = store_dir
        self.ready = {}
        self.lines = queue.Queue()

    @property
    def data(self):
        host, _, port = self.ready["data"].rpartition(":")
        return host, int(port)


class Cluster:
    """The processes and files of one test."""

    def __init__(self, test_name):
        self.test_name = test_name
        base = os.environ.get("BS_TEST_TMPDIR") or None
        self.root = tempfile.mkdtemp(prefix=f"bs-{test_name}-", dir=base)
        self.processes = []
        self.naming = None
        self.env = dict(os.environ)
        self.env.pop("BLOBSTREAMING_NAMING", None)
        self.env.pop("OMNIORB_CONFIG", None)
        self.env["LC_ALL"] = "C"

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    # ---- omniNames -----------------------------------------------------------
    def start_naming(self, timeout=30, attempts=3, port=None, datadir=None):
        """Starts omniNames on a free port (or on `port`, with `datadir`: a
        restart) and waits until it answers. A port taken by someone else
        between the probe and the start makes omniNames exit: then it is
        tried again (on another port unless `port` is given)."""
        for attempt in range(1, attempts + 1):
            proc, url = self._start_omninames(port, datadir)

            def answers(proc=proc, url=url):
                if not proc.running():
                    return "exited"
                # Our omniNames has bound its endpoint (it logs its root
                # context only after that), so nameclt cannot be answered by
                # another process that holds the port.
                try:
                    with open(proc.log_paths[1], encoding="utf-8", errors="replace") as f:
                        if "Root context is" not in f.read():
                            return None
                except FileNotFoundError:
                    return None
                try:
                    r = subprocess.run(["nameclt", "-ORBInitRef", f"NameService={url}", "list"],
                                       stdin=subprocess.DEVNULL, capture_output=True, timeout=10, env=self.env)
                except subprocess.TimeoutExpired:
                    return None
                return "up" if r.returncode == 0 and proc.running() else None

            state = wait_for(answers, timeout, f"omniNames at {url}", interval=0.05)
            if state == "up":
                self.naming = url
                step(f"omniNames pid {proc.pid} on {url}")
                return proc
            step(f"omniNames at {url} exited with {proc.popen.returncode} (attempt {attempt} of {attempts})")
        raise TestFailure(f"omniNames did not start in {attempts} attempts; see its log above")

    def _start_omninames(self, port=None, datadir=None):
        port = port or free_port()
        datadir = datadir or self.path(f"naming-{port}")
        os.makedirs(datadir, exist_ok=True)
        omninames = os.environ.get("OMNINAMES") or shutil.which("omniNames") or "/usr/bin/omniNames"
        log_path = os.path.join(datadir, "omniNames.out")
        with open(log_path, "ab") as log:
            popen = subprocess.Popen(
                [omninames, "-start", str(port), "-always", "-datadir", datadir,
                 "-errlog", os.path.join(datadir, "ns.err"),
                 "-ORBendPoint", f"giop:tcp:127.0.0.1:{port}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        proc = Process("omniNames", popen, [log_path, os.path.join(datadir, "ns.err")])
        self.processes.append(proc)
        return proc, f"corbaname::127.0.0.1:{port}"

    # ---- blobstored ----------------------------------------------------------
    def start_daemon(self, name, store, tier=None, extra=(), timeout=60, store_dir=None, naming=None,
                     preexec_fn=None):
        """Starts blobstored --name NAME --store STORE and waits for its ready
        line. `store` is "file" (a new directory under the test's root, or
        `store_dir`), "memory:SIZE", or any --store value. `preexec_fn` runs
        in the child before the exec (e.g. to lower a resource limit)."""
        daemon_path = program("blobstore/blobstored")
        if store == "file":
            store_dir = store_dir or self.path(f"store-{name}")
            store = f"file:{store_dir}"
        elif store.startswith("file:"):
            store_dir = store[len("file:"):]
        argv = [daemon_path, "--name", name, "--store", store, "--naming", naming or self.naming,
                "--control-address", "127.0.0.1:0", "--data-address", "127.0.0.1:0"]
        if tier:
            argv += ["--tier", tier]
        argv += list(extra)
        n = sum(1 for p in self.processes if p.name.startswith(f"blobstored {name}"))
        err_path = self.path(f"blobstored-{name}-{n}.err")
        out_path = self.path(f"blobstored-{name}-{n}.out")
        with open(err_path, "wb") as err:
            popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                     env=self.env, preexec_fn=preexec_fn)
        daemon = Daemon(f"blobstored {name}#{n}", popen, [err_path, out_path], argv, store_dir)
        daemon.spec = dict(name=name, store=store, tier=tier, extra=tuple(extra), naming=naming,
                           preexec_fn=preexec_fn)
        self.processes.append(daemon)

        def pump():  # drains stdout for the whole life of the daemon, so that the pipe never fills
            with open(out_path, "w") as out:
                for raw in popen.stdout:
                    line = raw.decode("utf-8", "replace")
                    out.write(line)
                    out.flush()
                    daemon.lines.put(line)
            daemon.lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TestFailure(f"{daemon.name} printed no ready line within {timeout} s: {' '.join(argv)}")
            try:
                line = daemon.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                popen.wait(timeout=20)
                raise TestFailure(f"{daemon.name} exited with {popen.returncode} before it was ready: "
                                  f"{' '.join(argv)}")
            if line.startswith("blobstored ready "):
                break
        daemon.ready = dict(f.split("=", 1) for f in line.split()[2:] if "=" in f)
        check_equal(daemon.ready.get("name"), name, "name in the ready line")
        check(daemon.ready.get("data", "").startswith("127.0.0.1:"),
              f"data address of the ready line is not on 127.0.0.1: {line.strip()!r}")
        check(daemon.data[1] != 0, f"the ready line shows port 0, not the actual port: {line.strip()!r}")
        step(f"{daemon.name} pid {daemon.pid}: {line.strip()}")
        return daemon

    def restart_daemon(self, daemon, timeout=60):
        """Starts a new blobstored with the arguments of `daemon` (same directory)."""
        return self.start_daemon(**daemon.spec, timeout=timeout)

    # ---- clients -------------------------------------------------------------
    def blob(self, *args, store=None, json_out=True, timeout=300, stdin=None, binary=False,
             naming=None):
        """Runs `blob [--naming URL] [--store S] [--json] ARGS...`. With
        binary=True, stdout is kept as bytes (pull NAME -) and the JSON
        object is read from stderr."""
        argv = [program("clients/blob"), "--naming", naming or self.naming]
        if store:
            argv += ["--store", store]
        if json_out:
            argv.append("--json")
        argv += [str(a) for a in args]
        io = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
        try:
            r = subprocess.run(argv, capture_output=True, timeout=timeout, env=self.env,
                               text=not binary and not isinstance(stdin, bytes), **io)
        except subprocess.TimeoutExpired as e:
            raise TestFailure(f"`{' '.join(argv)}` did not finish within {timeout} s "
                              f"(stderr so far: {e.stderr!r})") from None
        return BlobResult(argv, r.returncode, r.stdout, r.stderr, json_from_stderr=binary)

    def spawn(self, name, argv, **popen_args):
        """Starts a client process whose life the test controls; stopped at the end."""
        popen = subprocess.Popen(argv, env=self.env, **popen_args)
        proc = Process(name, popen, [])
        self.processes.append(proc)
        return proc

    def run(self, argv, timeout=300):
        """Runs a program to completion: (exit code, stdout, stderr)."""
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=timeout, env=self.env)
        except subprocess.TimeoutExpired as e:
            raise TestFailure(f"`{' '.join(argv)}` did not finish within {timeout} s "
                              f"(stderr so far: {e.stderr!r})") from None
        return r.returncode, r.stdout, r.stderr

    # ---- end -----------------------------------------------------------------
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
                    first = min((i for i in (text.find(m) for m in self.SANITIZER_MARKERS) if i >= 0), default=-1)
                    if first >= 0:
                        text = "...\n" + text[first:first + limit] + ("\n..." if len(text) > first + limit else "")
                    else:
                        text = "...\n" + text[-limit:]
                sys.stdout.write(f"----- {proc.name} (pid {proc.pid}): {os.path.basename(path)} -----\n"
                                 f"{text.rstrip()}\n")
        sys.stdout.flush()

    SANITIZER_MARKERS = ("WARNING: ThreadSanitizer", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                         "runtime error:")

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
                            if any(m in line for m in self.SANITIZER_MARKERS):
                                found.append(f"{proc.name}: {os.path.basename(path)}: {line.strip()}")
                except OSError:
                    continue
        return found

    def close(self):
        for proc in reversed(self.processes):
            try:
                proc.stop()
            except Exception as e:  # keep stopping the others
                print(f"could not stop {proc.name} (pid {proc.pid}): {e}", flush=True)
        if os.environ.get("BS_KEEP_TMP"):
            print(f"kept {self.root}", flush=True)
        else:
            shutil.rmtree(self.root, ignore_errors=True)


class DriverShell:
    """tests/tools/client_driver shell: one long-lived Session (pooled data
    connections, cached references) under the test's control; one command
    in, one JSON line out."""

    def __init__(self, c, store):
        err_path = c.path("shell.err")
        self.err = open(err_path, "wb")
        self.proc = c.spawn("client_driver shell",
                            [program("tests/tools/client_driver"), "shell", "--naming", c.naming, "--store", store],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.proc.log_paths.append(err_path)
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        check_equal(self.read(60).get("command"), "ready", "first line of client_driver shell")

    def _pump(self):
        for line in self.proc.popen.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def read(self, timeout):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TestFailure(f"client_driver shell gave no answer within {timeout} s") from None
        if line is None:
            raise TestFailure(f"client_driver shell exited ({self.proc.popen.poll()})")
        return json.loads(line)

    def do(self, command, timeout=90):
        self.proc.popen.stdin.write(command + "\n")
        self.proc.popen.stdin.flush()
        answer = self.read(timeout)
        step(f"shell: {command} -> {answer}")
        return answer

    def ok(self, command):
        answer = self.do(command)
        check(answer.get("ok"), f"the long-lived client failed `{command}`: {answer}")
        return answer


def _terminate(signum, _frame):
    raise SystemExit(f"terminated by signal {signum}")


def run(test, setup, name=None, finish=None):
    """Runs `test(env)` on the environment `setup(name)` builds and exits
    0 (pass), 1 (fail) or 77 (skip). `finish(env)` runs after the test body
    has passed and may still fail it; on failure the environment's
    dump_logs() shows what its processes said; close() always runs."""
    name = name or os.path.splitext(os.path.basename(sys.argv[0]))[0]
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    env = None
    rc = 1
    try:
        env = setup(name)
        test(env)
        if finish:
            finish(env)
        step(f"{name}: PASS")
        rc = 0
    except TestSkipped as e:
        print(f"SKIP {name}: {e}", flush=True)
        rc = SKIP
    except TestFailure as e:
        print(f"FAIL {name}: {e}", flush=True)
        if env:
            env.dump_logs()
    except BaseException:
        print(f"FAIL {name}: unexpected exception", flush=True)
        traceback.print_exc(file=sys.stdout)
        if env:
            env.dump_logs()
    finally:
        if env:
            env.close()
    sys.exit(rc)


def main(test, name=None):
    """Runs `test(cluster)` against a Cluster with its Naming Service running;
    exits 0 (pass), 1 (fail) or 77 (skip)."""
    def setup(test_name):
        program("blobstore/blobstored")
        program("clients/blob")
        cluster = Cluster(test_name)
        cluster.start_naming()
        return cluster

    def finish(cluster):
        cluster.stop_all()  # sanitizers report leaks and races at exit
        reports = cluster.sanitizer_reports()
        if reports:
            raise TestFailure("sanitizer reports in the logs:\n  " + "\n  ".join(reports[:20]))

    run(test, setup, name, finish)
