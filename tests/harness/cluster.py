"""Cluster: a private omniNames, blobstored daemons and the blob CLI on
127.0.0.1 with ephemeral ports, in one Workspace. Environment (set by
`make check`): BS_BUILDDIR (required), OMNINAMES (default: omniNames on PATH)."""

import os
import subprocess

from .checks import TestFailure, check, check_equal, program, step, wait_for
from .cli import run_blob
from .files import checksum_file
from .daemons import READY, Daemon, blobstored_argv
from .naming import naming_url, nameclt_answers, omninames_argv, omninames_program
from .ports import free_port
from .processes import Process
from .workspace import Workspace


class Cluster(Workspace):
    """The processes and files of one system test."""

    def __init__(self, test_name):
        super().__init__(test_name)
        self.naming = None
        self.blob_program = None  # `blob` of the build tree (program()), or this path
        self.env.pop("BLOBSTREAMING_NAMING", None)
        self.env.pop("OMNIORB_CONFIG", None)

    # ---- omniNames -----------------------------------------------------------
    def start_naming(self, timeout=30, attempts=3, port=None, datadir=None):
        """Starts omniNames on a free port (or on `port`, with `datadir`: a
        restart) and waits until it answers. A port taken by someone else
        between the probe and the start makes omniNames exit: then it is
        tried again (on another port unless `port` is given)."""
        for attempt in range(1, attempts + 1):
            proc, url = self._start_omninames(port, datadir)

            def answers(proc=proc, url=url):
                if not proc.running():
                    return "exited"
                # Our omniNames has bound its endpoint (it logs its root
                # context only after that), so nameclt cannot be answered by
                # another process that holds the port.
                try:
                    with open(proc.log_paths[1], encoding="utf-8", errors="replace") as f:
                        if "Root context is" not in f.read():
                            return None
                except FileNotFoundError:
                    return None
                return "up" if nameclt_answers(url, env=self.env) and proc.running() else None

            state = wait_for(answers, timeout, f"omniNames at {url}", interval=0.05)
            if state == "up":
                self.naming = url
                step(f"omniNames pid {proc.pid} on {url}")
                return proc
            step(f"omniNames at {url} exited with {proc.popen.returncode} (attempt {attempt} of {attempts})")
        raise TestFailure(f"omniNames did not start in {attempts} attempts; see its log above")

    def nameclt(self, *args, timeout=30):
        """Runs `nameclt -advanced OP ARGS...` on the test's Naming Service
        (e.g. "unbind", "BlobStreaming/Stores/ws1"); its stdout. A failure
        is a TestFailure."""
        argv = ["nameclt", "-ORBInitRef", f"NameService={self.naming}", "-advanced", *args]
        code, out, err = self.run(argv, timeout=timeout)
        check(code == 0, f"`{' '.join(argv)}` exited {code}: {err.strip()!r}")
        return out

    def _start_omninames(self, port=None, datadir=None):
        port = port or free_port()
        datadir = datadir or self.path(f"naming-{port}")
        os.makedirs(datadir, exist_ok=True)
        log_path = os.path.join(datadir, "omniNames.out")
        with open(log_path, "ab") as log:
            popen = subprocess.Popen(omninames_argv(omninames_program(), port, datadir),
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        proc = Process("omniNames", popen, [log_path, os.path.join(datadir, "ns.err")])
        self.processes.append(proc)
        return proc, naming_url("127.0.0.1", port)

    # ---- blobstored ----------------------------------------------------------
    def start_daemon(self, name, store, tier=None, extra=(), timeout=60, store_dir=None, naming=None,
                     preexec_fn=None, binary=None):
        """Starts blobstored --name NAME --store STORE and waits for its ready
        line. `store` is "file" (a new directory under the test's root, or
        `store_dir`), "memory:SIZE", or any --store value. `preexec_fn` runs
        in the child before the exec (e.g. to lower a resource limit).
        `binary`: another build's blobstored (benchmarks' before/after)."""
        daemon_path = binary or program("blobstore/blobstored")
        if store == "file":
            store_dir = store_dir or self.path(f"store-{name}")
            store = f"file:{store_dir}"
        elif store.startswith("file:"):
            store_dir = store[len("file:"):]
        argv = blobstored_argv(daemon_path, name, store, naming or self.naming, tier=tier, extra=extra)
        n = sum(1 for p in self.processes if p.name.startswith(f"blobstored {name}"))
        err_path = self.path(f"blobstored-{name}-{n}.err")
        out_path = self.path(f"blobstored-{name}-{n}.out")
        with open(err_path, "wb") as err:
            popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                     env=self.env, preexec_fn=preexec_fn)
        daemon = Daemon(f"blobstored {name}#{n}", popen, [err_path, out_path], out_path, argv, store_dir)
        daemon.spec = dict(name=name, store=store, tier=tier, extra=tuple(extra), naming=naming,
                           preexec_fn=preexec_fn)
        self.processes.append(daemon)
        line = daemon.wait_ready(READY, timeout)
        check_equal(daemon.ready.get("name"), name, "name in the ready line")
        check(daemon.ready.get("data", "").startswith("127.0.0.1:"),
              f"data address of the ready line is not on 127.0.0.1: {line!r}")
        check(daemon.data[1] != 0, f"the ready line shows port 0, not the actual port: {line!r}")
        step(f"{daemon.name} pid {daemon.pid}: {line}")
        return daemon

    def restart_daemon(self, daemon, timeout=60):
        """Starts a new blobstored with the arguments of `daemon` (same directory)."""
        return self.start_daemon(**daemon.spec, timeout=timeout)

    # ---- clients -------------------------------------------------------------
    def blob(self, *args, store=None, json_out=True, timeout=300, stdin=None, binary=False, naming=None):
        """Runs `blob [--naming URL] [--store S] [--json] ARGS...` (cli.run_blob)."""
        return run_blob(args, naming or self.naming, self.env, store=store, json_out=json_out, timeout=timeout,
                        stdin=stdin, binary=binary, blob=self.blob_program)

    def pull_checksum(self, name, store, out, algorithm="crc32c"):
        """Pulls `name` over TCP (--no-local) into `out`; the checksum of what came."""
        self.blob("--no-local", "pull", name, out, store=store).ok()
        return checksum_file(out, algorithm)

    def run(self, argv, timeout=300):
        """Runs a program to completion: (exit code, stdout, stderr)."""
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=timeout, env=self.env)
        except subprocess.TimeoutExpired as e:
            raise TestFailure(f"`{' '.join(argv)}` did not finish within {timeout} s "
                              f"(stderr so far: {e.stderr!r})") from None
        return r.returncode, r.stdout, r.stderr
