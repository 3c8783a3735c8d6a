#!/usr/bin/env python3
"""blobstored serving a RadosStore (`--store rados:POOL --ceph-conf FILE`) on
the throwaway Ceph cluster (harness.ceph.CephCluster), driven by the blob
CLI, all of them real processes:

- options refused with their reason: rados: without a pool, --ceph-* for
  another kind, an unreadable --ceph-conf, a bad --ceph-user; a pool that
  does not exist (exit 10, saying how to create it);
- the ready line and `blob stores`: kind rados, tier central (its default);
- push and pull of 1 MiB and 100 MiB: the checksum of `push --json`, `stat`
  and the pulled copy equal `blob checksum` of the source; ranges (across a
  4 MiB object boundary, the last byte) equal the source's bytes; `ls`,
  `rm`, then `stat` fails with no_such_blob; the daemon's peak RSS printed;
- SIGKILL of the daemon in the middle of a push (from a pipe, so that the
  test knows the push is under way: data objects are in the pool): after a
  restart the Blob is not listed, the push is kept for a resume
  (tests/test_rados_resume_after_restart.py resumes such pushes), a new
  push of the name (no --resume) supersedes it, and once that Blob is
  removed the kept push's data objects and journal are deleted too;
- a pull whose client is killed (by its PID) while the daemon, still
  sending one data object, has its read of the next one on its way to the
  stopped OSD: the data port refuses a garbage Request at once for 4 s
  meanwhile (the reader is let go off the reactor thread); after SIGCONT
  the cluster answers again before the next step;
- the OSD stopped (SIGSTOP) in the middle of a pull and of a push: each
  client fails with a clear error (the push's names the store and the
  failed write) within the daemon's Ceph timeout; the daemon meanwhile
  answers `blob stores`, and its data port refuses a garbage Request at
  once while the pull, and then the push with both of its buffers in
  flight, waits for the OSD; once the OSD continues, it serves push and pull
  again and the failed push left nothing behind.

Skipped (77) only when Ceph is not installed (scripts/install-deps)."""

import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, MiB, check, check_equal, step, wait_for  # noqa: E402
from harness.ceph import CephCluster, ceph_programs  # noqa: E402
from harness.processes import proc_status  # noqa: E402

POOL = "archive"
STORE = "central"
GRACE = 3  # --ceph-grace, seconds
DATA_PREFIX = "blobstreaming.data."


def data_objects(ceph):
    r = ceph.rados("ls", pool=POOL)
    check_equal(r.returncode, 0, f"exit status of `rados ls` (stderr {r.stderr.strip()!r})")
    return {o for o in r.stdout.split() if o.startswith(DATA_PREFIX)}


def journal_objects(ceph):
    r = ceph.rados("ls", pool=POOL)
    check_equal(r.returncode, 0, f"exit status of `rados ls` (stderr {r.stderr.strip()!r})")
    return {o for o in r.stdout.split() if o.startswith("blobstreaming.resume.")}


def push_pull(c, name, size):
    source = c.path(name)
    digest = harness.write_random(source, size)
    # A RADOS store writes its chunk objects in order: push --streams falls
    # back to one stream.
    pushed = c.blob("push", "--streams", "4", "--name", name, source, store=STORE).ok()
    check_equal((pushed.get("bytes"), pushed.get("checksum"), pushed.get("streams")), (size, digest, 1),
                f"push --streams 4 {name}: bytes, checksum, streams")
    stat = c.blob("stat", name, store=STORE).ok()
    check_equal((stat.get("size"), stat.get("checksum")), (size, digest), f"stat {name}: size, checksum")
    out = c.path(name + ".pulled")
    t0 = time.monotonic()
    pulled = c.blob("--no-local", "pull", name, out, store=STORE).ok()
    seconds = time.monotonic() - t0
    check_equal(pulled.get("local"), False, f"pull {name}: a rados store has no local file")
    check_equal(harness.checksum_file(out), digest, f"checksum of {name} pulled")
    os.unlink(out)
    boundary = 4 * MiB if size > 4 * MiB else size // 2  # between two data objects
    for offset, length in ((boundary - 100, 300), (size - 1, 1), (12345, min(size - 12345, 9 * MiB))):
        c.blob("--no-local", "pull", name, out, "--offset", offset, "--length", length, store=STORE).ok()
        with open(out, "rb") as f:
            got = f.read()
        check(got == harness.read_range(source, offset, length), f"bytes [{offset}, +{length}) of {name} pulled")
        os.unlink(out)
    step(f"{name}: {size} bytes pushed and pulled ({size / seconds / 1e6:.0f} MB/s pull), checksum {digest}")
    return source, digest


