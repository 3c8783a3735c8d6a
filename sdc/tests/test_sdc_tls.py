"""SDC over TLS with mutual authentication (IEEE 11073-20701): sdc-provider
and sdc-get with --tls-cert/--tls-key/--tls-ca, certificates made with
openssl at run time. https XAddrs in discovery; GetMdState and a watch over
TLS; a client without a certificate, with one of another CA, and a
plaintext HTTP request are refused; our consumer checks that the provider's
certificate is for the host of the URL (IP or DNS SAN) and refuses one of
the right CA for other names. A watch whose certificate is clientAuth only
(docs/SECURITY.md's workstation recipe) cannot receive — the provider
refuses it as a server when it connects back to deliver — and ends with
exit 52 naming the reason instead of printing nothing and exiting 0 (the
failed handshake on its notification server makes it ask the provider at
once, long before the hour's subscription needs renewing); one
made by the consumer recipe of docs/SECURITY.md receives. Both ways with
sdc11073's
ssl_context_container: its consumer (start_all + ConsumerMdib) follows our
TLS provider, and our watch follows its TLS provider."""

import sys

sys.dont_write_bytecode = True  # noqa: E402 (keeps the source tree free of __pycache__)

import json
import os
import socket
import subprocess
import threading

from sdclib import (Watch, check, check_equal, main, make_pki, mdib_file, peer_script, program, sdc11073_python,
                    step, tls_options)

HANDLE = "numeric.ch0.vmd0"


def feed(fifo_path, values):
    def run():
        with open(fifo_path, "w") as fifo:
            for v in values:
                fifo.write(f"set {HANDLE} {v}\n")
                fifo.flush()
    threading.Thread(target=run, daemon=True).start()


def watch_values(env, url, fifo, values, tls, what):
    w = Watch(env.env, *tls, "--url", url, "--json", "--count", str(len(values)), "watch", HANDLE)
    w.wait_watching()
    feed(fifo, values)
    code, err = w.finish()
    check_equal(code, 0, f"{what}: exit status of sdc-get watch ({err.strip()})")
    got = [json.loads(line)["states"][0]["value"] for line in w.lines[1:]]
    check_equal(got, [str(v) for v in values], f"{what}: values of the reports")
    step(f"{what}: {len(values)} reports over TLS")


def recipe_cert(env, name, ext):
    """A certificate made as docs/SECURITY.md says, signed by the test CA."""
    def openssl(*args):
        r = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60, cwd=env.path())
        check(r.returncode == 0, f"openssl {' '.join(args)}: {r.stderr}")
    with open(env.path(f"{name}.ext"), "w") as f:
        f.write(ext)
    openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
            "-out", f"{name}.csr")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "sdc-test-ca.pem", "-CAkey", "sdc-test-ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem")
    return ["--tls-cert", env.path(f"{name}.pem"), "--tls-key", env.path(f"{name}.key")]


def undeliverable_watch(env, pki):
    """The provider cannot deliver to a clientAuth-only consumer: the watch
    must end loudly, not print nothing and exit 0."""
    step("a watch whose certificate the provider refuses as a server (clientAuth only, no IP SAN)")
    fifo = env.path("refused.fifo")
    os.mkfifo(fifo)
    provider = env.start_provider(mdib_file("mdib.xml"), *tls_options(pki, "provider"), "--commands", fifo,
                                  "--no-discovery", name="sdc-provider-refused")  # grants an hour: no renew soon
    url = provider.ready["url"]
    ca = ["--tls-ca", pki["ca"]]
    workstation = recipe_cert(env, "ws1", "extendedKeyUsage=clientAuth\n")
    w = Watch(env.env, *workstation, *ca, "--url", url, "--json", "watch", HANDLE)
    w.wait_watching()
    feed(fifo, [801, 802])
    code, err = w.finish(timeout=30)
    step(f"sdc-get watch exited {code}: {err.strip()}")
    check_equal(code, 52, f"exit status of a watch that cannot receive ({err.strip()})")
    check("unsuitable certificate purpose" in err and "cannot deliver to https://127.0.0.1:" in err
          and "after a failed TLS handshake on this consumer's notification server" in err,
          f"the watch's message does not name the cause: {err.strip()}")
    check_equal(w.lines[1:], [], "reports printed by a watch that cannot receive")
    with open(provider.log_paths[1]) as log:
        check("unsuitable certificate purpose" in log.read(), "the provider's log does not name the cause")

    step("a watch with a certificate made by the consumer recipe of docs/SECURITY.md")
    viewer = recipe_cert(env, "viewer1", "extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1\n")
    watch_values(env, url, fifo, [811, 812, 813], [*viewer, *ca], "the consumer recipe's certificate")
    provider.stop()


