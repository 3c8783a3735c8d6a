#!/usr/bin/env python3
"""blob-dicomd --index indexes every DICOM Blob committed to any store,
whoever pushed it: it watches the stores' events, reads a committed Blob's
header with a range pull (a multi-frame image of 1 MiB: only its first
64 KiB) and records it; a removed Blob leaves the index, a replaced one is
indexed again, a copy in another store is recorded as one more copy of
the instance (without reading it), which stays indexed until its last copy
is removed. A non-DICOM Blob is stored and simply not indexed; a DICOM
object whose header is cut short is indexed as far as it parses, flagged.
Real omniNames, two blobstored and blob-dicomd on 127.0.0.1."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step, wait_for  # noqa: E402
from harness.dicom import Gateway, make_objects  # noqa: E402


def test(c, index_url=None):
    """`index_url`: the index blob-dicomd keeps (default: SQLite in the workspace); test_dicom_postgresql.py
    runs this test on PostgreSQL."""
    c.env["TCP_NODELAY"] = "1"
    c.start_daemon("ws1", "file")
    c.start_daemon("ws2", "file")
    gw = Gateway(c, "ws1", "gateway", index_url=index_url)
    check("watching=ws1,ws2" in gw.proc.ready_line, f"the stores watched: {gw.proc.ready_line}")
    index = gw.index_url

    def instances(*keys):
        return c.blob("find", "--index", index, "--level", "instance", *keys).ok()["matches"]

    def by_sop(sop):
        return instances(f"SOPInstanceUID={sop}")

    step("blob push of a multi-frame .dcm to ws2 (not through the gateway): found by blob find")
    mf = make_objects(c, "multiframe", c.path("mf.dcm"), "16")[0]
    with open(c.path("not-dicom.bin"), "wb") as f:
        f.write(os.urandom(200 * 1024))
    with open(c.path("short.txt"), "w") as f:
        f.write("not DICOM either\n")
    # One store's events are indexed in order: once the last push is found,
    # the two Blobs pushed before it have been looked at.
    for path in (c.path("not-dicom.bin"), c.path("short.txt"), mf["path"]):
        c.blob("push", path, store="ws2").ok()
    wait_for(lambda: by_sop(mf["sop"]), 30, "the multi-frame image in the index")
    entry = by_sop(mf["sop"])[0]
    size = os.path.getsize(mf["path"])
    check_equal((entry["blob"], entry["store"], entry["size"], entry["NumberOfFrames"], entry["PatientID"],
                 entry["problem"]), ("mf.dcm", "ws2", size, 16, "PAT2", ""), "the indexed entry")
    check_equal(entry["checksum"], c.blob("stat", "mf.dcm", store="ws2").ok()["checksum"], "the entry's checksum")
    check(f"index: instance {mf['sop']} indexed from Blob \"mf.dcm\" in store \"ws2\" (header: 65536 of {size} "
          "bytes read)" in gw.log(), "no log line of a header-only read")
    names = {e["blob"] for e in instances()}
    check("not-dicom.bin" not in names and "short.txt" not in names, f"non-DICOM Blobs indexed: {names}")

    step("what the gateway stored is indexed once; a study pushed by blob push to ws1 is indexed too")
    study = make_objects(c, "study", c.path("study"), "5", "PAT7", "20261121")
    gw.storescu(study[0]["path"])
    c.blob("push", *[e["path"] for e in study[1:]], store="ws1").ok()
    wait_for(lambda: len(instances(f"StudyInstanceUID={study[0]['study']}")) == 5, 30, "the five slices indexed")
    rows = instances(f"StudyInstanceUID={study[0]['study']}")
    check_equal(sorted((r["blob"], r["store"]) for r in rows),
                sorted([(study[0]["sop"] + ".dcm", "ws1")] + [(f"slice{n:04d}.dcm", "ws1") for n in range(2, 6)]),
                "the slices' Blobs")
    # ws1's events are handled in order: the gateway's own commit came before the pushes just found.
    check(f"index: instance {study[0]['sop']} indexed from" not in gw.log(),
          "the instance the gateway stored was read again by the indexer")

    step("a DICOM object cut inside its header: indexed as far as it parses, flagged")
    broken = make_objects(c, "brokenheader", c.path("broken.dcm"))[0]
    c.blob("push", broken["path"], store="ws2").ok()
    wait_for(lambda: by_sop(broken["sop"]), 30, "the broken object in the index")
    entry = by_sop(broken["sop"])[0]
    check(entry["problem"].startswith("the object does not parse"), f"the entry's problem: {entry['problem']!r}")
    check_equal((entry["PatientID"], entry["StudyInstanceUID"]), ("PAT5", ""), "what parsed, and what did not")
    check(f"index: instance {broken['sop']} indexed from Blob \"broken.dcm\" in store \"ws2\" as far as its header "
          "parses" in gw.log(), "no log line flagging the broken header")

    step("replaced by a non-DICOM Blob: the entry goes; removed: the entry goes")
    c.blob("push", "--replace", "--name", "broken.dcm", c.path("short.txt"), store="ws2").ok()
    wait_for(lambda: not by_sop(broken["sop"]), 30, "the replaced Blob's entry removed")
    c.blob("rm", "mf.dcm", store="ws2").ok()
    wait_for(lambda: not by_sop(mf["sop"]), 30, "the removed Blob's entry removed")
    check('index: Blob "mf.dcm" removed from store "ws2": 1 entry removed' in gw.log(), "no log line of the removal")
    c.blob("push", "--name", "again.dcm", mf["path"], store="ws1").ok()
    wait_for(lambda: by_sop(mf["sop"]), 30, "the image pushed again, under another name")
    check_equal((by_sop(mf["sop"])[0]["blob"], by_sop(mf["sop"])[0]["store"]), ("again.dcm", "ws1"),
                "where the index finds it now")

    step("copied to a second store: one more copy of the instance, not read again; it stays indexed until its last "
         "copy goes")
    reads = gw.log().count('indexed from Blob "again.dcm"')
    c.blob("copy", "again.dcm", "--from", "ws1", "--to", "ws2").ok()
    wait_for(lambda: by_sop(mf["sop"])[0]["stores"] == "ws1,ws2", 30, "the copy in ws2 indexed")
    check(f'index: instance {mf["sop"]}: Blob "again.dcm" in store "ws2" indexed as one more copy' in gw.log(),
          "no log line of the copy indexed")
    check_equal(gw.log().count('indexed from Blob "again.dcm"'), reads, "header reads of again.dcm")
    check_equal(len(by_sop(mf["sop"])), 1, "instance rows of the copied image")
    c.blob("rm", "again.dcm", store="ws1").ok()
    wait_for(lambda: by_sop(mf["sop"])[0]["stores"] == "ws2", 30, "the copy in ws1 gone from the index")
    check_equal((by_sop(mf["sop"])[0]["blob"], by_sop(mf["sop"])[0]["store"]), ("again.dcm", "ws2"),
                "where the index finds it once ws1's copy is gone")
    check('index: Blob "again.dcm" removed from store "ws1": its copy removed, the instance stays indexed in store '
          '"ws2"' in gw.log(), "no log line of the copy removed")
    c.blob("rm", "again.dcm", store="ws2").ok()
    wait_for(lambda: not by_sop(mf["sop"]), 30, "the instance gone with its last copy")


if __name__ == "__main__":
    harness.main(test)
