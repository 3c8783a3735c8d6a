#!/usr/bin/env python3
"""WADO-RS served in place (docs/DICOM.md, "DICOMweb"): an instance whose
copy is in a store of the gateway's host is sent from the store's own file
(the client library's same-host path, PullSink::in_place: mapped, verified,
then sendfile(2)), never copied through the gateway.

- A study of 40 CT slices (0.5 MiB each) stored through storescu comes back
  from WADO-RS with every part bit-identical to its Blob as pulled over TCP
  (`blob --no-local pull --study`), each instance counted as pulled in place
  (the client library's one summary line per series of a batch).
- A Blob replaced or removed mid-response: a client with a 64 KiB receive
  buffer reads the first part and stops; once the gateway has opened every
  instance in place (the summaries count 40), instance 31's Blob is replaced by
  another version (other pixel data) and instance 36's removed; then the
  client reads on. Every part is still its stored version whole (the file
  opened and verified before), none is the new version or a mix. A second
  request no longer has instance 36 (its Blob is gone). The client reads
  64 KiB before the change and the gateway's writes block within a few MiB
  (the sockets' buffers), 15 MiB before instance 31.
- A client that closes mid-response (a reset): the gateway logs the
  response cut short and serves the next request whole.
- Access refused stays refused: a gateway whose certificate may write to a
  TLS-only store on this host but not read there (--allow-write CN=gateway
  only) stores a study through storescu, and each WADO-RS request for it
  sends no instance, the store refusing the files of the instances again
  for each request, in one call (findLocalFiles refused in the store's log
  once per request; "may not read" in the gateway's, once per instance).
Real omniNames, blobstored and blob-dicomd on 127.0.0.1."""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step, wait_for  # noqa: E402
from harness.dicom import Gateway, make_objects  # noqa: E402
from test_dicomweb import Http, host_port, in_place_counts, parts  # noqa: E402
from test_tls import make_ca, make_cert, tls_args  # noqa: E402

SLICES = 40
ACCEPT = 'multipart/related; type="application/dicom"'


def read_response(s, data, deadline):
    """Reads an HTTP/1.1 response with a chunked body from socket `s` to its end, `data` its first bytes
    already received: (headers, body)."""
    while b"\r\n\r\n" not in data:
        more = s.recv(65536)
        check(more, f"the connection closed before the headers: {data!r}")
        data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    check(lines[0].startswith("HTTP/1.1 200"), f"the status line: {lines[0]!r}")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    check_equal(headers.get("transfer-encoding"), "chunked", "Transfer-Encoding")
    body = bytearray()
    buffer = bytearray(rest)
    while True:
        while b"\r\n" not in buffer:
            check(time.monotonic() < deadline, "the response did not end in time")
            buffer += s.recv(1 << 20)
        line, _, after = bytes(buffer).partition(b"\r\n")
        size = int(line.split(b";")[0], 16)
        buffer = bytearray(after)
        while len(buffer) < size + 2:
            check(time.monotonic() < deadline, "the response did not end in time")
            more = s.recv(1 << 20)
            check(more, "the connection closed inside a chunk")
            buffer += more
        if size == 0:
            return headers, bytes(body)
        body += buffer[:size]
        buffer = buffer[size + 2:]


