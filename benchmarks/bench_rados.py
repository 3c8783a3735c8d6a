#!/usr/bin/env python3
"""RadosStore against the `rados` CLI on the same throwaway Ceph cluster, in
one invocation (`make bench-rados`; `make bench` runs it last).

Starts omniNames, a single-node Ceph cluster (tests/harness/ceph.py: one mon,
one mgr, one OSD on memstore or bluestore, 127.0.0.1), one pool, and
`blobstored --store rados:POOL`. For each size, `runs` rounds (after one
untimed round) of, in alternating order:

  push  `blob push --name N FILE`      against `rados put OBJ FILE`
  pull  `blob --no-local pull N OUT`   against `rados get OBJ OUT`

each timed as a whole process, from fork to exit (both programs connect to
the cluster or the Naming Service at start-up; `blob` is run as installed,
not through libtool's wrapper script). An object larger than the
OSD's osd_max_object_size (128 MiB) cannot be one RADOS object: its
reference is `rados --striper put/get` (libradosstriper, 4 MiB stripes), the
RadosStore's own layout being 4 MiB data objects too. Every pulled file is
compared with its source outside the timed interval.

With --baseline BUILD, a second daemon from that build (another checkout's
blobstored, e.g. main's) serves the same pool as store `bench-baseline`, and
each round also pushes and pulls through it (the same `blob` client, the
order rotating with the others): the ratio blob / baseline of throughputs
compares the two daemons in one run.

Writes --out/results.json (every run) and --out/summary.{json,md} (medians,
MB/s = 10^6 bytes/s, and the ratio blob / rados of throughputs: the issue's
target is >= 0.8). Exit status 0 when every byte was right, 1 otherwise;
Ceph missing: a message, `"skipped"` in summary.json, exit 0. Speed never
fails the run."""

import argparse
import filecmp
import json
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import harness  # noqa: E402
from harness import MiB  # noqa: E402
from harness.ceph import CephCluster, ceph_programs  # noqa: E402

POOL = "bench"
STORE = "bench-central"
BASELINE_STORE = "bench-baseline"
MAX_OBJECT = 128 * MiB  # osd_max_object_size, Ceph 16's default


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build tree (blobstore/blobstored, clients/blob)")
    ap.add_argument("--out", required=True, help="directory for results.json and summary.{json,md}")
    ap.add_argument("--sizes", default="32M,256M", help="Blob sizes, K/M suffixes (default 32M,256M)")
    ap.add_argument("--runs", type=int, default=10, help="timed rounds per size (default 10)")
    ap.add_argument("--objectstore", default="memstore", choices=("memstore", "bluestore"))
    ap.add_argument("--baseline", help="another build tree whose blobstored serves the pool too, for comparison")
    args = ap.parse_args()
    try:
        args.sizes = [parse_size(s) for s in args.sizes.split(",")]
    except ValueError as e:
        ap.error(f"--sizes: {e}")
    if args.runs < 1:
        ap.error(f"--runs: {args.runs}; allowed: 1 or more")
    return args


def parse_size(text):
    units = {"K": 1024, "M": MiB, "G": 1024 * MiB}
    digits, unit = (text[:-1], units[text[-1].upper()]) if text[-1:].upper() in units else (text, 1)
    if not digits.isdigit() or int(digits) == 0:
        raise ValueError(f"{text!r} is not a size (a positive number with an optional K, M or G)")
    return int(digits) * unit


def size_text(size):
    return f"{size // MiB} MiB" if size % MiB == 0 else f"{size} bytes"


def timed(run, argv, what):
    """Seconds from fork to exit of `argv` through `run` (a CompletedProcess
    or (code, out, err) returning callable), which must succeed."""
    t0 = time.monotonic()
    r = run(argv)
    seconds = time.monotonic() - t0
    code, err = (r.returncode, r.stderr) if hasattr(r, "returncode") else (r[0], r[2])
    harness.check(code == 0, f"{what}: `{' '.join(argv)}` exited {code}: {str(err).strip()[-500:]}")
    return seconds


