#!/usr/bin/env python3
"""`scripts/run-demo --serve` on this build tree (`--build`, a small demo:
4 slices, a 1 MiB image) stops what it started and keeps what it promises:

- it says at start where the store lives and that it is deleted at exit;
- SIGTERM to the demo's PID (`kill PID`, not Ctrl-C to the process group):
  it exits 0, its omniNames and blobstored (the PIDs it printed) are gone
  and its temporary directory is removed;
- with `--data DIR` it says the store is kept; a Blob pushed with `blob`
  while it serves is, after SIGHUP and a second run on the same DIR,
  listed and pulled bit-exact; SIGHUP too stops both services and removes
  the temporary directory, DIR/store stays.

The packages of `scripts/install-deps --demo` are installed already where
`make check` runs, so run-demo's check of them costs a dpkg-query."""

import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402


def pid_alive(pid):
    """True while PID exists and is not a zombie (/proc/PID/stat's state)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class Demo:
    """One run of scripts/run-demo --serve; its output in a file."""

    def __init__(self, ws, n, *extra):
        self.out = ws.path(f"demo{n}.out")
        env = {k: v for k, v in ws.env.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
        env["TMPDIR"] = ws.path("tmp")
        os.makedirs(env["TMPDIR"], exist_ok=True)
        with open(self.out, "w") as out:
            popen = subprocess.Popen([os.path.join(harness.src_dir(), "scripts", "run-demo"),
                                      "--build", harness.build_dir(), "--serve",
                                      "--slices", "4", "--image-mb", "1", *extra],
                                     stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
        self.proc = harness.Process(f"run-demo #{n}", popen, [self.out])
        ws.processes.append(self.proc)

    def text(self):
        with open(self.out) as f:
            return f.read()

    def wait_serving(self):
        harness.wait_for(lambda: "\nServing;" in self.text() or not self.proc.running(), 50,
                         "run-demo's \"Serving\" line")
        text = self.text()
        check("\nServing;" in text, f"run-demo ended before serving:\n{text}")
        m = re.search(r"omniNames PID (\d+), blobstored PID (\d+)", text)
        check(m, f"run-demo did not name its omniNames and blobstored PIDs:\n{text}")
        self.pids = [int(m.group(1)), int(m.group(2))]
        self.naming = re.search(r"export BLOBSTREAMING_NAMING=(\S+)", text).group(1)
        m = re.search(r"work files in (\S+?)[:,]", text)
        check(m, f"run-demo did not say where its files are:\n{text}")
        self.work = m.group(1)
        check(all(pid_alive(p) for p in self.pids), "omniNames and blobstored are running while serving")
        check(os.path.isdir(self.work), f"{self.work} exists while serving")
        return text

    def stop(self, signum):
        os.kill(self.proc.pid, signum)
        rc = self.proc.popen.wait(timeout=40)
        check_equal(rc, 0, f"run-demo's exit status after {signal.Signals(signum).name}")
        harness.wait_for(lambda: not any(pid_alive(p) for p in self.pids), 10,
                         f"omniNames and blobstored (PIDs {self.pids}) gone")
        check(not os.path.exists(self.work), f"{self.work} removed after {signal.Signals(signum).name}")


def blob(demo, *args, **kw):
    return subprocess.run([harness.program("clients/blob"), "--naming", demo.naming, "--store", "demo", *args],
                          capture_output=True, timeout=60, **kw)


def test(ws):
    step("run-demo --serve; SIGTERM to its PID")
    d = Demo(ws, 1)
    text = d.wait_serving()
    check("deleted at exit with every Blob pushed (keep the store with --data DIR)" in text.splitlines()[0]
          and d.work in text.splitlines()[0], f"the first line says where the store is and that it is deleted:\n{text}")
    d.stop(signal.SIGTERM)

    step("run-demo --serve --data DIR: a Blob pushed, SIGHUP")
    data = ws.path("data")
    d = Demo(ws, 2, "--data", data)
    text = d.wait_serving()
    check(f"Store in {data}/store: kept after exit (--data)" in text.splitlines()[0],
          f"the first line says the store is kept in {data}/store:\n{text}")
    payload = os.urandom(300 * 1024 + 7)
    r = blob(d, "push", "--name", "kept.bin", "-", input=payload)
    check_equal(r.returncode, 0, f"blob push exit status ({r.stderr.decode(errors='replace')})")
    d.stop(signal.SIGHUP)
    check(os.path.isdir(os.path.join(data, "store")), f"{data}/store kept after SIGHUP")

    step("a second run on the same --data DIR: the Blob is still there, bit-exact")
    d = Demo(ws, 3, "--data", data)
    d.wait_serving()
    r = blob(d, "ls")
    check(r.returncode == 0 and b"kept.bin" in r.stdout, f"blob ls lists kept.bin: {r.stdout!r} {r.stderr!r}")
    r = blob(d, "pull", "kept.bin", "-")
    check_equal(r.returncode, 0, f"blob pull exit status ({r.stderr.decode(errors='replace')})")
    check(r.stdout == payload, f"pulled {len(r.stdout)} bytes differ from the {len(payload)} pushed")
    d.stop(signal.SIGTERM)


if __name__ == "__main__":
    harness.run(test, harness.Workspace)
