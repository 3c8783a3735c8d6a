#!/usr/bin/env python3
"""Placement: `blob push` without --store asks the BlobLocator where the
Blob goes. Three stores on two tiers, every daemon with --default-store
c2 (a cluster store, neither first by name, nor nearest, nor the bound
locator's own store): a push without --store lands on c2; once c2 is
full, on the nearest store with room (a-ws); --tier cluster lands on a
store of that tier with room, the default first, then the other (c1);
when none has room: exit 30 naming the tier asked and each store with its
free bytes; a tier without stores: exit 26 naming the registered ones;
--tier with --store and an unknown tier: usage (1). A pull without
--store finds the Blob through the locator (the library's debug line says
so) and gets its bytes."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402

MIB = 1 << 20


def pushed_to(c, path, name, *args):
    r = c.blob("push", "--name", name, *args, path).ok()
    check(r is not None, f"push {name} --json printed no JSON object")
    return r.get("store"), r.get("checksum")


def test(c):
    # The locator bound is the last daemon's (a-ws): its own store is not
    # the configured default.
    default = ("--default-store", "c2")
    c.start_daemon("c2", "file", tier="cluster", extra=("--capacity", "3M", *default))
    c.start_daemon("c1", "file", tier="cluster", extra=("--capacity", "3M", *default))
    c.start_daemon("a-ws", "file", tier="workstation", extra=("--capacity", "64M", *default))

    one, two = c.path("one"), c.path("two")
    one_digest = harness.write_random(one, MIB)
    two_digest = harness.write_random(two, 2 * MIB)

    step("a push without --store lands on the configured default (c2)")
    check_equal(pushed_to(c, one, "CT.default"), ("c2", one_digest), "push CT.default without --store: store")
    check_equal(c.blob("stat", "CT.default", store="c2").ok().get("checksum"), one_digest, "stat CT.default on c2")

    step("--tier cluster: the default while it has room, then the other store of the tier")
    check_equal(pushed_to(c, two, "CT.cluster1", "--tier", "cluster"), ("c2", two_digest),
                "push CT.cluster1 --tier cluster (c2 has 2 MiB free): store")
    check_equal(pushed_to(c, two, "CT.cluster2", "--tier", "cluster"), ("c1", two_digest),
                "push CT.cluster2 --tier cluster (c2 full, c1 has 3 MiB free): store")

    step("the default full: a push without --store goes to the nearest store with room")
    check_equal(pushed_to(c, one, "CT.spill"), ("a-ws", one_digest), "push CT.spill without --store (c2 full)")
    check_equal(pushed_to(c, one, "CT.ws", "--tier", "workstation"), ("a-ws", one_digest),
                "push CT.ws --tier workstation")

    step("no store of the tier has room: exit 30 naming the tier and each store's free bytes")
    r = c.blob("push", "--name", "CT.nowhere", "--tier", "cluster", two)
    r.error(harness.EXIT["out_of_space"], 'push "CT.nowhere": no store of tier cluster has room for 2097152 bytes')
    for text in ("c1 (cluster): 1048576 bytes free", "c2 (cluster, the default): 0 bytes free",
                 "of other tiers: a-ws (workstation)"):
        r.error(harness.EXIT["out_of_space"], text)
    c.blob("stat", "CT.nowhere").error(harness.EXIT["no_such_blob"], '"CT.nowhere"')

    step("a tier without stores: exit 26 naming the registered stores")
    c.blob("push", "--name", "CT.mem", "--tier", "memory", one).error(
        harness.EXIT["unknown_store"],
        "no registered store is of tier memory (registered: a-ws (workstation), c1 (cluster), "
        "c2 (cluster, the default))")

    step("--tier with --store, an unknown tier, --tier on pull: usage errors")
    c.blob("push", "--name", "CT.x", "--tier", "cluster", one, store="c1").error(
        harness.EXIT["usage"], "--tier and --store: give one")
    c.blob("push", "--name", "CT.x", "--tier", "archive", one).error(
        harness.EXIT["usage"], '--tier: "archive" is not a tier (memory, workstation, cluster, central)')
    c.blob("pull", "CT.default", c.path("x"), "--tier", "cluster").error(
        harness.EXIT["usage"], "--tier applies to push only, not pull")

    step("a pull without --store finds the Blob through the locator")
    out = c.path("pulled")
    r = c.blob("-d", "--no-local", "pull", "CT.cluster2", out).ok()
    check_equal(r.get("store"), "c1", "pull CT.cluster2 without --store: store")
    check_equal(harness.checksum_file(out), two_digest, "pull CT.cluster2 without --store: bytes")
    check('the locator names store "c1"' in c.blob("-d", "stat", "CT.cluster2").stderr,
          "stat CT.cluster2 -d: the library's debug line saying the locator named c1")


if __name__ == "__main__":
    harness.main(test)
