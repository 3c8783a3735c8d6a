#!/usr/bin/env python3
"""`blobstored --metrics-address 127.0.0.1:0`: Prometheus' text format at
/metrics, scraped over HTTP as Prometheus would, before and after real
transfers:

- the ready line names the endpoint; every sample line parses (name,
  labels, value), every metric has HELP and TYPE; build_info names the
  version, the store, its kind and tier;
- a 1 MiB push and two pulls of it move the counters by exactly that:
  transfers_total{push,ok} +1, {pull,ok} +2, bytes +1 MiB and +2 MiB, the
  duration histogram's counts (buckets cumulative, +Inf = count), the
  store's used bytes and Blob count; a request of garbage on the data port
  is one more refused request; nothing is left active;
- each transfer has one key=value log line with its fields;
- other paths and methods: 404 and 405; a bad --metrics-address value and
  one already in use are refused with the value named;
- HEAD /metrics answers GET's headers: the same Content-Length as GET's body;
- idle connections cannot keep the scraper out: a fifth connection from
  one address is closed at once (4 per address), and with all 16 sessions
  held by four addresses a scrape from another one is answered (the oldest
  session of the address holding the most is ended for it);
- out of descriptors (the daemon's soft limit lowered under it with
  prlimit, once the sessions of the steps before have closed and the
  descriptor table held still across the lowering) with a connection
  pending on the metrics port: the connection is accepted and closed with
  the descriptors kept in reserve, the daemon's CPU
  time over 3 s stays below a fifth of it (it used to spin at 100 %), the
  log says so, and it serves again once the limit is back;
- a TLS store serves the metrics over TLS only: plain HTTP, TLS without a
  client certificate and a certificate of another CA get no figures (the
  log names the refusal); a certificate of the store's CA gets them."""

import http.client
import os
import re
import resource
import shutil
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_tls  # noqa: E402
from harness import check, check_equal, cpu_seconds, log_text, MiB, step  # noqa: E402

SAMPLE = re.compile(r'^([a-z_:][a-z0-9_:]*)(\{[^}]*\})? (\S+)$')
CLK_TCK = os.sysconf("SC_CLK_TCK")


def scrape(url, context=None):
    with urllib.request.urlopen(url + "/metrics", timeout=10, context=context) as r:
        check_equal(r.status, 200, "status of GET /metrics")
        check(r.headers["Content-Type"].startswith("text/plain; version=0.0.4"),
              f"Content-Type {r.headers['Content-Type']!r}")
        text = r.read().decode()
    samples, typed, helped = {}, set(), set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            helped.add(line.split()[2])
        elif line.startswith("# TYPE "):
            typed.add(line.split()[2])
        else:
            m = SAMPLE.match(line)
            check(m is not None, f"not a sample line: {line!r}")
            samples[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    for name in {re.sub(r"(_bucket|_sum|_count)$", "", k.split("{")[0]) for k in samples}:
        check(name in typed and name in helped, f"metric {name} has no TYPE or HELP line")
    return samples


def delta(before, after, key):
    return after.get(key, 0) - before.get(key, 0)




def head_and_get(address):
    """HEAD then GET /metrics on one connection: (HEAD's status and
    headers, GET's headers and body length)."""
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("HEAD", "/metrics")
        head = conn.getresponse()
        head.read()
        conn.request("GET", "/metrics")
        get = conn.getresponse()
        body = get.read()
        return head.status, dict(head.getheaders()), dict(get.getheaders()), len(body)
    finally:
        conn.close()


def idle_sessions(address):
    host, port = address.rsplit(":", 1)
    step("idle connections to the metrics port: 4 per address, the scraper still served")
    held = []
    try:
        for n in range(2, 6):
            for _ in range(4):
                s = socket.create_connection((host, int(port)), timeout=10, source_address=(f"127.0.0.{n}", 0))
                held.append(s)
        fifth = socket.create_connection((host, int(port)), timeout=5, source_address=("127.0.0.2", 0))
        held.append(fifth)
        try:
            data = fifth.recv(1)  # closed at once by the daemon: end of file
        except socket.timeout:
            data = None
        check_equal(data, b"", "what a fifth idle connection from 127.0.0.2 reads (closed at once)")
        samples = scrape(f"http://{address}")
        check(any(k.startswith("blobstreaming_build_info{") for k in samples),
              "a scrape while four addresses hold all 16 sessions")
    finally:
        for s in held:
            s.close()


def first_free_descriptor(pid):
    """The lowest descriptor number `pid` has not open."""
    used = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}
    return next(n for n in range(len(used) + 1) if n not in used)


