#!/usr/bin/env python3
"""Transfer notices through `blob push/pull --notices send|queue` with real
omniNames, blobstored and blob processes:

- push --notices send --json: the transfer's object carries the store's
  notice (name, direction push, succeeded, bytes = the file's size); pull
  --notices queue likewise (direction pull, the range's bytes); pull
  --notices send in text: the `notice: ...` line on stderr;
- without --notices: no notice member;
- bad input: an unknown mode, --notices on another command or with several
  FILEs: exit 1 with the exact error.

The library's own tests (clients/tests/NoticesTest) cover failed transfers,
IGNORE and poll semantics."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402

SIZE = 300 * 1024 + 7


def check_notice(notice, name, direction, size):
    check(isinstance(notice, dict), f"a notice object, got {notice!r}")
    check_equal(notice.get("store"), "mem", "the notice's store")
    check_equal(notice.get("name"), name, "the notice's Blob")
    check_equal(notice.get("direction"), direction, "the notice's direction")
    check_equal(notice.get("succeeded"), True, "the notice's outcome")
    check_equal(notice.get("bytes"), size, "the notice's bytes")
    check_equal(notice.get("reason"), "", "the notice's reason")
    check(re.fullmatch(r"[0-9a-f]{32}", notice.get("ticket", "")), f"a ticket of 32 hex digits: {notice!r}")


def test(c):
    c.start_daemon("mem", "memory:64M")
    # The daemon calls the client back: on loopback.
    c.env["ORBendPoint"] = "giop:tcp:127.0.0.1:"
    data = os.urandom(SIZE)
    src = c.path("src")
    with open(src, "wb") as f:
        f.write(data)

    step("push --notices send --json")
    j = c.blob("push", "--name", "N.send", "--notices", "send", src, store="mem").ok()
    check_notice(j.get("notice"), "N.send", "push", SIZE)

    step("pull --notices queue --json, a range")
    out = c.path("out")
    j = c.blob("pull", "--notices", "queue", "--offset", "100", "--length", "5000", "N.send", out,
               store="mem").ok()
    check_notice(j.get("notice"), "N.send", "pull", 5000)
    check_equal(j["notice"].get("offset"), 100, "the notice's offset")
    with open(out, "rb") as f:
        check(f.read() == data[100:5100], "the range pulled")

    step("pull --notices send, text")
    r = c.blob("pull", "--notices", "send", "N.send", out, store="mem", json_out=False)
    r.ok()
    check(re.search(r'notice: pull "N\.send" store "mem": succeeded, %d bytes, ticket [0-9a-f]{32}' % SIZE,
                    r.stderr), f"the notice line on stderr: {r.stderr!r}")

    step("no --notices, no notice")
    j = c.blob("push", "--name", "N.none", src, store="mem").ok()
    check("notice" not in j, f"no notice member: {j!r}")

    step("bad input")
    c.blob("push", "--name", "N.x", "--notices", "bogus", src, store="mem", json_out=False).error(
        1, "--notices bogus: expected none, send or queue")
    c.blob("ls", "--notices", "send", json_out=False).error(1, "--notices applies to push and pull only, not ls")
    c.blob("push", "--notices", "queue", src, src + "2", store="mem", json_out=False).error(
        1, "--notices applies to the transfer of one Blob (a single FILE, no --study/--series)")


if __name__ == "__main__":
    harness.main(test)
