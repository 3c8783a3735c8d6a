#!/usr/bin/env python3
"""Connections without a credential cannot spin or starve blobstored through
its control (CORBA) port.

omniORB 4.2 retries a failing accept() (EMFILE) in a busy loop, so idle
connections to the control port that use up the daemon's descriptors used
to spin one core at 100 % and shut the data plane out. The connection gate
(transporter/include/blobstreaming/transporter/corba/ConnectionGate.h, as in
blob-activatord) now caps them; docs/SECURITY.md promises:

1. The new options are range-checked with exact messages; --help shows
   their defaults.
2. Descriptor limit 512 (soft and hard): the total cap is lowered to an
   eighth of it (64, logged). 40 peer addresses (127.0.0.2 ...) open 16 raw
   idle connections each (640, more than the daemon has descriptors;
   --max-control-connections-per-peer 8): each address's connections beyond
   8 are closed at once, at most 64 stay open in all, no address holds more
   than 8. Meanwhile the daemon holds descriptors to spare, it does not spin
   (its CPU time over 3 s while more hostile connections are pending stays
   below 40 % of the wall time), `blob stat`, a push and a pull from
   127.0.0.1 succeed (a newcomer ends a connection of the address holding
   the most), and it does not hold a thread per connection.
3. The hostile connections left are closed once idle for
   --control-idle-timeout (15 s), not before; the refusals are logged once
   per address and in a summary.
"""

import os
import re
import resource
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, cpu_seconds, log_text, MiB, step  # noqa: E402

NOFILE = 512           # the daemon's descriptor limit
CAP_TOTAL = NOFILE // 8  # the total cap the daemon lowers --max-control-connections (512) to
CAP_PEER = 8           # --max-control-connections-per-peer
IDLE = 15              # --control-idle-timeout, seconds
PEERS = 40             # hostile addresses 127.0.0.2 ...
PER_PEER = 16          # connections each
# omniORB serves at most 128 connections on threads of their own, then from
# its pool of at most 100 threads; the daemon's own come on top.
MAX_THREADS = 300
CLK_TCK = os.sysconf("SC_CLK_TCK")




