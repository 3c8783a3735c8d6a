#!/usr/bin/env python3
"""A stopped and continued process keeps serving.

SIGSTOP then SIGCONT (what `kill -STOP`, a job-control shell, strace or gdb
attaching do) makes epoll_wait and sigtimedwait return EINTR even without a
signal handler. blobstored's data plane used to end its reactor loop on that
while the control plane kept issuing tickets: `stat` answered, every transfer
timed out.

- blobstored is stopped and continued several times, then a real push and
  pull (checksum of source, push, pull and pulled file equal) must succeed,
  also of a Blob pushed before; the daemon's log says nothing of a dead
  data plane.
- the client side: `blob push -` from a pipe is stopped and continued
  several times while its bytes stream; it completes with the right checksum.
"""

import os
import signal
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step  # noqa: E402

ROUNDS = 4


def state(pid):
    """The one-letter state of /proc/PID/stat (T: stopped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rpartition(")")[2].split()[0]


def stop_and_continue(proc, rounds):
    for i in range(rounds):
        os.kill(proc.pid, signal.SIGSTOP)
        harness.wait_for(lambda: state(proc.pid) == "T", 10, f"{proc.name} to be stopped")
        os.kill(proc.pid, signal.SIGCONT)
        harness.wait_for(lambda: state(proc.pid) != "T", 10, f"{proc.name} to continue")
    step(f"{proc.name} stopped and continued {rounds} times")


def round_trip(c, name, size):
    source = c.path(f"{name}.src")
    digest = harness.write_random(source, size)
    # --timeout 10: on a dead data plane the push fails in seconds, not minutes.
    pushed = c.blob("--timeout", "10", "push", "--name", name, source, store="central", timeout=120).ok()
    check_equal(pushed["checksum"], digest, f"checksum reported by push {name}")
    pulled = c.path(f"{name}.pulled")
    c.blob("--timeout", "10", "--no-local", "pull", name, pulled, store="central", timeout=120).ok()
    check_equal(harness.checksum_file(pulled), digest, f"checksum of {name} pulled over the data port")
    return digest


def test(c):
    daemon = c.start_daemon("central", "file", tier="central", extra=["--no-sync"])
    before = round_trip(c, "CT.before", 3 * MiB)

    step("the daemon is stopped and continued; then real transfers over its data port")
    stop_and_continue(daemon, ROUNDS)
    check(daemon.running(), "blobstored exited after SIGSTOP/SIGCONT")
    round_trip(c, "CT.after", 5 * MiB + 17)
    pulled = c.path("CT.before.again")
    c.blob("--timeout", "10", "--no-local", "pull", "CT.before", pulled, store="central", timeout=120).ok()
    check_equal(harness.checksum_file(pulled), before, "checksum of CT.before pulled after the stops")

    step("a second series of stops, with a transfer between each")
    for i in range(2):
        stop_and_continue(daemon, 2)
        round_trip(c, f"CT.series{i}", MiB)
    with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
        log = f.read()
    check("data plane stopped" not in log and "reactor failed" not in log,
          "the daemon's log reports a reactor failure after SIGSTOP/SIGCONT")

    step("blob push - from a pipe, stopped and continued while it streams")
    chunk = os.urandom(MiB)
    chunks = 24
    err_path = c.path("push-stdin.err")
    with open(err_path, "wb") as err:
        client = c.spawn("blob push -", [harness.program("clients/blob"), "--naming", c.naming, "--store", "central",
                                         "--json", "--timeout", "30", "push", "--name", "CT.piped", "-"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    client.log_paths.append(err_path)
    writer_error = []

    def write_some(n):
        try:
            for _ in range(n):
                client.popen.stdin.write(chunk)
            client.popen.stdin.flush()
        except OSError as e:
            writer_error.append(e)

    for part in range(3):
        w = threading.Thread(target=write_some, args=(chunks // 3,), daemon=True)
        w.start()
        w.join(timeout=60)
        check(not w.is_alive() and not writer_error,
              f"blob push - stopped reading its stdin (part {part}): {writer_error}")
        stop_and_continue(client, 2)
    client.popen.stdin.close()
    try:
        client.popen.wait(timeout=120)  # its stdout is one JSON line: the pipe cannot fill
    except subprocess.TimeoutExpired:
        raise harness.TestFailure("blob push - did not finish within 120 s after its stdin closed") from None
    out = client.popen.stdout.read()
    result = harness.BlobResult(["blob", "push", "-"], client.popen.returncode, out.decode(), open(err_path).read())
    pushed = result.ok()
    digest = harness.checksum_bytes(chunk * chunks)  # every write succeeded (checked above)
    check_equal(pushed["checksum"], digest, "checksum of the piped push")
    check_equal(pushed["bytes"], chunks * MiB, "bytes of the piped push")
    pulled = c.path("CT.piped.pulled")
    c.blob("--no-local", "pull", "CT.piped", pulled, store="central", timeout=120).ok()
    check_equal(harness.checksum_file(pulled), digest, "checksum of CT.piped pulled")


if __name__ == "__main__":
    harness.main(test)
