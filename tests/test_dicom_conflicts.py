#!/usr/bin/env python3
"""One data set per SOP Instance UID, and UIDs checked before they are used
(docs/DICOM.md, "One data set per SOP Instance UID"; docs/SECURITY.md).

Conflicts: storescu stores study S3 of patient PAT-A; then `blob push` stores
other.dcm, a data set of patient PAT-B, study S4, under the SOP Instance UID
of one of S3's instances (X). The index keeps both: X's entry stays PAT-A's
in S3, flagged (`conflict` in `blob find`, text and --json), the gateway logs
the UID, both Blobs and the attributes that differ. `blob pull --study S3`
and `--study S4` deliver every other instance and refuse X naming it and
both Blobs (exit 58, partial); C-GET of S4 (getscu) likewise sends S4's own
instances and fails X's sub-operation, with an Error Comment. Removing
other.dcm resolves the conflict (S3 whole again); pushing it again and
removing X's own Blob restores X's entry from other.dcm (PAT-B, S4). An
index entry that the bytes contradict (edited behind the gateway's back) is
refused at retrieval: the object's own Patient ID is read from what is
delivered. All of it on SQLite, then on PostgreSQL.

Data sets, not only patients: before that, variant.dcm, X's data set with
the same patient, study, series and SOP class but another pixel value, is
pushed with `blob push`: a conflict too (the log line names both data sets'
CRC32C, computed here over the bytes after the meta header, the gateway's
derived from the Blob's checksum and meta header), `blob pull --study S3`
refuses X naming both Blobs (exit 58, the others written), removing it
resolves the conflict; `blob push` of X's own file (the same data set behind
pydicom's meta header, not the gateway's: another Blob checksum) under
another name is a copy, no conflict. At the end the index's data set
checksum column is dropped, as an older gateway left it: `blob find` reads
it, the next gateway adds the column, and another data set of an instance
indexed before is a conflict (not comparable).

UIDs: a C-STORE whose SOP Instance UID has letters, a Study Instance UID
with a leading zero, a Series Instance UID of 65 characters, or a SOP
Instance UID that is a path (../) is refused with C000 and an Error Comment
naming the attribute and the value, nothing stored; a Blob pushed with such
a UID is not indexed (a log line names it); an index that holds one (made
by an older gateway) does not stop `blob pull --study`: the valid instances
are written, the bad one is named, exit 58, and no file is made from it.
Real omniNames, blobstored, blob-dicomd, storescu, getscu, pynetdicom."""

import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import TestSkipped, check, check_equal, step, wait_for  # noqa: E402
from harness.dicom import Gateway, data_set, make_objects, pynetdicom_python, start_postgresql  # noqa: E402


def _crc_of_byte(n):
    for _ in range(8):
        n = (n >> 1) ^ 0x82F63B78 if n & 1 else n >> 1
    return n


CRC_TABLE = [_crc_of_byte(i) for i in range(256)]


def crc32c_text(data):
    """CRC32C (the catalogue's: reflected 0x1EDC6F41, initial and final XOR
    0xFFFFFFFF) a byte at a time: nothing shared with the gateway's."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = (crc >> 8) ^ CRC_TABLE[(crc ^ byte) & 0xFF]
    return f"crc32c:{crc ^ 0xFFFFFFFF:08x}"


def data_set_crc(path):
    with open(path, "rb") as f:
        return crc32c_text(data_set(f.read()))


def same_data_set(path_a, path_b):
    with open(path_a, "rb") as a, open(path_b, "rb") as b:
        return data_set(a.read()) == data_set(b.read())


def sql(c, gw, statement):
    """Runs `statement` on the gateway's index behind its back (SQLite or PostgreSQL)."""
    if gw.index_url.startswith("sqlite:"):
        db = sqlite3.connect(gw.index_url[len("sqlite:"):])
        db.execute(statement)
        db.commit()
        db.close()
        return
    code, _, err = c.run(["psql", gw.index_url, "-q", "-c", statement], timeout=60)
    check(code == 0, f"psql {statement!r}: {err}")


