#!/usr/bin/env python3
"""study-stable events (docs/DICOM.md "study-stable", docs/CLI.md "Watching
events") with real omniNames, blobstored, blob-dicomd, DCMTK's storescu and
`blob watch` on 127.0.0.1:
- blob-dicomd --stable-after: values outside 0.001 to 86400 seconds, or not
  a duration, refused at start (exit 1) naming the option, the value and the
  range; a fractional value accepted;
- `blob watch --events` refuses an unknown kind naming the allowed ones, and
  study-stable when no gateway is registered or --gateway names another;
- an index file made before study-stable (no study_state table) is taken
  and migrated;
- a study sent in two batches, the second within --stable-after of the
  first, is published once, with its patient, accession, series and
  instance counts and its store, no sooner than --stable-after after its
  last instance (the timestamps of the event and of the commits, not
  sleeps); a watcher of committed and study-stable gets both kinds, one in
  text mode the same event as a line;
- a restart of the gateway publishes the study it left pending (sequence 1
  of the new gateway: nothing published before it) and none of those it
  had published."""

import os
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, program, step, wait_for  # noqa: E402
from harness.dicom import AE, Gateway, make_objects  # noqa: E402
from test_events import Watcher  # noqa: E402

STABLE_AFTER = 3.0  # s: a new watcher subscribes within it after the restart


def stable_events(events, study=None):
    return [e for e in events if e["event"] == "study-stable" and (study is None or e["study"] == study)]


def option_refusals(c):
    base = [program("gateway/blob-dicomd"), "--aetitle", AE, "--port", "0", "--store", "ws1",
            "--naming", c.naming, "--spool", c.root]
    step("--stable-after out of range or not a duration: exit 1 with the value and what is allowed")
    for value, expected in (("0", "out of range (allowed: 0.001 to 86400 seconds)"),
                            ("86401", "out of range (allowed: 0.001 to 86400 seconds)"),
                            ("0.0001", "out of range (allowed: 0.001 to 86400 seconds)"),
                            ("-1", "is not a duration"),
                            ("soon", "is not a duration")):
        code, _, err = c.run(base + ["--stable-after", value], timeout=60)
        check_equal(code, 1, f"exit code with --stable-after {value} ({err.strip()!r})")
        check(f'--stable-after: "{value}"' in err and expected in err,
              f"the refusal of --stable-after {value} does not name the value and the range: {err!r}")


def watch_refusals(c):
    blob = [program("clients/blob"), "--naming", c.naming, "watch"]
    step("blob watch --events with an unknown kind: exit 1 naming the allowed kinds")
    code, _, err = c.run(blob + ["--events", "study-stable,studystable"], timeout=60)
    check_equal(code, 1, f"exit code of an unknown kind ({err.strip()!r})")
    check('unknown event kind "studystable"' in err and "known: committed, removed, study-stable" in err,
          f"the refusal does not name the kind and the allowed ones: {err!r}")
    step("--gateway without --events study-stable: refused")
    code, _, err = c.run(blob + ["--gateway", AE], timeout=60)
    check_equal(code, 1, f"exit code of --gateway alone ({err.strip()!r})")
    check("--gateway applies to watch --events study-stable only" in err, f"the refusal: {err!r}")
    step("--events study-stable with no gateway registered: a clear error")
    code, _, err = c.run(blob + ["--events", "study-stable"], timeout=60)
    check(code == 26 and "no DICOM gateway is registered in the naming service" in err,
          f"exit {code}, expected 26 and the missing gateway named: {err!r}")


