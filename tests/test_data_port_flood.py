#!/usr/bin/env python3
"""Idle and flooding connections on the data port cannot shut a store out.

Without any credential, thousands of idle TCP connections used to exhaust
blobstored's descriptors: they never timed out, accept() then failed with
EMFILE in a busy loop (~200 % CPU) and even the control plane stopped
answering. docs/PROTOCOL.md "Connections" promises instead:

1. Deadlines (--handshake-timeout 2, --idle-timeout 3): a silent connection,
   one that sent part of a Request, and one that trickles a Request byte by
   byte are all closed once the handshake timeout has passed since they
   connected, not before. A libblobclient Session's pooled connection is
   closed after the idle timeout; the next transfer of that Session opens a
   new one and succeeds (two transfers in a row share one connection).
2. Caps (descriptor limit 1024, --max-unauthenticated 200,
   --max-unauthenticated-per-peer 32): 40 peer addresses (127.0.0.2 ...)
   open 40 idle connections each. Each address's 33rd to 40th connections
   are closed at once; above 200 without a ticket the oldest ones are
   closed for the newcomers; exactly 200 stay open, within seconds, long
   before the handshake timeout. Meanwhile the daemon does not spin (its
   CPU time grows by less than 40 % of the wall time), `blob stat` answers
   and a real push and pull (checksums checked) succeed. The remaining ones
   are closed at the handshake timeout. The refusals are logged at a
   limited rate.
3. Out of descriptors (the daemon's soft limit lowered under it with
   prlimit): the pending connections are accepted and closed with the
   descriptor kept in reserve, the daemon does not spin, and once the
   limit is back it serves again.
4. The new options are range-checked with exact messages.
"""

import os
import re
import resource
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, cpu_seconds, log_text, MiB, step  # noqa: E402

HANDSHAKE = 2          # --handshake-timeout of the first daemon, seconds
IDLE = 3               # --idle-timeout of the first daemon, seconds
FLOOD_HANDSHAKE = 10   # --handshake-timeout of the flooded daemon, seconds
FLOOD_NOFILE = 1024    # its descriptor limit (soft and hard)
CAP_TOTAL = 200        # --max-unauthenticated
CAP_PEER = 32          # --max-unauthenticated-per-peer
PEERS = 40             # flooding addresses 127.0.0.2 ...
PER_PEER = 40          # connections each
CLK_TCK = os.sysconf("SC_CLK_TCK")




def connect(port, source="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
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


def limit_leaving(pid, free):
    """A descriptor limit under which process `pid` can open only `free` more
    descriptors: a descriptor's number must be below the limit, and the
    lowest free numbers are taken first."""
    used = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}
    n = 0
    while True:
        if n not in used:
            free -= 1
            if free == 0:
                return n + 1
        n += 1


def round_trip(c, store, name, size):
    source = c.path(f"{name}.src")
    digest = harness.write_random(source, size)
    pushed = c.blob("--timeout", "20", "push", "--name", name, source, store=store, timeout=120).ok()
    check_equal(pushed["checksum"], digest, f"checksum reported by push {name}")
    pulled = c.path(f"{name}.pulled")
    c.blob("--timeout", "20", "--no-local", "pull", name, pulled, store=store, timeout=120).ok()
    check_equal(harness.checksum_file(pulled), digest, f"checksum of {name} pulled over the data port")


def transfer_port(daemon, verb, name):
    """The client port of the data connection that carried `verb name`."""
    m = re.search(rf"transfer direction={verb} blob={re.escape(name)} .* peer=127\.0\.0\.1:(\d+) outcome=ok",
                  log_text(daemon))
    check(m is not None, f"the daemon's log has no line for {verb} {name}")
    return int(m.group(1))


