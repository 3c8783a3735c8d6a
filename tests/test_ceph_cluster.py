#!/usr/bin/env python3
"""The throwaway Ceph cluster of the RADOS tests (harness.ceph.CephCluster),
checked on its own with the `rados` CLI and librados before any store of
ours is built on it:

- one mon on two ephemeral ports of 127.0.0.1, one mgr, one OSD (memstore):
  HEALTH_OK with the OSD up and every PG active+clean (the time printed);
  each daemon's pid file names its PID, its admin socket lies in the
  workspace, nothing is written to /var/run/ceph or /var/log/ceph;
- a pool of 8 PGs, all active+clean;
- `rados put` / `rados get` of 10 MiB of random bytes: the same bytes back;
  `rados stat` reports the size;
- range reads through librados (the CLI has none): the first 4 KiB, 3000
  bytes across the 4 MiB boundary, the last byte, and a read past the end
  that returns only what is there;
- a missing object: `rados get` and `rados stat` fail (exit 1) with ENOENT
  naming pool and object; a missing pool: `rados ls` fails naming the pool;
- after the cluster is left: every daemon exited 0 on SIGTERM, its PID is
  gone, none of its listening sockets remains (nothing on the mon's ports).

Skipped (77) only when Ceph is not installed (scripts/install-deps)."""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step  # noqa: E402
from harness.ceph import CephCluster, ceph_programs, listening  # noqa: E402

POOL = "blobs"
SIZE = 10 * MiB
SYSTEM_DIRS = ("/var/run/ceph", "/var/log/ceph")


def listing(directory):
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []


def ceph_message(stderr):
    """The rados CLI's own message in its stderr, without the lines Ceph's
    client library logs meanwhile (`2026-11-28T08:04:38.227+0000 7f0d... -1
    monclient: ...` when a monitor answers slowly)."""
    log_line = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+[+-]\d{4} [0-9a-f]+ ")
    return "\n".join(line for line in stderr.strip().splitlines() if not log_line.match(line))


def check_missing(ceph, ws):
    step("a missing object and a missing pool")
    out = ws.path("missing.out")
    r = ceph.rados("get", "missing", out, pool=POOL)
    check_equal(r.returncode, 1, f"exit status of `rados get missing` (stderr {r.stderr.strip()!r})")
    check_equal(ceph_message(r.stderr), f"error getting {POOL}/missing: (2) No such file or directory",
                "error of `rados get` of a missing object")
    r = ceph.rados("stat", "missing", pool=POOL)
    check_equal(r.returncode, 1, f"exit status of `rados stat missing` (stderr {r.stderr.strip()!r})")
    check_equal(ceph_message(r.stderr), f"error stat-ing {POOL}/missing: (2) No such file or directory",
                "error of `rados stat` of a missing object")
    r = ceph.rados("ls", pool="no-such-pool")
    check(r.returncode != 0, "`rados -p no-such-pool ls` succeeded")
    check("error opening pool no-such-pool: (2) No such file or directory" in r.stderr,
          f"error of `rados ls` on a missing pool: {r.stderr.strip()!r}")


def check_round_trip(ceph, ws):
    step(f"rados put / get of {SIZE} random bytes")
    src, back = ws.path("src"), ws.path("back")
    harness.write_random(src, SIZE, algorithm=None)
    with open(src, "rb") as f:
        data = f.read()
    r = ceph.rados("put", "obj", src, pool=POOL)
    check_equal(r.returncode, 0, f"exit status of `rados put` (stderr {r.stderr.strip()!r})")
    r = ceph.rados("get", "obj", back, pool=POOL)
    check_equal(r.returncode, 0, f"exit status of `rados get` (stderr {r.stderr.strip()!r})")
    with open(back, "rb") as f:
        came = f.read()
    check(came == data, f"`rados get` gave {len(came)} bytes that differ from the {len(data)} put")

    r = ceph.rados("stat", "obj", pool=POOL)
    check_equal(r.returncode, 0, f"exit status of `rados stat` (stderr {r.stderr.strip()!r})")
    check(r.stdout.startswith(f"{POOL}/obj mtime ") and r.stdout.strip().endswith(f", size {SIZE}"),
          f"`rados stat obj` says {r.stdout.strip()!r}, expected '{POOL}/obj mtime …, size {SIZE}'")

    step("range reads through librados")
    for offset, length in ((0, 4096), (4 * MiB - 1000, 3000), (SIZE - 1, 1), (SIZE - 10, 100), (SIZE, 10)):
        got = ceph.read_range(POOL, "obj", offset, length)
        check_equal(got, data[offset:offset + length], f"bytes [{offset}, +{length}) of obj")


def test(ws):
    ceph_programs()  # skip (77) before anything else when Ceph is not installed
    t0 = time.monotonic()
    before = {d: listing(d) for d in SYSTEM_DIRS}
    with CephCluster(ws) as ceph:
        step(f"time to HEALTH_OK: {ceph.ready_seconds:.1f} s")
        for daemon in ceph.daemons:
            asok = ceph.path("run", daemon.name[len("ceph-"):] + ".asok")
            check(os.path.exists(asok), f"{daemon.name} has no admin socket {asok}")
        rss = ceph.rss_kib()
        step("RSS: " + ", ".join(f"{n} {k // 1024} MiB" for n, k in rss.items())
             + f"; total {sum(rss.values()) // 1024} MiB")
        ceph.create_pool(POOL, pg_num=8)
        check_round_trip(ceph, ws)
        check_missing(ceph, ws)
        rss = ceph.rss_kib()
        step(f"RSS after the transfers: total {sum(rss.values()) // 1024} MiB")
        pids, ports, sockets = ceph.pids(), sorted(ceph.ports), dict(ceph.sockets)
        check(set(ceph.mon_ports) < set(ports), f"the daemons listen on {ports} only")
    step(f"stopped: exit statuses {ceph.exit_codes}")
    for name, code in ceph.exit_codes.items():
        check_equal(code, 0, f"exit status of {name} after SIGTERM")
    alive = [pid for pid in pids if os.path.exists(f"/proc/{pid}")]
    check(not alive, f"PIDs of the cluster still present: {alive}")
    # The mon's ports are ephemeral and ours; the mgr's and OSD's are the first
    # free ones from 6800, where another cluster may listen by now: their
    # sockets (inodes) must be gone.
    check_equal(listening(ports=ceph.mon_ports, sockets=sockets), [],
                f"ports of the cluster {ports} listened on after it stopped")
    for directory, names in before.items():
        check_equal(listing(directory), names, f"entries of {directory} (the cluster keeps to its workspace)")
    step(f"test wall time {time.monotonic() - t0:.1f} s (HEALTH_OK after {ceph.ready_seconds:.1f} s)")


if __name__ == "__main__":
    harness.run(test, harness.Workspace)
