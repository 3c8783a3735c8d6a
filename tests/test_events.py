#!/usr/bin/env python3
"""Store events (`blob watch`, BlobStore::subscribe) with real omniNames,
blobstored and blob processes:

- on a memory store with --evict, a push, a replacing push, an rm and a push
  that evicts each give their events to `blob watch --json`, in order, with
  consecutive sequence numbers and the reasons created, replaced, removed,
  evicted; a watcher of `--events removed` on two stores gets only those;
- two watchers, one stopped (SIGSTOP): a push of many Blobs completes, the
  other watcher gets every event, without a gap, while the first is still
  stopped; the daemon ends the stopped one's subscription with a log line;
- a watcher killed (SIGKILL) does not disturb the daemon, whose later
  events reach the other watchers; SIGINT and SIGTERM end a watcher with
  exit 0;
- bad input: an unknown --events kind, an unknown --store, --events on
  another command: exit 1 or 26 with the exact error."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, log_text, MiB, step  # noqa: E402


class Watcher:
    """`blob [OPTIONS] watch --json ARGS...`, its stdout lines parsed into `events`."""

    def __init__(self, c, name, *args, options=()):
        self.name = name
        self.err_path = c.path(f"{name}.err")
        argv = [harness.program("clients/blob"), "--naming", c.naming, *options, "watch", "--json", *args]
        with open(self.err_path, "wb") as err:
            self.proc = c.spawn(name, argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True)
        self.proc.log_paths.append(self.err_path)
        self.events = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        harness.wait_for(lambda: "blob watch: watching" in self.stderr() or not self.proc.running(), 30,
                         f"{name}'s subscription")
        check(self.proc.running(), f"{name} exited {self.proc.popen.poll()}: {self.stderr()!r}")

    def _pump(self):
        for line in self.proc.popen.stdout:
            self.events.put(json.loads(line))
        self.events.put(None)

    def stderr(self):
        with open(self.err_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def take(self, n, timeout=20):
        """The next `n` events; TestFailure when they do not come in time."""
        got = []
        deadline = time.monotonic() + timeout
        while len(got) < n:
            try:
                e = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                e = False
            if e is None or e is False:
                check(False, f"{self.name}: {len(got)} of {n} events within {timeout} s "
                      f"({'it exited' if e is None else 'no more'}): the last ones {got[-5:]}")
            got.append(e)
        return got

    def nothing_more(self):
        check(self.events.empty(), f"{self.name}: unexpected events {list(self.events.queue)}")

    def end(self, sig=signal.SIGINT):
        os.kill(self.proc.pid, sig)
        code = self.proc.popen.wait(timeout=20)
        check_equal(code, 0, f"{self.name}'s exit status after {signal.Signals(sig).name}")



def expect(events, shape, what):
    """Each event has the fields of its shape: (event, reason, name)."""
    got = [(e["event"], e["reason"], e["name"]) for e in events]
    check_equal(got, shape, what)


def file_of(c, name, size):
    path = c.path(name)
    harness.write_random(path, size, algorithm=None)
    return path


def store_events(c):
    daemon = c.start_daemon("cache", "memory:3M", extra=["--evict"])
    c.start_daemon("other", "memory:16M")
    w = Watcher(c, "watch-all", "--store", "cache")
    removals = Watcher(c, "watch-removed", "--events", "removed", "--store", "cache", "--store", "other")

    step("push, replace, rm, and a push that evicts: their events in order")
    a = file_of(c, "a", MiB)
    c.blob("push", "--name", "CT.a", a, store="cache").ok()
    c.blob("push", "--replace", "--name", "CT.a", a, store="cache").ok()
    c.blob("rm", "CT.a", store="cache").ok()
    for n in ("CT.b", "CT.c", "CT.d"):
        c.blob("push", "--name", n, file_of(c, n, MiB), store="cache").ok()
    c.blob("push", "--name", "CT.e", file_of(c, "e", MiB), store="cache").ok()
    events = w.take(8)
    expect(events, [("committed", "created", "CT.a"), ("committed", "replaced", "CT.a"),
                    ("removed", "removed", "CT.a"), ("committed", "created", "CT.b"),
                    ("committed", "created", "CT.c"), ("committed", "created", "CT.d"),
                    ("removed", "evicted", "CT.b"), ("committed", "created", "CT.e")], "events of the cache store")
    first = events[0]["sequence"]
    check_equal([e["sequence"] for e in events], list(range(first, first + 8)), "sequence numbers")
    check(all(e["store"] == "cache" and e["epoch_ns"] == events[0]["epoch_ns"] for e in events),
          f"store and epoch of every event: {events}")
    check_equal((events[0]["size"], events[0]["checksum"]), (MiB, harness.checksum_file(a)),
                "size and checksum of the committed event")
    check_equal(events[2].get("size"), MiB, "size of the removed Blob in its event")
    check('evicted "CT.b"' in log_text(daemon), "the daemon logs the eviction")

    step("--events removed on two stores: only the removals")
    c.blob("push", "--name", "CT.x", a, store="other").ok()
    c.blob("rm", "CT.x", store="other").ok()
    got = removals.take(3)
    expect(got, [("removed", "removed", "CT.a"), ("removed", "evicted", "CT.b"), ("removed", "removed", "CT.x")],
           "events of the removals watcher")
    check_equal([e["store"] for e in got], ["cache", "cache", "other"], "stores of the removals")
    w.nothing_more()
    removals.nothing_more()
    w.end(signal.SIGINT)
    removals.end(signal.SIGTERM)


def slow_and_dead_watchers(c):
    daemon = c.start_daemon("busy", "memory:256M")
    stopped = Watcher(c, "watch-stopped", "--store", "busy")
    lively = Watcher(c, "watch-lively", "--store", "busy")
    os.kill(stopped.proc.pid, signal.SIGSTOP)
    try:
        step("a push of many Blobs completes with a watcher stopped; the other gets every event")
        count = 6000
        src = c.path("many")
        os.makedirs(src)
        files = []
        for i in range(count):
            files.append(os.path.join(src, f"MR.{'x' * 150}.{i:05d}"))
            with open(files[-1], "wb") as f:
                f.write(b"%d" % i)
        started = time.monotonic()
        c.blob("push", *files, store="busy", timeout=600).ok()
        step(f"{count} pushes in {time.monotonic() - started:.1f} s")
        got = lively.take(count, timeout=60)
        step(f"the lively watcher got {count} events {time.monotonic() - started:.1f} s after the pushes began")
        sequences = [e["sequence"] for e in got]
        wrong = next((i for i, s in enumerate(sequences) if s != sequences[0] + i), None)
        check(wrong is None, f"the lively watcher's sequence numbers, in order without a gap: at event {wrong}: "
              f"{sequences[max(0, (wrong or 0) - 3):(wrong or 0) + 3]}")
        check(stopped.proc.running(), "the stopped watcher is still there")
        harness.wait_for(lambda: "ended: it did not take an event" in log_text(daemon), 30,
                         "the daemon's log line ending the stopped watcher's subscription")
        line = next(x for x in log_text(daemon).splitlines() if "ended: it did not take an event" in x)
        step(f"daemon: {line.strip()}")
        check("CORBA TIMEOUT" in line, f"the ending says why: {line!r}")
    finally:
        os.kill(stopped.proc.pid, signal.SIGCONT)
    stopped.end(signal.SIGTERM)

    step("a killed watcher does not disturb the daemon nor the other watchers")
    doomed = Watcher(c, "watch-killed", "--store", "busy")
    doomed.proc.kill()
    last = file_of(c, "last", 1000)
    for i in range(3):
        c.blob("push", "--name", f"CT.after.{i}", last, store="busy").ok()
    expect(lively.take(3), [("committed", "created", f"CT.after.{i}") for i in range(3)],
           "events after a watcher was killed")
    check(daemon.running(), "the daemon runs on")
    lively.end(signal.SIGINT)


def bad_input(c):
    step("bad input: unknown --events kind, unknown --store, --events elsewhere")
    c.blob("watch", "--events", "committed,deleted", json_out=False).error(
        1, 'unknown event kind "deleted" in "committed,deleted" (known: committed, removed')
    c.blob("watch", "--events", "", json_out=False).error(1, 'unknown event kind ""')
    c.blob("watch", "--store", "nosuch", json_out=False).error(26, 'no store named "nosuch" is registered')
    c.blob("ls", "--events", "removed", json_out=False).error(1, "--events applies to watch only, not ls")
    c.blob("ls", "--store", "a", "--store", "b", json_out=False).error(1, "--store given 2 times: only watch takes")


def test(c):
    bad_input(c)
    store_events(c)
    slow_and_dead_watchers(c)


if __name__ == "__main__":
    harness.main(test)
