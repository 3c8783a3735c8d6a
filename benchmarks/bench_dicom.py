#!/usr/bin/env python3
"""The DICOM gateway and the study index (`make bench-dicom`), reported,
never asserted (docs/DICOM.md, "Figures").

1. Ingest: a study of --slices CT slices (512x512, 16 bit: 0.5 MiB each,
   made with pydicom by tests/tools/dicom_objects.py) sent by storescu, with
   one association and then with --associations (4) at once (the study split
   among them), to each receiver in turn, --runs times: DCMTK's own storescp
   writing to a directory (never syncs), blob-dicomd pushing to a file store
   (durable, verified commit per instance; and indexing), blob-dicomd on a
   store with --no-sync, and Orthanc (Debian's, its default storage: one
   fdatasync per instance; skipped when not installed, --peers none). Same
   storescu options, same receive options (storescp --bit-preserving
   --max-pdu 131072, as the gateway receives), same host and disk,
   TCP_NODELAY=1 for all. What a receiver stored is removed before each
   send. Each gateway has a Naming Service of its own (it would otherwise
   index the other's instances too). Timed: the storescu processes; the
   gateways' log lines split each instance into header, push, answer and
   index. Goals (issue: ingest at the disk's pace): blob-dicomd >= 0.6 x
   storescp's throughput with one association, >= 0.8 x with four, and
   >= 2 x Orthanc's. The same run also times the disk's floor for a durable
   answer per instance (each file written, fdatasync, renamed, its
   directory fsync'd, in sequence). --baseline-gateway PROGRAM adds another
   build's blob-dicomd (on a durable store of its own) to the receivers,
   interleaved with them: a before/after of the gateway in one invocation;
   --baseline-daemon PROGRAM runs that receiver's store on another build's
   blobstored (with this build's gateway unless --baseline-gateway too): a
   before/after of the store's commit.
2. Query: an index of --instances instances (--patients patients, one study
   each; rows written straight into the schema blob-dicomd created), then
   --samples runs of `blob find --level study PatientID=...` for random
   patients: the whole process's wall time, and the time blob itself logs
   for opening the index and querying it; then the same on PostgreSQL (a
   server the benchmark starts; skipped without Debian's postgresql).
   Target: median <= 5 ms.

Prints and writes --out/summary.json."""

import argparse
import concurrent.futures
import csv
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import harness  # noqa: E402
from harness.dicom import AE, Gateway, make_objects, start_postgresql  # noqa: E402
from harness.orthanc import AET as ORTHANC_AET, Orthanc  # noqa: E402


# storescp with the gateway's receive: bit-preserving into a file, the same largest PDU (blob-dicomd's
# --max-pdu default); storescu sends with its defaults to both.
STORESCP_OPTIONS = ["--bit-preserving", "--max-pdu", "131072"]


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def storescu(c, port, directory, aec=AE):
    argv = ["storescu", "-aet", "MODALITY", "-aec", aec, "127.0.0.1", str(port), "+sd", directory]
    started = time.monotonic()
    code, _, err = c.run(argv, timeout=600)
    seconds = time.monotonic() - started
    if code != 0:
        raise harness.TestFailure(f"storescu to {aec} exited {code}: {err[-2000:]}")
    return seconds