def server_connections(ports):
    """Connections accepted on `ports` (IPv4) whose server side is still open
    (established, or closed by the peer and not yet by the server): each as
    (local address, remote address) as /proc/net/tcp writes them."""
    found = []
    for fields in harness.ports.tcp_rows():
        if len(fields[1].split(":")[0]) != 8 or fields[3] not in ("01", "08"):
            continue  # an IPv6 row, or no descriptor on the server's side
        if int(fields[1].split(":")[1], 16) in ports:
            found.append((fields[1], fields[2]))
    return found


def out_of_descriptors(c, daemon, address):
    """The metrics port with a connection pending while the daemon has no
    descriptor left: no busy loop."""
    step("out of descriptors: a connection pending on the metrics port")
    # The limit must leave no number free below it until the connection
    # comes: a session of the steps before that closes after the limit was
    # read frees a number, the connection is then accepted as an ordinary
    # session and waits for its request (10 s) instead of being closed.
    ports = {int(address.rsplit(":", 1)[1]), int(daemon.ready["data"].rsplit(":", 1)[1])}
    harness.wait_for(lambda: not server_connections(ports), 15,
                     "the daemon's sessions of the steps before closed (metrics and data port)")
    soft, hard = resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE)
    try:
        for _ in range(20):
            limit = first_free_descriptor(daemon.pid)
            resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE, (limit, hard))
            if first_free_descriptor(daemon.pid) >= limit:
                break  # nothing closed meanwhile: every number below the limit is taken
        else:
            raise harness.TestFailure("the daemon's descriptor table did not hold still for 20 readings")
        host, port = address.rsplit(":", 1)
        pending = socket.create_connection((host, int(port)), timeout=10)
        cpu0, wall0 = cpu_seconds(daemon.pid), time.monotonic()
        pending.settimeout(5)
        try:
            closed = pending.recv(1) == b""
        except ConnectionResetError:
            closed = True
        except socket.timeout:
            closed = False
        time.sleep(max(0.0, 3.0 - (time.monotonic() - wall0)))  # a window of 3 s to measure CPU over
        cpu, wall = cpu_seconds(daemon.pid) - cpu0, time.monotonic() - wall0
        step(f"out of descriptors: daemon CPU {cpu:.2f} s in {wall:.2f} s; pending connection closed: {closed}")
        check(cpu < 0.2 * wall, f"the daemon out of descriptors used {cpu:.2f} s of CPU in {wall:.2f} s (a busy loop?)")
        check(closed, "the connection pending on the metrics port was not accepted and closed"
              + (" (accepted as an ordinary session: a number below the limit was freed after it was set)"
                 if harness.all_accepted(int(port), [pending]) else ""))
        check(f"metrics endpoint {address}: out of descriptors (Too many open files)" in log_text(daemon),
              "the daemon's log does not say the metrics endpoint ran out of descriptors")
        pending.close()
    finally:
        resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE, (soft, hard))

    def scrape_again():
        # A scrape that comes while a round begun before the limit was
        # restored sheds what is pending is closed unanswered: tried again.
        try:
            return scrape("http://" + address)
        except (OSError, http.client.HTTPException) as e:
            step(f"out of descriptors: a scrape right after the limit was restored: {type(e).__name__}: {e}")
            return None

    harness.wait_for(scrape_again, 10, "a scrape once descriptors are back")