def same(a, b, what):
    harness.check(filecmp.cmp(a, b, shallow=False), f"{what}: {b} differs from {a}")
    os.unlink(b)


def installed_like(c, relative):
    """The program itself rather than libtool's wrapper script in the build
    tree (a shell that sets the library path: 10 ms more per start than an
    installed `blob`, and the reference is an installed `rados`), with the
    build's libraries on the library path of `c`'s processes."""
    wrapper = harness.program(relative)
    real = os.path.join(os.path.dirname(wrapper), ".libs", os.path.basename(wrapper))
    if not os.access(real, os.X_OK):
        return wrapper  # linked statically or without a wrapper
    build = os.environ["BS_BUILDDIR"]
    libs = [os.path.join(build, d, ".libs") for d in ("common", "idl", "transporter", "clients")]
    c.env["LD_LIBRARY_PATH"] = ":".join(libs + [p for p in [c.env.get("LD_LIBRARY_PATH")] if p])
    return real


def rounds(c, ceph, size, runs, baseline):
    """[record] of `runs` timed rounds (plus an untimed first one); with
    `baseline`, the baseline daemon's too."""
    client = [installed_like(c, "clients/blob"), "--naming", c.naming, "-q", "--timeout", "600"]
    stores = {"blob": STORE, "baseline": BASELINE_STORE}
    rados = [ceph.programs["rados"], "-c", ceph.conf_path, "-p", POOL]
    striped = size > MAX_OBJECT
    if striped:
        rados.append("--striper")
    src, out = c.path("source.bin"), c.path("pulled.bin")
    harness.write_random(src, size, algorithm=None)
    obj = f"bench-rados.{size}"
    names = {"blob": f"bench.{size}", "baseline": f"bench-baseline.{size}"}
    programs = ("blob", "rados", "baseline") if baseline else ("blob", "rados")
    run_blob = lambda argv: c.run(argv, timeout=1800)  # noqa: E731
    run_rados = lambda argv: ceph.run(argv, timeout=1800)  # noqa: E731
    records = []
    for n in range(runs + 1):  # round 0: untimed (page cache, first objects, program start-up)
        order = programs[n % len(programs):] + programs[:n % len(programs)]
        for direction in ("push", "pull"):
            for program in order:
                if program != "rados":
                    blob = client + ["--store", stores[program]]
                    argv = blob + (["push", "--name", names[program], src] if direction == "push"
                                   else ["--no-local", "pull", names[program], out])
                    seconds = timed(run_blob, argv, f"{size_text(size)} {program} {direction}")
                else:
                    argv = rados + (["put", obj, src] if direction == "push" else ["get", obj, out])
                    seconds = timed(run_rados, argv, f"{size_text(size)} rados {direction}")
                if direction == "pull":
                    same(src, out, f"{size_text(size)} {program} pull")
                if n:
                    records.append({"program": program, "direction": direction, "blob_bytes": size, "run": n,
                                    "seconds": seconds, "reference": "rados --striper" if striped else "rados"})
        # untimed: the next round pushes anew (a push without --replace; rados put overwrites)
        for program in programs:
            if program != "rados":
                timed(run_blob, client + ["--store", stores[program], "rm", names[program]], f"{program} rm")
        timed(run_rados, rados + ["rm", obj], "rados rm")
    os.unlink(src)
    return records


def summarise(records):
    rows = []
    for size in sorted({r["blob_bytes"] for r in records}):
        for direction in ("push", "pull"):
            med = {}
            for program in ("blob", "rados", "baseline"):
                times = [r["seconds"] for r in records
                         if (r["blob_bytes"], r["direction"], r["program"]) == (size, direction, program)]
                if times:
                    med[program] = statistics.median(times)
            reference = next(r["reference"] for r in records if r["blob_bytes"] == size)
            rows.append({"blob_bytes": size, "direction": direction, "reference": reference,
                         "runs": sum(1 for r in records if (r["blob_bytes"], r["direction"], r["program"]) ==
                                     (size, direction, "blob")),
                         "blob_median_s": med["blob"], "rados_median_s": med["rados"],
                         "blob_MBps": size / med["blob"] / 1e6, "rados_MBps": size / med["rados"] / 1e6,
                         "ratio": med["rados"] / med["blob"], "target": 0.8,
                         "met": med["rados"] / med["blob"] >= 0.8})
            if "baseline" in med:
                rows[-1].update({"baseline_median_s": med["baseline"], "baseline_MBps": size / med["baseline"] / 1e6,
                                 "vs_baseline": med["baseline"] / med["blob"]})
    return rows


