#!/usr/bin/env python3
"""Same-host pulls against TCP for one FileStore Blob, in one invocation (the
machine is shared and noisy: the ratio is what counts, docs/BENCHMARKS.md).

Starts a private omniNames and a blobstored with a FileStore on 127.0.0.1,
then, --runs times each, alternately:
  file:   `blob pull NAME FILE` with and without --no-local (process wall
          time: both include the same start-up and control-plane calls; the
          CLI's temporary file + rename, SHA-256 verify on);
  memory: `bsbench --variant blobstreaming --direction pull` into a caller
          buffer with and without --local-fast-path (bsbench's timed runs).
Prints the medians and the ratio same-host / TCP (below 1: same-host is
faster) and, with --json, one JSON object.

  BS_BUILDDIR=_build python3 benchmarks/local_pull.py [--size 256M] [--runs 5]
(bsbench is built by `make benchmarks/bsbench`.) `make bench` runs the same
measurement as one of its steps (bench_cli.py)."""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import harness  # noqa: E402
from harness import check, step  # noqa: E402


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:].upper() in units:
        return int(text[:-1]) * units[text[-1:].upper()]
    return int(text)


def cpu_of_children():
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def time_file_pulls(c, name, store, runs):
    """Wall time of each `blob pull` process, its `seconds` (the transfer as
    the library timed it) and its CPU time (user + system: what a loaded
    machine does not hide)."""
    times = {"tcp": [], "local": [], "tcp_transfer": [], "local_transfer": [], "tcp_cpu": [], "local_cpu": []}
    out = c.path("pulled")
    for _ in range(runs):
        for mode in ("tcp", "local"):
            args = (["--no-local"] if mode == "tcp" else []) + ["pull", name, out]
            cpu0, t0 = cpu_of_children(), time.monotonic()
            r = c.blob(*args, store=store).ok()
            times[mode].append(time.monotonic() - t0)
            times[mode + "_cpu"].append(cpu_of_children() - cpu0)
            times[mode + "_transfer"].append(r["seconds"])
            check(r.get("local") == (mode == "local"), f"blob {' '.join(args)}: local is {r.get('local')}")
            os.unlink(out)
    return times


def time_memory_pulls(c, store, size, runs, bsbench):
    host, port = "127.0.0.1", c.naming.rsplit(":", 1)[1].split("/")[0]
    times = {"tcp": [], "local": []}
    for _ in range(runs):
        for mode in ("tcp", "local"):
            argv = [bsbench, "-c", host, "-p", port, "--variant", "blobstreaming", "--store", store,
                    "--direction", "pull", "--size", str(size), "--runs", "1", "--no-warmup", "-J"]
            if mode == "local":
                argv.append("--local-fast-path")
            code, out, err = c.run(argv)
            check(code == 0, f"`{' '.join(argv)}` exited {code}: {err.strip()!r}")
            run = json.loads(out.strip().splitlines()[-1])
            check(run["end"]["sha256_verified"], f"{mode}: bsbench saw wrong bytes")
            times[mode].append(run["end"]["sum_received"]["seconds"])
    return times


def summary(times, size):
    tcp, local = statistics.median(times["tcp"]), statistics.median(times["local"])
    out = {"tcp_s": [round(t, 3) for t in times["tcp"]], "local_s": [round(t, 3) for t in times["local"]],
           "tcp_median_s": round(tcp, 3), "local_median_s": round(local, 3),
           "tcp_mb_s": round(size / tcp / 1e6), "local_mb_s": round(size / local / 1e6),
           "ratio_local_to_tcp": round(local / tcp, 2)}
    for extra in ("transfer", "cpu"):
        if times.get("tcp_" + extra):
            t, l = statistics.median(times["tcp_" + extra]), statistics.median(times["local_" + extra])
            out.update({f"tcp_{extra}_median_s": round(t, 3), f"local_{extra}_median_s": round(l, 3),
                        f"ratio_{extra}_local_to_tcp": round(l / t, 2)})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="256M")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--only", choices=("file", "memory"))
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    size = parse_size(args.size)
    results = {}

    def bench(c):
        c.start_daemon("bench", "file", extra=["--no-sync"])
        if args.only != "memory":
            src = c.path("blob.bin")
            harness.write_random(src, size, algorithm=None)
            c.blob("push", "--name", "bench.local", src, store="bench").ok()
            os.unlink(src)
            results["file"] = summary(time_file_pulls(c, "bench.local", "bench", args.runs), size)
            step(f"to a file: {results['file']}")
        if args.only != "file":
            results["memory"] = summary(time_memory_pulls(c, "bench", size, args.runs,
                                                          harness.program("benchmarks/bsbench")), size)
            step(f"to memory: {results['memory']}")
        if args.json:
            print(json.dumps(results), flush=True)

    harness.main(bench, "local_pull")  # exits 0 or 1


if __name__ == "__main__":
    main()
