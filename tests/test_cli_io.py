#!/usr/bin/env python3
"""What `blob` reads from and writes to, beyond regular files, and what a
failure leaves behind (docs/CLI.md, "Inputs and outputs").

Pull outputs:
- a character device that fails every write (/dev/full's numbers; as root a
  private node, so that a regression cannot remove the machine's /dev/full),
  directly and through a symbolic link, over TCP and the same-host path:
  exit 40 naming the path and "No space left on device"; the device node and
  the link are still there, unchanged;
- a FIFO with a reader gets exactly the Blob's bytes (the FIFO stays a
  FIFO); a FIFO nobody reads: exit 51 after --timeout, not a hang;
- a pull that fails after it started writing (the file size limit, EFBIG)
  into an existing regular file leaves the old bytes, mode and inode; one
  that would have created the file leaves nothing (no temporary file);
  a successful pull replaces the file's bytes and keeps its mode;
- /dev/stdout is the inherited standard output (an O_APPEND file keeps what
  it held); a closed pipe (EPIPE) or /dev/full under a pull's bytes, and
  /dev/full under query output: exit 40 "cannot write standard output:
  ..."; query output into a closed pipe ends quietly by SIGPIPE.
Push inputs:
- a FIFO without a writer: exit 51 after --timeout, not a hang; a FIFO and
  a character device are streamed (with and without --size); a writer that
  stalls mid-way: exit 51;
- standard input with --size whose writer was killed early: exit 23 naming
  the bytes that arrived and the declared size, nothing stored or reserved;
  without --size what arrived until EOF is stored; a read error (stdin is a
  directory) fails with exit 40 instead of storing an empty Blob;
- --size that disagrees with a regular file: exit 10; --size without push:
  exit 1."""

import os
import resource
import signal
import stat
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, MiB, TestFailure, check, check_equal, step  # noqa: E402

BLOB = 4 * MiB      # larger than a pipe's buffer: a closed reader is noticed
FSIZE_LIMIT = MiB   # RLIMIT_FSIZE of the pulls that must fail mid-way
PATHS = (["--no-local"], [])  # TCP, then the same-host fast path


def run_blob(c, *args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, preexec=None, timeout=30, store="ws",
             json_from_stderr=True):
    """`blob --naming URL --store S ARGS...` with the given stdin/stdout;
    stdout is kept as bytes; the --json object is read from stderr (data on
    stdout) unless `json_from_stderr` is False."""
    argv = [harness.program("clients/blob"), "--naming", c.naming, "--store", store] + [str(a) for a in args]
    try:
        r = subprocess.run(argv, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=timeout, env=c.env,
                           preexec_fn=preexec)
    except subprocess.TimeoutExpired as e:
        raise TestFailure(f"`{' '.join(argv)}` did not finish within {timeout} s "
                          f"(stderr so far: {e.stderr!r})") from None
    return harness.BlobResult(argv, r.returncode, r.stdout if r.stdout is not None else b"", r.stderr,
                            json_from_stderr=json_from_stderr)


def limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_LIMIT, FSIZE_LIMIT))


def full_device(c):
    """A character device whose writes fail with ENOSPC."""
    real = os.stat("/dev/full")
    if os.geteuid() != 0:
        return "/dev/full"  # this user cannot remove it, whatever the CLI does
    path = c.path("full")
    os.mknod(path, 0o666 | stat.S_IFCHR, real.st_rdev)
    try:
        os.close(os.open(path, os.O_WRONLY))
    except OSError as e:  # a nodev file system
        step(f"cannot use a private device node ({e}); using /dev/full")
        os.unlink(path)
        return "/dev/full"
    return path


def check_device(path, rdev):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise TestFailure(f"{path} was removed") from None
    check(stat.S_ISCHR(st.st_mode), f"{path} is no longer a character device: mode {st.st_mode:o}")
    check_equal(st.st_rdev, rdev, f"device numbers of {path}")


def reserved(c):
    return c.blob("stores", store=None).ok()["stores"][0]["reserved"]


def check_not_stored(c, name):
    c.blob("stat", name, store="ws").error(EXIT["no_such_blob"], f'blob "{name}" not found')
    check_equal(reserved(c), 0, f"bytes reserved after the failed push of {name}")


