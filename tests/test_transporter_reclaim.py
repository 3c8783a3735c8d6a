#!/usr/bin/env python3
"""Transporters that are never closed do not pile up in the daemon.

- 20 000 openTransporter() calls without close() (tests/tools/
  transporter_probe open): the daemon opens up to --max-client-transporters
  (256 by default) for the client and refuses the rest with LimitReached and
  its exact message; its resident memory grows by a few MiB at most (it
  grew by about 23 MiB per round of 20 000 when every call kept a
  transporter for ever), and again after a second round: the sweep
  reclaimed them (--transporter-idle), the log says how many and that none
  is left open.
- A `blob push` killed with SIGKILL mid-transfer leaves a transporter that
  is reclaimed after --transporter-idle.
- A transporter reclaimed under its client: the next call raises
  OBJECT_NOT_EXIST (transporter_probe hold); a long-lived libblobclient
  Session (tests/tools/client_driver shell) idle past the lifetime opens a
  new one transparently and keeps pushing and pulling.
- The limit seen through the CLI: a daemon allowing one transporter per
  client, held by another process: `blob push` fails with limit_reached
  (32) and the daemon's message.
- At the store's total cap, held by two certificates that opened all they
  may and use none (TLS: the client is the certificate subject), a third
  client's `blob push` and `pull` succeed once the flooders' transporters
  have been idle for a second: the least recently used idle transporter of
  the client holding the most is reclaimed for it (exit 32 before); the
  flooders cannot take them back beyond an equal share, and the daemon's
  log counts what was reclaimed (that a transporter used within the second
  is not taken: TransporterRegistryTest, on a clock of its own).
- Bad values of the new options are refused with their exact message."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, MiB, check, check_equal, step  # noqa: E402
import test_tls  # noqa: E402

IDLE = 3  # --transporter-idle, seconds
OPENS = 20000
PER_CLIENT = 256  # the default of --max-client-transporters
RSS_BOUND_KIB = 8 * 1024


def sweeps(daemon):
    """(reclaimed, open) of every 'transporters: reclaimed' line of the daemon's log."""
    with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
        text = f.read()
    return [(int(a), int(b)) for a, b in
            re.findall(r"transporters: reclaimed (\d+) idle for [\d.]+ s or more .*?; (\d+) open by", text)]


def wait_reclaimed(daemon, since, count, what, timeout=IDLE + 30):
    """Waits for sweep lines after the first `since` ones that reclaim `count`
    transporters in all, the last leaving none open; returns the new total of lines."""
    def done():
        new = sweeps(daemon)[since:]
        return bool(new) and sum(r for r, _ in new) >= count and new[-1][1] == 0
    t0 = time.monotonic()
    harness.wait_for(done, timeout, what, interval=0.1)
    new = sweeps(daemon)[since:]
    check_equal(sum(r for r, _ in new), count, f"transporters reclaimed: {what}")
    step(f"{what}: reclaimed {count} after {time.monotonic() - t0:.2f} s, 0 open")
    return len(sweeps(daemon))


def lines(c, name, argv):
    """A started process whose stdout is read line by line as JSON."""
    return harness.JsonLines(c, name, argv, c.path(name.replace(" ", "-") + ".err"))


def open_round(c, daemon):
    code, out, err = c.run([harness.program("tests/tools/transporter_probe"), "open", "--naming", c.naming,
                            "--store", "central", "--count", str(OPENS)], timeout=300)
    check_equal(code, 0, f"exit code of transporter_probe open (stderr {err!r})")
    r = json.loads(out.strip().splitlines()[-1])
    step(f"{OPENS} openTransporter() without close(): {r}")
    # On a slow machine the sweep may reclaim the first ones before the round
    # ends, and the client open more: at least the limit, before the first
    # refusal exactly the limit.
    check_equal((r["opened_before_refusal"], r["opened"] + r["refused"], r["other_errors"]),
                (PER_CLIENT, OPENS, 0), "transporters opened before the first refusal, calls, other errors")
    check(r["opened"] >= PER_CLIENT, f"only {r['opened']} transporters opened")
    check_equal(r["first_refusal"],
                f"openTransporter: client 127.0.0.1 has reached its limit of open transporters ({PER_CLIENT}, "
                f"--max-client-transporters): close() the ones it no longer uses; transporters left idle are "
                f"reclaimed after {IDLE} s (--transporter-idle)",
                "LimitReached message")
    return r


