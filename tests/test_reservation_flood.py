#!/usr/bin/env python3
"""A flood of reservations nobody fills (tests/tools/idl_probe --flood)
neither locks out real clients nor exhausts the daemon.

- Descriptors: the daemon runs with a limit of 512 open files (prlimit) and
  limits high enough to admit 1000 one-byte reservations from one client:
  all are granted, the daemon's open descriptors (/proc/PID/fd) do not grow
  with them (an unused reservation holds its file by path only), and a
  normal push and pull of the same client still work while they are held.
- Limits (--max-reservations-per-client 8, --max-reservations 12): the 9th
  reservation of one client is refused with LimitReached naming the client,
  the limit and the count; `blob push` of that client exits 32
  (limit_reached). With TLS the client is the certificate subject: another
  certificate still pushes during the flood, until the store's total is
  reached, which is refused with its own message (while the flood's
  reservations are younger than --reservation-idle-at-limit, set long).
- At the total, unused reservations make room: two certificates hold all 12
  (8 + 4), unused for --reservation-idle-at-limit (1 s here); a third
  certificate's `blob push` succeeds, the oldest reservation of the client
  holding the most aborted for it (logged); with shares equal but for one,
  nobody is taken from and the newcomer is refused.
The daemon lives throughout and nothing of the flood is ever listed."""

import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_tls  # noqa: E402
from harness import EXIT, check, check_equal, step  # noqa: E402

PER_CLIENT = 8
TOTAL = 12
FD_LIMIT = 512
FLOOD = 1000


def flood(c, store, count, prefix="probe.flood", tls=()):
    """Runs idl_probe --flood; returns (case results in order, summary)."""
    code, out, err = c.run([harness.program("tests/tools/idl_probe"), "--naming", c.naming, "--store", store,
                            "--flood", str(count), "--prefix", prefix, *tls], timeout=300)
    check_equal(code, 0, f"idl_probe --flood exit status (stderr {err.strip()[-2000:]!r}, "
                         f"stdout {out.strip()[-2000:]!r})")
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    return lines[:-1], lines[-1]


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def listed(c, store, tls=()):
    return sorted(b["name"] for b in c.blob(*tls, "ls", store=store).ok().get("blobs", []))


def check_descriptors(c):
    step(f"descriptors: {FLOOD} one-byte reservations under a limit of {FD_LIMIT} open files")
    daemon = c.start_daemon("fds", "file", extra=["--max-reservations", "5000",
                                                  "--max-reservations-per-client", "5000",
                                                  "--reservation-grace", "600"])
    r = subprocess.run(["prlimit", "--pid", str(daemon.pid), f"--nofile={FD_LIMIT}:{FD_LIMIT}"],
                       capture_output=True, text=True, timeout=30)
    check_equal(r.returncode, 0, f"prlimit on the daemon ({r.stderr.strip()})")
    source = c.path("source")
    digest = harness.write_random(source, 2 * harness.MiB)
    c.blob("push", "--name", "CT.before", source, store="fds").ok()
    before = open_fds(daemon.pid)
    results, summary = flood(c, "fds", FLOOD)
    refused = [r for r in results if r["raised"] != "returned"]
    check(not refused, f"{len(refused)} of {FLOOD} reservations refused, first: {refused[:1]}")
    check_equal(summary, {"reserved": FLOOD, "refused": 0}, "flood summary")
    after = open_fds(daemon.pid)
    step(f"blobstored holds {before} descriptors before the flood, {after} with {FLOOD} reservations open")
    check(after - before < 32, f"the daemon's open descriptors grew from {before} to {after} with {FLOOD} "
                               "unused reservations: they hold a descriptor each")
    step("the same client pushes and pulls while the reservations are held")
    pushed = c.blob("push", "--name", "CT.during", source, store="fds").ok()
    check_equal(pushed["checksum"], digest, "checksum of a push during the flood")
    check_equal(c.pull_checksum("CT.during", "fds", c.path("pulled")), digest, "checksum of a pull during the flood")
    usage = [s for s in c.blob("stores").ok()["stores"] if s["name"] == "fds"][0]
    check_equal(usage["reserved"], FLOOD, "bytes reserved by the flood")
    check_equal(listed(c, "fds"), ["CT.before", "CT.during"], "Blobs listed during the flood")
    check(daemon.running(), "blobstored died during the flood")


