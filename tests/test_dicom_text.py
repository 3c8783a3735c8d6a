#!/usr/bin/env python3
"""Text that leaves blob-dicomd and `blob` neither lies nor leaks:
- control characters in a pushed instance's attributes (a newline, a tab,
  CR, ESC sequences) are shown escaped (`\\n`, `\\x1b`) in `blob find`'s
  text output (one line per match: no forged row, no escape sequence to the
  terminal), in `blob watch`'s text lines and in the gateway's log; --json
  keeps them as they are (JSON escapes them);
- a NUL inside a C-FIND key (`PAT1<NUL>ZZZ`) is refused with C000 and an
  Error Comment naming the attribute (it would match PAT1);
- ModalitiesInStudy and UID lists of 1500 values are answered (a list is one
  SQL parameter, not one expression per value); more than 4096 values are
  refused naming the limit, by blob find and by C-FIND;
- an index failure reaches a C-FIND peer as a generic Error Comment with a
  reference to the gateway's log line, never the index's path nor the
  database's text;
- a PostgreSQL password (`user:PASSWORD@`, `?password=`, `password=` of a
  keyword string) is never printed: ready line, blob find's and
  blob-dicomd's errors show `***`.
Real omniNames, blobstored, blob-dicomd, storescu/findscu, pynetdicom and a
throwaway PostgreSQL on 127.0.0.1 (the password part is skipped when
PostgreSQL is missing)."""

import os
import re
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import TestSkipped, check, check_equal, free_port, program, step, wait_for  # noqa: E402
from harness.dicom import AE, Gateway, make_objects, pynetdicom_python, start_postgresql  # noqa: E402

SECRET = "s3cr3t-Pa55"


