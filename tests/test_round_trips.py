#!/usr/bin/env python3
"""The control-plane calls a `blob` command makes, counted with omniORB's
own invocation trace (ORBtraceInvocations): on a 20 ms link each one is a
round trip of the command's time. A push, a push over 4 streams and a pull
make no call that finds nothing a later call does not: no LocateRequest
before the first call on a reference, no _non_existent after the naming
context's _narrow; the naming service is asked once for the context and
once for the store. Real omniNames and blobstored on 127.0.0.1."""

import collections
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step  # noqa: E402


def calls(c, *args):
    """The remote calls (and LocateRequests) `blob ARGS...` made, counted by name."""
    env = dict(c.env, ORBtraceInvocations="1", ORBtraceLevel="0")
    r = subprocess.run([harness.program("clients/blob"), "--naming", c.naming, "--store", "ws", *args],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, env=env)
    code, err = r.returncode, r.stderr
    check_equal(code, 0, f"exit status of blob {' '.join(args)} ({err[-1000:]!r})")
    counted = collections.Counter()
    for line in err.splitlines():
        m = re.search(r"Invoke '(\w+)' on remote|(LocateRequest) to remote", line)
        if m:
            counted[m.group(1) or m.group(2)] += 1
    step(f"blob {' '.join(args)}: {dict(counted)}")
    return counted


def test(c):
    c.start_daemon("ws", "memory:64M")
    source = c.path("blob.bin")
    harness.write_random(source, 8 * MiB, algorithm=None)

    step("a push: the naming context (_is_a), the store (resolve), a transporter, the push (reservation and ticket "
         "in one call)")
    pushed = calls(c, "push", source)
    check_equal(pushed["LocateRequest"], 0, "LocateRequests of a push")
    check_equal(pushed["_non_existent"], 0, "_non_existent calls of a push")
    check_equal((pushed["_is_a"], pushed["resolve"]), (1, 1), "naming calls of a push (_is_a, resolve)")

    step("a push over 4 streams: one ticket per stream, nothing else repeated")
    parallel = calls(c, "push", "--replace", "--streams", "4", source)
    check_equal(parallel["LocateRequest"] + parallel["_non_existent"], 0, "LocateRequests and _non_existent")
    check_equal(parallel["recvPart"], 4, "part tickets of a push over 4 streams")
    check_equal((parallel["_is_a"], parallel["resolve"], parallel["commit"]), (1, 1, 1),
                "naming calls and commits of a push over 4 streams")

    step("a pull over TCP")
    pulled = calls(c, "--no-local", "pull", "blob.bin", c.path("back.bin"))
    check_equal(pulled["LocateRequest"] + pulled["_non_existent"], 0, "LocateRequests and _non_existent of a pull")
    check_equal((pulled["_is_a"], pulled["resolve"]), (1, 1), "naming calls of a pull")
    with open(source, "rb") as a, open(c.path("back.bin"), "rb") as b:
        check(a.read() == b.read(), "the pulled bytes differ from the pushed ones")


if __name__ == "__main__":
    harness.main(test)
