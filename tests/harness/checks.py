"""Outcomes, expectations and waits shared by every test and benchmark
script: exit codes, TestFailure/TestSkipped, step(), check(), wait_for(), and
where the programs of the build tree are."""

import os
import time

SKIP = 77
# Exit codes of the blob CLI (docs/CLI.md; the values of blobstreaming::Errc).
EXIT = {
    "ok": 0, "usage": 1, "invalid_argument": 10, "invalid_name": 11, "invalid_range": 12,
    "no_such_blob": 20, "already_exists": 21, "incomplete": 23, "digest_mismatch": 24,
    "unknown_store": 26, "blob_changed": 27, "out_of_space": 30, "store_busy": 31, "limit_reached": 32, "io_error": 40, "corrupt": 41,
    "transfer_failed": 50, "timeout": 51, "unreachable": 52, "refused": 53, "protocol_error": 54, "cancelled": 55,
    "invalid_mdib": 13, "unknown_handle": 14, "not_a_metric": 15, "peer_fault": 56, "no_provider": 57, "partial": 58,
}

MiB = 1 << 20
STEP_T0 = time.monotonic()


class TestFailure(Exception):
    """A checked expectation did not hold."""


class TestSkipped(Exception):
    """The test cannot run here (a program is not built)."""


LAST_STEP = ""


def step(message):
    """A progress line in the test's log, with the time since the start."""
    global LAST_STEP
    LAST_STEP = f"[{time.monotonic() - STEP_T0:7.2f} s] {message}"
    print(LAST_STEP, flush=True)


def last_step():
    """The last progress line step() printed ("" before the first)."""
    return LAST_STEP


def check(condition, message):
    if not condition:
        raise TestFailure(message)


def check_equal(actual, expected, what):
    if actual != expected:
        raise TestFailure(f"{what}: expected {expected!r}, got {actual!r}")


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


def build_dir():
    build = os.environ.get("BS_BUILDDIR")
    if not build:
        raise TestSkipped("BS_BUILDDIR is not set (run through `make check`, or export it)")
    return build


def src_dir():
    """The source tree: $BS_SRCDIR, or the one this package lies in."""
    return os.environ.get("BS_SRCDIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def program(relative):
    """Path of a program of the build tree; skips the test when it is not built."""
    path = os.path.join(build_dir(), relative)
    if not os.access(path, os.X_OK):
        raise TestSkipped(f"{relative} is not built in {build_dir()}")
    return path
