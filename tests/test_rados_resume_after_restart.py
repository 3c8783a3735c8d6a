#!/usr/bin/env python3
"""A push into a RADOS store resumed after blobstored was killed (SIGKILL)
and restarted, on the throwaway Ceph cluster (harness.ceph.CephCluster),
one cluster for every step.

Each push reads a pipe the test fills from the source file, so that the test
knows how far it went: after 10 MiB the data objects 0 and 1 (4 MiB each)
are written, and the daemon has appended their ranges to the journal object
`blobstreaming.resume.ID` as their writes completed (ResumeJournal.h's
records; the third object's bytes are still in the daemon's buffer). The
test waits for exactly that journal, and for the index record r:ID naming
the client, and kills the daemon there.

- After the restart (its log says it kept the push) nothing is listed, and
  `blob push --resume` of the source file continues at byte 8 MiB (the
  client's own report: `offset`, `bytes`); the Blob pulled back has the
  source's CRC32C and SHA-256, and the journal object is gone.
- A SHA-256 push (three ranges journaled) whose data object 1 was changed
  while the daemon was down: the restarted daemon's log names the range,
  and the resume starts at 4 MiB; the acknowledged SHA-256 and the pulled
  copy are the source's.
- A kept push whose grace ran out while the daemon was down (restarted
  with --reservation-grace 1) is removed at start: its journal object and
  data objects are deleted (the next cleanup round, --ceph-grace 3), and
  `--resume` starts at byte 0.

Skipped (77) only when Ceph is not installed (scripts/install-deps)."""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, MiB, check, check_equal, step, wait_for  # noqa: E402
from harness.ceph import CephCluster, ceph_programs  # noqa: E402

POOL = "archive"
STORE = "central"
SIZE = 24 * MiB
CHUNK = 4 * MiB  # the daemon's data objects (RadosStore::Options::chunk_size)
INDEX = "blobstreaming.index"
JOURNAL_PREFIX = "blobstreaming.resume."
DATA_PREFIX = "blobstreaming.data."


def rados_ok(ceph, *args, binary=False):
    r = ceph.rados(*args, pool=POOL, binary=binary)
    err = r.stderr.decode("utf-8", "replace") if binary else r.stderr
    check_equal(r.returncode, 0, f"exit status of `rados {' '.join(map(str, args))}` (stderr {err.strip()!r})")
    return r.stdout


def objects(ceph, prefix):
    return {o for o in rados_ok(ceph, "ls").split() if o.startswith(prefix)}


def reservation_of(ceph, name):
    """(id, record) of the index's r:ID of Blob `name`, or None."""
    for key in rados_ok(ceph, "listomapkeys", INDEX).split():
        if key.startswith("r:"):
            path = ceph.path("omap-value")
            if ceph.rados("getomapval", INDEX, key, path, pool=POOL).returncode != 0:
                continue  # gone since it was listed (committed or aborted)
            with open(path, encoding="utf-8", errors="replace") as f:
                record = f.read()
            if record.endswith(f" name={name}"):
                return key[2:], record
    return None


def journal(ceph, rid):
    """The ranges journaled for reservation `rid` (None without its object)."""
    r = ceph.rados("get", JOURNAL_PREFIX + rid, "-", pool=POOL, binary=True)
    return harness.resume_journal_ranges(r.stdout) if r.returncode == 0 else None


def push_from_pipe(c, name, extra=()):
    """`blob push --name NAME - --size SIZE` reading a pipe the test fills."""
    err = c.path(f"push-{name}.err")
    with open(err, "wb") as e:
        client = c.spawn(f"blob push {name}", [harness.program("clients/blob"), "--naming", c.naming, "--store",
                                               STORE, "--json", "--timeout", "60", "push", *extra, "--name", name,
                                               "-", "--size", str(SIZE)],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=e)
    client.log_paths.append(err)
    return client


def kill_at_journal(c, ceph, daemon, source, name, ranges, extra=()):
    """Pushes the first `ranges` * 4 MiB + 2 MiB bytes of `source` through a
    pipe, waits until the journal holds exactly `ranges` ranges of 4 MiB and
    the index record names the client, and SIGKILLs the daemon (then the
    client fails on the next bytes). Returns the reservation's id."""
    client = push_from_pipe(c, name, extra)
    with open(source, "rb") as f:
        client.popen.stdin.write(f.read(ranges * CHUNK + 2 * MiB))
    client.popen.stdin.flush()
    expected = [(i * CHUNK, (i + 1) * CHUNK) for i in range(ranges)]

    def journaled():
        if not client.running():
            raise harness.TestFailure(f"the push of {name} ended (exit {client.popen.returncode}) early")
        found = reservation_of(ceph, name)
        if not found or journal(ceph, found[0]) != expected:
            return None
        return found[0] if " client=" in found[1] else None  # the first append names the client

    rid = wait_for(journaled, 60, f"the journal of {name} to hold {expected}", interval=0.1)
    os.kill(daemon.pid, signal.SIGKILL)
    daemon.popen.wait(timeout=20)
    try:  # more bytes for the client to send: it finds the connection gone
        with open(source, "rb") as f:
            f.seek(ranges * CHUNK + 2 * MiB)
            client.popen.stdin.write(f.read(4 * MiB))
        client.popen.stdin.close()
    except BrokenPipeError:
        pass
    code = client.popen.wait(timeout=60)
    check(code in (EXIT["transfer_failed"], EXIT["unreachable"]), f"blob push of {name} exited {code}")
    check_equal(journal(ceph, rid), expected, f"the journal of {name} after SIGKILL")
    step(f"blobstored killed with {name}'s journal at {ranges} ranges, up to byte {ranges * CHUNK}")
    return rid


