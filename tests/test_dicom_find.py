#!/usr/bin/env python3
"""Queries of the study index: `blob find` over what blob-dicomd indexed
from storescu (a modality), with DICOM's matching rules (wildcards, date
ranges, UID lists, ModalitiesInStudy) at the four levels, text and --json,
and a clear error with the table's exit code for every malformed query.
Real omniNames, blobstored and blob-dicomd on 127.0.0.1; objects made by
tests/tools/dicom_objects.py (pydicom), a multi-frame image among them.

The gateway's C-FIND SCP answers the same queries to DCMTK's findscu
(Patient Root and Study Root, each level) and to pynetdicom, and refuses a
malformed identifier with A900 or C000 and a log line."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402
from harness.dicom import Gateway, make_objects, pynetdicom_python  # noqa: E402


def sops(rows):
    return sorted(r["SOPInstanceUID"] for r in rows)


def test(c, index_url=None):
    """`index_url`: the index blob-dicomd keeps (default: SQLite in the workspace); test_dicom_postgresql.py
    runs this test on PostgreSQL."""
    c.env["TCP_NODELAY"] = "1"
    c.start_daemon("ws1", "file")
    gw = Gateway(c, "ws1", "gateway", index_url=index_url)
    index = gw.index_url

    step("four studies of three patients through storescu, one of them a multi-frame image")
    a = make_objects(c, "study", c.path("a"), "12", "PAT1", "20261115")
    b = make_objects(c, "study", c.path("b"), "3", "PAT1", "20261120", "MR")
    d = make_objects(c, "study", c.path("d"), "2", "PAT10", "20250101")
    mf = make_objects(c, "multiframe", c.path("mf.dcm"), "8")[0]
    gw.storescu("+sd", c.path("a"), c.path("b"), c.path("d"), mf["path"])

    def find(*args, level=None):
        argv = ["find", "--index", index] + (["--level", level] if level else []) + list(args)
        result = c.blob(*argv).ok()
        check_equal(result["count"], len(result["matches"]), f"count of {argv}")
        return result["matches"]

    step("patient level: every patient with its counts, by PatientID")
    patients = find(level="patient")
    check_equal([(p["PatientID"], p["NumberOfPatientRelatedStudies"], p["NumberOfPatientRelatedInstances"])
                 for p in patients], [("PAT1", 2, 15), ("PAT10", 1, 2), ("PAT2", 1, 1)], "patients")
    check_equal(patients[0]["PatientName"], "Doe^PAT1", "PatientName")

    step("study level: single values, wildcards, date ranges, UID lists, ModalitiesInStudy")
    studies = find("PatientID=PAT1")
    check_equal([s["StudyInstanceUID"] for s in studies], [a[0]["study"], b[0]["study"]], "PAT1's studies by date")
    check_equal([s["ModalitiesInStudy"] for s in studies], ["CT", "MR"], "ModalitiesInStudy")
    check_equal([s["NumberOfStudyRelatedInstances"] for s in studies], [12, 3], "instances per study")
    check_equal(len(find("PatientID=PAT1*")), 3, "studies of PatientID=PAT1* (PAT1 and PAT10)")
    check_equal(sorted(s["PatientID"] for s in find("PatientName=Doe^PAT?")), ["PAT1", "PAT1", "PAT2"],
                "PatientName=Doe^PAT? (one character: not PAT10)")
    check_equal(sorted(s["StudyInstanceUID"] for s in find("StudyDate=20261101-20261118")),
                sorted([a[0]["study"], mf["study"]]), "StudyDate=20261101-20261118")
    check_equal([s["StudyInstanceUID"] for s in find("StudyDate=-20251231")], [d[0]["study"]], "StudyDate=-20251231")
    check_equal([s["StudyInstanceUID"] for s in find("StudyDate=20261120-")], [b[0]["study"]], "StudyDate=20261120-")
    check_equal(sorted(s["StudyInstanceUID"] for s in find(f"StudyInstanceUID={a[0]['study']}\\{d[0]['study']}")),
                sorted([a[0]["study"], d[0]["study"]]), "a list of two Study Instance UIDs")
    check_equal([s["StudyInstanceUID"] for s in find("ModalitiesInStudy=MR\\OT")], [mf["study"], b[0]["study"]],
                "ModalitiesInStudy=MR\\OT")
    check_equal(find("AccessionNumber=ACC-PAT1", "StudyTime=10-11", "StudyDate=20261120"),
                [s for s in studies if s["StudyDate"] == "20261120"], "three keys at once (AND)")
    check_equal(find("PatientID=nobody"), [], "no match")

    step("series and instance levels")
    series = find(f"StudyInstanceUID={a[0]['study']}", level="series")
    check_equal([(s["SeriesInstanceUID"], s["Modality"], s["NumberOfSeriesRelatedInstances"]) for s in series],
                [(a[0]["series"], "CT", 12)], "the series of study a")
    instances = find(f"SeriesInstanceUID={a[0]['series']}", level="instance")
    check_equal([i["InstanceNumber"] for i in instances], list(range(1, 13)), "instances by InstanceNumber")
    check_equal(sops(instances), sorted(e["sop"] for e in a), "the SOP Instance UIDs of study a")
    first = instances[0]
    check_equal((first["blob"], first["store"], first["size"]), (a[0]["sop"] + ".dcm", "ws1",
                c.blob("stat", a[0]["sop"] + ".dcm", store="ws1").ok()["size"]), "where the instance is")
    check(first["checksum"].startswith("crc32c:"), f"the Blob's checksum: {first['checksum']}")
    check_equal(first["TransferSyntaxUID"], "1.2.840.10008.1.2.1", "TransferSyntaxUID")
    multi = find("NumberOfFrames=8", level="instance")
    check_equal([(i["SOPInstanceUID"], i["NumberOfFrames"], i["Modality"]) for i in multi], [(mf["sop"], 8, "OT")],
                "the multi-frame image by NumberOfFrames")

    step("text output: a header line, then one tab-separated line per match")
    r = c.blob("find", "--index", index, "--level", "series", "PatientID=PAT1", json_out=False)
    r.ok()
    lines = r.stdout.splitlines()
    check_equal(len(lines), 3, f"lines of the text output {lines}")
    check(lines[0].split("\t")[:2] == ["PatientID", "PatientName"] and "SeriesInstanceUID" in lines[0],
          f"header line {lines[0]!r}")
    check(a[0]["series"] in lines[1] and b[0]["series"] in lines[2], f"series lines {lines[1:]}")
    r = c.blob("find", "--index", index, "PatientID=nobody", json_out=False)
    r.ok()
    check_equal(r.stdout, "", "text output without a match")

    step("malformed queries: a clear error, exit 10 (the input) or 1 (usage)")
    for args, text in ((["Bogus=1"], 'unknown key "Bogus" (keys: PatientID, PatientName'),
                       (["PatientID"], '"PatientID" is not KEY=VALUE'),
                       (["StudyDate=20261332"], "StudyDate=20261332: expected a date YYYYMMDD"),
                       (["StudyDate=2026-11-15"], "StudyDate=2026-11-15: expected a range of a date YYYYMMDD"),
                       (["StudyDate=20261120-20261101"], "the range ends before it starts"),
                       (["StudyTime=25"], "StudyTime=25: expected a time"),
                       (["StudyInstanceUID=1.2.*"], "UIDs match exactly: no wildcards"),
                       (["SeriesNumber=x1"], "SeriesNumber=x1: expected a non-negative integer"),
                       (["PatientID=A\\B"], "a list (\\) is allowed for UIDs and ModalitiesInStudy only"),
                       (["PatientID=A", "PatientID=B"], "key PatientID given twice")):
        c.blob("find", "--index", index, *args).error(10, text)
    c.blob("find", "--index", index, "--level", "image").error(
        1, 'unknown level "image" (patient, study, series or instance)')
    c.blob("find", "PatientID=PAT1").error(1, "no study index given (--index sqlite:PATH or BLOBSTREAMING_INDEX)")
    c.blob("find", "--index", "mysql://x").error(10, "expected sqlite:PATH")
    c.blob("find", "--index", "sqlite:" + c.path("none.sqlite")).error(10, "no such file")
    c.blob("ls", "--level", "study").error(1, "--level applies to find only, not ls")
    c.blob("ls", "--index", index).error(1, "--index applies to find and pull --study/--series only, not ls")
    env_index = dict(c.env, BLOBSTREAMING_INDEX=index)
    r = harness.run_blob(["find", "--level", "patient", "PatientID=PAT2"], c.naming, env_index)
    check_equal([p["PatientID"] for p in r.ok()["matches"]], ["PAT2"], "--index from BLOBSTREAMING_INDEX")


    step("C-FIND from findscu: Study Root, study level, with return keys")
    answers, _ = gw.findscu("study", "STUDY", "PatientID=PAT1", "StudyInstanceUID", "StudyDate", "ModalitiesInStudy",
                            "NumberOfStudyRelatedInstances", "PatientName", "ReferringPhysicianName")
    check_equal([(r["StudyInstanceUID"], r["StudyDate"], r["ModalitiesInStudy"], r["NumberOfStudyRelatedInstances"],
                  r["PatientName"], r.get("ReferringPhysicianName"), r["QueryRetrieveLevel"]) for r in answers],
                [(a[0]["study"], "20261115", "CT", "12", "Doe^PAT1", "", "STUDY"),
                 (b[0]["study"], "20261120", "MR", "3", "Doe^PAT1", "", "STUDY")],
                "findscu's study-level answers (an attribute the instances lack comes back empty)")
    answers, _ = gw.findscu("study", "STUDY", "StudyDate=20261101-20261118", "PatientName=Doe^PAT?",
                            "StudyInstanceUID")
    check_equal(sorted(r["StudyInstanceUID"] for r in answers), sorted([a[0]["study"], mf["study"]]),
                "findscu: a date range and a wildcard")

    step("C-FIND from findscu: Patient Root at each level")
    answers, _ = gw.findscu("patient", "PATIENT", "PatientID=PAT1*", "PatientName", "NumberOfPatientRelatedStudies")
    check_equal([(r["PatientID"], r["NumberOfPatientRelatedStudies"]) for r in answers], [("PAT1", "2"), ("PAT10", "1")],
                "findscu: patients")
    answers, _ = gw.findscu("patient", "SERIES", "PatientID=PAT1", f"StudyInstanceUID={b[0]['study']}",
                            "SeriesInstanceUID", "Modality", "NumberOfSeriesRelatedInstances")
    check_equal([(r["SeriesInstanceUID"], r["Modality"], r["NumberOfSeriesRelatedInstances"]) for r in answers],
                [(b[0]["series"], "MR", "3")], "findscu: the series of study b")
    answers, _ = gw.findscu("patient", "IMAGE", f"SeriesInstanceUID={a[0]['series']}", "SOPInstanceUID",
                            "InstanceNumber")
    check_equal(sorted(r["SOPInstanceUID"] for r in answers), sorted(e["sop"] for e in a), "findscu: images")
    check("C-FIND from VIEWER@127.0.0.1: instance level, 12 matches" in gw.log(), "no log line of the C-FIND")

    step("C-FIND refusals: PATIENT level in Study Root (A900), a malformed date, no --index (C000)")
    # findscu names the status, not its code: A900 is DataSetDoesNotMatchSOPClass, C000 UnableToProcess.
    answers, err = gw.findscu("study", "PATIENT", "PatientID")
    check(answers == [] and "Final Find Response (Error: DataSetDoesNotMatchSOPClass)" in err, f"findscu's error for PATIENT level: {err[-1500:]}")
    answers, err = gw.findscu("study", "STUDY", "StudyDate=2026-11", "StudyInstanceUID")
    check(answers == [] and "Final Find Response (Failed: UnableToProcess)" in err, f"findscu's error for a bad date: {err[-1500:]}")
    bare = Gateway(c, "ws1", "gateway-no-index", index_url="")
    answers, err = bare.findscu("study", "STUDY", "PatientID=PAT1", "StudyInstanceUID")
    check(answers == [] and "Final Find Response (Failed: UnableToProcess)" in err, f"findscu without an index: {err}")
    check("blob-dicomd runs without --index: nothing to query" in bare.log(), "no log line of the refusal")
    bare.proc.stop()
    check("Query/Retrieve Level PATIENT is not in the Study Root model" in gw.log()
          and "StudyDate=2026-11: expected a range of a date YYYYMMDD" in gw.log(), "no log lines of the refusals")

    try:
        python = pynetdicom_python()
    except harness.TestSkipped as e:
        step(f"pynetdicom checks skipped: {e}")
        return gw
    step("C-FIND from pynetdicom: Study Root and Patient Root")
    out = gw.pynetdicom(python, "find", "study", "STUDY", "ModalitiesInStudy=MR\\OT", "StudyInstanceUID",
                        "PatientID")
    check_equal([r["status"] for r in out], [0xFF00, 0xFF00, 0x0000], "pynetdicom's statuses (2 pending, success)")
    check_equal([r["identifier"]["StudyInstanceUID"] for r in out[:2]], [mf["study"], b[0]["study"]],
                "pynetdicom: ModalitiesInStudy=MR\\OT")
    out = gw.pynetdicom(python, "find", "patient", "IMAGE", "NumberOfFrames=8", "SOPInstanceUID", "PatientID")
    check_equal([(r["identifier"]["SOPInstanceUID"], r["identifier"]["PatientID"]) for r in out[:-1]],
                [(mf["sop"], "PAT2")], "pynetdicom: the multi-frame image")
    out = gw.pynetdicom(python, "find", "study", "STUDY", "StudyDate=20261399", "StudyInstanceUID")
    check_equal([r["status"] for r in out], [0xC000], "pynetdicom: status of a malformed StudyDate")
    return gw


if __name__ == "__main__":
    harness.main(test)
