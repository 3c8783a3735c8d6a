#!/usr/bin/env python3
"""The study index on PostgreSQL (`--index postgresql://...`): the same
schema and behaviour as on SQLite. A throwaway Debian PostgreSQL server is
started by the test (initdb in the workspace, 127.0.0.1, stopped by PID);
then every query of tests/test_dicom_find.py runs against it (blob find at
every level with every matching rule and every malformed query, findscu and
pynetdicom's C-FIND), and the gateway's event indexing writes and removes
entries of a Blob pushed and removed with blob; the studies it left
pending (study-stable) are published by another gateway on the same index,
once, and not by a third. A URL that cannot be
connected to is refused with exit 52 (blob find) or at the gateway's start.
A Blob committed while no gateway ran is indexed by the next one's rescan,
and `blob pull --study` finds its copy in the index."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_dicom_find  # noqa: E402
from harness import check, check_equal, free_port, program, step, wait_for  # noqa: E402
from harness.dicom import Gateway, make_objects, start_postgresql  # noqa: E402


def test(c):
    url = start_postgresql(c, ["dicom"])["dicom"]
    gw = test_dicom_find.test(c, index_url=url)

    step("PostgreSQL: a DICOM Blob pushed with blob is indexed from its events, and leaves on rm")
    extra = make_objects(c, "study", c.path("extra"), "1", "PAT8", "20261124")[0]
    c.blob("push", "--name", "extra.dcm", extra["path"], store="ws1").ok()

    def rows():
        return c.blob("find", "--index", url, "--level", "instance", f"SOPInstanceUID={extra['sop']}").ok()["matches"]

    wait_for(rows, 30, "the pushed instance in the PostgreSQL index")
    check_equal((rows()[0]["blob"], rows()[0]["PatientID"], rows()[0]["InstanceNumber"]), ("extra.dcm", "PAT8", 1),
                "the entry")
    c.blob("rm", "extra.dcm", store="ws1").ok()
    wait_for(lambda: not rows(), 30, "the removed instance gone from the PostgreSQL index")

    step("PostgreSQL: the studies the gateway left pending (--stable-after 60 s) published by another gateway on "
         "the same index, once; the removed one not")
    gw2 = Gateway(c, "ws1", "gateway-stable", extra=("--stable-after", "0.5"), index_url=url)
    wait_for(lambda: "studies pending from before the start" in gw2.log(), 30, "the pending studies taken")
    pending = int(re.search(r"study-stable: (\d+) studies pending from before the start", gw2.log()).group(1))
    check(pending >= 4, f"{pending} studies pending, expected those of test_dicom_find and the removed one")
    wait_for(lambda: gw2.log().count(" published (") + gw2.log().count("has no instance left") == pending, 30,
             f"{pending} studies published or found empty")
    check(f"study-stable: study {extra['study']} has no instance left in the index: not published" in gw2.log(),
          "the removed instance's study was published")
    check_equal(gw2.proc.stop(), 0, "exit status of the second gateway after SIGTERM")
    gw3 = Gateway(c, "ws1", "gateway-stable-again", extra=("--stable-after", "0.5"), index_url=url)
    check("pending from before the start" not in gw3.log() and "published" not in gw3.log(),
          f"a third gateway found studies pending: {gw3.log()[-2000:]!r}")
    check_equal(gw3.proc.stop(), 0, "exit status of the third gateway after SIGTERM")

    step("PostgreSQL unreachable: a clear error")
    dead = f"postgresql://blob@127.0.0.1:{free_port()}/dicom"
    c.blob("find", "--index", dead, "PatientID=PAT1").error(52, "cannot connect")
    code, _, err = c.run([program("gateway/blob-dicomd"), "--aetitle", "X", "--port", "0",
                          "--store", "ws1", "--naming", c.naming, "--index", dead], timeout=60)
    check(code == 52 and "cannot connect" in err and "postgresql://blob@127.0.0.1" in err,
          f"blob-dicomd with an unreachable index: exit {code}, {err!r}")
    check(gw.proc.running(), "the gateway stopped")

    step("PostgreSQL: a Blob committed while no gateway runs is indexed by the next one's rescan at start")
    check_equal(gw.proc.stop(), 0, "exit status of the first gateway after SIGTERM")
    unseen = make_objects(c, "study", c.path("unseen"), "1", "PAT11", "20261127")[0]
    c.blob("push", "--name", "unseen.dcm", unseen["path"], store="ws1").ok()
    gw4 = Gateway(c, "ws1", "gateway-rescan", extra=("--rescan", "0"), index_url=url)
    wait_for(lambda: c.blob("find", "--index", url, f"SOPInstanceUID={unseen['sop']}").ok()["matches"], 30,
             "the instance committed while no gateway ran, in the PostgreSQL index")
    check('index: rescan of store "ws1"' in gw4.log(), "no log line of the rescan at start")

    step("PostgreSQL: blob pull --study reads the copies of the study's instances from the index")
    r = c.blob("pull", "--index", url, "--study", unseen["study"], c.path("pulled-unseen")).ok()
    check_equal([(i["store"], i["name"]) for i in r["instances"]], [("ws1", "unseen.dcm")], "the instance pulled")
    with open(unseen["path"], "rb") as f, open(r["instances"][0]["path"], "rb") as g:
        check(f.read() == g.read(), "the pulled file differs from the one pushed")
    check_equal(gw4.proc.stop(), 0, "exit status of the fourth gateway after SIGTERM")


if __name__ == "__main__":
    harness.main(test)