def deadlines(c):
    daemon = c.start_daemon("idle", "file", extra=["--no-sync", "--handshake-timeout", str(HANDSHAKE),
                                                   "--idle-timeout", str(IDLE)])
    port = daemon.data[1]

    step("silent, partial and trickling connections: closed at the handshake timeout")
    t0 = time.monotonic()
    silent = connect(port)
    partial = connect(port)
    partial.send(b"\x01" * 10)  # 10 of the 40 bytes of a Request
    trickle = connect(port)
    stop = threading.Event()

    def trickler():  # one byte every 0.25 s: progress, but never a whole Request in time
        for _ in range(39):
            if stop.wait(0.25):
                return
            try:
                trickle.send(b"\x02")
            except OSError:
                return

    threading.Thread(target=trickler, daemon=True).start()
    closed_at = {}
    socks = {"silent": silent, "partial": partial, "trickle": trickle}

    def all_closed():
        for what, s in socks.items():
            if what not in closed_at and is_closed(s):
                closed_at[what] = time.monotonic() - t0
        return len(closed_at) == len(socks)

    harness.wait_for(all_closed, HANDSHAKE + 20, "the daemon to close the silent, partial and trickling connections")
    stop.set()
    step("closed after " + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(closed_at.items())))
    for what, at in closed_at.items():
        check(at >= HANDSHAKE * 0.9, f"the {what} connection was closed after {at:.2f} s, before the "
                                     f"{HANDSHAKE} s handshake timeout")
        socks[what].close()
    log = log_text(daemon)
    for reason in ("nothing received", "10 of 40 bytes of a Request received"):
        check(f"closed: no valid Request within {HANDSHAKE:.1f} s of connecting (handshake timeout; {reason})"
              in log, f"the daemon's log does not say why the connection with {reason} was closed")

    step("a pooled connection idle for the idle timeout is closed; the Session's next transfer succeeds")
    shell = harness.DriverShell(c, "idle")
    first = shell.ok("push CT.pooled 300000")
    again = shell.ok("push CT.pooled2 200000")
    reused = transfer_port(daemon, "push", "CT.pooled")
    check_equal(transfer_port(daemon, "push", "CT.pooled2"), reused,
                "client port of a second transfer right after the first (a reused pooled connection)")
    t_idle = time.monotonic()
    idle_line = f"data connection 127.0.0.1:{reused}: closed after"
    harness.wait_for(lambda: idle_line in log_text(daemon), IDLE + 20, "the daemon to close the idle pooled connection")
    waited = time.monotonic() - t_idle
    check(f"idle between transfers (idle timeout {IDLE:.1f} s)" in log_text(daemon),
          "the daemon's log does not name the idle timeout")
    check(waited >= IDLE * 0.8, f"the pooled connection was closed {waited:.2f} s after its last transfer, before "
                                f"the {IDLE} s idle timeout")
    pulled = shell.ok("pull CT.pooled")
    check_equal(pulled["checksum"], first["checksum"], "checksum of CT.pooled pulled after its connection was closed")
    check(transfer_port(daemon, "pull", "CT.pooled") != reused,
          "the pull after the idle close went over the closed connection's port")
    pulled2 = shell.ok("pull CT.pooled2")
    check_equal(pulled2["checksum"], again["checksum"], "checksum of CT.pooled2")
    daemon.stop()


def flood(c):
    harness.ensure_descriptors(PEERS * PER_PEER + 256)

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (FLOOD_NOFILE, FLOOD_NOFILE))

    daemon = c.start_daemon("flood", "file", preexec_fn=low_limit,
                            extra=["--no-sync", "--handshake-timeout", str(FLOOD_HANDSHAKE),
                                   "--max-unauthenticated", str(CAP_TOTAL),
                                   "--max-unauthenticated-per-peer", str(CAP_PEER)])
    port = daemon.data[1]
    check(f"epoll reactor, {FLOOD_NOFILE} handles, descriptor limit {FLOOD_NOFILE}; at most 480 data connections, "
          f"{CAP_TOTAL} without a valid ticket, {CAP_PEER} per peer address" in log_text(daemon),
          "the daemon's log does not state its descriptor limit and caps")
    seed = c.path("seed")
    seed_digest = harness.write_random(seed, MiB)
    c.blob("push", "--name", "CT.seed", seed, store="flood").ok()

    step(f"flood: {PEERS} addresses x {PER_PEER} idle connections")
    t0 = time.monotonic()
    socks = []  # (peer, socket)
    for p in range(PEERS):
        peer = f"127.0.0.{p + 2}"
        for _ in range(PER_PEER):
            socks.append((peer, connect(port, peer)))
    step(f"{len(socks)} connections made in {time.monotonic() - t0:.2f} s")
    open_socks = list(socks)

    def settle():
        nonlocal open_socks
        open_socks = [(p, s) for p, s in open_socks if not is_closed(s)]
        return len(open_socks) <= CAP_TOTAL

    # Long before the handshake timeout: what is left open is the caps' doing.
    harness.wait_for(settle, FLOOD_HANDSHAKE * 0.7, f"the daemon to close all but {CAP_TOTAL} connections")
    elapsed = time.monotonic() - t0
    check_equal(len(open_socks), CAP_TOTAL, "connections left open by the caps")
    per_peer = {}
    for p, _ in open_socks:
        per_peer[p] = per_peer.get(p, 0) + 1
    check(max(per_peer.values()) <= CAP_PEER, f"a peer holds more than {CAP_PEER} connections: {per_peer}")
    step(f"{len(socks) - len(open_socks)} closed at once ({elapsed:.2f} s after the flood began), "
         f"{len(open_socks)} open from {len(per_peer)} peers")

    step("during the flood: no busy loop, stat answers, a real push and pull succeed")
    cpu0, wall0 = cpu_seconds(daemon.pid), time.monotonic()
    stat = c.blob("stat", "CT.seed", store="flood", timeout=60).ok()
    check_equal(stat["checksum"], seed_digest, "checksum of CT.seed by stat during the flood")
    round_trip(c, "flood", "CT.during", 2 * MiB + 5)
    time.sleep(max(0.0, 3.0 - (time.monotonic() - wall0)))  # a window of 3 s at least to measure CPU over
    cpu, wall = cpu_seconds(daemon.pid) - cpu0, time.monotonic() - wall0
    step(f"daemon CPU during the flood: {cpu:.2f} s in {wall:.2f} s")
    check(cpu < 0.4 * wall, f"the flooded daemon used {cpu:.2f} s of CPU in {wall:.2f} s (a busy loop?)")

    step("the flooding connections left are closed at the handshake timeout")
    harness.wait_for(lambda: settle() and not open_socks, FLOOD_HANDSHAKE + 20,
                   "the daemon to close the remaining flooding connections")
    step(f"all closed {time.monotonic() - t0:.2f} s after the flood began")
    for _, s in socks:
        s.close()
    harness.wait_for(lambda: "more refused or evicted data connections in the last" in log_text(daemon), 30,
                   "the summary line of the rate-limited refusals")
    log = log_text(daemon)
    check(f"connections from this address have not presented a ticket yet (cap {CAP_PEER})" in log,
          "the daemon's log does not name the per-peer cap")
    individual = log.count("refused: ") + log.count("its slot goes to a new connection")
    check(individual <= 60, f"{individual} refusal lines for {PEERS * PER_PEER} connections: not rate-limited")

    step("out of descriptors: the daemon's soft limit lowered under it")
    dsoft, dhard = resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE)
    resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE, (limit_leaving(daemon.pid, 2), dhard))
    try:
        burst = [connect(port, "127.0.0.99") for _ in range(24)]
        left = list(burst)

        def refused_most():
            nonlocal left
            left = [s for s in left if not is_closed(s)]
            return len(left) <= 4

        harness.wait_for(refused_most, 8, "the daemon to accept and close the connections it has no descriptor for")
        cpu0, wall0 = cpu_seconds(daemon.pid), time.monotonic()
        more = [connect(port, "127.0.0.98") for _ in range(8)]
        time.sleep(2.0)  # a window to measure CPU over while out of descriptors
        cpu, wall = cpu_seconds(daemon.pid) - cpu0, time.monotonic() - wall0
        step(f"out of descriptors: {len(burst) - len(left)} of {len(burst)} closed at once; "
             f"daemon CPU {cpu:.2f} s in {wall:.2f} s")
        check(cpu < 0.4 * wall, f"the daemon out of descriptors used {cpu:.2f} s of CPU in {wall:.2f} s")
        check("data port: out of descriptors (Too many open files)" in log_text(daemon),
              "the daemon's log does not say it ran out of descriptors")
    finally:
        resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE, (dsoft, dhard))
    for s in burst + more:
        s.close()

    step("after the flood: stat, push and pull")
    check(daemon.running(), "the flooded daemon exited")
    stat = c.blob("stat", "CT.seed", store="flood", timeout=60).ok()
    check_equal(stat["checksum"], seed_digest, "checksum of CT.seed by stat after the flood")
    round_trip(c, "flood", "CT.after", 3 * MiB)