def per_client_message(name, client):
    return (f'reserve "{name}": client "{client}" already holds {PER_CLIENT} open reservations, the most one '
            f'client may hold (max-reservations-per-client {PER_CLIENT}); commit or abort them, or wait until '
            'unused ones expire')


def total_message(name):
    return (f'reserve "{name}": the store already holds {TOTAL} open reservations, its limit (max-reservations '
            f'{TOTAL}); try again when some have ended')


def check_limits(c):
    step(f"limits without TLS: the client is its address; {PER_CLIENT + 1} reservations of one client")
    limits = ["--max-reservations", str(TOTAL), "--max-reservations-per-client", str(PER_CLIENT)]
    daemon = c.start_daemon("caps", "file", extra=limits)
    results, summary = flood(c, "caps", PER_CLIENT + 1)
    check_equal(summary, {"reserved": PER_CLIENT, "refused": 1}, "flood summary")
    last = results[-1]
    check_equal((last["raised"], last["message"]),
                ("LimitReached", per_client_message(f"probe.flood.{PER_CLIENT}", "127.0.0.1")),
                f"reservation {PER_CLIENT + 1} of one client")
    check_equal(last["code"], EXIT["limit_reached"], "Errc sent with LimitReached")
    source = c.path("small")
    harness.write_random(source, 1000)
    c.blob("push", "--name", "CT.same", source, store="caps").error(
        EXIT["limit_reached"], per_client_message("CT.same", "127.0.0.1"))
    check_equal(listed(c, "caps"), [], "Blobs listed after the refusals")
    check(daemon.running(), "blobstored died")
    return source


def check_limits_tls(c, source):
    if shutil.which("openssl") is None:
        raise harness.TestSkipped("openssl is not installed")
    step("limits with TLS: the client is its certificate subject")
    test_tls.make_ca(c, "ca")
    store = test_tls.make_cert(c, "ca", "store", "/CN=store.caps", "serverAuth,clientAuth", san="IP:127.0.0.1")
    flooder = test_tls.make_cert(c, "ca", "flooder", "/CN=flooder", "clientAuth")
    writer = test_tls.make_cert(c, "ca", "writer", "/CN=modality1", "clientAuth")
    daemon = c.start_daemon("tlscaps", "file", extra=test_tls.tls_args(c, *store) + [
        "--allow-read", "*", "--allow-write", "*", "--max-reservations", str(TOTAL),
        "--max-reservations-per-client", str(PER_CLIENT), "--reservation-idle-at-limit", "3600"])
    as_flooder = test_tls.tls_args(c, *flooder)
    as_writer = test_tls.tls_args(c, *writer)
    results, summary = flood(c, "tlscaps", PER_CLIENT + 1, tls=as_flooder)
    check_equal(summary, {"reserved": PER_CLIENT, "refused": 1}, "TLS flood summary")
    check_equal((results[-1]["raised"], results[-1]["message"]),
                ("LimitReached", per_client_message(f"probe.flood.{PER_CLIENT}", "CN=flooder")),
                f"reservation {PER_CLIENT + 1} of CN=flooder")
    step("another certificate pushes during the flood")
    digest = harness.checksum_file(source)
    pushed = c.blob(*as_writer, "push", "--name", "CT.other", source, store="tlscaps").ok()
    check_equal(pushed["checksum"], digest, "checksum of CN=modality1's push during the flood")
    c.blob(*as_flooder, "push", "--name", "CT.flooder", source, store="tlscaps").error(
        EXIT["limit_reached"], per_client_message("CT.flooder", "CN=flooder"))
    step(f"the store's total of {TOTAL} open reservations")
    left = TOTAL - PER_CLIENT
    results, summary = flood(c, "tlscaps", left + 1, prefix="probe.writer", tls=as_writer)
    check_equal(summary, {"reserved": left, "refused": 1}, "second flood summary")
    check_equal((results[-1]["raised"], results[-1]["message"]),
                ("LimitReached", total_message(f"probe.writer.{left}")), "reservation over the total")
    c.blob(*as_writer, "push", "--name", "CT.full", source, store="tlscaps").error(
        EXIT["limit_reached"], total_message("CT.full"))
    check_equal(listed(c, "tlscaps", as_writer), ["CT.other"], "Blobs listed after the TLS floods")
    check(daemon.running(), "blobstored died")


