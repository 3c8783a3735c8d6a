#!/usr/bin/env python3
"""Orthanc as a peer of blob-dicomd (make check-interop, not make check;
docs/DICOM.md, "Orthanc as a peer"): Debian's Orthanc 1.10 with its DICOMweb
plugin, started by the test with a configuration of its own
(tests/harness/orthanc.py) naming blob-dicomd as the modality BLOB and its
/dicom-web as the DICOMweb server BLOB; blob-dicomd has Orthanc as the
--destination ORTHANC and in its allow-list (--peer) with the rights it
uses. Through Orthanc's REST API: C-ECHO; a C-FIND (/modalities/BLOB/query)
finds our study; a C-MOVE (/modalities/BLOB/move) brings it into Orthanc,
whose stored files hold the data sets sent to blob-dicomd bit for bit; a
C-STORE (/modalities/BLOB/store) of an instance uploaded to Orthanc lands in
blob-dicomd (C-FIND finds it, its Blob holds the data set); Orthanc's
DICOMweb client (/dicom-web/servers/BLOB/retrieve) retrieves another study
by WADO-RS, bit for bit. Real omniNames, blobstored, blob-dicomd and Orthanc
on 127.0.0.1. Skipped (77) when Orthanc or its DICOMweb plugin is not
installed."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402
from harness.dicom import Gateway, check_pulled, data_set, make_objects  # noqa: E402
from harness.orthanc import AET, Orthanc  # noqa: E402
from harness.ports import free_port  # noqa: E402

SLICES = 5


def orthanc_files(orthanc, study_uid):
    """{SOP Instance UID: bytes of Orthanc's stored file} of a study Orthanc holds."""
    found = orthanc.post("/tools/find", {"Level": "Study", "Query": {"StudyInstanceUID": study_uid}})
    check_equal(len(found), 1, f"Orthanc studies with StudyInstanceUID {study_uid}")
    files = {}
    for instance in orthanc.get(f"/studies/{found[0]}/instances"):
        files[instance["MainDicomTags"]["SOPInstanceUID"]] = orthanc.get(f"/instances/{instance['ID']}/file",
                                                                          raw=True)
    return files


def check_same(files, entries, what):
    check_equal(sorted(files), sorted(e["sop"] for e in entries), f"{what}: the SOP Instance UIDs Orthanc holds")
    for entry in entries:
        with open(entry["path"], "rb") as f:
            sent = data_set(f.read())
        got = data_set(files[entry["sop"]])
        check(got == sent, f"{what}: the data set of {entry['sop']} in Orthanc ({len(got)} bytes) differs from the "
                           f"one sent to blob-dicomd ({len(sent)} bytes)")


def test(c):
    c.env["TCP_NODELAY"] = "1"
    c.start_daemon("ws1", "file")
    orthanc_dicom = free_port()
    # The allow-list of docs/DICOM.md's recipe: Orthanc with the rights it uses, the test's own DCMTK tools.
    gw = Gateway(c, "ws1", "gateway", extra=["--destination", f"{AET}=127.0.0.1:{orthanc_dicom}",
                                             "--peer", f"{AET}@127.0.0.1=store,query,retrieve,move:{AET}",
                                             "--peer", "MODALITY@127.0.0.1=store", "--peer", "VIEWER@127.0.0.1=query",
                                             "--http-address", "127.0.0.1:0"])
    orthanc = Orthanc(c, modality=("BLOB", "BLOBGW", gw.port), dicomweb=("BLOB", gw.http),
                      dicom_port=orthanc_dicom)

    step(f"a CT study of {SLICES} slices stored in blob-dicomd (storescu); C-ECHO from Orthanc")
    ct = make_objects(c, "study", c.path("ct"), str(SLICES), "PAT1", "20261115", "CT", "128")
    gw.storescu("+sd", c.path("ct"))
    orthanc.post("/modalities/BLOB/echo", {})
    study = ct[0]["study"]

    step("C-FIND from Orthanc (/modalities/BLOB/query) finds the study")
    query = orthanc.post("/modalities/BLOB/query", {"Level": "Study", "Query": {"PatientID": "PAT1",
                                                                                  "StudyInstanceUID": ""}})
    answers = orthanc.get(f"/queries/{query['ID']}/answers?expand&simplify")
    check_equal([a.get("StudyInstanceUID") for a in answers], [study], "the studies Orthanc's C-FIND found")
    check_equal(answers[0].get("PatientID"), "PAT1", "PatientID of the answer")

    step("C-MOVE from Orthanc (/modalities/BLOB/move) to itself: the data sets bit for bit")
    orthanc.post("/modalities/BLOB/move", {"Level": "Study", "Resources": [{"StudyInstanceUID": study}],
                                           "TargetAet": AET, "Synchronous": True, "Timeout": 60})
    check_same(orthanc_files(orthanc, study), ct, "C-MOVE into Orthanc")
    check(f"C-MOVE from {AET}@127.0.0.1 to {AET}: study level, {SLICES} instances sent, 0 failed" in gw.log(),
          "the gateway logged no C-MOVE of the study to Orthanc")

    step("C-STORE from Orthanc (/modalities/BLOB/store) of an instance uploaded to it")
    other = make_objects(c, "study", c.path("other"), "1", "PAT2", "20261116", "MR", "64")
    with open(other[0]["path"], "rb") as f:
        uploaded = orthanc.post("/instances", f.read())
    stored = orthanc.post("/modalities/BLOB/store", {"Resources": [uploaded["ID"]], "Synchronous": True})
    check_equal(stored.get("FailedInstancesCount"), 0, f"failed instances of Orthanc's C-STORE ({stored})")
    found, _ = gw.findscu("study", "IMAGE", "PatientID=PAT2", "SOPInstanceUID", "StudyInstanceUID")
    check_equal([f.get("SOPInstanceUID") for f in found], [other[0]["sop"]], "C-FIND of the instance Orthanc stored")
    check_pulled(c, other[0], "the instance Orthanc stored")

    step("Orthanc's DICOMweb client retrieves a study from blob-dicomd's DICOMweb (WADO-RS), bit for bit")
    third = make_objects(c, "study", c.path("third"), str(SLICES), "PAT3", "20261117", "CT", "128")
    gw.storescu("+sd", c.path("third"))
    retrieved = orthanc.post("/dicom-web/servers/BLOB/retrieve", {"Resources": [{"Study": third[0]["study"]}]})
    step(f"Orthanc's answer: {str(retrieved)[:300]}")
    check_same(orthanc_files(orthanc, third[0]["study"]), third, "WADO-RS retrieve into Orthanc")
    check("DICOMweb WADO-RS to 127.0.0.1:" in gw.log(),
          "the gateway logged no WADO-RS response")


if __name__ == "__main__":
    harness.main(test)
