#!/usr/bin/env python3
"""Failed starts under `blob-activatord --start-timeout 3 --kill-grace 1`:

- a `blobstored` that hangs before its ready line (its configured log file
  is a FIFO nobody reads: it blocks in open() with SIGTERM blocked): four
  concurrent requests start ONE daemon and are all answered within a few
  seconds of the start timeout (far below the client's own 20 s) with exit
  52 naming the store and "no ready line within 3 s"; meanwhile another
  store is started and served; the hung daemon's PID is gone within the
  grace (SIGKILL); requests during the back-off are refused at once saying
  when the next attempt comes, and start nothing;
- a daemon that exits at start (a store kind blobstored refuses): the
  answer names its exit status and its last log line; requests sent one
  after another for 6 s start it exactly 3 times (back-off 1 s, 2 s, 4 s),
  every refused one answered at once; the log shows the state ("start
  failed 3 times, next attempt in 4 s");
- the hanging store repaired (its FIFO replaced by nothing): once its
  back-off is over it starts, the back-off is reset (the next failure is
  "start failed 1 time" again);
- SIGTERM: the activator exits 0 and no daemon it started is left."""

import os
import re
import resource
import select
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, log_text, step  # noqa: E402

START_TIMEOUT = 3
GRACE = 2
CLIENT_BOUND = START_TIMEOUT + 4  # a start's answer: the timeout and some slack, never the client's 20 s
REFUSAL_BOUND = 2.5  # a refusal during the back-off: one `blob` run, no start


def write_conf(conf_dir, name, store, extra=""):
    with open(os.path.join(conf_dir, f"{name}.conf"), "w") as f:
        f.write(f"store = {store}\ncontrol-address = 127.0.0.1:0\ndata-address = 127.0.0.1:0\n{extra}")



def spawned(proc, store):
    return [int(m.group(1)) for m in
            re.finditer(rf'store "{re.escape(store)}": starting blobstored \(pid (\d+)\)', log_text(proc))]


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def blob_argv(c, store, *args):
    return [harness.program("clients/blob"), "--naming", c.naming, "--store", store, "--json"] + list(args)


def start_activator(c, name, conf_dir, *options, nofile=None):
    err_path = c.path(f"{name}.err")
    argv = [harness.program("blobstore/blob-activatord"), "--config-dir", conf_dir, "--naming", c.naming,
            "--blobstored", harness.program("blobstore/blobstored"), "--control-address", "127.0.0.1:0"]
    with open(err_path, "wb") as err:
        limit = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))) if nofile else None
        popen = subprocess.Popen(argv + list(options), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                 env=c.env, text=True, preexec_fn=limit)
    activator = harness.Process("blob-activatord", popen, [err_path])
    c.processes.append(activator)
    return popen, activator


def timed_ls(c, store):
    t0 = time.monotonic()
    r = c.blob("ls", store=store, timeout=60)
    return r, time.monotonic() - t0