def test(c):
    c.env["TCP_NODELAY"] = "1"
    c.start_daemon("ws1", "file")
    gw = Gateway(c, "ws1", "gateway", extra=["--http-address", "127.0.0.1:0"])
    study = make_objects(c, "study", c.path("ct"), str(SLICES), "PAT1", "20261115", "CT", "512")
    gw.storescu("+sd", c.path("ct"))
    uid = study[0]["study"]

    step("the Blobs as stored, pulled over TCP (blob --no-local pull --study)")
    c.blob("--no-local", "pull", "--study", uid, "--index", gw.index_url, c.path("stored")).ok()
    stored = {}
    for e in study:
        with open(c.path("stored", e["sop"] + ".dcm"), "rb") as f:
            stored[e["sop"]] = f.read()

    def sop_of(part):
        return next(sop for sop, blob in stored.items() if blob == part)

    step(f"WADO-RS of the study: {SLICES} parts, each bit-identical to its Blob, each served in place")
    before = in_place_counts(gw.log())["in_place"]
    h = Http(gw.http)
    status, headers, body = h.request("GET", f"/dicom-web/studies/{uid}", headers={"Accept": ACCEPT})
    check_equal(status, 200, "the study's status")
    got = parts(headers["content-type"], body)
    check_equal(len(got), SLICES, "parts")
    for _, part in got:
        check(part in stored.values(), f"a part of {len(part)} bytes is not a stored Blob")
    check_equal(sorted(sop_of(p) for _, p in got), sorted(stored), "every instance once")
    check_equal(in_place_counts(gw.log())["in_place"] - before, SLICES, "instances pulled in place (summary lines)")
    check_equal(gw.log().count("pulled in place"), 0, "lines per instance at the default level (info)")

    step("a Blob replaced and one removed while the response is held up: every part its stored version, whole")
    order = [sop_of(p) for _, p in got]  # the index's order, as the next response sends them
    replaced, removed = order[30], order[35]
    make_objects(c, "variant", c.path("stored", replaced + ".dcm"), c.path("variant.dcm"))
    with open(c.path("variant.dcm"), "rb") as f:
        variant = f.read()
    check(variant != stored[replaced], "the variant has other bytes")
    before = in_place_counts(gw.log())["in_place"]
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)  # the gateway's writes soon block
    s.settimeout(30)
    s.connect(host_port(gw.http))
    s.sendall(f"GET /dicom-web/studies/{uid} HTTP/1.1\r\nHost: x\r\nAccept: {ACCEPT}\r\n\r\n".encode())
    first = s.recv(65536)
    check(first.startswith(b"HTTP/1.1 200"), f"the response begins: {first[:200]!r}")
    wait_for(lambda: in_place_counts(gw.log())["in_place"] - before >= SLICES, 20,
             "every instance of the held-up response opened in place (summary lines)")
    c.blob("push", "--replace", "--name", replaced + ".dcm", c.path("variant.dcm"), store="ws1").ok()
    c.blob("rm", removed + ".dcm", store="ws1").ok()
    headers, body = read_response(s, first, time.monotonic() + 60)
    s.close()
    held = parts(headers["content-type"], body)
    check_equal(len(held), SLICES, "parts of the held-up response")
    for i, (_, part) in enumerate(held):
        check(part == stored[order[i]], f"part {i + 1} is not instance {order[i]} as stored "
              f"({len(part)} bytes{', the new version' if part == variant else ''})")

    step("the next request: the removed instance is no longer served")
    status, headers, body = h.request("GET", f"/dicom-web/studies/{uid}", headers={"Accept": ACCEPT})
    check_equal(status, 200, "the study's status")
    after = [p for _, p in parts(headers["content-type"], body)]
    check(stored[removed] not in after, "the removed instance was served again")
    for p in after:
        check(p == variant or p in stored.values(), f"a part of {len(p)} bytes is neither a stored Blob nor the new one")


    step("a client that goes away mid-response: the response is cut short (logged), the next one served whole")
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.settimeout(30)
    s.connect(host_port(gw.http))
    s.sendall(f"GET /dicom-web/studies/{uid} HTTP/1.1\r\nHost: x\r\nAccept: {ACCEPT}\r\n\r\n".encode())
    check(s.recv(65536).startswith(b"HTTP/1.1 200"), "the response begins")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST at close
    s.close()
    wait_for(lambda: "DICOMweb: response to 127.0.0.1 cut short" in gw.log(), 35, "the cut-short log line")
    status, headers, body = h.request("GET", f"/dicom-web/studies/{uid}", headers={"Accept": ACCEPT})
    check_equal((status, len(parts(headers["content-type"], body))), (200, len(after)), "the next response, whole")

    step("access refused stays refused: a gateway that may write to a TLS store but not read there serves nothing")
    make_ca(c, "ca")
    store_cert = make_cert(c, "ca", "store", "/CN=store.central", "serverAuth,clientAuth", san="IP:127.0.0.1")
    gw_client = make_cert(c, "ca", "gateway-client", "/CN=gateway", "serverAuth,clientAuth", san="IP:127.0.0.1")
    central = c.start_daemon("central", "file", extra=tls_args(c, *store_cert) + ["--allow-write", "CN=gateway"])
    writer = Gateway(c, "central", "write-only-gateway", extra=[
        "--http-address", "127.0.0.1:0", "--store-tls-cert", gw_client[0], "--store-tls-key", gw_client[1],
        "--store-tls-ca", c.path("ca.pem")])
    small = make_objects(c, "study", c.path("small"), "3", "PAT2", "20261116", "CT")
    writer.storescu("+sd", c.path("small"))
    h = Http(writer.http)
    for n in (1, 2):
        status, headers, body = h.request("GET", f"/dicom-web/studies/{small[0]['study']}", headers={"Accept": ACCEPT})
        check_equal(status, 200, f"request {n}: the study's status")
        check_equal([p for _, p in parts(headers["content-type"], body) if p], [], f"request {n}: instances sent")
        refusals = [line for line in writer.log().splitlines()
                    if "DICOMweb WADO-RS to" in line and '"CN=gateway" may not read' in line]
        check_equal(len(refusals), 3 * n, f"request {n}: instances refused by the store (the gateway's log)")
        with open(central.log_paths[0], errors="replace") as f:
            log = f.read()
        check_equal(log.count('findLocalFiles refused: permission denied: client "CN=gateway" may not read'),
                    n, f"request {n}: the store's refusals of the files of the request's instances, one call (its log)")
        check_equal(log.count("findLocalFile refused"), 0, f"request {n}: refusals of one instance's file (its log)")
        check_equal(in_place_counts(writer.log())["in_place"], 0, "instances pulled in place (summary lines)")
        check_equal(in_place_counts(writer.log())["failed"], 3 * n, "instances failed (summary lines)")


if __name__ == "__main__":
    harness.main(test)
