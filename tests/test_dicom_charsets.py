#!/usr/bin/env python3
"""Specific Character Set (0008,0005): blob-dicomd decodes every text value
of an instance by its data set's character set and indexes UTF-8, on SQLite
and on PostgreSQL (a UTF-8 database, which refuses other bytes).

Objects of tests/tools/dicom_objects.py `charsets` (pydicom encodes them):
one CT slice per set, ISO_IR 100 (Latin-1 "Müller"), ISO_IR 101 (Latin-2),
ISO_IR 144 (Cyrillic), ISO_IR 192 (UTF-8), GB18030 (Chinese),
`\\ISO 2022 IR 87` (Japanese with escape sequences: "Yamada^Tarou=山田^太郎=
やまだ^たろう") and `ISO 2022 IR 13\\ISO 2022 IR 87` (half-width katakana too:
"ﾔﾏﾀﾞ^ﾀﾛｳ=山田^太郎=やまだ^たろう"), each its own patient and study; and one
without a character set whose PatientName holds the Latin-1 byte 0xFC, which the default set
lacks: indexed with the byte escaped (`M\\xFCller^Raw`) and a log line naming
the Blob and the attribute. For each index kind:
- `blob find --json` gives every value as the right UTF-8 text;
- a C-FIND (pynetdicom) with a key in the object's own character set
  matches it, and the response carries that Specific Character Set and the
  values in it (ISO_IR 192 and UTF-8 for the sets with code extensions,
  which DCMTK does not encode); findscu's Latin-1 query likewise;
- `blob watch --json --events study-stable` gets one event per study, the
  Latin-1 PatientID and AccessionNumber among them as UTF-8 (none dropped).
Real omniNames, blobstored, blob-dicomd, storescu/findscu, pynetdicom and a
throwaway PostgreSQL on 127.0.0.1 (skipped when PostgreSQL is missing)."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step, wait_for  # noqa: E402
from harness.dicom import AE, Gateway, dump_keys, make_objects, pynetdicom_python, postgresql_url  # noqa: E402
from test_events import Watcher  # noqa: E402

TEXT = ("PatientID", "PatientName", "AccessionNumber", "StudyDescription")


def run(c, kind, objects, index_url, python):
    gw = Gateway(c, "ws1", f"gateway-{kind}", extra=("--stable-after", "0.5"), index_url=index_url)
    index = gw.index_url
    watcher = Watcher(c, f"watch-{kind}", "--events", "study-stable", "--gateway", AE)

    step(f"{kind}: one instance per character set through storescu")
    gw.storescu(*[o["path"] for o in objects])

    def studies():
        return c.blob("find", "--index", index, "--level", "study").ok()["matches"]

    wait_for(lambda: len(studies()) == len(objects), 30, f"{len(objects)} studies in the {kind} index")
    by_study = {s["StudyInstanceUID"]: s for s in studies()}
    for o in objects:
        row = by_study[o["study"]]
        check_equal(tuple(row[k] for k in TEXT), tuple(o[k] for k in TEXT),
                    f"{kind}: blob find --json of the {o['name']} instance ({o['charset'] or 'no'} character set)")

    step(f"{kind}: the value that cannot be decoded: indexed escaped, a log line naming the Blob and attribute")
    raw = next(o for o in objects if o["name"] == "undecodable")
    line = (f'Blob "{raw["sop"]}.dcm": PatientName (0010,0010): not valid in Specific Character Set "ISO_IR 6" '
            "(Cannot convert character encoding: Invalid or incomplete multibyte or wide character); indexed with the "
            "undecodable bytes escaped (\\xNN)")
    wait_for(lambda: line in gw.log(), 10, "the log line of the undecodable value")
    check("indexed with the undecodable bytes escaped (\\xNN)" in gw.log(), "the log line says what was indexed")
    instance = c.blob("find", "--index", index, "--level", "instance", f"SOPInstanceUID={raw['sop']}").ok()
    check_equal(instance["matches"][0]["PatientName"], "M\\xFCller^Raw", "the escaped value")
    text = c.blob("find", "--index", index, "--level", "patient", "PatientID=CS-RAW", json_out=False)
    check_equal(text.code, 0, "blob find text exit code")
    check("\tM\\xFCller^Raw\t" in text.stdout, f"the escaped value in the text output: {text.stdout!r}")

    step(f"{kind}: C-FIND with keys in each object's own character set; UTF-8 (ISO_IR 192) answers")
    for o in objects:
        if not o["charset"]:
            continue
        responses = gw.pynetdicom(python, "find", "study", "STUDY", f"SpecificCharacterSet={o['charset']}",
                                  f"PatientName={o['PatientName']}", "PatientID", "AccessionNumber",
                                  "StudyDescription", "StudyInstanceUID")
        matches = [r["identifier"] for r in responses if r["status"] == 0xFF00]
        check_equal(responses[-1]["status"], 0, f"{o['name']}: the final status")
        # Answered in the query's set when it is one set (no code extensions), else in UTF-8.
        answer_set = "ISO_IR 192" if "\\" in o["charset"] else o["charset"]
        check_equal([(m["StudyInstanceUID"], m["SpecificCharacterSet"]) for m in matches],
                    [(o["study"], answer_set)], f"{o['name']}: the C-FIND matches in {o['charset']}")
        check_equal(tuple(matches[0][k] for k in TEXT), tuple(o[k] for k in TEXT),
                    f"{o['name']}: the values of the C-FIND response")
    latin1 = next(o for o in objects if o["name"] == "latin1")
    out_dir = c.path(f"findscu-latin1-{kind}")
    os.makedirs(out_dir)
    # findscu sends the key's bytes as given: Latin-1 (its log of them is not UTF-8: kept as bytes).
    argv = [b"findscu", b"-aet", b"VIEWER", b"-aec", AE.encode(), b"-S", b"-X", b"-od", out_dir.encode(),
            b"-k", b"QueryRetrieveLevel=STUDY", b"-k", b"SpecificCharacterSet=ISO_IR 100",
            b"-k", "PatientName=Müller*".encode("latin-1"), b"-k", b"PatientID", b"-k", b"StudyInstanceUID",
            b"127.0.0.1", str(gw.port).encode()]
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=120, env=c.env)
    check_equal(r.returncode, 0, f"findscu exit code ({r.stderr[-2000:]!r})")
    # Answered in Latin-1 (test_dicom_query_keys.py checks its bytes): read converted to UTF-8.
    found = [dump_keys(c, os.path.join(out_dir, f), to_utf8=True) for f in sorted(os.listdir(out_dir))]
    check_equal([(f["StudyInstanceUID"], f["PatientID"]) for f in found], [(latin1["study"], "MÜLLER")],
                "findscu's Latin-1 query and its answer")

    step(f"{kind}: blob watch --json: one study-stable event per study, none dropped, UTF-8")
    # A study indexed again (the start's rescan, then storescu) may be published twice: every study at least once.
    expected = {o["study"]: (o["PatientID"], o["AccessionNumber"]) for o in objects}
    seen = {}
    for _ in range(3 * len(objects)):
        if set(seen) == set(expected):
            break
        (e,) = watcher.take(1, timeout=60)
        seen[e["study"]] = (e["patient_id"], e["accession_number"])
    check_equal(seen, expected, f"{kind}: the patient and accession of each study's study-stable event")
    check("is not UTF-8" not in watcher.stderr() and "threw" not in watcher.stderr(),
          f"the watcher's warnings: {watcher.stderr()!r}")
    watcher.proc.stop()

    step(f"{kind}: Blobs pushed with blob (not through the gateway) are indexed from their events, decoded")
    for name in ("latin1", "undecodable"):
        o = next(o for o in objects if o["name"] == name)
        c.blob("push", "--name", f"pushed-{kind}-{name}.dcm", o["path"], store="ws1").ok()
        wait_for(lambda: any(r["blob"] == f"pushed-{kind}-{name}.dcm" for r in c.blob(
            "find", "--index", index, "--level", "instance", f"SOPInstanceUID={o['sop']}").ok()["matches"]), 30,
            f"the pushed {name} instance indexed")
        (row,) = c.blob("find", "--index", index, "--level", "instance", f"SOPInstanceUID={o['sop']}").ok()["matches"]
        check_equal(tuple(row[k] for k in TEXT), tuple(o[k] for k in TEXT), f"{kind}: the pushed {name} instance")
    check(f'from Blob "pushed-{kind}-undecodable.dcm" in store "ws1": PatientName (0010,0010): not valid in Specific '
          'Character Set "ISO_IR 6"' in gw.log(), "the indexer's log line of the undecodable value")
    check_equal(gw.proc.stop(), 0, f"exit status of the {kind} gateway after SIGTERM")


def test(c):
    python = pynetdicom_python()
    c.start_daemon("ws1", "file")
    objects = make_objects(c, "charsets", c.path("charsets"))
    run(c, "sqlite", objects, None, python)
    url = postgresql_url(c)
    if url:
        run(c, "postgresql", objects, url, python)


if __name__ == "__main__":
    harness.main(test)
