"""CephCluster: a throwaway single-node Ceph cluster (Debian's ceph 16,
Pacific) on 127.0.0.1 for the tests of a RADOS-backed store — one mon on two
ephemeral ports (msgr2 and v1), one mgr (Pacific's PG states come from it),
one OSD (memstore, or bluestore on a sparse file), no authentication, pools
of size 1.

Everything lies in the Workspace: configuration, mon/mgr/OSD data, pid
files, admin sockets, logs, the mon's cluster log and crash reports; nothing
is read from or written to /etc/ceph, /var/lib/ceph, /var/run/ceph or
/var/log/ceph.

The daemons run in the foreground (`-f`) as children of the test, so their
PIDs are known from the start and they are reaped; each still writes its
pid file, checked to name that PID. They are stopped by PID, OSD first (it
tells the mon that it goes down and waits for the answer), then mgr, then
mon: SIGTERM, SIGKILL after a deadline, then checked gone. A daemon gets
SIGKILL when the test dies (PR_SET_PDEATHSIG): none outlives a killed test.

Skipped (TestSkipped, exit 77) only when the Ceph programs are not
installed (scripts/install-deps); anything else is a failure, and the
Workspace shows every daemon's log."""

import ctypes
import json
import os
import shutil
import signal
import subprocess
import time
import uuid

from .checks import MiB, TestFailure, TestSkipped, check_equal, step, wait_for
from .ports import free_port, tcp_rows
from .processes import Process, proc_status

PROGRAMS = ("ceph-mon", "ceph-mgr", "ceph-osd", "monmaptool", "ceph", "rados")
PACKAGES = "ceph-mon ceph-mgr ceph-osd ceph-common"
OBJECTSTORES = ("memstore", "bluestore")
MGR_MODULE_DIR = "/usr/share/ceph/mgr"
# Pacific's always-on mgr modules: disabling one of them is a HEALTH_ERR
# (MGR_MODULE_ERROR). Every other module is not loaded (the mgr's RSS: 150
# instead of 300 MB; none of them is needed for PG states).
ALWAYS_ON_MGR_MODULES = {"balancer", "crash", "devicehealth", "orchestrator", "pg_autoscaler", "progress",
                         "rbd_support", "status", "telemetry", "volumes"}
PR_SET_PDEATHSIG = 1
CLI_TIMEOUT = 60  # seconds for one ceph/rados command (--connect-timeout is less)


def ceph_programs():
    """The paths of the Ceph programs; TestSkipped naming those missing."""
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        raise TestSkipped(f"Ceph is not installed: {', '.join(missing)} not found on PATH "
                          f"(Debian packages {PACKAGES}; scripts/install-deps)")
    return {p: shutil.which(p) for p in PROGRAMS}


def _listeners():
    """(port, socket inode) of every TCP socket in LISTEN state."""
    for fields in tcp_rows():
        if fields[3] == "0A":
            yield int(fields[1].rsplit(":", 1)[1], 16), fields[9]


def listening_sockets(pids):
    """{socket inode: port} of the TCP sockets on which the processes `pids`
    listen: their descriptors (/proc/PID/fd) among the LISTEN entries of
    /proc/net/tcp and tcp6."""
    inodes = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    return {inode: port for port, inode in _listeners() if inode in inodes}


def listening(ports=(), sockets=()):
    """Those of `ports` on which any socket listens, and the ports of those
    `sockets` (inodes) still listening, sorted."""
    found = set()
    for port, inode in _listeners():
        if port in ports or inode in sockets:
            found.add(port)
    return sorted(found)


