#!/usr/bin/env python3
"""libblobclient never writes to the application's standard output: a
program using it (tests/tools/library_logging) pushes and pulls (succeeding)
and fails (a missing Blob, a completion that throws) with its stdout
captured, and stdout holds only the program's own JSON line. By default the
library logs warnings and errors to stderr; an application that hands it
its own spdlog logger (client::set_logger) gets every line there, at the
level it chose, and nothing on stderr. The blob CLI keeps its own logging
(-v shows the library's transfer lines on stderr)."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, program, step  # noqa: E402


def run_tool(c, *extra):
    argv = [program("tests/tools/library_logging"), "--naming", c.naming, "--store", "ws", *extra]
    code, out, err = c.run(argv, timeout=120)
    step(f"library_logging {' '.join(extra)}: exit {code}\n  stdout: {out!r}\n  stderr: {err[-1500:]!r}")
    check_equal(code, 0, f"exit status of library_logging {' '.join(extra)} (stderr: {err[-2000:]!r})")
    lines = out.splitlines()
    check_equal(len(lines), 1, f"lines on the stdout of library_logging {' '.join(extra)} (only its own "
                f"JSON line may be there; the library wrote the rest): {out!r}")
    return json.loads(lines[0]), err


def test(c):
    c.start_daemon("ws", "file")

    step("default: nothing from the library on stdout; warnings and errors on stderr")
    result, err = run_tool(c)
    check_equal((result.get("pushed"), result.get("pulled"), result.get("missing"), result.get("thrown")),
                (True, True, harness.EXIT["no_such_blob"], True), "what library_logging did")
    check("completion callback threw: an application bug in a completion" in err,
          f"the library's error line (a completion threw) is not on stderr: {err!r}")
    check('pushed "LOG.ok"' not in err, f"an info line on stderr at the default warning level: {err!r}")

    step("the application's own logger (client::set_logger) gets the library's lines, at its level")
    result, err = run_tool(c, "--own-logger")
    captured = result.get("captured", [])
    for wanted in ('info: pushed "LOG.ok" to store "ws"', "debug: data connection to",
                   "error: completion callback threw: an application bug in a completion"):
        check(any(line.startswith(wanted) for line in captured),
              f"no line starting with {wanted!r} reached the application's logger: {captured}")
    check("completion callback threw" not in err, f"with its own logger set, the library still wrote to stderr: {err!r}")

    step("the blob CLI keeps its own logging: -v shows the library's transfer line on stderr")
    source = c.path("one")
    harness.write_random(source, 4096)
    r = c.blob("-v", "push", "--name", "CT.cli", source, store="ws", json_out=False)
    r.ok()
    check_equal(r.stdout, "", "stdout of blob -v push (without --json)")
    check('pushed "CT.cli" to store "ws"' in r.stderr and " via " in r.stderr,
          f"the library's info line of the push is not on blob -v's stderr: {r.stderr!r}")


if __name__ == "__main__":
    harness.main(test)
