#!/usr/bin/env python3
"""blob-dicomd --index keeps the index whole where the stores' events do not
reach it (they are best effort): at start and every --rescan it subscribes
to each registered store again and compares the store's Blobs with the
index. What was committed before the gateway started or while it was down
is indexed, entries of Blobs removed meanwhile go, a store registered after
the gateway started is watched, a restarted store (which forgot its
subscribers) is subscribed to again, and a Blob found not DICOM is not read
again at each rescan. Real omniNames, two blobstored and blob-dicomd on
127.0.0.1."""

import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step, wait_for  # noqa: E402
from harness.dicom import Gateway, make_objects  # noqa: E402


def test(c):
    c.env["TCP_NODELAY"] = "1"
    ws1 = c.start_daemon("ws1", "file")
    index = f"sqlite:{c.path('index.sqlite')}"

    def instances(*keys):
        return c.blob("find", "--index", index, "--level", "instance", *keys).ok()["matches"]

    def where(sop):
        return sorted((e["blob"], e["store"]) for e in instances(f"SOPInstanceUID={sop}"))

    step("--rescan out of range: refused, naming the option and the range")
    code, _, err = c.run([harness.program("gateway/blob-dicomd"), "--aetitle", "GW", "--port", "11112",
                          "--store", "ws1", "--rescan", "25h"])
    check_equal(code, 1, f"exit status of --rescan 25h ({err.strip()!r})")
    check("--rescan" in err and "86400" in err, f"the refusal names the option and its range: {err.strip()!r}")

    step("committed before the gateway started: indexed by its first rescan; a non-DICOM Blob is read once")
    study = make_objects(c, "study", c.path("study"), "4", "PAT9", "20261127")
    with open(c.path("not-dicom.bin"), "wb") as f:
        f.write(os.urandom(100 * 1024))
    c.blob("push", study[0]["path"], study[1]["path"], c.path("not-dicom.bin"), store="ws1").ok()
    gw = Gateway(c, "ws1", "gateway", index_url=index, extra=("--rescan", "0.5", "--log-level", "debug"))
    check("watching=ws1 " in gw.proc.ready_line + " ", f"the stores watched: {gw.proc.ready_line}")
    wait_for(lambda: where(study[0]["sop"]) and where(study[1]["sop"]), 30, "the two slices pushed before the start")
    check_equal(where(study[1]["sop"]), [("slice0002.dcm", "ws1")], "the second slice's entry")
    check('index: rescan of store "ws1": 3 Blobs listed, 3 to read, 0 entries whose Blob is not listed' in gw.log(),
              "no log line of the first rescan")
    rescans = gw.log().count('index: rescan of store "ws1"')
    wait_for(lambda: gw.log().count('index: rescan of store "ws1"') >= rescans + 2, 30, "two more rescans of ws1")
    not_dicom = 'index: Blob "not-dicom.bin" in store "ws1": no DICM at byte 128'
    check_equal(gw.log().count(not_dicom), 1, "reads of the non-DICOM Blob (it is remembered, not read again)")

    step("a store registered after the gateway started: watched at the next rescan, its Blobs indexed")
    ws2 = c.start_daemon("ws2", "file")
    c.blob("push", study[2]["path"], store="ws2").ok()
    wait_for(lambda: where(study[2]["sop"]), 30, "the slice pushed to the new store")
    check_equal(where(study[2]["sop"]), [("slice0003.dcm", "ws2")], "the third slice's entry")
    check('index: watching store "ws2"' in gw.log(), "no log line of the new store watched")

    step("a restarted store forgets its subscribers: subscribed to again, its next commit indexed")
    check_equal(ws2.stop(), 0, "exit status of ws2 after SIGTERM")
    ws2 = c.restart_daemon(ws2)
    events_before = gw.log().count("indexed from Blob")
    c.blob("push", "--name", "after-restart.dcm", study[3]["path"], store="ws2").ok()
    wait_for(lambda: where(study[3]["sop"]), 30, "the slice pushed to the restarted store")
    check_equal(where(study[3]["sop"]), [("after-restart.dcm", "ws2")], "the fourth slice's entry")
    check_equal(gw.log().count("indexed from Blob"), events_before + 1, "the slice read once")

    step("while the gateway is down: a Blob committed, one removed, one replaced by another instance; its index, "
         "stripped of its copies table, stands for an older gateway's")
    check_equal(gw.proc.stop(), 0, "exit status of the gateway after SIGTERM")
    with sqlite3.connect(c.path("index.sqlite")) as db:
        db.execute("DROP TABLE copies")
    check_equal(where(study[2]["sop"]), [("slice0003.dcm", "ws2")], "blob find on an index without its copies table")
    check_equal(instances(f"SOPInstanceUID={study[2]['sop']}")[0]["stores"], "ws2",
                "the stores of an instance of an index without its copies table")
    late = make_objects(c, "study", c.path("late"), "2", "PAT10", "20261128")
    c.blob("push", "--name", "late.dcm", late[0]["path"], store="ws1").ok()
    c.blob("rm", "slice0001.dcm", store="ws1").ok()
    c.blob("push", "--replace", "--name", "slice0002.dcm", late[1]["path"], store="ws1").ok()
    gw = Gateway(c, "ws1", "gateway2", index_url=index, extra=("--rescan", "0"))
    wait_for(lambda: where(late[0]["sop"]) and where(late[1]["sop"]) and not where(study[0]["sop"])
             and not where(study[1]["sop"]), 30, "the index brought up to date by the start's rescan")
    check_equal((where(late[0]["sop"]), where(late[1]["sop"])),
                ([("late.dcm", "ws1")], [("slice0002.dcm", "ws1")]), "the new and the replacing instance")
    check('index: Blob "slice0001.dcm" is gone from store "ws1" (found by a rescan): 1 entry removed' in gw.log(),
          "no log line of the entry removed")
    check_equal(where(study[2]["sop"]), [("slice0003.dcm", "ws2")], "the other store's entry, untouched")
    # The copies table made again from the instances: nothing of ws2 read again.
    check('index: rescan of store "ws2": 2 Blobs listed, the index agrees' in gw.log(),
          "ws2's Blobs were not found indexed after the older index was opened")
    rows = instances("PatientID=PAT9")
    check_equal(sorted(r["blob"] for r in rows), ["after-restart.dcm", "slice0003.dcm"], "PAT9's instances left")


if __name__ == "__main__":
    harness.main(test)
