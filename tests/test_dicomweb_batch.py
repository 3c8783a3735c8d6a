#!/usr/bin/env python3
"""WADO-RS asks a store of the gateway's host for the files of many instances
in one control call (docs/DICOM.md, "DICOMweb"; BlobStore::findLocalFiles),
not one call per instance, and serves each of them in place, verified.

- One call per batch, not per instance: a study of 12 instances in a file
  store (blobstored --debug logs each findLocalFiles and findLocalFile call)
  is served whole, every part bit-identical to its Blob, each instance
  counted as pulled in place by the gateway's log (the client library's
  one summary line per series); the store logs two
  findLocalFiles calls (the gateway's batches: the first 4, then the other
  8) and no findLocalFile call.
- Local and not local in one study: 4 more instances of the same study
  stored through a second gateway (the same index) into a memory store,
  which offers no files: the request serves all 16, the 12 in place (from
  the mappings the first request kept), the 4 over the memory store's data
  port (the summaries: pulled on their own), each bit-identical.
- A removed Blob: one instance's Blob removed from the file store: the 15
  others are served, that one is not.
- A corrupted file: one instance's stored file has its last byte changed
  behind the store (same size, same header): that instance is not served
  (its checksum is not the one recorded at commit, in the gateway's log),
  every other one is.
Real omniNames, blobstored and blob-dicomd on 127.0.0.1."""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402
from harness.dicom import Gateway, make_objects  # noqa: E402
from test_checksum_compat import blob_file  # noqa: E402
from test_dicomweb import in_place_counts, served, study_parts  # noqa: E402

LOCAL = 12
REMOTE = 4


def test(c):
    ws1 = c.start_daemon("ws1", "file", extra=["--debug"])
    c.start_daemon("mem", "memory:64M")
    gw = Gateway(c, "ws1", "gateway", extra=["--http-address", "127.0.0.1:0"])
    study = make_objects(c, "study", c.path("ct"), str(LOCAL + REMOTE), "PAT1", "20261128", "CT", "128")
    uid = study[0]["study"]
    os.makedirs(c.path("remote"))
    for e in study[LOCAL:]:
        shutil.move(e["path"], c.path("remote", os.path.basename(e["path"])))
    gw.storescu("+sd", c.path("ct"))

    def store_log():
        with open(ws1.log_paths[0], errors="replace") as f:
            return f.read()

    def stored_blobs():
        c.blob("--no-local", "pull", "--study", uid, "--index", gw.index_url, c.path("stored")).ok()
        out = {}
        for e in study:
            p = c.path("stored", e["sop"] + ".dcm")
            if os.path.exists(p):
                with open(p, "rb") as f:
                    out[e["sop"]] = f.read()
        return out

    def retrieve():
        return study_parts(gw.http, uid)

    step(f"a study of {LOCAL} instances in a file store: two findLocalFiles calls (4 + 8), no findLocalFile")
    stored = stored_blobs()
    check_equal(len(stored), LOCAL, "Blobs stored")
    calls, singles, in_place = (store_log().count("findLocalFiles: "), store_log().count("findLocalFile: "),
                                in_place_counts(gw.log())["in_place"])
    got = retrieve()
    check_equal(served(got, stored), sorted(stored), "every instance once, bit-identical")
    check_equal(in_place_counts(gw.log())["in_place"] - in_place, LOCAL,
                "instances pulled in place (the gateway's summary lines)")
    check_equal(store_log().count("findLocalFiles: ") - calls, 2, "findLocalFiles calls (the store's log)")
    check_equal(store_log().count("findLocalFile: ") - singles, 0, "findLocalFile calls (the store's log)")
    check("findLocalFiles: 4 names, 4 files offered" in store_log(), "the first batch's call: 4 names, 4 files")
    check(f"findLocalFiles: {LOCAL - 4} names, {LOCAL - 4} files offered" in store_log(),
          f"the second batch's call: {LOCAL - 4} names, {LOCAL - 4} files")

    step(f"{REMOTE} more instances in a memory store (no files): all {LOCAL + REMOTE} served, {LOCAL} in place")
    gw2 = Gateway(c, "mem", "gateway-mem", index_url=gw.index_url)
    gw2.storescu("+sd", c.path("remote"))
    shutil.rmtree(c.path("stored"))
    stored = stored_blobs()
    check_equal(len(stored), LOCAL + REMOTE, "Blobs stored")
    before = in_place_counts(gw.log())
    got = retrieve()
    check_equal(served(got, stored), sorted(stored), "every instance once, bit-identical")
    after = in_place_counts(gw.log())
    check_equal({k: after[k] - before[k] for k in after}, {"slices": LOCAL + REMOTE, "in_place": LOCAL, "kept": LOCAL,
                "own": REMOTE, "failed": 0}, "the series' summaries (the gateway's log): the memory store's instances "
                "pulled on their own")

    step("a Blob removed behind the index: every other instance served, that one not")
    removed = study[3]["sop"]
    c.blob("rm", removed + ".dcm", store="ws1").ok()
    got = retrieve()
    check_equal(served(got, stored), sorted(s for s in stored if s != removed), "the instances served")

    step("a stored file changed behind the store (same size): that instance is refused, the others served")
    rotten = study[5]["sop"]
    path = blob_file(ws1.store_dir, rotten + ".dcm")
    with open(path, "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0xFF]))
    got = retrieve()
    check_equal(served(got, stored), sorted(s for s in stored if s not in (removed, rotten)), "the instances served")
    check(any(f"instance {rotten}:" in line and "have checksum" in line and "not the Blob's" in line
              for line in gw.log().splitlines()), "the corrupted instance's checksum mismatch logged")


if __name__ == "__main__":
    harness.main(test)
