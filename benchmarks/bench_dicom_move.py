#!/usr/bin/env python3
"""C-MOVE of a study from blob-dicomd to DCMTK's storescp against storescu
sending the same files to the same storescp (`make bench-dicom-move`),
reported, never asserted (docs/DICOM.md, "Figures").

A study of --slices CT slices (512x512, 16 bit: 0.5 MiB each, made with
pydicom by tests/tools/dicom_objects.py) is stored once in blob-dicomd (a
file store, the SQLite index). Then, --runs times each, alternately: storescu
sends the files to storescp, and movescu asks blob-dicomd to move the study
to that storescp (a --destination): the instances are pulled from the store
(verified) and sent on the gateway's own association. Same storescp
(--bit-preserving --max-pdu 131072, its output directory emptied before each
run), same host and disk, TCP_NODELAY=1 in every process's environment
(DCMTK's receivers leave Nagle on otherwise). Timed: the storescu and
movescu processes, association set-up included. The issue's target: C-MOVE
throughput >= 0.8 x storescu's.

Prints and writes --out/summary.json."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import harness  # noqa: E402
from harness.dicom import AE, Gateway, make_objects  # noqa: E402

STORESCP_OPTIONS = ["--bit-preserving", "--max-pdu", "131072"]


def timed(c, argv):
    started = time.monotonic()
    code, _, err = c.run(argv, timeout=600)
    seconds = time.monotonic() - started
    if code != 0 or "Failed" in err or "Refused" in err:
        raise harness.TestFailure(f"{argv[0]} exited {code}: {err[-2000:]}")
    return seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build tree")
    ap.add_argument("--out", required=True, help="directory for summary.json")
    ap.add_argument("--slices", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    os.environ["BS_BUILDDIR"] = os.path.abspath(args.build)
    os.makedirs(args.out, exist_ok=True)
    c = harness.Cluster("bench-dicom-move")
    c.env["TCP_NODELAY"] = "1"
    try:
        c.start_naming()
        study_dir = c.path("study")
        study = make_objects(c, "study", study_dir, str(args.slices), "BENCH", "20261128", "CT", "512")
        total = sum(os.path.getsize(e["path"]) for e in study)
        received = c.path("storescp-out")
        os.makedirs(received)
        port = harness.free_port()
        scp = c.spawn("storescp", ["storescp", *STORESCP_OPTIONS, "-aet", "STORESCP", "-od", received, str(port)],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        harness.wait_for(lambda: c.run(["echoscu", "-aec", "STORESCP", "127.0.0.1", str(port)], timeout=30)[0] == 0,
                         30, "storescp answering C-ECHO")
        c.start_daemon("ws1", "file")
        gw = Gateway(c, "ws1", "gateway", extra=["--destination", f"STORESCP=127.0.0.1:{port}"])
        timed(c, ["storescu", "-aet", "MODALITY", "-aec", AE, "127.0.0.1", str(gw.port), "+sd", study_dir])
        storescu = ["storescu", "-aet", "MODALITY", "-aec", "STORESCP", "127.0.0.1", str(port), "+sd", study_dir]
        movescu = ["movescu", "-S", "-aet", "VIEWER", "-aec", AE, "-aem", "STORESCP", "-k", "QueryRetrieveLevel=STUDY",
                   "-k", f"StudyInstanceUID={study[0]['study']}", "127.0.0.1", str(gw.port)]
        times = {"storescu": [], "c-move": []}
        for _ in range(args.runs):
            for kind, argv in (("storescu", storescu), ("c-move", movescu)):
                shutil.rmtree(received)
                os.makedirs(received)
                times[kind].append(timed(c, argv))
                if len(os.listdir(received)) != args.slices:
                    raise harness.TestFailure(f"{kind}: storescp wrote {len(os.listdir(received))} files, "
                                              f"not {args.slices}")
        scp.stop()
        shutil.copy(gw.err, os.path.join(args.out, os.path.basename(gw.err)))
    finally:
        c.close()
    medians = {k: statistics.median(v) for k, v in times.items()}
    summary = {"slices": args.slices, "bytes": total, "runs": args.runs, "storescp_options": " ".join(STORESCP_OPTIONS),
               "storescu_s": times["storescu"], "move_s": times["c-move"],
               "storescu_median_s": medians["storescu"], "move_median_s": medians["c-move"],
               "storescu_MBps": total / medians["storescu"] / 1e6, "move_MBps": total / medians["c-move"] / 1e6,
               "ratio": medians["storescu"] / medians["c-move"]}
    print(f"C-MOVE of {args.slices} slices ({total / 2**20:.1f} MiB) to storescp, median of {args.runs}: storescu "
          f"{summary['storescu_median_s']:.3f} s ({summary['storescu_MBps']:.1f} MB/s), C-MOVE from blob-dicomd "
          f"{summary['move_median_s']:.3f} s ({summary['move_MBps']:.1f} MB/s): C-MOVE/storescu throughput "
          f"{summary['ratio']:.2f} (target >= 0.8); runs storescu {['%.3f' % t for t in times['storescu']]}, "
          f"C-MOVE {['%.3f' % t for t in times['c-move']]}", flush=True)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