def start_push_from_pipe(c, name, size):
    """`blob push --name NAME - --size SIZE` reading from a pipe the test fills."""
    err = c.path(f"push-{name}.err")
    with open(err, "wb") as e:
        client = c.spawn("blob push", [harness.program("clients/blob"), "--naming", c.naming, "--store", STORE,
                                       "--json", "--timeout", "60", "push", "--name", name, "-", "--size", str(size)],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=e)
    client.log_paths.append(err)
    return client, err


def feed(client, megabytes):
    """Writes `megabytes` MiB into the push's pipe; False once the client
    stopped reading (it failed)."""
    block = os.urandom(MiB)
    try:
        for _ in range(megabytes):
            client.popen.stdin.write(block)
        client.popen.stdin.flush()
        return True
    except BrokenPipeError:
        return False


def close_pipe(client):
    try:
        client.popen.stdin.close()
    except BrokenPipeError:
        pass


def ended(client, err, timeout):
    try:
        code = client.popen.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise harness.TestFailure(f"the client did not end within {timeout} s") from None
    with open(err, encoding="utf-8", errors="replace") as f:
        return code, f.read().strip()


def killed_mid_push(c, ceph, daemon, baseline):
    step("SIGKILL of blobstored in the middle of a 200 MiB push")
    client, err = start_push_from_pipe(c, "MG.killed", 200 * MiB)
    check(feed(client, 48), "the push stopped reading its pipe before the daemon was killed")
    wait_for(lambda: len(data_objects(ceph) - baseline) >= 8, 60, "8 data objects of the push in the pool",
             interval=0.2)
    os.kill(daemon.pid, signal.SIGKILL)
    daemon.popen.wait(timeout=20)
    feed(client, 8)
    close_pipe(client)
    code, text = ended(client, err, 90)
    step(f"blob push exited {code}: {text}")
    check(code in (EXIT["transfer_failed"], EXIT["unreachable"]), f"blob push exited {code}: {text!r}")

    daemon = c.restart_daemon(daemon)
    check('push "MG.killed" kept across the restart' in daemon_log(daemon),
          "the restarted daemon's log does not say it kept the interrupted push")
    listed = [b["name"] for b in c.blob("ls", store=STORE).ok().get("blobs", [])]
    check("MG.killed" not in listed, f"the interrupted push is listed after the restart: {listed}")
    c.blob("stat", "MG.killed", store=STORE).error(EXIT["no_such_blob"], 'blob "MG.killed" not found')
    source = c.path("killed.src")
    digest = harness.write_random(source, 20 * MiB)
    check_equal(c.blob("push", "--name", "MG.killed", source, store=STORE).ok().get("checksum"), digest,
                "checksum of MG.killed pushed again (superseding the kept push)")
    c.blob("rm", "MG.killed", store=STORE).ok()
    t0 = time.monotonic()
    wait_for(lambda: data_objects(ceph) <= baseline and not journal_objects(ceph), 60,
             "the kept push's and the removed Blob's data objects and journal deleted", interval=0.5)
    step(f"kept push superseded; its objects deleted {time.monotonic() - t0:.1f} s after the removal "
         f"(grace {GRACE} s)")
    return daemon


def daemon_log(daemon):
    with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
        return f.read()


def refusal_time(daemon):
    """Seconds until the daemon's data port answers a garbage Request."""
    t0 = time.monotonic()
    with socket.create_connection(daemon.data, timeout=30) as s:
        s.sendall(b"\x00" * 40)
        answer = s.recv(64)
    check(answer, "a Response to a garbage Request")
    return time.monotonic() - t0


