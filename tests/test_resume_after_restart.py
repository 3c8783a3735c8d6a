#!/usr/bin/env python3
"""A push resumed after blobstored was killed (SIGKILL) and restarted on the
same directory.

- The FileStore journals the ranges a push received, each with its CRC32C,
  beside the reservation file (tmp/*.part.resume). The test kills the daemon
  once the journal holds a known number of ranges, restarts it, and
  `blob push --resume` continues exactly at the end of the journaled ranges
  (the client's own report: `offset`, `bytes`); the pulled Blob is
  bit-identical, for a CRC32C and a SHA-256 Blob. Nothing partial is listed
  meanwhile.
- A byte of a journaled range changed while the daemon was down: the
  restarted daemon rereads the ranges, keeps only those before the changed
  one, says so in its log, and the resume sends the rest again (the Blob is
  still bit-identical).
- A kept push whose grace period ran out while the daemon was down is
  removed, with its journal, by the restarted daemon.
"""

import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, EXIT, check, check_equal, step  # noqa: E402

SIZE = 256 * MiB
CHECKPOINT = 4 * MiB  # detail::kResumeCheckpoint
FILE_HEADER = 4096


def journal_ranges(path):
    """The (start, end) of each range record of the resume journal at `path`."""
    try:
        with open(path, "rb") as f:
            return harness.resume_journal_ranges(f.read())
    except FileNotFoundError:
        return None


def journal_in(tmp_dir):
    for entry in sorted(os.listdir(tmp_dir)):
        if entry.endswith(".part.resume"):
            return os.path.join(tmp_dir, entry)
    return None