def test(c):
    conf_dir = c.path("conf")
    os.makedirs(conf_dir)
    fifo = c.path("hang.log")
    os.mkfifo(fifo)
    write_conf(conf_dir, "ws1", "memory:64M")
    write_conf(conf_dir, "hang", "memory:64M", f"log-file = {fifo}\n")
    write_conf(conf_dir, "broken", "bogus:x")
    popen, activator = start_activator(c, "activator", conf_dir, "--start-timeout", str(START_TIMEOUT),
                                       "--kill-grace", str(GRACE))
    check_equal(popen.stdout.readline().strip(), "blob-activatord ready stores=broken,hang,ws1",
                "the activator's ready line")

    step("four concurrent requests to a daemon that hangs before its ready line; ws1 served meanwhile")
    t0 = time.monotonic()
    procs = [subprocess.Popen(blob_argv(c, "hang", "ls"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=c.env, text=True) for _ in range(4)]
    try:
        harness.wait_for(lambda: spawned(activator, "hang"), 20, "the start of hang")
        r, ws1 = timed_ls(c, "ws1")
        r.ok()
        check(all(p.poll() is None for p in procs),
              f"ws1 answered in {ws1:.2f} s, after the requests waiting for hang were answered")
        step(f"ws1 started and answered in {ws1 * 1000:.0f} ms while hang was starting")
        results = []
        for p in procs:
            out, err = p.communicate(timeout=60)
            results.append((p.returncode, time.monotonic() - t0, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for code, took, err in results:
        check_equal(code, EXIT["unreachable"], f"exit code of a request waiting for hang (stderr {err!r})")
        check('store "hang"' in err and f"no ready line within {START_TIMEOUT} s" in err,
              f"the reason of the failed start: {err!r}")
        check(took < CLIENT_BOUND, f"a request for hang took {took:.1f} s (bound {CLIENT_BOUND} s)")
    step(f"all four answered within {max(r[1] for r in results):.2f} s: {results[0][2].strip()}")
    pids = spawned(activator, "hang")
    check_equal(len(pids), 1, "daemons started for hang by four concurrent requests")

    step("requests during the back-off: refused at once, nothing started")
    # the first back-off lasts until the hung daemon was surely killed (grace + 1 s)
    procs = [subprocess.Popen(blob_argv(c, "hang", "ls"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=c.env, text=True) for _ in range(6)]
    for p in procs:
        _, err = p.communicate(timeout=60)
        check_equal(p.returncode, EXIT["unreachable"], f"exit code during the back-off (stderr {err!r})")
        check(re.search(r"not started: start failed 1 time, next attempt in [0-9.]+ s", err) is not None and
              "no ready line" in err, f"the refusal during the back-off: {err!r}")
    check_equal(len(spawned(activator, "hang")), 1, "daemons started for hang during its back-off")
    harness.wait_for(lambda: gone(pids[0]), GRACE + 10, f"the hung daemon (pid {pids[0]}) to be gone")
    check('store "hang": start failed 1 time, next attempt in' in log_text(activator),
          "the back-off state of hang in the log")

    step("a daemon that exits at start: back-off 1 s, 2 s, 4 s over 6 s of requests")
    r, took = timed_ls(c, "broken")
    r.error(EXIT["unreachable"], 'store "broken": blobstored did not start: it exited with exit status 1 at start')
    r.error(EXIT["unreachable"], '"bogus:x" is not')
    check(took < CLIENT_BOUND, f"the failed start of broken took {took:.1f} s")
    first = time.monotonic()
    requests, slowest = 1, 0.0
    while time.monotonic() - first < 6.0 and requests < 200:
        r, took = timed_ls(c, "broken")
        check_equal(r.code, EXIT["unreachable"], "exit code of a request for broken: " + r.describe())
        if "not started: start failed" in r.stderr:
            slowest = max(slowest, took)
        requests += 1
    starts = len(spawned(activator, "broken"))
    step(f"{requests} requests for broken in 6 s started it {starts} times; slowest refusal {slowest * 1000:.0f} ms")
    check_equal(starts, 3, f"starts of broken over {requests} requests in 6 s")
    check(slowest < REFUSAL_BOUND, f"a refusal during the back-off took {slowest:.2f} s")
    text = log_text(activator)
    for n, delay in ((1, 1), (2, 2), (3, 4)):
        check(f'store "broken": start failed {n} time{"s" if n > 1 else ""}, next attempt in {delay} s' in text,
              f"the log line of failure {n} of broken (next attempt in {delay} s)")

    step("hang repaired: started once its back-off is over, the back-off reset")
    os.unlink(fifo)

    def started():
        r = c.blob("ls", store="hang", timeout=60)
        if r.code == 0:
            return True
        check_equal(r.code, EXIT["unreachable"], "exit code while hang is backing off: " + r.describe())
        return False

    harness.wait_for(started, 30, "hang to start after its repair", interval=0.3)
    check(re.search(r'store "hang": started after \d+ failed starts?; the back-off is reset', log_text(activator)),
          "the reset of hang's back-off in the log")
    pid = int(re.findall(r'started blobstored for store "hang" \(pid (\d+)', log_text(activator))[-1])
    taken_back = 'store "hang": its entry names this activator again'
    before = log_text(activator).count(taken_back)
    os.kill(pid, signal.SIGKILL)
    harness.wait_for(lambda: log_text(activator).count(taken_back) > before, 30,
                     "the activator taking hang's entry back")
    os.unlink(fifo)  # the log file the repaired daemon wrote
    os.mkfifo(fifo)
    r, took = timed_ls(c, "hang")
    r.error(EXIT["unreachable"], "start failed 1 time, next attempt in")
    check(took < CLIENT_BOUND, f"the second hang took {took:.1f} s")
    hung = spawned(activator, "hang")[-1]
    harness.wait_for(lambda: gone(hung), GRACE + 10, f"the second hung daemon (pid {hung}) to be gone")

    step("SIGTERM: the activator exits 0, no daemon of it left")
    children = spawned(activator, "ws1") + spawned(activator, "hang") + spawned(activator, "broken")
    popen.send_signal(signal.SIGTERM)
    check_equal(popen.wait(timeout=60), 0, "the activator's exit status")
    for p in children:
        check(gone(p), f"daemon pid {p} still runs after the activator stopped")


def endpoint(activator):
    m = harness.wait_for(lambda: re.search(r"listening on 127\.0\.0\.1:(\d+)", log_text(activator)), 20,
                         "the activator's listening line")
    return int(m.group(1))


def connect(port, source):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    return s


def closed(s):
    """Whether the activator closed `s` (end of stream or reset), without blocking."""
    try:
        r, _, _ = select.select([s], [], [], 0)
        if not r:
            return False
        return s.recv(4096) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def test_connections(c):
    """The activator's own port, without any credential: silent, partial
    and trickling connections closed at --idle-timeout; per-address and
    total caps; a client still served when the cap is reached."""
    conf_dir = c.path("conf-flood")
    os.makedirs(conf_dir)
    write_conf(conf_dir, "ws2", "memory:64M")

    step("out-of-range values of the new options: exit 1 naming the value and the range")
    for option, value, allowed in (("--kill-grace", "0", "1 to 60"), ("--idle-timeout", "0", "1 to 3600"),
                                   ("--max-connections", "8", "16 to 65536"),
                                   ("--max-connections-per-peer", "0", "1 to 4096")):
        code, _, err = c.run([harness.program("blobstore/blob-activatord"), "--config-dir", conf_dir,
                              "--naming", c.naming, option, value], timeout=30)
        check_equal(code, 1, f"exit code of {option} {value}")
        check(f"{option}: {value} is out of range (allowed: {allowed})" in err, f"the message of {option}: {err!r}")

    step("--idle-timeout 2: silent, partial and trickling connections closed within it")
    popen, activator = start_activator(c, "activator-idle", conf_dir, "--idle-timeout", "2")
    check_equal(popen.stdout.readline().strip(), "blob-activatord ready stores=ws2", "the ready line")
    port = endpoint(activator)
    t0 = time.monotonic()
    silent = connect(port, "127.0.0.1")
    partial = connect(port, "127.0.0.1")
    partial.send(b"GIOP\x01\x02")
    trickle = connect(port, "127.0.0.1")
    data = b"GIOP\x01\x02\x01\x00" + (1000).to_bytes(4, "little") + b"\x00" * 28
    sent, ends = 0, {}
    try:
        while len(ends) < 3 and time.monotonic() - t0 < 15:
            now = time.monotonic() - t0
            if "trickling" not in ends and sent < len(data) and now >= sent * 0.25:
                try:
                    trickle.send(data[sent:sent + 1])
                    sent += 1
                except (ConnectionResetError, BrokenPipeError):
                    ends["trickling"] = now
            for what, s in (("silent", silent), ("partial", partial), ("trickling", trickle)):
                if what not in ends and closed(s):
                    ends[what] = now
            time.sleep(0.02)
    finally:
        for s in (silent, partial, trickle):
            s.close()
    step("closed after: " + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(ends.items())) +
         f" (the trickler had sent {sent} bytes)")
    for what in ("silent", "partial", "trickling"):
        check(what in ends, f"the {what} connection still open after 15 s (--idle-timeout 2)")
        check(0.9 <= ends[what] <= 6.0, f"the {what} connection closed after {ends[what]:.2f} s (expected 1 to 6 s)")
    popen.send_signal(signal.SIGTERM)
    check_equal(popen.wait(timeout=60), 0, "exit status of the first flood activator")

    step("caps: 10 per address, 200 in all; 14 connections from 127.0.0.2, then 19 addresses x 10")
    popen, activator = start_activator(c, "activator-caps", conf_dir, "--idle-timeout", "60",
                                       "--max-connections", "200", "--max-connections-per-peer", "10")
    check_equal(popen.stdout.readline().strip(), "blob-activatord ready stores=ws2", "the ready line")
    port = endpoint(activator)
    flood = {}
    try:
        flood["127.0.0.2"] = [connect(port, "127.0.0.2") for _ in range(14)]
        harness.wait_for(lambda: sum(closed(s) for s in flood["127.0.0.2"]) >= 4, 10,
                         "4 of the 14 connections from 127.0.0.2 to be refused")
        check_equal(sum(not closed(s) for s in flood["127.0.0.2"]), 10, "connections from 127.0.0.2 kept open")
        for i in range(3, 22):
            flood[f"127.0.0.{i}"] = [connect(port, f"127.0.0.{i}") for _ in range(10)]

        def still_open():
            return {a: sum(not closed(s) for s in socks) for a, socks in flood.items()}

        opened = harness.wait_for(lambda: (lambda o: o if sum(o.values()) <= 200 else None)(still_open()), 10,
                                  "at most 200 flood connections open")
        threads = harness.proc_status(popen.pid, "Threads")
        step(f"{sum(opened.values())} flood connections open, at most {max(opened.values())} per address; "
             f"activator threads {threads}")
        check(max(opened.values()) <= 10, f"an address holds more than 10 connections: {opened}")
        check(threads < 200 + 16 + 40,
              f"the activator holds {threads} threads for {sum(opened.values())} connections (cap 200)")

        step("the cap reached: a newcomer's address and a client still get in, at the expense of the biggest")
        late = connect(port, "127.0.0.30")
        r, took = timed_ls(c, "ws2")
        r.ok()
        check(not closed(late), "a connection from a new address refused while others held 10 each")
        step(f"blob ls through the activator during the flood: {took * 1000:.0f} ms")
        harness.wait_for(lambda: re.search(r"ended to make room: [1-9]", log_text(activator)), 20,
                         "the summary of refused and ended connections in the log")
        check("connection from 127.0.0.2 refused: 10 connections from that address already" in log_text(activator),
              "the refusal of 127.0.0.2 in the log")
        late.close()
    finally:
        for socks in flood.values():
            for s in socks:
                s.close()
    popen.send_signal(signal.SIGTERM)
    check_equal(popen.wait(timeout=60), 0, "exit status of the second flood activator")

    step("a descriptor limit of 400: 280 connections from 40 addresses, capped at 200, still serving")
    popen, activator = start_activator(c, "activator-nofile", conf_dir, "--idle-timeout", "60", nofile=400)
    check_equal(popen.stdout.readline().strip(), "blob-activatord ready stores=ws2", "the ready line")
    port = endpoint(activator)
    check("at most 200 connections, 16 per address" in log_text(activator),
          "the connection cap fitted to the descriptor limit (half of 400) in the log")
    flood = []
    try:
        for i in range(40):
            for _ in range(7):
                flood.append(connect(port, f"127.0.0.{40 + i}"))
        harness.wait_for(lambda: sum(not closed(s) for s in flood) <= 200, 10, "at most 200 flood connections open")
        ticks = os.sysconf("SC_CLK_TCK")

        def cpu():
            with open(f"/proc/{popen.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / ticks

        before, t0 = cpu(), time.monotonic()
        r, took = timed_ls(c, "ws2")
        r.ok()
        deadline = t0 + 3.0
        while time.monotonic() < deadline:
            time.sleep(0.1)
        share = (cpu() - before) / (time.monotonic() - t0)
        kept = sum(not closed(s) for s in flood)
        step(f"{kept} of 280 flood connections open; blob ls in {took * 1000:.0f} ms; "
             f"activator CPU {share * 100:.0f} % of 3 s")
        check(kept <= 200, f"{kept} flood connections open (cap 200)")
        check(share < 0.4, f"the activator used {share * 100:.0f} % CPU during the flood (busy loop?)")
        check("Too many open files" not in log_text(activator), "the activator ran out of descriptors")
    finally:
        for s in flood:
            s.close()
    popen.send_signal(signal.SIGTERM)
    check_equal(popen.wait(timeout=60), 0, "exit status of the third flood activator")


def test_all(c):
    test(c)
    test_connections(c)


if __name__ == "__main__":
    harness.main(test_all)
