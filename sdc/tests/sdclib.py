"""Harness of the SDC system tests: sdc-provider, sdc-get and the sdc11073
peers (a Python SDC stack from PyPI) as real processes on 127.0.0.1 with
ephemeral ports, in one temporary directory.

Builds on tests/harness (Workspace, Service and its ready line, step, check,
wait_for). The sdc11073 peers run in a venv in the build tree
(sdc/tests/venv) with sdc11073==3.0.0, created on first use under a lock;
when PyPI is unreachable the tests that need it are skipped (exit 77) with a
message. SDC11073_PYTHON may name the interpreter of an existing environment
that has sdc11073 3.0.0.
"""

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("BS_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                                "tests"))
from harness import (SKIP, Process, TestFailure, TestSkipped, Workspace, build_dir, check,  # noqa: E402,F401
                     check_equal, program, run, src_dir, start_service, step, wait_for)

SDC11073 = "sdc11073==3.0.0"


def mdib_file(name):
    """An MDIB shipped with the tests (sdc/tests/data)."""
    return os.path.join(src_dir(), "sdc", "tests", "data", name)


def peer_script(name):
    return os.path.join(src_dir(), "sdc", "tests", "peers", name)


def _pypi_reachable(timeout=5):
    for host in ("pypi.org", "files.pythonhosted.org"):
        try:
            with socket.create_connection((host, 443), timeout=timeout):
                pass
        except OSError:
            return False
    return True


def sdc11073_python():
    """The interpreter of an environment with sdc11073 3.0.0: $SDC11073_PYTHON,
    or a venv created once in the build tree. Skips when PyPI is unreachable."""
    given = os.environ.get("SDC11073_PYTHON")
    if given:
        return given
    venv = os.path.join(build_dir(), "sdc", "tests", "venv")
    python = os.path.join(venv, "bin", "python")
    marker = os.path.join(venv, ".complete")
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    with open(venv + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # tests run in parallel: one creates, the others wait
        if os.path.exists(marker):
            return python
        if not _pypi_reachable():
            raise TestSkipped(f"PyPI is unreachable: cannot install {SDC11073} into a venv for the interop peers")
        step(f"creating a venv with {SDC11073} in {venv} (once per build tree)")
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
        pip = subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q",
                              "--timeout", "30", "--retries", "2", SDC11073],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        if pip.returncode != 0:
            if not _pypi_reachable():
                raise TestSkipped(f"PyPI became unreachable while installing {SDC11073}:\n{pip.stdout[-2000:]}")
            raise TestFailure(f"pip install {SDC11073} failed:\n{pip.stdout[-4000:]}")
        open(marker, "w").close()
    return python


def biceps_schema_dir():
    """The BICEPS XSDs shipped in the sdc11073 wheel of the peers' venv
    (skips like sdc11073_python())."""
    python = sdc11073_python()
    code = "import os, sdc11073; print(os.path.join(os.path.dirname(sdc11073.__file__), 'xsd'))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout.strip()
    if not os.path.isfile(os.path.join(out, "BICEPS_MessageModel.xsd")):
        raise TestFailure(f"no BICEPS_MessageModel.xsd in {out}")
    return out


class SdcEnv(Workspace):
    """The processes and files of one test; everything is stopped by PID."""

    stop_timeout = 30

    def __init__(self, test_name):
        super().__init__(test_name)
        self.env["PYTHONUNBUFFERED"] = "1"

    def start(self, name, argv, ready_word, timeout=60):
        """Starts `argv`, pumps its stdout to a log and waits (deadline
        `timeout`) for a line starting with `ready_word`."""
        proc = start_service(name, argv, ready_word, timeout, env=self.env, out_path=self.path(f"{name}.out"),
                             err_path=self.path(f"{name}.err"), text=True, start_new_session=True,
                             track=self.processes)
        step(f"{name} ready (pid {proc.pid}): {proc.ready_line}")
        return proc

    def start_provider(self, mdib, *extra, name="sdc-provider"):
        return self.start(name, [program("sdc/sdc-provider"), "--mdib", mdib, "--address", "127.0.0.1:0", *extra],
                          "sdc-provider ready")

    def run(self, argv, timeout=120, expect=0):
        """Runs a command to completion; checks its exit code; returns stdout."""
        result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env, text=True,
                                timeout=timeout)
        if expect is not None and result.returncode != expect:
            raise TestFailure(f"`{' '.join(argv)}` exited {result.returncode}, expected {expect}\n"
                              f"  stdout: {result.stdout[-3000:]!r}\n  stderr: {result.stderr[-3000:]!r}")
        return result

    def sdc_get(self, *args, expect=0, timeout=60):
        result = self.run([program("sdc/sdc-get"), *args], timeout=timeout, expect=expect)
        return json.loads(result.stdout) if "--json" in args and expect == 0 else result