def log_text(daemon):
    with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
        return f.read()


def pulled_identical(c, name, source):
    out = c.path(f"{name}.pulled")
    c.blob("--no-local", "pull", name, out, store=STORE).ok()
    for algorithm in ("crc32c", "sha256"):
        check_equal(harness.checksum_file(out, algorithm), harness.checksum_file(source, algorithm),
                    f"{algorithm} of {name} pulled back")
    os.unlink(out)


def resumed(c, name, source, offset, checksum):
    r = c.blob("push", "--resume", "--name", name, source, store=STORE).ok()
    check_equal((r["offset"], r["bytes"], r["checksum"]), (offset, SIZE - offset, checksum),
                f"where the push of {name} resumed, the bytes it sent and the checksum the store acknowledged")
    pulled_identical(c, name, source)
    step(f"{name}: resumed at byte {offset}, {SIZE - offset} bytes sent, {checksum}")


def test(c):
    ceph_programs()
    with CephCluster(c) as ceph:
        ceph.create_pool(POOL, pg_num=8)
        extra = ("--ceph-conf", ceph.conf_path, "--ceph-grace", "3", "--reservation-grace", "120")
        daemon = c.start_daemon(STORE, f"rados:{POOL}", extra=extra)
        source = c.path("MG.src")
        digest = harness.write_random(source, SIZE)
        sha = harness.checksum_file(source, "sha256")

        step("SIGKILL of the daemon mid-push; after the restart --resume sends only the bytes not journaled")
        rid = kill_at_journal(c, ceph, daemon, source, "MG.1", 2)
        daemon = c.restart_daemon(daemon)
        check('push "MG.1" kept across the restart as reservation' in log_text(daemon),
              "the restarted daemon's log does not say it kept the push of MG.1")
        listed = [b["name"] for b in c.blob("ls", store=STORE).ok()["blobs"]]
        check("MG.1" not in listed, f"the interrupted MG.1 is listed after the restart: {listed}")
        resumed(c, "MG.1", source, 2 * CHUNK, digest)
        wait_for(lambda: JOURNAL_PREFIX + rid not in objects(ceph, JOURNAL_PREFIX), 10,
                 "the journal object of MG.1 removed after its commit", interval=0.2)

        step("a SHA-256 push whose data object 1 changed while the daemon was down resumes before it")
        rid = kill_at_journal(c, ceph, daemon, source, "MG.2", 3, extra=("--checksum", "sha256"))
        obj = f"{DATA_PREFIX}{rid}.00000001"
        copy = c.path("object1")
        rados_ok(ceph, "get", obj, copy)
        with open(copy, "r+b") as f:
            f.seek(12345)
            byte = f.read(1)
            f.seek(12345)
            f.write(bytes([byte[0] ^ 0x40]))
        rados_ok(ceph, "put", obj, copy)
        daemon = c.restart_daemon(daemon)
        check(f"bytes [{CHUNK}, {2 * CHUNK}) no longer match their CRC32C in the journal; it resumes at byte {CHUNK}"
              in log_text(daemon), "the restarted daemon's log does not name the changed range of MG.2")
        resumed(c, "MG.2", source, CHUNK, sha)

        step("a kept push whose grace ran out while the daemon was down is removed at start")
        rid = kill_at_journal(c, ceph, daemon, source, "MG.3", 1)
        t_killed = time.monotonic()
        # The journal's last append is more than the restarted daemon's
        # grace of 1 s old (its mtime counts in whole seconds).
        time.sleep(max(0.0, t_killed + 2.5 - time.monotonic()))
        daemon = c.start_daemon(STORE, f"rados:{POOL}", extra=extra[:4] + ("--reservation-grace", "1"))
        check("reservation of \"MG.3\"" in log_text(daemon) and "aborted, space released" in log_text(daemon),
              "the restarted daemon's log does not say it removed the expired push of MG.3")
        t0 = time.monotonic()
        wait_for(lambda: not objects(ceph, JOURNAL_PREFIX + rid) and not objects(ceph, DATA_PREFIX + rid), 20,
                 "the journal and data objects of the expired MG.3 deleted", interval=0.2)
        step(f"MG.3's journal and data objects deleted {time.monotonic() - t0:.1f} s after the restart")
        r = c.blob("push", "--resume", "--name", "MG.3", source, store=STORE).ok()
        check_equal((r["offset"], r["bytes"], r["checksum"]), (0, SIZE, digest),
                    "a --resume of the expired push: from byte 0")
        for name in ("MG.1", "MG.2", "MG.3"):
            c.blob("rm", name, store=STORE).ok()


if __name__ == "__main__":
    harness.main(test)
