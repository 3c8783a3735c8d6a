#!/usr/bin/env python3
"""Clients that die or stall mid-push never leak store space.

- `blob push` killed with SIGKILL while its bytes stream: the daemon sees
  the connection end and keeps the reservation, with the bytes received,
  for --reservation-grace so that the push can be resumed; then it aborts
  it and `blob stores` shows the space back (reserved 0, used unchanged);
  nothing partial is ever listed.
- `blob push` stopped with SIGSTOP mid-stream (connection open, no
  progress): the daemon's inactivity timeout (--timeout) ends it, and the
  grace period reclaims its reservation.
- A client that reserved and obtained its ticket but died before opening
  the data connection (tests/tools/idl_probe --leave-reservation): the
  reservation is reclaimed once --reservation-grace has passed, not before.
The daemon keeps serving throughout and the name can be pushed again."""

import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step  # noqa: E402

GRACE = 4        # --reservation-grace, seconds
TIMEOUT = 4      # --timeout (inactivity), seconds
BIG = 512 * MiB
PROGRESS_AT = 32 * MiB


def usage(c):
    stores = c.blob("stores").ok()["stores"]
    s = [s for s in stores if s["name"] == "central"][0]
    return s["used"], s["reserved"]



def start_push(c, daemon, source, tag):
    err_path = c.path(f"push-{tag}.err")
    with open(err_path, "wb") as err:
        client = c.spawn(f"blob push ({tag})",
                         [harness.program("clients/blob"), "--naming", c.naming, "--store", "central", "--json",
                          "--timeout", "60", "push", "--name", "MG.interrupted", source],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    client.log_paths.append(err_path)
    tmp_dir = os.path.join(daemon.store_dir, "tmp")

    def progress():
        if not client.running():
            raise harness.TestFailure(f"the push ended (exit {client.popen.returncode}) before it was interrupted")
        return harness.reservation_written_past(tmp_dir, PROGRESS_AT)

    part = harness.wait_for(progress, 120, f"the push to write past byte {PROGRESS_AT}", interval=0.005)
    return client, part


def check_space_back(c, daemon, used0, what, timeout):
    t0 = time.monotonic()
    harness.wait_for(lambda: usage(c) == (used0, 0), timeout, f"the space of {what} to come back")
    step(f"{what}: reserved back to 0 after {time.monotonic() - t0:.2f} s")
    check_equal(os.listdir(os.path.join(daemon.store_dir, "tmp")), [], f"reservation files left after {what}")
    names = [b["name"] for b in c.blob("ls", store="central").ok()["blobs"]]
    check_equal(names, ["CT.earlier"], f"Blobs listed after {what}")
    check(daemon.running(), f"blobstored died after {what}")


def daemon_log_says(daemon, text):
    with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
        return text in f.read()


def test(c):
    daemon = c.start_daemon("central", "file", tier="central",
                            extra=["--reservation-grace", str(GRACE), "--timeout", str(TIMEOUT)])
    earlier = c.path("earlier")
    digest = harness.write_random(earlier, MiB)
    c.blob("push", "--name", "CT.earlier", earlier, store="central").ok()
    used0, reserved0 = usage(c)
    check_equal((used0, reserved0), (MiB, 0), "used and reserved bytes before the interrupted pushes")
    source = c.path("big")
    harness.write_random(source, BIG)

    step("blob push killed (SIGKILL) while streaming")
    client, part = start_push(c, daemon, source, "killed")
    os.kill(client.pid, signal.SIGKILL)
    client.popen.wait(timeout=20)
    step(f"client pid {client.pid} killed while {part} was being written")
    t0 = time.monotonic()
    harness.wait_for(lambda: daemon_log_says(daemon, 'push "MG.interrupted": reservation kept with'), 30,
                   "the daemon to keep the killed push's reservation for resuming")
    check_space_back(c, daemon, used0, "the killed push", GRACE + 30)
    elapsed = time.monotonic() - t0
    check(elapsed >= GRACE - 1, f"the killed push's reservation was reclaimed after {elapsed:.2f} s, "
          f"before the {GRACE} s grace in which it can be resumed")

    step("blob push stopped (SIGSTOP) mid-stream: the inactivity timeout aborts it")
    client, part = start_push(c, daemon, source, "stopped")
    os.kill(client.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    _, reserved = usage(c)
    check_equal(reserved, BIG, "bytes reserved while the stopped client holds its connection")
    check_space_back(c, daemon, used0, "the stalled push", TIMEOUT + GRACE + 30)
    check(time.monotonic() - t0 >= TIMEOUT + GRACE - 1,
          f"the stalled push was aborted after {time.monotonic() - t0:.2f} s, "
          f"before its {TIMEOUT} s timeout and {GRACE} s grace")
    os.kill(client.pid, signal.SIGKILL)
    client.popen.wait(timeout=20)

    step("a client that died between reserve and the data connection: reclaimed after the grace period")
    t0 = time.monotonic()  # before the reservation exists: it cannot be reclaimed before t0 + GRACE
    code, out, err = c.run([harness.program("tests/tools/idl_probe"), "--naming", c.naming, "--store", "central",
                            "--leave-reservation", str(8 * MiB)], timeout=60)
    check_equal(code, 0, f"idl_probe --leave-reservation exit status ({out!r} {err!r})")
    check_equal(json.loads(out)["size"], 8 * MiB, "size reported by idl_probe")
    right_after = usage(c)
    if time.monotonic() - t0 < GRACE:  # else the machine was too slow to see it still held
        check_equal(right_after, (used0, 8 * MiB), "used and reserved bytes right after the client left")
    check_space_back(c, daemon, used0, "the abandoned reservation", GRACE + 30)
    elapsed = time.monotonic() - t0
    check(elapsed >= GRACE, f"the reservation was reclaimed after {elapsed:.2f} s, before the {GRACE} s grace")
    check(daemon_log_says(daemon, f'reservation of "probe.left" ({8 * MiB} bytes) unused for {GRACE} s: '
                                  'aborted, space released'),
          "the daemon's log does not say the abandoned reservation was released")

    step("the daemon still serves; the interrupted name can be pushed")
    pushed = c.blob("push", "--name", "MG.interrupted", earlier, store="central").ok()
    check_equal(pushed["checksum"], digest, "checksum of MG.interrupted pushed afterwards")
    check_equal(c.pull_checksum("CT.earlier", "central", c.path("earlier.pulled")), digest,
                "checksum of CT.earlier pulled afterwards")


if __name__ == "__main__":
    harness.main(test)
