#!/usr/bin/env python3
"""locate across stores of different tiers: nearest tier first, whatever the
store names and start order; a Blob held by one store is listed once; an
unknown Blob has no location; without --store, stat and pull use the
nearest store that holds the Blob; a stopped store is no longer listed."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402


def locations(c, name):
    r = c.blob("locate", name).ok()
    check(r is not None, f"locate {name} --json printed no JSON object")
    check_equal(r.get("name"), name, f"locate {name}: name")
    return [(loc.get("store"), loc.get("tier")) for loc in r.get("locations", [])]


def test(c):
    # Names sort opposite to the tiers and the stores start farthest first,
    # so that only the tier can explain the order.
    c.start_daemon("a-archive", "file", tier="central")
    c.start_daemon("m-ws", "file", tier="workstation")
    c.start_daemon("z-cache", "memory:32M", tier="memory")

    near, far = c.path("near"), c.path("far")
    near_digest = harness.write_random(near, 4096)
    far_digest = harness.write_random(far, 5000)

    step("a Blob in every store: memory, workstation, central")
    for store in ("a-archive", "m-ws"):
        c.blob("push", "--name", "CT.all", far, store=store).ok()
    c.blob("push", "--name", "CT.all", near, store="z-cache").ok()
    check_equal(locations(c, "CT.all"), [("z-cache", "memory"), ("m-ws", "workstation"), ("a-archive", "central")],
                "locate CT.all (stores, nearest tier first)")

    step("without --store, stat and pull use the nearest store")
    stat = c.blob("stat", "CT.all").ok()
    check_equal((stat.get("store"), stat.get("checksum")), ("z-cache", near_digest), "stat CT.all without --store")
    out = c.path("pulled")
    c.blob("--no-local", "pull", "CT.all", out).ok()
    check_equal(harness.checksum_file(out), near_digest, "pull CT.all without --store: content of the memory tier")

    step("a Blob in one store is listed once")
    c.blob("push", "--name", "CT.archived", far, store="a-archive").ok()
    check_equal(locations(c, "CT.archived"), [("a-archive", "central")], "locate CT.archived")
    c.blob("push", "--name", "CT.two", far, store="a-archive").ok()
    c.blob("push", "--name", "CT.two", far, store="z-cache").ok()
    check_equal(locations(c, "CT.two"), [("z-cache", "memory"), ("a-archive", "central")], "locate CT.two")
    stat = c.blob("stat", "CT.archived").ok()
    check_equal((stat.get("store"), stat.get("checksum")), ("a-archive", far_digest),
                "stat CT.archived without --store")

    step("an unknown Blob has no location")
    r = c.blob("locate", "CT.unknown")
    if r.code == 0:
        check_equal(r.json.get("locations") if r.json else None, [], "locate CT.unknown: locations")
    else:
        r.error(harness.EXIT["no_such_blob"], '"CT.unknown"')
    c.blob("stat", "CT.unknown").error(harness.EXIT["no_such_blob"], '"CT.unknown"')
    c.blob("locate", "../etc/passwd").error(harness.EXIT["invalid_name"], "../etc/passwd")

    step("rm in the nearest store: locate and stat fall back to the next one")
    c.blob("rm", "CT.all", store="z-cache").ok()
    check_equal(locations(c, "CT.all"), [("m-ws", "workstation"), ("a-archive", "central")],
                "locate CT.all after rm in z-cache")
    stat = c.blob("stat", "CT.all").ok()
    check_equal((stat.get("store"), stat.get("checksum")), ("m-ws", far_digest), "stat CT.all after rm in z-cache")

    step("a stopped store is no longer listed")
    ws = next(p for p in c.processes if p.name.startswith("blobstored m-ws"))
    check_equal(ws.stop(), 0, "exit status of blobstored m-ws after SIGTERM")
    check_equal(locations(c, "CT.all"), [("a-archive", "central")], "locate CT.all after m-ws stopped")


if __name__ == "__main__":
    harness.main(test)
