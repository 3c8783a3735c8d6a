#!/usr/bin/env python3
"""The main job: a private Naming Service and a blobstored on loopback; a CT
series and a large image pushed and pulled through them with every checksum
verified. Everything it starts it stops by PID (on exit, Ctrl-C, SIGTERM and
SIGHUP); everything it writes lives in one temporary directory, deleted at
exit, except the store with --data DIR, which is kept in DIR/store for the
next run."""

import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SLICE = 512 * 512 * 2 + 132 + 1024  # 16-bit 512x512 pixels, preamble and a small header


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_random(path, size):
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, len(block))
            f.write(block[:n])
            block = block[7:] + block[:7]  # vary the content between blocks
            left -= n


class Stopped(Exception):
    """SIGTERM or SIGHUP arrived: stop the services and remove the temporary directory."""


def on_stop_signal(signum, _frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one stop at a time: cleanup is not interrupted
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise Stopped(signal.Signals(signum).name)


def die_with_parent():
    """In the child before exec: SIGTERM when the demo itself dies (even by
    SIGKILL), so that no omniNames or blobstored outlives it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Demo:
    def __init__(self, build, workdir, store_dir):
        self.build = build
        self.work = workdir
        self.store_dir = store_dir
        self.procs = []
        self.blob = os.path.join(build, "clients", "blob")

    def start(self, argv, **kw):
        p = subprocess.Popen(argv, preexec_fn=die_with_parent, **kw)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=5)

    def start_naming(self):
        port = free_port()
        nsdir = os.path.join(self.work, "naming")
        os.makedirs(nsdir)
        omninames = shutil.which("omniNames") or "/usr/bin/omniNames"
        self.start([omninames, "-start", str(port), "-always", "-datadir", nsdir,
                    "-errlog", os.path.join(nsdir, "ns.err"),
                    "-ORBendPoint", f"giop:tcp:127.0.0.1:{port}"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.naming = f"corbaname::127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            r = subprocess.run(["nameclt", "-ORBInitRef", f"NameService={self.naming}", "list"],
                               capture_output=True, timeout=10)
            if r.returncode == 0:
                return
            time.sleep(0.05)  # polling a condition, bounded by the deadline
        raise SystemExit("omniNames did not come up within 20 s")

    def start_store(self):
        store_dir = self.store_dir
        log = open(os.path.join(self.work, "blobstored.log"), "w")
        p = self.start([os.path.join(self.build, "blobstore", "blobstored"), "--name", "demo",
                        "--store", f"file:{store_dir}", "--tier", "workstation",
                        "--naming", self.naming, "--control-address", "127.0.0.1:0",
                        "--data-address", "127.0.0.1:0"],
                       stdout=subprocess.PIPE, stderr=log, text=True)
        line = p.stdout.readline()
        if not line.startswith("blobstored ready"):
            raise SystemExit("blobstored did not start; see " + log.name)
        self.ready = line.strip()

    def run_blob(self, *args):
        r = subprocess.run([self.blob, "--naming", self.naming, "--store", "demo", "--json", *args],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise SystemExit(f"blob {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
        return json.loads(r.stdout)

    def checksum(self, path):
        """`blob checksum` of a local file: what its Blob's checksum must be (crc32c:...)."""
        r = subprocess.run([self.blob, "checksum", "--json", path], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise SystemExit(f"blob checksum {path} failed ({r.returncode}): {r.stderr.strip()}")
        return json.loads(r.stdout)["files"][0]["checksum"]


def report(what, n, nbytes, seconds):
    mbps = nbytes / seconds / 1e6 if seconds > 0 else float("inf")
    print(f"  {what:<34} {n:>4} blob(s) {nbytes / 2**20:>9.1f} MiB {seconds:>8.3f} s {mbps:>9.1f} MB/s")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", required=True, help="the build directory")
    ap.add_argument("--slices", type=int, default=200, help="CT slices in the series (default 200)")
    ap.add_argument("--image-mb", type=int, default=256, help="size of the large image in MiB (default 256)")
    ap.add_argument("--serve", action="store_true",
                    help="keep omniNames and blobstored running until Ctrl-C, SIGTERM or SIGHUP")
    ap.add_argument("--data", metavar="DIR",
                    help="keep the store in DIR/store across runs (default: in the temporary directory, deleted at exit)")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # progress lines reach a pipe as they happen

    signal.signal(signal.SIGTERM, on_stop_signal)
    signal.signal(signal.SIGHUP, on_stop_signal)
    work = tempfile.mkdtemp(prefix="blobstreaming-demo-")
    if args.data:
        store_dir = os.path.join(os.path.abspath(args.data), "store")
        os.makedirs(os.path.dirname(store_dir), exist_ok=True)
        print(f"Store in {store_dir}: kept after exit (--data); work files in {work}, deleted at exit")
    else:
        store_dir = os.path.join(work, "store")
        print(f"Store and work files in {work}: deleted at exit with every Blob pushed "
              "(keep the store with --data DIR)")
    demo = Demo(os.path.abspath(args.build), work, store_dir)
    try:
        demo.start_naming()
        demo.start_store()
        print(demo.ready)
        print(f"Naming Service {demo.naming}; omniNames PID {demo.procs[0].pid}, blobstored PID {demo.procs[1].pid}\n")

        series = os.path.join(demo.build, "clients", "examples", "async_series")
        t0 = time.monotonic()
        r = subprocess.run([series, "--naming", demo.naming, "--store", "demo", "--count", str(args.slices),
                            "--size", str(SLICE), "--concurrency", "4", "--json"],
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise SystemExit(f"CT series failed: {r.stderr.strip() or r.stdout.strip()}")
        summary = json.loads(r.stdout)
        print("CT series (512x512x16-bit slices), pushed then pulled, checksums verified:")
        report("push + pull, 4 in flight", summary["pushed"], 2 * summary["pushed"] * SLICE,
               time.monotonic() - t0)
        print(f"  {summary['connections_opened']} data connection(s) opened for {2 * args.slices} transfers\n")

        image = os.path.join(work, "MG.image")
        write_random(image, args.image_mb << 20)
        want = demo.checksum(image)
        print(f"Large image ({args.image_mb} MiB):")
        pushed = demo.run_blob("push", "--replace", "--name", "MG.image", image)
        if pushed["checksum"] != want:
            raise SystemExit(f"checksum mismatch after push: {pushed['checksum']}, not {want}")
        report("push (acknowledged durable)", 1, pushed["bytes"], pushed["seconds"])
        out = os.path.join(work, "MG.pulled")
        pulled = demo.run_blob("--no-local", "pull", "MG.image", out)
        if demo.checksum(out) != want:
            raise SystemExit("checksum mismatch after pull")
        report("pull over TCP (sendfile)", 1, pulled["bytes"], pulled["seconds"])
        local = demo.run_blob("pull", "MG.image", out + ".local")
        if demo.checksum(out + ".local") != want:
            raise SystemExit("checksum mismatch after local pull")
        report("pull, same-host fast path" if local.get("local") else "pull", 1, local["bytes"], local["seconds"])
        print(f"\nAll checksums match ({want}).")

        print(f"\nPoint blob at this store:\n  export BLOBSTREAMING_NAMING={demo.naming}\n"
              f"  {demo.blob} --store demo ls")
        if args.serve:
            kept = f"the store stays in {store_dir}" if args.data else f"{work} and every Blob in it are deleted"
            print(f"\nServing; Ctrl-C, SIGTERM or SIGHUP (kill {os.getpid()}) stops omniNames and blobstored; "
                  f"{kept}.")
            signal.pause()
    except (KeyboardInterrupt, Stopped) as e:
        print(f"\nStopping ({e if isinstance(e, Stopped) else 'SIGINT'}).")
    finally:
        demo.stop_all()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
