#!/usr/bin/env python3
"""Retrieval of what blob-dicomd stored and indexed: `blob pull --study UID
DIR` and `--series UID DIR` (every instance the index lists, in parallel
over the Session's pooled connections, verified, DIR/SOPInstanceUID.dcm)
and the gateway's C-GET SCP driven by DCMTK's getscu (Study Root and Patient
Root; the C-STORE sub-operations on the same association). Every instance
comes back with the data set storescu sent, bit for bit. Each instance
comes from its nearest copy (a study copied to a memory-tier store is read
there), from another copy when that store is down; an instance whose only
store is down fails alone (named), the rest arrive; bad arguments get clear
errors. Real omniNames, blobstored and blob-dicomd on 127.0.0.1."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402
from harness.dicom import Gateway, data_set, make_objects  # noqa: E402


def check_files(entries, directory, name_of, what):
    """Each entry's file in `directory` holds the data set that was sent."""
    present = sorted(os.listdir(directory))
    for entry in entries:
        name = name_of(entry, present)
        check(name in present, f"{what}: no file for instance {entry['sop']} in {directory} ({len(present)} files)")
        with open(os.path.join(directory, name), "rb") as f:
            got = f.read()
        with open(entry["path"], "rb") as f:
            sent = f.read()
        check(data_set(got) == data_set(sent), f"{what}: the data set of {name} differs from the one sent")


def by_uid(entry, present):
    return entry["sop"] + ".dcm"


def getscu_name(entry, present):
    """getscu names a file <modality prefix>.<SOP Instance UID>."""
    return next((p for p in present if p.endswith("." + entry["sop"]) or p == entry["sop"]), entry["sop"])


