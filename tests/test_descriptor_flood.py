#!/usr/bin/env python3
"""Processes that hold more than 1024 descriptors.

Thousands of idle TCP connections to a daemon's control (CORBA) port,
opened without any credential, hold neither a thread each nor the daemon:
omniORB watches them from its bounded thread pool past 128 connections, the
daemon keeps answering, and with more than 1024 descriptors in use the data
plane still accepts connections (no select()-based reactor anywhere in the
daemon: it used to abort with "bit out of range 0 - FD_SETSIZE").

A client that already holds 1100 descriptors (a PACS, a DICOM gateway)
pushes and pulls over TCP: libblobclient's reactor is epoll too."""

import os
import resource
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step  # noqa: E402

WANTED = 3000
MAX_THREADS = 400


def test(c):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = hard if hard != resource.RLIM_INFINITY else 65536
    if limit < 2048:
        raise harness.TestSkipped(f"RLIMIT_NOFILE hard limit {hard} is too low to hold 1024+ connections")
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(limit, 65536), hard))
    count = min(WANTED, limit - 512)

    daemon = c.start_daemon("ws", "file", tier="workstation")
    source = c.path("slice")
    digest = harness.write_random(source, 2 * MiB)
    host, _, port = daemon.ready["control"].rpartition(":")
    idle = []
    try:
        for _ in range(count):
            idle.append(socket.create_connection((host, int(port)), timeout=10))
        threads = harness.proc_status(daemon.pid, "Threads")
        step(f"{count} idle connections open to the control port {host}:{port}; daemon threads {threads}")
        check(daemon.running(), "the daemon died under idle control connections")
        check(threads < MAX_THREADS,
              f"the daemon holds {threads} threads for {count} idle connections (limit {MAX_THREADS})")
        c.blob("stores", timeout=60).ok()
        pushed = c.blob("push", "--name", "CT.flood", source, store="ws", timeout=60).ok()
        check_equal(pushed.get("checksum"), digest, "push during the flood")
        out = c.path("pulled")
        c.blob("--no-local", "pull", "CT.flood", out, store="ws", timeout=60).ok()
        check_equal(harness.checksum_file(out), digest, "pull during the flood")
        check(daemon.running(), "the daemon died while serving during the flood")
    finally:
        for s in idle:
            s.close()
    step("after the flood")
    c.blob("--no-local", "pull", "CT.flood", c.path("pulled-after"), store="ws", timeout=60).ok()

    step("a client holding 1100 descriptors pushes and pulls")
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(1100)]
    try:
        out = c.path("pulled-by-busy-client")
        for args in (["push", "--name", "CT.busy", source], ["--no-local", "pull", "CT.busy", out]):
            argv = [harness.program("clients/blob"), "--naming", c.naming, "--store", "ws", "--json"] + args
            r = subprocess.run(argv, pass_fds=held, capture_output=True, text=True, timeout=60, env=c.env)
            harness.BlobResult(argv, r.returncode, r.stdout, r.stderr).ok()
        check_equal(harness.checksum_file(out), digest, "pull by a client holding 1100 descriptors")
    finally:
        for fd in held:
            os.close(fd)


if __name__ == "__main__":
    harness.main(test)
