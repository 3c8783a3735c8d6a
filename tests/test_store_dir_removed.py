#!/usr/bin/env python3
"""A FileStore's files removed under a running daemon.

- One Blob's file deleted behind the store's back: the Blob is gone. `stat`
  and `rm` exit 20 (no_such_blob) naming the missing file; the entry leaves
  the index, so `ls` no longer lists it; the other Blobs are served.
- The whole store directory removed (`rm -rf`): every operation that needs
  it exits 40 (io_error) with a message naming the directory and the
  system's reason — push, pull (same-host fast path and over the data
  port), stat, ls, rm, verify — instead of a CORBA system exception; `rm`
  does not drop the index entry of a Blob it could not remove. The daemon
  keeps running."""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, step  # noqa: E402


def test(c):
    daemon = c.start_daemon("gone", "file")
    store_dir = daemon.store_dir
    source = c.path("source")
    digest = harness.write_random(source, 300000)
    for name in ("CT.a", "CT.b", "CT.c"):
        c.blob("push", "--name", name, source, store="gone").ok()

    step("one Blob's file removed behind the store")
    check_equal(c.blob("stat", "CT.b", store="gone").ok()["checksum"], digest, "checksum of CT.b")
    victim = None
    for root, _dirs, files in os.walk(os.path.join(store_dir, "blobs")):
        if "CT.b" in files:
            victim = os.path.join(root, "CT.b")
    check(victim is not None, "CT.b's file in blobs/")
    os.unlink(victim)
    c.blob("stat", "CT.b", store="gone").error(
        EXIT["no_such_blob"], f'stat "CT.b": blob "CT.b" not found: its file {victim} was removed outside the store')
    check_equal(sorted(b["name"] for b in c.blob("ls", store="gone").ok()["blobs"]), ["CT.a", "CT.c"],
                "Blobs listed after CT.b's file was removed")
    c.blob("rm", "CT.b", store="gone").error(EXIT["no_such_blob"], 'blob "CT.b" not found')
    for root, _dirs, files in os.walk(os.path.join(store_dir, "blobs")):
        if "CT.c" in files:
            os.unlink(os.path.join(root, "CT.c"))
            victim = os.path.join(root, "CT.c")
    c.blob("rm", "CT.c", store="gone").error(
        EXIT["no_such_blob"], f'remove "CT.c": blob "CT.c" not found: its file {victim} was removed outside the store')
    out = c.path("a.pulled")
    c.blob("--no-local", "pull", "CT.a", out, store="gone").ok()
    check_equal(harness.checksum_file(out), digest, "checksum of CT.a pulled after the other files were removed")

    step("the whole store directory removed")
    shutil.rmtree(store_dir)
    gone = f"cannot access its directory {store_dir}: No such file or directory"
    io = EXIT["io_error"]
    c.blob("push", "--name", "CT.new", source, store="gone").error(io, f'reserve "CT.new": file store {store_dir}: {gone}')
    c.blob("pull", "CT.a", c.path("x"), store="gone").error(io, f'stat "CT.a": file store {store_dir}: {gone}')
    c.blob("--no-local", "pull", "CT.a", c.path("y"), store="gone").error(
        io, f'stat "CT.a": file store {store_dir}: {gone}')
    c.blob("stat", "CT.a", store="gone").error(io, f'stat "CT.a": file store {store_dir}: {gone}')
    c.blob("ls", store="gone").error(io, f"list: file store {store_dir}: {gone}")
    c.blob("rm", "CT.a", store="gone").error(io, f'remove "CT.a": file store {store_dir}: {gone}')
    c.blob("verify", "CT.a", store="gone").error(io, f'read "CT.a": file store {store_dir}: {gone}')
    check(daemon.running(), "blobstored died after its directory was removed")
    usage = [s for s in c.blob("stores").ok()["stores"] if s["name"] == "gone"][0]
    check_equal((usage["blobs"], usage["reserved"]), (1, 0), "the index keeps CT.a, which rm could not remove")
    check(not os.path.exists(store_dir), "nothing recreated the store directory")


if __name__ == "__main__":
    harness.main(test)