def kill_daemon_mid_push(c, daemon, source, name, ranges, extra=()):
    """Pushes `source` as `name` (with `extra` push options); SIGKILLs the
    daemon once the journal holds at least `ranges` ranges. Returns the
    journal's path and its ranges after the kill."""
    tmp_dir = os.path.join(daemon.store_dir, "tmp")
    err_path = c.path(f"push-{name}.err")
    with open(err_path, "wb") as err:
        client = c.spawn("blob push " + name, [harness.program("clients/blob"), "--naming", c.naming, "--store",
                                               "central", "--socket-buffer", "256K", "--timeout", "10", "push",
                                               *extra, "--name", name, source],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    client.log_paths.append(err_path)

    def journaled():
        if not client.running():
            raise harness.TestFailure(f"the push of {name} ended (exit {client.popen.returncode}) before its "
                                      f"journal held {ranges} ranges; nothing to interrupt")
        path = journal_in(tmp_dir)
        got = journal_ranges(path) if path else None
        return path if got and len(got) >= ranges else None

    harness.wait_for(journaled, 120, f"the journal of {name} in {tmp_dir} to hold {ranges} ranges", interval=0.002)
    os.kill(daemon.pid, signal.SIGKILL)
    daemon.popen.wait(timeout=20)
    code = client.popen.wait(timeout=60)
    check(code in (EXIT["transfer_failed"], EXIT["unreachable"]),
          f"blob push of {name} exited {code} after the daemon was killed")
    path = journal_in(tmp_dir)
    check(path is not None, f"no journal left in {tmp_dir} after SIGKILL: {os.listdir(tmp_dir)}")
    got = journal_ranges(path)
    step(f"blobstored killed with {name}'s journal at {len(got)} ranges, up to byte {got[-1][1]}")
    check(all(e - s == CHECKPOINT for s, e in got), f"journaled ranges are not of {CHECKPOINT} bytes: {got}")
    return path, got


def pulled_identical(c, name, source):
    out = c.path(f"{name}.pulled")
    c.blob("--no-local", "pull", name, out, store="central").ok()
    with open(out, "rb") as a, open(source, "rb") as b:
        check(a.read() == b.read(), f"{name} pulled back is not bit-identical to its source")
    os.unlink(out)


def log_text(daemon):
    with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
        return f.read()


def test(c):
    daemon = c.start_daemon("central", "file", tier="central", extra=("--reservation-grace", "120"))
    tmp_dir = os.path.join(daemon.store_dir, "tmp")
    source = c.path("MG.src")
    digest = harness.write_random(source, SIZE)

    step("SIGKILL of the daemon mid-push; after the restart --resume sends only the bytes not journaled")
    _, ranges = kill_daemon_mid_push(c, daemon, source, "MG.1", 2)
    journaled = ranges[-1][1]
    daemon = c.restart_daemon(daemon)
    check(f'push "MG.1" kept across the restart as reservation' in log_text(daemon),
          "the restarted daemon's log does not say it kept the push of MG.1")
    listed = [b["name"] for b in c.blob("ls", store="central").ok()["blobs"]]
    check("MG.1" not in listed, f"the interrupted MG.1 is listed after the restart: {listed}")
    r = c.blob("push", "--resume", "--name", "MG.1", source, store="central").ok()
    check_equal((r["offset"], r["bytes"]), (journaled, SIZE - journaled),
                "where the push resumed after the restart and the bytes it sent")
    check_equal(r["checksum"], digest, "checksum acknowledged by the store")
    pulled_identical(c, "MG.1", source)
    check_equal(os.listdir(tmp_dir), [], f"files left in {tmp_dir} after the resumed push committed")

    step("the same with a SHA-256 Blob: the kept bytes are rehashed, the resume continues the digest")
    sha = harness.checksum_file(source, "sha256")
    _, ranges = kill_daemon_mid_push(c, daemon, source, "MG.sha", 2, extra=("--checksum", "sha256"))
    daemon = c.restart_daemon(daemon)
    r = c.blob("push", "--resume", "--name", "MG.sha", source, store="central").ok()
    check_equal((r["offset"], r["bytes"], r["checksum"]), (ranges[-1][1], SIZE - ranges[-1][1], sha),
                "where the SHA-256 push resumed, the bytes it sent and the digest the store acknowledged")
    pulled_identical(c, "MG.sha", source)

    step("a journaled range changed while the daemon was down is received again")
    part_journal, ranges = kill_daemon_mid_push(c, daemon, source, "MG.2", 3)
    part = part_journal[:-len(".resume")]
    changed_at = CHECKPOINT + 12345  # in the second range
    with open(part, "r+b") as f:
        f.seek(FILE_HEADER + changed_at)
        byte = f.read(1)
        f.seek(FILE_HEADER + changed_at)
        f.write(bytes([byte[0] ^ 0x40]))
    daemon = c.restart_daemon(daemon)
    check(f"bytes [{CHECKPOINT}, {2 * CHECKPOINT}) no longer match their CRC32C in the journal" in log_text(daemon),
          "the restarted daemon's log does not name the changed range of MG.2")
    r = c.blob("push", "--resume", "--name", "MG.2", source, store="central").ok()
    check_equal((r["offset"], r["bytes"]), (CHECKPOINT, SIZE - CHECKPOINT),
                "where the push of MG.2 resumed: at the changed range")
    check_equal(r["checksum"], digest, "checksum acknowledged for MG.2")
    pulled_identical(c, "MG.2", source)

    step("a kept push whose grace period ran out while the daemon was down is removed")
    kill_daemon_mid_push(c, daemon, source, "MG.3", 1)
    for entry in os.listdir(tmp_dir):  # its last byte arrived 200 s ago
        path = os.path.join(tmp_dir, entry)
        st = os.stat(path)
        os.utime(path, (st.st_atime - 200, st.st_mtime - 200))
    daemon = c.restart_daemon(daemon)
    check_equal(os.listdir(tmp_dir), [], f"files left in {tmp_dir} by an expired kept push")
    r = c.blob("push", "--resume", "--name", "MG.3", source, store="central").ok()
    check_equal((r["offset"], r["bytes"]), (0, SIZE), "a --resume of an expired push starts at byte 0")


if __name__ == "__main__":
    harness.main(test)
