#!/usr/bin/env python3
"""DICOMweb in blob-dicomd (--http-address; docs/DICOM.md "DICOMweb"),
against the reference client dicomweb-client (PyPI, in the DICOM venv) and
raw HTTP: QIDO-RS searches with filters, limit and offset; WADO-RS study
and instance retrieval bit-exact, metadata with the Pixel Data as a
BulkDataURI, frames equal to pydicom's bytes of that frame, read as a
range of the Blob (the gateway reads far less than the instance); bulk
data with Range (206, 416); STOW-RS stored as a C-STORE is, conflicts
refused (409, 202); then the limits: a bad query parameter (400 naming
it), a missing token (401), CORS preflight, an oversized body (413),
oversized headers (431), a slow-loris connection cut at --http-timeout
while another client is served, the per-address and total connection caps,
TLS with client certificates (a study retrieved over it, from the store's
file in place).
Real omniNames, blobstored and blob-dicomd on 127.0.0.1."""

import http.client
import json
import os
import re
import socket
import ssl
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402
from harness.dicom import SYSTEM_PYTHON, Gateway, data_set, make_objects, pynetdicom_python, tool  # noqa: E402

FRAMES, ROWS = 200, 256
FRAME_BYTES = ROWS * ROWS * 2


def host_port(url):
    hp = url.split("//", 1)[1].split("/", 1)[0]
    host, port = hp.rsplit(":", 1)
    return host, int(port)


class Http:
    """Raw HTTP/1.1 requests to a gateway's DICOMweb port (one keep-alive connection, opened again when the
    server has closed it)."""

    def __init__(self, url, context=None):
        self.host, self.port = host_port(url)
        if url.startswith("https:"):
            self.conn = http.client.HTTPSConnection(self.host, self.port, timeout=30, context=context)
        else:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)

    def request(self, method, path, body=None, headers=None):
        try:
            self.conn.request(method, path, body=body, headers=headers or {})
            r = self.conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            # The server closed the idle connection (--http-timeout): a new one, as browsers do.
            self.conn.close()
            self.conn.request(method, path, body=body, headers=headers or {})
            r = self.conn.getresponse()
        data = r.read()
        if r.getheader("Connection", "").lower() == "close":
            self.conn.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def parts(content_type, body):
    """The parts of a multipart/related body: [(headers text, bytes)]."""
    boundary = next(p.split("=", 1)[1].strip('"') for p in content_type.split(";") if p.strip().startswith("boundary="))
    chunks = body.split(b"--" + boundary.encode())
    check(chunks[-1].startswith(b"--"), "the multipart body has no close delimiter")
    out = []
    for chunk in chunks[1:-1]:
        head, _, data = chunk.partition(b"\r\n\r\n")
        check(data.endswith(b"\r\n"), "a part does not end with CRLF before the next delimiter")
        out.append((head.decode(), data[:-2]))
    return out


def study_parts(http_url, uid):
    """The parts of a WADO-RS retrieve of study `uid` as application/dicom
    instances (HTTP 200 checked): [bytes]."""
    status, headers, body = Http(http_url).request(
        "GET", f"/dicom-web/studies/{uid}", headers={"Accept": 'multipart/related; type="application/dicom"'})
    check_equal(status, 200, "the study's status")
    return [p for _, p in parts(headers["content-type"], body)]


def served(got, stored):
    """The SOP Instance UIDs of the parts `got`, sorted, each checked to be
    one of `stored` ({SOP Instance UID: bytes}) as it is."""
    out = []
    for part in got:
        sop = next((s for s, b in stored.items() if b == part), None)
        check(sop is not None, f"a part of {len(part)} bytes is not a stored Blob")
        out.append(sop)
    return sorted(out)


IN_PLACE_SUMMARY = re.compile(r'pull series of (?P<slices>\d+) Blobs: \d+ bytes in [\d.]+ s \([\d.]+ MB/s\), '
                              r'(?P<failed>\d+) failed; in place from store "[^"]*": (?P<in_place>\d+) '
                              r'\((?P<kept>\d+) from kept mappings\), (?P<own>\d+) pulled on their own$', re.M)


