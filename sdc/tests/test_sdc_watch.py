"""`sdc-get watch`: our consumer subscribes and prints reports as they
arrive. Against sdc-provider (ours↔ours) and against sdc11073's own
SdcProvider (validate=True): each metric change made through the
providers' command FIFOs is printed once, in order, with MdibVersion
following; --count and --duration bound the watch; bad options and an
unknown handle get their exit codes.

A watch whose provider lost the subscription without a SubscriptionEnd
(killed with SIGKILL, restarted on the same address and EPR): the watch's
next Renew (4 s subscriptions) is refused and it exits 52 naming the
provider's answer, instead of waiting for reports that never come."""

import sys

sys.dont_write_bytecode = True  # noqa: E402 (keeps the source tree free of __pycache__)

import json
import os
import threading

from sdclib import Watch, check, check_equal, main, mdib_file, peer_script, program, sdc11073_python, step

HANDLE = "numeric.ch0.vmd0"


def set_values(fifo_path, values):
    with open(fifo_path, "w") as fifo:
        for v in values:
            fifo.write(f"set {HANDLE} {v}\n")
            fifo.flush()


def watch_and_change(env, url, fifo, values, what):
    w = Watch(env.env, "--url", url, "--json", "--count", str(len(values)), "watch", HANDLE)
    first = w.wait_watching()
    step(f"{what}: watching {first['watching']} from MdibVersion {first['mdib_version']}")
    threading.Thread(target=set_values, args=(fifo, values), daemon=True).start()
    code, err = w.finish()
    check_equal(code, 0, f"{what}: exit status of sdc-get watch ({err.strip()})")
    reports = [json.loads(line) for line in w.lines[1:]]
    check_equal([r["report"] for r in reports], ["EpisodicMetricReport"] * len(values), f"{what}: report kinds")
    check_equal([r["states"][0]["value"] for r in reports], [str(v) for v in values], f"{what}: values")
    versions = [r["mdib_version"] for r in reports]
    check_equal(versions, list(range(versions[0], versions[0] + len(values))), f"{what}: MdibVersions")
    check(versions[0] > first["mdib_version"], f"{what}: the first report is older than the watch's start")
    step(f"{what}: {len(values)} reports, MdibVersion {versions[0]}..{versions[-1]}")


def test(env):
    fifo = env.path("ours.fifo")
    os.mkfifo(fifo)
    provider = env.start_provider(mdib_file("mdib.xml"), "--no-discovery", "--commands", fifo)
    url = provider.ready["url"]
    watch_and_change(env, url, fifo, [301, 302, 303, 304], "ours↔ours")

    step("text output and --duration")
    w = Watch(env.env, "--url", url, "--duration", "1500ms", "watch")
    code, err = w.finish()
    check_equal((code, w.lines), (0, []), f"a quiet watch with --duration 1500ms ({err.strip()})")

    step("bad input")
    for args, code, message in (
            (["--url", url, "watch", "no.such.handle"], 14, 'unknown handle "no.such.handle"'),
            (["--url", url, "--count", "0", "watch"], 1, "--count 0: give at least 1"),
            (["--url", url, "--count", "2", "state"], 1, "--count and --duration apply to the watch command only"),
            (["--url", url, "--duration", "soon", "watch"], 1, "--duration"),
            (["--url", url.replace("http://", "https://"), "watch"], 1, "")):
        result = env.run([program("sdc/sdc-get"), *args], expect=None, timeout=60)
        if args[1].startswith("https://"):
            # An https URL without a TLS identity: usage-level refusal from the library.
            check(result.returncode != 0 and "TLS needs a certificate" in result.stderr,
                  f"sdc-get {' '.join(args)}: {result.returncode} {result.stderr}")
            continue
        check_equal(result.returncode, code, f"sdc-get {' '.join(args)}: exit status ({result.stderr.strip()})")
        check(message in result.stderr, f"sdc-get {' '.join(args)}: {result.stderr!r} lacks {message!r}")
    provider.stop()

    step("a watch whose provider was killed and restarted: its Renew is refused")
    argv = [program("sdc/sdc-provider"), "--mdib", mdib_file("mdib.xml"), "--no-discovery", "--max-subscription", "4"]
    provider = env.start("sdc-provider-killed", [*argv, "--address", "127.0.0.1:0"], "sdc-provider ready")
    w = Watch(env.env, "--url", provider.ready["url"], "--json", "watch", HANDLE)
    w.wait_watching()
    provider.kill()  # no SubscriptionEnd
    env.start("sdc-provider-restarted", [*argv, "--address", provider.ready["address"], "--epr",
                                         provider.ready["epr"]], "sdc-provider ready")
    code, err = w.finish(timeout=30)
    step(f"sdc-get watch exited {code}: {err.strip()}")
    check_equal(code, 52, f"exit status of a watch whose subscription is gone ({err.strip()})")
    check("renewing it was refused" in err and "cannot renew: no subscription" in err,
          f"the watch's message does not name the cause: {err.strip()}")

    step("ours → sdc11073's SdcProvider")
    python = sdc11073_python()
    peer_fifo = env.path("peer.fifo")
    os.mkfifo(peer_fifo)
    peer = env.start("sdc11073-provider", [python, peer_script("sdc11073_provider.py"), "--mdib",
                                           mdib_file("mdib.xml"), "--commands", peer_fifo], "sdc11073-provider ready")
    watch_and_change(env, peer.ready["url"], peer_fifo, [41, 42, 43], "ours → sdc11073")


if __name__ == "__main__":
    main(test)