def _die_with_parent():
    """In the child before exec: SIGKILL when the test (the thread that
    started it) dies, so that no daemon outlives a killed test."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class CephDaemon(Process):
    """ceph-mon, ceph-mgr or ceph-osd in the foreground; `pid_file` is where
    it writes its PID."""

    def __init__(self, name, popen, log_paths, pid_file):
        super().__init__(name, popen, log_paths)
        self.pid_file = pid_file


class CephCluster:
    """`with CephCluster(workspace) as ceph:` starts the cluster and waits
    for HEALTH_OK with the OSD up and every PG active+clean (`ready_seconds`
    from the first command); leaving the block stops every daemon by PID."""

    def __init__(self, workspace, objectstore="memstore", ready_timeout=90, stop_timeout=20,
                 memstore_bytes=1024 * MiB):
        if objectstore not in OBJECTSTORES:
            raise ValueError(f"objectstore {objectstore!r} (allowed: {', '.join(OBJECTSTORES)})")
        self.ws = workspace
        self.objectstore = objectstore
        self.memstore_bytes = memstore_bytes  # the OSD's capacity with memstore (it holds it in RAM)
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.dir = workspace.path("ceph")
        self.conf_path = os.path.join(self.dir, "ceph.conf")
        self.fsid = str(uuid.uuid4())
        self.env = dict(workspace.env, CEPH_CONF=self.conf_path)
        for variable in ("CEPH_ARGS", "CEPH_KEYRING"):
            self.env.pop(variable, None)
        self.programs = None
        self.daemons = []
        self.mon_ports = ()        # (msgr2, v1)
        self.sockets = {}          # {socket inode: port} of every listening socket once ready
        self.ready_seconds = None
        self.exit_codes = {}       # daemon name -> exit status (negative: signal), after stop()
        self.last_status = None    # `ceph status` JSON of the last poll

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    # ---- life cycle --------------------------------------------------------
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop(quiet=True)
            raise
        return self

    def __exit__(self, exc_type, _exc, _tb):
        self.stop(quiet=exc_type is not None)  # an error of the block is the one reported
        return False

    def start(self, attempts=3):
        """mon (on other ports when one was taken meanwhile), mgr, OSD; then
        waits until the cluster is ready."""
        self.programs = ceph_programs()
        t0 = time.monotonic()
        for sub in ("run", "log", "crash"):
            os.makedirs(self.path(sub), exist_ok=True)
        for attempt in range(1, attempts + 1):
            self._write_conf(free_port(), free_port())
            if self._start_mon():
                break
            step(f"ceph-mon.a did not listen on {self.mon_ports} (attempt {attempt} of {attempts})")
        else:
            raise TestFailure(f"ceph-mon did not start in {attempts} attempts; see its log")
        self._spawn("mgr", "x", self.path("mgr-x"))
        self._start_osd()
        self._wait_ready()
        for daemon in self.daemons:
            self._check_pid_file(daemon)
        self.sockets = listening_sockets(self.pids())
        self.ready_seconds = time.monotonic() - t0
        step(f"Ceph ({self.objectstore}) ready in {self.ready_seconds:.1f} s: "
             + ", ".join(f"{d.name} pid {d.pid}" for d in self.daemons)
             + f"; mon on 127.0.0.1:{self.mon_ports[0]} (v2) and :{self.mon_ports[1]} (v1)")

    def stop(self, quiet=False):
        """Stops every running daemon by PID in the reverse order of their
        start (SIGTERM; SIGKILL after stop_timeout s) and checks each is gone
        (TestFailure otherwise, unless `quiet`, which only prints)."""
        for daemon in reversed(self.daemons):
            if daemon.name in self.exit_codes:
                continue
            self.exit_codes[daemon.name] = daemon.stop(timeout=self.stop_timeout)
        alive = [f"{d.name} (pid {d.pid})" for d in self.daemons if d.running() or os.path.exists(f"/proc/{d.pid}")]
        if alive:
            message = "Ceph daemons still running after SIGKILL: " + ", ".join(alive)
            if not quiet:
                raise TestFailure(message)
            print(message, flush=True)

    def pids(self):
        return [d.pid for d in self.daemons]

    @property
    def ports(self):
        """Every port a daemon listened on once the cluster was ready."""
        return set(self.sockets.values())

    def rss_kib(self):
        """The resident set size (VmRSS, KiB) of each running daemon, by name."""
        return {d.name: proc_status(d.pid, "VmRSS") for d in self.daemons if d.running()}

    # ---- commands ----------------------------------------------------------
    def run(self, argv, timeout=CLI_TIMEOUT, binary=False):
        """Runs `argv` to completion in the cluster's environment:
        CompletedProcess (stdout bytes with `binary`, else text)."""
        try:
            return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                                  env=self.env, text=not binary)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"`{' '.join(argv)}` did not finish within {timeout} s") from None

    def _run_ok(self, argv, timeout=CLI_TIMEOUT):
        r = self.run(argv, timeout)
        if r.returncode != 0:
            raise TestFailure(f"`{' '.join(argv)}` exited {r.returncode}: {r.stderr.strip()}")
        return r.stdout

    def ceph(self, *args, timeout=CLI_TIMEOUT):
        """`ceph -c CONF ARGS...`: its output; TestFailure when it fails."""
        return self._run_ok(self._ceph_argv(args, timeout), timeout)

    def _ceph_argv(self, args, timeout):
        return [self.programs["ceph"], "-c", self.conf_path, "--connect-timeout", str(max(1, timeout // 2))] + \
            [str(a) for a in args]

    def ceph_json(self, *args, timeout=CLI_TIMEOUT):
        """`ceph ARGS... --format json`, parsed; None when it failed."""
        r = self.run(self._ceph_argv(args + ("--format", "json"), timeout), timeout)
        if r.returncode != 0:
            return None
        try:
            return json.loads(r.stdout)
        except ValueError:
            return None

    def rados(self, *args, pool=None, timeout=CLI_TIMEOUT, binary=False):
        """`rados -c CONF [-p POOL] ARGS...`: the CompletedProcess, whatever
        its exit status (the caller checks it)."""
        argv = [self.programs["rados"], "-c", self.conf_path] + (["-p", pool] if pool else [])
        return self.run(argv + [str(a) for a in args], timeout, binary)

    def read_range(self, pool, name, offset, length, timeout=CLI_TIMEOUT):
        """`length` bytes of object `name` from `offset` through librados
        (the `rados` CLI has no range read): Ioctx.read() of python3-rados,
        in the Python the `ceph` CLI runs on, as a subprocess."""
        with open(self.programs["ceph"], "rb") as f:
            python = f.readline().decode().lstrip("#!").strip().split()[0]
        script = ("import rados, sys\n"
                  "c = rados.Rados(conffile=sys.argv[1], conf={'rados_osd_op_timeout': '30',"
                  " 'rados_mon_op_timeout': '30'})\n"
                  "c.connect(timeout=30)\n"
                  "io = c.open_ioctx(sys.argv[2])\n"
                  "sys.stdout.buffer.write(io.read(sys.argv[3], int(sys.argv[5]), int(sys.argv[4])))\n"
                  "io.close()\n"
                  "c.shutdown()\n")
        argv = [python, "-c", script, self.conf_path, pool, name, str(offset), str(length)]
        r = self.run(argv, timeout, binary=True)
        if r.returncode != 0:
            raise TestFailure(f"librados read of {pool}/{name} [{offset}, +{length}) exited {r.returncode}: "
                              f"{r.stderr.decode('utf-8', 'replace').strip()}")
        return r.stdout

    def create_pool(self, name, pg_num=8, timeout=60):
        """A replicated pool of size 1 with `pg_num` PGs (no autoscaling),
        application "rados"; waits until its PGs are active+clean."""
        self.ceph("osd", "pool", "create", name, pg_num, pg_num)
        self.ceph("osd", "pool", "application", "enable", name, "rados")

        def clean():
            stats = self.ceph_json("pg", "ls-by-pool", name)
            pgs = stats.get("pg_stats", []) if isinstance(stats, dict) else stats or []
            states = [pg.get("state") for pg in pgs]
            return len(states) == pg_num and all(s == "active+clean" for s in states)

        t0 = time.monotonic()
        wait_for(clean, timeout, f"the {pg_num} PGs of pool {name} active+clean", interval=0.2)
        step(f"pool {name}: {pg_num} PGs active+clean in {time.monotonic() - t0:.1f} s")

    # ---- starting ----------------------------------------------------------
    def _write_conf(self, v2_port, v1_port):
        self.mon_ports = (v2_port, v1_port)
        d = self.dir
        disabled = sorted(m for m in os.listdir(MGR_MODULE_DIR)
                          if os.path.isdir(os.path.join(MGR_MODULE_DIR, m)) and m not in ALWAYS_ON_MGR_MODULES) \
            if os.path.isdir(MGR_MODULE_DIR) else []
        conf = f"""[global]