def main(test):
    """Runs `test(env)` in an SdcEnv; exits 0 (pass), 1 (fail) or 77 (skip)."""
    def setup(name):
        program("sdc/sdc-provider")
        program("sdc/sdc-get")
        return SdcEnv(name)

    run(test, setup)


# --- WS-Eventing helpers (test_sdc_events.py, test_sdc_watch.py) ----------------

WSE = "http://schemas.xmlsoap.org/ws/2004/08/eventing"
ACTION_DIALECT = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01/Action"
REPORTS = "http://standards.ieee.org/downloads/11073/11073-20701-2018/StateEventService/"
EVENT_NS = ('xmlns:s12="http://www.w3.org/2003/05/soap-envelope" xmlns:wsa="http://www.w3.org/2005/08/addressing" '
            f'xmlns:wse="{WSE}"')


def soap(action, body, to="", headers=""):
    import uuid
    to_header = f"<wsa:To>{to}</wsa:To>" if to else ""
    return (f'<?xml version="1.0" encoding="UTF-8"?><s12:Envelope {EVENT_NS}><s12:Header>{to_header}'
            f'<wsa:Action>{action}</wsa:Action><wsa:MessageID>urn:uuid:{uuid.uuid4()}</wsa:MessageID>{headers}'
            f'</s12:Header><s12:Body>{body}</s12:Body></s12:Envelope>')


def soap_post(url, body, timeout=10, context=None):
    """POSTs a SOAP envelope; returns (HTTP status, body text)."""
    import http.client
    import urllib.parse
    u = urllib.parse.urlsplit(url)
    if u.scheme == "https":
        conn = http.client.HTTPSConnection(u.hostname, u.port, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request("POST", u.path, body=body.encode(), headers={"Content-Type": "application/soap+xml"})
        r = conn.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


def subscribe_body(notify_to, end_to=None, actions=(REPORTS + "EpisodicMetricReport",), expires="PT60S",
                   dialect=ACTION_DIALECT, mode=None):
    end = f"<wse:EndTo><wsa:Address>{end_to}</wsa:Address></wse:EndTo>" if end_to else ""
    mode_attr = f' Mode="{mode}"' if mode else ""
    exp = f"<wse:Expires>{expires}</wse:Expires>" if expires else ""
    flt = f'<wse:Filter Dialect="{dialect}">{" ".join(actions)}</wse:Filter>' if actions is not None else ""
    return (f"<wse:Subscribe>{end}<wse:Delivery{mode_attr}><wse:NotifyTo><wsa:Address>{notify_to}</wsa:Address>"
            f"</wse:NotifyTo></wse:Delivery>{exp}{flt}</wse:Subscribe>")


class EventSink:
    """An HTTP/1.1 keep-alive server on 127.0.0.1 that records every POST
    (path, body) and answers 202; `mode="silent"` accepts connections and
    never reads them (a subscriber that never reads), `mode="refuse"` is a
    port nobody listens on."""

    def __init__(self, mode="ok", ssl_context=None):
        import http.server
        import queue
        import socket
        import threading
        self.posts = queue.Queue()
        self.mode = mode
        self._threads = []
        if mode == "refuse":
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
            s.close()  # nothing listens there any more
            self.server = None
            return
        if mode == "silent":
            self.server = socket.socket()
            self.server.bind(("127.0.0.1", 0))
            self.server.listen(16)
            self.port = self.server.getsockname()[1]
            self._held = []

            def accept():
                while True:
                    try:
                        conn, _ = self.server.accept()
                    except OSError:
                        return
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                    self._held.append(conn)
            t = threading.Thread(target=accept, daemon=True)
            t.start()
            return
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length).decode("utf-8", "replace")
                sink.posts.put((self.path, body))
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if ssl_context is not None:
            self.server.socket = ssl_context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        t = threading.Thread(target=self.server.serve_forever, daemon=True)
        t.start()

    def url(self, path="/notify"):
        return f"http://127.0.0.1:{self.port}{path}"

    def next(self, timeout=10, what="a notification"):
        import queue
        try:
            return self.posts.get(timeout=timeout)
        except queue.Empty:
            raise TestFailure(f"no POST arrived within {timeout} s: expected {what}")

    def close(self):
        if self.server is None:
            return
        if self.mode == "silent":
            for c in self._held:
                c.close()
            self.server.close()
        else:
            self.server.shutdown()
            self.server.server_close()