def probe_refusals(daemon, waiting=None, seconds=6):
    """For `seconds`, or less once thread `waiting` ends (a transfer that
    waits for the stopped OSD): each garbage Request is refused within 2 s."""
    t0 = time.monotonic()
    slowest = 0.0
    while time.monotonic() - t0 < seconds and (waiting is None or waiting.is_alive()):
        slowest = max(slowest, refusal_time(daemon))
        check(slowest < 2, f"a refusal took {slowest:.1f} s: the reactor waited for the OSD")
        if waiting is None:
            time.sleep(0.2)  # the pace of the probes
        else:
            waiting.join(timeout=0.2)  # the next probe, or the transfer has ended
    step(f"slowest refusal {slowest * 1000:.1f} ms")


CHUNK = 4 * MiB  # a RadosStore's data objects: a pull reads one ahead


def written_to_puller(daemon):
    """Bytes the daemon has written on its busiest data connection (the
    pull's): acknowledged plus queued, from ss(8)."""
    r = subprocess.run(["ss", "-tinH", "state", "established", f"( sport = :{daemon.data[1]} )"],
                       capture_output=True, text=True, timeout=30)
    check_equal(r.returncode, 0, f"exit status of `ss` (stderr {r.stderr.strip()!r})")
    best, queued = 0, 0
    for line in r.stdout.splitlines():
        if line and not line[0].isspace():
            fields = line.split()
            queued = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0
        else:
            for field in line.split():
                if field.startswith("bytes_acked:"):
                    best = max(best, int(field.split(":", 1)[1]) + queued)
    return best


def settled(measure, what, quiet=0.3, timeout=30):
    """measure() once it has not changed for `quiet` s (bounded)."""
    last = [measure(), time.monotonic()]

    def still():
        now = measure()
        if now != last[0]:
            last[:] = [now, time.monotonic()]
            return None
        return now if time.monotonic() - last[1] >= quiet else None
    return wait_for(still, timeout, what, interval=0.05)


