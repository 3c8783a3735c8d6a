"""DICOM peers and objects of the tests/test_dicom_*.py system tests:
blob-dicomd started with --port 0 (a free port, which its ready line names;
ready means answering), DCMTK's echoscu/storescu/findscu/getscu, pynetdicom (PyPI, in a
venv of the build tree, made once under a lock; skipped when PyPI is
unreachable), and the objects of tests/tools/dicom_objects.py (pydicom)."""

import fcntl
import glob
import json
import os
import pwd
import shutil
import socket
import struct
import subprocess

from . import processes
from .checks import TestFailure, TestSkipped, build_dir, check, check_equal, program, src_dir, step, wait_for
from .ports import free_port

SYSTEM_PYTHON = "/usr/bin/python3"
PYNETDICOM = "pynetdicom==3.0.4"
# The PyPI peers of the DICOM tests, installed together in the one venv:
# pynetdicom (DIMSE), dicomweb-client (the reference DICOMweb client).
VENV_PACKAGES = [PYNETDICOM, "dicomweb-client==0.61.2"]
AE = "BLOBGW"


def tool(name):
    return os.path.join(src_dir(), "tests", "tools", name)


def make_objects(c, *args):
    code, out, err = c.run([SYSTEM_PYTHON, tool("dicom_objects.py"), *args])
    if code != 0 and "No module named 'pydicom'" in err:
        raise TestSkipped("pydicom is missing: install python3-pydicom (scripts/install-deps)")
    check(code == 0, f"dicom_objects.py {' '.join(args)} exited {code}: {err[-2000:]}")
    return json.loads(out)


def pynetdicom_python():
    """A venv over /usr/bin/python3 with VENV_PACKAGES, made once per build
    tree under a lock (again when the list changed: the marker holds it);
    skips when PyPI is unreachable."""
    venv = os.path.join(build_dir(), "tests", "dicom-venv")
    python = os.path.join(venv, "bin", "python")
    marker = os.path.join(venv, ".complete")
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    with open(venv + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        wanted = "\n".join(VENV_PACKAGES)
        if os.path.exists(marker) and open(marker).read() == wanted:
            return python
        try:
            socket.create_connection(("pypi.org", 443), timeout=5).close()
        except OSError:
            raise TestSkipped(f"PyPI is unreachable: cannot install {', '.join(VENV_PACKAGES)}") from None
        step(f"creating a venv with {', '.join(VENV_PACKAGES)} in {venv} (once per build tree)")
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", venv], check=True, timeout=300)
        pip = subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--timeout", "30",
                              *VENV_PACKAGES], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        if pip.returncode != 0:
            raise TestFailure(f"pip install {' '.join(VENV_PACKAGES)} failed:\n{pip.stdout[-4000:]}")
        with open(marker, "w") as f:
            f.write(wanted)
    return python


def data_set(data):
    """The bytes after the preamble and the meta group (its group length)."""
    check(data[128:132] == b"DICM", "not a DICOM file (no DICM at 128)")
    check(data[132:138] == b"\x02\x00\x00\x00UL", "the meta group does not start with its group length")
    return data[144 + int.from_bytes(data[140:144], "little"):]


def pdu_item(kind, payload):
    """An item of an A-ASSOCIATE PDU (PS3.8 9.3.2): type, reserved, length, payload."""
    return struct.pack(">BBH", kind, 0, len(payload)) + payload


def associate_rq(called=AE, calling="HOSTILE", abstract_syntax="1.2.840.10008.1.1",
                 transfer_syntax="1.2.840.10008.1.2", max_pdu=16384):
    """An A-ASSOCIATE-RQ proposing one presentation context (ID 1): by default Verification in implicit VR
    little endian."""
    body = struct.pack(">HH", 1, 0) + called.ljust(16).encode() + calling.ljust(16).encode() + bytes(32)
    body += pdu_item(0x10, b"1.2.840.10008.3.1.1.1")
    body += pdu_item(0x20, bytes([1, 0, 0, 0]) + pdu_item(0x30, abstract_syntax.encode()) +
                     pdu_item(0x40, transfer_syntax.encode()))
    body += pdu_item(0x50, pdu_item(0x51, struct.pack(">I", max_pdu)) + pdu_item(0x52, b"1.2.826.0.1.3680043.9.7433.1"))
    return struct.pack(">BBI", 1, 0, len(body)) + body