class Watch:
    """`sdc-get watch` as a process; its stdout lines are collected."""

    def __init__(self, environment, *args):
        import threading
        self.proc = subprocess.Popen([program("sdc/sdc-get"), *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=environment)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_watching(self):
        wait_for(lambda: self.lines or self.proc.poll() is not None, 30, "sdc-get watch to subscribe")
        if not self.lines:
            raise TestFailure(f"sdc-get watch exited {self.proc.poll()}: {self.proc.stderr.read()}")
        return json.loads(self.lines[0])

    def finish(self, timeout=30):
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise TestFailure("sdc-get watch did not end within its bound")
        self.reader.join(5)
        return code, self.proc.stderr.read()


def make_pki(directory):
    """Test certificates made with openssl in `directory` (skips without
    openssl): a CA, a provider and a consumer certificate signed by it (both
    serverAuth and clientAuth: SDC participants are servers and clients, SAN
    IP:127.0.0.1), a certificate of the same CA for other names only
    (DNS:wrong.example, IP:10.9.9.9) and a client of another CA. Returns a
    dict of paths: ca, provider_cert/key, consumer_cert/key, wrongname_cert/key,
    rogue_cert/key."""
    if shutil.which("openssl") is None:
        raise TestSkipped("openssl is not installed")

    def openssl(*args):
        r = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60, cwd=directory)
        if r.returncode != 0:
            raise TestFailure(f"openssl {' '.join(args)} failed: {r.stderr}")

    def ca(name):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
                "-keyout", f"{name}.key", "-out", f"{name}.pem",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def cert(issuer, name, names="IP:127.0.0.1,DNS:localhost"):
        with open(os.path.join(directory, f"{name}.ext"), "w") as f:
            f.write("extendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n"
                    f"subjectAltName={names}\n")
        openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
                "-out", f"{name}.csr")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{issuer}.pem", "-CAkey", f"{issuer}.key",
                "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem")

    ca("sdc-test-ca")
    ca("rogue-ca")
    for name in ("provider", "consumer"):
        cert("sdc-test-ca", name)
    cert("sdc-test-ca", "wrongname", "DNS:wrong.example,IP:10.9.9.9")
    cert("rogue-ca", "rogue")
    p = lambda f: os.path.join(directory, f)  # noqa: E731
    return {"ca": p("sdc-test-ca.pem"), "provider_cert": p("provider.pem"), "provider_key": p("provider.key"),
            "consumer_cert": p("consumer.pem"), "consumer_key": p("consumer.key"), "wrongname_cert": p("wrongname.pem"),
            "wrongname_key": p("wrongname.key"), "rogue_cert": p("rogue.pem"),
            "rogue_key": p("rogue.key")}


def tls_options(pki, who):
    """--tls-cert/--tls-key/--tls-ca of `who` ("provider", "consumer", "rogue")."""
    return ["--tls-cert", pki[f"{who}_cert"], "--tls-key", pki[f"{who}_key"], "--tls-ca", pki["ca"]]
