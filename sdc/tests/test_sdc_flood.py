#!/usr/bin/env python3
"""Idle connections to the SDC port cannot make the store unreachable.

The SDC server of `blobstored --sdc-address` (and of sdc-provider) had no
connection cap and kept idle connections 300 s; they share the daemon's
descriptors with the control and data planes, so enough idle connections to
the SDC port made `blob push`, `pull` and `stat` exit 51. Now
(HttpServerOptions, docs/SECURITY.md) the data port's rule applies:

1. Per peer (blobstored, descriptor limit lowered to leave room for 6 x 64
   connections and 48 more): 6 addresses (127.0.0.2 ...) open 80
   connections each, send one request and stay idle. Each address's 65th to
   80th connections are closed at once, the first 64 stay open; meanwhile
   `blob stat`, a push and a pull succeed (checksums checked), sdc-get reads
   the store's metrics, and the daemon does not spin.
2. Handshake deadline: a connection that sends nothing, and one that sends
   part of a request header, are closed 5 s after connecting (not at the
   header timeout of 10 s, nor the idle timeout).
3. Out of descriptors (the daemon's soft limit lowered under it with
   prlimit): the pending SDC connections are accepted and closed with the
   descriptor kept in reserve, the daemon does not spin, and once the limit
   is back sdc-get and `blob stat` answer.
4. Total cap (sdc-provider --max-connections 100): 160 connections that
   each made a request and went idle leave the 100 newest open (the
   longest idle are closed for the newcomers) and a legitimate GetMdState
   still answers. The new options are range-checked.
5. TLS (sdc-provider --handshake-timeout 1500): a connection silent before
   the TLS handshake, and one that completes it and sends part of a request
   header, are closed 1.5 s after connecting; one that sends a whole
   request is answered and stays open past that deadline.
"""