def refused(url, context, what):
    """A scrape that must get no figures: the error it ended with."""
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=10, context=context) as r:
            body = r.read()
    except (OSError, http.client.HTTPException) as e:
        step(f"{what}: refused ({type(e).__name__}: {e})")
        return e
    raise harness.TestFailure(f"{what}: got HTTP {r.status} with {len(body)} bytes: {body[:200]!r}")


def tls_store(c):
    """A TLS store's metrics: TLS only, a certificate of its CA required."""
    if shutil.which("openssl") is None:
        step("no openssl: the TLS store's metrics are not checked")
        return
    step("a TLS store: certificates")
    test_tls.make_ca(c, "ca")
    test_tls.make_ca(c, "rogue-ca")
    store = test_tls.make_cert(c, "ca", "store", "/CN=store", "serverAuth,clientAuth", "IP:127.0.0.1")
    scraper = test_tls.make_cert(c, "ca", "prometheus", "/CN=prometheus", "clientAuth")
    rogue = test_tls.make_cert(c, "rogue-ca", "rogue", "/CN=rogue", "clientAuth")
    daemon = c.start_daemon("tlsmon", "memory:16M",
                            extra=["--tls-cert", store[0], "--tls-key", store[1], "--tls-ca", c.path("ca.pem"),
                                   "--metrics-address", "127.0.0.1:0"])
    address = daemon.ready["metrics"]

    def context(cert=None):
        ctx = ssl.create_default_context(cafile=c.path("ca.pem"))
        if cert:
            ctx.load_cert_chain(*cert)
        return ctx

    step("a TLS store's metrics: plain HTTP, no certificate, another CA's certificate get no figures")
    refused("http://" + address, None, "plain HTTP")
    refused("https://" + address, context(), "TLS without a client certificate")
    refused("https://" + address, context(rogue), "a client certificate of another CA")
    harness.wait_for(lambda: f"metrics endpoint {address}: TLS handshake from 127.0.0.1 failed, no figures sent"
                     in log_text(daemon), 10, "the refused scrape in the daemon's log")

    step("a TLS store's metrics: a certificate of the store's CA gets them")
    samples = scrape("https://" + address, context(scraper))
    info = [k for k in samples if k.startswith("blobstreaming_build_info{")]
    check(len(info) == 1 and 'store="tlsmon"' in info[0], f"build_info over TLS: {info}")
    check_equal(samples["blobstreaming_store_blobs"], 0, "Blob count over TLS")
    check("Prometheus metrics at https://" + address in log_text(daemon), "the log names the https endpoint")


