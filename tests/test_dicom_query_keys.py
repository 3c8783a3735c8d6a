#!/usr/bin/env python3
"""C-FIND answers that viewers can use (docs/DICOM.md, "Queries" and
"Character sets"), on SQLite and on PostgreSQL (skipped without it):

- Character sets: a C-FIND response carries Specific Character Set
  (0008,0005) and its text is encoded in it: the query's set when it holds
  the values, else ISO_IR 192. findscu's Latin-1 (ISO_IR 100) query
  `PatientName=Müller*` finds the patient stored in Latin-1 and the one
  stored in UTF-8; the first answer is ISO_IR 100 with the Latin-1 bytes of
  "Müller^Jürgen", the second ISO_IR 192 with the UTF-8 bytes of
  "Müller^Ωmega" (Ω is not in Latin-1). The same query in ISO_IR 192 finds
  both, answered in UTF-8 bytes. pynetdicom's Latin-1 query decodes the
  same values.
- Keys the index has no column for (SeriesDescription, BodyPartExamined,
  ReferringPhysicianName, PatientSex, any other attribute of the header)
  come back filled and filter: `SeriesDescription=NO SUCH*` finds nothing,
  `SeriesDescription=Abd*` one series, `BodyPartExamined=CHEST` its study;
  a key that cannot be matched (a sequence with a value) is refused (C000)
  with an Error Comment naming it, never ignored. QIDO-RS (the same parse
  and index query) matches and returns them likewise (`includefield`
  names more), in UTF-8, and answers 400 for a private key.
- An index made before the header column (the column dropped from the
  SQLite file): the restarted gateway's rescan reads the Blobs' headers
  again, and the keys come back filled.
Real omniNames, blobstored, blob-dicomd, storescu/findscu and pynetdicom
on 127.0.0.1."""

import json
import os
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import TestSkipped, check, check_equal, step, wait_for  # noqa: E402
from harness.dicom import AE, SYSTEM_PYTHON, Gateway, make_objects, next_counter, pynetdicom_python, \
    postgresql_url  # noqa: E402

# The raw bytes and character set of each findscu answer (pydicom, no decoding).
RAW = r"""
import json, sys, pydicom
out = []
for path in sys.argv[1:]:
    ds = pydicom.dcmread(path)
    raw = lambda tag: ds.get_item(tag).value.rstrip(b" ").hex() if tag in ds else None
    out.append({"charset": str(ds.get("SpecificCharacterSet", "")), "PatientID": str(ds.PatientID),
                "PatientName": raw(0x00100010), "ReferringPhysicianName": raw(0x00080090)})
print(json.dumps(out))
"""


def findscu_raw(c, gw, keys, expect=0):
    """findscu -S with `keys` (bytes, as given on its command line); the raw answers and its stderr."""
    out_dir = c.path(f"findscu-raw-{next_counter()}")
    os.makedirs(out_dir)
    argv = [b"findscu", b"-aet", b"VIEWER", b"-aec", AE.encode(), b"-S", b"-X", b"-od", out_dir.encode()]
    for k in keys:
        argv += [b"-k", k]
    r = subprocess.run(argv + [b"127.0.0.1", str(gw.port).encode()], stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=120, env=c.env)
    check_equal(r.returncode, expect, f"findscu exit code ({r.stderr[-2000:]!r})")
    files = [os.path.join(out_dir, f) for f in sorted(os.listdir(out_dir))]
    if not files:
        return [], r.stderr.decode("utf-8", "replace")
    code, out, err = c.run([SYSTEM_PYTHON, "-c", RAW, *files])
    check(code == 0, f"reading findscu's answers: {err[-2000:]}")
    return sorted(json.loads(out), key=lambda a: a["PatientID"]), r.stderr.decode("utf-8", "replace")