def in_place_counts(log):
    """The client library's log lines of the pull series asked for in place
    (one line per series, its slices at debug level), summed:
    {"slices", "in_place", "kept", "own", "failed"}."""
    out = dict.fromkeys(("slices", "in_place", "kept", "own", "failed"), 0)
    for m in IN_PLACE_SUMMARY.finditer(log):
        for key in out:
            out[key] += int(m.group(key))
    return out


def openssl(c, *args):
    r = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60, cwd=c.path())
    check(r.returncode == 0, f"openssl {' '.join(args)} failed: {r.stderr}")


def make_cert(c, name, subject, usage, san=None):
    """A key and a certificate of `subject` signed by the test's CA (ca.pem); returns (cert, key)."""
    with open(c.path(f"{name}.ext"), "w") as f:
        f.write(f"extendedKeyUsage={usage}\nbasicConstraints=CA:FALSE\n" + (f"subjectAltName={san}\n" if san else ""))
    openssl(c, "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", f"{name}.key",
            "-out", f"{name}.csr")
    openssl(c, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem")
    return c.path(f"{name}.pem"), c.path(f"{name}.key")


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def frame_of(c, path, n):
    """Frame n's bytes as pydicom reads them (Debian's python3-pydicom)."""
    r = subprocess.run([SYSTEM_PYTHON, "-c", "import pydicom, sys; ds = pydicom.dcmread(sys.argv[1]); "
                        "fb = ds.Rows * ds.Columns * ds.SamplesPerPixel * ds.BitsAllocated // 8; "
                        "n = int(sys.argv[2]); sys.stdout.buffer.write(ds.PixelData[(n - 1) * fb:n * fb])",
                        path, str(n)], capture_output=True, timeout=60, env=c.env)
    check(r.returncode == 0, f"pydicom could not read frame {n} of {path}: {r.stderr!r}")
    return r.stdout


def read_chars(pid):
    with open(f"/proc/{pid}/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


def test(c):
    c.env["TCP_NODELAY"] = "1"
    python = pynetdicom_python()  # the venv with dicomweb-client
    c.start_daemon("ws1", "file")
    gw = Gateway(c, "ws1", "gateway", extra=["--http-address", "127.0.0.1:0", "--http-cors-origin",
                                             "http://viewer.test", "--http-max-body", "2M", "--http-timeout", "3",
                                             "--http-max-connections", "32", "--http-max-connections-per-peer", "6"])
    check(gw.http.startswith("http://127.0.0.1:") and gw.http.endswith("/dicom-web"),
          f"the ready line names the DICOMweb root: {gw.proc.ready_line!r}")
    url = gw.http

    def peer(*args, expect=0):
        code, out, err = c.run([python, tool("dicomweb_peer.py"), url, *args], timeout=300)
        check_equal(code, expect, f"dicomweb_peer {' '.join(args[:2])} exit code ({err[-3000:]!r})")
        return json.loads(out) if code == 0 else err

    step(f"a study of 12 CT slices, one of 3 MR slices and a {FRAMES}-frame image through storescu")
    ct = make_objects(c, "study", c.path("ct"), "12", "PAT1", "20261115")
    mr = make_objects(c, "study", c.path("mr"), "3", "PAT1", "20261116", "MR")
    mf = make_objects(c, "framed", c.path("mf.dcm"), str(FRAMES), str(ROWS))[0]
    gw.storescu("+sd", c.path("ct"), c.path("mr"), mf["path"])

    step("QIDO-RS with dicomweb-client: studies (all, a filter, limit/offset), series, instances")
    studies = peer("search", "studies")
    check_equal(sorted(s["0020000D"]["Value"][0] for s in studies), sorted([ct[0]["study"], mr[0]["study"], mf["study"]]),
                "the studies found")
    pat1 = peer("search", "studies", "PatientID=PAT1")
    check_equal([s["0020000D"]["Value"][0] for s in pat1], [ct[0]["study"], mr[0]["study"]],
                "PAT1's studies, by study date")
    first = pat1[0]
    check_equal(first["00100010"], {"vr": "PN", "Value": [{"Alphabetic": "Doe^PAT1"}]}, "PatientName in DICOM JSON")
    check_equal(first["00201208"], {"vr": "IS", "Value": [12]}, "NumberOfStudyRelatedInstances")
    check_equal(first["00080061"], {"vr": "CS", "Value": ["CT"]}, "ModalitiesInStudy")
    check_equal([s["0020000D"]["Value"][0] for s in peer("search", "studies", "PatientID=PAT1", "--limit", "1",
                                                         "--offset", "1")], [mr[0]["study"]], "limit 1 offset 1")
    check_equal(peer("search", "studies", "PatientName=Doe^PAT*", "StudyDate=20261116-")[0]["0020000D"]["Value"],
                [mr[0]["study"]], "wildcard and date range as C-FIND matches them")
    series = peer("search", "series", ct[0]["study"])
    check_equal([s["0020000E"]["Value"][0] for s in series], [ct[0]["series"]], "the CT study's series")
    inst = peer("search", "instances", ct[0]["study"], ct[0]["series"], "--limit", "5", "--offset", "10")
    check_equal([i["00080018"]["Value"][0] for i in inst], [ct[10]["sop"], ct[11]["sop"]],
                "instances 11 and 12 (offset 10, limit 5)")
    check_equal(len(peer("search", "instances", "Modality=MR")), 3, "instances of every study with Modality MR")

    step("QIDO-RS over raw HTTP: no match 204, bad parameters 400 naming them")
    h = Http(url)
    status, _, body = h.request("GET", "/dicom-web/studies?PatientID=NOBODY")
    check_equal((status, body), (204, b""), "a search without a match")
    for query, text in [("StudyDate=2026", b"StudyDate"), ("limit=ten", b"query parameter limit=ten: expected a whole"),
                        ("NoSuchKeyword=1", b"query parameter NoSuchKeyword: not a DICOM keyword"),
                        ("includefield=Bogus", b"includefield Bogus: not a DICOM keyword"),
                        ("StudyInstanceUID=1.2.*", b"StudyInstanceUID")]:
        status, headers, body = h.request("GET", "/dicom-web/studies?" + query)
        check_equal(status, 400, f"?{query}: status ({body!r})")
        check(text in body, f"?{query}: the 400 names the problem: {body!r}")
    status, _, body = h.request("GET", "/dicom-web/nothing")
    check_equal(status, 404, f"an unknown path ({body!r})")
    for method, path, allow, text in [
            ("DELETE", "/dicom-web/studies", "GET, HEAD, POST, OPTIONS",
             b"only GET, HEAD, POST and OPTIONS are served here, not DELETE"),
            ("PUT", f"/dicom-web/studies/{ct[0]['study']}", "GET, HEAD, POST, OPTIONS", b"not PUT"),
            ("PATCH", f"/dicom-web/studies/{ct[0]['study']}/metadata", "GET, HEAD, OPTIONS",
             b"only GET, HEAD and OPTIONS are served here, not PATCH"),
            ("POST", f"/dicom-web/studies/{ct[0]['study']}/series", "GET, HEAD, OPTIONS", b"POST (STOW-RS) goes to")]:
        status, headers, body = h.request(method, path, body=b"" if method in ("PUT", "POST", "PATCH") else None)
        check_equal((status, headers.get("allow")), (405, allow), f"{method} {path}: status and Allow ({body!r})")
        check(text in body, f"{method} {path}: the 405 names what is served: {body!r}")

    step("HEAD: GET's status and header fields without content, each followed on the same connection by a GET "
         "that is answered whole (a HEAD response with content would be read as the next answer)")
    study = f"/dicom-web/studies/{ct[0]['study']}"
    for path in ["/dicom-web/studies?PatientID=PAT1", "/dicom-web/studies?PatientID=NOBODY", study + "/metadata",
                 study, study + f"/series/{ct[0]['series']}/instances/{ct[0]['sop']}/frames/1",
                 "/dicom-web/studies/1.2.3/metadata", "/dicom-web/nothing"]:
        head_status, head_headers, head_body = h.request("HEAD", path)
        get_status, get_headers, get_body = h.request("GET", path)
        check_equal((head_status, head_body), (get_status, b""), f"HEAD {path}: status and content")
        check_equal(head_headers.get("content-type", "").split(";")[0], get_headers.get("content-type", "").split(";")[0],
                    f"HEAD {path}: Content-Type")
        if "content-length" in get_headers:
            check_equal(head_headers.get("content-length"), str(len(get_body)), f"HEAD {path}: Content-Length")
    status, _, body = h.request("GET", "/dicom-web/studies?PatientID=PAT1")
    check(status == 200 and body.startswith(b"["), f"a GET after the HEADs on the same connection: {status} {body[:80]!r}")

    step("WADO-RS with dicomweb-client: retrieve_study and retrieve_instance, bit-exact data sets")
    got = peer("study", ct[0]["study"], c.path("wado-ct"))
    check_equal(sorted(got["files"]), sorted(e["sop"] + ".dcm" for e in ct), "the instances of the study")
    for e in ct:
        check(data_set(file_bytes(c.path("wado-ct", e["sop"] + ".dcm"))) == data_set(file_bytes(e["path"])),
              f"retrieve_study: the data set of {e['sop']} differs from the one sent")
    peer("instance", mr[1]["study"], mr[1]["series"], mr[1]["sop"], c.path("wado-mr1.dcm"))
    check(data_set(file_bytes(c.path("wado-mr1.dcm"))) == data_set(file_bytes(mr[1]["path"])),
          "retrieve_instance: the data set differs from the one sent")

    step("WADO-RS over raw HTTP: the study as multipart/related parts, each the stored Part 10 object")
    status, headers, body = h.request("GET", f"/dicom-web/studies/{mr[0]['study']}",
                                      headers={"Accept": 'multipart/related; type="application/dicom"'})
    check_equal(status, 200, "the MR study's status")
    check(headers["content-type"].startswith('multipart/related; type="application/dicom"; boundary='),
          f"Content-Type {headers['content-type']!r}")
    received = sorted(data_set(d) for _, d in parts(headers["content-type"], body))
    check(received == sorted(data_set(file_bytes(e["path"])) for e in mr), "the MR study's parts are the data sets sent")

    step("metadata: DICOM JSON with the Pixel Data as a BulkDataURI")
    meta = peer("metadata", mf["study"], mf["series"], mf["sop"])
    check_equal(meta["00280008"]["Value"], [FRAMES], "NumberOfFrames in the metadata")
    check_equal(meta["00100020"], {"vr": "LO", "Value": ["PAT7"]}, "PatientID in the metadata")
    check(meta["7FE00010"].get("BulkDataURI", "").endswith(f"/instances/{mf['sop']}/bulkdata/7FE00010")
          and "InlineBinary" not in meta["7FE00010"], f"Pixel Data as a BulkDataURI: {meta['7FE00010']}")

    step("frames with dicomweb-client: frames 1, 100 and 200 equal pydicom's bytes of each frame")
    peer("frames", mf["study"], mf["series"], mf["sop"], "1,100,200", c.path("frames"))
    for n in (1, 100, 200):
        check(file_bytes(c.path("frames", str(n))) == frame_of(c, mf["path"], n), f"frame {n} differs from pydicom's")

    step(f"a frame is a range of the Blob: the gateway reads far less than the {FRAMES * FRAME_BYTES} byte instance")
    base = f"/dicom-web/studies/{mf['study']}/series/{mf['series']}/instances/{mf['sop']}"
    expected = frame_of(c, mf["path"], 150)
    times = []
    for _ in range(20):
        before = read_chars(gw.proc.pid)
        started = time.monotonic()
        status, headers, body = h.request("GET", base + "/frames/150")
        times.append(time.monotonic() - started)
        read = read_chars(gw.proc.pid) - before
        check_equal(status, 200, "frame 150's status")
        check(parts(headers["content-type"], body)[0][1] == expected, "frame 150 differs from pydicom's")
        check(read < 4 * FRAME_BYTES, f"the gateway read {read} bytes for one frame of {FRAME_BYTES}")
    step(f"one frame of the {FRAMES}-frame instance: median {statistics.median(times) * 1000:.2f} ms, "
         f"max {max(times) * 1000:.2f} ms over 20 fetches; the gateway read {read} bytes for the last")
    check(f"frames 150: {FRAME_BYTES} bytes pulled in 1 ranges of {FRAME_BYTES} bytes" in gw.log(),
          "no log line of the ranged pull")

    step("bulk data with Range: 206 with Content-Range, 416 past the end")
    status, headers, body = h.request("GET", base + "/bulkdata/7FE00010",
                                      headers={"Range": f"bytes={FRAME_BYTES}-{FRAME_BYTES + 9}"})
    total = FRAMES * FRAME_BYTES
    check_equal((status, headers.get("content-range")), (206, f"bytes {FRAME_BYTES}-{FRAME_BYTES + 9}/{total}"),
                "a range of the Pixel Data")
    check_equal(body, frame_of(c, mf["path"], 2)[:10], "the range's bytes (frame 2's first 10)")
    status, headers, body = h.request("GET", base + "/bulkdata/7FE00010", headers={"Range": f"bytes={total}-"})
    check_equal((status, headers.get("content-range")), (416, f"bytes */{total}"), "a range past the end")
    check(b"outside the Pixel Data" in body, f"the 416 says why: {body!r}")

    step("requests of the shapes the OHIF Viewer sends (docs/DICOM.md's recipe): study list, series metadata, "
         "frames, bulk data")
    status, _, body = h.request("GET", "/dicom-web/studies?limit=101&offset=0&fuzzymatching=false"
                                       "&includefield=00081030%2C00080060&PatientName=*PAT1*")
    check_equal((status, len(json.loads(body))), (200, 2), "the study list of PAT1")
    status, headers, body = h.request("GET", f"/dicom-web/studies/{mf['study']}/series/{mf['series']}/metadata",
                                      headers={"Accept": "application/json"})
    check_equal((status, json.loads(body)[0]["00280008"]["Value"]), (200, [FRAMES]), "series metadata")
    status, headers, body = h.request("GET", base + "/frames/7", headers={
        "Accept": "multipart/related; type=application/octet-stream; transfer-syntax=*"})
    check_equal(status, 200, "a frame with the viewer's Accept")
    check(parts(headers["content-type"], body)[0][1] == frame_of(c, mf["path"], 7), "frame 7 differs from pydicom's")
    status, headers, body = h.request("GET", base + "/bulkdata/7FE00010", headers={"Accept": "application/octet-stream"})
    check_equal((status, headers["content-type"], len(body)), (200, "application/octet-stream", total),
                "the whole Pixel Data as one body")

    step("STOW-RS with dicomweb-client: two new instances stored, then found and retrieved")
    new = make_objects(c, "study", c.path("new"), "2", "PAT9", "20261120")
    stored = peer("store", *[e["path"] for e in new])
    refs = stored["00081199"]["Value"]
    check_equal(sorted(r["00081155"]["Value"][0] for r in refs), sorted(e["sop"] for e in new),
                "the Referenced SOP Sequence")
    check("00081198" not in stored, f"no Failed SOP Sequence: {stored}")
    check_equal(sorted(i["00080018"]["Value"][0] for i in peer("search", "instances", new[0]["study"])),
                sorted(e["sop"] for e in new), "the stored instances found")
    peer("instance", new[0]["study"], new[0]["series"], new[0]["sop"], c.path("stow-back.dcm"))
    check(data_set(file_bytes(c.path("stow-back.dcm"))) == data_set(file_bytes(new[0]["path"])),
          "the stored instance comes back bit-exact")
    check("STOW-RS from 127.0.0.1: 2 parts, 2 stored, 0 failed" in gw.log(), "no log line of the STOW-RS")

    step("STOW-RS conflicts as C-STORE's: another data set under a stored SOP Instance UID is refused (C011)")
    make_objects(c, "variant", new[1]["path"], c.path("variant.dcm"))
    other = make_objects(c, "study", c.path("other"), "1", "PAT9", "20261121")[0]

    def stow(paths, target="/dicom-web/studies"):
        b = "stow-boundary-1"
        payload = b"".join(b"--" + b.encode() + b"\r\nContent-Type: application/dicom\r\n\r\n" + file_bytes(p) + b"\r\n"
                           for p in paths) + b"--" + b.encode() + b"--\r\n"
        return h.request("POST", target, body=payload,
                         headers={"Content-Type": f'multipart/related; type="application/dicom"; boundary={b}',
                                  "Accept": "application/dicom+json"})
    status, headers, body = stow([c.path("variant.dcm")])
    check_equal(status, 409, f"a STOW-RS of one conflicting instance ({body!r})")
    failed = json.loads(body)["00081198"]["Value"][0]
    check_equal((failed["00081155"]["Value"], failed["00081197"]["Value"]), ([new[1]["sop"]], [0xC011]),
                "the Failed SOP Sequence names the instance and status C011")
    status, headers, body = stow([other["path"], c.path("variant.dcm")])
    check_equal(status, 202, f"a STOW-RS with one stored and one refused ({body!r})")
    response = json.loads(body)
    check_equal((len(response["00081199"]["Value"]), len(response["00081198"]["Value"])), (1, 1),
                "one referenced, one failed")
    status, headers, body = stow([new[0]["path"]], target=f"/dicom-web/studies/{ct[0]['study']}")
    check_equal(status, 409, "an instance of another study than the path's")
    check(f"is not {ct[0]['study']} of the path" in headers.get("warning", ""), f"the Warning says why: {headers}")

    step("limits: a body over --http-max-body is refused (413) before it is read")
    s = socket.create_connection((h.host, h.port), timeout=10)
    s.sendall(b"POST /dicom-web/studies HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/related; boundary=b\r\n"
              b"Content-Length: 3000000\r\n\r\n")
    answer = s.recv(4096)
    s.close()
    check(answer.startswith(b"HTTP/1.1 413") and b"exceeds 2097152 bytes (--http-max-body)" in answer,
          f"the answer to a 3 MB body: {answer!r}")

    step("limits: headers over 16 KiB are refused (431)")
    s = socket.create_connection((h.host, h.port), timeout=10)
    s.sendall(b"GET /dicom-web/studies HTTP/1.1\r\nHost: x\r\nX-Filler: " + b"a" * 20000 + b"\r\n\r\n")
    answer = s.recv(4096)
    s.close()
    check(answer.startswith(b"HTTP/1.1 431") and b"the request's headers exceed 16384 bytes" in answer,
          f"the answer to 20 KB of headers: {answer!r}")

    step("CORS: a preflight from the allowed origin is answered 204, another origin 403; responses carry the origin")
    status, headers, _ = h.request("OPTIONS", "/dicom-web/studies", headers={
        "Origin": "http://viewer.test", "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "authorization, accept"})
    check_equal((status, headers.get("access-control-allow-origin"), headers.get("access-control-allow-headers")),
                (204, "http://viewer.test", "authorization, accept"), "the preflight's answer")
    check("GET" in headers.get("access-control-allow-methods", ""), f"allowed methods: {headers}")
    status, _, body = h.request("OPTIONS", "/dicom-web/studies", headers={
        "Origin": "http://evil.test", "Access-Control-Request-Method": "GET"})
    check_equal(status, 403, f"a preflight from another origin ({body!r})")
    status, headers, _ = h.request("GET", "/dicom-web/studies", headers={"Origin": "http://viewer.test"})
    check_equal((status, headers.get("access-control-allow-origin")), (200, "http://viewer.test"),
                "a search from the viewer's origin")

    step("a slow-loris connection (a header byte every 0.4 s) is closed at --http-timeout 3 s while others are served")
    slow = socket.create_connection((h.host, h.port), timeout=10)
    opened = time.monotonic()
    slow.sendall(b"GET /dicom-web/studies HTTP/1.1\r\n")
    closed_after = None
    served = []
    for i in range(30):  # at most 12 s
        try:
            slow.sendall(b"X")
        except OSError:
            closed_after = time.monotonic() - opened
            break
        if i % 3 == 0:
            t = time.monotonic()
            status, _, _ = Http(url).request("GET", "/dicom-web/studies?PatientID=PAT1")
            served.append((status, time.monotonic() - t))
        slow.settimeout(0.4)
        try:
            if slow.recv(100) == b"":
                closed_after = time.monotonic() - opened
                break
        except socket.timeout:
            pass
    slow.close()
    check(closed_after is not None and 2.5 <= closed_after <= 5, f"the slow connection was closed after {closed_after} s")
    check(served and all(st == 200 and sec < 1 for st, sec in served), f"searches meanwhile: {served}")
    step(f"closed after {closed_after:.1f} s; {len(served)} searches meanwhile in at most "
         f"{max(sec for _, sec in served) * 1000:.0f} ms")

    step("the per-address cap: 6 idle connections from 127.0.0.2 are held, a 7th is closed at once; "
         "127.0.0.1 is still served")
    held = []
    for _ in range(6):
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        s.connect((h.host, h.port))
        held.append(s)
    extra = socket.socket()
    extra.bind(("127.0.0.2", 0))
    extra.settimeout(2)
    extra.connect((h.host, h.port))
    t = time.monotonic()
    check_equal(extra.recv(10), b"", "the 7th connection of 127.0.0.2 is closed")
    check(time.monotonic() - t < 1, "the 7th connection was not closed at once")
    status, _, _ = Http(url).request("GET", "/dicom-web/studies")
    check_equal(status, 200, "a search from 127.0.0.1 while 127.0.0.2 holds its cap")
    for s in held + [extra]:
        s.close()

    step("the total cap (--http-max-connections 32): held by 127.0.0.2-6 (6 each) and 127.0.0.7 (2), a newcomer "
         "from 127.0.0.1 ends an idle connection of an address holding the most and is served")
    held = {}
    for a in range(2, 8):
        held[a] = []
        for _ in range(6 if a < 7 else 2):
            s = socket.socket()
            s.bind((f"127.0.0.{a}", 0))
            s.connect((h.host, h.port))
            held[a].append(s)
    # They send nothing and the server answers none of them: the newcomer below must come after all 32.
    harness.wait_for(lambda: harness.all_accepted(h.port, [s for socks in held.values() for s in socks]), 10,
                     f"the gateway on port {h.port} to accept the 32 held connections")
    status, _, _ = Http(url).request("GET", "/dicom-web/studies")
    check_equal(status, 200, "the newcomer's search at the total cap")

    def ended(sock):
        sock.settimeout(0.05)
        try:
            return sock.recv(10) == b""
        except socket.timeout:
            return False
        except OSError:
            return True
    gone = {a: sum(1 for s in socks if ended(s)) for a, socks in held.items()}
    check(sum(gone.values()) == 1 and gone[7] == 0, f"connections ended per address: {gone}")
    for socks in held.values():
        for s in socks:
            s.close()

    step("TLS (--http-tls-cert/key, client certificates of --http-tls-ca) and a bearer token (--http-token-file): "
         "a client without a certificate is refused at the handshake; without the token 401, with it served; "
         "OPTIONS needs none")
    openssl(c, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=web-ca", "-keyout",
            "ca.key", "-out", "ca.pem", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    server = make_cert(c, "server", "/CN=gateway", "serverAuth", "IP:127.0.0.1")
    viewer = make_cert(c, "viewer", "/CN=viewer", "clientAuth")
    with open(c.path("tokens"), "w") as f:
        f.write("# viewers\nsecret-token-1\n")
    gw2 = Gateway(c, "ws1", "gateway2", extra=["--http-address", "127.0.0.1:0", "--http-token-file", c.path("tokens"),
                                               "--http-tls-cert", server[0], "--http-tls-key", server[1],
                                               "--http-tls-ca", c.path("ca.pem")])
    check(gw2.http.startswith("https://127.0.0.1:"), f"the ready line names https: {gw2.proc.ready_line!r}")
    host, port = host_port(gw2.http)
    anonymous = ssl.create_default_context(cafile=c.path("ca.pem"))
    try:
        with socket.create_connection((host, port), timeout=10) as raw:
            with anonymous.wrap_socket(raw, server_hostname=host) as tls:
                tls.sendall(b"GET /dicom-web/studies HTTP/1.1\r\nHost: x\r\n\r\n")
                refused = tls.recv(100) == b""
    except (ssl.SSLError, ConnectionResetError):
        refused = True
    check(refused, "a TLS client without a certificate was served")
    trusted = ssl.create_default_context(cafile=c.path("ca.pem"))
    trusted.load_cert_chain(viewer[0], viewer[1])
    h2 = Http(gw2.http, context=trusted)
    status, headers, body = h2.request("GET", "/dicom-web/studies")
    check_equal(status, 401, f"no token ({body!r})")
    check(b"requires an Authorization: Bearer token" in body and headers.get("www-authenticate", "").startswith("Bearer"),
          f"the 401 says what is needed: {headers} {body!r}")
    status, _, _ = h2.request("GET", "/dicom-web/studies", headers={"Authorization": "Bearer wrong"})
    check_equal(status, 401, "a wrong token")
    status, _, body = h2.request("GET", "/dicom-web/studies", headers={"Authorization": "Bearer secret-token-1"})
    check(status in (200, 204), f"the token of the file, over TLS: status {status}")
    # gateway2's own index fills from the store's Blobs (its indexer) meanwhile.
    harness.wait_for(lambda: (lambda r: r[0] == 200 and len(json.loads(r[2])) == 5)(
        h2.request("GET", "/dicom-web/studies", headers={"Authorization": "Bearer secret-token-1"})), 30,
        "the 5 studies over TLS", interval=0.2)
    status, _, _ = h2.request("OPTIONS", "/dicom-web/studies")
    check_equal(status, 204, "OPTIONS without a token")
    status, headers, body = h2.request("GET", f"/dicom-web/studies/{mr[0]['study']}", headers={
        "Authorization": "Bearer secret-token-1", "Accept": 'multipart/related; type="application/dicom"'})
    check_equal(status, 200, "the MR study over TLS")
    check(sorted(data_set(d) for _, d in parts(headers["content-type"], body)) ==
          sorted(data_set(file_bytes(e["path"])) for e in mr),
          "over TLS, the MR study's parts (encrypted from the store's file, mapped in place) are the data sets sent")
    check(in_place_counts(gw2.log())["in_place"] > 0, "no instance served in place over TLS")

    step("bad options: exit 1 naming the value")
    for extra_args, text in [(["--http-address", "nowhere"], "--http-address \"nowhere\": expected HOST:PORT"),
                             (["--http-tls-cert", "x.pem"], "the --http-* options need --http-address"),
                             (["--http-address", "127.0.0.1:0", "--http-tls-cert", "x.pem"],
                              "--http-tls-cert needs --http-tls-key")]:
        code, _, err = c.run([harness.program("gateway/blob-dicomd"), "--aetitle", "X", "--port", "0", "--store",
                              "ws1", "--index", "sqlite:" + c.path("x.sqlite"), *extra_args], timeout=30)
        check(code == 1 and text in err, f"{extra_args}: exit {code}, {err!r}")


if __name__ == "__main__":
    harness.main(test)
