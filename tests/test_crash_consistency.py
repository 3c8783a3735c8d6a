#!/usr/bin/env python3
"""blobstored killed with SIGKILL during a stream of pushes, at several
points: after k acknowledged pushes for several k (the next push is then
usually in flight) and in the middle of a large Blob. After each restart on
the same directory:
- every push that was acknowledged is listed with its size and checksum,
  and pulls back with that checksum (the acknowledgement means durable);
- every listed Blob is complete (its size and checksum are those of a source
  pushed to that name: a push committed just before the kill but not yet
  acknowledged may be there, whole, or not at all);
- no reservation is left in tmp/ but those kept for a resume, each with its
  journal (test_resume_after_restart.py), never listed.
(test_kill_mid_push.py kills during a 1 GiB push; this adds the kill points
between and across acknowledged pushes.)"""

import os
import signal
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step  # noqa: E402

KILL_AFTER = (1, 3, 6)    # acknowledged pushes before each SIGKILL
SIZES = (MiB // 2, 3 * MiB, 2 * MiB + 17, 5 * MiB, MiB + 4096, 7 * MiB)


class Pusher(threading.Thread):
    """Pushes sources[i % n] as ROUND.i one after another until a push fails
    or `limit` pushes were made; records the acknowledged ones."""

    def __init__(self, c, round_name, sources, limit=40):
        super().__init__(daemon=True)
        self.c, self.round, self.sources, self.limit = c, round_name, sources, limit
        self.acked = {}          # name -> (size, checksum)
        self.attempted = {}      # name -> (size, checksum) of every push started
        self.cond = threading.Condition()
        self.failure = None

    def run(self):
        for i in range(self.limit):
            path, size, digest = self.sources[i % len(self.sources)]
            name = f"{self.round}.{i}"
            with self.cond:
                self.attempted[name] = (size, digest)
            r = self.c.blob("push", "--name", name, path, store="central", timeout=120)
            with self.cond:
                if r.code != 0:
                    self.failure = r
                    self.cond.notify_all()
                    return
                check_equal(r.json.get("checksum"), digest, f"checksum acknowledged for {name}")
                self.acked[name] = (size, digest)
                self.cond.notify_all()

    def wait_acked(self, k, timeout=120):
        with self.cond:
            if not self.cond.wait_for(lambda: len(self.acked) >= k or self.failure, timeout):
                raise harness.TestFailure(f"{k} pushes were not acknowledged within {timeout} s")
            if self.failure and len(self.acked) < k:
                raise harness.TestFailure("a push failed before the kill: " + self.failure.describe())


def verify(c, daemon, acked, attempted):
    tmp_dir = os.path.join(daemon.store_dir, "tmp")
    left = set(os.listdir(tmp_dir))
    orphans = sorted(e for e in left if not (e.endswith(".part") and e + ".resume" in left)
                     and not (e.endswith(".part.resume") and e[:-len(".resume")] in left))
    check_equal(orphans, [], f"reservations left in {tmp_dir} after the restart, not kept for a resume")
    listed = {b["name"]: (b["size"], b["checksum"]) for b in c.blob("ls", store="central").ok()["blobs"]}
    for name, expected in acked.items():
        check(name in listed, f"acknowledged push {name} is missing after the restart")
        check_equal(listed[name], expected, f"size and checksum of acknowledged {name} after the restart")
    for name, got in listed.items():
        check(name in attempted, f"{name} is listed but was never pushed")
        check_equal(got, attempted[name], f"size and checksum of listed {name} (a partial Blob?)")
    extra = sorted(set(listed) - set(acked))
    step(f"{len(acked)} acknowledged Blobs intact; committed but unacknowledged: {extra or 'none'}")
    sample = sorted(acked)[-1]
    out = c.path("sample.pulled")
    c.blob("--no-local", "pull", sample, out, store="central").ok()
    check_equal(harness.checksum_file(out), acked[sample][1], f"checksum of {sample} pulled after the restart")
    os.unlink(out)


def test(c):
    sources = []
    for i, size in enumerate(SIZES):
        path = c.path(f"source-{i}")
        sources.append((path, size, harness.write_random(path, size)))
    daemon = c.start_daemon("central", "file", tier="central")
    acked, attempted = {}, {}

    for k in KILL_AFTER:
        step(f"SIGKILL after {k} acknowledged pushes")
        pusher = Pusher(c, f"CT.k{k}", sources)
        pusher.start()
        pusher.wait_acked(k)
        os.kill(daemon.pid, signal.SIGKILL)
        daemon.popen.wait(timeout=20)
        pusher.join(timeout=180)
        check(not pusher.is_alive(), "the pushing thread did not stop after the kill")
        check(len(pusher.acked) >= k, f"only {len(pusher.acked)} pushes acknowledged")
        acked.update(pusher.acked)
        attempted.update(pusher.attempted)
        daemon = c.restart_daemon(daemon)
        verify(c, daemon, acked, attempted)

    step("SIGKILL in the middle of a 256 MiB push, after acknowledged small pushes")
    big = c.path("big")
    big_digest = harness.write_random(big, 256 * MiB)
    pusher = Pusher(c, "CT.mid", sources, limit=2)
    pusher.start()
    pusher.join(timeout=180)
    check_equal(len(pusher.acked), 2, "small pushes acknowledged before the large one")
    acked.update(pusher.acked)
    attempted.update(pusher.attempted)
    attempted["MG.big"] = (256 * MiB, big_digest)
    err_path = c.path("big.err")
    with open(err_path, "wb") as err:
        client = c.spawn("blob push MG.big", [harness.program("clients/blob"), "--naming", c.naming, "--store",
                                              "central", "push", "--name", "MG.big", big],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    tmp_dir = os.path.join(daemon.store_dir, "tmp")

    def in_flight():
        if not client.running():
            raise harness.TestFailure(f"the large push ended (exit {client.popen.returncode}) before the kill")
        try:
            return any(os.path.getsize(os.path.join(tmp_dir, e)) > 0 for e in os.listdir(tmp_dir))
        except FileNotFoundError:
            return False

    harness.wait_for(in_flight, 120, "the large push's reservation in tmp/", interval=0.005)
    os.kill(daemon.pid, signal.SIGKILL)
    daemon.popen.wait(timeout=20)
    code = client.popen.wait(timeout=60)
    check(code != 0, "the large push succeeded although the daemon was killed during it")
    daemon = c.restart_daemon(daemon)
    verify(c, daemon, acked, attempted)
    check("MG.big" not in [b["name"] for b in c.blob("ls", store="central").ok()["blobs"]],
          "the interrupted MG.big is listed")


if __name__ == "__main__":
    harness.main(test)