import json
import os
import resource
import socket
import ssl
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keeps the source tree free of __pycache__
sys.path.insert(0, os.path.join(os.environ.get("BS_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                                "tests"))
import harness  # noqa: E402
from harness import check, check_equal, cpu_seconds, MiB, program, start_service, step, wait_for  # noqa: E402
from sdclib import make_pki, tls_options  # noqa: E402

NOFILE = 512          # the daemon's descriptor limit at exec (soft and hard)
PEERS = 6             # flooding addresses 127.0.0.2 ...
PER_PEER = 80         # connections each
CAP_PEER = 64         # HttpServerOptions::max_connections_per_peer (default)
SPARE = 48            # descriptors left to the daemon besides the capped flood
HANDSHAKE = 5.0       # HttpServerOptions::handshake_timeout (default), seconds
REQUEST = b"GET /timestamps?last=0 HTTP/1.1\r\nHost: flood\r\n\r\n"
CLK_TCK = os.sysconf("SC_CLK_TCK")



def descriptors(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def limit_leaving(pid, free):
    """A descriptor limit under which process `pid` can open only `free` more
    descriptors (the lowest free numbers are taken first)."""
    used = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}
    n = 0
    while True:
        if n not in used:
            free -= 1
            if free == 0:
                return n + 1
        n += 1


def connect(port, source="127.0.0.1", request=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    if request:
        s.sendall(request)
    s.setblocking(False)
    return s


def is_closed(s):
    """True once the daemon closed `s` (EOF or reset); drains what it sent; never blocks."""
    for _ in range(64):
        try:
            data = s.recv(65536)
        except BlockingIOError:
            return False
        except OSError:
            return True
        if data == b"":
            return True
    return False


def answer_of(s, timeout=10):
    """Reads one HTTP response with a Content-Length from blocking socket `s`."""
    s.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        check(chunk != b"", f"connection closed before an answer: {data[:200]!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = s.recv(65536)
        check(chunk != b"", "connection closed in the middle of an answer")
        body += chunk
    return head.split(b"\r\n")[0].decode()


def round_trip(c, store, name, size):
    source = c.path(f"{name}.src")
    digest = harness.write_random(source, size)
    pushed = c.blob("--timeout", "20", "push", "--name", name, source, store=store, timeout=60).ok()
    check_equal(pushed["checksum"], digest, f"checksum reported by push {name}")
    pulled = c.path(f"{name}.pulled")
    c.blob("--timeout", "20", "--no-local", "pull", name, pulled, store=store, timeout=60).ok()
    check_equal(harness.checksum_file(pulled), digest, f"checksum of {name} pulled over the data port")


def sdc_metrics(c, url):
    out = subprocess.run([program("sdc/sdc-get"), "--url", url, "--json", "state"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=60, env=c.env)
    check(out.returncode == 0, f"sdc-get --url {url} state exited {out.returncode}: {out.stderr.strip()}")
    return {s["descriptor_handle"]: s["value"] for s in json.loads(out.stdout)["states"]
            if s["type"] == "NumericMetricState"}


def store_flood(c):
    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))

    daemon = c.start_daemon("sdcflood", "memory:64M", preexec_fn=low_limit,
                            extra=["--sdc-address", "127.0.0.1:0", "--naming-check", "600"])
    url = daemon.ready["sdc"]
    port = int(url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
    seed = c.path("seed")
    seed_digest = harness.write_random(seed, MiB)
    c.blob("push", "--name", "CT.seed", seed, store="sdcflood").ok()
    check_equal(sdc_metrics(c, url).get("blobstore.blob_count"), "1", "SDC blob count before the flood")
    wait_for(lambda: descriptors(daemon.pid) < 100, 20, "the daemon's descriptors to settle after the seed push")
    base = descriptors(daemon.pid)
    held = PEERS * CAP_PEER
    limit = base + held + SPARE
    check(limit <= NOFILE, f"the daemon uses {base} descriptors at rest: no room for {held} + {SPARE} under {NOFILE}")
    _, hard = resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE)
    resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE, (limit, hard))
    step(f"daemon: {base} descriptors in use, limit lowered to {limit} "
         f"({PEERS} x {PER_PEER} = {PEERS * PER_PEER} flooding connections would need more)")

    step("a silent connection and a partial request header: closed at the handshake deadline")
    t0 = time.monotonic()
    silent = connect(port)
    partial = connect(port, request=b"GET /timestamps?last=0 HTTP/1.1\r\nHo")

    step(f"flood: {PEERS} addresses x {PER_PEER} connections, one request each, then idle")
    flood = {}  # peer -> [sockets in the order they connected]
    for p in range(PEERS):
        peer = f"127.0.0.{p + 2}"
        flood[peer] = [connect(port, peer, REQUEST) for _ in range(PER_PEER)]
    step(f"{PEERS * PER_PEER} connections made in {time.monotonic() - t0:.2f} s")
    refused = PEERS * (PER_PEER - CAP_PEER)

    def closed_by_peer():
        return {peer: [i for i, s in enumerate(socks) if is_closed(s)] for peer, socks in flood.items()}

    wait_for(lambda: sum(len(v) for v in closed_by_peer().values()) >= refused, HANDSHAKE * 0.6,
             f"the daemon to close the {refused} connections beyond {CAP_PEER} per address")
    for peer, closed in closed_by_peer().items():
        check_equal(closed, list(range(CAP_PEER, PER_PEER)), f"connections from {peer} closed by the per-peer cap "
                                                             f"(indices in connection order)")
    step(f"{refused} closed at once ({time.monotonic() - t0:.2f} s after the flood began), "
         f"{held} open; the daemon holds {descriptors(daemon.pid)} descriptors")

    step("while they are held: no busy loop, stat, push, pull and an SDC get succeed")
    cpu0, wall0 = cpu_seconds(daemon.pid), time.monotonic()
    stat = c.blob("stat", "CT.seed", store="sdcflood", timeout=60).ok()
    check_equal(stat["checksum"], seed_digest, "checksum of CT.seed by stat during the flood")
    round_trip(c, "sdcflood", "CT.during", 2 * MiB + 5)
    metrics = sdc_metrics(c, url)
    check_equal(metrics.get("blobstore.blob_count"), "2", "SDC blob count during the flood")
    time.sleep(max(0.0, 2.0 - (time.monotonic() - wall0)))  # a window of 2 s at least to measure CPU over
    cpu, wall = cpu_seconds(daemon.pid) - cpu0, time.monotonic() - wall0
    step(f"daemon CPU during the flood: {cpu:.2f} s in {wall:.2f} s")
    check(cpu < 0.4 * wall, f"the flooded daemon used {cpu:.2f} s of CPU in {wall:.2f} s (a busy loop?)")

    closed_at = {}
    socks = {"silent": silent, "partial header": partial}

    def both_closed():
        for what, s in socks.items():
            if what not in closed_at and is_closed(s):
                closed_at[what] = time.monotonic() - t0
        return len(closed_at) == len(socks)

    wait_for(both_closed, HANDSHAKE + 10, "the daemon to close the silent and the partial connection")
    step("closed after " + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(closed_at.items())))
    for what, at in closed_at.items():
        check(HANDSHAKE * 0.9 <= at <= HANDSHAKE + 3,
              f"the {what} connection was closed {at:.2f} s after connecting, expected {HANDSHAKE:.0f} s")
        socks[what].close()
    still = sum(1 for socks_ in flood.values() for s in socks_[:CAP_PEER] if not is_closed(s))
    check_equal(still, held, "flooding connections that made a request, still open (idle timeout 60 s)")
    for socks_ in flood.values():
        for s in socks_:
            s.close()
    wait_for(lambda: descriptors(daemon.pid) <= base + 8, 20, "the daemon to close its side of the flood")

    step("out of descriptors: the daemon's soft limit lowered to leave 2 free")
    resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE, (limit_leaving(daemon.pid, 2), hard))
    burst, more = [], []
    try:
        burst = [connect(port, "127.0.0.99") for _ in range(24)]
        left = list(burst)

        def refused_most():
            nonlocal left
            left = [s for s in left if not is_closed(s)]
            return len(left) <= 4

        wait_for(refused_most, 4, "the daemon to accept and close the SDC connections it has no descriptor for")
        cpu0, wall0 = cpu_seconds(daemon.pid), time.monotonic()
        more = [connect(port, "127.0.0.98") for _ in range(8)]
        time.sleep(2.0)  # a window to measure CPU over while out of descriptors
        cpu, wall = cpu_seconds(daemon.pid) - cpu0, time.monotonic() - wall0
        step(f"out of descriptors: {len(burst) - len(left)} of {len(burst)} closed at once; "
             f"daemon CPU {cpu:.2f} s in {wall:.2f} s")
        check(cpu < 0.2 * wall, f"the daemon out of descriptors used {cpu:.2f} s of CPU in {wall:.2f} s")
    finally:
        resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE, (limit, hard))
    for s in burst + more:
        s.close()

    step("after the flood: stat and an SDC get")
    check(daemon.running(), "the flooded daemon exited")
    stat = c.blob("stat", "CT.seed", store="sdcflood", timeout=60).ok()
    check_equal(stat["checksum"], seed_digest, "checksum of CT.seed by stat after the flood")
    check_equal(sdc_metrics(c, url).get("blobstore.blob_count"), "2", "SDC blob count after the flood")
    daemon.stop()