fsid = {self.fsid}
mon_host = [v2:127.0.0.1:{v2_port},v1:127.0.0.1:{v1_port}]
public_addr = 127.0.0.1
ms_bind_ipv6 = false
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
# (Pacific warns while the mon allows the old reclaim, whatever the auth)
auth_allow_insecure_global_id_reclaim = false
keyring = {d}/keyring
run_dir = {d}/run
pid_file = {d}/run/$name.pid
admin_socket = {d}/run/$name.asok
log_file = {d}/log/$name.log
mon_cluster_log_file = default={d}/log/$cluster.$channel.log cluster={d}/log/$cluster.log
crash_dir = {d}/crash
mon_data = {d}/mon-$id
mgr_data = {d}/mgr-$id
osd_data = {d}/osd-$id
# one OSD: pools of size 1 without a warning, placement across OSDs only
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
# the workspace's file system may be more than 70 % full
mon_data_avail_warn = 1
mgr_stats_period = 1
mgr_initial_modules =
mgr_disabled_modules = {",".join(disabled)}
osd_objectstore = {self.objectstore}
memstore_device_bytes = {self.memstore_bytes}
bluestore_block_size = {10 * 1024 * MiB}
bluestore_cache_autotune = false
bluestore_cache_size = {64 * MiB}

[mon]
# a mon port taken since free_port(): give up after 2 s (start() takes others)
ms_bind_retry_delay = 1

