#!/usr/bin/env python3
"""No peer without credentials locks blob-dicomd out (docs/SECURITY.md,
"Lock-out"). Hostile peers are raw sockets from other loopback addresses
(127.0.0.2 and up); the legitimate one is DCMTK's echoscu/storescu from
127.0.0.1, and what it sees is asserted: its C-ECHO succeeds, within a bound
far below the timeouts involved.

- A connection that sends only the 6-byte header of an A-ASSOCIATE-RQ and
  two that send nothing, held open at --timeout 30: each echo answers
  within 3 s (on a gateway that reads requests on its accepting thread
  each waits for the held connections).
- Four associations from one address trickling a P-DATA PDU at
  --max-associations 5: two are rejected (transient, local limit exceeded:
  --max-associations-per-peer defaults to half), the echo answers.
- At --timeout 3 with every slot taken by tricklers from four addresses:
  the echo is rejected, then each trickler is cut between 3 and 5 s after
  its PDU's first byte, and the echo answers; a command sent a fragment per
  whole PDU, a PDU a second, is cut between 3 and 5 s after its first
  fragment; a silent connection, one
  that sent a header only and an association that sends nothing after its
  acceptance are closed between 3 and 5 s after the connect; the gateway's
  open descriptors are back to what they were.
- A push that timed out while the store was stopped (SIGSTOP), the store
  creating its reservation once continued: the modality's resend is stored
  at once (not 0110 until the store's reservation grace has passed).
- Spool files of a gateway that is gone are removed at start, not those of
  a running gateway nor files of another name."""

import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step, wait_for  # noqa: E402
from harness.dicom import AE, Gateway, associate_rq, data_set, make_objects, read_pdu  # noqa: E402

ECHO_BOUND = 3.0  # seconds: a lock-out bound, not a speed target


def connect(gw, source):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", gw.port))
    return s


def closed_by_peer(s, limit):
    """Seconds until the gateway closes `s` (EOF or reset), reading what it sends; None after `limit`."""
    started = time.monotonic()
    s.settimeout(0.2)
    while time.monotonic() - started < limit:
        try:
            if not s.recv(4096):
                return time.monotonic() - started
        except socket.timeout:
            continue
        except OSError:
            return time.monotonic() - started
    return None


def echo(c, gw, expect_ok=True):
    """echoscu from 127.0.0.1 (ACSE timeout 20 s): (exit code, seconds, stderr)."""
    started = time.monotonic()
    code, _, err = c.run(["echoscu", "-ta", "20", "-aet", "MODALITY", "-aec", AE, "127.0.0.1", str(gw.port)],
                         timeout=60)
    seconds = time.monotonic() - started
    if expect_ok:
        check(code == 0 and seconds < ECHO_BOUND,
              f"C-ECHO from 127.0.0.1: exit {code} after {seconds:.2f} s (expected 0 within {ECHO_BOUND} s): "
              f"{err.strip()[-500:]!r}")
    return code, seconds, err


class Trickler:
    """An association from `source` that sends a P-DATA-TF PDU 2 bytes at a time, every `every` seconds;
    `fragments`: whole P-DATA-TF PDUs instead, each with a 2-byte fragment of a command that never ends."""

    def __init__(self, gw, source, every, fragments=False):
        self.fragments = fragments
        self.s = connect(gw, source)
        self.s.sendall(associate_rq())
        self.answer, _ = read_pdu(self.s)
        self.every = every
        self.first_byte = None
        self.closed_after = None  # seconds from the PDU's first byte until the gateway closed it
        self.thread = None

    def start(self):
        pdu = struct.pack(">BBI", 4, 0, 74) + bytes(74)  # a P-DATA-TF that never completes in time
        # PDV item: length 4, presentation context 1, control 0x01 (command, not the last fragment), two bytes
        fragment = struct.pack(">BBI", 4, 0, 8) + struct.pack(">IBB", 4, 1, 0x01) + b"\x00\x00"
        pieces = [fragment] * 40 if self.fragments else [pdu[i:i + 2] for i in range(0, len(pdu), 2)]

        def run():
            self.first_byte = time.monotonic()
            for piece in pieces:  # bounded: 40 sends
                try:
                    self.s.sendall(piece)
                except OSError:
                    break
                self.s.settimeout(self.every)
                try:
                    if not self.s.recv(4096):
                        break
                except socket.timeout:
                    continue
                except OSError:
                    break
            self.closed_after = time.monotonic() - self.first_byte

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def close(self):
        self.s.close()


