#!/usr/bin/env python3
"""Activation on demand: `blob-activatord --config-dir DIR` holds the Naming
entries of stopped stores, and the first request that needs one starts its
`blobstored` and completes (LOCATION_FORWARD to the new daemon):

- the activator's ready line lists the configured stores; none of their
  daemons runs yet;
- a plain `blob push` to a stopped store starts it and stores the Blob; a
  plain `blob pull` brings it back bit-exact; the first request's time
  (activation included) and a warm one's are printed;
- four concurrent first requests to another stopped store start one daemon;
- the daemon killed afterwards (SIGKILL, by the PID the activator logged):
  the activator takes the entry back and the next pull starts it again;
- a store whose configuration blobstored refuses: the request fails
  (unreachable), the activator logs the daemon's own reason, and stays up;
- SIGTERM: the activator stops the daemons it started and exits 0."""

import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, log_text, MiB, step  # noqa: E402


def write_conf(c, conf_dir, name, store):
    with open(os.path.join(conf_dir, f"{name}.conf"), "w") as f:
        f.write(f"store = {store}\ncontrol-address = 127.0.0.1:0\ndata-address = 127.0.0.1:0\n")



def started(proc, store):
    return [int(m.group(1)) for m in
            re.finditer(rf'started blobstored for store "{re.escape(store)}" \(pid (\d+)', log_text(proc))]


def timed_blob(c, *args, store):
    t0 = time.monotonic()
    r = c.blob(*args, store=store, timeout=120)
    return r, time.monotonic() - t0


def test(c):
    conf_dir = c.path("conf")
    os.makedirs(conf_dir)
    write_conf(c, conf_dir, "ws1", "file:" + c.path("ws1"))
    write_conf(c, conf_dir, "ws2", "memory:64M")
    write_conf(c, conf_dir, "broken", "bogus:x")
    err_path = c.path("activator.err")
    argv = [harness.program("blobstore/blob-activatord"), "--config-dir", conf_dir, "--naming", c.naming,
            "--blobstored", harness.program("blobstore/blobstored"), "--control-address", "127.0.0.1:0"]
    with open(err_path, "wb") as err:
        popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=c.env,
                                 text=True)
    activator = harness.Process("blob-activatord", popen, [err_path])
    c.processes.append(activator)
    line = popen.stdout.readline().strip()
    check_equal(line, "blob-activatord ready stores=broken,ws1,ws2", "the activator's ready line")
    check_equal(started(activator, "ws1") + started(activator, "ws2"), [], "daemons started before any request")

    step("a plain push to the stopped store ws1 starts it; a plain pull brings the Blob back")
    src = c.path("src")
    digest = harness.write_random(src, 8 * MiB)
    r, first = timed_blob(c, "push", "--name", "CT.act", src, store="ws1")
    check_equal(r.ok().get("checksum"), digest, "checksum of the push that started ws1")
    check_equal(len(started(activator, "ws1")), 1, "daemons started for ws1")
    r, warm = timed_blob(c, "push", "--name", "CT.warm", src, store="ws1")
    r.ok()
    step(f"first push (activation included) {first * 1000:.0f} ms, a warm push {warm * 1000:.0f} ms")
    check_equal(c.pull_checksum("CT.act", "ws1", c.path("out")), digest, "CT.act pulled")

    step("four concurrent first requests to ws2 start one daemon")
    procs = [subprocess.Popen([harness.program("clients/blob"), "--naming", c.naming, "--store", "ws2", "--json",
                               "ls"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=c.env, text=True)
             for _ in range(4)]
    codes = [p.wait(timeout=120) for p in procs]
    check_equal(codes, [0, 0, 0, 0], "exit codes of the concurrent first requests")
    check_equal(len(started(activator, "ws2")), 1, "daemons started for ws2")

    step("the daemon of ws1 killed: the next pull starts it again")
    pid = started(activator, "ws1")[0]
    os.kill(pid, signal.SIGKILL)
    harness.wait_for(lambda: f'store "ws1": its entry names this activator again' in log_text(activator), 30,
                     "the activator taking ws1's entry back")
    r, again = timed_blob(c, "--no-local", "pull", "CT.act", c.path("out2"), store="ws1")
    r.ok()
    check_equal(harness.checksum_file(c.path("out2")), digest, "CT.act pulled after the restart")
    check_equal(len(started(activator, "ws1")), 2, "daemons started for ws1 after the kill")
    step(f"pull that restarted ws1: {again * 1000:.0f} ms")

    step("a store blobstored refuses to serve: the request fails, the activator says why and stays up")
    c.blob("ls", store="broken", timeout=120).error(EXIT["unreachable"], "broken")
    harness.wait_for(lambda: 'store "broken": blobstored did not start' in log_text(activator), 30,
                     "the activator's line about broken")
    line = next(x for x in log_text(activator).splitlines() if 'store "broken": blobstored did not start' in x)
    check('"bogus:x" is not' in line and "exit status 1" in line, f"the reason of the failed start: {line!r}")
    check(popen.poll() is None, "the activator ended after a failed start")

    step("SIGTERM: the activator stops the daemons it started")
    pids = [started(activator, "ws1")[-1], started(activator, "ws2")[0]]
    popen.send_signal(signal.SIGTERM)
    check_equal(popen.wait(timeout=60), 0, "the activator's exit status")
    for p in pids:
        check(not os.path.exists(f"/proc/{p}") or open(f"/proc/{p}/stat").read().split()[2] == "Z",
              f"blobstored pid {p} still runs after the activator stopped")


if __name__ == "__main__":
    harness.main(test)