def spawn_pull(c, name, err_name):
    """`blob pull NAME -` over TCP, its bytes on a pipe the test reads at its own pace; stderr in `err_name`."""
    err_path = c.path(err_name)
    with open(err_path, "wb") as err:
        reader = c.spawn("blob pull", [harness.program("clients/blob"), "--naming", c.naming, "--store", STORE,
                                       "--json", "--timeout", "60", "--no-local", "pull", name, "-"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
    reader.log_paths.append(err_path)
    return reader


def closed_mid_read_ahead(c, ceph, daemon, name):
    """A pull whose client goes away while the daemon's read-ahead waits for
    the stopped OSD: the reader is let go off the reactor."""
    osd = next(d for d in ceph.daemons if d.name.startswith("ceph-osd"))
    step(f"a pull of {name} whose client is killed while its read-ahead waits for the stopped OSD")
    reader = spawn_pull(c, name, "ahead-pull.err")
    check_equal(len(reader.popen.stdout.read(16 * MiB)), 16 * MiB, "bytes pulled before the OSD stops")
    # The client stops reading: the daemon fills the socket and waits to
    # write, its next piece read ahead (the OSD still answers).
    before = settled(lambda: written_to_puller(daemon), "the pull to wait for its client")
    os.kill(osd.pid, signal.SIGSTOP)
    try:
        # Read on until the daemon has sent into the next data object: its
        # read-ahead of the one after is then on its way to the stopped OSD,
        # while most of the current object is still to be sent.
        boundary = (before // CHUNK + 1) * CHUNK
        fd = reader.popen.stdout.fileno()

        def crossed():
            if select.select([fd], [], [], 0.5)[0]:
                os.read(fd, 64 * 1024)
            return written_to_puller(daemon) >= boundary + 256 * 1024
        wait_for(crossed, 30, f"the daemon to send past byte {boundary} of {name}", interval=0)
        written = written_to_puller(daemon)
        check(written < boundary + CHUNK - MiB, f"the daemon sent {written - boundary} bytes past {boundary}: "
                                                "its read-ahead may have completed before the OSD stopped")
        t0 = time.monotonic()
        os.kill(reader.pid, signal.SIGKILL)
        reader.popen.wait(timeout=30)
        step(f"client (pid {reader.pid}) killed {written - boundary} bytes into the data object after byte "
             f"{boundary}: a garbage Request is refused at once, every time, for 4 s")
        probe_refusals(daemon, seconds=4)
        step(f"probed for {time.monotonic() - t0:.1f} s after the kill")
    finally:
        os.kill(osd.pid, signal.SIGCONT)
    # The OSD answers again before the next step stops it.
    wait_for(lambda: ceph.rados("stat", "blobstreaming.index", pool=POOL, timeout=30).returncode == 0, 60,
             "the cluster to answer again after SIGCONT", interval=0.2)


def osd_stopped(c, ceph, daemon, name, digest):
    osd = next(d for d in ceph.daemons if d.name.startswith("ceph-osd"))
    step(f"the OSD stopped (SIGSTOP {osd.pid}) in the middle of a pull of {name}")
    reader = spawn_pull(c, name, "stopped-pull.err")
    got = reader.popen.stdout.read(16 * MiB)
    check_equal(len(got), 16 * MiB, "bytes pulled before the OSD stops")
    os.kill(osd.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        rest = []
        drain = threading.Thread(target=lambda: rest.append(reader.popen.stdout.read()))
        drain.start()
        step("while the pull waits for the stopped OSD, the data plane serves other connections: a garbage "
             "Request is refused at once, every time, for 6 s")
        probe_refusals(daemon, drain)
        drain.join(timeout=90)
        rest = rest[0] if rest else b""
        code, text = ended(reader, reader.log_paths[-1], 90)
        step(f"blob pull exited {code} after {time.monotonic() - t0:.1f} s with {len(got) + len(rest)} bytes: {text}")
        check_equal(code, EXIT["transfer_failed"], f"exit status of the pull with the OSD stopped ({text!r})")
        check(len(got) + len(rest) < 100 * MiB, "the pull delivered every byte with the OSD stopped")
        # The client sees the connection close (no error can follow bytes
        # already under way); the daemon's log says why.
        lines = [line for line in daemon_log(daemon).splitlines()
                 if f"transfer direction=pull blob={name} " in line and "outcome=failed" in line]
        check(any(f"rados:{POOL}: reading bytes" in line and "Connection timed out" in line for line in lines),
              f"the daemon's log does not say why the pull of {name} failed: {lines}")
        stores = c.blob("stores", timeout=30).ok()["stores"]
        check_equal([s.get("kind") for s in stores if s.get("name") == STORE], ["rados"],
                    "`blob stores` with the OSD stopped")
    finally:
        os.kill(osd.pid, signal.SIGCONT)

    step("the OSD stopped in the middle of a push")
    before = data_objects(ceph)
    client, err = start_push_from_pipe(c, "MG.osd", 64 * MiB)
    feed(client, 24)
    wait_for(lambda: len(data_objects(ceph) - before) >= 4, 60, "4 data objects of the push in the pool",
             interval=0.2)
    os.kill(osd.pid, signal.SIGSTOP)
    try:
        def rest():
            feed(client, 40)
            close_pipe(client)
        feeder = threading.Thread(target=rest)
        feeder.start()
        step("while the push waits for the stopped OSD (both of its buffers in flight), the data plane serves "
             "other connections: a garbage Request is refused at once, every time, for 6 s")
        pushing = threading.Thread(target=lambda: client.popen.wait(timeout=120))
        pushing.start()
        probe_refusals(daemon, pushing)
        feeder.join(timeout=120)
        pushing.join(timeout=120)
        code, text = ended(client, err, 120)
        step(f"blob push exited {code}: {text}")
        check_equal(code, EXIT["io_error"], f"exit status of the push with the OSD stopped ({text!r})")
        check(f"rados:{POOL}" in text and "Connection timed out" in text,
              f"the push's error names neither the store rados:{POOL} nor the timeout: {text!r}")
        check_equal(c.blob("stores", timeout=30).code, 0, "`blob stores` after the failed push")
    finally:
        os.kill(osd.pid, signal.SIGCONT)

    step("the OSD continues: the daemon serves again; the failed push leaves nothing")
    c.blob("stat", "MG.osd", store=STORE).error(EXIT["no_such_blob"], "not found")
    out = c.path("after.pull")
    c.blob("--no-local", "pull", name, out, store=STORE).ok()
    check_equal(harness.checksum_file(out), digest, f"checksum of {name} pulled after the OSD continued")
    push_pull(c, "CT.after", MiB)
    c.blob("rm", "CT.after", store=STORE).ok()
    wait_for(lambda: data_objects(ceph) <= before, 60, "the failed push's data objects deleted", interval=0.5)


def refused(c, args, code, message):
    blobstored = harness.program("blobstore/blobstored")
    rc, out, err = c.run([blobstored, "--name", "x", "--naming", c.naming, *args], timeout=60)
    check(rc == code and message in err, f"blobstored {' '.join(args)}: expected exit {code} with {message!r}, "
                                         f"got {rc}: {err.strip()!r}")


def bad_options(c, ceph):
    step("blobstored refuses what a rados store cannot be given")
    conf = ceph.conf_path
    refused(c, ["--store", "rados:"], 1, '--store: "rados:" names no pool: rados:POOL')
    refused(c, ["--store", "memory:1M", "--ceph-conf", conf], 1, "--ceph-conf applies to a rados store only")
    refused(c, ["--store", "file:" + c.path("f"), "--ceph-user", "x"], 1, "--ceph-user applies to a rados store only")
    refused(c, ["--store", f"rados:{POOL}", "--ceph-conf", c.path("none.conf")], 1,
            f'--ceph-conf: cannot read "{c.path("none.conf")}": No such file or directory')
    refused(c, ["--store", f"rados:{POOL}", "--ceph-conf", conf, "--ceph-user", "a b"], 1,
            '--ceph-user: "a b" is not a Ceph client id')
    refused(c, ["--store", "rados:nosuch", "--ceph-conf", conf], EXIT["invalid_argument"],
            'rados:nosuch: the Ceph cluster has no pool "nosuch" (the store does not create pools; create it with '
            '`ceph osd pool create nosuch` and `ceph osd pool application enable nosuch blobstreaming`)')


def test(c):
    ceph_programs()
    with CephCluster(c) as ceph:
        ceph.create_pool(POOL, pg_num=8)
        bad_options(c, ceph)
        extra = ("--ceph-conf", ceph.conf_path, "--ceph-grace", str(GRACE))
        daemon = c.start_daemon(STORE, f"rados:{POOL}", extra=extra)
        check_equal(daemon.ready.get("store"), "rados", "store kind in the ready line")
        stores = [s for s in c.blob("stores").ok()["stores"] if s.get("name") == STORE]
        check_equal([(s.get("kind"), s.get("tier")) for s in stores], [("rados", "central")], "`blob stores`")

        push_pull(c, "CT.small", MiB)
        rss0 = proc_status(daemon.pid, "VmRSS")
        big_source, big_digest = push_pull(c, "MG.large", 100 * MiB)
        step(f"blobstored: VmRSS {rss0 // 1024} MiB before, {proc_status(daemon.pid, 'VmRSS') // 1024} MiB after "
             f"100 MiB pushed and pulled (peak {proc_status(daemon.pid, 'VmHWM') // 1024} MiB)")
        listed = sorted(b["name"] for b in c.blob("ls", store=STORE).ok().get("blobs", []))
        check_equal(listed, ["CT.small", "MG.large"], "`blob ls`")
        c.blob("rm", "CT.small", store=STORE).ok()
        c.blob("stat", "CT.small", store=STORE).error(EXIT["no_such_blob"], 'blob "CT.small" not found')
        # The removed version's objects go once the grace has passed.
        baseline = wait_for(lambda: data_objects(ceph) if len(data_objects(ceph)) == 25 else None, 30,
                            "only MG.large's 25 data objects in the pool", interval=0.5)

        daemon = killed_mid_push(c, ceph, daemon, baseline)
        closed_mid_read_ahead(c, ceph, daemon, "MG.large")
        osd_stopped(c, ceph, daemon, "MG.large", big_digest)
        os.unlink(big_source)


if __name__ == "__main__":
    harness.main(test)
