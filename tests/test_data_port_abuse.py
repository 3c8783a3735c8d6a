#!/usr/bin/env python3
"""Misuse of the data port with real tickets (tests/tools/ticket_probe): a
ticket used twice, an expired ticket, a pull ticket presented as a push, a
ticket presented for a wider range, a random ticket, bytes that are not
a Request, a push whose checksum trailer is wrong (digest_mismatch,
nothing kept), and a compressed push whose second frame is not zstd
(protocol_error "corrupt compressed frame after 100000 of 300000 bytes",
nothing kept, no reservation left). Each is refused with the documented status and reason, the
connection is closed, the daemon logs the ticket's tag but never the whole
ticket, and it keeps serving normal pushes and pulls afterwards."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, step  # noqa: E402

BLOB = "CT.probe"
SIZE = 100000

# mode -> (status, any of these in the message (lower case))
EXPECTED = {
    "reuse": (EXIT["refused"], ("already used", "unknown ticket")),
    "expire": (EXIT["refused"], ("expired",)),
    "wrong-direction": (EXIT["refused"], ("direction", "push")),
    "wrong-range": (EXIT["refused"], ("range", "[0, 10)")),
    "random": (EXIT["refused"], ("unknown ticket",)),
    "garbage": (EXIT["protocol_error"], ("magic", "request")),
    "bad-digest": (EXIT["digest_mismatch"], ("have checksum", "sender announced")),
    "corrupt-frame": (EXIT["protocol_error"], ("corrupt compressed frame after 100000 of 300000 bytes: a zstd frame "
                                               "does not decompress",)),
}
# The modes that push a new Blob, and its name: nothing of it may stay.
PUSHED = {"bad-digest": "CT.bad-digest", "corrupt-frame": "CT.corrupt-frame"}


def probe(c, mode):
    argv = [harness.program("tests/tools/ticket_probe"), "--naming", c.naming, "--store", "central",
            "--blob", PUSHED.get(mode, BLOB), "--mode", mode]
    code, out, err = c.run(argv, timeout=90)
    result = harness.BlobResult(argv, code, out, err).json
    check(code == 0 and result is not None,
          f"`{' '.join(argv)}` exited {code}\n  stdout: {out.strip()!r}\n  stderr: {err.strip()!r}")
    step(f"{mode}: {result}")
    return result


def still_serving(c, round_no, source, digest):
    name = f"CT.after.{round_no}"
    pushed = c.blob("push", "--name", name, source, store="central").ok()
    check_equal(pushed.get("checksum"), digest, f"push {name} after the misuse")
    out = c.path(f"{name}.pulled")
    c.blob("--no-local", "pull", name, out, store="central").ok()
    check_equal(harness.checksum_file(out), digest, f"pull {name} after the misuse")
    os.unlink(out)


def test(c):
    daemon = c.start_daemon("central", "file", tier="central", extra=["--ticket-lifetime", "1"])
    source = c.path("probe-source")
    digest = harness.write_random(source, SIZE)
    c.blob("push", "--name", BLOB, source, store="central").ok()

    for round_no, (mode, (status, reasons)) in enumerate(EXPECTED.items()):
        result = probe(c, mode)
        if mode == "reuse":
            first = result.get("first") or {}
            check_equal(first.get("status"), 0, "reuse: status of the first use of the ticket")
            check_equal(first.get("length"), SIZE, "reuse: length of the first use")
            check_equal((first.get("checksum"), first.get("received_checksum")), (digest, digest),
                        "reuse: checksum announced and checksum of the bytes received on the first use")
        if mode == "expire":
            check_equal(result.get("lifetime_seconds"), 1, "lifetime of a ticket with --ticket-lifetime 1")
        check_equal(result.get("status"), status,
                    f"{mode}: Response status (message {result.get('message')!r})")
        message = (result.get("message") or "").lower()
        check(any(r in message for r in reasons),
              f"{mode}: refusal message {result.get('message')!r} mentions none of {reasons}")
        if status in (EXIT["refused"], EXIT["protocol_error"]):
            check(result.get("connection_closed") is True, f"{mode}: the daemon did not close the connection")
        if mode in PUSHED:
            c.blob("stat", PUSHED[mode], store="central").error(
                EXIT["no_such_blob"], f'blob "{PUSHED[mode]}" not found')
            tmp = os.path.join(daemon.store_dir, "tmp")
            harness.wait_for(lambda: not os.listdir(tmp), 10, f"the aborted reservation to leave {tmp}")
        ticket = result.get("ticket") or ""
        if ticket and status == EXIT["refused"]:
            def logged(tag=ticket[:8]):
                with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
                    return tag in f.read()
            harness.wait_for(logged, 10, f"the daemon's log of the {mode} refusal with ticket tag {ticket[:8]}")
        if ticket:
            with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
                check(ticket not in f.read(), f"{mode}: the daemon's log contains the whole ticket {ticket}")
        check(daemon.running(), f"blobstored exited ({daemon.popen.returncode}) after the {mode} misuse")
        still_serving(c, round_no, source, digest)


if __name__ == "__main__":
    harness.main(test)
