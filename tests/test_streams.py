#!/usr/bin/env python3
"""`blob pull --streams N` and `blob push --streams N`: one Blob over N data connections, each a
contiguous range, its checksum combined from the parts and checked once.

1. Bit-exact: Blobs of 0 bytes, under 2 MiB (one stream), and sizes not
   divisible by the stream count, pulled whole and as a range over TCP
   (--no-local); --json reports how many streams ran (fewer when the range
   is short: each carries at least 1 MiB); standard output takes one stream.
2. A pull racing `push --replace` between versions of different sizes, for a
   bounded time: every pull exits 0 with the bytes of ONE version, or 27
   (blob_changed) leaving no file.
3. One stream's connection cut mid-transfer: the store is reached through a
   TCP relay (blobstored --advertise 127.0.0.2, the relay on 127.0.0.2
   forwarding to 127.0.0.1) that closes the first data connection after
   1 MiB of payload; the pull still completes bit-exact, the broken stream
   having continued its own range (logged with -v).
   A relay that cuts every data connection fails the pull (50) after the
   bounded retries and leaves no file.
4. Usage errors: --streams 0, 65, a non-number, stat --streams and pull
   --study --streams: exit 1 naming the value and what is allowed.
   --streams auto, the default: to the loopback data endpoint a push and a
   pull of 10 MiB take one stream and say why with -v; --streams 4 there
   still runs 4 and warns that they are slower than one.
5. `blob push --streams N` into a memory and a file store: bit-exact, the
   committed CRC32C is the source's, --json reports the streams (one under
   2 MiB, for SHA-256 and standard input), --replace works and an existing
   name is refused. Through the relay, a push whose first data connection
   is cut after 1 MiB continues that part and commits; so does a push whose
   first data connection reaches the store only after its stream asked for
   the part again (the store refuses the overtaken ticket, invalid_range,
   and the stream asks once more); with every connection cut it fails (50)
   and nothing is visible.
"""

import errno
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, MiB, check, check_equal, step  # noqa: E402

RACE_SECONDS = float(os.environ.get("BS_RACE_SECONDS", "5"))


def ok(r):
    r.ok()
    return r


def same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def exact(c, store):
    for size, streams, expected in ((0, 4, 1), (MiB + 5, 4, 1), (4 * MiB + 3, 4, 4), (10 * MiB + 7, 4, 4),
                                    (3 * MiB + 1, 4, 3), (9 * MiB + 2, 3, 3)):
        src = c.path(f"src-{size}")
        harness.write_random(src, size)
        name = f"S.{size}"
        c.blob("push", "--name", name, src, store=store).ok()
        out = c.path(f"out-{size}-{streams}")
        r = ok(c.blob("--no-local", "pull", "--streams", streams, name, out, store=store))
        check(same_bytes(src, out), f"{size} bytes over --streams {streams}: the pulled file differs")
        check_equal(r.json.get("streams"), expected, f"{size} bytes, --streams {streams}: streams used")
        check_equal(r.json.get("checksum"), harness.checksum_file(src), f"{size} bytes: reported checksum")
        step(f"{size} bytes, --streams {streams}: bit-exact over {expected} stream(s)")
    # A range not aligned to anything, over 3 streams.
    src = c.path(f"src-{10 * MiB + 7}")
    out = c.path("out-range")
    r = ok(c.blob("--no-local", "pull", "--streams", "3", "--offset", "12345", "--length", str(5 * MiB + 1),
               "S.%d" % (10 * MiB + 7), out, store=store))
    check(open(out, "rb").read() == harness.read_range(src, 12345, 5 * MiB + 1), "range over 3 streams differs")
    check_equal(r.json.get("streams"), 3, "range: streams used")
    # Standard output takes the bytes in order: one stream.
    r = c.blob("--no-local", "pull", "--streams", "4", "S.%d" % (4 * MiB + 3), "-", store=store, binary=True)
    check_equal(r.code, 0, "pull --streams 4 to standard output: exit code")
    check(r.stdout == open(c.path(f"src-{4 * MiB + 3}"), "rb").read(), "pull --streams 4 to stdout: bytes differ")
    step("a range over 3 streams and standard output over one: bit-exact")