IDLE_AT_LIMIT = 1  # --reservation-idle-at-limit of check_room_at_the_limit, seconds


def idle_since(t):
    """Waits until reservations made before monotonic time `t` have been
    unused for --reservation-idle-at-limit (the daemon's documented period;
    nothing else tells when it has passed)."""
    time.sleep(max(0.0, t + IDLE_AT_LIMIT + 0.2 - time.monotonic()))


def check_room_at_the_limit(c, source):
    step("at the total, unused reservations of the client holding the most make room")
    store = test_tls.make_cert(c, "ca", "store2", "/CN=store.room", "serverAuth,clientAuth", san="IP:127.0.0.1")
    certs = {cn: test_tls.tls_args(c, *test_tls.make_cert(c, "ca", cn, "/CN=" + cn, "clientAuth"))
             for cn in ("holder1", "holder2", "modality2")}
    daemon = c.start_daemon("room", "file", extra=test_tls.tls_args(c, *store) + [
        "--allow-read", "*", "--allow-write", "*", "--max-reservations", str(TOTAL),
        "--max-reservations-per-client", str(PER_CLIENT), "--reservation-idle-at-limit", str(IDLE_AT_LIMIT)])
    _, summary = flood(c, "room", PER_CLIENT, prefix="probe.holder1", tls=certs["holder1"])
    check_equal(summary, {"reserved": PER_CLIENT, "refused": 0}, "flood of CN=holder1")
    _, summary = flood(c, "room", TOTAL - PER_CLIENT, prefix="probe.holder2", tls=certs["holder2"])
    check_equal(summary, {"reserved": TOTAL - PER_CLIENT, "refused": 0}, "flood of CN=holder2")
    idle_since(time.monotonic())  # then unused for --reservation-idle-at-limit: eligible to make room
    pushed = c.blob(*certs["modality2"], "push", "--name", "CT.room", source, store="room").ok()
    check_equal(pushed["checksum"], harness.checksum_file(source), "checksum of the push at the total")
    with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
        log = f.read()
    check('the reservation of "probe.holder1.0" by client "CN=holder1" (8 open), unused for' in log and
          'is aborted to make room for client "CN=modality2"' in log,
          "no log line naming the reservation aborted to make room")
    step("shares equal but for one: nobody is taken from")
    # holder1 7, holder2 4, CT.room committed: 11 open; holder2 takes the 12th.
    _, summary = flood(c, "room", 1, prefix="probe.holder2b", tls=certs["holder2"])
    check_equal(summary, {"reserved": 1, "refused": 0}, "one more of CN=holder2")
    idle_since(time.monotonic())
    # holder1 7, holder2 5: for holder2, nobody holds 7 or more but holder1 (7 >= 5 + 2): holder1 gives one.
    _, summary = flood(c, "room", 1, prefix="probe.holder2c", tls=certs["holder2"])
    check_equal(summary, {"reserved": 1, "refused": 0}, "CN=holder2 at the total, holder1 holding two more")
    # holder1 6, holder2 6: holder2 holds as many as holder1: refused.
    results, summary = flood(c, "room", 1, prefix="probe.holder2d", tls=certs["holder2"])
    check_equal(summary, {"reserved": 0, "refused": 1}, "CN=holder2 at the total, shares equal")
    check_equal(results[-1]["raised"], "LimitReached", "what CN=holder2 got at the total with equal shares")
    check(daemon.running(), "blobstored died")


def test(c):
    check_descriptors(c)
    source = check_limits(c)
    check_limits_tls(c, source)
    check_room_at_the_limit(c, source)


if __name__ == "__main__":
    harness.main(test)