def held_connections(c, gw):
    step("item 1: a header-only A-ASSOCIATE-RQ and two silent connections held open at --timeout 30")
    header_only = connect(gw, "127.0.0.2")
    header_only.sendall(bytes([0x01, 0x00, 0x00, 0x00, 0x00, 0x44]))
    silent = [connect(gw, "127.0.0.3"), connect(gw, "127.0.0.4")]
    for attempt in range(3):
        _, seconds, _ = echo(c, gw)
        step(f"C-ECHO {attempt + 1} answered in {seconds:.2f} s with the held connections open")
    for s in [header_only] + silent:
        s.close()
    # The gateway logs each closed connection once its slot is free again.
    wait_for(lambda: all(f"connection from 127.0.0.{i} closed" in gw.log() for i in (2, 3, 4)), 10,
             "the gateway's log lines of the three closed connections")


def per_peer_cap(c, gw):
    step("item 2: four associations from 127.0.0.2 at --max-associations 5 (per peer: 2 by default, half)")
    accepted, rejected = [], []
    for _ in range(4):
        s = connect(gw, "127.0.0.2")
        s.sendall(associate_rq())
        kind, body = read_pdu(s)
        check(kind in (2, 3), f"the gateway answered the A-ASSOCIATE-RQ with PDU type {kind}")
        if kind == 3:
            check_equal(body[1:4], bytes([2, 3, 2]),
                        "A-ASSOCIATE-RJ (result transient, source service provider (presentation), "
                        "reason local limit exceeded)")
            rejected.append(s)
        else:
            accepted.append(s)
    check_equal((len(accepted), len(rejected)), (2, 2), "associations of 127.0.0.2 (accepted, rejected)")
    check("association from 127.0.0.2 rejected (transient, local limit exceeded): 2 associations of 127.0.0.2 "
          "are open already (--max-associations-per-peer 2)" in gw.log(), "no log line for the per-peer refusal")
    for s in accepted:
        s.sendall(bytes([0x04, 0x00]))  # a P-DATA-TF begun
    _, seconds, _ = echo(c, gw)
    step(f"C-ECHO answered in {seconds:.2f} s while 127.0.0.2 holds its 2 slots")
    for s in accepted + rejected:
        s.close()


def descriptors(gw):
    return len(os.listdir(f"/proc/{gw.proc.pid}/fd"))


