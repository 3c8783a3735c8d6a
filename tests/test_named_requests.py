#!/usr/bin/env python3
"""Named requests on pooled data connections (docs/PROTOCOL.md, "Named
requests"): a Session's pushes and pulls after its first one name their
Blob on the connection that presented a ticket, without a control call,
and the store decides exactly as its control plane does.

One long-lived libblobclient Session (tests/tools/client_driver shell),
its control calls counted with omniORB's invocation trace:
1. Plain TCP: the first push takes a ticket (`push`), the next pushes and
   the pulls take none; a Blob replaced between two named pulls is pulled
   whole in its new version (verified against its checksum), never a mix;
   with named requests off every transfer takes a ticket.
2. TLS with an access list: a client that may read but not write has its
   connection authenticated by a pull, then names a push: the store refuses
   it on the data connection ("may not write", Errc::refused), makes no
   control call for it and stores nothing; a writer's second push is named
   under its own certificate.
3. A named request on a fresh connection that never presented a ticket is
   refused (tests/tools/ticket_probe named-first)."""

import collections
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step  # noqa: E402
from test_tls import make_ca, make_cert, tls_args  # noqa: E402

REFUSED = 53  # Errc::refused
SIZE = MiB // 2


def traced_shell(c, store, name, extra=()):
    env = dict(c.env, ORBtraceInvocations="1", ORBtraceLevel="0")
    return harness.DriverShell(c, store, extra=extra, err=name + ".err", env=env)


def control_calls(c, name):
    """The remote calls the shell's Session made so far, counted by name."""
    counted = collections.Counter()
    with open(c.path(name + ".err"), encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.search(r"Invoke '(\w+)' on remote", line)
            if m:
                counted[m.group(1)] += 1
    return counted


def plain(c):
    c.start_daemon("ws", "memory:64M")
    shell = traced_shell(c, "ws", "named")
    first = shell.ok(f"push CT.1 {SIZE}")
    shell.ok(f"push CT.2 {SIZE}")
    shell.ok(f"push CT.3 {SIZE}")
    back = shell.ok("pull CT.1")
    check_equal(back["checksum"], first["checksum"], "CT.1 pulled by name")
    calls = control_calls(c, "named")
    step(f"control calls of 3 pushes and a pull: {dict(calls)}")
    check_equal((calls["push"], calls["send"]), (1, 0), "tickets asked for (push, send): only the first push's")

    step("a Blob replaced between two named pulls: each pull is one whole version")
    replaced = shell.ok(f"push CT.1 {SIZE + 4096}")
    again = shell.ok("pull CT.1")
    check_equal((again["bytes"], again["checksum"]), (SIZE + 4096, replaced["checksum"]),
                "the pull after the replacement: the new version, whole")
    calls = control_calls(c, "named")
    check_equal((calls["push"], calls["send"]), (1, 0), "tickets asked for after the replacement")

    step("named requests off: a ticket for every transfer")
    off = traced_shell(c, "ws", "tickets", extra=("--named-requests", "0"))
    off.ok(f"push CT.4 {SIZE}")
    off.ok(f"push CT.5 {SIZE}")
    off.ok("pull CT.4")
    off.ok("pull CT.5")
    calls = control_calls(c, "tickets")
    check_equal((calls["push"], calls["send"]), (2, 2), "tickets asked for with named requests off")

    step("a named request on a connection that never presented a ticket is refused")
    r = subprocess.run([harness.program("tests/tools/ticket_probe"), "--naming", c.naming, "--store", "ws",
                        "--blob", "CT.1", "--mode", "named-first"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=c.env)
    check_equal(r.returncode, 0, f"ticket_probe named-first ({r.stdout!r} {r.stderr!r})")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    check_equal((out["status"], out["connection_closed"], out["length"]), (REFUSED, True, 0),
                f"named pull without a ticket first: {out}")
    check("has not presented a valid ticket" in out["message"], f"refusal message: {out['message']!r}")


def tls(c):
    if shutil.which("openssl") is None:
        raise harness.TestSkipped("openssl is not installed")
    c.start_naming()
    make_ca(c, "ca")
    store_cert = make_cert(c, "ca", "store", "/CN=store", "serverAuth,clientAuth", san="IP:127.0.0.1")
    reader = make_cert(c, "ca", "reader", "/CN=reader", "clientAuth")
    writer = make_cert(c, "ca", "writer", "/CN=writer", "clientAuth")
    c.start_daemon("sec", "memory:64M", extra=tls_args(c, *store_cert) + [
        "--allow-read", "CN=reader", "--allow-read", "CN=writer", "--allow-write", "CN=writer"])

    step("TLS: a writer's second push is named, under its own certificate")
    w = traced_shell(c, "sec", "writer", extra=tls_args(c, *writer))
    w.ok(f"push CT.w1 {SIZE}")
    w.ok(f"push CT.w2 {SIZE}")
    w.ok("pull CT.w1")
    calls = control_calls(c, "writer")
    check_equal((calls["push"], calls["send"]), (1, 0), "a TLS writer's tickets (push, send)")

    step("TLS: a reader's connection, authenticated by a pull, names a push: refused there, nothing stored")
    r = traced_shell(c, "sec", "reader", extra=tls_args(c, *reader))
    r.ok("pull CT.w1")
    answer = r.do(f"push CT.r1 {SIZE}")
    check_equal((answer.get("ok"), answer.get("code")), (False, REFUSED), f"the reader's named push: {answer}")
    check('permission denied: client "CN=reader" may not write' in answer.get("message", ""),
          f"refusal message: {answer!r}")
    calls = control_calls(c, "reader")
    check_equal((calls["push"], calls["send"]), (0, 1), "the reader's tickets: its first pull's only")
    names = [b["name"] for b in c.blob(*tls_args(c, *writer), "ls", store="sec").ok()["blobs"]]
    check_equal(sorted(names), ["CT.w1", "CT.w2"], "Blobs of the TLS store")


def test(c):
    plain(c)
    tls(c)


if __name__ == "__main__":
    harness.main(test)
