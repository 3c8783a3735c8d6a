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
  one already in use are refused with the value named."""

import os
import re
import socket
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step  # noqa: E402

SAMPLE = re.compile(r'^([a-z_:][a-z0-9_:]*)(\{[^}]*\})? (\S+)$')


def scrape(url):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
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


def test(c):
    step("bad --metrics-address values")
    for value, says in (("nohost", '--metrics-address: "nohost" is not HOST:PORT'),
                        ("127.0.0.1:99999", "--metrics-address: port")):
        code, _o, err = c.run([harness.program("blobstore/blobstored"), "--name", "x", "--store", "memory:1M",
                               "--naming", c.naming, "--metrics-address", value], timeout=60)
        check(code == 1 and says in err, f"--metrics-address {value}: exit {code}: {err.strip()!r}")

    daemon = c.start_daemon("mon", "memory:64M", extra=["--metrics-address", "127.0.0.1:0"])
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


if __name__ == "__main__":
    harness.main(test)
