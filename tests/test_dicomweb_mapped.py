#!/usr/bin/env python3
"""WADO-RS keeps the store files it served in place mapped for the next
retrieve of the same versions (docs/DICOM.md, "DICOMweb"; the client
library's InPlaceMappings, blob-dicomd --kept-mappings), and still verifies
every instance's bytes against its Blob's checksum on every serve.

- A study of 6 instances in a file store, retrieved twice: both responses
  bit-identical to the stored Blobs; after the first, the gateway's address
  space (/proc/PID/maps) holds a mapping of each instance's store file; the
  second maps nothing new (the same 6 mappings, at the same addresses) and
  counts each instance as served from its kept mapping (the client
  library's one summary line per series: "(6 from kept mappings)").
- A Blob replaced between two retrieves (the same data set, another
  preamble: another version in a new file): served in its new version, read
  from the new file; the others still from their kept mappings.
- A stored byte flipped behind the store (same size, its mtime put back
  with os.utime) between two retrieves: that instance is refused on the
  second (the checksum mismatch in the gateway's log), the others served.
- A removed Blob: left out of the next retrieve, the others served; its
  file, unlinked, is let go (no "(deleted)" store file in /proc/PID/maps)
  by a retrieve once a second has passed (its disk space not held).
- Out-of-range --kept-mappings and --kept-mapping-bytes are refused with
  the value and the range.
- The bound: a second gateway with --kept-mappings 3 retrieves the study
  (10 instances by then: 6 more stored, the flipped one removed) twice: every part bit-identical, and its address
  space never holds more than 3 mappings of the store's files.
Real omniNames, blobstored and blob-dicomd on 127.0.0.1."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step, wait_for  # noqa: E402
from harness.dicom import Gateway, make_objects  # noqa: E402
from test_checksum_compat import blob_file  # noqa: E402
from test_dicomweb import in_place_counts, served, study_parts  # noqa: E402

SLICES = 6
MORE = 6
CAPACITY = 3


def store_mappings(pid, store_dir):
    """The gateway's mappings of files under the store's directory: {(range, inode)}."""
    root = os.path.realpath(store_dir) + "/"
    out = set()
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].strip().startswith(root):
                out.add((fields[0], fields[4]))
    return out


def deleted_mappings(pid, store_dir):
    """How many of those are of files unlinked since (their Blob replaced or removed)."""
    root = os.path.realpath(store_dir) + "/"
    with open(f"/proc/{pid}/maps") as f:
        return sum(1 for line in f if root in line and line.rstrip().endswith("(deleted)"))


def test(c):
    step("out-of-range --kept-mappings and --kept-mapping-bytes: refused, naming the value and the range")
    for extra, says in ((["--kept-mappings", "65537"], "--kept-mappings 65537: expected 0 to 65536"),
                        (["--kept-mapping-bytes", "10K"],
                         '--kept-mapping-bytes: "10K" is out of range (allowed: 1M to 1T)')):
        code, _, err = c.run([harness.program("gateway/blob-dicomd"), "--aetitle", "GW", "--port", "0",
                              "--naming", c.naming, "--store", "ws1", *extra], timeout=60)
        check_equal((code, err.strip()), (1, f"blob-dicomd: {says} (see blob-dicomd --help)"), " ".join(extra))

    ws1 = c.start_daemon("ws1", "file")
    gw = Gateway(c, "ws1", "gateway", extra=["--http-address", "127.0.0.1:0"])
    study = make_objects(c, "study", c.path("ct"), str(SLICES + MORE), "PAT1", "20261128", "CT", "128")
    uid = study[0]["study"]
    os.makedirs(c.path("later"))
    for e in study[SLICES:]:
        os.rename(e["path"], c.path("later", os.path.basename(e["path"])))
    gw.storescu("+sd", c.path("ct"))

    def stored_blobs():
        dest = c.path("stored")
        if os.path.isdir(dest):
            for f in os.listdir(dest):
                os.remove(os.path.join(dest, f))
        c.blob("--no-local", "pull", "--study", uid, "--index", gw.index_url, dest).ok()
        out = {}
        for e in study:
            p = os.path.join(dest, e["sop"] + ".dcm")
            if os.path.exists(p):
                with open(p, "rb") as f:
                    out[e["sop"]] = f.read()
        return out

    def retrieve(g):
        return study_parts(g.http, uid)

    def kept_lines():
        return in_place_counts(gw.log())["kept"]

    step(f"a study of {SLICES} instances retrieved twice: bit-identical, the second maps nothing new")
    stored = stored_blobs()
    check_equal(len(stored), SLICES, "Blobs stored")
    check_equal(served(retrieve(gw), stored), sorted(stored), "the first retrieve: every instance once, bit-identical")
    first = store_mappings(gw.proc.pid, ws1.store_dir)
    check_equal(len(first), SLICES, "the gateway's mappings of store files after the first retrieve (/proc/PID/maps)")
    check_equal(kept_lines(), 0, "instances served from a kept mapping by the first retrieve")
    kept = kept_lines()
    check_equal(served(retrieve(gw), stored), sorted(stored), "the second retrieve: every instance once, bit-identical")
    check_equal(store_mappings(gw.proc.pid, ws1.store_dir), first,
                "the gateway's mappings of store files after the second retrieve (the same, at the same addresses)")
    check_equal(kept_lines() - kept, SLICES, "instances served from a kept mapping (the summary lines)")

    step("a Blob replaced between two retrieves (another preamble): served in its new version")
    replaced = study[1]["sop"]
    variant = bytearray(stored[replaced])
    variant[0:16] = b"another version."  # the preamble: free bytes, the data set unchanged
    with open(c.path("variant.dcm"), "wb") as f:
        f.write(variant)
    indexed = f"index: instance {replaced} indexed from Blob"
    before = gw.log().count(indexed)
    c.blob("push", "--replace", "--name", replaced + ".dcm", c.path("variant.dcm"), store="ws1").ok()
    stored[replaced] = bytes(variant)
    # The gateway indexes the new version from the store's event (until
    # then a query may miss the instance, with or without kept mappings).
    wait_for(lambda: gw.log().count(indexed) > before, 20, "the new version indexed (the gateway's log)")
    kept = kept_lines()
    check_equal(served(retrieve(gw), stored), sorted(stored), "every instance once, the replaced one in its new version")
    check_equal(kept_lines() - kept, SLICES - 1, "instances served from a kept mapping (all but the replaced one)")
    check_equal(served(retrieve(gw), stored), sorted(stored), "again: the new version, now kept")

    step("a stored byte flipped behind the store (same size and mtime): refused on the next retrieve")
    rotten = study[2]["sop"]
    path = blob_file(ws1.store_dir, rotten + ".dcm")
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    check_equal(os.stat(path).st_mtime_ns, st.st_mtime_ns, "the flipped file's mtime, put back")
    check_equal(served(retrieve(gw), stored), sorted(s for s in stored if s != rotten), "the instances served")
    check(any(f"instance {rotten}:" in line and "have checksum" in line and "not the Blob's" in line
              for line in gw.log().splitlines()), "the flipped instance's checksum mismatch logged")

    step("a removed Blob: left out of the next retrieve")
    removed = study[3]["sop"]
    c.blob("rm", removed + ".dcm", store="ws1").ok()
    check_equal(served(retrieve(gw), stored), sorted(s for s in stored if s not in (rotten, removed)),
                "the instances served")
    wait_for(lambda: served(retrieve(gw), stored) and deleted_mappings(gw.proc.pid, ws1.store_dir) == 0, 10,
             "no unlinked store file left mapped once a retrieve a second later has looked (their disk space freed)")

    step(f"the bound: --kept-mappings {CAPACITY}, a study of {SLICES + MORE - 2} instances retrieved twice")
    c.blob("rm", rotten + ".dcm", store="ws1").ok()
    gw.storescu("+sd", c.path("later"))
    stored = stored_blobs()
    check_equal(len(stored), SLICES + MORE - 2, "Blobs stored (the flipped one removed too)")
    small = Gateway(c, "ws1", "gateway-small", index_url=gw.index_url,
                    extra=["--http-address", "127.0.0.1:0", "--kept-mappings", str(CAPACITY)])
    for n in (1, 2):
        check_equal(served(retrieve(small), stored), sorted(stored), f"retrieve {n}: every instance once, bit-identical")
        check_equal(len(store_mappings(small.proc.pid, ws1.store_dir)), CAPACITY,
                    f"the gateway's mappings of store files after retrieve {n}")


if __name__ == "__main__":
    harness.main(test)
