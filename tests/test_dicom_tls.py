#!/usr/bin/env python3
"""DICOM TLS on blob-dicomd's port (PS3.15 B.1; docs/DICOM.md, "Security")
and blob-dicomd in front of a TLS-only Blob store.

Certificates are made with `openssl` as tests/test_tls.py makes them: a CA,
the gateway's (serverAuth, SAN IP:127.0.0.1), the clients modality1 and
viewer1, a TLS store's and the gateway's client identity to it.

A gateway with --tls-* (--timeout 3, --max-associations-per-peer 2),
--peer-subject CN=modality1=store,query,retrieve and
--peer-subject CN=viewer1=query, driven by DCMTK's tools over TLS
(`+tls KEY CERT +cf CA`):
- modality1 stores (storescu) and finds (findscu); a 5 MiB multi-frame
  instance stored over TLS comes back bit-exact through pynetdicom's C-GET
  over TLS (DCMTK 3.6.7's getscu has no TLS options; skipped without the
  pynetdicom venv);
- viewer1's C-STORE is refused with 0124;
- a TLS client without a certificate (`--anonymous-tls`), one with a
  certificate of another CA and a plain TCP storescu fail, the gateway
  logging the failed handshake; a certificate of the CA whose subject is
  not listed is rejected (calling AE title not recognized);
- lock-out: two connections from 127.0.0.2 that never start the handshake,
  one from 127.0.0.3 that sends a few bytes of a ClientHello and one from
  127.0.0.4 that completes the handshake and sends no association request
  are held open while a TLS echoscu from 127.0.0.1 is answered within 3 s; a
  third from 127.0.0.2 is closed at once (per-peer cap); each held one is
  closed 3 to 5 s after its connect (--timeout 3), its slot freed.
A gateway with --store-tls-* in front of a TLS-only blobstored (which only
admits the gateway's certificate subject) stores through plain DICOM
storescu and gives the instances back through getscu, data sets bit-exact;
an instance another client pushes to that store is indexed from the store's
event, delivered over TLS.
Real omniNames, blobstored, blob-dicomd and DCMTK tools on 127.0.0.0/8."""

import json
import os
import shutil
import socket
import ssl
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step, wait_for  # noqa: E402
from harness.dicom import AE, Gateway, data_set, make_objects, pynetdicom_python, tool  # noqa: E402
from test_dicom_lockout import closed_by_peer, connect  # noqa: E402
from test_tls import make_ca, make_cert, tls_args  # noqa: E402

TIMEOUT = 3
ECHO_BOUND = 3.0  # seconds: a lock-out bound, not a speed target


def dcmtk_tls(c, cert):
    """DCMTK's TLS options for a client with `cert` (cert, key): +tls KEY CERT +cf CA."""
    return ["+tls", cert[1], cert[0], "+cf", c.path("ca.pem")]


class TlsGateway(Gateway):
    """A gateway whose port speaks TLS only: its start's echo goes over TLS as modality1."""

    client = None

    def echo(self, expect=0):
        code, _, err = self.c.run(["echoscu", *dcmtk_tls(self.c, TlsGateway.client), "-aet", "MODALITY",
                                   "-aec", AE, "127.0.0.1", str(self.port)], timeout=60)
        if expect is not None:
            check_equal(code, expect, f"echoscu over TLS: exit code ({err.strip()!r})")
        return code


