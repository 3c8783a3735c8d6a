#!/usr/bin/env python3
"""Resume and verification, end to end.

- A push whose client is killed mid-transfer leaves its reservation on the
  store (not listed, space still reserved) for the grace period;
  `blob push --resume` sends only the missing bytes and the store verifies
  the checksum of the whole Blob. A resume with a source of another size is
  refused; a new push without --resume supersedes the interrupted one; with
  nothing to resume, --resume is a plain push.
- `blob pull --resume` appends the rest of a Blob to a partial file and
  checks the whole Blob's checksum; a file that is not a prefix of the Blob
  fails the check and says so; bad uses are refused with the rule.
- `blob pull --verify` (the default for a whole Blob) is refused for a range
  and for a push, with the reason.
- `blob verify` rereads the stored bytes: OK for an intact Blob, exit 41
  (corrupt) naming both checksums after a byte changed on disk.
"""

import glob
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, EXIT, check, check_equal, step  # noqa: E402

SIZE = 256 * MiB
PROGRESS_AT = 32 * MiB


def status_of(c, store):
    for s in c.blob("stores").ok()["stores"]:
        if s["name"] == store:
            return s
    raise harness.TestFailure(f"store {store} is not registered")


def killed_push(c, daemon, source, name):
    """Starts `blob push --resume`, kills the client with SIGKILL once the
    store's reservation holds PROGRESS_AT bytes, and waits until the store
    has parked the reservation (the data connection is seen closed)."""
    tmp_dir = os.path.join(daemon.store_dir, "tmp")
    client = c.spawn("blob push " + name, [harness.program("clients/blob"), "--naming", c.naming, "--store", "ws",
                                           "--socket-buffer", "256K", "push", "--resume", "--name", name, source],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def progress():
        if not client.running():
            raise harness.TestFailure(f"the push of {name} ended (exit {client.popen.returncode}) before it was "
                                    f"seen past byte {PROGRESS_AT}; nothing to interrupt")
        return harness.reservation_written_past(tmp_dir, PROGRESS_AT)

    harness.wait_for(progress, 120, f"the reservation of {name} written past byte {PROGRESS_AT}", interval=0.005)
    os.kill(client.pid, signal.SIGKILL)
    client.popen.wait(timeout=20)
    step(f"client of {name} killed mid-push")
    log = daemon.log_paths[0]

    def parked():
        with open(log, encoding="utf-8", errors="replace") as f:
            return f"push \"{name}\": reservation kept with" in f.read()

    harness.wait_for(parked, 30, f"blobstored to keep the reservation of {name}")


def test(c):
    daemon = c.start_daemon("ws", "file", extra=("--reservation-grace", "120"))
    source = c.path("MG.src")
    digest = harness.write_random(source, SIZE)

    step("an interrupted push keeps its reservation: invisible, space reserved")
    killed_push(c, daemon, source, "MG.1")
    listed = [b["name"] for b in c.blob("ls", store="ws").ok()["blobs"]]
    check("MG.1" not in listed, f"the interrupted MG.1 is listed: {listed}")
    c.blob("stat", "MG.1", store="ws").error(EXIT["no_such_blob"], "MG.1")
    check_equal(status_of(c, "ws")["reserved"], SIZE, "bytes reserved by the interrupted push")

    step("push --resume sends only the missing bytes; the checksum covers the whole Blob")
    r = c.blob("push", "--resume", "--name", "MG.1", source, store="ws").ok()
    check(PROGRESS_AT <= r["offset"] < SIZE, f"resumed at byte {r['offset']}, expected >= {PROGRESS_AT}")
    check_equal(r["bytes"], SIZE - r["offset"], "bytes sent by the resumed push")
    check_equal(r["checksum"], digest, "checksum acknowledged by the store")
    check_equal(status_of(c, "ws")["reserved"], 0, "bytes reserved after the resumed push")
    out = c.path("MG.1.pulled")
    c.blob("--no-local", "pull", "MG.1", out, store="ws").ok()
    check_equal(harness.checksum_file(out), digest, "checksum of MG.1 pulled back")

    step("a resume with a source of another size is refused; a plain push supersedes")
    killed_push(c, daemon, source, "MG.2")
    other = c.path("other")
    other_digest = harness.write_random(other, 3 * MiB)
    c.blob("push", "--resume", "--name", "MG.2", other, store="ws").error(
        EXIT["invalid_argument"],
        f"cannot resume: the interrupted push was of {SIZE} bytes, the source has {3 * MiB}")
    c.blob("push", "--resume", "--checksum", "sha256", "--name", "MG.2", source, store="ws").error(
        EXIT["invalid_argument"],
        "cannot resume: the interrupted push was checksummed with crc32c, this one asks for sha256 "
        "(push without resuming to start over)")
    r = c.blob("push", "--name", "MG.2", other, store="ws").ok()
    check_equal((r["offset"], r["checksum"]), (0, other_digest), "offset and checksum of a superseding push")
    check_equal(status_of(c, "ws")["reserved"], 0, "bytes reserved after the superseding push")

    step("--resume with nothing to resume is a plain push")
    r = c.blob("push", "--resume", "--name", "CT.3", other, store="ws").ok()
    check_equal((r["offset"], r["bytes"], r["checksum"]), (0, 3 * MiB, other_digest), "a fresh --resume push")

    step("pull --resume appends the rest to a partial file and checks the whole Blob")
    part = c.path("MG.1.part")
    with open(out, "rb") as f_in, open(part, "wb") as f_out:
        f_out.write(f_in.read(100 * MiB + 7))
    r = c.blob("--no-local", "pull", "--resume", "MG.1", part, store="ws").ok()
    check_equal((r["offset"], r["bytes"]), (100 * MiB + 7, SIZE - 100 * MiB - 7), "range of the resumed pull")
    check_equal(harness.checksum_file(part), digest, "checksum of the file completed by pull --resume")
    r = c.blob("pull", "--resume", "MG.1", part, store="ws").ok()
    check_equal((r["offset"], r["bytes"]), (SIZE, 0), "pull --resume of a complete file moves nothing")

    step("pull --resume of a file that is not a prefix of the Blob fails the check and keeps the file")
    with open(part, "r+b") as f:
        f.truncate(5 * MiB)
        f.seek(4096)
        f.write(b"\x00not the blob\x00")
    c.blob("--no-local", "pull", "--resume", "MG.1", part, store="ws").error(
        EXIT["digest_mismatch"], f"together with the {5 * MiB} bytes the file already held")
    check_equal(os.path.getsize(part), SIZE, "size of the file kept after the failed check")

    step("bad uses of --resume are refused with the rule")
    c.blob("pull", "--resume", "MG.1", "-", store="ws").error(EXIT["invalid_argument"], "resume needs a file")
    c.blob("pull", "--resume", "--offset", "10", "MG.1", part, store="ws").error(
        EXIT["usage"], "--resume continues a whole-Blob pull")
    with open(part, "ab") as f:
        f.write(b"x")
    c.blob("pull", "--resume", "MG.1", part, store="ws").error(
        EXIT["invalid_range"], f"holds {SIZE + 1} bytes, more than the {SIZE} of the Blob")
    c.blob("stat", "--resume", "MG.1", store="ws").error(EXIT["usage"], "--resume applies to push and pull only")

    step("pull --verify checks the whole Blob; a range or a push cannot take it")
    whole = c.path("MG.1.verified")
    r = c.blob("--no-local", "pull", "--verify", "MG.1", whole, store="ws").ok()
    check_equal((r["bytes"], r["checksum"]), (SIZE, digest), "bytes and checksum of pull --verify")
    c.blob("pull", "--verify", "--offset", "10", "--length", "20", "MG.1", whole, store="ws").error(
        EXIT["usage"], "a range (--offset, --length) has no recorded checksum to check")
    c.blob("push", "--verify", "--name", "CT.4", other, store="ws").error(
        EXIT["usage"], "--verify applies to pull only, not push")
    c.blob("pull", "--verify", "--no-verify", "MG.1", whole, store="ws").error(
        EXIT["usage"], "--verify and --no-verify contradict each other")
    os.remove(whole)

    step("blob verify rereads the stored bytes")
    v = c.blob("verify", "MG.1", store="ws").ok()
    check_equal((v["verified"], v["checksum"], v["size"]), (True, digest, SIZE), "verify of an intact Blob")
    [path] = glob.glob(os.path.join(daemon.store_dir, "blobs", "*", "MG.1"))
    with open(path, "r+b") as f:
        f.seek(harness.FILE_HEADER + 12345678)
        byte = f.read(1)
        f.seek(harness.FILE_HEADER + 12345678)
        f.write(bytes([byte[0] ^ 0x40]))
    with open(path, "rb") as f:
        f.seek(harness.FILE_HEADER)
        corrupt = harness.checksum_bytes(f.read())
    check(corrupt != digest, f"checksum of MG.1 unchanged by the flipped bit: {corrupt}")
    c.blob("verify", "MG.1", store="ws").error(
        EXIT["corrupt"], f"the {SIZE} stored bytes have checksum {corrupt}, recorded at commit: {digest}")

    step("a pull of the corrupted Blob names both checksums and keeps no file, over TCP and same-host")
    for args in (["--no-local"], []):
        pulled = c.path("MG.1.corrupt")
        r = c.blob(*args, "pull", "MG.1", pulled, store="ws")
        r.error(EXIT["digest_mismatch"], f"have checksum {corrupt}, not the Blob's {digest}; nothing was kept")
        check(not os.path.exists(pulled), f"`blob {' '.join(args)} pull` of a corrupt Blob left {pulled} behind")
    c.blob("verify", "CT.3", store="ws").ok()
    c.blob("verify", "CT.404", store="ws").error(EXIT["no_such_blob"], "CT.404")


if __name__ == "__main__":
    harness.main(test)
