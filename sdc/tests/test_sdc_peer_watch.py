"""sdc11073's unmodified consumer (validate=True) keeps its ConsumerMdib in
sync with our provider through reports: start_all() with its default
arguments subscribes to the StateEventService and DescriptionEventService
our metadata lists, and every metric change made in sdc-provider (through
its --commands FIFO) shows up in the ConsumerMdib, with MdibVersion
following. Then the provider stops with the consumer's subscriptions
ended.

Renewal: with subscriptions of 4 s (--max-subscription 4), sdc11073 renews
them (its validation on; at half the granted time, checked every second)
through three expiry periods and more, and its
ConsumerMdib still follows the changes made after that; it logged no
warning or error (it used to refuse our subscription manager's
wse:Identifier reference parameter: "attribute wsa:IsReferenceParameter is
not allowed", and lost every subscription at its first renew)."""

import sys

sys.dont_write_bytecode = True  # noqa: E402 (keeps the source tree free of __pycache__)

import json
import os

from sdclib import check, check_equal, main, mdib_file, peer_script, sdc11073_python, step

HANDLE = "numeric.ch0.vmd0"


def watch(env, python, url, fifo, *extra, rounds=5, first=1000):
    result = env.run([python, peer_script("sdc11073_watch.py"), "--url", url, "--handle", HANDLE, "--fifo", fifo,
                      "--rounds", str(rounds), "--first-value", str(first), *extra], timeout=180)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test(env):
    python = sdc11073_python()
    fifo = env.path("commands")
    os.mkfifo(fifo)
    provider = env.start_provider(mdib_file("mdib.xml"), "--no-discovery", "--commands", fifo)
    got = watch(env, python, provider.ready["url"], fifo)
    step(f"sdc11073 subscribed to {got['subscriptions']}")
    for action in ("EpisodicMetricReport", "EpisodicAlertReport", "EpisodicComponentReport",
                   "EpisodicOperationalStateReport", "DescriptionModificationReport"):
        check(action in got["subscriptions"], f"start_all() did not subscribe to {action}: {got['subscriptions']}")
    check_equal(got["seen"], [str(v) for v in range(1000, 1005)], "values in sdc11073's ConsumerMdib")
    versions = got["mdib_versions"]
    check_equal(versions, list(range(versions[0], versions[0] + 5)), "ConsumerMdib MdibVersion after each change")
    check(got["is_connected"], "sdc11073 consumer reports its subscriptions as not connected")
    step(f"ConsumerMdib followed 5 changes; latency ms: {[round(n / 1e6, 2) for n in got['latency_ns']]}")
    check_equal(got.get("problems"), [], "warnings and errors sdc11073 logged")
    check_equal(provider.stop(), 0, "exit status of sdc-provider after SIGTERM")

    step("renewal: 4 s subscriptions held for 13 s, then 3 changes")
    fifo2 = env.path("commands-renew")
    os.mkfifo(fifo2)
    provider = env.start_provider(mdib_file("mdib.xml"), "--no-discovery", "--commands", fifo2,
                                  "--max-subscription", "4", name="sdc-provider-renew")
    got = watch(env, python, provider.ready["url"], fifo2, "--hold", "13", rounds=3, first=2000)
    check_equal(got["problems"], [], "warnings and errors sdc11073 logged while renewing")
    check_equal(got["seen"], [str(v) for v in range(2000, 2003)], "values in the ConsumerMdib after 3 expiry periods")
    check(got["subscribed"] and all(got["subscribed"]), f"sdc11073's subscriptions after renewing: {got['subscribed']}")
    check(got["is_connected"], "sdc11073 consumer reports its subscriptions as not connected after renewing")
    check_equal(provider.stop(), 0, "exit status of sdc-provider after SIGTERM")


if __name__ == "__main__":
    main(test)