def options(c):
    step("range checks of the new options")
    daemon = harness.program("blobstore/blobstored")
    cases = [
        (["--handshake-timeout", "0"], '--handshake-timeout: "0" is out of range (allowed: 0.1 to 3600 seconds)'),
        (["--handshake-timeout", "5x"], '--handshake-timeout: "5x" is not a duration (a number of seconds, or a number with ms, s, m or h)'),
        (["--idle-timeout", "86401"], '--idle-timeout: "86401" is out of range (allowed: 0.1 to 86400 seconds)'),
        (["--idle-timeout", "abc"], '--idle-timeout: "abc" is not a duration (a number of seconds, or a number with ms, s, m or h)'),
        (["--max-unauthenticated", "0"], '--max-unauthenticated: "0" is out of range (allowed: 1 to 1000000)'),
        (["--max-unauthenticated", "1000001"],
         '--max-unauthenticated: "1000001" is out of range (allowed: 1 to 1000000)'),
        (["--max-unauthenticated", "1e3"], '--max-unauthenticated: "1e3" is not a whole number'),
        (["--max-unauthenticated-per-peer=-3"], '--max-unauthenticated-per-peer: "-3" is not a whole number'),
        (["--max-unauthenticated-per-peer", "99999999999999999999999"],
         '--max-unauthenticated-per-peer: "99999999999999999999999" is out of range (allowed: 1 to 1000000)'),
    ]
    for extra, message in cases:
        code, out, err = c.run([daemon, "--name", "x", "--store", "memory:1M", "--naming", c.naming] + extra,
                               timeout=30)
        check_equal((code, err.strip()), (1, f"blobstored: {message} (see blobstored --help)"),
                    f"blobstored {' '.join(extra)}")
    code, out, _ = c.run([daemon, "--help"], timeout=30)
    check_equal(code, 0, "blobstored --help exit status")
    for option, default in (("--handshake-timeout", "5"), ("--idle-timeout", "60"),
                            ("--max-unauthenticated", "1024"), ("--max-unauthenticated-per-peer", "64")):
        check(re.search(rf"{re.escape(option)} \S+ \(=\s*{default}\)", out) is not None,
              f"blobstored --help does not show {option} with its default {default}")


def test(c):
    options(c)
    deadlines(c)
    flood(c)


if __name__ == "__main__":
    harness.main(test)
