#!/usr/bin/env python3
"""The `blob` command line as users of rsync and DCMTK expect it:

- `blob COMMAND --help` shows that command's synopsis and options, then the
  options every command takes, and the exit codes; another command's
  options are not shown; an unknown command with --help is a usage error;
- `--json`: every object printed has `"version": 2`; a transfer's rate is
  `MBps` (10^6 bytes/s) and there is no `mbps`; a usage error with --json
  is a JSON error on stdout too (`"name": "usage"`, exit 1);
- on a terminal (a pseudo-terminal the test opens), a push and a pull draw
  a progress bar with the bytes in binary units, the rate in MB/s and the
  time left; a resumed pull's bar counts the whole Blob."""

import json
import os
import pty
import re
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MiB, check, check_equal, step  # noqa: E402


def on_terminal(c, args, timeout=120):
    """Runs blob ARGS with stderr (and stdout) on a pseudo-terminal: (exit
    code, everything it drew)."""
    master, slave = pty.openpty()
    argv = [harness.program("clients/blob"), "--naming", c.naming, *args]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=c.env)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    os.close(master)
    return p.wait(timeout=30), out.decode(errors="replace")


def test(c):
    blob = harness.program("clients/blob")
    step("per-command --help")
    for command, own, foreign in (("push", ["--name", "--replace", "--size", "--resume"], ["--offset", "--prune"]),
                                  ("pull", ["--offset", "--length", "--no-verify"], ["--replace", "--prune"]),
                                  ("stores", ["--prune"], ["--offset", "--name"])):
        code, out, err = c.run([blob, command, "--help"], timeout=30)
        check_equal(code, 0, f"blob {command} --help exit status ({err!r})")
        check(out.startswith(f"Usage: blob [options] {command}"), f"blob {command} --help: {out[:200]!r}")
        for option in own + ["--naming", "--json"]:
            check(option in out, f"blob {command} --help does not show {option}")
        for option in foreign:
            check(option not in out, f"blob {command} --help shows {option}, another command's")
        check("Exit codes:" in out, f"blob {command} --help lists no exit codes")
    code, _out, err = c.run([blob, "frobnicate", "--help"], timeout=30)
    check(code == 1 and "unknown command frobnicate" in err, f"blob frobnicate --help: {code} {err!r}")

    step("--json: version 2 everywhere, MBps, usage errors as JSON")
    c.start_daemon("ux", "memory:256M")
    src = c.path("src")
    digest = harness.write_random(src, 48 * MiB)
    code, out, err = c.run([blob, "--naming", c.naming, "--store", "ux", "--json", "push", "--name", "MG.ux", src])
    check_equal(code, 0, f"push ({err!r})")
    pushed = json.loads(out)
    check(pushed.get("version") == 2 and pushed.get("MBps", 0) > 0 and "mbps" not in pushed,
          f"push --json: {pushed}")
    for args in (["stat", "MG.ux"], ["ls"], ["stores"], ["locate", "MG.ux"]):
        code, out, err = c.run([blob, "--naming", c.naming, "--store", "ux", "--json", *args])
        check(code == 0 and json.loads(out).get("version") == 2, f"blob --json {' '.join(args)}: {code} {out!r}")
    code, out, err = c.run([blob, "--json", "push"])
    error = json.loads(out) if out.strip() else {}
    check(code == 1 and error.get("version") == 2 and error.get("error", {}).get("name") == "usage" and
          error["error"].get("code") == 1, f"usage error with --json: exit {code}, stdout {out!r}, stderr {err!r}")

    step("progress on a terminal: units, rate, time left; a resumed pull counts the whole Blob")
    code, drawn = on_terminal(c, ["--store", "ux", "--replace", "push", "--name", "MG.ux", src])
    check_equal(code, 0, f"push on a terminal ({drawn[-300:]!r})")
    check(re.search(r"push MG\.ux \[[#.]+\] +\d+\.\d% [\d.]+ (B|KiB|MiB) / 48\.0 MiB", drawn) is not None,
          f"no progress bar of the push: {drawn[-400:]!r}")
    check(re.search(r"[\d.]+ MB/s +ETA \d+:\d\d", drawn) is not None, f"no rate and ETA in the bar: {drawn[-400:]!r}")
    out = c.path("pulled")
    with open(src, "rb") as f, open(out, "wb") as o:
        o.write(f.read(16 * MiB))  # a pull stopped after 16 MiB
    code, drawn = on_terminal(c, ["--store", "ux", "--no-local", "pull", "--resume", "MG.ux", out])
    check_equal(code, 0, f"resumed pull on a terminal ({drawn[-300:]!r})")
    check(" / 48.0 MiB" in drawn and " / 32.0 MiB" not in drawn,
          f"the resumed pull's bar does not count the whole Blob: {drawn[-400:]!r}")
    check_equal(harness.checksum_file(out), digest, "the resumed pull's bytes")


if __name__ == "__main__":
    harness.main(test)