def test(c):
    c.start_daemon("ws1", "file")
    option_refusals(c)
    watch_refusals(c)

    step("--stable-after 0.5 accepted; its index, stripped of study_state, stands for an index of an older gateway")
    old = Gateway(c, "ws1", "old-gateway", extra=("--stable-after", "0.5"))
    old.echo()
    check(old.proc.running(), "blob-dicomd stopped")
    check_equal(old.proc.stop(), 0, "exit status of the first gateway after SIGTERM")
    with sqlite3.connect(old.index) as db:
        db.execute("DROP TABLE study_state")
    index_url = f"sqlite:{old.index}"

    gw = Gateway(c, "ws1", "gateway", extra=("--stable-after", str(STABLE_AFTER)), index_url=index_url)
    code, _, err = c.run([program("clients/blob"), "--naming", c.naming, "watch", "--events", "study-stable",
                          "--gateway", "NOSUCHAE"], timeout=60)
    check(code == 26 and 'no gateway "NOSUCHAE" is registered' in err and f"registered: {AE}" in err,
          f"exit {code}, expected 26, the unknown gateway and the registered ones named: {err!r}")

    stable = Watcher(c, "watch-stable", "--events", "study-stable")
    mixed = Watcher(c, "watch-mixed", "--events", "committed,study-stable", "--store", "ws1")
    text_out, text_err = c.path("watch-text.out"), c.path("watch-text.err")
    with open(text_out, "w") as out, open(text_err, "w") as err:
        text = c.spawn("watch-text", [program("clients/blob"), "--naming", c.naming, "watch", "--events",
                                      "study-stable", "--gateway", AE],
                       stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    text.log_paths.append(text_err)
    wait_for(lambda: "blob watch: watching gateway BLOBGW (study-stable)" in open(text_err).read()
             or not text.running(), 30, "the text watcher's subscription")
    check(text.running(), f"the text watcher exited: {open(text_err).read()!r}")

    a = make_objects(c, "study", c.path("a"), "3", "PATA", "20261115")
    step("study A: two instances, then the third within --stable-after: one event, after the third")
    gw.storescu(*[o["path"] for o in a[:2]])
    batch1_end = time.time_ns()
    gw.storescu(a[2]["path"])
    batch2_end = time.time_ns()
    check(batch2_end - batch1_end < STABLE_AFTER * 1e9 / 2,
          f"the second batch took {(batch2_end - batch1_end) / 1e9:.1f} s: not within --stable-after")
    commits = mixed.take(3)
    check(all(e["event"] == "committed" for e in commits), f"the commits first: {commits}")
    (event,) = stable.take(1, timeout=30)
    step(f"study A stable: {event}")
    check_equal(event["study"], a[0]["study"], "the study of the event")
    check_equal(event["gateway"], AE, "the gateway of the event")
    check_equal(event["sequence"], 1, "the sequence: the gateway's first publication (none after the first batch)")
    check_equal((event["patient_id"], event["accession_number"], event["series"], event["instances"]),
                ("PATA", "ACC-PATA", 1, 3), "patient, accession, series and instances")
    check_equal(event["stores"], ["ws1"], "the stores holding the study")
    last_commit = max(e["time_ns"] for e in commits)
    check(event["last_instance_ns"] >= last_commit,
          f"the last instance ({event['last_instance_ns']}) is indexed after the last commit ({last_commit})")
    quiet = (event["time_ns"] - event["last_instance_ns"]) / 1e9
    check(quiet >= STABLE_AFTER, f"published {quiet:.3f} s after the last instance, before --stable-after")
    check(quiet < STABLE_AFTER + 10, f"published {quiet:.3f} s after the last instance: late")
    (seen,) = mixed.take(1, timeout=30)
    check_equal((seen["event"], seen["study"], seen["sequence"]), ("study-stable", a[0]["study"], 1),
                "the mixed watcher's study-stable event")
    wait_for(lambda: f"study-stable {a[0]['study']} patient \"PATA\"" in open(text_out).read(), 10,
             "the text watcher's line")
    line = open(text_out).read().strip()
    check(f"{AE} #1 study-stable {a[0]['study']}" in line and "1 series, 3 instances in ws1" in line,
          f"the text line: {line!r}")
    wait_for(lambda: f"study {a[0]['study']} published" in gw.log(), 10, "the gateway's record of A")
    with sqlite3.connect(old.index) as db:
        (row,) = db.execute("SELECT last_instance_ns, stable_ns FROM study_state WHERE study = ?", (a[0]["study"],))
    check_equal(row[0], event["last_instance_ns"], "the last instance's time kept in the index")
    check(row[1] is not None and row[1] >= event["time_ns"], f"A recorded as published in the index: {row}")

    step("study C sent, the gateway stopped before --stable-after: C left pending")
    cc = make_objects(c, "study", c.path("c"), "2", "PATC", "20261116")
    gw.storescu(*[o["path"] for o in cc])
    sent = time.time_ns()
    check_equal(gw.proc.stop(), 0, "exit status of the gateway after SIGTERM")
    check((time.time_ns() - sent) / 1e9 < STABLE_AFTER, "the gateway stopped after --stable-after: C not pending")
    check(f"study {cc[0]['study']} published" not in gw.log(), "C was published before the stop")
    for w in (stable, mixed):
        w.end()
    text.stop()

    step("the gateway restarted on the same index: C published, A not again")
    gw2 = Gateway(c, "ws1", "gateway2", extra=("--stable-after", str(STABLE_AFTER)), index_url=index_url)
    again = Watcher(c, "watch-again", "--events", "study-stable")
    (event,) = again.take(1, timeout=30)
    step(f"after the restart: {event}")
    check_equal((event["study"], event["sequence"], event["patient_id"], event["instances"]),
                (cc[0]["study"], 1, "PATC", 2), "the pending study, the new gateway's first publication")
    check((event["time_ns"] - event["last_instance_ns"]) / 1e9 >= STABLE_AFTER, "C published before --stable-after")
    wait_for(lambda: f"study {cc[0]['study']} published" in gw2.log(), 10, "the gateway's record of C")
    log = gw2.log()
    check("1 studies pending from before the start" in log, "the restarted gateway did not take C as pending")
    check(f"study {a[0]['study']}" not in log, "the restarted gateway published A again")
    again.end()


if __name__ == "__main__":
    harness.main(test)