def race(c, store):
    versions = []
    for k, size in enumerate((6 * MiB + 1, 5 * MiB + 3)):
        path = c.path(f"version-{k}")
        harness.write_random(path, size)
        versions.append(path)
    contents = [open(p, "rb").read() for p in versions]
    c.blob("push", "--replace", "--name", "S.race", versions[0], store=store).ok()
    stop_at = time.monotonic() + RACE_SECONDS
    errors = []
    counts = {"ok": 0, "changed": 0, "replaced": 0}

    def replacer():
        i = 1
        while time.monotonic() < stop_at and not errors:
            r = c.blob("push", "--replace", "--name", "S.race", versions[i % 2], store=store, timeout=120)
            if r.code != 0:
                errors.append("replace failed: " + r.describe())
                return
            i += 1
            counts["replaced"] += 1

    def puller(k):
        n = 0
        while time.monotonic() < stop_at and not errors:
            n += 1
            out = c.path(f"race-{k}-{n}")
            r = c.blob("--no-local", "pull", "--streams", "4", "S.race", out, store=store, timeout=120)
            if r.code == 0:
                got = open(out, "rb").read()
                if got not in contents:
                    errors.append(f"pull exited 0 with bytes of no single version ({len(got)} bytes): " +
                                  r.describe())
                counts["ok"] += 1
                os.unlink(out)
            elif r.code == EXIT["blob_changed"]:
                if os.path.exists(out):
                    errors.append("a pull refused as changed left its file: " + r.describe())
                counts["changed"] += 1
            else:
                errors.append("pull failed otherwise: " + r.describe())

    threads = [threading.Thread(target=replacer)] + [threading.Thread(target=puller, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=RACE_SECONDS + 300)
    check(not any(t.is_alive() for t in threads), "a racing client did not finish")
    check(not errors, f"{len(errors)} wrong outcome(s); first: {errors[0] if errors else ''}")
    check(counts["ok"] > 0 and counts["replaced"] > 1, f"the race did not run: {counts}")
    step(f"race: {counts['ok']} pulls of one version, {counts['changed']} refused as changed, "
         f"{counts['replaced']} replacements; 0 mixed")


class Relay:
    """Forwards 127.0.0.2:PORT to 127.0.0.1:PORT for each port; on the data
    port, closes a connection after `cut_after` bytes store -> client (with
    `upstream`: client -> store) when `cut(index)` says so (index: 0 for the
    first data connection).

    `late(index)`: that data connection reaches the store late. The relay
    takes its first `cut_after` bytes from the client and closes it without
    forwarding anything; it delivers them (then end of stream) only when the
    client sends a Request for the same offset on another data connection
    (a new one, or one the store has answered since its last bytes from the
    client), and forwards that Request once the store has closed the late
    one."""

    def __init__(self, ports, data_port, cut_after):
        self.data_port = data_port
        self.cut_after = cut_after
        self.upstream = False  # cut client -> store (a push) instead of store -> client
        self.cut = lambda index: False
        self.late = lambda index: False
        self.held = None  # the late connection's bytes, not delivered yet
        self.delivered = threading.Event()
        self.data_connections = 0
        self.cuts = 0
        self.lock = threading.Lock()
        self.stopping = False
        self.listeners = []
        try:
            for port in ports:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                self.listeners.append(s)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.2", port))  # OSError when another socket holds 127.0.0.2:PORT
                s.listen(64)
                s.settimeout(0.2)
        except OSError:
            for s in self.listeners:
                s.close()
            raise
        for s, port in zip(self.listeners, ports):
            threading.Thread(target=self.accept, args=(s, port), daemon=True).start()

    def accept(self, listener, port):
        while not self.stopping:
            try:
                client, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            cut = late = False
            if port == self.data_port:
                with self.lock:
                    cut = self.cut(self.data_connections)
                    late = self.late(self.data_connections)
                    self.data_connections += 1
            if late:
                threading.Thread(target=self.hold, args=(client, port), daemon=True).start()
                continue
            server = socket.create_connection(("127.0.0.1", port), timeout=10)
            up, down = (self.cut_after, None) if self.upstream else (None, self.cut_after)
            # [whether the store has sent something since the client last did]
            answered = [True] if port == self.data_port else None
            threading.Thread(target=self.pump, args=(client, server, up if cut else None, answered),
                             daemon=True).start()
            threading.Thread(target=self.pump, args=(server, client, down if cut else None, None, answered),
                             daemon=True).start()

    def hold(self, client, port):
        held = b""
        try:
            while len(held) < self.cut_after:
                data = client.recv(min(65536, self.cut_after - len(held)))
                if not data:
                    break
                held += data
        except OSError:
            pass
        with self.lock:
            self.cuts += 1
            self.held = (held, port)
        client.shutdown(socket.SHUT_RDWR)
        client.close()

    def deliver_held(self):
        """Sends the late connection's bytes to the store and waits (bounded)
        until the store has closed that connection: it has ended the late
        transfer by then."""
        with self.lock:
            held, self.held = self.held, None
        if held is None:
            return
        data, port = held
        late = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            late.sendall(data)
            late.shutdown(socket.SHUT_WR)
            while late.recv(65536):
                pass
        except OSError:
            pass
        late.close()
        self.delivered.set()

    def pump(self, src, dst, limit, begins=None, answers=None):
        """`begins`: src is a data connection's client, whose bytes after
        the store's (begins[0]) begin a Request; `answers`: src is its
        store, and sets that flag."""
        moved = 0
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if limit is not None and moved + len(data) > limit:
                    with self.lock:
                        self.cuts += 1
                    break
                if answers is not None:
                    answers[0] = True
                if begins is not None:
                    # A Request (40 bytes: ..., offset u64 at 24, length) for
                    # the late connection's offset: its part asked again.
                    held = self.held
                    if begins[0] and held is not None and len(data) >= 40 and data[24:32] == held[0][24:32]:
                        self.deliver_held()
                    begins[0] = False
                dst.sendall(data)
                moved += len(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.stopping = True
        for s in self.listeners:
            s.close()


def relayed_store(c, attempts=5):
    """A store on ports the kernel chooses on 127.0.0.1, advertised at
    127.0.0.2, where a Relay takes the same numbers. Another socket may hold
    one of those numbers on 127.0.0.2 (the kernel only chose them free on
    127.0.0.1): that store is stopped and another started, `attempts` times
    at most."""
    for attempt in range(1, attempts + 1):
        argv = [harness.program("blobstore/blobstored"), "--name", "relayed", "--store", "memory:128M", "--naming",
                c.naming, "--control-address", "127.0.0.1:0", "--data-address", "127.0.0.1:0",
                "--advertise", "127.0.0.2"]
        process = harness.start_service("blobstored relayed", argv, "blobstored ready", 60, env=c.env,
                                        err_path=c.path(f"relayed-{attempt}.err"), track=c.processes)
        control, data = (int(process.ready[k].rsplit(":", 1)[1]) for k in ("control", "data"))
        try:
            return Relay((control, data), data, cut_after=MiB)
        except OSError as e:
            if e.errno != errno.EADDRINUSE or attempt == attempts:
                raise
            step(f"relay: 127.0.0.2:{control} or :{data} is taken ({e.strerror}); another store")
            process.stop()


def cut_stream(c):
    relay = relayed_store(c)
    try:
        src = c.path("cut-src")
        harness.write_random(src, 16 * MiB + 9)
        c.blob("push", "--name", "S.cut", src, store="relayed").ok()
        before = relay.data_connections
        relay.cut = lambda index: index == before  # the pull's first data connection
        out = c.path("cut-out")
        r = ok(c.blob("--no-local", "-v", "pull", "--streams", "4", "S.cut", out, store="relayed"))
        check(same_bytes(src, out), "the pull whose stream was cut is not bit-exact")
        check_equal(relay.cuts, 1, "connections the relay cut")
        check("stream 1 broke after" in r.stderr and "continuing its range" in r.stderr,
              f"the pull does not log the first stream's continuation: {r.stderr!r}")
        step(f"one of 4 streams cut after 1 MiB: continued, bit-exact ({relay.data_connections - before} data "
             f"connections: the continuation may reuse a pooled one)")

        relay.cut = lambda index: True
        out = c.path("cut-all")
        r = c.blob("--no-local", "pull", "--streams", "4", "S.cut", out, store="relayed")
        check_equal(r.code, EXIT["transfer_failed"], "every connection cut: exit code")
        check(not os.path.exists(out), "a failed pull --streams left its file")
        check(not any(f.startswith(".cut-all.pull-") for f in os.listdir(c.path())),
              "a failed pull --streams left its temporary file")
        step(f"every connection cut: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.describe()}")
        step("push --streams 4 through the relay, its first data connection cut after 1 MiB: the stream "
             "continues its part where the store stopped")
        relay.upstream = True
        before, cuts = relay.data_connections, relay.cuts
        relay.cut = lambda index: index == before
        r = ok(c.blob("--no-local", "-v", "push", "--streams", "4", "--name", "S.cutpush", src, store="relayed"))
        check_equal(r.json.get("streams"), 4, "streams of the cut push")
        check_equal(relay.cuts - cuts, 1, "connections the relay cut during the push")
        check("stream 1 broke after" in r.stderr and "continuing its part" in r.stderr,
              f"the push does not log the first stream's continuation: {r.stderr!r}")
        check(blob_bytes(c, "S.cutpush", "relayed") == open(src, "rb").read(), "the cut push is not bit-exact")
        # The last continuation: under load the store may not have landed
        # the bytes before the cut when the stream first asks (it holds 0),
        # and then refuses that ticket as overtaken once they land; the
        # stream asks again and continues past them.
        held = re.findall(r"stream 1 continues at byte (\d+): the store holds (\d+) of its", r.stderr)
        check(held and int(held[-1][1]) > 0, f"the cut stream did not continue past what the store held: "
                                             f"{r.stderr!r}")
        step(f"the cut stream continued at byte {held[-1][0]}: the store held {held[-1][1]} of its bytes")

        step("push --streams 4 whose first data connection reaches the store only after the stream asked for "
             "its part again: the store refuses the overtaken ticket and the stream asks once more")
        relay.cut = lambda index: False
        before, cuts = relay.data_connections, relay.cuts
        relay.late = lambda index: index == before
        r = ok(c.blob("--no-local", "-v", "push", "--streams", "4", "--name", "S.latepush", src, store="relayed"))
        relay.late = lambda index: False
        check(relay.delivered.is_set(), "the relay never delivered the late connection")
        check_equal(relay.cuts - cuts, 1, "connections the relay held back during the push")
        check("were received meanwhile; ask for the part again" in r.stderr,
              f"the stream's second ticket was not overtaken by the late connection: {r.stderr!r}")
        held = re.findall(r"stream 1 continues at byte (\d+): the store holds (\d+) of its", r.stderr)
        check(held and int(held[-1][1]) > 0, f"the stream did not continue past the late connection's bytes: "
                                             f"{r.stderr!r}")
        check(blob_bytes(c, "S.latepush", "relayed") == open(src, "rb").read(), "the late push is not bit-exact")
        step(f"the overtaken ticket was refused; the stream continued at byte {held[-1][0]}, past the "
             f"{held[-1][1]} bytes the late connection landed; bit-exact")

        relay.cut = lambda index: True
        r = c.blob("--no-local", "push", "--streams", "4", "--name", "S.cutall", src, store="relayed")
        check_equal(r.code, EXIT["transfer_failed"], f"push, every connection cut: exit code ({r.stderr.strip()!r})")
        check_equal(c.blob("stat", "S.cutall", store="relayed").code, EXIT["no_such_blob"],
                    "a failed push --streams left its Blob")
        step(f"push, every connection cut: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}")
    finally:
        relay.close()


def blob_bytes(c, name, store):
    r = c.blob("--no-local", "pull", name, "-", store=store, binary=True)
    check_equal(r.code, 0, f"pull {name} from {store}: exit code")
    return r.stdout


def push_exact(c, store):
    """push --streams: bit-exact, the store's CRC32C, streams used, fallbacks to one stream."""
    for size, expected in ((0, 1), (MiB + 5, 1), (4 * MiB + 3, 4), (10 * MiB + 7, 4)):
        src = c.path(f"src-{size}")
        if not os.path.exists(src):
            harness.write_random(src, size)
        name = f"P.{store}.{size}"
        r = ok(c.blob("--no-local", "push", "--streams", "4", "--name", name, src, store=store))
        check_equal(r.json.get("streams"), expected, f"push of {size} bytes, --streams 4: streams used")
        check_equal(c.blob("stat", name, store=store).ok()["checksum"], harness.checksum_file(src, "crc32c"),
                    f"the checksum {store} committed for {name}")
        check(blob_bytes(c, name, store) == open(src, "rb").read(), f"{name} at {store} differs from its source")
        step(f"push of {size} bytes into {store} over {expected} stream(s): bit-exact, checksum as the source's")
    src = c.path(f"src-{10 * MiB + 7}")
    # --replace over 3 streams; then a SHA-256 push and standard input take one stream.
    other = c.path("src-other")
    harness.write_random(other, 7 * MiB + 1)
    name = f"P.{store}.{10 * MiB + 7}"
    r = ok(c.blob("--no-local", "push", "--streams", "3", "--replace", "--name", name, other, store=store))
    check_equal(r.json.get("streams"), 3, "push --replace --streams 3: streams used")
    check(blob_bytes(c, name, store) == open(other, "rb").read(), "the replaced Blob differs from its new source")
    r = c.blob("--no-local", "push", "--streams", "4", "--name", name, src, store=store)
    r.error(EXIT["already_exists"], "already exists")
    r = ok(c.blob("--no-local", "push", "--streams", "4", "--checksum", "sha256", "--name", f"P.{store}.sha", src,
                  store=store))
    check_equal(r.json.get("streams"), 1, "push --checksum sha256 --streams 4: streams used")
    with open(src, "rb") as f:
        r = c.blob("--no-local", "push", "--streams", "4", "--size", str(10 * MiB + 7), "--name", f"P.{store}.stdin",
                   "-", store=store, stdin=f.read())
    check_equal(r.code, 0, f"push --streams 4 from standard input: {r.describe()}")
    check_equal(r.json.get("streams"), 1, "push --streams 4 from standard input: streams used")
    check(blob_bytes(c, f"P.{store}.stdin", store) == open(src, "rb").read(), "the Blob pushed from stdin differs")
    step(f"{store}: --replace over 3 streams; SHA-256 and standard input over one; an existing name refused")


def usage(c):
    for value, expected in (("0", 'is out of range (allowed: 1 to 64)'), ("65", 'is out of range (allowed: 1 to 64)'),
                            ("four", "is not a whole number")):
        r = c.blob("pull", "--streams", value, "S.x", c.path("never"), store="mem")
        r.error(EXIT["usage"], f'--streams: "{value}" {expected}')
    r = c.blob("stat", "--streams", "4", "S.y", store="mem")
    r.error(EXIT["usage"], "--streams applies to push and pull only, not stat")
    r = c.blob("push", "--streams", "65", "--name", "S.y", c.path("src-0"), store="mem")
    r.error(EXIT["usage"], '--streams: "65" is out of range (allowed: 1 to 64)')
    r = c.blob("pull", "--streams", "4", "--study", "1.2.3", "--index", "sqlite:" + c.path("none.db"), c.path("d"))
    r.error(EXIT["usage"], "pull --study/--series pulls its instances in parallel already: no --streams")
    step("--streams 0, 65, four, stat --streams and pull --study --streams: usage errors naming the value")


def auto_streams(c):
    """--streams auto (the default) picks one stream on loopback and says so; 4 asked for there warn."""
    src = c.path("src-auto")
    harness.write_random(src, 10 * MiB + 7)
    said = "streams auto: 1 stream: the data endpoint 127.0.0.1:"
    why = "is on loopback, where the CPUs copying the bytes, not a link, bound the rate (more streams are slower)"
    for how in ([], ["--streams", "auto"]):
        r = ok(c.blob("-v", "--no-local", "push", *how, "--replace", "--name", "A.auto", src, store="mem"))
        check_equal(r.json.get("streams"), 1, f"push of 10 MiB to loopback, {how or 'default'}: streams used")
        check(said in r.stderr and why in r.stderr, f"push {how or 'default'} -v must say why one stream: {r.stderr}")
        out = c.path("out-auto")
        r = ok(c.blob("-v", "--no-local", "pull", *how, "A.auto", out, store="mem"))
        check_equal(r.json.get("streams"), 1, f"pull of 10 MiB from loopback, {how or 'default'}: streams used")
        check(said in r.stderr and why in r.stderr, f"pull {how or 'default'} -v must say why one stream: {r.stderr}")
        check(same_bytes(src, out), "the pulled file differs")
    warned = "4 streams to a data endpoint on loopback (127.0.0.1:"
    slower = "they share this host's CPUs and are slower than one stream there (streams auto picks one)"
    r = ok(c.blob("--no-local", "push", "--streams", "4", "--replace", "--name", "A.auto", src, store="mem"))
    check_equal(r.json.get("streams"), 4, "push --streams 4 to loopback: streams used (as asked)")
    check(warned in r.stderr and slower in r.stderr, f"push --streams 4 to loopback must warn: {r.stderr}")
    r = ok(c.blob("--no-local", "pull", "--streams", "4", "A.auto", c.path("out-auto4"), store="mem"))
    check_equal(r.json.get("streams"), 4, "pull --streams 4 from loopback: streams used (as asked)")
    check(warned in r.stderr and slower in r.stderr, f"pull --streams 4 from loopback must warn: {r.stderr}")
    step("--streams auto (the default) takes one stream to loopback and says why with -v; 4 there warn")


def test(c):
    c.start_daemon("mem", "memory:256M", tier="memory")
    c.start_daemon("disk", "file", tier="workstation", extra=["--no-sync"])
    auto_streams(c)
    exact(c, "mem")
    push_exact(c, "mem")
    push_exact(c, "disk")
    race(c, "mem")
    usage(c)
    cut_stream(c)


if __name__ == "__main__":
    harness.main(test)