def conflicts(c, store, index_url, tag):
    """The conflict checks with a gateway on `store` keeping `index_url`."""
    gw = Gateway(c, store, f"gateway-{tag}", index_url=index_url)
    index = gw.index_url

    def entry(sop):
        rows = c.blob("find", "--index", index, "--level", "instance", f"SOPInstanceUID={sop}").ok()["matches"]
        check_equal(len(rows), 1, f"entries of instance {sop}")
        return rows[0]

    step(f"[{tag}] study S3 of PAT-A through storescu; study S4 of PAT-B pushed with blob push")
    s3 = make_objects(c, "study", c.path(f"{tag}-s3"), "3", "PAT-A", "20261101")
    s4 = make_objects(c, "study", c.path(f"{tag}-s4"), "2", "PAT-B", "20261102")
    gw.storescu(*[e["path"] for e in s3])
    for n, e in enumerate(s4):
        c.blob("push", "--name", f"{tag}-s4-{n}.dcm", e["path"], store=store).ok()
    wait_for(lambda: len(c.blob("find", "--index", index, "--level", "instance",
                                f"StudyInstanceUID={s4[0]['study']}").ok()["matches"]) == 2, 30, "S4 indexed")
    x = s3[0]
    other = make_objects(c, "samesop", x["path"], s4[1]["path"], c.path(f"{tag}-other.dcm"))[0]
    check_equal(other["sop"], x["sop"], "other.dcm's SOP Instance UID")
    x_blob, other_blob = x["sop"] + ".dcm", f"{tag}-other.dcm"

    step(f"[{tag}] X's data set with another pixel value, same patient, study and series (blob push): a conflict")
    variant = make_objects(c, "variant", x["path"], c.path(f"{tag}-variant.dcm"))[0]
    check_equal((variant["sop"], variant["study"], variant["series"]), (x["sop"], x["study"], x["series"]),
                "variant.dcm's UIDs")
    variant_blob, crc_x, crc_variant = f"{tag}-variant.dcm", data_set_crc(x["path"]), data_set_crc(variant["path"])
    check(crc_x != crc_variant, "the variant's data set is X's")
    c.blob("push", variant["path"], store=store).ok()
    logged = (f'index: instance {x["sop"]}: Blob "{variant_blob}" in store "{store}" holds another data set than its '
              f'entry\'s (Blob "{x_blob}" in store "{store}"): data set {crc_variant} (not {crc_x}); both kept, the '
              'instance is flagged as a conflict')
    wait_for(lambda: logged in gw.log(), 30, "the variant's conflict log line")
    e = entry(x["sop"])
    check_equal((e["PatientID"], e["blob"], e["conflict"]),
                ("PAT-A", x_blob, f'"{variant_blob}" in store "{store}": PatientID "PAT-A", StudyInstanceUID '
                                  f'"{x["study"]}", data set {crc_variant}'), "X's entry with the variant")
    out = c.path(f"{tag}-pulled-variant")
    r = c.blob("pull", "--index", index, "--study", x["study"], out, json_out=False)
    r.error(58, f'pull --study {x["study"]}: instance {x["sop"]} refused: instance {x["sop"]} has more than one data '
                f'set under its SOP Instance UID: Blob "{x_blob}" in store "{store}" (PatientID "PAT-A", '
                f'StudyInstanceUID "{x["study"]}", data set {crc_x}), Blob "{variant_blob}" in store "{store}" '
                f'(PatientID "PAT-A", StudyInstanceUID "{x["study"]}", data set {crc_variant}); not pulled until one '
                'of them is removed')
    check_equal(sorted(os.listdir(out)), sorted(g["sop"] + ".dcm" for g in s3[1:]), "the files written")
    c.blob("rm", variant_blob, store=store).ok()
    wait_for(lambda: entry(x["sop"])["conflict"] == "", 30, "the variant's conflict resolved")

    step(f"[{tag}] X's own file (another meta header, the same data set) pushed as another name: a copy")
    x_file = f"{tag}-x-file.dcm"
    c.blob("push", "--name", x_file, x["path"], store=store).ok()
    wait_for(lambda: f'index: instance {x["sop"]} indexed from Blob "{x_file}" in store "{store}"' in gw.log(), 30,
             "X's file indexed")
    sums = {b["name"]: b["checksum"] for b in c.blob("ls", store=store).ok()["blobs"]}
    check(sums[x_file] != sums[x_blob], f"X's file and the gateway's Blob have one checksum: {sums[x_file]}")
    check_equal(entry(x["sop"])["conflict"], "", "X's conflict with its own file")
    r = c.blob("pull", "--index", index, "--study", x["study"], c.path(f"{tag}-pulled-x-file")).ok()
    check_equal((r["succeeded"], r["failed"]), (3, 0), "pull --study S3 with X's file a copy")
    c.blob("rm", x_file, store=store).ok()
    wait_for(lambda: f'index: Blob "{x_file}" removed from store "{store}": its copy removed, the instance stays '
                     f'indexed in store "{store}"' in gw.log(), 30, "X's file removed from the index")

    step(f"[{tag}] another data set under X's SOP Instance UID (blob push): both kept, flagged, logged")
    c.blob("push", other["path"], store=store).ok()
    logged = (f'index: instance {x["sop"]}: Blob "{other_blob}" in store "{store}" holds another data set than its '
              f'entry\'s (Blob "{x_blob}" in store "{store}"): PatientID "PAT-B" (not "PAT-A"), StudyInstanceUID '
              f'"{s4[0]["study"]}" (not "{x["study"]}"), SeriesInstanceUID "{s4[0]["series"]}" (not '
              f'"{x["series"]}"); both kept, the instance is flagged as a conflict')
    wait_for(lambda: logged in gw.log(), 30, "the conflict's log line")
    e = entry(x["sop"])
    flag = f'"{other_blob}" in store "{store}": PatientID "PAT-B", StudyInstanceUID "{s4[0]["study"]}"'
    check_equal((e["PatientID"], e["StudyInstanceUID"], e["blob"], e["stores"], e["conflict"]),
                ("PAT-A", x["study"], x_blob, store, flag), "X's entry (blob find --json)")
    r = c.blob("find", "--index", index, "--level", "instance", f"SOPInstanceUID={x['sop']}", json_out=False)
    r.ok()
    header, line = r.stdout.splitlines()
    check_equal(dict(zip(header.split("\t"), line.split("\t")))["conflict"], flag, "X's conflict (text)")
    check_equal(entry(s3[1]["sop"])["conflict"], "", "an instance without conflict")

    both = (f'instance {x["sop"]} has more than one data set under its SOP Instance UID: Blob "{x_blob}" in store '
            f'"{store}" (PatientID "PAT-A", StudyInstanceUID "{x["study"]}", SeriesInstanceUID "{x["series"]}"), '
            f'Blob "{other_blob}" in store "{store}" (PatientID "PAT-B", StudyInstanceUID "{s4[0]["study"]}", '
            f'SeriesInstanceUID "{s4[0]["series"]}"); not pulled until one of them is removed')
    for study, genuine in ((x["study"], s3[1:]), (s4[0]["study"], s4)):
        step(f"[{tag}] blob pull --study {study}: the other instances written, X refused naming both Blobs, exit 58")
        out = c.path(f"{tag}-pulled-{study}")
        r = c.blob("pull", "--index", index, "--study", study, out, json_out=False)
        r.error(58, f"pull --study {study}: instance {x['sop']} refused: {both}")
        check(f"pulled {len(genuine)} of {len(genuine) + 1} instances of study {study}" in r.stderr,
              f"the summary line: {r.stderr!r}")
        check_equal(sorted(os.listdir(out)), sorted(g["sop"] + ".dcm" for g in genuine), "the files written")
        for g in genuine:
            check(same_data_set(os.path.join(out, g["sop"] + ".dcm"), g["path"]), f"{g['sop']}'s data set")
        r = c.blob("pull", "--index", index, "--study", study, c.path(f"{tag}-pulled-json-{study}"))
        check_equal(r.code, 58, f"pull --study --json's exit code ({r.describe()})")
        j = r.json
        check_equal((j["succeeded"], j["failed"]), (len(genuine), 1), "pull --study --json's counts")
        refused = [i for i in j["instances"] if i["SOPInstanceUID"] == x["sop"]]
        check(len(refused) == 1 and refused[0]["error"]["code"] == 58 and both in refused[0]["error"]["message"],
              f"X's entry in pull --study --json: {refused}")

    step(f"[{tag}] C-GET of S4 (getscu): S4's two instances sent, X's sub-operation failed with a comment")
    get_dir = c.path(f"{tag}-get-s4")
    os.makedirs(get_dir)
    code, _, err = c.run(["getscu", "-d", "-aet", "VIEWER", "-aec", "BLOBGW", "-S", "-od", get_dir, "-k",
                          "QueryRetrieveLevel=STUDY", "-k", f"StudyInstanceUID={s4[0]['study']}", "127.0.0.1",
                          str(gw.port)], timeout=300)
    got = sorted(os.listdir(get_dir))
    check_equal(len(got), 2, f"files getscu received ({got}; getscu exit {code}: {err[-1500:]!r})")
    check(not any(x["sop"] in name for name in got), f"X was delivered by the C-GET of S4: {got}")
    for g in s4:
        name = next(n for n in got if n.endswith(g["sop"]))
        check(same_data_set(os.path.join(get_dir, name), g["path"]), f"C-GET: {g['sop']}'s data set")
    check(f'C-GET from VIEWER@127.0.0.1: instance {x["sop"]}: instance {x["sop"]} has more than one data set'
          in gw.log() and "study level, 2 instances sent, 1 failed" in gw.log(),
          "no log lines of X's failed sub-operation")
    final = err[err.rfind("C-GET RSP"):]
    check("0xb000" in final.lower()
          and "(0000,0902) LO [conflict: another data set under its SOP Instance UID]" in final,
          f"the final C-GET response: B000 with the Error Comment: {final[-2500:]!r}")

    step(f"[{tag}] blob rm other.dcm: the conflict resolved, X's entry is PAT-A's in S3, S3 pulled whole")
    c.blob("rm", other_blob, store=store).ok()
    wait_for(lambda: entry(x["sop"])["conflict"] == "", 30, "the conflict gone from X's entry")
    check(f'index: Blob "{other_blob}" removed from store "{store}": its copy of instance {x["sop"]} in conflict '
          f'with the entry removed (no conflict left; the entry\'s copy in store "{store}")' in gw.log(),
          "no log line of the conflicting copy removed")
    check_equal((entry(x["sop"])["PatientID"], entry(x["sop"])["StudyInstanceUID"]), ("PAT-A", x["study"]),
                "X's entry once other.dcm is gone")
    out = c.path(f"{tag}-pulled-s3-whole")
    r = c.blob("pull", "--index", index, "--study", x["study"], out).ok()
    check_equal((r["succeeded"], r["failed"]), (3, 0), "pull --study S3 once resolved")
    check(same_data_set(os.path.join(out, x_blob), x["path"]), "X's data set once resolved")

    step(f"[{tag}] other.dcm pushed again, then X's own Blob removed: the entry restored from other.dcm (PAT-B, S4)")
    c.blob("push", other["path"], store=store).ok()
    wait_for(lambda: entry(x["sop"])["conflict"] != "", 30, "the conflict again")
    c.blob("rm", x_blob, store=store).ok()
    wait_for(lambda: entry(x["sop"])["conflict"] == "", 30, "the entry restored from other.dcm")
    e = entry(x["sop"])
    check_equal((e["PatientID"], e["StudyInstanceUID"], e["SeriesInstanceUID"], e["blob"], e["stores"]),
                ("PAT-B", s4[0]["study"], s4[0]["series"], other_blob, store), "X's entry restored from other.dcm")
    check(f'index: Blob "{x_blob}" removed from store "{store}": the last copy of instance {x["sop"]}\'s entry '
          f'removed; the entry now holds the data set of Blob "{other_blob}" in store "{store}" (no conflict left)'
          in gw.log(), "no log line of the entry restored")
    r = c.blob("pull", "--index", index, "--study", s4[0]["study"], c.path(f"{tag}-pulled-s4-whole")).ok()
    check_equal((r["succeeded"], r["failed"]), (3, 0), "pull --study S4 with X restored in it")
    check(same_data_set(os.path.join(c.path(f"{tag}-pulled-s4-whole"), x_blob), other["path"]),
          "X's data set is other.dcm's")
    r = c.blob("pull", "--index", index, "--study", x["study"], c.path(f"{tag}-pulled-s3-rest")).ok()
    check_equal((r["succeeded"], r["failed"]), (2, 0), "pull --study S3 without X")

    step(f"[{tag}] an entry the bytes contradict (edited behind the gateway): refused at retrieval, by the object's "
         "own Patient ID")
    y = s3[1]
    sql(c, gw, f"UPDATE instances SET \"PatientID\" = 'PAT-Z' WHERE \"SOPInstanceUID\" = '{y['sop']}'")
    out = c.path(f"{tag}-pulled-contradicted")
    r = c.blob("pull", "--index", index, "--study", y["study"], out, json_out=False)
    r.error(41, f'instance {y["sop"]} (Blob "{y["sop"]}.dcm"; stores tried: {store}): Blob "{y["sop"]}.dcm" in store '
                f'"{store}" is not the instance the index lists: its PatientID is "PAT-A", the index says "PAT-Z"')
    check_equal(sorted(os.listdir(out)), [s3[2]["sop"] + ".dcm"], "the files written (the contradicted one removed)")
    get_dir = c.path(f"{tag}-get-contradicted")
    code, err = gw.getscu("patient", "PATIENT", get_dir, "PatientID=PAT-Z")
    check_equal(os.listdir(get_dir), [], f"files the C-GET of PAT-Z sent (getscu exit {code})")
    check(f'C-GET from VIEWER@127.0.0.1: instance {y["sop"]}: Blob {y["sop"]}.dcm in store "{store}" is not the '
          'instance the index lists: its PatientID is "PAT-A", the index says "PAT-Z"; not sent' in gw.log(),
          "no log line of the contradicted instance refused by C-GET")
    sql(c, gw, f"UPDATE instances SET \"PatientID\" = 'PAT-A' WHERE \"SOPInstanceUID\" = '{y['sop']}'")
    check_equal(gw.proc.stop(), 0, "the gateway's exit status after SIGTERM")

    step(f"[{tag}] an index made before the data set checksum: read by blob find, the column added by the next "
         "gateway, another data set of its instances a conflict (not comparable)")
    for table in ("instances", "copies", "conflicts"):
        sql(c, gw, f"ALTER TABLE {table} DROP COLUMN data_set_checksum")
    z = s3[2]
    check_equal(entry(z["sop"])["conflict"], "", "Z's entry read from the older index")
    gw = Gateway(c, store, f"gateway-{tag}-again", index_url=gw.index_url)
    variant = make_objects(c, "variant", z["path"], c.path(f"{tag}-z-variant.dcm"))[0]
    c.blob("push", variant["path"], store=store).ok()
    logged = (f'index: instance {z["sop"]}: Blob "{tag}-z-variant.dcm" in store "{store}" holds another data set than '
              f'its entry\'s (Blob "{z["sop"]}.dcm" in store "{store}"): data set not comparable (the entry\'s copies '
              'have no data set checksum')
    wait_for(lambda: logged in gw.log(), 30, "the conflict with an entry indexed before")
    check(entry(z["sop"])["conflict"].endswith(f", data set {data_set_crc(variant['path'])}"),
          f"Z's conflict: {entry(z['sop'])['conflict']!r}")
    c.blob("rm", f"{tag}-z-variant.dcm", store=store).ok()
    wait_for(lambda: entry(z["sop"])["conflict"] == "", 30, "Z's conflict resolved")
    check_equal(gw.proc.stop(), 0, "the gateway's exit status after SIGTERM")


