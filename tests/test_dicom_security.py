#!/usr/bin/env python3
"""Who may use blob-dicomd's DICOM port (docs/DICOM.md, "Security";
docs/SECURITY.md, "DICOM port"): the AE allow-list with hosts and rights.

A gateway with --peer MODALITY@127.0.0.1=store,query,retrieve,
--peer VIEWER@localhost=query (a host name, resolved at start) and
--peer FARAWAY@127.0.0.3=store:
- MODALITY stores (storescu), finds (findscu) and retrieves (getscu);
- an unknown calling AE title, MODALITY from 127.0.0.2 (a raw association
  request from a socket bound there) and a called AE title other than
  --aetitle are rejected: A-ASSOCIATE-RJ permanent (1), service user (1),
  reason calling (3) or called (7) AE title not recognized; FARAWAY from
  127.0.0.3 is accepted (A-ASSOCIATE-AC);
- VIEWER (query only) finds, but its C-STORE, C-GET and C-MOVE are refused
  with status 0124 (Refused: not authorized), nothing stored or sent; so is
  MOVER's Storage Commitment request (N-ACTION) without the store right;
- without any --peer a gateway warns at start that its port is open to every
  peer (and still serves an unknown AE title);
- bad --peer values are usage errors naming the value and what is allowed,
  and an unresolvable host fails the start naming it.
Real omniNames, blobstored, blob-dicomd and DCMTK tools on 127.0.0.0/8."""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, program, step  # noqa: E402
from harness.dicom import AE, Gateway, make_objects, pynetdicom_python, tool  # noqa: E402
from test_dicom_lockout import associate_rq, connect, read_pdu  # noqa: E402

REJECTED_PERMANENT, SERVICE_USER = 1, 1
CALLING_NOT_RECOGNIZED, CALLED_NOT_RECOGNIZED = 3, 7


def raw_association(gw, source, calling, called=AE):
    """A raw A-ASSOCIATE-RQ from `source`: the answer's (PDU type, body)."""
    s = connect(gw, source)
    try:
        s.sendall(associate_rq(called=called, calling=calling))
        return read_pdu(s)
    finally:
        s.close()


def check_rejected(answer, reason, what):
    kind, body = answer
    check_equal(kind, 3, f"{what}: the PDU answering the request (3: A-ASSOCIATE-RJ)")
    check_equal(tuple(body[1:4]), (REJECTED_PERMANENT, SERVICE_USER, reason),
                f"{what}: A-ASSOCIATE-RJ result, source, reason")


