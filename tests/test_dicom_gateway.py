#!/usr/bin/env python3
"""blob-dicomd, the DICOM gateway, against peers no one here wrote: DCMTK's
echoscu and storescu (a modality) and pynetdicom (a second implementation,
from PyPI in a venv of the build tree; its checks are skipped when PyPI is
unreachable). Real omniNames, blobstored and blob-dicomd on 127.0.0.1.

Objects are made by tests/tools/dicom_objects.py (pydicom): a multi-frame
image and a study of 200 CT slices go in through storescu and come back
through `blob pull` with the data set bit-exact (the gateway keeps the bytes
it received behind its own meta header); a resend of the same bytes is a
success without a second copy, another data set under the same UID is
refused (C011); a data set that ends inside its pixel data (pynetdicom sends
the file's bytes as they are; storescu will not send such a file) is refused
with C000, one whose pixel data is shorter than its image needs (storescu)
with A900, neither stored nor indexed; a full store answers A700, a dead
store 0110, each with a log line naming the instance; a third association
beyond --max-associations 2 is rejected. --port 0 takes a free port, which
the ready line names (printed once the gateway answers); a taken port or one
out of range is refused at start."""

import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import TestSkipped, check, check_equal, step  # noqa: E402
from harness.dicom import Gateway, check_pulled, make_objects, pynetdicom_python  # noqa: E402

SLICES = 200

def blob_names(c, store):
    return {b["name"] for b in c.blob("ls", store=store).ok()["blobs"]}


def check_refused(c, gw, entry, code, why):
    """`entry` was refused with status `code` for `why` (a log line naming it), is not stored nor indexed."""
    line = next((l for l in gw.log().splitlines() if f"instance {entry['sop']}" in l), "")
    check(f"refused (status {code})" in line and why in line,
          f"no log line naming instance {entry['sop']} refused with {code}: {why!r} (got {line!r})")
    check(entry["sop"] + ".dcm" not in blob_names(c, "ws1"), f"instance {entry['sop']} was stored")
    db = sqlite3.connect(gw.index)
    rows = db.execute("SELECT COUNT(*) FROM instances WHERE SOPInstanceUID = ?", (entry["sop"],)).fetchone()[0]
    db.close()
    check_equal(rows, 0, f"index entries of the refused instance {entry['sop']}")


def port_refusals(c, gw):
    base = [harness.program("gateway/blob-dicomd"), "--aetitle", "GW2", "--store", "ws1", "--naming", c.naming,
            "--spool", c.root]
    step("--port 0 took a free port, named in the ready line, and the gateway answered when it printed it")
    check(gw.port != 0, f"the port of --port 0: {gw.port}")
    step("--port taken by a listener (the first gateway's): exit 52 naming the port, before the store is asked")
    code, out, err = c.run(base + ["--port", str(gw.port)], timeout=60)
    check_equal(code, 52, f"exit code on a taken port ({err.strip()!r})")
    check(f"cannot listen for associations on port {gw.port}" in err and "Address already in use" in err,
          f"the refusal names the port and the reason: {err.strip()!r}")
    check("ready" not in out, f"a ready line on a taken port: {out!r}")
    gw.echo()
    step("--port 65536: exit 1 naming the value and what is allowed")
    code, _, err = c.run(base + ["--port", "65536"], timeout=60)
    check_equal(code, 1, f"exit code of --port 65536 ({err.strip()!r})")
    check("--port 65536: expected 1 to 65535, or 0 for a free port" in err, f"the refusal of --port 65536: {err!r}")


def resend_large(c, gw):
    """A resend of a large instance that `blob push` stored as its file is (another meta header than the
    gateway writes): compared with the stored Blob a range at a time, the gateway's peak memory far below
    the instance's size (both copies were read into memory before: ~2.7 x the size)."""
    frames = 768  # 256 x 256 x 16 bit: 96 MiB of pixel data
    step(f"a resend of a {frames * 128 // 1024} MiB instance stored by blob push: memory bounded")
    big = make_objects(c, "multiframe", c.path("big.dcm"), str(frames))[0]
    name = big["sop"] + ".dcm"
    before = c.blob("push", "--name", name, big["path"], store="ws1").ok()
    with open(f"/proc/{gw.proc.pid}/clear_refs", "w") as f:
        f.write("5")  # the peak resident size starts again from the current one
    baseline = harness.proc_status(gw.proc.pid, "VmHWM")
    gw.storescu(big["path"])
    grown_mib = (harness.proc_status(gw.proc.pid, "VmHWM") - baseline) / 1024
    after = c.blob("stat", name, store="ws1").ok()
    check_equal(after["checksum"], before["checksum"], "checksum of the Blob after the resend (kept, not replaced)")
    check(gw.log().count("already stored with the same data set, kept") >= 2,
          "no log line for the resend of the large instance")
    step(f"the gateway's peak resident size grew by {grown_mib:.1f} MiB for a {frames * 128 // 1024} MiB resend")
    check(grown_mib < 48, f"the gateway's peak resident size grew by {grown_mib:.1f} MiB during the resend of a "
                          f"{frames * 128 // 1024} MiB instance (bound 48 MiB)")


