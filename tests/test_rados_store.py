#!/usr/bin/env python3
"""RadosStore's unit tests (blobstore/tests/RadosStoreTest, Boost.Test) on a
real Ceph cluster: this script starts the throwaway single-node cluster
(harness.ceph.CephCluster) and a pool, then runs the program with CEPH_CONF
and BS_RADOS_POOL set. Without them the program exits 77, which is why
`make check` builds it but runs it only from here.

What the program covers (no mock of librados: it inspects and damages the
pool with librados itself): reserve, write, commit, ranges, list, stat,
remove, a view that outlives a removal; create against create and replace
against replace across two store objects on one pool (two daemons); abort
and destructor leave no object and no index record; a push whose process
dies by SIGKILL is never listed and is cleaned up by another store after its
grace, not before; SHA-256 and CRC32C; verify finding a flipped byte, a
truncated and a missing data object; a 300 MiB Blob in 4 MiB objects with
the peak RSS growing < 64 MiB (its push and verify speeds printed);
capacity; a missing pool, an unreachable cluster (within the timeout), an
unreadable configuration and a missing key, each with its error.

Skipped (77) only when Ceph is not installed (scripts/install-deps)."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check_equal, step  # noqa: E402
from harness.ceph import CephCluster, ceph_programs  # noqa: E402

POOL = "blobs"
TIMEOUT = 600


def test(ws):
    ceph_programs()  # skip (77) before anything else when Ceph is not installed
    program = harness.program("blobstore/tests/RadosStoreTest")
    with CephCluster(ws) as ceph:
        ceph.create_pool(POOL, pg_num=8)
        env = dict(ceph.env, BS_RADOS_POOL=POOL, BOOST_TEST_LOG_LEVEL="test_suite")
        log_path = ws.path("RadosStoreTest.log")
        step(f"{program} (log {log_path})")
        with open(log_path, "wb") as log:
            try:
                r = subprocess.run([program], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   env=env, timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                raise harness.TestFailure(f"RadosStoreTest did not finish within {TIMEOUT} s") from None
        with open(log_path, encoding="utf-8", errors="replace") as f:
            sys.stdout.write(f.read())
        check_equal(r.returncode, 0, "exit status of RadosStoreTest")


if __name__ == "__main__":
    harness.run(test, harness.Workspace)