class FifoReader(threading.Thread):
    """Opens a FIFO for reading and reads it to EOF."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.data = None

    def run(self):
        with open(self.path, "rb") as f:
            self.data = f.read()


class FifoWriter(threading.Thread):
    """Opens a FIFO for writing, writes `data`, then waits for `release`
    before closing it (a writer that stalls)."""

    def __init__(self, path, data, release=None):
        super().__init__(daemon=True)
        self.path = path
        self.data = data
        self.release = release

    def run(self):
        try:
            with open(self.path, "wb") as f:
                f.write(self.data)
                f.flush()
                if self.release:
                    self.release.wait(60)
        except BrokenPipeError:
            pass


# ---- pull outputs ---------------------------------------------------------------

def pull_to_full_device(c, blob):
    dev = full_device(c)
    rdev = os.stat("/dev/full").st_rdev
    link = c.path("full-link")
    os.symlink(dev, link)
    for local in PATHS:
        for target in (dev, link):
            run_blob(c, *local, "pull", blob["name"], target).error(
                EXIT["io_error"], f"cannot write {target}: No space left on device")
            check_device(dev, rdev)
            check(os.path.islink(link) and os.readlink(link) == dev, f"{link} is no longer a link to {dev}")
        r = run_blob(c, *local, "--json", "pull", blob["name"], dev, json_from_stderr=False)
        r.error(EXIT["io_error"], f"cannot write {dev}: No space left on device")
        check_equal((r.json or {}).get("error", {}).get("name"), "io_error", "JSON error name")
        check_device(dev, rdev)
    # A write error on the same-host path is not a reason to write it all
    # again over TCP: the output may have taken bytes already.
    r = run_blob(c, "-d", "pull", blob["name"], dev)
    r.error(EXIT["io_error"], f"cannot write {dev}: No space left on device")
    check("pulling over the network instead" not in r.stderr,
          f"a failed write on the same-host path was retried over the network: {r.stderr[-2000:]}")
    check_device("/dev/full", rdev)


def pull_to_fifo(c, blob):
    fifo = c.path("pull.fifo")
    os.mkfifo(fifo)
    for local in PATHS:
        reader = FifoReader(fifo)
        reader.start()
        run_blob(c, *local, "pull", blob["name"], fifo).ok()
        reader.join(30)
        check(reader.data is not None, "the FIFO's reader got no EOF")
        check_equal(len(reader.data), BLOB, "bytes the FIFO's reader got")
        check_equal(harness.checksum_bytes(reader.data), blob["digest"], "checksum of what the FIFO's reader got")
        check(stat.S_ISFIFO(os.lstat(fifo).st_mode), f"{fifo} is no longer a FIFO")
    step("a FIFO nobody reads: exit 51 after --timeout")
    run_blob(c, "--timeout", 1, "pull", blob["name"], fifo).error(
        EXIT["timeout"], f'pull "{blob["name"]}": no process opened the FIFO {fifo} for reading within 1.000 s')
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), f"{fifo} is no longer a FIFO")
    step("--resume into a FIFO: exit 10 at once")
    run_blob(c, "--resume", "pull", blob["name"], fifo).error(
        EXIT["invalid_argument"], f"resume needs a regular file to continue: {fifo} is a FIFO")


def pull_failing_midway(c, blob):
    outdir = c.path("out")
    os.mkdir(outdir)
    old = c.path("out", "old.dcm")
    old_bytes = b"the previous version of this file\n"
    with open(old, "wb") as f:
        f.write(old_bytes)
    os.chmod(old, 0o640)
    inode = os.stat(old).st_ino
    fresh = c.path("out", "new.dcm")
    for local in PATHS:
        for target in (old, fresh):
            run_blob(c, *local, "pull", blob["name"], target, preexec=limit_file_size).error(
                EXIT["io_error"], f"cannot write {target}: File too large")
            with open(old, "rb") as f:
                check_equal(f.read(), old_bytes, f"{old} after the failed pull")
            check_equal(os.stat(old).st_ino, inode, f"inode of {old} after the failed pull")
            check_equal(stat.S_IMODE(os.stat(old).st_mode), 0o640, f"mode of {old} after the failed pull")
            check_equal(sorted(os.listdir(outdir)), ["old.dcm"], "files in the output directory")
    step("a range past the end leaves the old file too")
    run_blob(c, "pull", blob["name"], old, "--offset", BLOB, "--length", 1).error(
        EXIT["invalid_range"], "is outside the blob")
    with open(old, "rb") as f:
        check_equal(f.read(), old_bytes, f"{old} after the refused range")
    step("a pull that succeeds replaces the bytes and keeps the mode")
    for local in PATHS:
        run_blob(c, *local, "pull", blob["name"], old).ok()
        check_equal(harness.checksum_file(old), blob["digest"], f"checksum of {old}")
        check_equal(stat.S_IMODE(os.stat(old).st_mode), 0o640, f"mode of {old} after the pull")
        check_equal(sorted(os.listdir(outdir)), ["old.dcm"], "files in the output directory")


def pull_to_stdout(c, blob):
    for local in PATHS:
        for target in ("-", "/dev/stdout"):
            path = c.path("stdout.bin")
            with open(path, "wb") as f:
                f.write(b"HEAD\n")
            with open(path, "ab") as out:
                run_blob(c, *local, "--json", "pull", blob["name"], target, stdout=out).ok()
            with open(path, "rb") as f:
                data = f.read()
            check_equal(data[:5], b"HEAD\n", f"what standard output (O_APPEND) held before `pull {target}`")
            check_equal(len(data), 5 + BLOB, f"bytes on standard output after `pull {target}`")
            check_equal(harness.checksum_bytes(data[5:]), blob["digest"], f"checksum of `pull {target}`")


def stdout_errors(c, blob):
    for local in PATHS:
        step(f"`blob {' '.join(local)} pull NAME - | head -c 10`")
        argv = [harness.program("clients/blob"), "--naming", c.naming, "--store", "ws", *local,
                "pull", blob["name"], "-"]
        proc = c.spawn("blob pull | head", argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
        head = proc.popen.stdout.read(10)
        proc.popen.stdout.close()
        try:
            err = proc.popen.stderr.read()
            proc.popen.wait(30)
        except subprocess.TimeoutExpired:
            raise TestFailure("`blob pull NAME - | head -c 10` did not end within 30 s") from None
        check_equal(len(head), 10, "bytes head read")
        r = harness.BlobResult(argv, proc.popen.returncode, b"", err)
        r.error(EXIT["io_error"], f'pull "{blob["name"]}": store "ws": cannot write standard output: Broken pipe')
    step("query output into a closed pipe and into /dev/full")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        # A listing ends quietly by SIGPIPE, as ls(1) does (test_cli_manners).
        r = run_blob(c, "stat", blob["name"], stdout=write_end)
        check(r.code == -signal.SIGPIPE and r.stderr.strip() == "",
              f"stat to a closed pipe: exit {r.code}, stderr {r.stderr!r}")
    finally:
        os.close(write_end)
    with open("/dev/full", "wb") as full:
        run_blob(c, "ls", stdout=full).error(EXIT["io_error"], "cannot write standard output: No space left on device")
        run_blob(c, "--json", "pull", blob["name"], "-", stdout=full).error(
            EXIT["io_error"], "cannot write standard output: No space left on device")


# ---- push inputs ----------------------------------------------------------------

def push_from_fifo(c, blob):
    fifo = c.path("push.fifo")
    os.mkfifo(fifo)
    step("a FIFO without a writer: exit 51 after --timeout")
    run_blob(c, "--timeout", 1, "push", "--name", "CT.fifo.none", fifo).error(
        EXIT["timeout"], f'push "CT.fifo.none": no bytes from {fifo} for 1.000 s (--timeout) after 0 bytes')
    check_not_stored(c, "CT.fifo.none")
    data = os.urandom(MiB + 17)
    for size in ([], ["--size", len(data)]):
        writer = FifoWriter(fifo, data)
        writer.start()
        name = f"CT.fifo{len(size)}"
        pushed = run_blob(c, "--json", "push", *size, "--name", name, fifo, stdout=subprocess.PIPE)
        writer.join(30)
        pushed.ok()
        check_equal(c.blob("stat", name, store="ws").ok()["checksum"], harness.checksum_bytes(data),
                    f"checksum of {name} pushed from a FIFO")
    step("a writer that stalls mid-way: exit 51")
    release = threading.Event()
    writer = FifoWriter(fifo, data[:100], release)
    writer.start()
    try:
        run_blob(c, "--timeout", 1, "push", "--size", 1000, "--name", "CT.fifo.stall", fifo).error(
            EXIT["timeout"], f'push "CT.fifo.stall": no bytes from {fifo} for 1.000 s (--timeout) after 100 of 1000 bytes')
    finally:
        release.set()
        writer.join(30)
    check_not_stored(c, "CT.fifo.stall")
    step("a character device with --size")
    run_blob(c, "push", "--size", "1M", "--name", "CT.zero", "/dev/zero").ok()
    check_equal(c.blob("stat", "CT.zero", store="ws").ok()["checksum"], harness.checksum_bytes(bytes(MiB)),
                "checksum of 1 MiB of /dev/zero")


def push_from_stdin(c, blob):
    src = blob["path"]
    killed_writer = ["sh", "-c", f"head -c 1000 '{src}'; kill -KILL $$"]
    with open(src, "rb") as f:
        first = f.read(5000)
    step("--size and a writer killed after 1000 bytes: exit 23, nothing stored")
    for size in (4096, 1001):
        writer = subprocess.Popen(killed_writer, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            run_blob(c, "push", "--size", size, "--name", "CT.short", "-", stdin=writer.stdout).error(
                EXIT["incomplete"], f'push "CT.short": standard input ended after 1000 of the {size} bytes '
                                    f'given by --size')
        finally:
            writer.stdout.close()
            writer.wait(30)
        check_equal(writer.returncode, -signal.SIGKILL, "exit status of the killed writer")
        check_not_stored(c, "CT.short")
    step("without --size: what arrived until EOF is stored")
    writer = subprocess.Popen(killed_writer, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        r = run_blob(c, "--json", "push", "--name", "CT.eof", "-", stdin=writer.stdout)
    finally:
        writer.stdout.close()
        writer.wait(30)
    r.ok()
    info = c.blob("stat", "CT.eof", store="ws").ok()
    check_equal((info["size"], info["checksum"]), (1000, harness.checksum_bytes(first[:1000])), "CT.eof")
    step("--size takes exactly that many bytes of a longer stream")
    r = run_blob(c, "push", "--size", 4096, "--name", "CT.exact", "-", stdin=open(src, "rb"))
    r.ok()
    info = c.blob("stat", "CT.exact", store="ws").ok()
    check_equal((info["size"], info["checksum"]), (4096, harness.checksum_bytes(first[:4096])), "CT.exact")
    step("a read error on standard input fails the push")
    for size in ([], ["--size", 10]):
        fd = os.open(c.root, os.O_RDONLY)
        try:
            run_blob(c, "push", *size, "--name", "CT.dir", "-", stdin=fd).error(
                EXIT["io_error"], 'push "CT.dir": cannot read standard input: Is a directory')
        finally:
            os.close(fd)
        check_not_stored(c, "CT.dir")
    step("--size and a regular file of another size: exit 10; --size without push: exit 1")
    run_blob(c, "push", "--size", 1000, "--name", "CT.size", src).error(
        EXIT["invalid_argument"], f'push "CT.size": {src} has {BLOB} bytes, not the 1000 given by --size')
    check_not_stored(c, "CT.size")
    run_blob(c, "pull", "--size", 1000, blob["name"], "-").error(
        EXIT["usage"], "--size applies to push only, not pull")
    run_blob(c, "push", "--size", 4096, "--name", "CT.size", src).error(
        EXIT["invalid_argument"], f"has {BLOB} bytes, not the 4096 given by --size")


def test(c):
    c.start_daemon("ws", "file", tier="workstation")
    src = c.path("src.bin")
    blob = {"name": "CT.io", "path": src, "digest": harness.write_random(src, BLOB)}
    c.blob("push", "--name", blob["name"], src, store="ws").ok()
    failures = []
    for part in (pull_to_full_device, pull_to_fifo, pull_failing_midway, pull_to_stdout, stdout_errors,
                 push_from_fifo, push_from_stdin):
        step(part.__name__)
        try:
            part(c, blob)
        except TestFailure as e:
            step(f"{part.__name__}: FAILED: {e}")
            failures.append(f"{part.__name__}: {e}")
    if failures:
        raise TestFailure(f"{len(failures)} part(s) failed:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    harness.main(test)
