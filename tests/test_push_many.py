#!/usr/bin/env python3
"""`blob push FILE...` pushes every FILE under its base name (it used to
store a.dcm's bytes under the name "b.dcm"), several in flight through the
series API; `--name NAME` names a single FILE and is refused with several.
One line per FILE on stderr, `{"pushes":[...]}` with --json (each the
single-push object plus `path`, or an error object with `path` and `name`);
a FILE that fails does not stop the others and the exit code is the highest
of the failures. Names are checked before anything is pushed (standard
input without --name, two FILEs of one base name). Options are never
abbreviated (`--nam`, `--stor`)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, step  # noqa: E402


def stat_checksum(c, name):
    return c.blob("stat", name, store="ws").ok()["checksum"]


def test(c):
    c.start_daemon("ws", "file")
    os.makedirs(c.path("study"))
    files = {}
    for i, size in enumerate((1000, 70000, 3 * harness.MiB + 5)):
        path = c.path("study", f"IM{i}.dcm")
        files[path] = harness.write_random(path, size)
    a, b, third = sorted(files)

    step("push a b: each under its base name, each with its own bytes")
    r = c.blob("push", a, b, store="ws").ok()
    pushes = r["pushes"]
    check_equal([(p["path"], p["name"], p["checksum"], p["store"]) for p in pushes],
                [(a, "IM0.dcm", files[a], "ws"), (b, "IM1.dcm", files[b], "ws")], "push --json: pushes")
    check_equal((stat_checksum(c, "IM0.dcm"), stat_checksum(c, "IM1.dcm")), (files[a], files[b]),
                "checksums of IM0.dcm and IM1.dcm as stored")
    check_equal(c.pull_checksum("IM1.dcm", "ws", c.path("back")), files[b], "IM1.dcm pulled back")

    step("a series of 24 files (text): one line per file in the given order, nothing on stdout")
    series = []
    for i in range(24):
        path = c.path("study", f"CT{i:02d}.dcm")
        files[path] = harness.write_random(path, 20000 + i)
        series.append(path)
    r = c.blob("push", *series, store="ws", json_out=False)
    r.ok()
    check_equal(r.stdout, "", "stdout of a text push")
    lines = [line for line in r.stderr.splitlines() if line.startswith("pushed ")]
    check_equal([line.split('"')[1] for line in lines], [f"CT{i:02d}.dcm" for i in range(24)],
                "the pushed lines, in the order of the FILEs")
    for path in (series[0], series[-1]):
        check_equal(stat_checksum(c, os.path.basename(path)), files[path], f"checksum of {path} as stored")

    step("failures do not stop the others; exit code: the highest failure")
    missing = c.path("study", "missing.dcm")
    r = c.blob("push", a, missing, third, store="ws")
    check_equal(r.code, EXIT["io_error"], "exit status (21 and 40 failed): " + r.describe())
    got = [(p["path"], p.get("error", {}).get("code", 0), p.get("name")) for p in r.json["pushes"]]
    check_equal(got, [(a, EXIT["already_exists"], "IM0.dcm"), (missing, EXIT["io_error"], "missing.dcm"),
                      (third, 0, "IM2.dcm")], "push --json with failures: pushes")
    check("already exists" in r.json["pushes"][0]["error"]["message"], r.describe())
    check(missing in r.json["pushes"][1]["error"]["message"], r.describe())
    check_equal(stat_checksum(c, "IM2.dcm"), files[third], "IM2.dcm stored despite the others' failures")
    r = c.blob("push", a, third, store="ws", json_out=False)
    check_equal(r.code, EXIT["already_exists"], "exit status of a text push of two existing Blobs")
    check_equal(r.stderr.count("blob: "), 2, "one error line per FILE: " + r.describe())
    r = c.blob("--replace", "push", a, third, store="ws").ok()
    check_equal(len(r["pushes"]), 2, "push --replace of two FILEs")

    step("--name: a single FILE")
    check_equal(c.blob("push", "--name", "CT.named", a, store="ws").ok()["checksum"], files[a], "push --name")
    check_equal(stat_checksum(c, "CT.named"), files[a], "checksum of CT.named")
    c.blob("push", "--name", "CT.x", a, b, store="ws").error(
        EXIT["usage"], "--name names one Blob: give a single FILE (without --name each of the 2 FILEs is stored "
                       "under its base name)")
    c.blob("push", "-", store="ws").error(EXIT["invalid_argument"], "push from standard input needs --name NAME")
    c.blob("push", a, "-", store="ws").error(EXIT["invalid_argument"], "push from standard input needs --name NAME")
    c.blob("push", "--size", "10", a, b, store="ws").error(EXIT["usage"], "--size applies to a single FILE")
    c.blob("pull", "--name", "x", "IM0.dcm", store="ws").error(EXIT["usage"], "--name applies to push only")

    step("names are checked before anything is pushed")
    os.makedirs(c.path("other"))
    twin = c.path("other", "NEW.dcm")
    harness.write_random(twin, 100)
    harness.write_random(c.path("study", "NEW.dcm"), 100)
    c.blob("push", c.path("study", "NEW.dcm"), twin, store="ws").error(
        EXIT["invalid_argument"], f'{c.path("study", "NEW.dcm")} and {twin} would both be stored as "NEW.dcm"')
    c.blob("stat", "NEW.dcm", store="ws").error(EXIT["no_such_blob"], '"NEW.dcm"')

    step("no abbreviations: --nam and --stor are refused")
    c.blob("push", "--nam", "CT.y", a, store="ws").error(EXIT["usage"], "unrecognised option '--nam'")
    c.blob("--stor", "ws", "ls").error(EXIT["usage"], "unrecognised option '--stor'")


if __name__ == "__main__":
    harness.main(test)