def read_pdu(s, limit=10):
    """The next PDU the peer sends on socket `s`: (type, body); fails when it closes the connection first."""
    s.settimeout(limit)
    head = b""
    while len(head) < 6:
        chunk = s.recv(6 - len(head))
        check(chunk, f"the gateway closed the connection after {len(head)} bytes of a PDU header")
        head += chunk
    length = struct.unpack(">I", head[2:6])[0]
    body = b""
    while len(body) < length:
        chunk = s.recv(length - len(body))
        check(chunk, "the gateway closed the connection inside a PDU")
        body += chunk
    return head[0], body


class Gateway:
    """blob-dicomd with an index: `index_url` (default sqlite:<name>.sqlite in the workspace; self.index is then
    that file; "": none)."""

    def __init__(self, c, store, name, extra=(), index_url=None, binary=None, spool=None):
        """index_url "": no --index. binary: another build's blob-dicomd (a benchmark's baseline). spool: its
        --spool (default the workspace)."""
        self.c = c
        self.index = c.path(f"{name}.sqlite")
        self.index_url = f"sqlite:{self.index}" if index_url is None else index_url
        argv = [binary or program("gateway/blob-dicomd"), "--aetitle", AE, "--port", "0", "--store", store,
                "--naming", c.naming, "--spool", spool or c.root, "-v", *extra]
        if self.index_url:
            argv += ["--index", self.index_url]
        self.err = c.path(f"{name}.err")
        self.proc = processes.start_service(name, argv, "blob-dicomd ready", 60, env=c.env, out_path=c.path(f"{name}.out"),
                                          err_path=self.err, track=c.processes)
        port = self.proc.ready.get("port", "")
        check(port.isdigit() and port != "0",
              f"{name}'s ready line does not name the port it listens on: {self.proc.ready_line!r}")
        self.port = int(port)
        self.http = self.proc.ready.get("http", "")  # with --http-address: http(s)://HOST:PORT/dicom-web
        self.echo()  # the ready line comes once DCMTK listens: no waiting for the first answer
        step(f"{name} pid {self.proc.pid} on port {self.port}: {self.proc.ready_line}")

    def echo(self, expect=0):
        code, _, err = self.c.run(["echoscu", "-aet", "MODALITY", "-aec", AE, "127.0.0.1", str(self.port)], timeout=60)
        if expect is not None:
            check_equal(code, expect, f"echoscu exit code ({err.strip()!r})")
        return code

    def storescu(self, *paths, refused=False):
        """refused: an instance is expected to be refused (storescu then exits non-zero)."""
        argv = ["storescu", "-aet", "MODALITY", "-aec", AE, "127.0.0.1", str(self.port), *paths]
        code, out, err = self.c.run(argv, timeout=300)
        check(code != 0 if refused else code == 0,
              f"storescu exited {code} ({'a refusal expected' if refused else 'success expected'}): {err[-2000:]}")
        return err

    def pynetdicom(self, python, *args):
        code, out, err = self.c.run([python, tool("pynetdicom_peer.py"), args[0], "127.0.0.1", str(self.port), AE,
                                     *args[1:]], timeout=300)
        check(code == 0, f"pynetdicom_peer {args[0]} exited {code}: {err[-2000:]}")
        return [json.loads(line) for line in out.splitlines()]

    def findscu(self, model, level, *keys, expect=0):
        """C-FIND with DCMTK's findscu (-P patient root, -S study root); the
        response identifiers, each {keyword: value} (by dcmdump)."""
        out_dir = self.c.path(f"findscu-{next_counter()}")
        os.makedirs(out_dir)
        argv = ["findscu", "-v", "-aet", "VIEWER", "-aec", AE, {"patient": "-P", "study": "-S"}[model], "-X", "-od", out_dir,
                "-k", f"QueryRetrieveLevel={level}"]
        for key in keys:
            argv += ["-k", key]
        code, out, err = self.c.run(argv + ["127.0.0.1", str(self.port)], timeout=120)
        check_equal(code, expect, f"findscu exit code ({err[-2000:]!r})")
        return [dump_keys(self.c, os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir))], err

    def getscu(self, model, level, out_dir, *keys):
        """C-GET with DCMTK's getscu into out_dir; returns its exit code and stderr."""
        os.makedirs(out_dir, exist_ok=True)
        argv = ["getscu", "-aet", "VIEWER", "-aec", AE, {"patient": "-P", "study": "-S"}[model], "-od", out_dir,
                "-k", f"QueryRetrieveLevel={level}"]
        for key in keys:
            argv += ["-k", key]
        code, out, err = self.c.run(argv + ["127.0.0.1", str(self.port)], timeout=300)
        return code, err

    def log(self):
        with open(self.err, encoding="utf-8", errors="replace") as f:
            return f.read()