def test(env):
    pki = make_pki(env.path())
    ours = tls_options(pki, "consumer")

    step("bad TLS options")
    result = env.run([program("sdc/sdc-provider"), "--mdib", mdib_file("mdib.xml"), "--tls-cert",
                      pki["provider_cert"]], expect=1)
    check("--tls-key is required" in result.stderr, f"--tls-cert alone: {result.stderr}")
    result = env.run([program("sdc/sdc-provider"), "--mdib", mdib_file("mdib.xml"), "--tls-cert", pki["ca"],
                      "--tls-key", pki["consumer_key"], "--tls-ca", pki["ca"]], expect=None)
    check(result.returncode != 0 and f'TLS key "{pki["consumer_key"]}" does not match the certificate '
          f'"{pki["ca"]}"' in result.stderr, f"a key of another certificate: {result.stderr}")
    result = env.run([program("sdc/sdc-provider"), "--mdib", mdib_file("mdib.xml"), *tls_options(pki, "provider")[:4],
                      "--tls-ca", env.path("missing.pem")], expect=None)
    check(result.returncode != 0 and "missing.pem" in result.stderr, f"a missing CA file: {result.stderr}")

    fifo = env.path("ours.fifo")
    os.mkfifo(fifo)
    provider = env.start_provider(mdib_file("mdib.xml"), *tls_options(pki, "provider"), "--commands", fifo)
    url = provider.ready["url"]
    check(url.startswith("https://127.0.0.1:"), f"device URL of a TLS provider: {url}")

    state = env.sdc_get(*ours, "--url", url, "--json", "state", HANDLE)
    check_equal([s["descriptor_handle"] for s in state["states"]], [HANDLE], "GetMdState over TLS")
    found = env.sdc_get("--wait", "2000", "--json", "probe")
    xaddrs = [p["xaddrs"] for p in found if p["epr"] == provider.ready["epr"]]
    check_equal(xaddrs, [[url]], "the XAddrs a Probe answers (https)")

    step("refused clients")
    result = env.sdc_get("--url", url, "state", expect=10)
    check("TLS needs a certificate" in result.stderr, f"https without a TLS identity: {result.stderr}")
    result = env.sdc_get(*tls_options(pki, "rogue"), "--url", url, "state", expect=52)
    check("unknown ca" in result.stderr,
          f"a client certificate of another CA: {result.stderr}")
    host, port = provider.ready["address"].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        answer = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
        except (ConnectionResetError, socket.timeout):
            pass
    check(not answer.startswith(b"HTTP/"), f"a plaintext HTTP request to the TLS port was answered: {answer[:80]!r}")
    step("plaintext HTTP to the TLS port: no HTTP answer")
    check_equal(env.sdc_get(*ours, "--url", url, "--json", "state", HANDLE)["states"][0]["descriptor_handle"],
                HANDLE, "the provider still serves after the refusals")

    step("the provider's certificate is checked against the URL's host")
    by_name = url.replace("https://127.0.0.1:", "https://localhost:")
    check_equal(env.sdc_get(*ours, "--url", by_name, "--json", "state", HANDLE)["states"][0]["descriptor_handle"],
                HANDLE, "GetMdState by the DNS name of the certificate (localhost)")
    wrong = env.start_provider(mdib_file("mdib.xml"), "--tls-cert", pki["wrongname_cert"], "--tls-key",
                               pki["wrongname_key"], "--tls-ca", pki["ca"])
    result = env.sdc_get(*ours, "--url", wrong.ready["url"], "state", expect=None)
    check(result.returncode != 0 and "not for 127.0.0.1" in result.stderr and "DNS:wrong.example" in result.stderr
          and "IP:10.9.9.9" in result.stderr, f"a provider certificate for other names: {result.returncode} "
          f"{result.stderr}")
    step(f"refused: {result.stderr.strip()}")
    wrong.stop()

    watch_values(env, url, fifo, [501, 502, 503], ours, "ours↔ours")
    undeliverable_watch(env, pki)

    step("sdc11073's consumer (ssl_context_container) on our TLS provider")
    python = sdc11073_python()
    result = env.run([python, peer_script("sdc11073_watch.py"), "--url", url, "--handle", HANDLE, "--fifo", fifo,
                      "--rounds", "3", "--first-value", "600", "--tls-key", pki["consumer_key"], "--tls-cert",
                      pki["consumer_cert"], "--tls-ca", pki["ca"]], timeout=90)
    got = json.loads(result.stdout.strip().splitlines()[-1])
    check("EpisodicMetricReport" in got["subscriptions"], f"subscriptions over TLS: {got['subscriptions']}")
    check_equal(got["seen"], ["600", "601", "602"], "sdc11073 ConsumerMdib over TLS")
    step(f"sdc11073 ConsumerMdib followed 3 changes over TLS; ms {[round(n / 1e6, 2) for n in got['latency_ns']]}")
    provider.stop()

    step("our watch on sdc11073's TLS provider")
    peer_fifo = env.path("peer.fifo")
    os.mkfifo(peer_fifo)
    peer = env.start("sdc11073-provider", [python, peer_script("sdc11073_provider.py"), "--mdib",
                                           mdib_file("mdib.xml"), "--commands", peer_fifo, "--tls-key",
                                           pki["provider_key"], "--tls-cert", pki["provider_cert"], "--tls-ca",
                                           pki["ca"]], "sdc11073-provider ready")
    check(peer.ready["url"].startswith("https://"), f"sdc11073's TLS XAddr: {peer.ready['url']}")
    watch_values(env, peer.ready["url"], peer_fifo, [71, 72, 73], ours, "ours → sdc11073 over TLS")


if __name__ == "__main__":
    main(test)
