#!/usr/bin/env python3
"""Processes that hold more than 1024 descriptors.

Thousands of idle TCP connections to a daemon's control (CORBA) port from
one address, opened without any credential, neither hold a thread each nor
the daemon: all but --max-control-connections-per-peer (64) of them are
closed at once (the connection gate), those left hold no thread of their
own past omniORB's 128, and the daemon keeps answering other clients. With
more than 1024 descriptors in use the data plane still accepts connections
(no select()-based reactor anywhere in the daemon: it used to abort with
"bit out of range 0 - FD_SETSIZE").

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
CAP_PEER = 64        # blobstored's default --max-control-connections-per-peer
FLOODER = "127.0.0.2"  # the clients connect from 127.0.0.1


def is_closed(s):
    """True once the daemon closed `s` (EOF or reset); never blocks."""
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def connect(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((FLOODER, 0))
    s.settimeout(10)
    s.connect((host, port))
    s.setblocking(False)
    return s


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
            idle.append(connect(host, int(port)))
        step(f"{count} idle connections from {FLOODER} to the control port {host}:{port}")
        left = list(idle)

        def capped():
            nonlocal left
            left = [s for s in left if not is_closed(s)]
            return len(left) <= CAP_PEER

        harness.wait_for(capped, 20, f"the daemon to close all but {CAP_PEER} of them")
        threads = harness.proc_status(daemon.pid, "Threads")
        step(f"{count - len(left)} closed, {len(left)} open; daemon threads {threads}")
        check_equal(len(left), CAP_PEER, f"connections from {FLOODER} left open")
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