def test(c):
    # AddressSanitizer (configure --enable-sanitizers) keeps freed memory in
    # a quarantine of 256 MiB, which would read as growth in resend_large().
    if c.env.get("ASAN_OPTIONS"):
        c.env["ASAN_OPTIONS"] += ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    c.env["TCP_NODELAY"] = "1"  # DCMTK's storescu leaves Nagle on otherwise (~45 ms per instance)
    c.start_daemon("ws1", "file")
    gw = Gateway(c, "ws1", "gateway", extra=("--max-associations", "2", "--max-associations-per-peer", "2"))
    port_refusals(c, gw)

    step("a multi-frame image through storescu, pulled back bit-exact")
    mf = make_objects(c, "multiframe", c.path("mf.dcm"), "8")[0]
    gw.storescu(mf["path"])
    check_pulled(c, mf, "multi-frame")

    step(f"a study of {SLICES} CT slices through storescu")
    study = make_objects(c, "study", c.path("study"), str(SLICES), "PAT1", "20261115")
    started = time.monotonic()
    gw.storescu("+sd", c.path("study"))
    seconds = time.monotonic() - started
    step(f"{SLICES} slices stored in {seconds:.2f} s ({SLICES / seconds:.0f} instances/s)")
    names = blob_names(c, "ws1")
    missing = [e["sop"] for e in study if e["sop"] + ".dcm" not in names]
    check(not missing, f"{len(missing)} of {SLICES} slices are not stored, e.g. {missing[:3]}")
    for entry in study[::50]:
        check_pulled(c, entry, "study slice")
    check(f"instance {study[0]['sop']} from MODALITY@127.0.0.1: stored as {study[0]['sop']}.dcm" in gw.log(),
          "no INFO line naming the first slice's instance and Blob")

    step("pixel data shorter than Rows x Columns x Bits Allocated (storescu): refused A900, not stored")
    short = make_objects(c, "shortpixels", c.path("short.dcm"))[0]
    gw.storescu(short["path"], refused=True)
    check_refused(c, gw, short, "A900", "the pixel data (7FE0,0010) holds 4096 bytes, its image needs 8192")

    step("a resend of the same bytes: success, no second copy")
    before = c.blob("stat", study[0]["sop"] + ".dcm", store="ws1").ok()
    gw.storescu(study[0]["path"])
    after = c.blob("stat", study[0]["sop"] + ".dcm", store="ws1").ok()
    check_equal(after["committed"], before["committed"], "commit time of a resent instance (no second copy)")
    check("already stored with the same data set, kept" in gw.log(), "no log line for the resend")

    resend_large(c, gw)

    try:
        python = pynetdicom_python()
    except TestSkipped as e:
        step(f"pynetdicom checks skipped: {e}")
        return
    step("pynetdicom: a resend, another data set under the same UID")
    variant = make_objects(c, "variant", study[1]["path"], c.path("variant.dcm"))[0]
    results = gw.pynetdicom(python, "store", study[2]["path"], variant["path"])
    check_equal([r["status"] for r in results], [0x0000, 0xC011], "statuses of (resend, another data set)")
    check_pulled(c, study[1], "the instance kept after a conflicting resend")
    log = gw.log()
    for entry, why in ((variant, "holds another data set"),):
        check(f"instance {entry['sop']}" in log and why in log, f"no log line naming {entry['sop']} with {why!r}")

    step("pynetdicom: a data set that ends inside its pixel data is refused (C000), not stored")
    truncated = make_objects(c, "truncated", c.path("truncated.dcm"))[0]
    results = gw.pynetdicom(python, "store", truncated["path"], study[3]["path"])
    check_equal([r["status"] for r in results], [0xC000, 0x0000], "statuses of (truncated, a whole resend)")
    check_refused(c, gw, truncated, "C000",
                  "the data set ends inside its pixel data (7FE0,0010): 8192 bytes declared, 4096 received")

    step("--max-associations 2: a third association at once is rejected")
    held = gw.pynetdicom(python, "hold", "2")[0]
    # Over the bound the gateway answers A-ASSOCIATE-RJ, or, when too many
    # refusals are under way, closes the connection (pynetdicom: "failed");
    # either way the third is not accepted.
    check(held.get("held") == 2 and held.get("extra") in ("rejected", "failed"),
          f"two associations held, the third not accepted: {held}")

    step("a full store answers A700 (out of resources)")
    c.start_daemon("tiny", "memory:64K")
    small = Gateway(c, "tiny", "gateway-tiny")
    check_equal([r["status"] for r in small.pynetdicom(python, "store", mf["path"])], [0xA700],
                "status of a multi-frame image larger than the store")
    check(f"instance {mf['sop']}" in small.log() and "A700" in small.log(), "no log line for the full store")

    step("a dead store answers 0110 (processing failure)")
    ws1 = next(p for p in c.processes if p.name.startswith("blobstored ws1"))
    ws1.stop()
    fresh = make_objects(c, "study", c.path("late"), "1", "PAT9", "20261120")[0]
    check_equal([r["status"] for r in gw.pynetdicom(python, "store", fresh["path"])], [0x0110],
                "status with the store stopped")
    check(f"instance {fresh['sop']}" in gw.log() and "0110" in gw.log(), "no log line for the dead store")


if __name__ == "__main__":
    harness.main(test)
