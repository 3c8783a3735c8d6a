#!/usr/bin/env python3
"""C-GET and C-MOVE of an instance stored in a transfer syntax the receiver
did not accept (docs/DICOM.md, "Transfer syntaxes of a retrieval"):

- a JPEG-LS lossless instance (DCMTK's dcmcjpls) to a pynetdicom C-GET
  requestor accepting CT Image Storage in explicit and implicit VR little
  endian only: it arrives decoded to explicit VR little endian, every
  element of its data set equal to the uncompressed original's (pixel data
  bit for bit);
- an instance stored as JPEG 2000 (DCMTK has no decoder for it) to the same
  requestor: its sub-operation fails and the final C-GET response is C122
  (Failed: unable to process, the code PS3.18 gives "Referenced Transfer
  Syntax not supported"), not A702 (out of resources), with an Error Comment
  naming the stored syntax and the instance in Failed SOP Instance UID List;
  a C-MOVE of it to a pynetdicom Storage SCP of the uncompressed syntaxes
  ends the same way;
- WADO-RS (PS3.18 8.7.3.5) of the same instances: without a transfer-syntax
  (explicit VR little endian, the default) the JPEG-LS one arrives decoded,
  equal to the original; with transfer-syntax=* as stored; with implicit VR
  little endian converted to it; the JPEG 2000 one is 406 naming its syntax
  unless the request takes it as stored.
Real omniNames, blobstored, blob-dicomd, storescu, dcmcjpls and pynetdicom
on 127.0.0.1."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402
from harness.dicom import AE, Gateway, make_objects, pynetdicom_python  # noqa: E402
from test_dicom_move import Peer, peer_run  # noqa: E402
from test_dicomweb import Http, parts  # noqa: E402

EXPLICIT, IMPLICIT = "1.2.840.10008.1.2.1", "1.2.840.10008.1.2"
JPEG_LS, J2K = "1.2.840.10008.1.2.4.80", "1.2.840.10008.1.2.4.90"


def test(c):
    python = pynetdicom_python()
    c.start_daemon("ws1", "file")
    peer = Peer(c, python, "PEERSCP", "any")
    gw = Gateway(c, "ws1", "gateway", extra=("--destination", f"PEERSCP=127.0.0.1:{peer.port}",
                                             "--http-address", "127.0.0.1:0"))

    step("a CT slice compressed with dcmcjpls (JPEG-LS lossless), another stored as JPEG 2000")
    plain, other = make_objects(c, "study", c.path("src"), "2", "PATJLS", "20261118")
    jls = c.path("jls.dcm")
    code, _, err = c.run(["dcmcjpls", plain["path"], jls])
    check_equal(code, 0, f"dcmcjpls's exit code ({err!r})")
    j2k = peer_run(c, python, "fake-j2k", other["path"], c.path("j2k.dcm"))[0]
    gw.storescu("-xt", jls)  # each proposed in its own transfer syntax
    gw.storescu("-xv", j2k["path"])
    stored = c.blob("find", "--index", gw.index_url, "--level", "instance").ok()["matches"]
    check_equal(sorted((m["SOPInstanceUID"], m["TransferSyntaxUID"]) for m in stored),
                sorted([(plain["sop"], JPEG_LS), (j2k["sop"], J2K)]), "the stored transfer syntaxes")

    def get(name, sop):
        directory = c.path(name)
        os.makedirs(directory)
        lines = peer_run(c, python, "get", "127.0.0.1", str(gw.port), AE, directory, "--syntaxes",
                         f"{EXPLICIT},{IMPLICIT}", "QueryRetrieveLevel=IMAGE", f"StudyInstanceUID={plain['study']}",
                         f"SeriesInstanceUID={plain['series']}", f"SOPInstanceUID={sop}")
        return directory, lines

    step("C-GET of the JPEG-LS instance by a requestor of explicit and implicit VR little endian: decoded")
    directory, lines = get("get-jls", plain["sop"])
    check_equal([(line["stored"], line["ts"]) for line in lines if "stored" in line], [(plain["sop"], EXPLICIT)],
                "the instance C-GET delivered and its syntax")
    check_equal(lines[-1], {"status": 0, "completed": 1, "failed": 0}, "the final C-GET response")
    r = peer_run(c, python, "compare", plain["path"], os.path.join(directory, plain["sop"] + ".dcm"))[0]
    check_equal(r, {"equal": True, "ts": [EXPLICIT, EXPLICIT], "differences": []},
                "the decoded data set against the uncompressed original")

    comment = f"no decoder for its transfer syntax {J2K}"
    step("C-GET of the JPEG 2000 instance by the same requestor: C122 naming the syntax, not A702")
    directory, lines = get("get-j2k", j2k["sop"])
    check_equal(lines, [{"status": 0xC122, "completed": 0, "failed": 1, "comment": comment,
                         "failed_uids": [j2k["sop"]]}], "the C-GET responses")
    check_equal(os.listdir(directory), [], "nothing delivered")
    check(f"C-GET from MOVER@127.0.0.1: instance {j2k['sop']}: cannot convert from {J2K} to {EXPLICIT}" in gw.log(),
          "the log line naming the instance and the syntaxes")

    step("C-MOVE of it to a Storage SCP of the uncompressed syntaxes: the same status and comment")
    responses = peer_run(c, python, "move", "127.0.0.1", str(gw.port), AE, "study", "IMAGE", "PEERSCP",
                         f"StudyInstanceUID={plain['study']}", f"SeriesInstanceUID={plain['series']}",
                         f"SOPInstanceUID={j2k['sop']}")
    check_equal(responses, [{"status": 0xC122, "completed": 0, "failed": 1, "warning": 0, "comment": comment,
                             "failed_uids": [j2k["sop"]]}], "the C-MOVE responses")
    check_equal(peer.lines(), [], "nothing delivered to the destination")

    step("WADO-RS of the JPEG-LS instance: decoded to explicit VR little endian by default, as stored with "
         "transfer-syntax=*, converted to implicit VR little endian when asked")
    h = Http(gw.http)
    path = f"/dicom-web/studies/{plain['study']}/series/{plain['series']}/instances/"

    def retrieve(sop, accept, name):
        status, headers, body = h.request("GET", path + sop, headers={"Accept": accept})
        if status != 200:
            return status, body, None
        (head, data), = parts(headers["content-type"], body)
        with open(c.path(name), "wb") as f:
            f.write(data)
        return status, head, c.path(name)

    dicom = 'multipart/related; type="application/dicom"'
    for accept, ts, original in [(dicom, EXPLICIT, plain["path"]), (dicom + "; transfer-syntax=*", JPEG_LS, jls),
                                 (dicom + f"; transfer-syntax={IMPLICIT}", IMPLICIT, plain["path"]),
                                 (dicom + f"; transfer-syntax={J2K}, " + dicom + f"; transfer-syntax={JPEG_LS}",
                                  JPEG_LS, jls)]:
        status, head, got = retrieve(plain["sop"], accept, "wado-" + ts + ".dcm")
        check_equal(status, 200, f"Accept: {accept}: status ({head!r})")
        check(f"transfer-syntax={ts}" in head, f"Accept: {accept}: the part names {ts}: {head!r}")
        r = peer_run(c, python, "compare", original, got)[0]
        check_equal(r, {"equal": True, "ts": [r["ts"][0], ts], "differences": []},
                    f"Accept: {accept}: the part's data set against {os.path.basename(original)}")
    check("1 converted to an uncompressed syntax" in gw.log(), "no log line of a converted instance")

    step("WADO-RS of the JPEG 2000 instance: 406 naming its syntax unless taken as stored")
    status, body, _ = retrieve(j2k["sop"], dicom, "wado-j2k.dcm")
    check_equal(status, 406, f"the JPEG 2000 instance by default ({body!r})")
    check(f"stored in transfer syntax {J2K} are served as stored only (DCMTK has no decoder for it)".encode() in body,
          f"the 406 names the syntax: {body!r}")
    status, head, got = retrieve(j2k["sop"], dicom + "; transfer-syntax=*", "wado-j2k.dcm")
    check(status == 200 and f"transfer-syntax={J2K}" in head, f"the JPEG 2000 instance as stored: {status} {head!r}")


if __name__ == "__main__":
    harness.main(test)