def test(c):
    step("bad values of the new options")
    for option, value, message in [
            ("--transporter-idle", "0", '--transporter-idle: "0" is out of range (allowed: 0.1 to 604800 seconds)'),
            ("--max-transporters", "0", '--max-transporters: "0" is out of range (allowed: 1 to 1000000)'),
            ("--max-client-transporters", "-3",
             '--max-client-transporters: "-3" is not a whole number')]:
        code, _, err = c.run([harness.program("blobstore/blobstored"), "--name", "x", "--store", "memory:1M",
                              option, value], timeout=30)
        check_equal(code, EXIT["usage"], f"exit code of blobstored {option} {value}")
        check(message in err, f"blobstored {option} {value}: expected {message!r} on stderr, got {err!r}")

    # AddressSanitizer (configure --enable-sanitizers) keeps freed memory in
    # a quarantine of 256 MiB, which would read as growth: no quarantine here.
    if c.env.get("ASAN_OPTIONS"):
        c.env["ASAN_OPTIONS"] += ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    daemon = c.start_daemon("central", "file",
                            extra=["--transporter-idle", str(IDLE), "--naming-check", "0.5", "--no-sync"])
    seen = 0

    step("warm-up round, then the baseline")
    r = open_round(c, daemon)
    seen = wait_reclaimed(daemon, seen, r["opened"], "warm-up round")
    baseline = harness.proc_status(daemon.pid, "VmRSS")
    for n in (1, 2):
        t0 = time.monotonic()
        r = open_round(c, daemon)
        grown = harness.proc_status(daemon.pid, "VmRSS") - baseline
        step(f"round {n}: {time.monotonic() - t0:.2f} s; daemon RSS {grown:+d} KiB over the baseline")
        check(grown < RSS_BOUND_KIB, f"the daemon's RSS grew by {grown} KiB after round {n} of {OPENS} "
                                     f"unclosed transporters (bound {RSS_BOUND_KIB} KiB)")
        seen = wait_reclaimed(daemon, seen, r["opened"], f"round {n}")
    check(daemon.running(), "blobstored died")

    step("a blob push killed with SIGKILL mid-transfer")
    source = c.path("big")
    harness.write_random(source, 256 * MiB)
    err_path = c.path("push-killed.err")
    with open(err_path, "wb") as err:
        client = c.spawn("blob push (killed)",
                         [harness.program("clients/blob"), "--naming", c.naming, "--store", "central",
                          "push", "--name", "MR.killed", source],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    tmp_dir = os.path.join(daemon.store_dir, "tmp")

    def progress():
        check(client.running(), f"the push ended (exit {client.popen.returncode}) before it was killed")
        return harness.reservation_written_past(tmp_dir, 16 * MiB)

    harness.wait_for(progress, 120, "the push to write past 16 MiB", interval=0.005)
    client.kill()
    seen = wait_reclaimed(daemon, seen, 1, "the killed client's transporter")

    step("a reclaimed transporter raises OBJECT_NOT_EXIST; a long-lived Session opens a new one")
    holder = lines(c, "transporter_probe hold", [harness.program("tests/tools/transporter_probe"), "hold",
                                                  "--naming", c.naming, "--store", "central"])
    check_equal(holder.read(), {"opened": True}, "first line of transporter_probe hold")
    check_equal(holder.do("poll"), {"raised": "returned"}, "poll() on a fresh transporter")
    # Named requests off: every transfer asks its transporter for a ticket,
    # so the push after the reclaim meets the reclaimed transporter.
    shell = lines(c, "client_driver shell", [harness.program("tests/tools/client_driver"), "shell",
                                              "--naming", c.naming, "--store", "central", "--named-requests", "0"])
    check_equal(shell.read().get("command"), "ready", "first line of client_driver shell")
    first = shell.do("push CT.before 100000")
    check(first.get("ok"), f"push of the long-lived client: {first}")
    seen = wait_reclaimed(daemon, seen, 2, "the held and the Session's transporters")
    check_equal(holder.do("poll"), {"raised": "CORBA::OBJECT_NOT_EXIST"}, "poll() on a reclaimed transporter")
    after = shell.do("push CT.after 200000")
    check(after.get("ok"), f"push of the long-lived client after its transporter was reclaimed: {after}")
    pulled = shell.do("pull CT.before")
    check(pulled.get("ok"), f"pull of the long-lived client: {pulled}")
    check_equal(pulled["checksum"], first["checksum"], "checksum pulled by the long-lived client")
    names = sorted(b["name"] for b in c.blob("ls", store="central").ok()["blobs"])
    check_equal(names, ["CT.after", "CT.before"], "Blobs listed")
    check(daemon.running(), "blobstored died")

    step("the limit through the CLI: one transporter per client, held by another process")
    strict = c.start_daemon("strict", "memory:16M", extra=["--max-client-transporters", "1"])
    held = lines(c, "transporter_probe hold (strict)", [harness.program("tests/tools/transporter_probe"), "hold",
                                                         "--naming", c.naming, "--store", "strict"])
    check_equal(held.read(), {"opened": True}, "first line of transporter_probe hold")
    small = c.path("small")
    harness.write_random(small, 1000)
    c.blob("push", "--name", "CT.refused", small, store="strict").error(
        EXIT["limit_reached"], 'push "CT.refused": store "strict": openTransporter: client 127.0.0.1 has '
                               'reached its limit of open transporters (1, --max-client-transporters)')
    check_equal(c.blob("ls", store="strict").ok()["blobs"], [], "Blobs listed after the refused push")

    check_pressure(c)


PRESSURE_IDLE = 1.0  # TransporterLimits::pressure_idle, seconds


def open_as(c, store, count, tls):
    code, out, err = c.run([harness.program("tests/tools/transporter_probe"), "open", "--naming", c.naming,
                            "--store", store, "--count", str(count), *tls], timeout=120)
    check_equal(code, 0, f"exit code of transporter_probe open (stderr {err!r})")
    return json.loads(out.strip().splitlines()[-1])


def check_pressure(c):
    if shutil.which("openssl") is None:
        raise harness.TestSkipped("openssl is not installed")
    step("the total cap held by two clients: a third one is served")
    test_tls.make_ca(c, "ca")
    store = test_tls.make_cert(c, "ca", "store", "/CN=store.pressure", "serverAuth,clientAuth", san="IP:127.0.0.1")
    certs = {cn: test_tls.tls_args(c, *test_tls.make_cert(c, "ca", cn, "/CN=" + cn, "clientAuth"))
             for cn in ("flooder1", "flooder2", "ws1")}
    daemon = c.start_daemon("pressure", "memory:16M", extra=test_tls.tls_args(c, *store) + [
        "--allow-read", "*", "--allow-write", "*", "--max-transporters", "8", "--max-client-transporters", "4",
        "--naming-check", "0.5"])
    for cn in ("flooder1", "flooder2"):
        r = open_as(c, "pressure", 4, certs[cn])
        check_equal((r["opened"], r["refused"]), (4, 0), f"transporters opened by CN={cn}")
    ended = time.monotonic()
    small = c.path("pressure-small")
    harness.write_random(small, 100000)
    # The flooders' transporters have been idle for the documented lifetime.
    time.sleep(max(0.0, ended + PRESSURE_IDLE + 0.2 - time.monotonic()))
    pushed = c.blob(*certs["ws1"], "push", "--name", "CT.served", small, store="pressure").ok()
    check_equal(pushed["checksum"], harness.checksum_file(small), "checksum of the push at the cap")
    pulled = c.path("pressure-pulled")
    c.blob(*certs["ws1"], "pull", "CT.served", pulled, store="pressure").ok()
    check_equal(harness.checksum_file(pulled), pushed["checksum"], "checksum of the pull at the cap")
    step("a flooder cannot take them back beyond an equal share")
    r = open_as(c, "pressure", 4, certs["flooder1"])
    check(r["opened"] <= 1, f"CN=flooder1 reopened {r['opened']} transporters at the cap: {r}")
    check(r["refused"] >= 3, f"CN=flooder1 refused {r['refused']} times at the cap: {r}")

    def evicted_logged():
        with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
            return re.search(r"transporters: at the limit of 8 in all, reclaimed (\d+) idle one\(s\) of the "
                             r"clients holding the most", f.read())
    harness.wait_for(evicted_logged, 30, "the daemon's log line of transporters reclaimed at the cap", interval=0.1)
    check(daemon.running(), "blobstored died")


if __name__ == "__main__":
    harness.main(test)