def run(c, kind, objects, index_url, python):
    gw = Gateway(c, "ws1", f"gateway-{kind}", index_url=index_url, extra=("--http-address", "127.0.0.1:0"))
    index = gw.index_url
    step(f"{kind}: a Latin-1 study of two series and a UTF-8 study through storescu")
    gw.storescu(*[o["path"] for o in objects])
    wait_for(lambda: c.blob("find", "--index", index, "--level", "series").ok()["count"] == 3, 30,
             "three series indexed")
    latin1, utf8 = objects[0], objects[2]

    step(f"{kind}: findscu's Latin-1 query: the Latin-1 patient answered in ISO_IR 100, the other in ISO_IR 192")
    muller = "PatientName=Müller*"
    answers, err = findscu_raw(c, gw, [b"QueryRetrieveLevel=STUDY", b"SpecificCharacterSet=ISO_IR 100",
                                       muller.encode("latin-1"), b"PatientID", b"ReferringPhysicianName"])
    check_equal(answers, [
        {"charset": "ISO_IR 100", "PatientID": "KEYS-1", "PatientName": "Müller^Jürgen".encode("latin-1").hex(),
         "ReferringPhysicianName": "Weiß^Anna".encode("latin-1").hex()},
        {"charset": "ISO_IR 192", "PatientID": "KEYS-2", "PatientName": "Müller^Ωmega".encode().hex(),
         "ReferringPhysicianName": "Ørsted^Hans".encode().hex()},
    ], f"{kind}: the answers to the Latin-1 query, their character sets and bytes")

    step(f"{kind}: findscu's UTF-8 query: both patients, answered in UTF-8")
    answers, err = findscu_raw(c, gw, [b"QueryRetrieveLevel=STUDY", b"SpecificCharacterSet=ISO_IR 192",
                                       muller.encode(), b"PatientID", b"ReferringPhysicianName"])
    check_equal([(a["charset"], a["PatientID"], bytes.fromhex(a["PatientName"]).decode()) for a in answers],
                [("ISO_IR 192", "KEYS-1", "Müller^Jürgen"), ("ISO_IR 192", "KEYS-2", "Müller^Ωmega")],
                f"{kind}: the answers to the UTF-8 query")

    if python:
        step(f"{kind}: pynetdicom's Latin-1 query, decoded")
        out = python(gw, "find", "study", "STUDY", "SpecificCharacterSet=ISO_IR 100", muller, "PatientID",
                     "PatientSex", "ReferringPhysicianName")
        check_equal(sorted((r["identifier"]["SpecificCharacterSet"], r["identifier"]["PatientName"],
                            r["identifier"]["PatientSex"], r["identifier"]["ReferringPhysicianName"])
                           for r in out if r["status"] == 0xFF00),
                    [("ISO_IR 100", "Müller^Jürgen", "F", "Weiß^Anna"), ("ISO_IR 192", "Müller^Ωmega", "M",
                                                                         "Ørsted^Hans")],
                    f"{kind}: pynetdicom's answers")

    step(f"{kind}: SeriesDescription, BodyPartExamined, PatientSex, ReferringPhysicianName: returned and matched")
    answers, _ = gw.findscu("study", "SERIES", f"StudyInstanceUID={latin1['study']}", "SeriesInstanceUID",
                            "SeriesDescription", "BodyPartExamined", "PatientSex", "ReferringPhysicianName")
    check_equal([(a["SeriesInstanceUID"], a["SeriesDescription"], a["BodyPartExamined"]) for a in answers],
                [(o["series"], o["SeriesDescription"], o["BodyPartExamined"]) for o in objects[:2]],
                f"{kind}: the series level's answers")
    check_equal({(a["PatientSex"], a["ReferringPhysicianName"]) for a in answers}, {("F", "Weiß^Anna")},
                f"{kind}: patient and study attributes in series answers")
    answers, _ = gw.findscu("study", "SERIES", "SeriesDescription=NO SUCH*", "SeriesInstanceUID")
    check_equal(answers, [], f"{kind}: SeriesDescription=NO SUCH* matches no series (it matched every one)")
    answers, _ = gw.findscu("study", "SERIES", "SeriesDescription=Abd*", "SeriesInstanceUID")
    check_equal([(a["SeriesInstanceUID"], a["SeriesDescription"]) for a in answers],
                [(objects[1]["series"], "Abdomen nativ")], f"{kind}: SeriesDescription=Abd*")
    answers, _ = gw.findscu("study", "STUDY", "BodyPartExamined=CHEST", "StudyInstanceUID", "PatientSex")
    check_equal([(a["StudyInstanceUID"], a["PatientSex"]) for a in answers], [(latin1["study"], "F")],
                f"{kind}: a study by a series attribute (BodyPartExamined=CHEST)")
    answers, _ = gw.findscu("study", "STUDY", "PatientSex=M", "StudyInstanceUID")
    check_equal([a["StudyInstanceUID"] for a in answers], [utf8["study"]], f"{kind}: PatientSex=M")

    step(f"{kind}: a key that cannot be matched is refused, naming it")
    answers, err = gw.findscu("study", "STUDY", "ProcedureCodeSequence[0].CodeValue=X1", "StudyInstanceUID")
    check(answers == [] and "Final Find Response (Failed: UnableToProcess)" in err,
          f"{kind}: findscu's error for a sequence key: {err[-1500:]}")
    check("ProcedureCodeSequence (0008,1032): sequence matching is not supported" in gw.log(),
          f"{kind}: the log line of the refusal")
    step(f"{kind}: QIDO-RS matches and returns the same keys (DICOM JSON: UTF-8); one it cannot match is a 400")

    def qido(path, **params):
        url = f"{gw.http}/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                return r.status, json.loads(r.read() or b"[]")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
    status, found = qido("series", SeriesDescription="Abd*", includefield="BodyPartExamined,ProtocolName")
    check_equal((status, [(m["0020000E"]["Value"][0], m["0008103E"]["Value"][0], m["00180015"]["Value"][0],
                           "Value" in m["00181030"]) for m in found]),
                (200, [(objects[1]["series"], "Abdomen nativ", "ABDOMEN", False)]),
                f"{kind}: QIDO-RS series by SeriesDescription=Abd*, BodyPartExamined included")
    status, found = qido("studies", PatientName="Müller*", ReferringPhysicianName="")
    check_equal((status, sorted((m["00100010"]["Value"][0]["Alphabetic"], m["00080090"]["Value"][0]["Alphabetic"])
                                for m in found)),
                (200, [("Müller^Jürgen", "Weiß^Anna"), ("Müller^Ωmega", "Ørsted^Hans")]),
                f"{kind}: QIDO-RS studies by PatientName=Müller*")
    check_equal(qido("studies", **{"00091010": "x"}),
                (400, "query parameter 00091010: cannot be matched (Unknown VR: Tag not found in data dictionary)\n"),
                f"{kind}: QIDO-RS with a private key (refused, not ignored)")
    return gw