def pdu_deadline(c, gw, timeout):
    baseline = descriptors(gw)
    step(f"item 2: four tricklers from four addresses take every slot (--timeout {timeout})")
    def accepted_trickler(source):
        # The start's echo may hold its slot a moment longer: a rejected request is tried again, within 3 s.
        deadline = time.monotonic() + 3
        while True:
            t = Trickler(gw, source, 1.0)
            if t.answer != 3 or time.monotonic() > deadline:
                return t
            t.close()
            time.sleep(0.05)
    tricklers = [accepted_trickler(f"127.0.0.{i}") for i in range(2, 6)]
    check_equal([t.answer for t in tricklers], [2] * 4, "answers to the tricklers' requests (A-ASSOCIATE-AC)")
    for t in tricklers:
        t.start()
    code, _, err = echo(c, gw, expect_ok=False)
    check(code != 0 and "Local Limit Exceeded" in err,
          f"the echo while the tricklers hold every slot: exit {code} (expected a rejection): {err.strip()[-500:]!r}")
    for t in tricklers:
        t.thread.join(timeout + 10)
        check(t.closed_after is not None and timeout - 0.2 <= t.closed_after < timeout + 2,
              f"a trickler cut {t.closed_after} s after its PDU's first byte (expected {timeout} to {timeout + 2} s)")
        t.close()
    step("the tricklers were cut after " + ", ".join(f"{t.closed_after:.2f}" for t in tricklers) + " s")
    check(f"a PDU (type 04) not received whole within {timeout} s of its first byte" in gw.log(),
          "no log line for a PDU cut at its deadline")
    # A modality tries again: the slots are free within a bound after the cut.
    cut = time.monotonic()
    wait_for(lambda: echo(c, gw, expect_ok=False)[0] == 0, ECHO_BOUND, "a C-ECHO answered once the tricklers were cut",
             interval=0.1)
    step(f"C-ECHO answered {time.monotonic() - cut:.2f} s after the last trickler was cut")

    step("a command sent one fragment per whole P-DATA-TF PDU, a PDU a second")
    fragments = Trickler(gw, "127.0.0.6", 1.0, fragments=True)
    check_equal(fragments.answer, 2, "the answer to the request (A-ASSOCIATE-AC)")
    fragments.start()
    fragments.thread.join(timeout + 10)
    fragments.close()
    check(fragments.closed_after is not None and timeout - 0.2 <= fragments.closed_after < timeout + 2,
          f"the command trickler cut {fragments.closed_after} s after its first fragment "
          f"(expected {timeout} to {timeout + 2} s)")
    # Cut by the gateway's command deadline (logged), or by DCMTK's DIMSE
    # timeout of the same length when its wait for the next PDU ends first.
    step(f"the command trickler was cut after {fragments.closed_after:.2f} s")

    step(f"a silent connection, a header-only one and an idle association are closed {timeout} s after the connect")
    started = time.monotonic()
    silent = connect(gw, "127.0.0.2")
    header_only = connect(gw, "127.0.0.3")
    header_only.sendall(bytes([0x01, 0x00, 0x00, 0x00, 0x00, 0x44]))
    idle = connect(gw, "127.0.0.4")
    idle.sendall(associate_rq())
    check_equal(read_pdu(idle)[0], 2, "the answer to the idle association's request (A-ASSOCIATE-AC)")
    for name, s in (("silent", silent), ("header-only", header_only), ("idle association", idle)):
        closed = closed_by_peer(s, timeout + 5 - (time.monotonic() - started))
        after = time.monotonic() - started
        check(closed is not None and timeout - 0.2 <= after < timeout + 2,
              f"the {name} connection closed after {after:.2f} s (expected {timeout} to {timeout + 2} s)")
        s.close()
    check(f"no A-ASSOCIATE-RQ within {timeout} s of the connection (--timeout)" in gw.log(),
          "no log line for the silent connection")
    try:
        # At most: the baseline may hold the start's echo connection still closing.
        wait_for(lambda: descriptors(gw) <= baseline, 10, f"the gateway's open descriptors back to {baseline}",
                 interval=0.1)
    except harness.TestFailure:
        fds = {f: os.readlink(f"/proc/{gw.proc.pid}/fd/{f}") for f in os.listdir(f"/proc/{gw.proc.pid}/fd")}
        raise harness.TestFailure(f"the gateway's open descriptors: {len(fds)}, {baseline} before: {fds}; "
                                  f"{subprocess.run(['ss', '-tanp'], capture_output=True, text=True).stdout[-3000:]}")


def store_stalled(c, gw, ws1):
    step("item 5: a push that timed out while the store was stopped (SIGSTOP), then the modality's resend")
    objects = make_objects(c, "study", c.path("stall"), "2", "PAT5", "20261128")
    gw.storescu(objects[0]["path"])  # the gateway's Session knows the store
    target = objects[1]
    name = target["sop"] + ".0"  # the gateway's --name-pattern
    os.kill(ws1.pid, signal.SIGSTOP)
    try:
        err = gw.storescu(target["path"], refused=True)
    finally:
        os.kill(ws1.pid, signal.SIGCONT)
    check(f"instance {target['sop']}" in gw.log() and "0110" in gw.log(),
          f"no 0110 line for the push to the stopped store: {err[-500:]!r}")
    c.blob("stores").ok()  # the store, continued, has handled what the gateway sent before giving up
    started = time.monotonic()
    gw.storescu(target["path"])
    step(f"the resend stored in {time.monotonic() - started:.2f} s")
    size = c.blob("stat", name, store="ws1").ok()["size"]

    step("item 5: a reservation of the gateway's own (its address) that nothing fills: the resend resumes it")
    c.blob("rm", name, store="ws1").ok()
    # idl_probe calls from 127.0.0.1 as the gateway does: to the store, the same client.
    code, out, err = c.run([harness.program("tests/tools/idl_probe"), "--naming", c.naming, "--store", "ws1",
                            "--flood", "1", "--size", str(size), "--prefix", target["sop"]], timeout=60)
    check(code == 0 and '"reserved": 1' in out.replace('"reserved":1', '"reserved": 1'),
          f"idl_probe left no reservation of {name}: {out!r} {err!r}")
    started = time.monotonic()
    gw.storescu(target["path"])
    seconds = time.monotonic() - started
    check(seconds < ECHO_BOUND, f"the resend took {seconds:.2f} s")
    check(f"push \"{name}\" resumes reservation" in open(ws1.log_paths[0]).read(),
          "the store's log does not show the reservation resumed")
    check_equal(c.blob("stat", name, store="ws1").ok()["size"], size, f"size of Blob {name}")
    pulled = c.blob("pull", name, "-", store="ws1", binary=True, json_out=False)
    pulled.ok()
    with open(target["path"], "rb") as f:
        check(data_set(pulled.stdout) == data_set(f.read()), f"the data set of Blob {name} differs from the one sent")
    step(f"the resend resumed the abandoned reservation and was stored in {seconds:.2f} s")
    check_equal(next(s for s in c.blob("stores").ok()["stores"] if s["name"] == "ws1")["reserved"], 0,
                "bytes reserved in ws1 after the resends")


