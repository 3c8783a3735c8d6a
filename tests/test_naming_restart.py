#!/usr/bin/env python3
"""The Naming Service restarted under running daemons and clients.

A long-lived client (tests/tools/client_driver shell: one libblobclient
Session) keeps running throughout. omniNames is killed with SIGKILL:
the client keeps moving bytes with the store reference it holds, a new
`blob` fails with "unreachable" (exit 52). omniNames restarted on the same
port with a fresh data directory knows no store: the daemon notices within
its --naming-check period and registers again, and new clients find it.
Then the daemon itself is restarted: the long-lived client's cached
reference is stale and the Session resolves the store again. Last,
omniNames restarted on its old data directory: the entries survive."""

import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, step  # noqa: E402


def test(c):
    naming = c.processes[0]
    url = c.naming
    port = int(url.rsplit(":", 1)[1])
    daemon = c.start_daemon("central", "file", extra=["--naming-check", "0.5"])
    shell = harness.DriverShell(c, "central")
    first = shell.ok("push CT.before 100000")

    step("omniNames killed: the running client keeps its store; new clients cannot find it")
    os.kill(naming.pid, signal.SIGKILL)
    naming.popen.wait(timeout=20)
    pulled = shell.ok("pull CT.before")
    check_equal(pulled["checksum"], first["checksum"], "checksum pulled while the Naming Service is down")
    c.blob("ls", store="central", timeout=120).error(EXIT["unreachable"], f"naming service at {url}")

    step("omniNames restarted on the same port with an empty data directory")
    naming = c.start_naming(port=port, datadir=c.path("naming-fresh"))
    check_equal(c.naming, url, "URL of the restarted Naming Service")
    harness.wait_for(lambda: c.blob("ls", store="central").code == 0, 60,
                   "blobstored to register again in the restarted Naming Service")
    with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
        log = f.read()
    check('store "central" registered again in the naming service' in log,
          "the daemon's log does not say it registered again")
    check("unreachable" in log, "the daemon's log does not say the Naming Service was unreachable")
    names = [b["name"] for b in c.blob("ls", store="central").ok()["blobs"]]
    check_equal(names, ["CT.before"], "Blobs listed through the restarted Naming Service")
    shell.ok("push CT.after 200000")
    shell.ok("ls")

    step("blobstored restarted: the long-lived client's reference is stale and is resolved again")
    check_equal(daemon.stop(), 0, "exit status of blobstored after SIGTERM")
    daemon = c.restart_daemon(daemon)
    again = shell.ok("pull CT.before")
    check_equal(again["checksum"], first["checksum"], "checksum pulled after the daemon's restart")
    shell.ok("push CT.after2 300000")

    step("omniNames restarted on its own data directory: the entries survive")
    datadir = os.path.dirname(naming.log_paths[0])
    os.kill(naming.pid, signal.SIGKILL)
    naming.popen.wait(timeout=20)
    naming = c.start_naming(port=port, datadir=datadir)
    harness.wait_for(lambda: c.blob("ls", store="central").code == 0, 60, "blob ls after the second restart")
    names = sorted(b["name"] for b in c.blob("ls", store="central").ok()["blobs"])
    check_equal(names, ["CT.after", "CT.after2", "CT.before"], "Blobs listed after the second restart")
    shell.ok("pull CT.after2")
    check(daemon.running(), "blobstored exited")


if __name__ == "__main__":
    harness.main(test)