def postgresql_bin():
    """Debian's PostgreSQL server programs (the newest installed), or skip."""
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if not versions:
        raise TestSkipped("PostgreSQL's server is missing: install postgresql (scripts/install-deps)")
    return os.path.dirname(versions[-1])


def start_postgresql(c, databases):
    """A throwaway PostgreSQL server on 127.0.0.1 (initdb in the workspace, C locale, trust for the local user
    `blob`), started by the test and stopped by PID at its end (as the user postgres when the test runs as
    root: the server refuses root). Creates `databases`; returns {database: postgresql://blob@127.0.0.1:PORT/DB}."""
    bindir = postgresql_bin()
    data, sockets = c.path("pg-data"), c.path("pg-sockets")
    os.makedirs(sockets)
    prefix = []
    if os.geteuid() == 0:
        os.chmod(c.root, 0o755)
        pw = pwd.getpwnam("postgres")
        os.makedirs(data, mode=0o700)
        for d in (data, sockets):
            os.chown(d, pw.pw_uid, pw.pw_gid)
        prefix = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--init-groups"]
    code, _, err = c.run(prefix + [os.path.join(bindir, "initdb"), "-D", data, "-U", "blob", "-A", "trust",
                                   "--locale=C", "-E", "UTF8", "-N"], timeout=120)
    check(code == 0, f"initdb exited {code}: {err[-2000:]}")
    # postgres has no port 0 mode: a free port another process takes before
    # postgres binds it is tried again with the next one.
    for attempt in range(1, 4):
        port = free_port()
        log = c.path(f"postgresql-{attempt}.err")
        with open(log, "wb") as err_file:
            proc = c.spawn("postgres", prefix + [os.path.join(bindir, "postgres"), "-D", data, "-p", str(port), "-k",
                                                 sockets, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
                           stdin=subprocess.DEVNULL, stdout=err_file, stderr=subprocess.STDOUT)
        proc.log_paths.append(log)
        isready = [os.path.join(bindir, "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-U", "blob"]
        wait_for(lambda: c.run(isready, timeout=10)[0] == 0 or not proc.running(), 60,
                 "PostgreSQL accepting connections")
        if proc.running() or "Address already in use" not in open(log).read():
            break
        step(f"port {port} was taken before postgres bound it (attempt {attempt} of 3)")
    check(proc.running(), f"postgres exited: {open(log).read()[-2000:]}")
    step(f"PostgreSQL pid {proc.pid} on 127.0.0.1:{port}")
    urls = {}
    for db in databases:
        code, _, err = c.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "blob", "-d", "postgres", "-q",
                              "-c", f"CREATE DATABASE {db}"], timeout=60)
        check(code == 0, f"CREATE DATABASE {db}: {err}")
        urls[db] = f"postgresql://blob@127.0.0.1:{port}/{db}"
    return urls


def postgresql_url(c, database="dicom"):
    """The URL of `database` on a throwaway PostgreSQL server (start_postgresql), or None when PostgreSQL is
    missing (a step says so: the test's PostgreSQL part is skipped)."""
    try:
        return start_postgresql(c, [database])[database]
    except TestSkipped as e:
        step(f"PostgreSQL part skipped: {e}")
        return None


_counter = [0]


def next_counter():
    _counter[0] += 1
    return _counter[0]


def dump_keys(c, path, to_utf8=False):
    """{keyword: value} of a DICOM file's data set, by DCMTK's dcmdump
    (multiple values joined by backslashes, as DICOM writes them); to_utf8:
    the text converted to UTF-8 from the file's Specific Character Set
    (which then reads ISO_IR 192)."""
    code, out, err = c.run(["dcmdump", "-q", "+L"] + (["+U8"] if to_utf8 else []) + [path])
    check(code == 0, f"dcmdump {path} exited {code}: {err}")
    keys = {}
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("(") or "#" not in line or line.startswith("(0002,"):
            continue
        keyword = line.rsplit(" ", 1)[-1]
        start, end = line.find("["), line.rfind("]", 0, line.rfind("#"))
        keys[keyword] = line[start + 1:end] if 0 <= start < end else ""
    return keys


def check_pulled(c, entry, what):
    name = entry["sop"] + ".dcm"
    r = c.blob("pull", name, "-", binary=True, json_out=False)
    r.ok()
    with open(entry["path"], "rb") as f:
        source = f.read()
    check(data_set(r.stdout) == data_set(source),
          f"{what}: the data set of Blob {name} ({len(data_set(r.stdout))} bytes) differs from the one sent "
          f"({len(data_set(source))} bytes)")


