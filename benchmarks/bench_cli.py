"""The steps of the benchmark that time whole programs on 127.0.0.1, each
against its reference in the same invocation (bench_runner.Suite runs them
after the points):

  same-host pull  one FileStore Blob pulled through the same-host path and
                  over TCP, alternately: to a file (`blob pull`, process wall
                  time) and to memory (bsbench, its timed run); the
                  measurement of local_pull.py.
  cli             `blob push` and `blob pull --no-local` of one file through a
                  fresh blobstored against plain_pair (plain C), each timed
                  from fork to exit, for each kind of store: a FileStore
                  against plain_pair's file server (sendfile out, a read loop
                  in, fdatasync, one Ack byte), then a MemoryStore against
                  its --memory server (each push into a fresh malloc() of
                  its size, pulls sent from there); the FileStore daemon's
                  peak RSS. Every run is kept: the summary gives the median
                  and the spread (slowest / fastest) of each.

Both check the bytes outside the timed interval by comparing files (a pulled
file with its source; plain_pair's received file with its source; a `blob
push` through the `blob pull` that follows it). Records: bench_schema
SAME_HOST_FIELDS, CLI_FIELDS, CLI_RSS_FIELDS."""

import filecmp
import os
import shutil
import time

import harness
import local_pull
from bench_schema import size_text
from harness.naming import naming_url

PLAIN_PAIR_READY = "plain_pair ready"


def clients(suite, ns_port, name):
    """A harness Cluster used as the clients' side only: its own temporary
    directory, `blob` given by the command line, the suite's Naming Service."""
    c = harness.Cluster(name)
    c.naming = naming_url(suite.host, ns_port)
    c.blob_program = suite.args.blob
    return c


def same_files(a, b, what):
    harness.check(filecmp.cmp(a, b, shallow=False), "%s: %s differs from %s" % (what, b, a))


def same_host_pull(suite, ns_port, size, runs):
    """[SAME_HOST record]: `runs` pulls of each destination and mode."""
    daemon, store = suite.start_store("file", "auto", ns_port, 0, name="bench-same-host", extra=["--no-sync"])
    c = clients(suite, ns_port, "bench-same-host")
    records = []
    try:
        src = c.path("blob.bin")
        harness.write_random(src, size, algorithm=None)
        c.blob("push", "--name", "bench.local", src, store=store).ok()
        os.unlink(src)
        times = {"file": local_pull.time_file_pulls(c, "bench.local", store, runs),
                 "memory": local_pull.time_memory_pulls(c, store, size, runs, suite.args.bsbench)}
    finally:
        c.close()
        suite.stop(daemon)
        shutil.rmtree(os.path.join(suite.tmp, store), ignore_errors=True)
    for destination, measured in times.items():
        for mode in ("tcp", "local"):
            for i, seconds in enumerate(measured[mode]):
                rec = {"destination": destination, "mode": mode, "blob_bytes": size, "run": i + 1,
                       "seconds": seconds, "link": suite.link.label}
                for extra in ("transfer", "cpu"):
                    if measured.get(mode + "_" + extra):
                        rec[extra + "_seconds"] = measured[mode + "_" + extra][i]
                records.append(rec)
    return records


def timed(c, argv, what):
    """Seconds from fork to exit of `argv`, which must succeed."""
    t0 = time.monotonic()
    code, _out, err = c.run(argv, timeout=1800)
    seconds = time.monotonic() - t0
    harness.check(code == 0, "%s: `%s` exited %d: %s" % (what, " ".join(argv), code, err.strip()[-500:]))
    return seconds


# The kinds of store of the cli step: (store kind, plain_pair server options
# but --bind; "{dir}": a directory of its own).
CLI_STORES = (("file", ["--dir", "{dir}"]), ("memory", ["--memory"]))


def cli_transfers(suite, ns_port, size, runs):
    """([CLI record], CLI_RSS record): per kind of store (CLI_STORES), after
    one untimed round, `runs` rounds of plain push, blob push, plain pull,
    blob pull (the two programs' order swapped every other round); the
    FileStore daemon's VmHWM."""
    records, rss = [], None
    for kind, plain_options in CLI_STORES:
        kind_records, kind_rss = cli_transfers_to(suite, ns_port, size, runs, kind, plain_options)
        records += kind_records
        rss = rss or kind_rss
    return records, rss


def cli_transfers_to(suite, ns_port, size, runs, kind, plain_options):
    """cli_transfers() for one kind of store ("file" or "memory"): a MemoryStore
    of twice the Blob (a replaced Blob and its successor fit), the plain
    server keeping the bytes alike; the peak RSS of a FileStore daemon
    (None for a MemoryStore: it holds the Blob)."""
    daemon, store = suite.start_store(kind, "auto", ns_port, 2 * size + (64 << 20), name="bench-cli-" + kind)
    plain_dir = os.path.join(suite.tmp, "plain-pair")
    os.makedirs(plain_dir, exist_ok=True)
    server = suite.start("plain_pair server", [suite.args.plain_pair, "server", "--bind", suite.host] +
                         [o.format(dir=plain_dir) for o in plain_options], ready=PLAIN_PAIR_READY)
    port = server.ready["port"]
    c = clients(suite, ns_port, "bench-cli")
    blob = [suite.args.blob, "--naming", c.naming, "--store", store, "-q"]
    src, out = c.path("source.bin"), c.path("pulled.bin")
    records = []
    label = "cli %s %s" % (kind, size_text(size))
    try:
        harness.write_random(src, size, algorithm=None)
        for run in range(runs + 1):  # round 0: untimed (page cache, program start-up)
            programs = ("plain_pair", "blob") if run % 2 else ("blob", "plain_pair")
            for direction in ("push", "pull"):
                for program in programs:
                    if program == "plain_pair":
                        argv = [suite.args.plain_pair, direction, suite.host, port, src if direction == "push" else out]
                    elif direction == "push":
                        if run:
                            c.run(blob + ["rm", "bench.cli"])  # untimed: a push without --replace
                        argv = blob + ["push", "--name", "bench.cli", src]
                    else:
                        argv = blob + ["--no-local", "pull", "bench.cli", out]
                    seconds = timed(c, argv, "%s %s %s" % (label, program, direction))
                    if direction == "pull":
                        same_files(src, out, "%s %s pull" % (label, program))
                        os.unlink(out)
                    elif program == "plain_pair" and kind == "file":
                        same_files(src, os.path.join(plain_dir, "blob"), "%s plain_pair push" % label)
                    if run:
                        records.append({"program": program, "direction": direction, "blob_bytes": size, "run": run,
                                        "seconds": seconds, "link": suite.link.label, "store": kind})
        rss = {"target": kind, "blob_bytes": size, "rounds": runs + 1,
               "peak_rss_kib": harness.peak_rss_kib(daemon.pid)} if kind == "file" else None
    finally:
        c.close()
        suite.stop(server)
        suite.stop(daemon)
        shutil.rmtree(os.path.join(suite.tmp, store), ignore_errors=True)
        shutil.rmtree(plain_dir, ignore_errors=True)
    return records, rss
