#!/usr/bin/env python3
"""`blob` behaves as Unix tools do:

- a reader that goes away ends a listing quietly (`blob ls | head -3`):
  ls, stat, stores and watch end by SIGPIPE with nothing on stderr, as
  ls(1) and cat(1) do; a pull that writes a Blob's bytes to standard output
  keeps its error (exit 40, "cannot write standard output"): its reader got
  part of a Blob;
- folders: `push DIR` (with or without tab completion's trailing slash)
  says DIR is a directory and names -r; `push -r DIR` pushes every regular
  file below DIR, named by its path below it ('/' as '_'), skipping hidden
  files and saying so; `-r` with no directory, or with copy, is a usage
  error that names --replace;
- `pull NAME out/x` into a missing directory names the user's directory,
  never the temporary file;
- a push of an existing name says `--replace`, not the API's words;
- `blob help` and `blob --help` list the commands one line each and the
  options every command takes; `blob help COMMAND` is `blob COMMAND
  --help`; `--help-all` shows every option; `blob stores` says a store
  without a capacity is unlimited;
- the progress bar of a push whose input stops says "stalled" while it
  waits (it redraws on a timer, not only when bytes arrive)."""

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step  # noqa: E402


def to_closed_pipe(c, args, timeout=60):
    """Runs blob ARGS with standard output a pipe whose reader has gone:
    (returncode, stderr)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        p = subprocess.run([harness.program("clients/blob"), "--naming", c.naming, *args], stdin=subprocess.DEVNULL,
                           stdout=write_end, stderr=subprocess.PIPE, env=c.env, timeout=timeout, text=True)
    finally:
        os.close(write_end)
    return p.returncode, p.stderr


def read_terminal(master, done, timeout):
    """What a program draws on the pseudo-terminal `master` until
    `done(drawn so far)` or `timeout` seconds."""
    drawn = b""
    deadline = time.monotonic() + timeout
    while not done(drawn) and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                drawn += os.read(master, 65536)
            except OSError:  # the program ended: EIO
                break
    return drawn


def test(c):
    blob = harness.program("clients/blob")
    step("help as git's: blob help, blob help COMMAND, a short --help, --help-all")
    code, overview, err = c.run([blob, "help"], timeout=30)
    check_equal(code, 0, f"blob help ({err!r})")
    code, short, err = c.run([blob, "--help"], timeout=30)
    check_equal(short, overview, "blob --help against blob help")
    for command in ("push", "pull", "stat", "verify", "ls", "rm", "locate", "stores", "checksum", "copy", "watch",
                    "find"):
        lines = [line for line in overview.splitlines() if line.startswith(f"  {command} ")]
        check(len(lines) == 1, f"blob --help has no one line for {command}: {overview[:900]!r}")
        code, own, err = c.run([blob, "help", command], timeout=30)
        code2, same, _ = c.run([blob, command, "--help"], timeout=30)
        check(code == 0 and code2 == 0 and own == same and own.startswith(f"Usage: blob [options] {command}"),
              f"blob help {command} against blob {command} --help: {code} {own[:200]!r}")
    for option in ("--offset", "--replace", "--prune", "--study"):
        check(option not in short, f"blob --help shows {option}, a command's own option")
    check(len(short.splitlines()) < 70, f"blob --help has {len(short.splitlines())} lines")
    code, everything, err = c.run([blob, "--help-all"], timeout=30)
    check(code == 0 and all(o in everything for o in ("--offset", "--replace", "--prune", "--recursive")),
          f"blob --help-all: {code} {everything[:300]!r}")
    code, out, err = c.run([blob, "help", "nope"], timeout=30)
    check(code == 1 and "unknown command nope" in err, f"blob help nope: {code} {err!r}")

    c.start_daemon("unix", "memory:256M")
    c.start_daemon("plainfile", "file")
    code, out, err = c.run([blob, "--naming", c.naming, "stores"])
    line = [x for x in out.splitlines() if x.startswith("plainfile ")]
    check(code == 0 and line and " capacity unlimited " in line[0], f"blob stores, a file store: {out!r}")
    base = [blob, "--naming", c.naming, "--store", "unix"]

    step("folders: push DIR names -r; push -r DIR pushes every file below it")
    study = c.path("study")
    os.makedirs(os.path.join(study, "series2", "deeper"))
    os.makedirs(os.path.join(study, ".git"))
    files = {"IM1.dcm": 300_000, "series2/IM2.dcm": 200_000, "series2/deeper/IM3.dcm": 1 * MiB}
    digests = {rel: harness.write_random(os.path.join(study, rel), size) for rel, size in files.items()}
    harness.write_random(os.path.join(study, ".DS_Store"), 100)
    harness.write_random(os.path.join(study, ".git", "HEAD"), 100)
    for arg in (study, study + "/"):
        code, out, err = c.run([*base, "push", arg])
        check(code == 10 and f"{arg} is a directory" in err and "-r (--recursive)" in err,
              f"push {arg} without -r: exit {code}, {err!r}")
    code, out, err = c.run([*base, "ls"])
    check_equal(out.strip(), "", "Blobs after the refused folder pushes")
    code, out, err = c.run([*base, "--json", "push", "-r", study + "/"])
    check_equal(code, 0, f"push -r ({err!r})")
    pushed = {p["name"]: p for p in json.loads(out)["pushes"]}
    check_equal(sorted(pushed), ["IM1.dcm", "series2_IM2.dcm", "series2_deeper_IM3.dcm"], "names of push -r")
    check("skipped 2 hidden" in err, f"push -r does not say it skipped the hidden files: {err!r}")
    for rel, digest in digests.items():
        name = rel.replace("/", "_")
        check_equal(pushed[name]["checksum"], digest, f"checksum of {name}")
        check_equal(pushed[name]["path"], os.path.join(study + "/", rel).replace("//", "/"), f"path of {name}")
    code, out, err = c.run([*base, "push", "-r", os.path.join(study, "IM1.dcm")])
    check(code == 1 and "--replace" in err and "no FILE given is one" in err, f"push -r FILE: exit {code}, {err!r}")
    code, out, err = c.run([blob, "--naming", c.naming, "copy", "-r", "IM1.dcm", "--to", "unix"])
    check(code == 1 and "--replace" in err and "push only" in err, f"copy -r: exit {code}, {err!r}")
    empty = c.path("empty")
    os.makedirs(empty)
    code, out, err = c.run([*base, "push", "-r", empty])
    check(code == 10 and "no files in the directory" in err, f"push -r of an empty directory: exit {code}, {err!r}")

    step("an existing name: the message names --replace")
    code, out, err = c.run([*base, "push", os.path.join(study, "IM1.dcm")])
    check_equal(code, 21, f"second push of IM1.dcm: exit status ({err!r})")
    check("`blob push --replace` overwrites it" in err and "reserve with" not in err,
          f"already exists message: {err!r}")

    step("pull into a missing directory names that directory")
    target = os.path.join(c.path("nowhere"), "IM1.dcm")
    code, out, err = c.run([*base, "pull", "IM1.dcm", target])
    check(code == 40 and f"directory {c.path('nowhere')} does not exist" in err and ".pull-" not in err,
          f"pull into a missing directory: exit {code}, {err!r}")

    step("progress on a terminal: a stalled push says so while it waits")
    fifo = c.path("slow.fifo")
    os.mkfifo(fifo)
    master, slave = pty.openpty()
    pusher = subprocess.Popen([*base, "--timeout", "60", "push", "--name", "SLOW", "--size", "8M", fifo],
                              stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=c.env)
    os.close(slave)
    try:
        writer = os.open(fifo, os.O_WRONLY)  # the push opened its end
        os.write(writer, b"x" * MiB)
        drawn = read_terminal(master, lambda text: b"stalled" in text, 20)
        check(b"stalled 0:0" in drawn and b" / 8.0 MiB" in drawn,
              f"the bar of a push waiting for its input does not say it stalled: {drawn[-400:]!r}")
        for _ in range(7):
            os.write(writer, b"x" * MiB)
        os.close(writer)
        drawn += read_terminal(master, lambda _text: pusher.poll() is not None, 60)
        check_equal(pusher.wait(timeout=30), 0, f"the stalled push in the end ({drawn[-300:]!r})")
    finally:
        if pusher.poll() is None:
            pusher.kill()
            pusher.wait()
        os.close(master)

    step("a reader that went away: listings end quietly, a pull of bytes keeps its error")
    for args in (["ls"], ["stat", "IM1.dcm"], ["stores"], ["--json", "ls"]):
        code, err = to_closed_pipe(c, ["--store", "unix", *args])
        check(code == -signal.SIGPIPE and err == "", f"blob {' '.join(args)} to a closed pipe: {code}, {err!r}")
    code, err = to_closed_pipe(c, ["--store", "unix", "pull", "series2_deeper_IM3.dcm", "-"])
    check(code == 40 and "cannot write standard output" in err, f"pull to a closed pipe: {code}, {err!r}")

    # watch: its first event meets the closed pipe.
    read_end, write_end = os.pipe()
    os.close(read_end)
    watcher = subprocess.Popen([blob, "--naming", c.naming, "--store", "unix", "watch"], stdin=subprocess.DEVNULL,
                               stdout=write_end, stderr=subprocess.PIPE, env=c.env, text=True)
    os.close(write_end)
    try:
        ready, _, _ = select.select([watcher.stderr], [], [], 30)
        line = watcher.stderr.readline() if ready else ""
        check("watching" in line, f"blob watch did not start: {line!r}")
        deadline = time.monotonic() + 60
        pushes = 0
        while watcher.poll() is None and time.monotonic() < deadline and pushes < 20:
            code, out, err = c.run([*base, "--replace", "push", "--name", "W", os.path.join(study, "IM1.dcm")])
            check_equal(code, 0, f"push for the watcher ({err!r})")
            pushes += 1
            try:
                watcher.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        check(watcher.poll() == -signal.SIGPIPE, f"blob watch to a closed pipe: {watcher.poll()} after {pushes} pushes")
        rest = watcher.stderr.read()
        check(rest == "", f"blob watch to a closed pipe said {rest!r}")
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()


if __name__ == "__main__":
    harness.main(test)
