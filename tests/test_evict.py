#!/usr/bin/env python3
"""`blobstored --evict` on every kind of store (the EvictingStore decorator):
a file store with --capacity, a memory store and, when Ceph is installed, a
rados store with --capacity on a throwaway cluster; each driven by the blob
CLI as a cache would be:

- three 1 MiB Blobs fill a 3 MiB store; a pull of the oldest makes it the
  most recently used, so the next push evicts the second one (the daemon's
  log names it), and every Blob left pulls bit-exact;
- a Blob larger than the whole store is refused (exit 30 with the numbers)
  and evicts nothing;
- `--evict` on a file store without --capacity is refused (exit 1, saying
  why): bounded only by its file system, the cache would be emptied in vain."""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, log_text, MiB, step  # noqa: E402
from harness.ceph import CephCluster  # noqa: E402

POOL = "cache"


def listed(c, store):
    return sorted(b["name"] for b in c.blob("ls", store=store).ok().get("blobs", []))



def cache_behaviour(c, daemon, store):
    step(f"{store}: three 1 MiB Blobs fill 3 MiB; a pull makes the oldest the most recent")
    sources = {}
    for name in ("CT.a", "CT.b", "CT.c"):
        sources[name] = c.path(f"{store}-{name}")
        digest = harness.write_random(sources[name], MiB)
        check_equal(c.blob("push", "--name", name, sources[name], store=store).ok().get("checksum"), digest,
                    f"checksum of {name} pushed to {store}")
    check_equal(c.pull_checksum("CT.a", store, c.path("pulled")), harness.checksum_file(sources["CT.a"]),
                f"CT.a pulled from {store}")

    step(f"{store}: the next push evicts the least recently used Blob, CT.b")
    sources["CT.d"] = c.path(f"{store}-CT.d")
    harness.write_random(sources["CT.d"], MiB)
    c.blob("push", "--name", "CT.d", sources["CT.d"], store=store).ok()
    check_equal(listed(c, store), ["CT.a", "CT.c", "CT.d"], f"Blobs of {store} after the push")
    harness.wait_for(lambda: 'evicted "CT.b"' in log_text(daemon), 10, f"{store}'s log line of the eviction")
    line = next(x for x in log_text(daemon).splitlines() if 'evicted "CT.b"' in x)
    check(f"{MiB} bytes" in line and 'to make room for "CT.d"' in line, f"the eviction's log line: {line!r}")
    for name in ("CT.a", "CT.c", "CT.d"):
        check_equal(c.pull_checksum(name, store, c.path("pulled")), harness.checksum_file(sources[name]),
                    f"{name} pulled from {store} after the eviction")

    step(f"{store}: a Blob larger than the store is refused and evicts nothing")
    huge = c.path("huge")
    harness.write_random(huge, 4 * MiB, algorithm=None)
    c.blob("push", "--name", "CT.huge", huge, store=store).error(EXIT["out_of_space"], f"need {4 * MiB} bytes")
    check_equal(listed(c, store), ["CT.a", "CT.c", "CT.d"], f"Blobs of {store} after the refused push")
    os.unlink(huge)


def test(c):
    step("--evict on a file store without --capacity is refused")
    code, _out, err = c.run([harness.program("blobstore/blobstored"), "--name", "x", "--naming", c.naming,
                             "--store", "file:" + c.path("nocap"), "--evict"], timeout=60)
    check(code == 1 and "--evict on a file store needs --capacity" in err,
          f"blobstored --evict without --capacity: exit {code}: {err.strip()!r}")

    daemon = c.start_daemon("fcache", "file", extra=["--evict", "--capacity", "3M"])
    cache_behaviour(c, daemon, "fcache")
    daemon = c.start_daemon("mcache", "memory:3M", extra=["--evict"])
    cache_behaviour(c, daemon, "mcache")

    if shutil.which("ceph-osd") is None:
        step("Ceph is not installed: the rados store is not tried (scripts/install-deps)")
        return
    with CephCluster(c) as ceph:
        ceph.create_pool(POOL)
        daemon = c.start_daemon("rcache", f"rados:{POOL}",
                                extra=["--evict", "--capacity", "3M", "--ceph-conf", ceph.conf_path])
        cache_behaviour(c, daemon, "rcache")


if __name__ == "__main__":
    harness.main(test)