def connect(host, port, source):
    """A raw idle connection from `source`, or None when the daemon does not
    take it within 3 s (its listen queue full)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(3)
    try:
        s.connect((host, port))
    except OSError:
        s.close()
        return None
    s.setblocking(False)
    return s


def is_closed(s):
    """True once the daemon closed `s` (EOF or reset); never blocks."""
    try:
        return s.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def options(c):
    step("range checks of the control port's options")
    daemon = harness.program("blobstore/blobstored")
    cases = [
        (["--max-control-connections", "15"], '--max-control-connections: "15" is out of range (allowed: 16 to 65536)'),
        (["--max-control-connections", "65537"],
         '--max-control-connections: "65537" is out of range (allowed: 16 to 65536)'),
        (["--max-control-connections", "1k"], '--max-control-connections: "1k" is not a whole number'),
        (["--max-control-connections-per-peer", "0"],
         '--max-control-connections-per-peer: "0" is out of range (allowed: 1 to 4096)'),
        (["--max-control-connections-per-peer", "4097"],
         '--max-control-connections-per-peer: "4097" is out of range (allowed: 1 to 4096)'),
        (["--control-idle-timeout", "0"], '--control-idle-timeout: "0" is out of range (allowed: 1 to 3600 seconds)'),
        (["--control-idle-timeout", "2h"],
         '--control-idle-timeout: "2h" is out of range (allowed: 1 to 3600 seconds)'),
        (["--control-idle-timeout", "soon"],
         '--control-idle-timeout: "soon" is not a duration (a number of seconds, or a number with ms, s, m or h)'),
    ]
    for extra, message in cases:
        code, out, err = c.run([daemon, "--name", "x", "--store", "memory:1M", "--naming", c.naming] + extra,
                               timeout=30)
        check_equal((code, err.strip()), (1, f"blobstored: {message} (see blobstored --help)"),
                    f"blobstored {' '.join(extra)}")
    code, out, _ = c.run([daemon, "--help"], timeout=30)
    check_equal(code, 0, "blobstored --help exit status")
    for option, default in (("--max-control-connections", "512"), ("--max-control-connections-per-peer", "64"),
                            ("--control-idle-timeout", "30")):
        check(re.search(rf"{re.escape(option)} \S+ \(=\s*{default}\)", out) is not None,
              f"blobstored --help does not show {option} with its default {default}")


def flood(c):
    harness.ensure_descriptors(PEERS * PER_PEER + 256)

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))

    daemon = c.start_daemon("control", "file", preexec_fn=low_limit,
                            extra=["--no-sync", "--max-control-connections-per-peer", str(CAP_PEER),
                                   "--control-idle-timeout", str(IDLE)])
    host, _, port = daemon.ready["control"].rpartition(":")
    port = int(port)
    log = log_text(daemon)
    check(f"control port: at most {CAP_TOTAL} connections instead of 512: an eighth of the descriptor limit "
          f"({NOFILE})" in log, "the daemon's log does not say the total cap was lowered to fit the descriptors")
    check(f"at most {CAP_TOTAL} connections, {CAP_PEER} per address; idle ones closed after {IDLE} s" in log,
          "the daemon's log does not state the control port's caps")
    seed = c.path("seed")
    seed_digest = harness.write_random(seed, MiB)
    c.blob("push", "--name", "CT.seed", seed, store="control").ok()

    step(f"flood: {PEERS} addresses x {PER_PEER} idle connections to the control port {host}:{port}")
    t0 = time.monotonic()
    socks = []  # (peer, socket)
    unanswered = 0
    for p in range(PEERS):
        peer = f"127.0.0.{p + 2}"
        for _ in range(PER_PEER):
            s = connect(host, port, peer)
            if s is None:
                unanswered += 1
                if time.monotonic() - t0 > 30:
                    break
            else:
                socks.append((peer, s))
    made = time.monotonic() - t0
    step(f"{len(socks)} connections made in {made:.2f} s, {unanswered} not taken")
    check_equal(unanswered, 0, "connections the daemon did not take within 3 s")
    open_socks = list(socks)

    def settle():
        nonlocal open_socks
        open_socks = [(p, s) for p, s in open_socks if not is_closed(s)]
        held = {}
        for p, _ in open_socks:
            held[p] = held.get(p, 0) + 1
        return len(open_socks) <= CAP_TOTAL and max(held.values(), default=0) <= CAP_PEER

    # Long before the idle timeout: what is closed is the caps' doing.
    try:
        harness.wait_for(settle, IDLE * 0.6, f"at most {CAP_TOTAL} flood connections open, {CAP_PEER} per address")
    except harness.TestFailure:
        held = {}
        for p, _ in open_socks:
            held[p] = held.get(p, 0) + 1
        step(f"still open: {len(open_socks)} {held}; daemon descriptors {len(os.listdir(f'/proc/{daemon.pid}/fd'))}, "
             f"CPU {cpu_seconds(daemon.pid):.2f} s, threads {harness.proc_status(daemon.pid, 'Threads')}")
        raise
    elapsed = time.monotonic() - t0
    per_peer = {}
    for p, _ in open_socks:
        per_peer[p] = per_peer.get(p, 0) + 1
    step(f"{len(socks) - len(open_socks)} closed ({elapsed:.2f} s after the flood began), {len(open_socks)} open "
         f"from {len(per_peer)} addresses, at most {max(per_peer.values())} each")
    check(len(open_socks) >= CAP_TOTAL // 2,
          f"only {len(open_socks)} flood connections left open: the total cap is {CAP_TOTAL}")

    def descriptors():
        return len(os.listdir(f"/proc/{daemon.pid}/fd"))

    # omniORB closes what the gate ended as it notices the end.
    harness.wait_for(lambda: descriptors() < NOFILE // 4, 5, f"the daemon to hold fewer than {NOFILE // 4} descriptors")
    threads = harness.proc_status(daemon.pid, "Threads")
    step(f"daemon threads {threads}, descriptors {descriptors()} of {NOFILE}")
    check(threads < MAX_THREADS, f"the daemon holds {threads} threads for {len(socks)} connections "
                                 f"(limit {MAX_THREADS})")

    step("the caps reached: more connections pending; no busy loop, stat, push and pull from 127.0.0.1 succeed")
    settled = len(open_socks)
    cpu0, wall0 = cpu_seconds(daemon.pid), time.monotonic()
    more = [("127.0.0.2", connect(host, port, "127.0.0.2")) for _ in range(CAP_PEER)]
    newcomer = connect(host, port, "127.0.0.99")
    check(all(s is not None for _, s in more) and newcomer is not None,
          "the daemon did not take a connection while capped")
    stat = c.blob("stat", "CT.seed", store="control", timeout=60).ok()
    check_equal(stat["checksum"], seed_digest, "checksum of CT.seed by stat during the flood")
    source = c.path("during")
    digest = harness.write_random(source, 2 * MiB + 5)
    pushed = c.blob("push", "--name", "CT.during", source, store="control", timeout=60).ok()
    check_equal(pushed["checksum"], digest, "checksum reported by the push during the flood")
    pulled = c.path("during.pulled")
    c.blob("--no-local", "pull", "CT.during", pulled, store="control", timeout=60).ok()
    check_equal(harness.checksum_file(pulled), digest, "checksum of CT.during pulled during the flood")
    time.sleep(max(0.0, 3.0 - (time.monotonic() - wall0)))  # a window of 3 s at least to measure CPU over
    cpu, wall = cpu_seconds(daemon.pid) - cpu0, time.monotonic() - wall0
    step(f"daemon CPU during the flood: {cpu:.2f} s in {wall:.2f} s")
    check(cpu < 0.4 * wall, f"the flooded daemon used {cpu:.2f} s of CPU in {wall:.2f} s (a busy loop?)")
    open_socks += more
    check(settle(), "the flood connections exceed the caps after more came from 127.0.0.2")
    check(not is_closed(newcomer), "a connection from a new address was refused while the others held 2 each")
    check(time.monotonic() - t0 < IDLE - 2, "the steps took too long to tell the caps from the idle timeout")
    # Each newcomer (the clients', 127.0.0.2's, 127.0.0.99's) ended one at most.
    check(len(open_socks) >= settled - CAP_PEER - 8,
          f"{settled + CAP_PEER - len(open_socks)} idle flood connections closed before the idle timeout")

    step(f"the flood connections left are closed once idle for {IDLE} s")
    harness.wait_for(lambda: settle() and not open_socks, IDLE + 10,
                     "the daemon to close the idle flood connections")
    done = time.monotonic() - t0
    step(f"all closed {done:.2f} s after the flood began")
    check(done >= IDLE - 1.5, f"the idle flood connections were closed {done:.2f} s after the flood began, before "
                              f"the {IDLE} s idle timeout")
    for _, s in socks + more:
        s.close()
    newcomer.close()
    harness.wait_for(lambda: re.search(r"connections refused: [1-9]\d* \(an address at its cap of 8\)",
                                       log_text(daemon)), 20, "the summary of refused connections in the log")
    log = log_text(daemon)
    check(re.search(rf"connection from 127\.0\.0\.\d+ refused: {CAP_PEER} connections from that address already "
                    rf"\(at most {CAP_PEER} per address\)", log) is not None,
          "the daemon's log does not name the per-address cap")
    individual = log.count(" refused: ")
    check(individual <= 64, f"{individual} refusal lines for {PEERS * PER_PEER} connections: not rate-limited")

    step("after the flood: stat")
    check(daemon.running(), "the flooded daemon exited")
    c.blob("stat", "CT.during", store="control", timeout=60).ok()


def test(c):
    options(c)
    flood(c)


if __name__ == "__main__":
    harness.main(test)
