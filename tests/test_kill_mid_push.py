#!/usr/bin/env python3
"""blobstored killed with SIGKILL in the middle of a large push: the client
fails with a transport error that names the store or the connection; a
daemon restarted on the same directory lists no partial Blob, keeps the
interrupted reservation (and its journal) only for a resume (see
test_resume_after_restart.py), and still serves the earlier Blobs with their
digests.
Then the same with SIGTERM: the daemon aborts the push, removes its
reservation and exits 0."""

import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, EXIT, check, check_equal, step  # noqa: E402

BIG = 1 << 30
PROGRESS_AT = 64 * MiB  # a Blob offset the push must have written before the kill


def interrupt_push(c, daemon, source, name, signum):
    """Starts `blob push source name`, sends `signum` to the daemon once the
    push has visibly written PROGRESS_AT bytes into its reservation, and
    returns the client's (exit code, stderr)."""
    tmp_dir = os.path.join(daemon.store_dir, "tmp")
    # A reservation kept from an earlier interrupted push is not this one's.
    before = set(os.listdir(tmp_dir)) if os.path.isdir(tmp_dir) else set()
    out_path, err_path = c.path(f"push-{signum}.out"), c.path(f"push-{signum}.err")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        client = c.spawn("blob push", [harness.program("clients/blob"), "--naming", c.naming, "--store", "central",
                                       "--json", "--timeout", "10", "push", "--name", name, source],
                         stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    client.log_paths += [out_path, err_path]

    def progress():
        if not client.running():
            raise harness.TestFailure(f"the push ended (exit {client.popen.returncode}) before its progress was "
                                    f"seen past byte {PROGRESS_AT} of {tmp_dir}; nothing to interrupt")
        part = harness.reservation_written_past(tmp_dir, PROGRESS_AT)
        return part if part and os.path.basename(part) not in before else None

    part = harness.wait_for(progress, 120, f"a reservation in {tmp_dir} written past byte {PROGRESS_AT}",
                          interval=0.005)
    os.kill(daemon.pid, signum)
    step(f"signal {signum} to blobstored (pid {daemon.pid}) while {os.path.basename(part)} was being written")
    try:
        code = client.popen.wait(timeout=60)
    except subprocess.TimeoutExpired:
        raise harness.TestFailure(f"blob push did not exit within 60 s after signal {signum} to the daemon") from None
    with open(err_path, encoding="utf-8", errors="replace") as f:
        err_text = f.read()
    step(f"blob push exited {code}: {err_text.strip()}")
    allowed = {EXIT["transfer_failed"]: "transfer failed", EXIT["unreachable"]: "unreachable"}
    if signum == signal.SIGTERM:
        allowed[EXIT["cancelled"]] = "cancelled: the store is shutting down"
    check(code in allowed, f"blob push exited {code} after signal {signum} to the daemon; expected one of "
                           f"{allowed}. stderr: {err_text.strip()!r}")
    check("central" in err_text or daemon.ready["data"] in err_text,
          f"the push error names neither the store \"central\" nor the data connection "
          f"{daemon.ready['data']}: {err_text.strip()!r}")


def check_only_earlier(c, daemon, earlier, kept=False):
    """`kept`: the interrupted push is kept for a resume, its reservation
    file and journal in tmp/; otherwise tmp/ is empty."""
    tmp_dir = os.path.join(daemon.store_dir, "tmp")
    left = sorted(os.listdir(tmp_dir))
    if kept:
        check(len(left) == 2 and left[0].endswith(".part") and left[1] == left[0] + ".resume",
              f"{tmp_dir} after the restart holds {left}, not the kept reservation and its journal")
    else:
        check_equal(left, [], f"leftover reservations in {tmp_dir} after the restart")
    listed = {b["name"]: b for b in c.blob("ls", store="central").ok().get("blobs", [])}
    check_equal(sorted(listed), sorted(earlier), "Blobs listed after the restart (no partial MG.big)")
    for name, (digest, size) in earlier.items():
        check_equal((listed[name].get("size"), listed[name].get("checksum")), (size, digest),
                    f"size and checksum of {name} after the restart")
        out = c.path(f"{name}.pulled")
        c.blob("--no-local", "pull", name, out, store="central").ok()
        check_equal(harness.checksum_file(out), digest, f"checksum of {name} pulled after the restart")
        os.unlink(out)
    c.blob("stat", "MG.big", store="central").error(EXIT["no_such_blob"], 'blob "MG.big" not found')


def test(c):
    daemon = c.start_daemon("central", "file", tier="central")
    earlier = {}
    for i in range(2):
        path = c.path(f"earlier-{i}")
        earlier[f"CT.earlier.{i}"] = (harness.write_random(path, MiB + i), MiB + i)
        c.blob("push", "--name", f"CT.earlier.{i}", path, store="central").ok()
    source = c.path("big")
    big_digest = harness.write_random(source, BIG)

    step("SIGKILL in the middle of a 1 GiB push")
    interrupt_push(c, daemon, source, "MG.big", signal.SIGKILL)
    daemon.popen.wait(timeout=20)
    daemon = c.restart_daemon(daemon)
    check_only_earlier(c, daemon, earlier, kept=True)

    step("SIGTERM in the middle of a 1 GiB push (which supersedes the kept one): the push is aborted, the daemon "
         "exits 0")
    interrupt_push(c, daemon, source, "MG.big", signal.SIGTERM)
    try:
        status = daemon.popen.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise harness.TestFailure("blobstored did not exit within 30 s of SIGTERM during a push") from None
    check_equal(status, 0, "exit status of blobstored after SIGTERM during a push")
    tmp_dir = os.path.join(daemon.store_dir, "tmp")
    check_equal(os.listdir(tmp_dir), [], f"reservations left in {tmp_dir} by a clean shutdown")
    daemon = c.restart_daemon(daemon)
    check_only_earlier(c, daemon, earlier)

    step("the interrupted name can be pushed again")
    pushed = c.blob("push", "--name", "MG.big", source, store="central").ok()
    check_equal(pushed.get("checksum"), big_digest, "checksum of MG.big pushed after the restarts")
    check_equal(c.blob("stat", "MG.big", store="central").ok().get("size"), BIG, "size of MG.big")


if __name__ == "__main__":
    harness.main(test)