def control_characters(c, gw):
    (o,) = make_objects(c, "text", c.path("text"))
    text_out, text_err = c.path("watch-text.out"), c.path("watch-text.err")
    with open(text_out, "wb") as out, open(text_err, "w") as err:
        watch = c.spawn("watch-text", [program("clients/blob"), "--naming", c.naming, "watch", "--events",
                                       "study-stable", "--gateway", AE],
                        stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    watch.log_paths.append(text_err)
    wait_for(lambda: "blob watch: watching gateway" in open(text_err).read() or not watch.running(), 30,
             "the text watcher's subscription")
    gw.storescu(o["path"])
    index = gw.index_url

    step("blob find --json: the values as they are")
    wait_for(lambda: c.blob("find", "--index", index, f"StudyInstanceUID={o['study']}").ok()["matches"], 30,
             "the instance indexed")
    (row,) = c.blob("find", "--index", index, f"StudyInstanceUID={o['study']}").ok()["matches"]
    check_equal((row["PatientID"], row["PatientName"], row["StudyDescription"], row["AccessionNumber"]),
                (o["PatientID"], o["PatientName"], o["StudyDescription"], o["AccessionNumber"]), "the JSON values")

    step("blob find text output: one line per match, control characters escaped")
    for level in ("patient", "study", "series", "instance"):
        r = c.blob("find", "--index", index, "--level", level, f"StudyInstanceUID={o['study']}", json_out=False)
        check_equal(r.code, 0, f"blob find --level {level} exit code ({r.stderr!r})")
        lines = r.stdout.split("\n")
        check_equal(len(lines), 3, f"--level {level}: a header, one row, the final newline: {r.stdout!r}")
        check(not re.search("[\x00-\x08\x0b-\x1f\x7f]", r.stdout), f"a control character in {r.stdout!r}")
        check(lines[1].startswith("CTRL\\x1b[31m1\t") and "\tEvil^\\x1b]0;owned\\x07\t" in lines[1],
              f"--level {level}: the escaped PatientID and PatientName in {lines[1]!r}")
        if level != "patient":
            check("\tChest\\nFORGED\\tROW\\x1b[2J\t" in lines[1] and "\tACC\\r1\t" in lines[1],
                  f"--level {level}: the escaped StudyDescription and AccessionNumber in {lines[1]!r}")

    step("blob watch text and the gateway's log: escaped")
    wait_for(lambda: b"study-stable" in open(text_out, "rb").read(), 30, "the text watcher's line")
    line = open(text_out, "rb").read().decode()
    check('patient "CTRL\\x1b[31m1" accession "ACC\\r1"' in line and line.count("\n") == 1
          and "\x1b" not in line, f"the text watcher's line: {line!r}")
    watch.stop()
    wait_for(lambda: f"study {o['study']} published" in gw.log(), 30, "the gateway's study-stable line")
    check('patient "CTRL\\x1b[31m1", accession "ACC\\r1"' in gw.log(), "the study-stable log line escaped")
    check("\x1b" not in gw.log() and "\r" not in gw.log(), "a control character in the gateway's log")



def nul_keys(c, gw, python):
    step("C-FIND: a key holding a NUL is refused (C000) naming the attribute")
    responses = gw.pynetdicom(python, "find", "study", "STUDY", "PatientID=PAT1%00ZZZ", "StudyInstanceUID")
    check_equal([(r["status"], r.get("comment")) for r in responses],
                [(0xC000, "PatientID (0010,0020): NUL byte in the value")], "the C-FIND answer to PAT1<NUL>ZZZ")
    check("C-FIND from PYNETDICOM@127.0.0.1: refused (status C000): PatientID (0010,0020): NUL byte in the value"
          in gw.log(), "the refusal's log line")
    responses = gw.pynetdicom(python, "find", "study", "STUDY", "PatientID=PAT1", "StudyInstanceUID")
    check_equal(len([r for r in responses if r["status"] == 0xFF00]), 1, "PatientID=PAT1 (no NUL) matches")




def long_lists(c, index, gw=None, python=None):
    many = [f"X{n}" for n in range(1500)] + ["CT"]
    step("ModalitiesInStudy and StudyInstanceUID lists of 1501 values: answered")
    r = c.blob("find", "--index", index, "ModalitiesInStudy=" + "\\".join(many)).ok()
    check(r["count"] >= 1 and all("CT" in s["ModalitiesInStudy"] for s in r["matches"]),
          f"blob find with 1501 modalities: {r['count']} matches")
    studies = [s["StudyInstanceUID"] for s in r["matches"]]
    uids = [f"1.2.3.{n}" for n in range(1500)] + studies[:1]
    r = c.blob("find", "--index", index, "StudyInstanceUID=" + "\\".join(uids)).ok()
    check_equal([s["StudyInstanceUID"] for s in r["matches"]], studies[:1], "blob find with 1501 UIDs")
    too_many = "\\".join(f"X{n}" for n in range(4097))
    c.blob("find", "--index", index, "ModalitiesInStudy=" + too_many).error(
        10, "find: ModalitiesInStudy: 4097 values, at most 4096 allowed in a list")
    if not gw:
        return
    responses = gw.pynetdicom(python, "find", "study", "STUDY", "ModalitiesInStudy=" + "\\".join(many),
                              "StudyInstanceUID")
    check_equal(responses[-1]["status"], 0, "C-FIND with 1501 modalities: success")
    check_equal(sorted(r["identifier"]["StudyInstanceUID"] for r in responses if r["status"] == 0xFF00),
                sorted(studies), "C-FIND with 1501 modalities: the CT studies")
    responses = gw.pynetdicom(python, "find", "study", "STUDY", "ModalitiesInStudy=" + too_many, "StudyInstanceUID")
    check_equal([(r["status"], r.get("comment")) for r in responses],
                [(0xC000, "ModalitiesInStudy: 4097 values, at most 4096 allowed in a list")],
                "C-FIND with 4097 modalities: refused naming the limit")


def index_failure(c, gw, python):
    step("an index failure: the peer gets a generic comment and a reference; the log has the database's text")
    with sqlite3.connect(gw.index) as db:
        db.execute("DROP TABLE instances")
    responses = gw.pynetdicom(python, "find", "study", "STUDY", "PatientID=PAT1", "StudyInstanceUID")
    check_equal(len(responses), 1, f"one answer: {responses}")
    check_equal(responses[0]["status"], 0xC000, "the status of a C-FIND the index fails")
    comment = responses[0].get("comment", "")
    m = re.fullmatch(r"study index failure, reference (\d+-\d+) in the gateway's log", comment)
    check(m is not None, f"the Error Comment: {comment!r}")
    check(gw.index not in comment and "sqlite" not in comment, f"the index leaks into the comment: {comment!r}")
    check(re.search(rf"C-FIND from PYNETDICOM@127\.0\.0\.1: the study index failed \(reference {m.group(1)}\): "
                    r"index sqlite:.*no such table: instances", gw.log()),
          "the log line with the reference and the database's text")


def passwords(c):
    try:
        url = start_postgresql(c, ["dicom"])["dicom"]
    except TestSkipped as e:
        step(f"password part skipped: {e}")
        return
    step("PostgreSQL: the password is never printed (ready line, errors)")
    secret_url = url.replace("postgresql://blob@", f"postgresql://blob:{SECRET}@") + f"?password={SECRET}"
    gw = Gateway(c, "ws1", "gateway-pg", index_url=secret_url)
    expected = url.replace("postgresql://blob@", "postgresql://blob:***@") + "?password=***"
    check(f"index={expected}" in gw.proc.ready_line and SECRET not in gw.proc.ready_line,
          f"the ready line: {gw.proc.ready_line!r}")
    long_lists(c, url)
    check_equal(gw.proc.stop(), 0, "exit status of the PostgreSQL gateway")
    check(SECRET not in gw.log(), "the password in the gateway's log")

    dead_port = free_port()
    dead = f"postgresql://blob:{SECRET}@127.0.0.1:{dead_port}/dicom?sslmode=disable&password={SECRET}"
    shown = f"postgresql://blob:***@127.0.0.1:{dead_port}/dicom?sslmode=disable&password=***"
    r = c.blob("find", "--index", dead, "PatientID=PAT1").error(52, f"index {shown}: cannot connect")
    check(SECRET not in r.stderr + r.stdout, f"the password in blob find's error: {r.describe()}")
    code, out, err = c.run([program("gateway/blob-dicomd"), "--aetitle", "X", "--port", "0", "--store", "ws1",
                            "--naming", c.naming, "--index", dead], timeout=60)
    check(code == 52 and f"index {shown}: cannot connect" in err and SECRET not in err + out,
          f"blob-dicomd with an unreachable index: exit {code}, {err!r}")
    keywords = f"host=127.0.0.1 port={dead_port} password = '{SECRET} x' sslpassword={SECRET}"
    r = c.blob("find", "--index", keywords, "PatientID=PAT1").error(
        10, f"--index host=127.0.0.1 port={dead_port} password = *** sslpassword=***: expected sqlite:PATH")
    check(SECRET not in r.stderr + r.stdout, f"the password in blob find's error: {r.describe()}")


def test(c):
    python = pynetdicom_python()
    c.start_daemon("ws1", "file")
    gw = Gateway(c, "ws1", "gateway", extra=("--stable-after", "0.5"))
    control_characters(c, gw)
    make_objects(c, "study", c.path("a"), "2", "PAT1", "20261115")
    make_objects(c, "study", c.path("b"), "1", "PAT2", "20261116", "MR")
    gw.storescu("+sd", c.path("a"), c.path("b"))
    wait_for(lambda: c.blob("find", "--index", gw.index_url).ok()["count"] == 3, 30, "three studies indexed")
    nul_keys(c, gw, python)
    long_lists(c, gw.index_url, gw, python)
    index_failure(c, gw, python)
    check_equal(gw.proc.stop(), 0, "exit status of the gateway")
    passwords(c)


if __name__ == "__main__":
    harness.main(test)
