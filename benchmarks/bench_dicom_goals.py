#!/usr/bin/env python3
"""The goals table of `make bench-dicom`: reads the summaries its steps wrote
(bench_dicom.py's dicom/, bench_dicom_move.py's dicom-move/,
bench_dicom_orthanc.py's dicom-orthanc/ under --results), prints each figure
beside its goal, met or missed, and writes --results/dicom-goals.json. A step
that did not run or skipped its peer is reported as such (never as met).

Goals (docs/BENCHMARKS.md, "DICOM"): C-STORE ingest >= 0.6 x storescp with one
association, >= 0.8 x with several, >= 2 x Orthanc (durable by default); WADO-RS
retrieve of a 200-slice study >= 2 x Orthanc's DICOMweb plugin; one frame of
a 600-frame instance <= 5 ms; C-MOVE to storescp >= 0.8 x storescu."""

import argparse
import json
import os


def load(results, step):
    path = os.path.join(results, step, "summary.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"missing": f"{path}: {e}"}


def row(goal, value, target, met, detail=""):
    return {"goal": goal, "value": None if value is None else round(value, 3), "target": target, "met": bool(met),
            "detail": detail}


def goals(results):
    out = []
    dicom = load(results, "dicom")
    ingest = dicom.get("ingest")
    if ingest and "goals" in ingest:
        out += ingest["goals"]
    else:
        out.append(row("C-STORE ingest", None, "see bench_dicom.py", False,
                       dicom.get("missing", "no ingest figures in the summary")))
    move = load(results, "dicom-move")
    if "ratio" in move:
        detail = f"C-MOVE {move['move_median_s']:.3f} s, storescu {move['storescu_median_s']:.3f} s"
        if "round_ratio" in move:
            r = move["round_ratio"]
            detail += (f", median of {move['runs']} interleaved rounds; per round {r['min']:.2f}-{r['max']:.2f}, "
                       f"{move['rounds_meeting_target']} of {move['runs']} >= 0.8")
        out.append(row("C-MOVE of the study to storescp / storescu throughput", move["ratio"], ">= 0.8",
                       move["ratio"] >= 0.8, detail))
    else:
        out.append(row("C-MOVE / storescu", None, ">= 0.8", False, move.get("missing", "not measured")))
    web = load(results, "dicom-orthanc")
    if "study_retrieve" in web:
        r = web["study_retrieve"]
        out.append(row("WADO-RS study retrieve: blob-dicomd / Orthanc throughput", r["ratio"], ">= 2",
                       r["ratio"] >= 2, f"blob-dicomd {r['blob-dicomd']['median_s']:.3f} s, Orthanc "
                                        f"{r['orthanc']['median_s']:.3f} s"))
    else:
        out.append(row("WADO-RS study retrieve / Orthanc", None, ">= 2", False,
                       web.get("skipped", web.get("missing", "not measured"))))
    frame = web.get("frame", {}).get("large")
    if frame:
        ms = frame["blob-dicomd"]["median_ms"]
        out.append(row(f"one frame of the {web.get('frames', 600)}-frame instance, ms", ms, "<= 5", ms <= 5,
                       f"Orthanc {frame['orthanc']['median_ms']:.1f} ms"))
    else:
        out.append(row("one frame of a 600-frame instance, ms", None, "<= 5", False,
                       web.get("skipped", web.get("missing", "not measured"))))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", required=True, help="the directory holding dicom/, dicom-move/, dicom-orthanc/")
    args = ap.parse_args()
    table = goals(args.results)
    print("make bench-dicom: goals")
    print(f"| {'goal':<66} | {'value':>7} | {'target':<7} | met |")
    for g in table:
        value = "-" if g["value"] is None else f"{g['value']:.2f}"
        print(f"| {g['goal']:<66} | {value:>7} | {g['target']:<7} | {'yes' if g['met'] else 'NO'}"
              f"{' (' + g['detail'] + ')' if g['detail'] else ''} |")
    with open(os.path.join(args.results, "dicom-goals.json"), "w") as f:
        json.dump(table, f, indent=2)


if __name__ == "__main__":
    main()
