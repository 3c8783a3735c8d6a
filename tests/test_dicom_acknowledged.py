#!/usr/bin/env python3
"""blob-dicomd answers a C-STORE once the store has the instance durably and
verified, and writes its index entry afterwards, on a queue of its own
(docs/DICOM.md, "Ingest"): acknowledgements do not wait for the index, and
what was acknowledged survives the gateway's kill -9 before its entries were
written. The index is held locked by the test (an exclusive SQLite
transaction) while storescu sends three instances; once storescu has the
three successes the gateway is killed (SIGKILL), the lock released, and the
gateway started again on the same index: its start's rescan indexes the three
Blobs, which the store holds with the bytes sent. Then, unlocked, an
association's release waits for its entries: the index has every instance
storescu stored once storescu has ended. Real omniNames, blobstored and blob-dicomd on
127.0.0.1."""

import os
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step, wait_for  # noqa: E402
from harness.dicom import AE, Gateway, data_set, make_objects  # noqa: E402


def test(c):
    c.env["TCP_NODELAY"] = "1"
    c.start_daemon("ws1", "file")
    index_path = c.path("index.sqlite")
    index = f"sqlite:{index_path}"
    gw = Gateway(c, "ws1", "gateway", index_url=index, extra=("--rescan", "0"))
    study = make_objects(c, "study", c.path("study"), "3", "PATACK", "20261128")

    step("the index locked: three C-STOREs acknowledged all the same, their entries queued")
    lock = sqlite3.connect(index_path, timeout=30, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    log_path = c.path("storescu.err")
    with open(log_path, "w") as log:
        sender = c.spawn("storescu", ["storescu", "-v", "-aet", "MODALITY", "-aec", AE, "127.0.0.1", str(gw.port),
                                      *[e["path"] for e in study]],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)

    def successes():
        with open(log_path, encoding="utf-8", errors="replace") as f:
            return f.read().count("Received Store Response (Success)")

    wait_for(lambda: successes() == 3, 8, "storescu's three successes while the index is locked", interval=0.05)
    step("kill -9 of the gateway with the entries not written; the lock released")
    gw.proc.kill()
    lock.execute("ROLLBACK")
    lock.close()
    sender.kill()
    found = c.blob("find", "--index", index, "--level", "instance", "PatientID=PATACK").ok()["matches"]
    check_equal(len(found), 0, "entries of PATACK written before the kill (the index was locked)")
    names = sorted(e["name"] for e in c.blob("ls", store="ws1").ok()["blobs"])
    check_equal(names, sorted(e["sop"] + ".dcm" for e in study), "the Blobs the store holds after the kill")
    for e in study:
        pulled = c.blob("pull", e["sop"] + ".dcm", "-", store="ws1", binary=True, json_out=False)
        pulled.ok()
        with open(e["path"], "rb") as f:
            check(data_set(pulled.stdout) == data_set(f.read()), f"the data set of Blob {e['sop']}.dcm differs")

    step("the gateway started again on the same index: its start's rescan indexes the acknowledged instances")
    gw = Gateway(c, "ws1", "gateway2", index_url=index, extra=("--rescan", "0"))
    wait_for(lambda: len(c.blob("find", "--index", index, "--level", "instance", "PatientID=PATACK").ok()["matches"])
             == 3, 30, "the three acknowledged instances indexed after the restart")

    step("a release waits for the association's entries: the index has all of them once storescu has ended")
    more = make_objects(c, "study", c.path("more"), "20", "PATREL", "20261128")
    gw.storescu(*[e["path"] for e in more])
    rows = c.blob("find", "--index", index, "--level", "instance", "PatientID=PATREL").ok()["matches"]
    check_equal(sorted(r["SOPInstanceUID"] for r in rows), sorted(e["sop"] for e in more),
                "the instances the index has right after storescu's release")


if __name__ == "__main__":
    harness.main(test)