[client]
# many short-lived ceph/rados runs: no admin socket each, one log
admin_socket =
log_file = {d}/log/client.log
"""
        with open(self.conf_path, "w") as f:
            f.write(conf)

    def _spawn(self, kind, daemon_id, data_dir):
        """ceph-KIND -f -i ID, stdout and stderr to log/KIND.ID.stderr."""
        name = f"{kind}.{daemon_id}"
        os.makedirs(data_dir, exist_ok=True)
        err_path = self.path("log", f"{name}.stderr")
        argv = [self.programs[f"ceph-{kind}"], "-f", "-c", self.conf_path, "-i", daemon_id]
        with open(err_path, "ab") as err:
            popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT,
                                     env=self.env, preexec_fn=_die_with_parent)
        daemon = CephDaemon(f"ceph-{name}", popen, [self.path("log", f"{name}.log"), err_path],
                            self.path("run", f"{name}.pid"))
        self.daemons.append(daemon)
        self.ws.processes.append(daemon)  # stopped by the Workspace too, and its logs shown on failure
        return daemon

    def _start_mon(self):
        """A new mon store and ceph-mon; True once it listens on both ports,
        False when it exited first (a port taken since free_port())."""
        mon_dir = self.path("mon-a")
        shutil.rmtree(mon_dir, ignore_errors=True)
        monmap = self.path("monmap")
        v2, v1 = self.mon_ports
        self._run_ok([self.programs["monmaptool"], "--create", "--clobber", "--fsid", self.fsid,
                      "--addv", "a", f"[v2:127.0.0.1:{v2},v1:127.0.0.1:{v1}]", monmap])
        self._run_ok([self.programs["ceph-mon"], "-c", self.conf_path, "-i", "a", "--mkfs", "--monmap", monmap])
        mon = self._spawn("mon", "a", mon_dir)

        def state():
            if not mon.running():
                return "exited"
            return "up" if set(self.mon_ports) <= set(listening_sockets([mon.pid]).values()) else None

        if wait_for(state, 30, f"ceph-mon.a listening on 127.0.0.1:{v2} and :{v1}", interval=0.05) == "up":
            return True
        self.daemons.remove(mon)
        return False

    def _start_osd(self):
        """`ceph osd new UUID` (the mon answers the id), the OSD's store
        (--mkfs), ceph-osd."""
        osd_uuid = str(uuid.uuid4())
        osd_id = self.ceph("osd", "new", osd_uuid).strip()
        if not osd_id.isdigit():
            raise TestFailure(f"`ceph osd new {osd_uuid}` answered {osd_id!r}, not an OSD id")
        data_dir = self.path(f"osd-{osd_id}")
        os.makedirs(data_dir, exist_ok=True)
        self._run_ok([self.programs["ceph-osd"], "-c", self.conf_path, "-i", osd_id, "--mkfs",
                      "--osd-uuid", osd_uuid], timeout=120)
        self._spawn("osd", osd_id, data_dir)

    def _ready(self):
        """The cluster is HEALTH_OK, its OSD up and in, its mgr active and
        every PG it knows active+clean."""
        for daemon in self.daemons:
            if not daemon.running():
                raise TestFailure(f"{daemon.name} (pid {daemon.pid}) exited with {daemon.popen.returncode} "
                                  f"while the cluster was starting")
        status = self.ceph_json("status", timeout=20)
        if status is None:
            return False
        self.last_status = status
        osds = status.get("osdmap", {})
        pgs = status.get("pgmap", {})
        clean = sum(s["count"] for s in pgs.get("pgs_by_state", []) if s.get("state_name") == "active+clean")
        return (status.get("health", {}).get("status") == "HEALTH_OK"
                and osds.get("num_osds") == osds.get("num_up_osds") == osds.get("num_in_osds") == 1
                and status.get("mgrmap", {}).get("available") is True
                and clean == pgs.get("num_pgs", 0))

    def _wait_ready(self):
        try:
            wait_for(self._ready, self.ready_timeout, "HEALTH_OK with the OSD up and every PG active+clean",
                     interval=0.2)
        except TestFailure as e:
            detail = self.ceph_json("health", "detail", timeout=20)
            raise TestFailure(f"{e}; last `ceph status`: {json.dumps(self.last_status)}; "
                              f"`ceph health detail`: {json.dumps(detail)}") from None

    def _check_pid_file(self, daemon):
        try:
            with open(daemon.pid_file) as f:
                text = f.read().strip()
        except OSError as e:
            raise TestFailure(f"{daemon.name} (pid {daemon.pid}) wrote no pid file {daemon.pid_file}: "
                              f"{e.strerror}") from None
        check_equal(text, str(daemon.pid), f"pid file {daemon.pid_file} of {daemon.name}")