def stale_spool(c, running_gateway):
    step("item 6: stale spool files removed at start, only those of gateways that are gone")
    gone = subprocess.Popen(["true"])
    gone.wait(timeout=30)
    names = {
        f"blob-dicomd-{gone.pid}-7.dcm": False,           # its process is gone
        f"blob-dicomd-{os.getpid()}-8.dcm": False,        # a process that is not a gateway (its number reused)
        f"blob-dicomd-{running_gateway.proc.pid}-9.dcm": True,  # a running gateway's
        "blob-dicomd-notes.dcm": True,                    # not of the spool's form
        f"other-{gone.pid}-1.dcm": True,
    }
    for name in names:
        with open(os.path.join(c.root, name), "wb") as f:
            f.write(b"DICM" * 64)
    gw = Gateway(c, "ws1", "gateway-spool", index_url="")
    for name, kept in names.items():
        check_equal(os.path.exists(os.path.join(c.root, name)), kept, f"{name} kept")
    check(f"stale spool file {os.path.join(c.root, f'blob-dicomd-{gone.pid}-7.dcm')} removed" in gw.log(),
          "no log line for the removed spool file")
    for name, kept in names.items():
        if kept:
            os.remove(os.path.join(c.root, name))
    gw.proc.stop()


def option_refusals(c):
    step("--max-associations-per-peer out of range: exit 1 naming the value and what is allowed")
    base = [harness.program("gateway/blob-dicomd"), "--aetitle", "GW", "--port", "0", "--store", "ws1",
            "--naming", c.naming, "--spool", c.root]
    for extra, message in ((["--max-associations", "4", "--max-associations-per-peer", "5"],
                            "--max-associations-per-peer 5: expected 1 to 4 (--max-associations)"),
                           (["--max-associations-per-peer", "0"],
                            "--max-associations-per-peer 0: expected 1 to 8 (--max-associations)")):
        code, _, err = c.run(base + extra, timeout=60)
        check(code == 1 and message in err,
              f"{' '.join(extra)}: exit {code} ({err.strip()!r}), expected 1 with {message!r}")


def test(c):
    c.env["TCP_NODELAY"] = "1"
    option_refusals(c)
    ws1 = c.start_daemon("ws1", "file")
    patient = Gateway(c, "ws1", "gateway", index_url="", extra=("--max-associations", "5", "--timeout", "30"))
    held_connections(c, patient)
    per_peer_cap(c, patient)

    timeout = 3
    strict = Gateway(c, "ws1", "gateway-strict", index_url="",
                     extra=("--max-associations", "4", "--max-associations-per-peer", "1", "--timeout", str(timeout)))
    pdu_deadline(c, strict, timeout)
    resend = Gateway(c, "ws1", "gateway-resend", index_url="",
                     extra=("--timeout", str(timeout), "--name-pattern", "{SOPInstanceUID}.0"))
    store_stalled(c, resend, ws1)
    stale_spool(c, patient)


if __name__ == "__main__":
    harness.main(test)
