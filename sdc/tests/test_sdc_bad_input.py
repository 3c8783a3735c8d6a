"""Bad input to sdc-provider: malformed XML, a SOAP 1.1 envelope, a missing
Action, an unknown action, an unknown handle, a body element that does not
fit the action, a 100 MB body, a slowloris partial header, a non-POST; with --schema-dir, bodies the BICEPS XSDs do not allow.
Each gets a SOAP Fault with a clear reason (or, for the slowloris, a closed
connection), and the provider keeps answering throughout. Also the
provider-side timestamps of a request, by MessageID."""

import sys

sys.dont_write_bytecode = True  # noqa: E402 (keeps the source tree free of __pycache__)

import json
import socket
import time
import urllib.parse
import uuid

from sdclib import TestFailure, TestSkipped, biceps_schema_dir, check, check_equal, main, mdib_file, step

ACTION = "http://standards.ieee.org/downloads/11073/11073-20701-2018/GetService/"
NS = ('xmlns:s12="http://www.w3.org/2003/05/soap-envelope" xmlns:wsa="http://www.w3.org/2005/08/addressing" '
      'xmlns:msg="http://standards.ieee.org/downloads/11073/11073-10207-2017/message"')


def envelope(action, body, message_id=None):
    message_id = message_id or f"urn:uuid:{uuid.uuid4()}"
    return (f'<?xml version="1.0" encoding="UTF-8"?><s12:Envelope {NS}><s12:Header><wsa:Action>{action}</wsa:Action>'
            f'<wsa:MessageID>{message_id}</wsa:MessageID></s12:Header><s12:Body>{body}</s12:Body></s12:Envelope>')


class Http:
    """A raw HTTP/1.1 keep-alive connection with a deadline on every read."""

    def __init__(self, host, port, timeout=10):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buffer = b""

    def send(self, data):
        self.sock.sendall(data if isinstance(data, bytes) else data.encode())

    def post(self, path, body, extra=""):
        data = body.encode()
        self.send(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/soap+xml; charset=utf-8\r\n"
                  f"Content-Length: {len(data)}\r\n{extra}\r\n".encode() + data)
        return self.response()

    def response(self):
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise TestFailure(f"connection closed before a response header (got {self.buffer[:200]!r})")
            self.buffer += chunk
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(self.buffer) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise TestFailure("connection closed in the middle of a response body")
            self.buffer += chunk
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, headers, body.decode("utf-8", "replace")

    def close(self):
        self.sock.close()


def expect_fault(answer, status, reason, what):
    code, _, body = answer
    check_equal(code, status, f"{what}: HTTP status")
    check("Fault" in body and reason in body, f"{what}: expected a Fault with {reason!r}, got {body[:600]!r}")
    step(f"{what}: HTTP {code}, Fault with {reason!r}")


