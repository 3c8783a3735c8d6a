#!/usr/bin/env python3
"""Pulls racing `push --replace`: a pull ticket names one committed version.

1. Deterministic, on the data port (tests/tools/ticket_probe stale and
   stale-range): a whole-Blob and a range ticket are issued, the Blob is
   replaced by one of another size (and, in a second round, removed), then
   the tickets are presented: the store answers blob_changed (27) naming the
   ticket's version, sends no byte, and keeps the connection for the next
   transfer.
2. The race, with the blob CLI: pullers (over TCP, over the same-host file,
   whole and ranges) run while replacers alternate the Blob between versions
   of different sizes, on a FileStore and a MemoryStore, for a bounded time.
   Every pull that exits 0 wrote exactly one version (or a range of one
   version); every failure is blob_changed (27) and leaves no file behind.
"""

import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, MiB, check, check_equal, step  # noqa: E402

BLOB = "CT.race"
RACE_SECONDS = float(os.environ.get("BS_RACE_SECONDS", "8"))
PULLERS = 6
REPLACERS = 2
RANGE = (1000, 300000)  # offset, length: inside every version


def probe_stale(c, store, mode, change):
    """Runs ticket_probe MODE: obtains the ticket, runs `change()`, then
    lets the probe present the ticket; returns its JSON result."""
    argv = [harness.program("tests/tools/ticket_probe"), "--naming", c.naming, "--store", store,
            "--blob", BLOB, "--mode", mode]
    proc = c.spawn(f"ticket_probe {mode}", argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True)
    first = proc.popen.stdout.readline()
    check('"issued":true' in first, f"ticket_probe {mode} did not obtain a ticket: {first!r} "
                                    f"(stderr: {proc.popen.stderr.read() if proc.popen.poll() is not None else ''})")
    change()
    out, err = proc.popen.communicate("go\n", timeout=60)
    result = harness.BlobResult(argv, proc.popen.returncode, out, err).json
    check(proc.popen.returncode == 0 and result is not None,
          f"ticket_probe {mode} exited {proc.popen.returncode}: {out!r} {err!r}")
    step(f"{store} {mode}: {result}")
    return result


def deterministic(c, store, versions):
    (path_a, _), (path_b, _) = versions[0], versions[1]
    for mode in ("stale", "stale-range"):
        c.blob("push", "--replace", "--name", BLOB, path_a, store=store).ok()
        r = probe_stale(c, store, mode, lambda: c.blob("push", "--replace", "--name", BLOB, path_b, store=store).ok())
        check_equal(r.get("status"), EXIT["blob_changed"], f"{store} {mode} after a replace: status")
        check("the Blob changed since ticket" in r.get("message", ""), f"{store} {mode}: message {r}")
        check(f"version of {os.path.getsize(path_a)} bytes" in r.get("message", ""),
              f"{store} {mode}: the message names the ticket's version: {r}")
        check(f"now holds {os.path.getsize(path_b)} bytes" in r.get("message", ""),
              f"{store} {mode}: the message names the current version: {r}")
        check_equal(r.get("length"), 0, f"{store} {mode}: bytes announced")
    # Removed between ticket and connection.
    c.blob("push", "--replace", "--name", BLOB, path_a, store=store).ok()
    r = probe_stale(c, store, "stale", lambda: c.blob("rm", BLOB, store=store).ok())
    check_equal(r.get("status"), EXIT["blob_changed"], f"{store} stale after rm: status")
    check("it was removed since" in r.get("message", ""), f"{store} stale after rm: message says it is gone: {r}")


def race(c, store, versions, local):
    """Pullers and replacers for RACE_SECONDS; returns (ok, changed) counts."""
    # A pulled file is told apart by its SHA-256 (hashlib: no process per
    # pull); a whole pull must then report that version's checksum.
    checksum_of = {harness.checksum_file(path, "sha256"): checksum for path, checksum in versions}
    ranges = {harness.checksum_bytes(harness.read_range(path, *RANGE), "sha256") for path, _ in versions}
    c.blob("push", "--replace", "--name", BLOB, versions[0][0], store=store).ok()
    stop_at = time.monotonic() + RACE_SECONDS
    errors = []
    counts = {"ok": 0, "changed": 0, "range_ok": 0, "replaced": 0}
    lock = threading.Lock()

    def replacer(k):
        i = k
        while time.monotonic() < stop_at and not errors:
            path, _ = versions[i % len(versions)]
            r = c.blob("push", "--replace", "--name", BLOB, path, store=store, timeout=120)
            if r.code == EXIT["already_exists"] and "already being written" in r.stderr:
                continue  # the other replacer holds the name's one reservation
            if r.code != 0:
                errors.append("replace failed: " + r.describe())
                return
            i += 1
            with lock:
                counts["replaced"] += 1

    def puller(k):
        n = 0
        while time.monotonic() < stop_at and not errors:
            n += 1
            out = c.path(f"pull-{store}-{k}-{n}")
            ranged = k % 3 == 2
            args = [] if (local and k % 2 == 0) else ["--no-local"]
            args += ["pull", BLOB, out]
            if ranged:
                args += ["--offset", RANGE[0], "--length", RANGE[1]]
            r = c.blob(*args, store=store, timeout=120)
            if r.code == 0:
                got = harness.checksum_file(out, "sha256")
                expected = ranges if ranged else checksum_of
                if got not in expected:
                    errors.append(f"pull exited 0 but wrote bytes of no version ({os.path.getsize(out)} bytes, "
                                  f"{got}): " + r.describe())
                elif not ranged and r.json.get("checksum") != checksum_of[got]:
                    errors.append(f"pull reported checksum {r.json.get('checksum')} but wrote the bytes of the "
                                  f"version with checksum {checksum_of[got]}: " + r.describe())
                with lock:
                    counts["range_ok" if ranged else "ok"] += 1
                os.unlink(out)
            elif r.code == EXIT["blob_changed"]:
                if os.path.exists(out):
                    errors.append("a pull that failed with blob_changed left its output file: " + r.describe())
                with lock:
                    counts["changed"] += 1
            else:
                errors.append("pull failed otherwise: " + r.describe())

    threads = [threading.Thread(target=replacer, args=(k,)) for k in range(REPLACERS)]
    threads += [threading.Thread(target=puller, args=(k,)) for k in range(PULLERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=RACE_SECONDS + 300)
    check(not any(t.is_alive() for t in threads), "a racing client did not finish")
    check(not errors, f"{len(errors)} wrong outcome(s); first: {errors[0] if errors else ''}")
    step(f"{store}: {counts['ok']} whole and {counts['range_ok']} range pulls right, "
         f"{counts['changed']} refused as changed, {counts['replaced']} replacements; 0 wrong bytes")
    check(counts["ok"] > 0 and counts["replaced"] > 1, f"{store}: the race did not run: {counts}")


def test(c):
    c.start_daemon("files", "file", tier="workstation")
    c.start_daemon("mem", "memory:256M", tier="memory")
    versions = []
    for k, size in enumerate((3 * MiB + 123, 2 * MiB + 7, 3 * MiB // 2)):
        path = c.path(f"version-{k}")
        versions.append((path, harness.write_random(path, size)))
    for store in ("files", "mem"):
        deterministic(c, store, versions)
    for store, local in (("files", True), ("mem", False)):
        race(c, store, versions, local)


if __name__ == "__main__":
    harness.main(test)