def markdown(rows, meta):
    lines = [f"RadosStore (`blob`) against `rados` on one Ceph cluster ({meta['objectstore']}, "
             f"Ceph ready in {meta['ceph_ready_s']:.1f} s), whole processes, medians of {meta['runs']} runs",
             "", "| size | direction | blob MB/s | reference | reference MB/s | blob / reference | >= 0.8 |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {size_text(r['blob_bytes'])} | {r['direction']} | {r['blob_MBps']:.0f} | `{r['reference']}` "
                     f"| {r['rados_MBps']:.0f} | {r['ratio']:.3f} | {'yes' if r['met'] else 'no'} |")
    if any("vs_baseline" in r for r in rows):
        lines += ["", f"Against the baseline daemon ({meta['baseline']}) on the same pool, same run:", "",
                  "| size | direction | blob MB/s | baseline MB/s | blob / baseline |", "|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {size_text(r['blob_bytes'])} | {r['direction']} | {r['blob_MBps']:.0f} "
                         f"| {r['baseline_MBps']:.0f} | {r['vs_baseline']:.3f} |")
    return "\n".join(lines) + "\n"


def write(out, name, data):
    with open(os.path.join(out, name), "w") as f:
        f.write(data if isinstance(data, str) else json.dumps(data, indent=1) + "\n")


def main():
    args = parse_args()
    os.environ["BS_BUILDDIR"] = os.path.abspath(args.build)
    os.makedirs(args.out, exist_ok=True)
    try:
        ceph_programs()
    except harness.TestSkipped as e:
        print(f"bench-rados: skipped: {e}", flush=True)
        write(args.out, "summary.json", {"skipped": str(e)})
        return 0
    c = harness.Cluster("bench-rados")
    ok = False
    try:
        c.start_naming()
        biggest = max(args.sizes)
        # memstore holds the objects in RAM: a Blob, its rados copy and a
        # replaced version's trash (and the baseline daemon's Blob and trash)
        room = (6 if args.baseline else 4) * biggest + 512 * MiB
        with CephCluster(c, objectstore=args.objectstore, memstore_bytes=room) as ceph:
            ceph.create_pool(POOL, pg_num=8)
            extra = ("--ceph-conf", ceph.conf_path, "--ceph-grace", "2")
            c.start_daemon(STORE, f"rados:{POOL}", extra=extra)
            if args.baseline:  # harness.program() looks in BS_BUILDDIR
                os.environ["BS_BUILDDIR"] = os.path.abspath(args.baseline)
                try:
                    c.start_daemon(BASELINE_STORE, f"rados:{POOL}", extra=extra)
                finally:
                    os.environ["BS_BUILDDIR"] = os.path.abspath(args.build)
            records = []
            for size in args.sizes:
                records += rounds(c, ceph, size, args.runs, bool(args.baseline))
            meta = {"objectstore": args.objectstore, "ceph_ready_s": ceph.ready_seconds, "runs": args.runs,
                    "sizes": args.sizes, "machine": os.uname().nodename,
                    "baseline": os.path.abspath(args.baseline) if args.baseline else None}
        rows = summarise(records)
        write(args.out, "results.json", {"config": meta, "results": records})
        write(args.out, "summary.json", {"config": meta, "rows": rows})
        text = markdown(rows, meta)
        write(args.out, "summary.md", text)
        print(text, flush=True)
        ok = True
    except harness.TestFailure as e:
        print(f"bench-rados: FAIL: {e}", flush=True)
        c.dump_logs()
    finally:
        c.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
