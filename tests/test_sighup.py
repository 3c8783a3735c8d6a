#!/usr/bin/env python3
"""SIGHUP never ends blobstored (it used to die with exit 129 and leave its
Naming Service entry behind): a daemon logging to stderr without --config
survives it and serves. A daemon with --config and --log-file gets
SIGHUP several times and keeps serving pushes and pulls; each SIGHUP is
logged. A rotated log (the file renamed away, then SIGHUP, as logrotate
does) is written anew at its path. A changed --config: a live setting
(log-level) is logged as applied and takes effect, a restart-only one
(capacity) is logged as needing a restart and is not applied; a config
that no longer parses is refused with the reason and the daemon keeps its
settings. SIGTERM still stops it (exit 0) and removes its entry."""

import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step, wait_for  # noqa: E402


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def hup_and_wait(daemon, path, count):
    """SIGHUP, then waits for the `count`-th reload line in `path`."""
    os.kill(daemon.pid, signal.SIGHUP)
    wait_for(lambda: read(path).count("SIGHUP: configuration reread from") >= count
             or not daemon.running(), 30, f"reload line #{count} in {path}")
    check(daemon.running(), f"{daemon.name} exited with {daemon.popen.returncode} after SIGHUP #{count}")


def round_trip(c, source, digest, name):
    c.blob("push", "--name", name, source, "--replace", store="ws").ok()
    check_equal(c.pull_checksum(name, "ws", c.path("out")), digest, f"checksum of {name} pulled back")


def capacity_of(c, name):
    return next(s for s in c.blob("stores").ok()["stores"] if s["name"] == name)["capacity"]


def test(c):
    config, log = c.path("ws.conf"), c.path("ws.log")
    with open(config, "w") as f:
        f.write("capacity = 64M\nlog-level = info\n")
    ws = c.start_daemon("ws", "file", extra=["--config", config, "--log-file", log])
    ws.log_paths.append(log)
    plain = c.start_daemon("plain", "memory:8M")
    source = c.path("source")
    digest = harness.write_random(source, MiB)
    round_trip(c, source, digest, "CT.0")

    step("a daemon on stderr without --config: SIGHUP twice, it lives and serves")
    for i in range(1, 3):
        hup_and_wait(plain, plain.log_paths[0], i)
    check("SIGHUP: configuration reread from the command line (no --config file): no setting changed"
          in read(plain.log_paths[0]), "plain's log does not show the reload")
    c.blob("push", "--name", "CT.plain", source, store="plain").ok()

    check('store "ws"' in read(log) and "registered at" in read(log), "ws's start is not in its --log-file")

    step("SIGHUP 3 times, transfers between: the daemon lives, serves, logs each reload")
    for i in range(1, 4):
        hup_and_wait(ws, log, i)
        round_trip(c, source, digest, f"CT.{i}")
    check_equal(read(log).count("SIGHUP: configuration reread from --config"), 3, "reload lines in the log")
    check(f'--config "{config}" (the command line wins over it): no setting changed' in read(log),
          "the reload of an unchanged config does not say that nothing changed")

    step("the log rotated away: SIGHUP opens it again at its path")
    os.rename(log, log + ".1")
    ws.log_paths.append(log + ".1")
    hup_and_wait(ws, log, 1)
    check(f"SIGHUP: log file {log} opened again" in read(log), "the new log file does not say it was opened")
    before = read(log + ".1")
    round_trip(c, source, digest, "CT.rotated")
    check_equal(read(log + ".1"), before, "the rotated file after the reopen (nothing more written to it)")
    check("transfer direction=push blob=CT.rotated " in read(log), "the transfer after the rotation is not in the new log file")

    step("a changed config: log-level applied at once, capacity needs a restart")
    with open(config, "w") as f:
        f.write("capacity = 128M\nlog-level = debug\n")
    hup_and_wait(ws, log, 2)
    text = read(log)
    check("SIGHUP: log-level: info -> debug (applied)" in text, "the applied log level is not logged:\n" + text)
    check("SIGHUP: capacity: 67108864 -> 134217728 needs a restart (still 67108864 until then)" in text,
          "the restart-only capacity change is not named as such:\n" + text)
    check("1 setting(s) applied, 1 need(s) a restart" in text, "no summary of the reload:\n" + text)
    check_equal(capacity_of(c, "ws"), 64 * MiB, "capacity of ws after the reload (needs a restart)")
    debug_lines = text.count(" blobstored debug: ")
    round_trip(c, source, digest, "CT.debug")
    check(read(log).count(" blobstored debug: ") > debug_lines, "no debug line after log-level = debug was applied")

    step("a config that no longer parses: refused with the reason, the running settings stay")
    with open(config, "w") as f:
        f.write("capacity = 128M\nlog-level = loud\n")
    os.kill(ws.pid, signal.SIGHUP)
    wait_for(lambda: "SIGHUP: configuration not reloaded, the running settings stay:" in read(log), 30,
             "the refusal of the broken config")
    check('"loud"' in read(log), "the refusal does not name the bad value:\n" + read(log)[-2000:])
    check(ws.running(), "ws died on a broken config")
    round_trip(c, source, digest, "CT.broken")

    step("SIGTERM still stops them (exit 0) and removes their entries")
    check_equal(ws.stop(), 0, "exit status of ws after SIGTERM")
    check_equal(plain.stop(), 0, "exit status of plain after SIGTERM")
    check_equal(c.blob("stores").ok()["stores"], [], "stores registered after both stopped")


if __name__ == "__main__":
    harness.main(test)
