#!/usr/bin/env python3
"""Completion notices never hold up the data plane.

A client registers with BlobTransporter::observe() an observer that never
answers: a reference to a TCP port on 127.0.0.1 whose listen backlog is
full, so that every connection attempt hangs (SYNs are dropped) until the
caller's timeout. It then pulls a small Blob 8 times with
SEND_NOTIFICATIONS (tests/tools/transporter_probe notices). Meanwhile
another client pushes 20 small Blobs with `blob push`: they must complete
at normal speed, far below the 8 x 10 s that delivering the notices on the
data plane's thread would cost, and the probe's own pulls too. The daemon
logs the notices it could not deliver, with their count. Then
QUEUE_NOTIFICATIONS: every notice is returned by poll(), once, in order.
Last, SIGTERM stops the daemon (and its notice thread) cleanly."""

import json
import os
import queue
import re
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, log_text, step  # noqa: E402

NOTICES = 8
PUSHES = 20
BOUND = 30  # seconds for all pushes; the notices alone took 8 x 10 s before


class Cdr:
    """A little-endian CDR encapsulation (byte-order octet first)."""

    def __init__(self):
        self.data = bytearray(b"\x01")

    def align(self, n):
        while len(self.data) % n:
            self.data.append(0)

    def octet(self, v):
        self.data.append(v)

    def ushort(self, v):
        self.align(2)
        self.data += struct.pack("<H", v)

    def ulong(self, v):
        self.align(4)
        self.data += struct.pack("<I", v)

    def string(self, s):
        raw = s.encode() + b"\0"
        self.ulong(len(raw))
        self.data += raw

    def octets(self, b):
        self.ulong(len(b))
        self.data += b


def observer_ior(host, port):
    """A stringified TransferObserver reference (IIOP 1.0 profile) to host:port."""
    profile = Cdr()
    profile.octet(1)
    profile.octet(0)  # IIOP 1.0: host, port, object key
    profile.string(host)
    profile.ushort(port)
    profile.octets(b"observer")
    ior = Cdr()
    ior.string("IDL:BlobStreaming/TransferObserver:1.0")
    ior.ulong(1)
    ior.ulong(0)  # TAG_INTERNET_IOP
    ior.octets(bytes(profile.data))
    return "IOR:" + bytes(ior.data).hex()


class Blackhole:
    """A listening port on 127.0.0.1 that lets no connection complete: its
    accept queue (backlog 0) is filled by one connection nobody accepts, so
    the kernel drops further SYNs and connect() hangs."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(0)
        self.port = self.listener.getsockname()[1]
        self.fillers = []
        for _ in range(2):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", self.port))
            except BlockingIOError:
                pass
            self.fillers.append(s)

        def hangs():
            probe = socket.socket()
            probe.settimeout(0.5)
            try:
                probe.connect(("127.0.0.1", self.port))
                return False
            except (socket.timeout, TimeoutError):
                return True
            finally:
                probe.close()

        harness.wait_for(hangs, 10, f"connections to 127.0.0.1:{self.port} to hang", interval=0.1)

    def close(self):
        for s in self.fillers + [self.listener]:
            s.close()


def probe_argv(c, *args):
    return [harness.program("tests/tools/transporter_probe"), args[0], "--naming", c.naming,
            "--store", "central", *args[1:]]



def dropped_notices(daemon):
    """The sum of the counts of the daemon's 'transfer notices not delivered' lines."""
    return sum(int(m) for m in re.findall(r"transfer notices: (\d+) not delivered", log_text(daemon)))


def test(c):
    daemon = c.start_daemon("central", "memory:256M")
    small = c.path("small")
    harness.write_random(small, 4096)
    c.blob("push", "--name", "CT.small", small, store="central").ok()

    hole = Blackhole()
    ior = observer_ior("127.0.0.1", hole.port)
    step(f"observer reference to 127.0.0.1:{hole.port}, where connections hang")

    out = queue.Queue()
    err_path = c.path("probe-send.err")
    with open(err_path, "wb") as err:
        probe = c.spawn("transporter_probe notices (send)",
                        probe_argv(c, "notices", "--blob", "CT.small", "--count", str(NOTICES),
                                   "--semantics", "send", "--observer", ior),
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True)
    probe.log_paths.append(err_path)

    def pump():
        for line in probe.popen.stdout:
            out.put(json.loads(line))
        out.put(None)

    threading.Thread(target=pump, daemon=True).start()
    first = out.get(timeout=60)
    check(first is not None and first.get("pulled") == 1, f"first line of the probe: {first!r}")
    step(f"probe: first SEND_NOTIFICATIONS pull done after {first['seconds']:.2f} s; {PUSHES} pushes by another client")

    t0 = time.monotonic()
    for i in range(PUSHES):
        left = BOUND - (time.monotonic() - t0)
        check(left > 0, f"only {i} of {PUSHES} pushes completed within {BOUND} s while notices were due "
                        "to an observer that never answers")
        r = c.blob("push", "--name", f"CT.other.{i}", small, store="central", timeout=left)
        r.ok()
    pushes_took = time.monotonic() - t0
    step(f"{PUSHES} pushes of another client took {pushes_took:.2f} s")

    summary = None
    deadline = time.monotonic() + BOUND
    while summary is None:
        line = out.get(timeout=max(0.1, deadline - time.monotonic()))
        check(line is not None, "the probe ended without its summary line")
        if line.get("done"):
            summary = line
    check_equal(summary["pulls"], NOTICES, "pulls of the probe")
    check(summary["seconds"] < BOUND, f"the probe's own {NOTICES} pulls took {summary['seconds']:.2f} s")
    check_equal(probe.popen.wait(timeout=30), 0, "exit code of transporter_probe notices")

    # Every notice of the 8 transfers is either delivered (it cannot be) or
    # counted as dropped in the daemon's log.
    harness.wait_for(lambda: dropped_notices(daemon) >= NOTICES, 40, f"the daemon to log {NOTICES} dropped notices")
    check_equal(dropped_notices(daemon), NOTICES, "notices logged as not delivered")
    check(f"observer at 127.0.0.1:{hole.port}" in log_text(daemon),
          "the daemon's log does not name the observer whose notices were dropped")
    hole.close()

    step("QUEUE_NOTIFICATIONS: poll() returns every notice once, in order")
    code, stdout, stderr = c.run(probe_argv(c, "notices", "--blob", "CT.small", "--count", "5",
                                            "--semantics", "queue"), timeout=120)
    check_equal(code, 0, f"exit code of transporter_probe notices (queue); stderr {stderr!r}")
    summary = json.loads(stdout.strip().splitlines()[-1])
    check_equal([n["ticket"] for n in summary["notices"]], summary["tickets"], "tickets of the polled notices")
    check_equal({(n["succeeded"], n["bytes"], n["reason"]) for n in summary["notices"]}, {(True, 4096, "")},
                "outcome of the polled notices")
    check_equal(summary["second_poll"], 0, "notices returned by a second poll()")

    step("SIGTERM: the daemon stops its notice thread and exits 0")
    check_equal(daemon.stop(timeout=30), 0, "exit code of blobstored after SIGTERM")
    check("stopped" in log_text(daemon), "the daemon did not log its stop")


if __name__ == "__main__":
    harness.main(test)
