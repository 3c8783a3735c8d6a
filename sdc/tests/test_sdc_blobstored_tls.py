"""blobstored --sdc-address with --tls-*: sdc11073's unmodified consumer
(ssl_context_container, validate=True, start_all() with its default
subscriptions) keeps an up-to-date ConsumerMdib of the store's status over
TLS: after a push over TLS its ConsumerMdib holds the new blob count. The
daemon's periodic refresh is set to 10 minutes, so the value can only have
come through the report the end of the transfer publishes."""

import os
import sys

sys.dont_write_bytecode = True  # keeps the source tree free of __pycache__
sys.path.insert(0, os.path.join(os.environ.get("BS_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                                "tests"))
import json  # noqa: E402

import harness  # noqa: E402
from harness import check, check_equal, start_service, step, wait_for  # noqa: E402
from sdclib import make_pki, peer_script, sdc11073_python, tls_options  # noqa: E402


def test(c):
    python = sdc11073_python()
    pki = make_pki(c.path())
    daemon = c.start_daemon("sdcstore", "memory:64M", extra=tls_options(pki, "provider") + [
        "--allow-read", "*", "--allow-write", "*", "--sdc-address", "127.0.0.1:0", "--naming-check", "600"])
    url = daemon.ready["sdc"]
    check(url.startswith("https://127.0.0.1:"), f"the store's SDC device URL under TLS: {url}")

    watcher = start_service(
        "sdc11073-watch",
        [python, peer_script("sdc11073_watch.py"), "--url", url, "--handle", "blobstore.blob_count",
         "--wait-for", "1", "--timeout", "60", "--tls-key", pki["consumer_key"], "--tls-cert", pki["consumer_cert"],
         "--tls-ca", pki["ca"]],
        "sdc11073-watch ready", 120, env=c.env, out_path=c.path("watch.out"), err_path=c.path("watch.err"),
        text=True, track=c.processes)
    step(f"sdc11073 ConsumerMdib initialised over TLS: {watcher.ready_line}")
    check_equal(watcher.ready.get("value"), "0", "blob count in the ConsumerMdib before the push")

    source = c.path("one.bin")
    harness.write_random(source, 1 << 20)
    c.blob(*tls_options(pki, "consumer"), "push", "--name", "CT.1", source, store="sdcstore").ok()
    check_equal(watcher.popen.wait(90), 0, "exit status of the sdc11073 watcher")
    def result():
        with open(c.path("watch.out")) as out:
            lines = [line for line in out.read().splitlines() if line.startswith("{")]
        return json.loads(lines[-1]) if lines else None
    got = wait_for(result, 10, "the watcher's result line")
    check_equal(got["seen"], "1", "blob count in sdc11073's ConsumerMdib after a push over TLS")
    check("EpisodicMetricReport" in got["subscriptions"], f"subscriptions: {got['subscriptions']}")
    check(got["is_connected"], "the sdc11073 consumer lost its subscriptions")
    step(f"ConsumerMdib over TLS followed the push (MdibVersion {got['mdib_version']})")


if __name__ == "__main__":
    harness.main(test)