def storescu_parallel(c, port, directories, aec=AE):
    """Seconds for one storescu association per directory, all at once, until the last has ended."""
    started = time.monotonic()
    procs = [subprocess.Popen(["storescu", "-aet", "MODALITY", "-aec", aec, "127.0.0.1", str(port), "+sd", d],
                              env=c.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for d in directories]
    failures = []
    for p, d in zip(procs, directories):
        try:
            _, err = p.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        if p.returncode != 0:
            failures.append(f"storescu +sd {d} to {aec} exited {p.returncode}: {err[-1000:]}")
    seconds = time.monotonic() - started
    if failures:
        raise harness.TestFailure("; ".join(failures))
    return seconds


def log_seconds(log, marker):
    """The durations of the gateway's log lines with `marker`: "... in 0.004 s" (the library's push line) or
    "(N bytes, 0.011 s" (the instance's line)."""
    out = []
    for line in log.splitlines():
        if marker not in line:
            continue
        if marker == "pushed ":
            out.append(float(line.split(" bytes in ")[1].split(" s")[0]))
        else:
            out.append(float(line.split(" bytes, ")[1].split(" s")[0]))
    return out or [0.0]


def instance_split(log):
    """Medians (ms) of the header, push, answer (the C-STORE response) and index parts of the gateway's
    per-instance lines; the index is written after the answer."""
    parts = {"header": [], "push": [], "answer": [], "index": []}
    for line in log.splitlines():
        if "stored as " not in line or ": header " not in line:
            continue
        tail = line.split(": header ")[1]
        parts["header"].append(float(tail.split(" ms")[0]))
        for part in ("push", "answer", "index"):
            parts[part].append(float(tail.split(part + " ")[1].split(" ms")[0]))
    return {k: statistics.median(v) if v else 0.0 for k, v in parts.items()}


def durable_floor(study_dir, out_dir):
    """Seconds to write the study's files the way a store acknowledges each durably: written, fdatasync, renamed
    into place, the directory fsync'd, one after the other; the disk's cost of a durable answer per instance,
    beside storescp (which never syncs)."""
    os.makedirs(out_dir, exist_ok=True)
    started = time.monotonic()
    directory = os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in sorted(os.listdir(study_dir)):
            with open(os.path.join(study_dir, name), "rb") as f:
                data = f.read()
            temporary = os.path.join(out_dir, "." + name + ".part")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
                os.fdatasync(fd)
            finally:
                os.close(fd)
            os.rename(temporary, os.path.join(out_dir, name))
            os.fsync(directory)
    finally:
        os.close(directory)
    seconds = time.monotonic() - started
    shutil.rmtree(out_dir)
    return seconds


def split_study(study_dir, out_dir, parts):
    """The study's files in `parts` directories (round robin, hard links): one per association."""
    dirs = [os.path.join(out_dir, f"part{i}") for i in range(parts)]
    for d in dirs:
        os.makedirs(d, exist_ok=True)
    for n, name in enumerate(sorted(os.listdir(study_dir))):
        os.link(os.path.join(study_dir, name), os.path.join(dirs[n % parts], name))
    return dirs


def goal_row(name, value, goal, met, detail=""):
    return {"goal": name, "value": round(value, 3), "target": goal, "met": bool(met), "detail": detail}


def ingest(c, args):
    study_dir = c.path("study")
    make_objects(c, "study", study_dir, str(args.slices), "BENCH", "20261126", "CT", "512")
    total = sum(os.path.getsize(os.path.join(study_dir, f)) for f in os.listdir(study_dir))
    parts = split_study(study_dir, c.path("study-split"), args.associations)
    # Each gateway with a Naming Service of its own: a gateway indexes what
    # any store it knows commits, and the other's ingest would load it.
    naming = {}
    c.start_daemon("ingest", "file")
    gw = Gateway(c, "ingest", "gateway")
    naming["ingest"] = c.naming
    c.start_naming()
    c.start_daemon("nosync", "file", extra=("--no-sync",))
    fast = Gateway(c, "nosync", "gateway-nosync")
    naming["nosync"] = c.naming
    baseline = None
    if args.baseline_gateway or args.baseline_daemon:
        # Another build's gateway and/or blobstored on a durable store of its own, interleaved with this one's.
        c.start_naming()
        c.start_daemon("baseline", "file", binary=args.baseline_daemon)
        baseline = Gateway(c, "baseline", "gateway-baseline", binary=args.baseline_gateway)
        naming["baseline"] = c.naming
    port = harness.free_port()
    # The gateway's receive options: the data set written as it comes
    # (bit-preserving) into a file, PDUs of up to 128 KiB.
    scp = c.spawn("storescp", ["storescp", *STORESCP_OPTIONS, "-aet", AE, "-od", c.path("storescp-out"), str(port)],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.makedirs(c.path("storescp-out"), exist_ok=True)
    harness.wait_for(lambda: c.run(["echoscu", "-aec", AE, "127.0.0.1", str(port)], timeout=30)[0] == 0, 30,
                     "storescp answering C-ECHO")
    orthanc, orthanc_skipped = None, "--peers none"
    if "orthanc" in args.peers:
        try:
            orthanc = Orthanc(c, senders=["MODALITY"])  # default storage: one fdatasync per instance
        except harness.TestSkipped as e:
            orthanc_skipped = str(e)
            print(f"Orthanc skipped: {e}", flush=True)
    receivers = {"storescp": (port, AE), "blob-dicomd": (gw.port, AE), "blob-dicomd-nosync": (fast.port, AE)}
    if baseline:
        receivers["blob-dicomd-baseline"] = (baseline.port, AE)
    if orthanc:
        receivers["orthanc"] = (orthanc.dicom_port, ORTHANC_AET)

    def reset(name):
        """What a receiver stored would make the next run a resend (no second copy): removed first."""
        if name == "storescp":
            shutil.rmtree(c.path("storescp-out"))
            os.makedirs(c.path("storescp-out"))
        elif name == "orthanc":
            for study in orthanc.get("/studies"):
                orthanc.request("DELETE", f"/studies/{study}")
        else:
            store = {"blob-dicomd": "ingest", "blob-dicomd-nosync": "nosync", "blob-dicomd-baseline": "baseline"}[name]
            names = [e["name"] for e in c.blob("ls", store=store, naming=naming[store]).ok()["blobs"]]
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                for r in pool.map(lambda n: c.blob("rm", n, store=store, naming=naming[store]), names):
                    r.ok()

    modes = {1: lambda p, aec: storescu(c, p, study_dir, aec),
             args.associations: lambda p, aec: storescu_parallel(c, p, parts, aec)}
    times = {(name, n): [] for name in receivers for n in modes}
    times.update({("durable-floor", 1): []})
    for run in range(args.runs):
        for n, send in modes.items():
            for name, (p, aec) in receivers.items():
                reset(name)
                times[(name, n)].append(send(p, aec))
        times[("durable-floor", 1)].append(durable_floor(study_dir, c.path("durable-floor")))
    for name in receivers:
        reset(name)
    scp.stop()
    if orthanc:
        orthanc.stop()
    for g in (gw, fast, *([baseline] if baseline else [])):  # per instance: header, push and index times
        shutil.copy(g.err, os.path.join(args.out, os.path.basename(g.err)))
    med = {k: statistics.median(v) for k, v in times.items()}
    a = args.associations
    row = {"slices": args.slices, "bytes": total, "runs": args.runs, "associations": a,
           "storescp_options": " ".join(STORESCP_OPTIONS),
           "samples_s": {f"{name}/{n}": v for (name, n), v in times.items()},
           "median_s": {f"{name}/{n}": v for (name, n), v in med.items()},
           # Back-compatible keys (one association).
           "storescp_median_s": med[("storescp", 1)], "gateway_median_s": med[("blob-dicomd", 1)],
           "gateway_nosync_median_s": med[("blob-dicomd-nosync", 1)],
           "durable_floor_median_s": med[("durable-floor", 1)],
           "ratio": med[("storescp", 1)] / med[("blob-dicomd", 1)],
           "ratio_parallel": med[("storescp", a)] / med[("blob-dicomd", a)],
           "ratio_nosync": med[("storescp", 1)] / med[("blob-dicomd-nosync", 1)],
           "ratio_durable": (med[("storescp", 1)] + med[("durable-floor", 1)]) / med[("blob-dicomd", 1)],
           "gateway_push_median_s": statistics.median(log_seconds(gw.log(), "pushed ")),
           "gateway_instance_median_s": statistics.median(log_seconds(gw.log(), "stored as ")),
           "gateway_split_ms": instance_split(gw.log()), "gateway_nosync_split_ms": instance_split(fast.log())}
    if baseline:
        row["baseline_gateway"] = args.baseline_gateway
        row["baseline_daemon"] = args.baseline_daemon
        for n in modes:
            row[f"ratio_baseline_{n}"] = med[("storescp", n)] / med[("blob-dicomd-baseline", n)]
            row[f"speedup_over_baseline_{n}"] = med[("blob-dicomd-baseline", n)] / med[("blob-dicomd", n)]
        row["gateway_baseline_split_ms"] = instance_split(baseline.log())
    goals = [goal_row("ingest, 1 association: blob-dicomd / storescp throughput", row["ratio"], ">= 0.6",
                      row["ratio"] >= 0.6),
             goal_row(f"ingest, {a} associations: blob-dicomd / storescp throughput", row["ratio_parallel"],
                      ">= 0.8", row["ratio_parallel"] >= 0.8)]
    if orthanc:
        for n in modes:
            r = med[("orthanc", n)] / med[("blob-dicomd", n)]
            row[f"ratio_orthanc_{n}"] = r
            goals.append(goal_row(f"ingest, {n} association(s): blob-dicomd / Orthanc (durable) throughput", r,
                                  ">= 2", r >= 2))
    else:
        goals.append(goal_row("ingest: blob-dicomd / Orthanc throughput", 0.0, ">= 2", False,
                              f"not measured: Orthanc skipped: {orthanc_skipped}"))
    row["goals"] = goals
    for n in modes:
        figures = ", ".join(f"{name} {med[(name, n)]:.3f} s ({total / med[(name, n)] / 1e6:.0f} MB/s)"
                            for name in receivers)
        print(f"ingest of {args.slices} slices ({total / 2**20:.1f} MiB), {n} association(s), median of "
              f"{args.runs}: {figures}", flush=True)
    print(f"the disk's durable floor (each file written, fdatasync, renamed, its directory fsync'd, in sequence) "
          f"{med[('durable-floor', 1)]:.3f} s; per instance in the gateway: push (durable, verified) median "
          f"{row['gateway_push_median_s'] * 1000:.1f} ms of {row['gateway_instance_median_s'] * 1000:.1f} ms; "
          f"split (header/push/answer/index, ms) {'/'.join(f'{v:.1f}' for v in row['gateway_split_ms'].values())}, "
          f"--no-sync {'/'.join(f'{v:.1f}' for v in row['gateway_nosync_split_ms'].values())}", flush=True)
    if baseline:
        print("the baseline (gateway " + (args.baseline_gateway or "this build's") + ", blobstored " +
              (args.baseline_daemon or "this build's") + "), interleaved: " + ", ".join(
            f"{n} association(s) {row[f'ratio_baseline_{n}']:.2f} x storescp, this build "
            f"{row[f'speedup_over_baseline_{n}']:.2f} x its throughput" for n in modes) +
            f"; split {'/'.join(f'{v:.1f}' for v in row['gateway_baseline_split_ms'].values())}", flush=True)
    for g in goals:
        print(f"goal: {g['goal']}: {g['value']:.2f} (target {g['target']}): {'met' if g['met'] else 'MISSED'}"
              f"{' (' + g['detail'] + ')' if g['detail'] else ''}", flush=True)
    return row, gw


def time_find(c, index, samples, patients, rng):
    """(whole process ms, query ms) of `samples` runs of blob find by a random PatientID."""
    wall, inside = [], []
    for _ in range(samples):
        patient = f"PAT{rng.randrange(patients):06d}"
        argv = [harness.program("clients/blob"), "-v", "find", "--index", index, "--level", "study",
                f"PatientID={patient}"]
        started = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        wall.append((time.monotonic() - started) * 1000)
        if r.returncode != 0 or patient not in r.stdout:
            raise harness.TestFailure(f"blob find {patient}: exit {r.returncode}: {r.stderr}")
        line = next(line for line in r.stderr.splitlines() if "find: 1 study match(es) in" in line)
        inside.append(float(line.split(" in ")[1].split(" ms")[0]))
    return wall, inside


def query_postgresql(c, args, rows, columns, rng):
    """The same index and queries on PostgreSQL (skipped without its server)."""
    try:
        url = start_postgresql(c, ["bench"])["bench"]
    except harness.TestSkipped as e:
        print(f"PostgreSQL skipped: {e}", flush=True)
        return None
    schema = Gateway(c, "nosync", "gateway-pg", index_url=url)  # a store of the current Naming Service  # creates the schema
    schema.proc.stop()
    csv_path = c.path("rows.csv")
    with open(csv_path, "w", newline="") as f:
        writer = csv.writer(f)
        for row in rows:
            writer.writerow(["\\N" if v is None else v for v in row])
    os.chmod(csv_path, 0o644)
    port = url.split(":")[2].split("/")[0]
    copy = (f"\\copy instances ({', '.join(chr(34) + k + chr(34) for k in columns)}) FROM '{csv_path}' "
            "WITH (FORMAT csv, NULL '\\N')")
    code, _, err = c.run(["psql", "-h", "127.0.0.1", "-p", port, "-U", "blob", "-d", "bench", "-q", "-v", "ON_ERROR_STOP=1", "-c", copy,
                          "-c", "ANALYZE instances"], timeout=600)
    if code != 0:
        raise harness.TestFailure(f"psql \\copy: {err}")
    wall, inside = time_find(c, url, args.samples, args.patients, rng)
    return {"process_median_ms": statistics.median(wall), "process_p90_ms": percentile(wall, 90),
            "query_median_ms": statistics.median(inside), "query_p90_ms": percentile(inside, 90)}


def query(c, args, gw):
    path = c.path("big.sqlite")
    db = sqlite3.connect(path)
    source = sqlite3.connect(gw.index)
    source.backup(db)  # the gateway's schema, its WAL included (its rows go below)
    source.close()
    table = list(db.execute("PRAGMA table_info(instances)"))
    columns = [r[1] for r in table]
    # Columns the benchmark does not fill (a newer schema's): NULL, or "" where the schema wants a value.
    unfilled = {r[1]: ("" if r[3] else None) for r in table}
    db.execute("DELETE FROM instances")
    per_patient = args.instances // args.patients
    rng = random.Random(16)
    rows = []
    for p in range(args.patients):
        study = f"1.2.826.0.1.3680043.10.16.{p}"
        for n in range(per_patient):
            values = {"PatientID": f"PAT{p:06d}", "PatientName": f"Doe^{p}", "PatientBirthDate": "19700101",
                      "StudyInstanceUID": study, "StudyDate": f"2026{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}",
                      "StudyTime": "101500", "AccessionNumber": f"ACC{p}", "StudyDescription": "Chest CT",
                      "SeriesInstanceUID": study + ".1", "Modality": "CT", "SeriesNumber": 1,
                      "SOPInstanceUID": f"{study}.1.{n}", "SOPClassUID": "1.2.840.10008.5.1.4.1.1.2",
                      "InstanceNumber": n + 1, "NumberOfFrames": None, "TransferSyntaxUID": "1.2.840.10008.1.2.1",
                      "blob": f"{study}.1.{n}.dcm", "store": "ws1", "size": 525000, "checksum": "crc32c:00000000",
                      "problem": ""}
            rows.append(tuple(values.get(k, unfilled[k]) for k in columns))
    db.executemany(f"INSERT INTO instances ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows)
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    index = f"sqlite:{path}"
    wall, inside = time_find(c, index, args.samples, args.patients, rng)
    row = {"instances": len(rows), "patients": args.patients, "samples": args.samples,
           "process_median_ms": statistics.median(wall), "process_p90_ms": percentile(wall, 90),
           "query_median_ms": statistics.median(inside), "query_p90_ms": percentile(inside, 90)}
    print(f"blob find by PatientID among {len(rows)} instances, {args.samples} runs: the query (index opened and "
          f"queried) median {row['query_median_ms']:.2f} ms, p90 {row['query_p90_ms']:.2f} ms; the whole blob "
          f"process median {row['process_median_ms']:.1f} ms, p90 {row['process_p90_ms']:.1f} ms (target: median "
          f"<= 5 ms)", flush=True)
    pg = query_postgresql(c, args, rows, columns, rng)
    if pg:
        row["postgresql"] = pg
        print(f"the same on PostgreSQL (local server, C locale): the query median {pg['query_median_ms']:.2f} ms, "
              f"p90 {pg['query_p90_ms']:.2f} ms; the whole process median {pg['process_median_ms']:.1f} ms",
              flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build tree")
    ap.add_argument("--out", required=True, help="directory for summary.json")
    ap.add_argument("--slices", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--associations", type=int, default=4,
                    help="concurrent storescu associations of the parallel ingest (the study split among them)")
    ap.add_argument("--peers", default="orthanc",
                    help="other receivers of the ingest besides storescp: orthanc, or none")
    ap.add_argument("--instances", type=int, default=100000)
    ap.add_argument("--patients", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--baseline-gateway", metavar="PROGRAM",
                    help="ingest: also another build's blob-dicomd (its build tree's gateway/blob-dicomd) on a "
                         "durable file store, interleaved with the others, for a before/after in one invocation")
    ap.add_argument("--baseline-daemon", metavar="PROGRAM",
                    help="ingest: the baseline receiver's store on another build's blobstored (its build tree's "
                         "blobstore/blobstored); with this build's gateway unless --baseline-gateway")
    ap.add_argument("--steps", default="ingest,find",
                    help="which parts to run, comma-separated: ingest (the gateway against storescp), find (the "
                         "queries; needs ingest's gateway index schema, so ingest runs with it)")
    args = ap.parse_args()
    steps = args.steps.split(",")
    unknown = [s for s in steps if s not in ("ingest", "find")]
    if unknown:
        ap.error(f"--steps: unknown {','.join(unknown)}; allowed: ingest,find")
    if args.peers not in ("orthanc", "none"):
        ap.error(f"--peers: unknown {args.peers}; allowed: orthanc, none")
    if args.baseline_gateway and not os.access(args.baseline_gateway, os.X_OK):
        ap.error(f"--baseline-gateway {args.baseline_gateway}: not an executable program; expected a build tree's "
                 "gateway/blob-dicomd")
    if args.baseline_daemon and not os.access(args.baseline_daemon, os.X_OK):
        ap.error(f"--baseline-daemon {args.baseline_daemon}: not an executable program; expected a build tree's "
                 "blobstore/blobstored")
    if not 1 <= args.associations <= 16:
        ap.error(f"--associations: {args.associations}; allowed: 1 to 16")
    os.environ["BS_BUILDDIR"] = os.path.abspath(args.build)
    os.makedirs(args.out, exist_ok=True)
    c = harness.Cluster("bench-dicom")
    c.env["TCP_NODELAY"] = "1"
    summary = {}
    try:
        c.start_naming()
        summary["ingest"], gw = ingest(c, args)
        if "find" in steps:
            summary["find"] = query(c, args, gw)
    finally:
        c.close()
        # What was measured, also when a later step failed.
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