def test(c):
    if shutil.which("openssl") is None:
        raise harness.TestSkipped("openssl is not installed")
    step("certificates: CA, the gateway, modality1, viewer1, a store and the gateway's identity to it")
    make_ca(c, "ca")
    gw_cert = make_cert(c, "ca", "gateway-port", "/CN=blob-dicomd", "serverAuth", san="IP:127.0.0.1")
    modality = make_cert(c, "ca", "modality1", "/CN=modality1", "clientAuth")
    viewer = make_cert(c, "ca", "viewer1", "/CN=viewer1", "clientAuth")
    store_cert = make_cert(c, "ca", "store", "/CN=store.central", "serverAuth,clientAuth", san="IP:127.0.0.1")
    gw_client = make_cert(c, "ca", "gateway-client", "/CN=gateway", "serverAuth,clientAuth", san="IP:127.0.0.1")
    stranger = make_cert(c, "ca", "stranger", "/CN=stranger", "clientAuth")
    make_ca(c, "rogue-ca")
    rogue = make_cert(c, "rogue-ca", "rogue", "/CN=modality1", "clientAuth")
    TlsGateway.client = modality

    c.start_daemon("ws1", "file")
    step("a TLS key that does not match its certificate: the start fails naming both files")
    code, _, err = c.run([harness.program("gateway/blob-dicomd"), "--aetitle", AE, "--port", "0", "--store", "ws1",
                          "--naming", c.naming, "--spool", c.root, "--tls-cert", gw_cert[0], "--tls-key", modality[1],
                          "--tls-ca", c.path("ca.pem")], timeout=60)
    check(code == 10 and f'TLS key "{modality[1]}" does not match the certificate "{gw_cert[0]}"' in err,
          f"a mismatched --tls-key: exit {code}, {err!r}")
    ct = make_objects(c, "study", c.path("ct"), "3", "PAT1", "20261115")
    gw = TlsGateway(c, "ws1", "tls-gateway", extra=[
        "--tls-cert", gw_cert[0], "--tls-key", gw_cert[1], "--tls-ca", c.path("ca.pem"),
        "--peer-subject", "CN=modality1=store,query,retrieve", "--peer-subject", "CN=viewer1=query",
        "--timeout", str(TIMEOUT), "--max-associations", "6", "--max-associations-per-peer", "2"])

    step("modality1 over TLS: storescu, findscu (DCMTK 3.6.7's getscu has no TLS options)")
    code, _, err = c.run(["storescu", *dcmtk_tls(c, modality), "-aet", "MODALITY", "-aec", AE, "+sd",
                          "127.0.0.1", str(gw.port), c.path("ct")], timeout=120)
    check_equal(code, 0, f"storescu over TLS ({err[-2000:]!r})")
    code, _, err = c.run(["findscu", "-v", *dcmtk_tls(c, modality), "-aet", "MODALITY", "-aec", AE, "-S",
                          "-k", "QueryRetrieveLevel=STUDY", "-k", "StudyInstanceUID", "127.0.0.1", str(gw.port)],
                         timeout=60)
    check(code == 0 and ct[0]["study"] in err, f"findscu over TLS lists the study: exit {code}, {err[-2000:]!r}")

    step("a 5 MiB multi-frame instance over TLS: stored by storescu, retrieved by pynetdicom's C-GET bit-exact")
    mf = make_objects(c, "multiframe", c.path("mf.dcm"), "40")[0]
    code, _, err = c.run(["storescu", *dcmtk_tls(c, modality), "-aet", "MODALITY", "-aec", AE,
                          "127.0.0.1", str(gw.port), mf["path"]], timeout=120)
    check_equal(code, 0, f"storescu of the multi-frame instance over TLS ({err[-2000:]!r})")
    try:
        python = pynetdicom_python()
    except harness.TestSkipped as e:
        step(f"C-GET over TLS not run: {e}")
        python = None
    if python:
        got = c.path("got-tls")
        os.makedirs(got)
        code, out, err = c.run([python, tool("pynetdicom_tls_get.py"), "127.0.0.1", str(gw.port), AE, "MODALITY",
                                modality[0], modality[1], c.path("ca.pem"), got, "study", "STUDY",
                                f"StudyInstanceUID={mf['study']}"], timeout=120)
        check_equal(code, 0, f"pynetdicom's C-GET over TLS ({err[-2000:]!r})")
        check_equal(json.loads(out.splitlines()[-1]), {"status": 0, "stored": 1}, "the C-GET's final status, instances")
        with open(os.path.join(got, mf["sop"]), "rb") as f, open(mf["path"], "rb") as g:
            check(f.read() == data_set(g.read()), "the data set retrieved over TLS differs from the one sent")

    step("viewer1 (query only) over TLS: its C-STORE refused with 0124")
    code, _, err = c.run(["storescu", "-v", *dcmtk_tls(c, viewer), "-aet", "VIEWER", "-aec", AE, "127.0.0.1",
                          str(gw.port), ct[0]["path"]], timeout=60)
    check("Received Store Response (Unknown Status: 0x124)" in err, f"storescu of viewer1: exit {code}, {err!r}")

    step("no client certificate, one of another CA, and plain TCP to the TLS port: each fails, the handshake's failure "
         "logged")
    code, _, err = c.run(["storescu", "--anonymous-tls", "+cf", c.path("ca.pem"), "-aet", "MODALITY", "-aec", AE,
                          "127.0.0.1", str(gw.port), ct[0]["path"]], timeout=60)
    check(code != 0, f"storescu with TLS but no client certificate succeeded: {err!r}")
    code, _, err = c.run(["storescu", "-aet", "MODALITY", "-aec", AE, "127.0.0.1", str(gw.port), ct[0]["path"]],
                         timeout=60)
    check(code != 0, f"plain storescu to the TLS port succeeded: {err!r}")
    code, _, err = c.run(["echoscu", *dcmtk_tls(c, rogue), "-aet", "MODALITY", "-aec", AE, "127.0.0.1",
                          str(gw.port)], timeout=60)
    check(code != 0, f"echoscu with a certificate of another CA succeeded: {err!r}")

    step("a certificate of the CA whose subject is not listed (--peer-subject): rejected, calling AE title not "
         "recognized")
    code, _, err = c.run(["echoscu", *dcmtk_tls(c, stranger), "-aet", "MODALITY", "-aec", AE, "127.0.0.1",
                          str(gw.port)], timeout=60)
    check(code != 0 and "Calling AE Title Not Recognized" in err, f"echoscu as CN=stranger: exit {code}, {err!r}")
    check('association from MODALITY@127.0.0.1 (certificate "CN=stranger") rejected (permanent, calling AE title '
          'not recognized): certificate subject "CN=stranger" is not in the allow-list (--peer-subject)' in gw.log(),
          "the unlisted subject's log line")
    log = gw.log()
    check("peer did not return a certificate" in log,
          f"the gateway's log names the missing client certificate: {log[-3000:]!r}")
    check(log.count("TLS handshake failed") >= 3, f"three failed handshakes logged: {log[-3000:]!r}")
    check("certificate verify failed" in log, f"the other CA's certificate named in the log: {log[-3000:]!r}")

    step(f"lock-out: handshake-silent connections are cut at --timeout {TIMEOUT} s; a TLS echo is answered meanwhile")
    held = []
    silent = [connect(gw, "127.0.0.2"), connect(gw, "127.0.0.2")]
    held += [(s, time.monotonic(), f"silent connection {i + 1} from 127.0.0.2") for i, s in enumerate(silent)]
    partial = connect(gw, "127.0.0.3")
    partial.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]))  # a ClientHello's record header and first byte
    held.append((partial, time.monotonic(), "a ClientHello begun, from 127.0.0.3"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_cert_chain(*modality)
    context.load_verify_locations(c.path("ca.pem"))
    context.check_hostname = False
    started = time.monotonic()
    raw = connect(gw, "127.0.0.4")
    quiet = context.wrap_socket(raw)  # the handshake completes; no A-ASSOCIATE-RQ follows
    held.append((quiet, started, "handshake done, no request, from 127.0.0.4"))
    extra = connect(gw, "127.0.0.2")
    closed = closed_by_peer(extra, 2.0)
    check(closed is not None, "a third connection from 127.0.0.2 was not closed (per-peer cap 2)")
    wait_for(lambda: "connection from 127.0.0.2 closed before its TLS handshake (a limit is reached): 2 associations "
             "of 127.0.0.2 are open already (--max-associations-per-peer 2)" in gw.log(), 5, "the cap's log line")
    extra.close()
    t0 = time.monotonic()
    code = gw.echo(expect=None)
    took = time.monotonic() - t0
    check(code == 0 and took < ECHO_BOUND,
          f"the TLS echo while four connections are held: exit {code} in {took:.2f} s (bound {ECHO_BOUND} s)")
    results = {}

    def watch(s, begun, what):
        start = time.monotonic()
        after = closed_by_peer(s, TIMEOUT + 5)
        results[what] = None if after is None else start - begun + after

    threads = [threading.Thread(target=watch, args=h) for h in held]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT + 10)
    for s, _, _ in held:
        s.close()
    step("closed after the connect: " + ", ".join(f"{what} {seconds:.2f} s" if seconds is not None else f"{what} never"
                                                  for what, seconds in sorted(results.items())) +
         f"; the TLS echo meanwhile took {took:.2f} s")
    for what, seconds in sorted(results.items()):
        check(seconds is not None and TIMEOUT - 0.2 <= seconds <= TIMEOUT + 2,
              f"{what}: closed {seconds} s after its connect, expected {TIMEOUT} to {TIMEOUT + 2} s")
    check_equal(len(results), 4, "held connections watched")
    # The gateway closes a connection, then logs why: the lines may follow the closes.
    cut = f"no TLS handshake within {TIMEOUT} s of the connection (--timeout)"
    idle = f"no A-ASSOCIATE-RQ within {TIMEOUT} s of the connection (--timeout)"
    wait_for(lambda: gw.log().count(cut) >= 3 and idle in gw.log(), 10,
             f"the gateway's log lines of the cut connections: {gw.log()[-3000:]!r}")
    code = gw.echo(expect=0)

    step("blob-dicomd in front of a TLS-only store (--store-tls-*): storescu stores, getscu retrieves bit-exact")
    c.start_daemon("central", "file", extra=tls_args(c, *store_cert) + [
        "--allow-read", "CN=gateway", "--allow-write", "CN=gateway"])
    mr = make_objects(c, "study", c.path("mr"), "3", "PAT2", "20261116", "MR")
    front = Gateway(c, "central", "store-tls-gateway", extra=[
        "--store-tls-cert", gw_client[0], "--store-tls-key", gw_client[1], "--store-tls-ca", c.path("ca.pem")])
    front.storescu("+sd", c.path("mr"))
    got = c.path("got-central")
    code, err = front.getscu("study", "STUDY", got, f"StudyInstanceUID={mr[0]['study']}")
    check_equal((code, len(os.listdir(got))), (0, 3), f"getscu through the TLS store: exit code, files ({err!r})")
    for entry in mr:
        name = next(n for n in os.listdir(got) if n.endswith(entry["sop"]))
        with open(os.path.join(got, name), "rb") as f, open(entry["path"], "rb") as g:
            check(data_set(f.read()) == data_set(g.read()), f"the data set of {name} differs from the one sent")
    check('stored as' in front.log() and 'in store "central"' in front.log(), "the gateway's stored lines")

    step("an instance another client pushes to the TLS store is indexed from the store's event (over TLS)")
    other = make_objects(c, "study", c.path("other"), "1", "PAT3", "20261117")[0]
    c.blob(*tls_args(c, *gw_client), "push", "--name", other["sop"] + ".dcm", other["path"], store="central").ok()
    harness.wait_for(lambda: os.path.exists(front.index) and front.findscu(
        "study", "STUDY", f"StudyInstanceUID={other['study']}")[0], 10, "the pushed study in the gateway's index")


if __name__ == "__main__":
    harness.main(test)
