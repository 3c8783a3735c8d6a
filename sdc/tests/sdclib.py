"""Harness of the SDC system tests: sdc-provider, sdc-get and the sdc11073
peers (a Python SDC stack from PyPI) as real processes on 127.0.0.1 with
ephemeral ports, in one temporary directory.

Builds on tests/harness (Workspace, Service and its ready line, step, check,
wait_for). The sdc11073 peers run in a venv in the build tree
(sdc/tests/venv) with sdc11073==3.0.0, created on first use under a lock;
when PyPI is unreachable the tests that need it are skipped (exit 77) with a
message. SDC11073_PYTHON may name the interpreter of an existing environment
that has sdc11073 3.0.0.
"""

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("BS_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                                "tests"))
from harness import (SKIP, Process, TestFailure, TestSkipped, Workspace, build_dir, check,  # noqa: E402,F401
                     check_equal, program, run, src_dir, start_service, step, wait_for)

SDC11073 = "sdc11073==3.0.0"


def mdib_file(name):
    """An MDIB shipped with the tests (sdc/tests/data)."""
    return os.path.join(src_dir(), "sdc", "tests", "data", name)


def peer_script(name):
    return os.path.join(src_dir(), "sdc", "tests", "peers", name)


def _pypi_reachable(timeout=5):
    for host in ("pypi.org", "files.pythonhosted.org"):
        try:
            with socket.create_connection((host, 443), timeout=timeout):
                pass
        except OSError:
            return False
    return True


def sdc11073_python():
    """The interpreter of an environment with sdc11073 3.0.0: $SDC11073_PYTHON,
    or a venv created once in the build tree. Skips when PyPI is unreachable."""
    given = os.environ.get("SDC11073_PYTHON")
    if given:
        return given
    venv = os.path.join(build_dir(), "sdc", "tests", "venv")
    python = os.path.join(venv, "bin", "python")
    marker = os.path.join(venv, ".complete")
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    with open(venv + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # tests run in parallel: one creates, the others wait
        if os.path.exists(marker):
            return python
        if not _pypi_reachable():
            raise TestSkipped(f"PyPI is unreachable: cannot install {SDC11073} into a venv for the interop peers")
        step(f"creating a venv with {SDC11073} in {venv} (once per build tree)")
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
        pip = subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q",
                              "--timeout", "30", "--retries", "2", SDC11073],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        if pip.returncode != 0:
            if not _pypi_reachable():
                raise TestSkipped(f"PyPI became unreachable while installing {SDC11073}:\n{pip.stdout[-2000:]}")
            raise TestFailure(f"pip install {SDC11073} failed:\n{pip.stdout[-4000:]}")
        open(marker, "w").close()
    return python


def biceps_schema_dir():
    """The BICEPS XSDs shipped in the sdc11073 wheel of the peers' venv
    (skips like sdc11073_python())."""
    python = sdc11073_python()
    code = "import os, sdc11073; print(os.path.join(os.path.dirname(sdc11073.__file__), 'xsd'))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout.strip()
    if not os.path.isfile(os.path.join(out, "BICEPS_MessageModel.xsd")):
        raise TestFailure(f"no BICEPS_MessageModel.xsd in {out}")
    return out


class SdcEnv(Workspace):
    """The processes and files of one test; everything is stopped by PID."""

    stop_timeout = 30

    def __init__(self, test_name):
        super().__init__(test_name)
        self.env["PYTHONUNBUFFERED"] = "1"

    def start(self, name, argv, ready_word, timeout=60):
        """Starts `argv`, pumps its stdout to a log and waits (deadline
        `timeout`) for a line starting with `ready_word`."""
        proc = start_service(name, argv, ready_word, timeout, env=self.env, out_path=self.path(f"{name}.out"),
                             err_path=self.path(f"{name}.err"), text=True, start_new_session=True,
                             track=self.processes)
        step(f"{name} ready (pid {proc.pid}): {proc.ready_line}")
        return proc

    def start_provider(self, mdib, *extra, name="sdc-provider"):
        return self.start(name, [program("sdc/sdc-provider"), "--mdib", mdib, "--address", "127.0.0.1:0", *extra],
                          "sdc-provider ready")

    def run(self, argv, timeout=120, expect=0):
        """Runs a command to completion; checks its exit code; returns stdout."""
        result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env, text=True,
                                timeout=timeout)
        if expect is not None and result.returncode != expect:
            raise TestFailure(f"`{' '.join(argv)}` exited {result.returncode}, expected {expect}\n"
                              f"  stdout: {result.stdout[-3000:]!r}\n  stderr: {result.stderr[-3000:]!r}")
        return result

    def sdc_get(self, *args, expect=0, timeout=60):
        result = self.run([program("sdc/sdc-get"), *args], timeout=timeout, expect=expect)
        return json.loads(result.stdout) if "--json" in args and expect == 0 else result


def main(test):
    """Runs `test(env)` in an SdcEnv; exits 0 (pass), 1 (fail) or 77 (skip)."""
    def setup(name):
        program("sdc/sdc-provider")
        program("sdc/sdc-get")
        return SdcEnv(name)

    run(test, setup)
