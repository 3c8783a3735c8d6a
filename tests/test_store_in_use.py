#!/usr/bin/env python3
"""One store name, one live daemon. A second `blobstored --name ws1` while
ws1's daemon answers is refused (exit 31, naming the name and the live
daemon's address) before it opens its store, also while the first is
stopped (SIGSTOP: it does not answer, but it is not gone); the first keeps
its entry and serves. A daemon that registered while the first's entry was
missing keeps the name: the first's periodic naming check leaves it alone
(and says so), and registers again once it stops. After SIGKILL of the
first, a new daemon takes the name over and logs that it did."""

import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, program, step, wait_for  # noqa: E402
from harness.daemons import blobstored_argv  # noqa: E402


def log_of(daemon):
    with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
        return f.read()


def data_of(c, name):
    """The data address `blob stores` shows for `name` (None: not listed or unreachable)."""
    r = c.blob("stores").ok()
    for s in r.get("stores", []):
        if s.get("name") == name:
            return s.get("data")
    return None


def second_refused(c, first, store_dir, why):
    argv = blobstored_argv(program("blobstore/blobstored"), "ws1", f"file:{store_dir}", c.naming)
    code, out, err = c.run(argv, timeout=60)
    step(f"second blobstored --name ws1: exit {code}: {err.strip()[-600:]!r}")
    check_equal(code, EXIT["store_busy"], f"exit status of a second ws1 ({why}); stderr: {err!r}")
    check(f'store "ws1" is in use: the daemon registered as BlobStreaming/Stores/ws1 in the naming service at '
          f'{c.naming}' in err and first.ready["control"] in err,
          f"the refusal does not name the store and the live daemon's address {first.ready['control']}: {err!r}")
    check("blobstored ready" not in out, f"the refused daemon printed a ready line: {out!r}")
    check(not os.path.exists(store_dir), f"the refused daemon opened (created) its store directory {store_dir}")
    return err


def test(c):
    first = c.start_daemon("ws1", "file", extra=["--naming-check", "0.2"])
    source, out = c.path("source"), c.path("out")
    digest = harness.write_random(source, 100000)
    c.blob("push", "--name", "CT.1", source, store="ws1").ok()

    step("a second ws1 while the first answers: refused (31), before opening its store")
    second_refused(c, first, c.path("second"), "the first answers")
    check(first.running(), "the first ws1 died")
    check_equal(data_of(c, "ws1"), first.ready["data"], "the data address of ws1's entry after the refusal")
    check_equal(c.pull_checksum("CT.1", "ws1", out), digest, "CT.1 pulled through ws1's entry")
    c.blob("push", "--name", "CT.2", source, store="ws1").ok()

    step("a second ws1 while the first is stopped (SIGSTOP): refused too (stopped is not gone)")
    os.kill(first.pid, signal.SIGSTOP)
    try:
        err = second_refused(c, first, c.path("second"), "the first is stopped")
        check("no answer within" in err, f"the refusal does not say the daemon did not answer: {err!r}")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    check_equal(c.pull_checksum("CT.2", "ws1", out), digest, "CT.2 pulled after SIGCONT")

    step("the entry removed behind the first, another ws1 registers: the first's naming check leaves it alone")
    # The first is stopped meanwhile, so that its naming check cannot
    # register it again before the other has started.
    os.kill(first.pid, signal.SIGSTOP)
    try:
        c.nameclt("unbind", "BlobStreaming/Stores/ws1")
        other = c.start_daemon("ws1", "memory:16M")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    wait_for(lambda: "its naming service entry names another daemon of the same name, which answers at "
             + other.ready["control"] in log_of(first), 30,
             "the first ws1 to log that it leaves the other's entry alone")
    # Several naming checks (0.2 s) later the entry still names the other.
    for _ in range(3):
        check_equal(data_of(c, "ws1"), other.ready["data"], "the data address of ws1's entry (the other daemon)")
        c.blob("stat", "CT.1", store="ws1").error(EXIT["no_such_blob"], '"CT.1"')
    check_equal(other.stop(), 0, "exit status of the other ws1")
    wait_for(lambda: data_of(c, "ws1") == first.ready["data"], 30, "the first ws1 to register again")
    check_equal(c.pull_checksum("CT.1", "ws1", out), digest, "CT.1 pulled through ws1's entry again")

    step("SIGKILL of the first: a new ws1 takes the name over and logs it")
    first.kill()
    third = c.start_daemon("ws1", "file", store_dir=first.store_dir)
    check(f"took over its naming service entry from a daemon that is gone (at {first.ready['control']}"
          in log_of(third), "the new ws1 does not log the takeover: " + log_of(third)[-2000:])
    check_equal(data_of(c, "ws1"), third.ready["data"], "the data address of ws1's entry after the takeover")
    check_equal(c.pull_checksum("CT.2", "ws1", out), digest, "CT.2 pulled from the new ws1")
    check_equal(third.stop(), 0, "exit status of the new ws1")
    check_equal(data_of(c, "ws1"), None, "ws1 after its daemon stopped (entry removed)")


if __name__ == "__main__":
    harness.main(test)