def test(c):
    c.start_daemon("ws1", "file")
    ct = make_objects(c, "study", c.path("ct"), "3", "PAT1", "20261115")
    mr = make_objects(c, "study", c.path("mr"), "2", "PAT2", "20261116", "MR")

    step("bad --peer values: usage errors naming the value and what is allowed")
    base = [program("gateway/blob-dicomd"), "--aetitle", AE, "--port", "0", "--store", "ws1", "--naming", c.naming,
            "--spool", c.root]
    for value, expected in [
        ("MODALITY", '--peer MODALITY: no =RIGHTS (expected AE@HOST=RIGHTS'),
        ("MODALITY=store", '--peer MODALITY=store: no @HOST (expected AE@HOST=RIGHTS'),
        ("MODALITY@*=store,delete", '--peer MODALITY@*=store,delete: unknown right "delete"; expected a comma list '
                                    'of store, query, retrieve, move'),
        ("MODALITY@*=move:PACS+", '--peer MODALITY@*=move:PACS+: move destination "": expected 1 to 16 characters'),
        ("ABCDEFGHIJKLMNOPQ@*=store", 'AE title "ABCDEFGHIJKLMNOPQ": expected 1 to 16 characters'),
        ("MODALITY@=store", '--peer MODALITY@=store: empty HOST'),
    ]:
        code, _, err = c.run(base + ["--peer", value], timeout=30)
        check_equal(code, 1, f"exit code of --peer {value}")
        check(expected in err, f"--peer {value}: expected {expected!r} in {err!r}")
    code, _, err = c.run(base + ["--peer", "MODALITY@no-such-host.invalid=store"], timeout=60)
    check_equal(code, 10, "exit code of an unresolvable --peer host")
    check('--peer MODALITY@no-such-host.invalid=store: host "no-such-host.invalid" does not resolve' in err,
          f"the unresolvable host's error: {err!r}")
    code, _, err = c.run(base + ["--peer-subject", "CN=modality1=store"], timeout=30)
    check(code == 1 and "--peer-subject CN=modality1=store: certificate subjects need DICOM TLS" in err,
          f"--peer-subject without TLS: exit {code}, {err!r}")

    step("without --peer: a warning at start, any calling AE title served (today's behaviour)")
    open_gw = Gateway(c, "ws1", "open-gateway", index_url="")
    check("blob-dicomd warning: the DICOM port is open to every peer" in open_gw.log(),
          f"the open-port warning: {open_gw.log()[-2000:]!r}")
    code, _, err = c.run(["echoscu", "-aet", "ANYONE", "-aec", AE, "127.0.0.1", str(open_gw.port)], timeout=60)
    check_equal(code, 0, f"echoscu of an unknown AE title to the open gateway ({err.strip()!r})")
    open_gw.proc.stop()

    gw = Gateway(c, "ws1", "gateway", extra=["--peer", "MODALITY@127.0.0.1=store,query,retrieve",
                                             "--peer", "VIEWER@localhost=query",
                                             "--peer", "FARAWAY@127.0.0.3=store",
                                             "--peer", "MOVER@127.0.0.1=query",
                                             "--destination", "STORESCP=127.0.0.1:9"])
    check("DICOM port allow-list: MODALITY@127.0.0.1=store,query,retrieve; VIEWER@localhost(127.0.0.1)=query; "
          "FARAWAY@127.0.0.3=store; MOVER@127.0.0.1=query; other peers are rejected" in gw.log(),
          f"the allow-list's start line: {gw.log()[-2000:]!r}")

    step("MODALITY stores, finds and retrieves")
    gw.storescu("+sd", c.path("ct"))
    code, _, err = c.run(["findscu", "-aet", "MODALITY", "-aec", AE, "-S", "-k", "QueryRetrieveLevel=STUDY",
                          "-k", "StudyInstanceUID", "127.0.0.1", str(gw.port)], timeout=60)
    check_equal(code, 0, f"findscu of MODALITY ({err[-1000:]!r})")
    got = c.path("get-modality")
    os.makedirs(got)
    code, _, err = c.run(["getscu", "-aet", "MODALITY", "-aec", AE, "-S", "-od", got, "-k", "QueryRetrieveLevel=STUDY",
                          "-k", f"StudyInstanceUID={ct[0]['study']}", "127.0.0.1", str(gw.port)], timeout=120)
    check_equal((code, len(os.listdir(got))), (0, 3), f"getscu of MODALITY: exit code, files ({err[-1000:]!r})")

    step("an unknown calling AE title: rejected, permanent, calling AE title not recognized")
    check_rejected(raw_association(gw, "127.0.0.1", "STRANGER"), CALLING_NOT_RECOGNIZED, "STRANGER from 127.0.0.1")
    code, _, err = c.run(["echoscu", "-aet", "STRANGER", "-aec", AE, "127.0.0.1", str(gw.port)], timeout=60)
    check(code != 0 and "Calling AE Title Not Recognized" in err, f"echoscu of STRANGER: exit {code}, {err!r}")
    check('association from STRANGER@127.0.0.1 rejected (permanent, calling AE title not recognized): calling AE '
          'title "STRANGER" is not in the allow-list (--peer)' in gw.log(), "the rejection's log line")

    step("an allowed AE title from a host not allowed for it (127.0.0.2): rejected; FARAWAY from 127.0.0.3 accepted")
    check_rejected(raw_association(gw, "127.0.0.2", "MODALITY"), CALLING_NOT_RECOGNIZED, "MODALITY from 127.0.0.2")
    check('calling AE title "MODALITY" may not connect from 127.0.0.2 (--peer)' in gw.log(),
          "the wrong host's log line")
    check_rejected(raw_association(gw, "127.0.0.1", "FARAWAY"), CALLING_NOT_RECOGNIZED, "FARAWAY from 127.0.0.1")
    kind, _ = raw_association(gw, "127.0.0.3", "FARAWAY")
    check_equal(kind, 2, "FARAWAY from 127.0.0.3: the answer's PDU type (2: A-ASSOCIATE-AC)")

    step("a called AE title other than --aetitle: rejected, called AE title not recognized")
    check_rejected(raw_association(gw, "127.0.0.1", "MODALITY", called="OTHERGW"), CALLED_NOT_RECOGNIZED,
                   "MODALITY calling OTHERGW")

    step("VIEWER (query only): C-FIND answered; C-STORE and C-GET refused with 0124")
    code, _, err = c.run(["findscu", "-v", "-aet", "VIEWER", "-aec", AE, "-S", "-k", "QueryRetrieveLevel=STUDY",
                          "-k", "StudyInstanceUID", "127.0.0.1", str(gw.port)], timeout=60)
    check_equal(code, 0, f"findscu of VIEWER ({err[-1000:]!r})")
    check(ct[0]["study"] in err, f"VIEWER's C-FIND lists the stored study: {err[-2000:]!r}")
    code, _, err = c.run(["storescu", "-v", "-aet", "VIEWER", "-aec", AE, "127.0.0.1", str(gw.port), mr[0]["path"]],
                         timeout=60)
    check("Received Store Response (Unknown Status: 0x124)" in err,
          f"storescu of VIEWER: status 0124 expected: exit {code}, {err[-2000:]!r}")
    os.makedirs(c.path("none"))
    code, _, err = c.run(["findscu", "-aet", "MODALITY", "-aec", AE, "-S", "-k", "QueryRetrieveLevel=STUDY",
                          "-k", f"StudyInstanceUID={mr[0]['study']}", "-X", "-od", c.path("none"),
                          "127.0.0.1", str(gw.port)], timeout=60)
    check_equal((code, os.listdir(c.path("none"))), (0, []), "the refused instance's study is not indexed")
    check(f"C-STORE of {mr[0]['sop']} from VIEWER@127.0.0.1: refused (status 0124, not authorized)" in gw.log(),
          "the refused C-STORE's log line")
    got = c.path("get-viewer")
    os.makedirs(got)
    code, _, err = c.run(["getscu", "-v", "-aet", "VIEWER", "-aec", AE, "-S", "-od", got,
                          "-k", "QueryRetrieveLevel=STUDY", "-k", f"StudyInstanceUID={ct[0]['study']}",
                          "127.0.0.1", str(gw.port)], timeout=60)
    check_equal(os.listdir(got), [], "files VIEWER's C-GET received")
    check(re.search(r"0x0?124\b", err),
          f"getscu of VIEWER: status 0124 expected: exit {code}, {err[-2000:]!r}")
    check("C-GET from VIEWER@127.0.0.1: refused (status 0124)" in gw.log(), "the refused C-GET's log line")

    step("VIEWER's C-MOVE and MOVER's Storage Commitment (no move, no store right): refused with 0124")
    code, _, err = c.run(["movescu", "-v", "-S", "-aet", "VIEWER", "-aec", AE, "-aem", "STORESCP",
                          "-k", "QueryRetrieveLevel=STUDY", "-k", f"StudyInstanceUID={ct[0]['study']}",
                          "127.0.0.1", str(gw.port)], timeout=60)
    check(re.search(r"0x0?124\b", err), f"movescu of VIEWER: status 0124 expected: exit {code}, {err[-2000:]!r}")
    python = pynetdicom_python()
    code, out, err = c.run([python, tool("dicom_move_peer.py"), "commit", "127.0.0.1", str(gw.port), AE, "nowait",
                            f"1.2.840.10008.5.1.4.1.1.2:{ct[0]['sop']}"], timeout=120)
    answers = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    check(code == 0 and answers and answers[0].get("action") == 0x0124,
          f"MOVER's N-ACTION: status 0124 expected: exit {code}, {out!r} {err[-1000:]!r}")


if __name__ == "__main__":
    harness.main(test)