def migration(c, objects):
    """An index without the header column (as an older gateway made it): filled again by the rescan."""
    gw = Gateway(c, "ws1", "gateway-old-index")
    gw.storescu(*[o["path"] for o in objects])
    wait_for(lambda: c.blob("find", "--index", gw.index_url, "--level", "series").ok()["count"] == 3, 30,
             "three series indexed")
    check_equal(gw.proc.stop(), 0, "exit status of the gateway after SIGTERM")
    with sqlite3.connect(gw.index) as db:
        for table in ("instances", "conflicts"):
            db.execute(f'ALTER TABLE {table} DROP COLUMN "header"')
    step("the gateway restarted on the index made without the header column: its rescan reads the Blobs again")
    again = Gateway(c, "ws1", "gateway-old-index-2", index_url=gw.index_url)
    wait_for(lambda: 'index: rescan of store "ws1": 3 Blobs listed, 3 to read' in again.log(), 30,
             "the rescan's line: every Blob read again")

    def series():
        return again.findscu("study", "SERIES", "BodyPartExamined=HEAD", "SeriesDescription")[0]
    wait_for(lambda: [a["SeriesDescription"] for a in series()] == ["Schädel"], 30,
             "SeriesDescription of the old index's instance filled and matched")


def test(c):
    c.env["TCP_NODELAY"] = "1"
    c.start_daemon("ws1", "file")
    objects = make_objects(c, "keys", c.path("keys"))
    try:
        venv = pynetdicom_python()
        python = lambda gw, *args: gw.pynetdicom(venv, *args)  # noqa: E731
    except TestSkipped as e:
        step(f"pynetdicom checks skipped: {e}")
        python = None
    run(c, "sqlite", objects, None, python).proc.stop()
    migration(c, objects)
    url = postgresql_url(c)
    if url:
        run(c, "postgresql", objects, url, python)


if __name__ == "__main__":
    harness.main(test)
