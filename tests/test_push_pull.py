#!/usr/bin/env python3
"""Push and pull through two daemons (a FileStore and a MemoryStore): whole
Blobs of 0 B, 1 B, 0.5 MB, 32 MB and (FileStore only) 1 GB with checksum
(CRC32C, the default) equality between the source, `push --json`, `stat
--json` and the pulled copy; ranged reads to files and to stdout; a Blob
pushed with `--checksum sha256`, and the usage errors of --checksum; ls,
stores, rm; a clean SIGTERM."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step  # noqa: E402

SIZES = [0, 1, 512 * 1024, 32 * MiB]
BIG = 1 << 30


def push_and_verify(c, store, name, source, size, digest):
    pushed = c.blob("push", "--name", name, source, store=store).ok()
    check(pushed is not None, f"push --json printed no JSON object for {name}")
    check_equal(pushed.get("command"), "push", f"push {name}: command")
    check_equal(pushed.get("store"), store, f"push {name}: store")
    check_equal(pushed.get("name"), name, f"push {name}: name")
    check_equal(pushed.get("bytes"), size, f"push {name}: bytes")
    check_equal(pushed.get("checksum"), digest, f"push {name}: checksum against `blob checksum` of the source")
    stat = c.blob("stat", name, store=store).ok()
    check_equal(stat.get("store"), store, f"stat {name}: store")
    check_equal(stat.get("name"), name, f"stat {name}: name")
    check_equal(stat.get("size"), size, f"stat {name}: size")
    check_equal(stat.get("checksum"), digest, f"stat {name}: checksum against `blob checksum` of the source")
    check(isinstance(stat.get("committed"), str) and stat["committed"].endswith("Z"),
          f"stat {name}: committed is not an RFC 3339 UTC time: {stat.get('committed')!r}")


def pull_and_verify(c, store, name, size, digest, local, store_kind):
    out = c.path(f"pulled-{store}-{name}-{'local' if local else 'tcp'}")
    args = ["pull", name, out] if local else ["--no-local", "pull", name, out]
    pulled = c.blob(*args, store=store).ok()
    check_equal(pulled.get("command"), "pull", f"pull {name}: command")
    check_equal(pulled.get("bytes"), size, f"pull {name} from {store}: bytes")
    check_equal(pulled.get("checksum"), digest, f"pull {name} from {store}: checksum reported")
    check(os.path.exists(out), f"pull {name} from {store} wrote no file {out}")
    check_equal(os.path.getsize(out), size, f"pull {name} from {store}: size of the pulled file")
    check_equal(harness.checksum_file(out, digest.split(":")[0]), digest,
                f"pull {name} from {store}: checksum of the pulled file")
    if not local:
        check(pulled.get("local") is False, f"pull --no-local {name} used the local fast path: {pulled}")
    elif store_kind == "file":
        if size > 0:  # an empty Blob has nothing to map: either path is right
            # Same host, a readable file: docs/PROTOCOL.md "Local fast path".
            check(pulled.get("local") is True, f"pull {name} from FileStore {store} on the same host did not "
                                               f"use the local fast path: {pulled}")
    else:
        check(pulled.get("local") is False, f"pull {name} from MemoryStore {store} claims the local fast path")
    os.unlink(out)
    return pulled


def ranges(c, store, name, source, size, digest):
    """Ranged reads compared with the source bytes, to stdout and to a file."""
    cases = [(0, 132, "the header"), (size // 3, size // 4, "a middle range"), (size - 1, 1, "the last byte")]
    for offset, length, what in cases:
        r = c.blob("pull", name, "-", "--offset", offset, "--length", length, store=store, binary=True)
        r.ok()
        want = harness.read_range(source, offset, length)
        check(r.stdout == want,
              f"pull {name} [{offset}, {offset + length}) ({what}) to stdout from {store}: "
              f"got {len(r.stdout)} bytes ({harness.checksum_bytes(r.stdout, 'sha256')[:23]}), expected {len(want)} "
              f"({harness.checksum_bytes(want, 'sha256')[:23]})")
        check(r.json is not None, f"pull {name} - --json printed no JSON object on stderr: {r.stderr!r}")
        check_equal((r.json.get("offset"), r.json.get("length"), r.json.get("bytes")), (offset, length, length),
                    f"pull {name} - ({what}): JSON offset, length, bytes")
        check_equal(r.json.get("checksum"), digest, f"pull {name} - ({what}): checksum is the whole Blob's")
    offset, length = size // 2, size // 8
    out = c.path(f"range-{store}-{name}")
    c.blob("--no-local", "pull", name, out, "--offset", offset, "--length", length, store=store).ok()
    with open(out, "rb") as f:
        got = f.read()
    check(got == harness.read_range(source, offset, length),
          f"pull {name} [{offset}, {offset + length}) to a file from {store}: content differs from the source")
    os.unlink(out)


def checksum_algorithms(c, kinds, source, size, crc):
    """A Blob keeps the algorithm it was pushed with: `--checksum sha256`
    gives hashlib's SHA-256 in push, stat (JSON and text), ls and pull;
    without --checksum (or with crc32c) the store's default, CRC32C, equal to
    `blob checksum` of the source (`crc`). --checksum with another algorithm,
    or on a command other than push, is a usage error."""
    sha = harness.checksum_file(source, "sha256")
    check(crc.startswith("crc32c:") and len(crc) == len("crc32c:") + 8, f"checksum of {source}: {crc!r}")
    for store, kind in kinds.items():
        name = "CT.sha256"
        pushed = c.blob("push", "--checksum", "sha256", "--name", name, source, store=store).ok()
        check_equal(pushed.get("checksum"), sha, f"push --checksum sha256 to {store}: checksum against hashlib")
        check_equal(c.blob("stat", name, store=store).ok().get("checksum"), sha, f"stat {name} in {store}")
        text = c.blob("stat", name, store=store, json_out=False)
        text.ok()
        check(f"\nchecksum:  {sha}\n" in text.stdout, f"`blob stat {name}` prints no line `checksum:  {sha}`: "
              + text.describe())
        listed = c.blob("ls", store=store, json_out=False)
        listed.ok()
        check(f"  {sha}  {name}\n" in listed.stdout, f"`blob ls` shows no {sha} for {name}: " + listed.describe())
        pull_and_verify(c, store, name, size, sha, local=False, store_kind=kind)
        pull_and_verify(c, store, name, size, sha, local=True, store_kind=kind)
        c.blob("rm", name, store=store).ok()
        for extra in ([], ["--checksum", "crc32c"]):
            pushed = c.blob("push", *extra, "--name", "CT.crc32c", source, "--replace", store=store).ok()
            check_equal(pushed.get("checksum"), crc, f"push {' '.join(extra)} to {store}: the `blob checksum` CRC32C")
            check_equal(c.blob("stat", "CT.crc32c", store=store).ok().get("checksum"), crc,
                        f"stat CT.crc32c in {store}")
        c.blob("rm", "CT.crc32c", store=store).ok()

    c.blob("push", "--checksum", "md5", "--name", "CT.md5", source, store="central", json_out=False).error(
        harness.EXIT["usage"], 'blob: --checksum: "md5" is not a checksum algorithm (allowed: crc32c, sha256)')
    c.blob("stat", "CT.md5", store="central").error(harness.EXIT["no_such_blob"], 'blob "CT.md5" not found')
    c.blob("stat", "--checksum", "sha256", "CT.1.2.840.1", store="central", json_out=False).error(
        harness.EXIT["usage"],
        "--checksum applies to push and checksum only, not stat (a Blob keeps the checksum it was pushed with)")


def test(c):
    file_store = c.start_daemon("central", "file", tier="central")
    mem_store = c.start_daemon("mem", "memory:128M", tier="memory")
    stores = {s["name"]: s for s in c.blob("stores").ok().get("stores", [])}
    check_equal(sorted(stores), ["central", "mem"], "stores registered")
    check_equal(stores["central"].get("kind"), "file", "kind of central")
    check_equal(stores["mem"].get("kind"), "memory", "kind of mem")
    check_equal(stores["central"].get("data"), file_store.ready["data"], "data endpoint of central")
    check_equal(stores["mem"].get("data"), mem_store.ready["data"], "data endpoint of mem")

    kinds = {"central": "file", "mem": "memory"}
    sources = {}
    for size in SIZES:
        name = f"CT.1.2.840.{size}"
        source = c.path(f"src-{size}")
        digest = harness.write_random(source, size)
        sources[name] = (source, size, digest)
        for store in ("central", "mem"):
            step(f"push/pull {size} bytes through {store}")
            push_and_verify(c, store, name, source, size, digest)
            pull_and_verify(c, store, name, size, digest, local=False, store_kind=kinds[store])
            pull_and_verify(c, store, name, size, digest, local=True, store_kind=kinds[store])
            if size >= 132:
                ranges(c, store, name, source, size, digest)

    step("push --checksum sha256 and the default CRC32C; --checksum usage errors")
    source, size, digest = sources[f"CT.1.2.840.{512 * 1024}"]
    checksum_algorithms(c, kinds, source, size, digest)

    step("1 GB through the FileStore")
    big_name, big_source = "MG.big", c.path("src-big")
    big_digest = harness.write_random(big_source, BIG)
    push_and_verify(c, "central", big_name, big_source, BIG, big_digest)
    pull_and_verify(c, "central", big_name, BIG, big_digest, local=False, store_kind="file")
    os.unlink(big_source)
    sources[big_name] = (None, BIG, big_digest)

    step("ls")
    for store in ("central", "mem"):
        listed = {b["name"]: b for b in c.blob("ls", store=store).ok().get("blobs", [])}
        expected = {n for n in sources if store == "central" or n != big_name}
        check_equal(sorted(listed), sorted(expected), f"ls --store {store}: names")
        for n in expected:
            check_equal((listed[n].get("size"), listed[n].get("checksum")), sources[n][1:],
                        f"ls --store {store}: size and checksum of {n}")
            check_equal(listed[n].get("store"), store, f"ls --store {store}: store of {n}")
    everywhere = c.blob("ls").ok().get("blobs", [])
    check_equal(sorted((b.get("store"), b.get("name")) for b in everywhere),
                sorted([("central", n) for n in sources] + [("mem", n) for n in sources if n != big_name]),
                "ls without --store: (store, name) of every registered store")

    step("rm, then stat and pull fail with no_such_blob")
    for store in ("central", "mem"):
        name = "CT.1.2.840.1"
        c.blob("rm", name, store=store).ok()
        c.blob("stat", name, store=store).error(harness.EXIT["no_such_blob"], f'blob "{name}" not found')
        c.blob("pull", name, c.path("gone"), store=store).error(harness.EXIT["no_such_blob"],
                                                                 f'blob "{name}" not found')
        names = [b["name"] for b in c.blob("ls", store=store).ok().get("blobs", [])]
        check(name not in names, f"ls --store {store} still lists removed {name}: {names}")
    c.blob("rm", big_name, store="central").ok()

    step("SIGTERM: exit 0 and the binding is removed")
    check_equal(mem_store.stop(), 0, "exit status of blobstored mem after SIGTERM")
    names = [s["name"] for s in c.blob("stores").ok().get("stores", [])]
    check_equal(names, ["central"], "stores registered after mem stopped")


if __name__ == "__main__":
    harness.main(test)
