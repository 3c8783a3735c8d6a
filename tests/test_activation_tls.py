#!/usr/bin/env python3
"""blob-activatord in front of TLS-only stores (docs/ACTIVATION.md, "TLS"):
with --tls-cert/--tls-key/--tls-ca its endpoint is TLS only, so that a TLS
client (which refuses every plaintext store reference) accepts its entry;
the first `blob --tls-* push` to a stopped TLS store starts its blobstored
(whose NAME.conf holds the store's own TLS options and access list) and
stores the Blob, a pull brings it back bit-exact; a plaintext client is
refused. Without --tls-* the same TLS client refuses the activator's
plaintext entry (exit 53), which is why the options exist. Bad TLS options
are usage errors naming the option. Certificates as tests/test_tls.py makes
them."""

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, MiB, check, check_equal, log_text, step  # noqa: E402
from test_tls import make_ca, make_cert, tls_args  # noqa: E402


def start_activator(c, name, conf_dir, extra=()):
    err_path = c.path(f"{name}.err")
    argv = [harness.program("blobstore/blob-activatord"), "--config-dir", conf_dir, "--naming", c.naming,
            "--blobstored", harness.program("blobstore/blobstored"), "--control-address", "127.0.0.1:0", *extra]
    with open(err_path, "wb") as err:
        popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=c.env,
                                 text=True)
    activator = harness.Process(name, popen, [err_path])
    c.processes.append(activator)
    line = popen.stdout.readline().strip()
    return activator, line


def test(c):
    if shutil.which("openssl") is None:
        raise harness.TestSkipped("openssl is not installed")
    make_ca(c, "ca")
    store = make_cert(c, "ca", "store", "/CN=store.central", "serverAuth,clientAuth", san="IP:127.0.0.1")
    activator_cert = make_cert(c, "ca", "activator", "/CN=activator", "serverAuth,clientAuth", san="IP:127.0.0.1")
    client = make_cert(c, "ca", "client", "/CN=workstation1", "clientAuth")
    conf_dir = c.path("conf")
    os.makedirs(conf_dir)
    with open(os.path.join(conf_dir, "secure.conf"), "w") as f:
        f.write(f"store = file:{c.path('secure')}\ncontrol-address = 127.0.0.1:0\ndata-address = 127.0.0.1:0\n"
                f"tls-cert = {store[0]}\ntls-key = {store[1]}\ntls-ca = {c.path('ca.pem')}\n"
                "allow-read = CN=workstation1\nallow-write = CN=workstation1\n")

    step("bad TLS options: usage errors naming the option")
    code, _, err = c.run([harness.program("blobstore/blob-activatord"), "--config-dir", conf_dir, "--naming", c.naming,
                          "--tls-cert", activator_cert[0]], timeout=30)
    check(code == 1 and "--tls-key is required with --tls-cert" in err, f"--tls-cert alone: exit {code}, {err!r}")

    step("without --tls-*: a TLS client refuses the activator's plaintext entry")
    plain, line = start_activator(c, "plain-activator", conf_dir)
    check_equal(line, "blob-activatord ready stores=secure", "the plain activator's ready line")
    r = c.blob(*tls_args(c, *client), "ls", store="secure", timeout=120)
    check(r.code != 0, f"a TLS client used the plaintext activator's entry: {r.stderr!r}")
    step(f"refused: exit {r.code}: {r.stderr.strip()[-300:]}")
    plain.popen.terminate()
    check_equal(plain.popen.wait(timeout=60), 0, "the plain activator's exit status")

    step("with --tls-*: the first TLS push starts the TLS store and stores the Blob; a pull brings it back")
    activator, line = start_activator(c, "activator", conf_dir, tls_args(c, *activator_cert))
    check_equal(line, "blob-activatord ready stores=secure", "the TLS activator's ready line")
    src = c.path("src")
    digest = harness.write_random(src, 4 * MiB)
    r = c.blob(*tls_args(c, *client), "push", "--name", "CT.tls", src, store="secure", timeout=120)
    check_equal(r.ok().get("checksum"), digest, "checksum of the push that started the TLS store")
    check(re.search(r'started blobstored for store "secure" \(pid \d+', log_text(activator)),
          "the activator's start line")
    c.blob(*tls_args(c, *client), "--no-local", "pull", "CT.tls", c.path("out"), store="secure", timeout=120).ok()
    check_equal(harness.checksum_file(c.path("out")), digest, "CT.tls pulled over TLS")

    step("a plaintext client is refused by the TLS store")
    r = c.blob("ls", store="secure", timeout=120)
    check(r.code != 0, f"a plaintext client listed the TLS store: {r.stdout!r}")


if __name__ == "__main__":
    harness.main(test)
