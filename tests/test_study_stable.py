#!/usr/bin/env python3
"""blob-dicomd --stable-after (docs/DICOM.md, "study-stable"): values outside
0.001 to 86400 seconds, or not a duration, refused at start (exit 1) naming
the option, the value and the range; a fractional value accepted (the
gateway answers C-ECHO). Real omniNames, blobstored, blob-dicomd and DCMTK's
echoscu on 127.0.0.1."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, free_port, program, step  # noqa: E402
from harness.dicom import AE, Gateway  # noqa: E402


def test(c):
    c.start_daemon("ws1", "file")
    base = [program("clients/dicom/blob-dicomd"), "--aetitle", AE, "--port", str(free_port()), "--store", "ws1",
            "--naming", c.naming, "--spool", c.root]

    step("--stable-after out of range or not a duration: exit 1 with the value and what is allowed")
    for value, expected in (("0", "out of range (allowed: 0.001 to 86400 seconds)"),
                            ("86401", "out of range (allowed: 0.001 to 86400 seconds)"),
                            ("0.0001", "out of range (allowed: 0.001 to 86400 seconds)"),
                            ("-1", "is not a duration"),
                            ("soon", "is not a duration")):
        code, _, err = c.run(base + ["--stable-after", value], timeout=60)
        check_equal(code, 1, f"exit code with --stable-after {value} ({err.strip()!r})")
        check(f'--stable-after: "{value}"' in err and expected in err,
              f"the refusal of --stable-after {value} does not name the value and the range: {err!r}")

    step("--stable-after 0.5: accepted, the gateway serves")
    gw = Gateway(c, "ws1", "gateway", extra=("--stable-after", "0.5"), index_url="")
    gw.echo()
    check(gw.proc.running(), "blob-dicomd stopped")


if __name__ == "__main__":
    harness.main(test)