def test(env):
    provider = env.start_provider(mdib_file("mdib.xml"), "--header-timeout", "1000", "--max-body", "1048576")
    host, port = provider.ready["address"].rsplit(":", 1)
    port = int(port)
    path = urllib.parse.urlparse(provider.ready["url"]).path + "/Get"
    good = envelope(ACTION + "GetMdState", "<msg:GetMdState><msg:HandleRef>mds0</msg:HandleRef></msg:GetMdState>")

    def still_answers(what):
        c = Http(host, port)
        code, _, body = c.post(path, good)
        c.close()
        check(code == 200 and 'DescriptorHandle="mds0"' in body, f"after {what}: GetMdState failed: {code} {body[:300]}")

    conn = Http(host, port)
    expect_fault(conn.post(path, "<s12:Envelope"), 400, "malformed XML", "truncated XML")
    expect_fault(conn.post(path, good.replace("2003/05/soap-envelope", "2002/12/soap-envelope")), 400,
                 "not a SOAP 1.2 Envelope", "wrong envelope namespace")
    expect_fault(conn.post(path, good.replace("http://schemas.xmlsoap.org/soap/envelope/", "x").replace(
        "http://www.w3.org/2003/05/soap-envelope", "http://schemas.xmlsoap.org/soap/envelope/")), 400,
        "not a SOAP 1.2 Envelope", "SOAP 1.1 envelope")
    expect_fault(conn.post(path, good.replace("2005/08/addressing", "2004/08/addressing")), 400,
                 "no wsa:Action", "WS-Addressing in the wrong namespace")
    expect_fault(conn.post(path, envelope(ACTION + "SetValue", "<msg:SetValue/>")), 400,
                 "unknown action", "unknown action")
    expect_fault(conn.post(path, envelope(ACTION + "GetMdState",
                                          "<msg:GetMdState><msg:HandleRef>no.such</msg:HandleRef></msg:GetMdState>")),
                 400, 'unknown handle "no.such"', "unknown handle")
    expect_fault(conn.post(path, envelope(ACTION + "GetMdState", "<msg:GetMdib/>")), 400,
                 "needs a GetMdState element", "body that does not fit the action")
    expect_fault(conn.post(path, '<!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>'), 400, "DTD", "a DTD")
    code, _, body = conn.post(path, good)
    check(code == 200 and 'DescriptorHandle="mds0"' in body, "the same connection no longer answers")
    conn.close()

    step("a 100 MB body (limit 1 MiB)")
    conn = Http(host, port)
    conn.send(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/soap+xml\r\n"
              f"Content-Length: {100 * 1024 * 1024}\r\n\r\n".encode() + b"<" * 65536)
    try:
        expect_fault(conn.response(), 413, "larger than the limit", "100 MB body")
    except (TestFailure, ConnectionResetError) as e:
        step(f"100 MB body: the connection was closed ({e})")
    conn.close()
    still_answers("a 100 MB body")

    step("slowloris: a partial header, header timeout 1 s")
    slow = Http(host, port)
    slow.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-")
    started = time.monotonic()
    still_answers("a partial header on another connection")
    slow.sock.settimeout(10)
    try:
        data = slow.sock.recv(1000)
    except ConnectionResetError:
        data = b""
    waited = time.monotonic() - started
    check(data == b"", f"slowloris: expected the connection closed, got {data[:200]!r}")
    check(0.5 <= waited <= 8, f"slowloris: closed after {waited:.2f} s, expected about 1 s")
    step(f"slowloris: connection closed after {waited:.2f} s")
    slow.close()

    conn = Http(host, port)
    conn.send(f"PUT {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    expect_fault(conn.response(), 405, "is not served", "PUT")
    conn.close()
    still_answers("all bad input")

    step("provider-side timestamps by MessageID")
    message_id = f"urn:uuid:{uuid.uuid4()}"
    conn = Http(host, port)
    code, _, _ = conn.post(path, envelope(ACTION + "GetMdState", "<msg:GetMdState/>", message_id))
    check_equal(code, 200, "GetMdState status")
    conn.send(f"GET /timestamps?id={urllib.parse.quote(message_id)} HTTP/1.1\r\nHost: x\r\n\r\n")
    code, _, body = conn.response()
    check_equal(code, 200, "GET /timestamps status")
    stamps = json.loads(body)
    check(0 < stamps["t2"] <= stamps["t3"] <= stamps["t4"], f"timestamps out of order: {stamps}")
    conn.send("GET /timestamps?id=urn:uuid:unknown HTTP/1.1\r\nHost: x\r\n\r\n")
    check_equal(conn.response()[0], 404, "GET /timestamps of an unknown MessageID")
    conn.send("GET /timestamps?last=3 HTTP/1.1\r\nHost: x\r\n\r\n")
    code, _, body = conn.response()
    recent = json.loads(body)["timestamps"]
    check_equal((code, len(recent), recent[-1]["id"]), (200, 3, message_id), "GET /timestamps?last=3")
    conn.close()

    step("--schema-dir: GetService bodies validated against the BICEPS XSDs")
    try:
        schemas = biceps_schema_dir()
    except TestSkipped as e:
        step(f"SKIP the XSD part: {e}")
        return
    strict = env.start_provider(mdib_file("mdib.xml"), "--schema-dir", schemas, name="sdc-provider-xsd")
    host, port = strict.ready["address"].rsplit(":", 1)
    path = urllib.parse.urlparse(strict.ready["url"]).path + "/Get"
    conn = Http(host, int(port))
    code, _, body = conn.post(path, good)
    check(code == 200 and 'DescriptorHandle="mds0"' in body, f"a valid GetMdState: {code} {body[:300]}")
    expect_fault(conn.post(path, envelope(ACTION + "GetMdState", "<msg:GetMdState><msg:Bogus/></msg:GetMdState>")),
                 400, "not valid against the BICEPS schema", "an element the schema does not allow")
    expect_fault(conn.post(path, envelope(ACTION + "GetMdState", "<msg:GetMdState>text</msg:GetMdState>")),
                 400, "not valid against the BICEPS schema", "text in an element-only GetMdState")
    code, _, body = conn.post(path, good)
    check(code == 200, "the XSD-validating provider no longer answers")
    conn.close()


if __name__ == "__main__":
    main(test)
