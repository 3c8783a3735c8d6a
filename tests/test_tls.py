#!/usr/bin/env python3
"""TLS on both planes and the daemon's access list (docs/SECURITY.md,
"Transport security and access control").

Certificates are made with `openssl` in the test's directory at run time: a
CA, the store's certificate (serverAuth, SAN IP:127.0.0.1), a reader, a
writer, an admin (all permissions) and a client of another CA. Then:
push/pull over TLS with equal digests (file and memory store, both planes
encrypted); a client of another CA and a plaintext client are refused with
a clear message; the reader may pull but not push, the writer may push but
not delete, each refusal naming the missing permission; bad TLS options of
both programs are usage errors naming the option or file."""

import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, step  # noqa: E402

PROTOCOL_VERSION = 2  # of the data connection's frames (docs/PROTOCOL.md)


def openssl(c, *args):
    r = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60, cwd=c.path())
    if r.returncode != 0:
        raise harness.TestFailure(f"openssl {' '.join(args)} failed: {r.stderr}")


def make_ca(c, name):
    openssl(c, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
            "-keyout", f"{name}.key", "-out", f"{name}.pem",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")


def make_cert(c, ca, name, subject, usage, san=None):
    """A key and a certificate of `subject` signed by `ca`; returns (cert, key)."""
    ext = c.path(f"{name}.ext")
    with open(ext, "w") as f:
        f.write(f"extendedKeyUsage={usage}\nbasicConstraints=CA:FALSE\n")
        if san:
            f.write(f"subjectAltName={san}\n")
    openssl(c, "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", f"{name}.key",
            "-out", f"{name}.csr")
    openssl(c, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", f"{name}.pem")
    return c.path(f"{name}.pem"), c.path(f"{name}.key")


def tls_args(c, cert, key, ca="ca"):
    return ["--tls-cert", cert, "--tls-key", key, "--tls-ca", c.path(f"{ca}.pem")]


def corba_call(c, cert, op, *args, store=None, transporter=None, locator=None, ca="ca"):
    """Runs tests/tools/corba_call: one control-plane call as the client of
    `cert` (a (cert, key) pair; None: plaintext). Returns (exit code, the
    JSON line or None, stderr)."""
    argv = [harness.program("tests/tools/corba_call"), "--naming", c.naming]
    if cert:
        argv += ["--cert", cert[0], "--key", cert[1], "--ca", c.path(f"{ca}.pem")]
    for option, value in (("--store", store), ("--transporter", transporter), ("--locator", locator)):
        if value:
            argv += [option, value]
    code, out, err = c.run(argv + [op, *[str(a) for a in args]], timeout=120)
    line = json.loads(out) if out.strip() else None
    check(line is not None or code == 1, f"corba_call {op} printed nothing: exit {code}, stderr {err!r}")
    return code, line, err


def impostor_contacts(daemon):
    """Connections and calls the daemon's omniORB accepted (it runs with
    ORBtraceLevel 10 and ORBtraceInvocations: see start_traced)."""
    with open(daemon.log_paths[0], encoding="utf-8", errors="replace") as f:
        return [line.strip() for line in f if "Accepted connection" in line or "Dispatching remote call" in line]


def start_traced(c, name, store, **kwargs):
    """A daemon whose omniORB logs every connection it accepts and every call
    it dispatches (to prove that an impostor received nothing)."""
    c.env["ORBtraceLevel"] = "10"
    c.env["ORBtraceInvocations"] = "1"
    try:
        return c.start_daemon(name, store, **kwargs)
    finally:
        del c.env["ORBtraceLevel"]
        del c.env["ORBtraceInvocations"]


def present_ticket(c, ticket, cert):
    """Presents a pull ticket on a TLS data connection made with `cert`;
    returns the Response's (status, message)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_cert_chain(*cert)
    context.load_verify_locations(c.path("ca.pem"))
    context.check_hostname = False
    request = (b"BSD1" + struct.pack("<BBH", PROTOCOL_VERSION, 2, 0) + bytes.fromhex(ticket["ticket"]) +
               struct.pack("<QQ", ticket["offset"], ticket["length"]))
    with socket.create_connection((ticket["host"], ticket["port"]), timeout=20) as raw:
        with context.wrap_socket(raw) as s:
            s.sendall(request)
            header = b""
            while len(header) < 64:
                chunk = s.recv(64 - len(header))
                check(chunk, f"the data port closed after {len(header)} bytes of a Response")
                header += chunk
            check_equal(header[:4], b"BSD1", "Response magic")
            status, size = struct.unpack_from("<HI", header, 6)
            message = b""
            while len(message) < size:
                chunk = s.recv(size - len(message))
                check(chunk, "the data port closed within a Response message")
                message += chunk
            return status, message.decode("utf-8", "replace")


def test(c):
    if shutil.which("openssl") is None:
        raise harness.TestSkipped("openssl is not installed")
    step("certificates: CA, store, reader, writer, admin; another CA and its client")
    make_ca(c, "ca")
    make_ca(c, "rogue-ca")
    store_cert, store_key = make_cert(c, "ca", "store", "/CN=store.central", "serverAuth,clientAuth",
                                      san="IP:127.0.0.1")
    reader = make_cert(c, "ca", "reader", "/CN=workstation1/O=Radiology", "clientAuth")
    writer = make_cert(c, "ca", "writer", "/CN=modality1", "clientAuth")
    admin = make_cert(c, "ca", "admin", "/CN=admin", "clientAuth")
    rogue = make_cert(c, "rogue-ca", "rogue", "/CN=modality1", "clientAuth")

    config = c.path("central.conf")
    with open(config, "w") as f:
        f.write(f"tls-cert = {store_cert}\ntls-key = {store_key}\ntls-ca = {c.path('ca.pem')}\n"
                "allow-read = O=Radiology,CN=workstation1\n"
                "allow-read = CN=admin\n"
                "allow-write = CN=modality1\n"
                "allow-write = CN=admin\n"
                "allow-delete = CN=admin\n")
    central = c.start_daemon("central", "file", tier="central", extra=["--config", config])
    check(central.ready["control"].startswith("127.0.0.1:") and not central.ready["control"].endswith(":0"),
          f"control endpoint of the ready line: {central.ready['control']!r}")
    mem = c.start_daemon("mem", "memory:64M", extra=tls_args(c, store_cert, store_key) +
                         ["--allow-read", "*", "--allow-write", "*", "--allow-delete", "CN=admin"])

    as_reader = tls_args(c, *reader)
    as_writer = tls_args(c, *writer)
    as_admin = tls_args(c, *admin)

    step("push and pull over TLS on both planes, digests equal (file and memory store)")
    src = c.path("ct.bin")
    digest = harness.write_random(src, 9 * harness.MiB + 123)
    for store in ("central", "mem"):
        info = c.blob(*as_writer, "push", "--name", "CT.1", src, store=store).ok()
        check_equal(info.get("checksum"), digest, f"digest acknowledged by {store}")
        out = c.path(f"ct.{store}.pulled")
        c.blob(*as_reader, "--no-local", "pull", "CT.1", out, store=store).ok()
        check_equal(harness.checksum_file(out), digest, f"pulled from {store} over TLS")
    step("over TLS: 40 MiB (more than one dispatch budget), and 2 MiB through 16K socket buffers")
    big = c.path("big.bin")
    big_digest = harness.write_random(big, 40 * harness.MiB + 3)
    small = c.path("small.bin")
    small_digest = harness.write_random(small, 2 * harness.MiB + 5)
    for path, want, extra in ((big, big_digest, []), (small, small_digest, ["--socket-buffer", "16K"])):
        name = os.path.basename(path)
        c.blob(*as_admin, *extra, "push", "--name", name, path, store="central").ok()
        out = path + ".pulled"
        c.blob(*as_admin, *extra, "--no-local", "pull", name, out, store="central").ok()
        check_equal(harness.checksum_file(out), want, f"{name} pulled over TLS")
    step("over TLS: push --streams 4 and pull --streams 4 of the 40 MiB file")
    r = c.blob(*as_admin, "--no-local", "push", "--streams", "4", "--name", "big.streams", big, store="central").ok()
    check_equal((r.get("streams"), r.get("checksum")), (4, harness.checksum_file(big, "crc32c")),
                "push --streams 4 over TLS: streams, checksum")
    out = big + ".streams"
    r = c.blob(*as_admin, "--no-local", "pull", "--streams", "4", "big.streams", out, store="central").ok()
    check_equal(r.get("streams"), 4, "pull --streams 4 over TLS: streams")
    check_equal(harness.checksum_file(out), big_digest, "big.streams pulled over 4 TLS streams")
    ranged = c.blob(*as_reader, "--no-local", "pull", "CT.1", "-", "--offset", 5, "--length", 4096,
                    store="central", binary=True)
    ranged.ok()
    check_equal(ranged.stdout, harness.read_range(src, 5, 4096), "a range pulled over TLS")
    with open(central.log_paths[0], encoding="utf-8", errors="replace") as f:
        log = f.read()
    check("TLS on both planes" in log, "the daemon did not log that TLS is on")
    check(any("transfer direction=push blob=CT.1 " in line and "peer=127.0.0.1:" in line and "outcome=ok" in line
              for line in log.splitlines()), "no INFO line of the TLS push")

    step("reader: may stat and pull, may not push (53, names the permission)")
    c.blob(*as_reader, "stat", "CT.1", store="central").ok()
    c.blob(*as_reader, "push", "--name", "CT.2", src, store="central").error(
        EXIT["refused"], 'push "CT.2": store "central": permission denied: client "O=Radiology,CN=workstation1" '
                         'may not write')
    c.blob(*as_admin, "stat", "CT.2", store="central").error(EXIT["no_such_blob"], 'blob "CT.2" not found')

    step("writer: may push, may not read nor delete")
    c.blob(*as_writer, "--no-local", "pull", "CT.1", c.path("nope"), store="central").error(
        EXIT["refused"], 'permission denied: client "CN=modality1" may not read')
    check(not os.path.exists(c.path("nope")), "a refused pull left an output file behind")
    c.blob(*as_writer, "rm", "CT.1", store="central").error(
        EXIT["refused"], 'rm "CT.1": store "central": permission denied: client "CN=modality1" may not delete')
    c.blob(*as_reader, "rm", "CT.1", store="mem").error(
        EXIT["refused"], 'permission denied: client "O=Radiology,CN=workstation1" may not delete')
    c.blob(*as_admin, "rm", "CT.1", store="central").ok()
    c.blob(*as_admin, "stat", "CT.1", store="central").error(EXIT["no_such_blob"], 'blob "CT.1" not found')

    step("a ticket is honoured only on a data connection from the client it was issued to")
    code, out, err = corba_call(c, reader, "send", "CT.1", store="mem")
    check(code == 0, f"corba_call send failed: {code} {out} {err!r}")
    ticket = out["result"]
    status, message = present_ticket(c, ticket, writer)
    check_equal(status, EXIT["refused"], "status of a ticket presented by another client")
    check_equal(message, f'permission denied: ticket {ticket["ticket"][:8]}... was issued to client '
                         f'"O=Radiology,CN=workstation1", not to "CN=modality1"', "refusal of a foreign ticket")
    code, out, err = corba_call(c, reader, "send", "CT.1", store="mem")
    check(code == 0, f"corba_call send failed: {code} {out} {err!r}")
    ticket = out["result"]
    status, message = present_ticket(c, ticket, reader)
    check_equal((status, message), (0, ""), "the same client presenting its own ticket")

    step("a client certificate of another CA: refused by the store (52; the store logs the verify error)")
    r = c.blob(*tls_args(c, *rogue), "stat", "CT.1", store="mem")
    check_equal(r.code, EXIT["unreachable"], "exit code of a client with another CA's certificate")
    prefix = f'stat "CT.1": store "mem" unreachable at {mem.ready["control"]}: '
    # TLS 1.3 checks the client certificate after the client's handshake:
    # the store's alert may or may not arrive before its close.
    check(prefix + "TLS handshake failed: the peer refused the TLS handshake: unknown CA" in r.stderr or
          prefix + "TLS handshake failed: the store closed the connection after the handshake: it did not accept "
                   "this client's certificate (the store's log says why)" in r.stderr,
          "message of a refused client certificate: " + r.describe())
    harness.wait_for(lambda: 'control connection: certificate verify failed (unable to get local issuer certificate; '
                           'certificate "CN=modality1")' in open(mem.log_paths[0], errors="replace").read(), 10,
                   "the store's log line naming the refused certificate")
    step("a client that trusts another CA: the store's certificate does not verify (52)")
    c.blob(*tls_args(c, *rogue, ca="rogue-ca"), "stat", "CT.1", store="mem").error(
        EXIT["unreachable"], prefix + "TLS handshake failed: certificate verify failed (self-signed certificate in "
                                      'certificate chain; certificate "CN=ca")')

    step("a plaintext client against a TLS store: 52, says TLS is required")
    r = c.blob("stat", "CT.1", store="mem")
    r.error(EXIT["unreachable"], f'stat "CT.1": store "mem" at {mem.ready["control"]} accepts TLS connections only: '
                                 "give this client a certificate, key and CA (--tls-cert, --tls-key, --tls-ca)")
    check("omniORB" not in r.stderr, "omniORB noise on stderr: " + r.describe())

    step("a plaintext connection to the TLS data port is dropped; the daemon keeps serving")
    with socket.create_connection(tuple([mem.data[0], mem.data[1]]), timeout=10) as s:
        s.sendall(b"BSD1" + bytes(36))
        s.settimeout(10)
        try:
            got = s.recv(100)
        except ConnectionResetError:
            got = b""
        check(not got.startswith(b"BSD1"), f"the TLS data port answered plaintext: {got!r}")
    harness.wait_for(lambda: "TLS handshake failed" in open(mem.log_paths[0], errors="replace").read(), 10,
                   "the daemon's log line about the plaintext data connection")
    c.blob(*as_writer, "push", "--name", "CT.3", src, store="mem").ok()

    step("usage errors: incomplete TLS options, unreadable files, an ACL without TLS")
    r = c.blob("--tls-cert", reader[0], "stat", "x", store="mem")
    r.error(EXIT["usage"], "--tls-key is required with --tls-cert")
    r = c.blob("--tls-cert", reader[0], "--tls-key", reader[1], "--tls-ca", c.path("missing.pem"), "stat", "x",
               store="mem")
    r.error(EXIT["invalid_argument"], f'TLS CA file "{c.path("missing.pem")}"')
    daemon = harness.program("blobstore/blobstored")
    base = [daemon, "--name", "x", "--store", "memory:1M", "--naming", c.naming]
    code, _, err = c.run(base + ["--allow-read", "CN=a"])
    check(code == 1 and "--allow-read needs TLS" in err, f"ACL without TLS: exit {code}: {err!r}")
    code, _, err = c.run(base + tls_args(c, store_cert, store_key) + ["--allow-write", "workstation1"])
    check(code == 1 and '--allow-write: "workstation1" is not a certificate subject' in err,
          f"bad ACL entry: exit {code}: {err!r}")
    code, _, err = c.run(base + ["--tls-cert", store_cert, "--tls-key", reader[1], "--tls-ca", c.path("ca.pem")])
    check(code != 0 and "does not match the certificate" in err, f"key of another certificate: exit {code}: {err!r}")

    step("a store certificate that does not name the data host: the data plane refuses it (52), nothing stored")
    nosan = make_cert(c, "ca", "nosan", "/CN=store.nosan", "serverAuth,clientAuth")
    nosan_daemon = c.start_daemon("nosan", "file", extra=tls_args(c, *nosan) + ["--allow-read", "*",
                                                                                "--allow-write", "*"])
    c.blob(*as_writer, "push", "--name", "CT.4", src, store="nosan").error(
        EXIT["unreachable"], f'push "CT.4": store "nosan": TLS handshake with data endpoint {nosan_daemon.ready["data"]} '
                             "failed: certificate verify failed (IP address mismatch)")
    c.blob(*as_reader, "stat", "CT.4", store="nosan").error(EXIT["no_such_blob"], 'blob "CT.4" not found')

    step("both daemons survived every refusal")
    check(central.running() and mem.running(), "a daemon died")
    c.blob(*as_admin, "ls", store="central").ok()

    step("a plaintext impostor under a running TLS store's name: the store takes its name back, unasked")
    # A plaintext daemon cannot start under the name of a TLS store that
    # may be alive (it cannot ask it), so the squatter's reference is bound
    # under that name by hand.
    squatter = start_traced(c, "squat", "memory:1M")
    c.nameclt("rebind", "BlobStreaming/Stores/mem", c.nameclt("resolve", "BlobStreaming/Stores/squat").strip())
    harness.wait_for(lambda: 'store "mem": took over its naming service entry again from a registrant at '
                     f'{squatter.ready["control"]} that does not require TLS (not called)' in
                     open(mem.log_paths[0], errors="replace").read(), 30,
                     "the TLS store registering its name again over a plaintext registrant")
    squatter.stop()
    check_equal(impostor_contacts(squatter), [], "connections and calls the plaintext squatter received")
    harness.wait_for(lambda: c.blob(*as_reader, "stat", "CT.3", store="mem").code == 0, 30,
                   "stat through the name of the TLS store again", interval=0.5)

    # The real store stops first: while it runs it takes its name back from
    # a registrant it cannot verify (Daemon::maintain), within --naming-check.
    central.stop()
    step("an impersonated store: the name rebound to a daemon whose certificate is no server's (52)")
    no_server = c.start_daemon("central", "memory:1M", extra=tls_args(c, *writer) + ["--allow-read", "*"])
    c.blob(*as_reader, "stat", "CT.3", store="central").error(
        EXIT["unreachable"], "TLS handshake failed: certificate verify failed (unsuitable certificate purpose; "
                             'certificate "CN=modality1")')
    step("an impersonated store with a server certificate of another CA (52)")
    # Stopped first: a TLS store that cannot verify a registrant of its name
    # takes the name back at its next naming check, which would race the
    # client's look-up here.
    no_server.stop()
    fake_cert, fake_key = make_cert(c, "rogue-ca", "fake-store", "/CN=store.central", "serverAuth,clientAuth",
                                    san="IP:127.0.0.1")
    other_ca = c.start_daemon("central", "memory:1M", extra=tls_args(c, fake_cert, fake_key, ca="rogue-ca") +
                              ["--allow-read", "*"])
    c.blob(*as_reader, "stat", "CT.3", store="central").error(
        EXIT["unreachable"], "TLS handshake failed: certificate verify failed (self-signed certificate in "
                             'certificate chain; certificate "CN=rogue-ca")')
    other_ca.stop()  # a TLS daemon would take the name back from the plaintext impostor below
    step("a plaintext impostor: ls, stat, push, pull, locate, stores refuse it (53) before sending anything")
    impostor = start_traced(c, "central", "file", store_dir=c.path("impostor"))
    refusal = (f'store "central": its reference at {impostor.ready["control"]} does not require TLS; this client '
               "uses TLS and refuses it (an impostor or a misconfigured store)")
    c.blob(*as_admin, "ls", store="central").error(EXIT["refused"], "list: " + refusal)
    c.blob(*as_reader, "stat", "CT.3", store="central").error(EXIT["refused"], 'stat "CT.3": ' + refusal)
    c.blob(*as_writer, "push", "--name", "CT.5", src, store="central").error(EXIT["refused"], 'push "CT.5": ' + refusal)
    c.blob(*as_reader, "pull", "CT.3", c.path("from-impostor"), store="central").error(
        EXIT["refused"], 'pull "CT.3": ' + refusal)
    check(not os.path.exists(c.path("from-impostor")), "a refused pull left an output file behind")
    c.blob(*as_reader, "--no-local", "pull", "CT.3", c.path("from-impostor"), store="central").error(
        EXIT["refused"], 'pull "CT.3": ' + refusal)
    # Only the impostor could hold it: not knowing is not "nowhere".
    c.blob(*as_reader, "locate", "big.bin").error(EXIT["refused"], 'locate "big.bin": ' + refusal)
    c.blob(*as_reader, "pull", "big.bin", c.path("from-impostor")).error(EXIT["refused"], 'pull "big.bin": ' + refusal)
    # Held elsewhere: answered from the stores that were asked, with a warning.
    r = c.blob(*as_reader, "locate", "CT.3")
    r.ok()
    check_equal([loc["store"] for loc in r.json["locations"]], ["mem"], "stores holding CT.3")
    check('locate "CT.3": ' + refusal in r.stderr, "no warning about the refused store: " + r.describe())
    r = c.blob(*as_reader, "stores")
    r.ok()
    entry = [s for s in r.json["stores"] if s["name"] == "central"]
    check(len(entry) == 1 and entry[0].get("error") == "stores: " + refusal,
          "the impostor in `blob stores`: " + r.describe())
    code, out, err = corba_call(c, reader, "stat", "CT.3", store="central")
    check_equal((code, out and out["message"]), (EXIT["refused"], 'stat "CT.3": ' + refusal),
                "the probe's stat of the impostor")
    # BlobStreaming/Locator: the impostor's and the TLS daemons' take turns.
    code, out, err = corba_call(c, reader, "locate", "CT.3")
    check((code, out["ok"]) == (0, True) or
          (code, out["message"]) == (EXIT["refused"], f'locate "CT.3": locator: its reference at '
                                                      f'{impostor.ready["control"]} does not require TLS; this client '
                                                      "uses TLS and refuses it (an impostor or a misconfigured store)"),
          f"locate through BlobStreaming/Locator: {code} {out} {err!r}")
    step("the impostor received nothing: no connection, no call, no reservation")
    check_equal(impostor_contacts(impostor), [], "connections and calls the impostor accepted")
    check_equal(os.listdir(os.path.join(c.path("impostor"), "tmp")), [], "reservations in the impostor's store")
    check(impostor.running(), "the impostor exited")


if __name__ == "__main__":
    harness.main(test)