def provider_total_cap(c):
    step("sdc-provider --max-connections 100 --max-connections-per-peer 40: 160 idle connections from 4 addresses")
    mdib = os.path.join(harness.src_dir(), "sdc", "tests", "data", "mdib.xml")
    provider = start_service("sdc-provider", [program("sdc/sdc-provider"), "--mdib", mdib, "--address",
                                              "127.0.0.1:0", "--no-discovery", "--max-connections", "100",
                                              "--max-connections-per-peer", "40"],
                             "sdc-provider ready", 60, env=c.env, out_path=c.path("sdc-provider.out"),
                             err_path=c.path("sdc-provider.err"), text=True, start_new_session=True,
                             track=c.processes)
    port = int(provider.ready["address"].rsplit(":", 1)[1])
    socks = []
    for p in range(4):
        for _ in range(40):
            s = connect(port, f"127.0.0.{p + 2}", REQUEST)
            s.setblocking(True)
            check_equal(answer_of(s), "HTTP/1.1 200 OK", "answer to a flooding connection's request")
            s.setblocking(False)
            socks.append(s)
    wait_for(lambda: sum(1 for s in socks if is_closed(s)) >= 60, 10, "the provider to close 60 connections")
    closed = [i for i, s in enumerate(socks) if is_closed(s)]
    check_equal(closed, list(range(60)), "connections closed for newcomers (the longest idle, in order)")
    answer = subprocess.run([program("sdc/sdc-get"), "--url", provider.ready["url"], "--json", "state", "mds0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60, env=c.env)
    check_equal((answer.returncode, answer.stderr.strip()), (0, ""), "sdc-get state at the total cap")
    closed = [i for i, s in enumerate(socks) if is_closed(s)]
    check(closed == list(range(len(closed))) and len(closed) > 60,
          f"the legitimate client's connection did not take the longest idle slot: closed {closed}")
    step(f"at the cap, sdc-get answered; {len(closed)} of {len(socks)} flooding connections closed, the oldest")
    for s in socks:
        s.close()
    provider.stop()

    step("range checks of the new options")
    cases = [
        (["--max-connections", "0"], '--max-connections: "0" is out of range (allowed: 1 to 1000000)'),
        (["--max-connections-per-peer", "x"], '--max-connections-per-peer: "x" is not a whole number'),
        (["--handshake-timeout", "0"], None),
    ]
    for extra, message in cases:
        out = subprocess.run([program("sdc/sdc-provider"), "--mdib", mdib, *extra], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=30, env=c.env)
        check_equal(out.returncode, 1, f"sdc-provider {' '.join(extra)} exit status")
        if message:
            check_equal(out.stderr.strip(), f"sdc-provider: {message} (try --help)", f"sdc-provider {' '.join(extra)}")
        else:
            check("--handshake-timeout" in out.stderr, f"sdc-provider {' '.join(extra)}: {out.stderr.strip()}")


def closed_after(s, t0, limit):
    """Seconds from `t0` until the peer closed blocking socket `s` (waits at most `limit` s)."""
    s.settimeout(limit)
    try:
        while s.recv(4096):
            pass
    except socket.timeout:
        raise harness.TestFailure(f"the connection was still open {time.monotonic() - t0:.2f} s after connecting")
    except OSError:
        pass
    return time.monotonic() - t0


def provider_tls(c):
    step("TLS: sdc-provider --handshake-timeout 1500")
    pki = make_pki(c.path())
    mdib = os.path.join(harness.src_dir(), "sdc", "tests", "data", "mdib.xml")
    provider = start_service("sdc-provider-tls", [program("sdc/sdc-provider"), "--mdib", mdib, "--address",
                                                  "127.0.0.1:0", "--no-discovery", "--handshake-timeout", "1500",
                                                  *tls_options(pki, "provider")],
                             "sdc-provider ready", 60, env=c.env, out_path=c.path("sdc-provider-tls.out"),
                             err_path=c.path("sdc-provider-tls.err"), text=True, start_new_session=True,
                             track=c.processes)
    port = int(provider.ready["address"].rsplit(":", 1)[1])
    context = ssl.create_default_context(cafile=pki["ca"])
    context.load_cert_chain(pki["consumer_cert"], pki["consumer_key"])

    def tls_connect():
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        return time.monotonic(), context.wrap_socket(raw, server_hostname="127.0.0.1")

    t_silent = time.monotonic()
    silent = socket.create_connection(("127.0.0.1", port), timeout=10)
    t_partial, partial = tls_connect()
    partial.sendall(b"GET /timestamps?last=0 HTTP/1.1\r\nHo")
    t_whole, whole = tls_connect()
    whole.sendall(REQUEST)
    check_equal(answer_of(whole), "HTTP/1.1 200 OK", "answer to a whole request over TLS")
    times = {"silent before the handshake": closed_after(silent, t_silent, 8),
             "partial header after the handshake": closed_after(partial, t_partial, 8)}
    step("closed after " + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(times.items())))
    for what, at in times.items():
        check(1.35 <= at <= 4.5, f"the {what} connection was closed {at:.2f} s after connecting, expected 1.5 s")
    whole.settimeout(max(0.1, t_whole + 2.5 - time.monotonic()))
    try:
        data = whole.recv(4096)
        raise harness.TestFailure(f"the connection that sent a whole request was closed or sent {data[:100]!r} "
                                  f"{time.monotonic() - t_whole:.2f} s after connecting")
    except socket.timeout:
        step(f"the connection that sent a whole request is open {time.monotonic() - t_whole:.2f} s after connecting")
    for s in (silent, partial, whole):
        s.close()
    provider.stop()


def test(c):
    program("sdc/sdc-get")
    program("sdc/sdc-provider")
    harness.ensure_descriptors(PEERS * PER_PEER + 512)
    store_flood(c)
    provider_total_cap(c)
    provider_tls(c)


if __name__ == "__main__":
    harness.main(test)
