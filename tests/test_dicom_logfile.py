#!/usr/bin/env python3
"""blob-dicomd --log-file: the gateway's lines appended to the file instead
of standard error, the file opened again on SIGHUP (logrotate moves it away,
the next line lands in a new file at the same path) and a file that cannot
be opened refused at start with its name and reason (exit 40). Real
omniNames, blobstored, blob-dicomd and DCMTK's storescu on 127.0.0.1."""

import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, program, step, wait_for  # noqa: E402
from harness.dicom import AE, Gateway, make_objects  # noqa: E402


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def test(c):
    c.env["TCP_NODELAY"] = "1"
    c.start_daemon("ws1", "file")

    step("a --log-file that cannot be opened: exit 40 naming the file and the reason")
    missing = c.path("no-such-dir/gw.log")
    base = [program("gateway/blob-dicomd"), "--aetitle", AE, "--port", "11112", "--store", "ws1",
            "--naming", c.naming, "--spool", c.root]
    code, out, err = c.run(base + ["--log-file", missing], timeout=60)
    check_equal(code, 40, f"exit code with --log-file {missing} ({err.strip()!r})")
    check(missing in err and "No such file or directory" in err, f"the refusal does not name the file and why: {err!r}")
    code, out, err = c.run(base + ["--log-file", ""], timeout=60)
    check_equal(code, 1, f"exit code with an empty --log-file ({err.strip()!r})")
    check("--log-file: expected a file name" in err, f"the refusal of an empty --log-file: {err!r}")

    log = c.path("gateway.log")
    gw = Gateway(c, "ws1", "gateway", extra=("--log-file", log), index_url="")
    first, second = make_objects(c, "study", c.path("study"), "2", "PAT1", "20261115")

    step("an instance stored: its line is in the log file, not on standard error")
    gw.storescu(first["path"])
    wait_for(lambda: f"{first['sop']}.dcm in store \"ws1\"" in read(log), 30, "the stored instance's line in the log file")
    check(" blob-dicomd info: " not in gw.log(), "blob-dicomd's own lines went to standard error too:\n" + gw.log()[-2000:])

    step("the log rotated away: SIGHUP opens it again at its path, new lines land there")
    os.rename(log, log + ".1")
    os.kill(gw.proc.pid, signal.SIGHUP)
    wait_for(lambda: os.path.exists(log) and f"SIGHUP: log file {log} opened again" in read(log), 30,
             "the reopened log file's first line")
    before = read(log + ".1")
    gw.storescu(second["path"])
    wait_for(lambda: f"{second['sop']}.dcm in store \"ws1\"" in read(log), 30, "the next instance's line in the new file")
    check_equal(read(log + ".1"), before, "the rotated file after the reopen (nothing more written to it)")
    check(gw.proc.running(), "blob-dicomd died on SIGHUP")
    gw.echo()


if __name__ == "__main__":
    harness.main(test)