def test(c):
    step("bad --metrics-address values")
    for value, says in (("nohost", '--metrics-address: "nohost" is not HOST:PORT'),
                        ("127.0.0.1:99999", "--metrics-address: port")):
        code, _o, err = c.run([harness.program("blobstore/blobstored"), "--name", "x", "--store", "memory:1M",
                               "--naming", c.naming, "--metrics-address", value], timeout=60)
        check(code == 1 and says in err, f"--metrics-address {value}: exit {code}: {err.strip()!r}")

    # No naming check during the test (--naming-check 3600): its connections
    # to the Naming Service and to a locator left by the daemon "y" below
    # open and close descriptors while the out-of-descriptors step lowers
    # the limit; one closed just after would leave a number free under it.
    daemon = c.start_daemon("mon", "memory:64M", extra=["--metrics-address", "127.0.0.1:0", "--naming-check", "3600"])
    address = daemon.ready.get("metrics", "")
    check(address.startswith("127.0.0.1:") and not address.endswith(":0"), f"metrics= in the ready line: {address!r}")
    url = "http://" + address
    before = scrape(url)
    info = [k for k in before if k.startswith("blobstreaming_build_info{")]
    check(len(info) == 1 and 'store="mon"' in info[0] and 'kind="memory"' in info[0] and 'tier="memory"' in info[0]
          and 'version="' in info[0], f"build_info: {info}")

    step("a 1 MiB push, two pulls and a garbage request move the counters by exactly that")
    src = c.path("src")
    digest = harness.write_random(src, MiB)
    c.blob("push", "--name", "CT.m", src, store="mon").ok()
    for _ in range(2):
        check_equal(c.pull_checksum("CT.m", "mon", c.path("out")), digest, "pulled")
    with socket.create_connection(tuple(daemon.ready["data"].rsplit(":", 1)), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n" + b"x" * 4096)
        try:
            while s.recv(65536):
                pass
        except OSError:
            pass
    after = harness.wait_for(lambda: (lambda a: a if delta(before, a, "blobstreaming_refused_requests_total") >= 1
                                      else None)(scrape(url)), 10, "the refused request counted")
    expected = {
        'blobstreaming_transfers_total{direction="push",outcome="ok"}': 1,
        'blobstreaming_transfers_total{direction="pull",outcome="ok"}': 2,
        'blobstreaming_transfers_total{direction="push",outcome="failed"}': 0,
        'blobstreaming_transfers_total{direction="pull",outcome="failed"}': 0,
        'blobstreaming_transfer_bytes_total{direction="push"}': MiB,
        'blobstreaming_transfer_bytes_total{direction="pull"}': 2 * MiB,
        'blobstreaming_transfer_duration_seconds_count{direction="push"}': 1,
        'blobstreaming_transfer_duration_seconds_count{direction="pull"}': 2,
        'blobstreaming_transfer_duration_seconds_bucket{direction="pull",le="+Inf"}': 2,
        "blobstreaming_refused_requests_total": 1,
        "blobstreaming_store_used_bytes": MiB,
        "blobstreaming_store_blobs": 1,
        "blobstreaming_tls_handshake_failures_total": 0,
    }
    moved = {k: delta(before, after, k) for k in expected}
    check_equal(moved, expected, "counters moved by the transfers")
    check_equal(after["blobstreaming_active_transfers"], 0, "active transfers after them")
    check_equal(after["blobstreaming_reservations"], 0, "open reservations after them")
    buckets = [v for k, v in after.items() if k.startswith('blobstreaming_transfer_duration_seconds_bucket{direction="pull"')]
    check(buckets == sorted(buckets), f"pull buckets are not cumulative: {buckets}")

    step("the transfers' key=value log lines")
    with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
        lines = [line for line in f.read().splitlines() if " transfer direction=" in line]
    check_equal(len(lines), 3, f"transfer log lines: {lines}")
    fields = dict(kv.split("=", 1) for kv in lines[0].split(" transfer ", 1)[1].split())
    check_equal((fields["direction"], fields["blob"], fields["bytes"], fields["outcome"]),
                ("push", "CT.m", str(MiB), "ok"), f"fields of {lines[0]!r}")
    check(float(fields["seconds"]) > 0 and float(fields["MBps"]) > 0 and fields["peer"].startswith("127.0.0.1:"),
          f"seconds, MBps, peer of {lines[0]!r}")

    step("other paths and methods; the address in use")
    for request, status in ((urllib.request.Request(url + "/other"), 404),
                            (urllib.request.Request(url + "/metrics", data=b"x", method="POST"), 405)):
        try:
            urllib.request.urlopen(request, timeout=10)
            raise harness.TestFailure(f"{request.get_method()} {request.full_url} succeeded")
        except urllib.error.HTTPError as e:
            check_equal(e.code, status, f"{request.get_method()} {request.full_url}")
    code, _o, err = c.run([harness.program("blobstore/blobstored"), "--name", "y", "--store", "memory:1M",
                           "--naming", c.naming, "--metrics-address", address], timeout=60)
    check(code == 52 and f"--metrics-address: cannot listen on {address}" in err,
          f"--metrics-address in use: exit {code}: {err.strip()!r}")

    step("HEAD /metrics: GET's headers")
    status, head, get, length = head_and_get(address)
    check_equal(status, 200, "status of HEAD /metrics")
    check_equal(head.get("Content-Length"), str(length), f"HEAD's Content-Length (GET's body: {length} bytes)")
    check_equal(head.get("Content-Type"), get.get("Content-Type"), "HEAD's Content-Type")

    idle_sessions(address)
    out_of_descriptors(c, daemon, address)
    tls_store(c)


if __name__ == "__main__":
    harness.main(test)
