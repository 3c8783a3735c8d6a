#!/usr/bin/env python3
"""C-MOVE and Storage Commitment in blob-dicomd (docs/DICOM.md, "C-MOVE",
"Storage Commitment"), against peers nobody here wrote: DCMTK's movescu
moves a study, a series and a patient to DCMTK's storescp (a
--destination), and what storescp wrote holds the data set storescu sent,
bit for bit, also for a multi-frame instance over 8 MiB (through the spool,
not memory); an unknown destination is refused A801, one that does not
listen A702; pynetdicom as the move SCU sees a pending response after the
first sub-operation, then at most one per 50 ms, with the
remaining/completed/failed/warning counts so far, and cancels a move (FE00,
fewer completed than matched, the destination having received those and
no more, the batches pulled ahead dropped); a destination that
accepts implicit VR little endian only receives the instances converted,
their elements equal, also from JPEG-LS, RLE and deflated (decoded), while
one stored as JPEG 2000 (DCMTK has no decoder) fails alone (B000 with its
UID); so does an instance whose only store is down; C-GET converts the
same way for a requestor of implicit VR only. Storage Commitment from
pynetdicom: the N-EVENT-REPORT on the N-ACTION's association lists the
stored instances as committed and an unknown one as failed (0112); after a
release it comes on an association of its own to the requestor's
--destination. Bad --destination values are refused naming them. Real
omniNames, blobstored and blob-dicomd on 127.0.0.1."""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step, wait_for  # noqa: E402
from harness import processes  # noqa: E402
from harness.checks import program  # noqa: E402
from harness.dicom import AE, Gateway, data_set, make_objects, pynetdicom_python, tool  # noqa: E402
from harness.ports import free_port  # noqa: E402

CT_IMAGE = "1.2.840.10008.5.1.4.1.1.2"
IMPLICIT = "1.2.840.10008.1.2"


