#!/usr/bin/env python3
"""A GUI's own event loop drives a Session: clients/examples/glib_loop (built
when configure finds GLib) pulls a series of Blobs over data connections
with a GLib main loop watching Session::descriptor() (g_unix_fd_add) and
Session::next_timeout() (g_timeout_add), the Session in ReactorMode::Caller.
Every Blob's size and CRC32C equal the pushed file's; the descriptor woke
the loop; every library callback ran on the main thread; the process has no
data-plane thread ("blob-loop", which ReactorMode::Thread starts), only the
main thread, the library's "blob-control" workers and omniORB's. Skipped
(77) when the example is not built (no libglib2.0-dev)."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402

SIZES = (0, 1, 4096, 65536 + 7, 1 << 20, 3 * (1 << 20) + 5, 8 << 20, 200000)


def test(c):
    example = harness.program("clients/examples/glib_loop")
    c.start_daemon("ws1", "file")

    step(f"push {len(SIZES)} Blobs of 0 B to 8 MiB with the CLI")
    expected = {}
    for i, size in enumerate(SIZES):
        name = f"GUI.slice{i:02d}"
        path = c.path(name)
        digest = harness.write_random(path, size)
        c.blob("push", "--name", name, path, store="ws1").ok()
        expected[name] = (size, digest)

    step("glib_loop pulls them through a GLib main loop on the Session's descriptor")
    # 64 KiB receive buffers: each transfer waits on its socket many times.
    argv = [example, c.naming, "ws1", "--receive-buffer", "65536", *expected]
    code, out, err = c.run(argv, timeout=120)
    check(code == 0, f"`{' '.join(argv)}` exited {code}\n  stdout: {out.strip()!r}\n  stderr: {err.strip()!r}")
    step(f"  {out.strip()}")
    pulled = {}
    for m in re.finditer(r"^pulled (\S+) (\d+) (crc32c:[0-9a-f]{8})$", out, re.M):
        pulled[m.group(1)] = (int(m.group(2)), m.group(3))
    check_equal(pulled, expected, "glib_loop: every Blob's size and CRC32C")

    wakeups = re.search(r"^wakeups descriptor=(\d+) timer=(\d+) off-thread-callbacks=(\d+) rounds=\d+ events=\d+$",
                        out, re.M)
    check(wakeups is not None, f"glib_loop printed no wakeups line: {out!r}")
    # Without the descriptor the loop would wake only on its timer (about
    # once a second); EventLoopTest checks a socket's readiness alone.
    check(int(wakeups.group(1)) >= 1, f"the descriptor never woke the GLib loop: {wakeups.group(0)}")
    check(int(wakeups.group(2)) <= 5, f"the loop waited for its timer instead of the descriptor: {wakeups.group(0)}")
    check_equal(int(wakeups.group(3)), 0, "library callbacks run off the main thread")

    threads = re.search(r"^threads (\d+) (\S+)$", out, re.M)
    check(threads is not None, f"glib_loop printed no threads line: {out!r}")
    names = dict((n.rsplit("x", 1)[0], int(n.rsplit("x", 1)[1])) for n in threads.group(2).split(","))
    check("blob-loop" not in names, f"a data-plane thread (blob-loop) in a Caller-mode process: {names}")
    check("blob-control" in names, f"no control worker (blob-control) among {names}: are threads named?")


if __name__ == "__main__":
    harness.main(test)