def test(c):
    c.env["TCP_NODELAY"] = "1"
    c.start_daemon("ws1", "file")
    c.start_daemon("ws2", "file")
    mem = c.start_daemon("mem", "memory:64M", tier="memory")  # before the gateway, which watches it
    gw = Gateway(c, "ws1", "gateway")
    index = f"sqlite:{gw.index}"

    step("a study of 30 CT slices, one of 4 MR slices and a multi-frame image through storescu")
    ct = make_objects(c, "study", c.path("ct"), "30", "PAT1", "20261115")
    mr = make_objects(c, "study", c.path("mr"), "4", "PAT1", "20261116", "MR")
    mf = make_objects(c, "multiframe", c.path("mf.dcm"), "8")[0]
    gw.storescu("+sd", c.path("ct"), c.path("mr"), mf["path"])

    step("blob pull --study: every instance, verified, named SOPInstanceUID.dcm")
    out = c.path("pulled-ct")
    r = c.blob("pull", "--index", index, "--study", ct[0]["study"], out).ok()
    check_equal((r["study"], r["succeeded"], r["failed"], len(r["instances"])), (ct[0]["study"], 30, 0, 30),
                "pull --study's JSON")
    check_equal(sorted(os.listdir(out)), sorted(e["sop"] + ".dcm" for e in ct), "the files of the study")
    check_files(ct, out, by_uid, "pull --study")
    first = next(i for i in r["instances"] if i["SOPInstanceUID"] == ct[0]["sop"])
    stat = c.blob("stat", ct[0]["sop"] + ".dcm", store="ws1").ok()
    check_equal((first["store"], first["bytes"], first["checksum"], first["path"]),
                ("ws1", stat["size"], stat["checksum"], os.path.join(out, ct[0]["sop"] + ".dcm")),
                "an instance's entry")
    check_equal(os.path.getsize(first["path"]), stat["size"], "the file holds the whole Blob")

    step("blob pull --series (text output) and a multi-frame study")
    r = c.blob("pull", "--index", index, "--series", mr[0]["series"], c.path("pulled-mr"), json_out=False)
    r.ok()
    check(f"pulled 4 of 4 instances of series {mr[0]['series']} to {c.path('pulled-mr')}" in r.stderr,
          f"pull --series's summary line: {r.stderr!r}")
    check_files(mr, c.path("pulled-mr"), by_uid, "pull --series")
    c.blob("pull", "--index", index, "--study", mf["study"], c.path("pulled-mf")).ok()
    check_files([mf], c.path("pulled-mf"), by_uid, "pull --study of the multi-frame image")

    step("C-GET from getscu: Study Root, study level, bit-exact")
    code, err = gw.getscu("study", "STUDY", c.path("get-ct"), f"StudyInstanceUID={ct[0]['study']}")
    check_equal(code, 0, f"getscu's exit code ({err[-2000:]!r})")
    check_equal(len(os.listdir(c.path("get-ct"))), 30, "files getscu received")
    check_files(ct, c.path("get-ct"), getscu_name, "C-GET of the study")
    check("C-GET from VIEWER@127.0.0.1: study level, 30 instances sent, 0 failed" in gw.log(),
          "no log line of the C-GET")

    step("C-GET from getscu: Patient Root, patient and series levels")
    code, err = gw.getscu("patient", "PATIENT", c.path("get-pat2"), "PatientID=PAT2")
    check_equal(code, 0, f"getscu's exit code ({err[-2000:]!r})")
    check_files([mf], c.path("get-pat2"), getscu_name, "C-GET of patient PAT2 (multi-frame)")
    code, err = gw.getscu("patient", "SERIES", c.path("get-mr"), "PatientID=PAT1",
                          f"StudyInstanceUID={mr[0]['study']}", f"SeriesInstanceUID={mr[0]['series']}")
    check_equal(code, 0, f"getscu's exit code ({err[-2000:]!r})")
    check_files(mr, c.path("get-mr"), getscu_name, "C-GET of the MR series")

    step("a study precached to a memory-tier store: pull --study and C-GET read every instance there")
    names = [e["sop"] + ".dcm" for e in ct]
    c.blob("copy", *names, "--to", "mem", "--from", "ws1", json_out=False).ok()

    def stores_of(entries):
        return {m["SOPInstanceUID"]: m["stores"] for m in c.blob(
            "find", "--index", index, "--level", "instance", f"StudyInstanceUID={entries[0]['study']}").ok()["matches"]}
    harness.wait_for(lambda: set(stores_of(ct).values()) == {"mem,ws1"}, 30, "the copies at mem indexed")
    r = c.blob("pull", "--index", index, "--study", ct[0]["study"], c.path("pulled-ct-mem")).ok()
    check_equal({i["store"] for i in r["instances"]}, {"mem"}, "the stores that served pull --study")
    check_files(ct, c.path("pulled-ct-mem"), by_uid, "pull --study from the precached copies")
    served = lambda: sum(1 for line in open(mem.log_paths[0], errors="replace")  # noqa: E731
                         if "transfer direction=pull" in line and "outcome=ok" in line)
    before = served()
    code, err = gw.getscu("study", "STUDY", c.path("get-ct-mem"), f"StudyInstanceUID={ct[0]['study']}")
    check_equal(code, 0, f"getscu's exit code ({err[-2000:]!r})")
    check_files(ct, c.path("get-ct-mem"), getscu_name, "C-GET of the precached study")
    check_equal(served() - before, 30, "pulls mem served for the C-GET")
    r = c.blob("pull", "--index", index, "--study", ct[0]["study"], "--store", "ws1", c.path("pulled-ct-ws1")).ok()
    check_equal({i["store"] for i in r["instances"]}, {"ws1"}, "the store that served pull --study --store ws1")

    step("a store down: an instance with another copy comes from it; one whose only copy is there fails alone "
         "(pull --study exits 26 naming it and the store tried, C-GET warns)")
    c.blob("push", "--name", "copy.dcm", mr[1]["path"], store="ws2").ok()  # a second copy of mr[1]
    c.blob("push", "--name", "only.dcm", mr[2]["path"], store="ws2").ok()
    c.blob("rm", mr[2]["sop"] + ".dcm", store="ws1").ok()  # mr[2]: its one copy in ws2
    harness.wait_for(lambda: (lambda s: s[mr[1]["sop"]] == "ws1,ws2" and s[mr[2]["sop"]] == "ws2")(stores_of(mr)),
                     30, "the index's copies of the MR series")
    next(p for p in c.processes if p.name.startswith("blobstored ws2")).stop()
    r = c.blob("pull", "--index", index, "--study", mr[0]["study"], c.path("pulled-mr2"), json_out=False)
    r.error(26, f"instance {mr[2]['sop']} (Blob \"only.dcm\"; stores tried: ws2): pull \"only.dcm\": no store "
                f"named \"ws2\"")
    check_files([mr[0], mr[1], mr[3]], c.path("pulled-mr2"), by_uid, "the instances still stored")
    code, err = gw.getscu("study", "STUDY", c.path("get-mr2"), f"StudyInstanceUID={mr[0]['study']}")
    check_files([mr[0], mr[1], mr[3]], c.path("get-mr2"), getscu_name, "C-GET with one instance missing")
    check(f"C-GET from VIEWER@127.0.0.1: instance {mr[2]['sop']}: pulling Blob only.dcm (stores tried: \"ws2\")"
          in gw.log() and "3 instances sent, 1 failed" in gw.log(), "no log lines of the failed sub-operation")

    step("bad arguments")
    d = c.path("bad")
    c.blob("pull", "--study", ct[0]["study"], d).error(1, "no study index given")
    c.blob("pull", "--index", index, "--study", "1.2.3.4", d).error(20, "lists no instance of it")
    c.blob("pull", "--index", index, "--study", "1.2.*", d).error(10, "not a UID")
    c.blob("pull", "--index", index, "--study", "1.2", "--series", "1.3", d).error(1, "exclude each other")
    c.blob("pull", "--index", index, "--study", "1.2", d, "x").error(1, "expected one argument, the directory")
    c.blob("pull", "--index", index, "--study", "1.2", "--offset", "5", d).error(1, "no --offset, --length or --resume")
    c.blob("find", "--index", index, "--study", "1.2").error(1, "--study applies to pull only, not find")
    with open(c.path("a-file"), "w") as f:
        f.write("x")
    c.blob("pull", "--index", index, "--study", ct[0]["study"], c.path("a-file")).error(40, "is not a directory")


if __name__ == "__main__":
    harness.main(test)