def start_storescp(c, directory):
    """DCMTK's storescp as STORESCP on a free port (it has no port 0 mode:
    a port taken meanwhile is tried again), bit-preserving (+B)."""
    os.makedirs(directory)
    for attempt in range(1, 4):
        port = free_port()
        err = c.path(f"storescp-{attempt}.err")
        with open(err, "wb") as f:
            proc = c.spawn("storescp", ["storescp", "-aet", "STORESCP", "+B", "-od", directory, str(port)],
                           stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
        proc.log_paths.append(err)
        echo = ["echoscu", "-aet", "PROBE", "-aec", "STORESCP", "127.0.0.1", str(port)]
        wait_for(lambda: not proc.running() or c.run(echo, timeout=10)[0] == 0, 30, "storescp answering C-ECHO")
        if proc.running():
            return port
        step(f"storescp could not listen on {port} (attempt {attempt} of 3)")
    raise harness.TestFailure("storescp did not start: " + open(err).read()[-2000:])


class Peer:
    """tests/tools/dicom_move_peer.py scp: a pynetdicom Storage SCP and Storage Commitment receiver."""

    def __init__(self, c, python, aetitle, syntax):
        self.c, self.dir = c, c.path(f"peer-{aetitle}")
        os.makedirs(self.dir)
        self.out = c.path(f"peer-{aetitle}.out")
        self.proc = processes.start_service(f"peer {aetitle}", [python, tool("dicom_move_peer.py"), "scp", aetitle,
                                                                self.dir, syntax],
                                            "dicom-move-peer ready", 60, env=c.env, out_path=self.out,
                                            err_path=c.path(f"peer-{aetitle}.err"), track=c.processes)
        self.port = int(self.proc.ready["port"])

    def lines(self):
        with open(self.out) as f:
            return [json.loads(line) for line in f if line.startswith("{")]


def peer_run(c, python, *args):
    code, out, err = c.run([python, tool("dicom_move_peer.py"), *args], timeout=120)
    check(code == 0, f"dicom_move_peer {args[0]} exited {code}: {err[-2000:]}")
    return [json.loads(line) for line in out.splitlines()]


def movescu(c, gw, destination, level, *keys):
    argv = ["movescu", "-v", "-S", "-aet", "VIEWER", "-aec", AE, "-aem", destination,
            "-k", f"QueryRetrieveLevel={level}"]
    for key in keys:
        argv += ["-k", key]
    return c.run(argv + ["127.0.0.1", str(gw.port)], timeout=120)


def check_received(directory, entries, what):
    """storescp's files (named MODALITY.SOP) hold the data sets that were sent."""
    present = os.listdir(directory)
    check_equal(len(present), len(entries), f"{what}: files storescp wrote")
    for entry in entries:
        name = next((p for p in present if p.endswith("." + entry["sop"])), None)
        check(name is not None, f"{what}: no file for instance {entry['sop']}")
        with open(os.path.join(directory, name), "rb") as f:
            got = f.read()
        with open(entry["path"], "rb") as f:
            sent = f.read()
        check(data_set(got) == data_set(sent), f"{what}: the data set of {entry['sop']} differs from the one sent")


def test(c):
    c.env["TCP_NODELAY"] = "1"
    python = pynetdicom_python()
    c.start_daemon("ws1", "file")
    c.start_daemon("ws2", "file")  # before the gateway, which watches it

    step("bad --destination values are refused naming them")
    for value, expected in [("STORESCP", "expected AET=HOST:PORT"),
                            ("SEVENTEEN-CHARS-X=h:104", "expected 1 to 16 characters"),
                            ("BACK\\SLASH=h:104", "no backslash"),
                            ("A=h:0", "port \"0\": expected 1 to 65535"),
                            ("A=h:65536", "port \"65536\": expected 1 to 65535"),
                            ("A=bad_host:104", "expected a host name or an IPv4 address"),
                            ("A=:104", "expected a host name or an IPv4 address")]:
        code, _, err = c.run([program("gateway/blob-dicomd"), "--aetitle", AE, "--port", "0", "--store", "ws1",
                              "--destination", value], timeout=30)
        check_equal(code, 1, f"exit code for --destination {value!r} ({err.strip()!r})")
        check(f"--destination \"{value}\"" in err and expected in err, f"--destination {value!r}: {err.strip()!r}")
    code, _, err = c.run([program("gateway/blob-dicomd"), "--aetitle", AE, "--port", "0", "--store", "ws1",
                          "--destination", "A=h:104", "--destination", "A =h2:105"], timeout=30)
    check(code == 1 and "AE title \"A\" is given twice" in err, f"a duplicate AE title: {code} {err.strip()!r}")

    step("destinations: storescp, a pynetdicom SCP of every uncompressed syntax, one of implicit VR only")
    storescp_dir = c.path("storescp")
    storescp_port = start_storescp(c, storescp_dir)
    peer = Peer(c, python, "PEERSCP", "any")
    implicit = Peer(c, python, "IMPLICIT", "implicit")
    config = c.path("gateway.conf")
    with open(config, "w") as f:  # the same key on several lines of the configuration file
        f.write(f"destination = PEERSCP=127.0.0.1:{peer.port}\ndestination = IMPLICIT=127.0.0.1:{implicit.port}\n"
                f"destination = MOVER=127.0.0.1:{peer.port}\ndestination = DOWN=127.0.0.1:{free_port()}\n")
    gw = Gateway(c, "ws1", "gateway", extra=["--destination", f"STORESCP=127.0.0.1:{storescp_port}",
                                             "--config", config])

    ct = make_objects(c, "study", c.path("ct"), "12", "PAT1", "20261115")
    mr = make_objects(c, "study", c.path("mr"), "3", "PAT1", "20261116", "MR")
    many = make_objects(c, "study", c.path("many"), "60", "PAT3", "20261117")
    gw.storescu("+sd", c.path("ct"), c.path("mr"), c.path("many"))

    step("movescu: study level to storescp, bit-exact data sets")
    code, out, err = movescu(c, gw, "STORESCP", "STUDY", f"StudyInstanceUID={ct[0]['study']}")
    check_equal(code, 0, f"movescu's exit code ({err[-2000:]!r})")
    check_received(storescp_dir, ct, "C-MOVE of the study")
    check(f"C-MOVE from VIEWER@127.0.0.1 to STORESCP: study level, 12 instances sent, 0 failed, 0 warnings"
          in gw.log(), "no log line of the C-MOVE")

    step("movescu: series level (Patient Root) to storescp")
    for name in os.listdir(storescp_dir):
        os.remove(os.path.join(storescp_dir, name))
    argv = ["movescu", "-v", "-P", "-aet", "VIEWER", "-aec", AE, "-aem", "STORESCP", "-k", "QueryRetrieveLevel=SERIES",
            "-k", "PatientID=PAT1", "-k", f"StudyInstanceUID={mr[0]['study']}",
            "-k", f"SeriesInstanceUID={mr[0]['series']}", "127.0.0.1", str(gw.port)]
    code, out, err = c.run(argv, timeout=120)
    check_equal(code, 0, f"movescu's exit code ({err[-2000:]!r})")
    check_received(storescp_dir, mr, "C-MOVE of the series")

    step("movescu: patient level, a multi-frame instance over 8 MiB (pulled through the spool, not memory)")
    for name in os.listdir(storescp_dir):
        os.remove(os.path.join(storescp_dir, name))
    big = make_objects(c, "multiframe", c.path("big.dcm"), "70")[0]
    gw.storescu(big["path"])
    code, out, err = c.run(["movescu", "-v", "-P", "-aet", "VIEWER", "-aec", AE, "-aem", "STORESCP",
                            "-k", "QueryRetrieveLevel=PATIENT", "-k", "PatientID=PAT2", "127.0.0.1", str(gw.port)],
                           timeout=120)
    check_equal(code, 0, f"movescu's exit code ({err[-2000:]!r})")
    check(os.path.getsize(big["path"]) > 8 << 20, "the multi-frame instance is over 8 MiB")
    check_received(storescp_dir, [big], "C-MOVE of the multi-frame instance")

    step("an unknown move destination: A801, nothing sent")
    responses = peer_run(c, python, "move", "127.0.0.1", str(gw.port), AE, "study", "STUDY", "NOWHERE",
                         f"StudyInstanceUID={ct[0]['study']}")
    check_equal([r["status"] for r in responses], [0xA801], "the responses to a move to NOWHERE")
    check("move destination \"NOWHERE\" unknown" in responses[0].get("comment", ""),
          f"the Error Comment: {responses[0]}")
    code, out, err = movescu(c, gw, "NOWHERE", "STUDY", f"StudyInstanceUID={ct[0]['study']}")
    check("Received Final Move Response (Refused: MoveDestinationUnknown)" in err,
          f"movescu's report of A801: {err[-2000:]!r}")

    step("a configured destination that does not listen: A702, the move refused, the reason logged")
    responses = peer_run(c, python, "move", "127.0.0.1", str(gw.port), AE, "study", "STUDY", "DOWN",
                         f"StudyInstanceUID={ct[0]['study']}")
    check_equal([(r["status"], r.get("comment")) for r in responses], [(0xA702, "cannot reach the move destination")],
                "the responses to a move to DOWN")
    check("C-MOVE from MOVER@127.0.0.1 to DOWN: refused (status A702): association to DOWN@127.0.0.1:" in gw.log(),
          "no log line of the unreachable destination")
    # The first instances are pulled while the association is negotiated: the
    # multi-frame one into a spool file, removed before the A702.
    responses = peer_run(c, python, "move", "127.0.0.1", str(gw.port), AE, "patient", "PATIENT", "DOWN",
                         "PatientID=PAT2")
    check_equal([r["status"] for r in responses], [0xA702], "the responses to a move of PAT2 to DOWN")
    spooled = [n for n in os.listdir(c.root) if n.startswith(f"blob-dicomd-{gw.proc.pid}-")]
    check_equal(spooled, [], "spool files left after the move to DOWN")

    step("pynetdicom: a pending response after the first sub-operation, then at most one per 50 ms, each with the "
         "counts so far, then Success")
    responses = peer_run(c, python, "move", "127.0.0.1", str(gw.port), AE, "study", "STUDY", "PEERSCP", "--times",
                         f"StudyInstanceUID={many[0]['study']}")
    n = len(many)
    elapsed = responses[-1].pop("t")
    pending = [{k: v for k, v in r.items() if k != "t"} for r in responses[:-1]]
    check_equal(responses[-1], {"status": 0, "completed": n, "failed": 0, "warning": 0}, "the final response")
    check(pending, f"no pending response: {responses}")
    check_equal(pending[0], {"status": 0xFF00, "remaining": n - 1, "completed": 1, "failed": 0, "warning": 0},
                "the first pending response")
    completed = [r["completed"] for r in pending]
    check(completed == sorted(set(completed)) and completed[-1] < n, f"pending counts not increasing: {pending}")
    for r in pending:
        check_equal(r, {"status": 0xFF00, "remaining": n - r["completed"], "completed": r["completed"], "failed": 0,
                        "warning": 0}, "a pending response")
    # The gateway sends them 50 ms apart at least, all within the move's time.
    check(len(pending) <= 1 + elapsed / 0.05, f"{len(pending)} pending responses in {elapsed:.3f} s: more than one "
          "per 50 ms")
    step(f"({len(pending)} pending responses for {n} instances in {elapsed:.3f} s)")
    stored = [line for line in peer.lines() if "stored" in line]
    check_equal(sorted(s["stored"] for s in stored), sorted(e["sop"] for e in many), "the instances PEERSCP received")
    check_equal({(s["ts"], s["originator"]) for s in stored}, {("1.2.840.10008.1.2.1", "MOVER")},
                "their transfer syntax (as stored) and Move Originator")

    step("C-CANCEL after the first pending response: FE00, fewer completed than matched")
    responses = peer_run(c, python, "move", "127.0.0.1", str(gw.port), AE, "study", "STUDY", "PEERSCP",
                         "--cancel-after", "1", f"StudyInstanceUID={many[0]['study']}")
    final = responses[-1]
    check_equal(final["status"], 0xFE00, f"the final status after C-CANCEL ({responses[-3:]})")
    check(final["completed"] < len(many), f"completed {final['completed']} of {len(many)} before the cancel")
    check_equal(final["completed"] + final["failed"] + final["warning"] + final["remaining"], len(many),
                f"the counts of the cancelled move {final}")
    check(f"C-MOVE from MOVER@127.0.0.1 to PEERSCP: cancelled after {final['completed']} of 60 instances" in gw.log(),
          "no log line of the cancel")
    # The batches pulled ahead are dropped: the destination got the completed
    # instances and no more (its association is released before FE00).
    many_sops = {e["sop"] for e in many}
    sent = [line["stored"] for line in peer.lines() if line.get("stored") in many_sops]
    check_equal(len(sent) - len(many), final["completed"], "instances of the cancelled move PEERSCP received")

    step("a destination of implicit VR little endian only: the instances converted, their elements equal")
    responses = peer_run(c, python, "move", "127.0.0.1", str(gw.port), AE, "study", "STUDY", "IMPLICIT",
                         f"StudyInstanceUID={mr[0]['study']}")
    check_equal(responses[-1], {"status": 0, "completed": 3, "failed": 0, "warning": 0}, "the final response")
    got = {line["stored"]: line["ts"] for line in implicit.lines() if "stored" in line}
    check_equal(got, {e["sop"]: IMPLICIT for e in mr}, "the instances IMPLICIT received and their syntax")
    for entry in mr:
        r = peer_run(c, python, "compare", entry["path"], os.path.join(implicit.dir, entry["sop"] + ".dcm"))[0]
        check(r["equal"] and r["ts"] == ["1.2.840.10008.1.2.1", IMPLICIT], f"instance {entry['sop']}: {r}")

    check_equal(len([line for line in peer.lines() if line.get("stored") in many_sops]) - len(many),
                final["completed"], "instances of the cancelled move PEERSCP received, a step later")

    step("C-GET from a requestor of implicit VR little endian only: converted by the same sub-operation")
    got_dir = c.path("get-implicit")
    os.makedirs(got_dir)
    lines = peer_run(c, python, "get", "127.0.0.1", str(gw.port), AE, got_dir, f"StudyInstanceUID={ct[0]['study']}")
    check_equal(sorted((line["stored"], line["ts"]) for line in lines if "stored" in line),
                sorted((e["sop"], IMPLICIT) for e in ct), "the instances C-GET delivered and their syntax")
    check_equal(lines[-1], {"status": 0, "completed": len(ct), "failed": 0}, "the final C-GET response")
    for entry in ct[:3]:
        r = peer_run(c, python, "compare", entry["path"], os.path.join(got_dir, entry["sop"] + ".dcm"))[0]
        check(r["equal"] and r["ts"][1] == IMPLICIT, f"instance {entry['sop']} by C-GET: {r}")

    step("C-GET of the 60-instance study: a pending response after the first sub-operation, then at most one per "
         "50 ms, as for C-MOVE")
    got_dir = c.path("get-many")
    os.makedirs(got_dir)
    lines = peer_run(c, python, "get", "127.0.0.1", str(gw.port), AE, got_dir, "--times",
                     f"StudyInstanceUID={many[0]['study']}")
    responses = [line for line in lines if "status" in line]
    n = len(many)
    elapsed = responses[-1].pop("t")
    check_equal(responses[-1], {"status": 0, "completed": n, "failed": 0}, "the final C-GET response")
    pending = [{k: v for k, v in r.items() if k != "t"} for r in responses[:-1]]
    check(pending, f"no pending C-GET response: {responses}")
    check_equal(pending[0], {"status": 0xFF00, "remaining": n - 1, "completed": 1, "failed": 0},
                "the first pending C-GET response")
    for r in pending:
        check_equal(r, {"status": 0xFF00, "remaining": n - r["completed"], "completed": r["completed"], "failed": 0},
                    "a pending C-GET response")
    check(len(pending) <= 1 + elapsed / 0.05, f"{len(pending)} pending C-GET responses in {elapsed:.3f} s: more "
          "than one per 50 ms")
    check_equal(sorted(line["stored"] for line in lines if "stored" in line), sorted(e["sop"] for e in many),
                "the instances the C-GET delivered")
    step(f"({len(pending)} pending responses for {n} instances in {elapsed:.3f} s)")

    step("stored JPEG-LS, RLE and deflated: decoded for the implicit-only destination; JPEG 2000 (no decoder): that "
         "one fails")
    coded = make_objects(c, "study", c.path("coded-src"), "4", "PAT4", "20261118")
    os.makedirs(c.path("coded"))
    for entry, argv, suffix in zip(coded, [["dcmcjpls"], ["dcmcrle"], None, ["dcmconv", "+td"]],
                                   ["jls", "rle", None, "deflated"]):
        if argv:
            code, _, err = c.run(argv + [entry["path"], c.path("coded", f"{entry['sop']}.{suffix}.dcm")])
            check_equal(code, 0, f"{argv[0]}'s exit code ({err!r})")
    j2k = peer_run(c, python, "fake-j2k", coded[2]["path"], c.path("coded", "j2k.dcm"))[0]
    for option, name in (("-xt", f"{coded[0]['sop']}.jls.dcm"), ("-xr", f"{coded[1]['sop']}.rle.dcm"),
                         ("-xv", "j2k.dcm"), ("-xd", f"{coded[3]['sop']}.deflated.dcm")):
        gw.storescu(option, c.path("coded", name))  # each proposed in its own transfer syntax
    responses = peer_run(c, python, "move", "127.0.0.1", str(gw.port), AE, "study", "STUDY", "IMPLICIT",
                         f"StudyInstanceUID={coded[0]['study']}")
    final = responses[-1]
    check_equal({k: v for k, v in final.items() if k != "comment"},
                {"status": 0xB000, "completed": 3, "failed": 1, "warning": 0, "failed_uids": [j2k["sop"]]},
                "the final response of the compressed study")
    check_equal(final.get("comment"), "no decoder for its transfer syntax 1.2.840.10008.1.2.4.90", "the Error Comment")
    for entry in (coded[0], coded[1], coded[3]):
        r = peer_run(c, python, "compare", entry["path"], os.path.join(implicit.dir, entry["sop"] + ".dcm"))[0]
        check(r["equal"] and r["ts"][1] == IMPLICIT, f"decoded instance {entry['sop']}: {r}")
    check(f"instance {j2k['sop']}: cannot convert from 1.2.840.10008.1.2.4.90 to {IMPLICIT}" in gw.log(),
          "no log line naming the instance that could not be converted")

    step("an instance whose only copy is in a store that is down: that sub-operation fails alone (B000 naming it)")
    index = f"sqlite:{gw.index}"
    c.blob("push", "--name", "only.dcm", mr[1]["path"], store="ws2").ok()
    c.blob("rm", mr[1]["sop"] + ".dcm", store="ws1").ok()

    def stores_of_mr1():
        matches = c.blob("find", "--index", index, "--level", "instance", f"SOPInstanceUID={mr[1]['sop']}").ok()
        return [m["stores"] for m in matches["matches"]]
    wait_for(lambda: stores_of_mr1() == ["ws2"], 30, "the index listing the copy in ws2 only")
    next(p for p in c.processes if p.name.startswith("blobstored ws2")).stop()
    responses = peer_run(c, python, "move", "127.0.0.1", str(gw.port), AE, "study", "STUDY", "PEERSCP",
                         f"StudyInstanceUID={mr[0]['study']}")
    final = responses[-1]
    check_equal({k: v for k, v in final.items() if k != "comment"},
                {"status": 0xB000, "completed": 2, "failed": 1, "warning": 0, "failed_uids": [mr[1]["sop"]]},
                "the final response without one instance")
    check(f"C-MOVE from MOVER@127.0.0.1 to PEERSCP: instance {mr[1]['sop']}: pulling Blob only.dcm" in gw.log(),
          "no log line naming the failed sub-operation")

    step("Storage Commitment: the report on the same association, the unknown instance failed (0112)")
    unknown = "1.2.826.0.1.3680043.99.1"
    refs = [f"{CT_IMAGE}:{e['sop']}" for e in ct[:3]] + [f"{CT_IMAGE}:{unknown}"]
    lines = peer_run(c, python, "commit", "127.0.0.1", str(gw.port), AE, "wait", *refs)
    check_equal(lines[0]["action"], 0, "the N-ACTION's status")
    check_equal(lines[1], {"event": 2, "transaction": lines[0]["transaction"],
                           "committed": [e["sop"] for e in ct[:3]], "failed": [[unknown, 0x0112]]},
                "the N-EVENT-REPORT")
    check(f"transaction {lines[0]['transaction']}: 3 committed, 1 failed, reported on the same association"
          in gw.log(), "no log line of the commitment")

    step("Storage Commitment after a release: the report on an association of its own to MOVER's destination")
    refs = [f"{CT_IMAGE}:{e['sop']}" for e in many[:30]]
    lines = peer_run(c, python, "commit", "127.0.0.1", str(gw.port), AE, "release", *refs)
    check_equal(lines[0]["action"], 0, "the N-ACTION's status")
    transaction = lines[0]["transaction"]
    wait_for(lambda: any(line.get("transaction") == transaction for line in peer.lines()), 30,
             "the N-EVENT-REPORT at MOVER's destination")
    report = next(line for line in peer.lines() if line.get("transaction") == transaction)
    check_equal(report, {"event": 1, "transaction": transaction, "committed": [e["sop"] for e in many[:30]],
                         "failed": []}, "the N-EVENT-REPORT on an association of its own")
    check(f"transaction {transaction}: reported to MOVER@127.0.0.1:{peer.port} on an association of its own"
          in gw.log(), "no log line of the report's own association")


if __name__ == "__main__":
    harness.main(test)