def uids(c, gw):
    """Invalid UIDs at C-STORE, at the indexer, and in an index made before."""
    python = None
    try:
        python = pynetdicom_python()
    except TestSkipped as e:
        step(f"pynetdicom checks skipped: {e}")
    bad = [("SOPInstanceUID", "1.2.840.99999.ABC.1"), ("StudyInstanceUID", "1.2.03.4"),
           ("SeriesInstanceUID", "1." + "2" * 63), ("SOPInstanceUID", "../../../tmp/x")]
    made = [make_objects(c, "setuid", c.path(f"bad{n}.dcm"), keyword, value)[0]
            for n, (keyword, value) in enumerate(bad)]
    step("storescu of invalid UIDs: refused with C000 naming attribute and value")
    for (keyword, value), entry in zip(bad, made):
        err = gw.storescu("-d", entry["path"], refused=True)
        line = next((l for l in gw.log().splitlines() if f'{keyword} "{value}" is not a valid UID' in l), "")
        check("refused (status C000)" in line, f"no log line refusing {keyword} {value!r}: {gw.log()[-1500:]!r}")
        check("0xc000: Error: Cannot understand" in err and f'(0000,0902) LO [{keyword} "{value[:20]}' in err,
              f"storescu's report of the refusal and its Error Comment: {err[-3000:]!r}")
    names = {b["name"] for b in c.blob("ls", store="ws1").ok()["blobs"]}
    check(not any(e["sop"] + ".dcm" in names for e in made) and not os.path.exists("/tmp/x.dcm"),
          f"an instance with an invalid UID was stored: {sorted(names)}")
    if python:
        step("pynetdicom: the Error Comment names the attribute and the value")
        results = gw.pynetdicom(python, "store", made[0]["path"], made[1]["path"])
        expected = ['SOPInstanceUID "1.2.840.99999.ABC.1" is not a valid UID',
                    'StudyInstanceUID "1.2.03.4" is not a valid UID']
        check_equal([(r["status"], r.get("comment", "")[:len(e)]) for r, e in zip(results, expected)],
                    [(0xC000, e) for e in expected], "statuses and Error Comments")

    step("blob push of an object whose SOP Instance UID has letters: not indexed, named in the log")
    c.blob("push", "--name", "letters.dcm", made[0]["path"], store="ws1").ok()
    wait_for(lambda: 'index: Blob "letters.dcm" in store "ws1": not indexed: SOPInstanceUID "1.2.840.99999.ABC.1" '
                     'is not a valid UID' in gw.log(), 30, "the log line of the Blob not indexed")

    step("an index made before holds instances with bad UIDs: pull --study writes the 3 valid ones, names the "
         "others, exit 58, makes no file of them")
    study = make_objects(c, "study", c.path("good"), "3", "PAT-G", "20261103")
    gw.storescu(*[e["path"] for e in study])
    wait_for(lambda: len(c.blob("find", "--index", gw.index_url, "--level", "instance",
                                f"StudyInstanceUID={study[0]['study']}").ok()["matches"]) == 3, 30, "the study")
    db = sqlite3.connect(gw.index)
    columns = [r[1] for r in db.execute("PRAGMA table_info(instances)")]
    row = db.execute("SELECT * FROM instances WHERE SOPInstanceUID = ?", (study[0]["sop"],)).fetchone()
    for n, uid in enumerate(("1.2.840.99999.ABC.1", "../../escaped")):
        values = dict(zip(columns, row), SOPInstanceUID=uid, blob=f"old{n}.dcm")
        db.execute(f"INSERT INTO instances ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                   [values[k] for k in columns])
    db.commit()
    db.close()
    out = c.path("pulled-good")
    r = c.blob("pull", "--index", gw.index_url, "--study", study[0]["study"], out, json_out=False)
    r.error(58, 'instance 1.2.840.99999.ABC.1 refused: the index holds an invalid SOP Instance UID '
                '"1.2.840.99999.ABC.1" (Blob "old0.dcm" in store "ws1"): not pulled')
    check('instance ../../escaped refused: the index holds an invalid SOP Instance UID "../../escaped"' in r.stderr,
          f"the path-like UID named: {r.stderr!r}")
    check("pulled 3 of 5 instances" in r.stderr, f"the summary: {r.stderr!r}")
    check_equal(sorted(os.listdir(out)), sorted(e["sop"] + ".dcm" for e in study), "the files written")
    check(not os.path.exists(c.path("escaped.dcm")) and not os.path.exists(os.path.join(c.root, "..", "escaped.dcm")),
          "a file was made from the path-like UID")


def test(c):
    c.env["TCP_NODELAY"] = "1"
    c.start_daemon("ws1", "file")
    conflicts(c, "ws1", None, "sqlite")
    gw = Gateway(c, "ws1", "gateway-uids")
    uids(c, gw)
    check_equal(gw.proc.stop(), 0, "the gateway's exit status after SIGTERM")
    try:
        url = start_postgresql(c, ["dicom"])["dicom"]
    except TestSkipped as e:
        step(f"PostgreSQL checks skipped: {e}")
        return
    c.start_daemon("pg1", "file")
    conflicts(c, "pg1", url, "postgresql")


if __name__ == "__main__":
    harness.main(test)
