"""sdc11073's SdcConsumer (validate=True) against our sdc-provider, for both
MDIBs: start_all(), GetMdState (all, and with a HandleRef),
GetMdDescription (all, and with a HandleRef), GetMdib,
ConsumerMdib.init_mdib(), and discovery by WSDiscovery.search_services.
Then SIGTERM: the provider exits 0."""

import sys

sys.dont_write_bytecode = True  # noqa: E402 (keeps the source tree free of __pycache__)

import json

from sdclib import check, check_equal, main, mdib_file, peer_script, sdc11073_python, step

CASES = [("mdib.xml", "numeric.ch0.vmd0", "mds0"), ("70041_MDIB_Final.xml", "0x34F00156", "3569")]


def peer(env, python, *args):
    result = env.run([python, peer_script("sdc11073_consumer.py"), *args], timeout=180)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test(env):
    python = sdc11073_python()
    for mdib, handle, mds in CASES:
        provider = env.start_provider(mdib_file(mdib), name=f"sdc-provider-{mdib}")
        ours = env.sdc_get("--url", provider.ready["url"], "--json", "state")
        expected = sorted([s["descriptor_handle"], s["type"]] for s in ours["states"])
        check_equal(len(expected), int(provider.ready["states"]), f"{mdib}: states served")

        step(f"{mdib}: sdc11073 consumer by URL")
        got = peer(env, python, "--url", provider.ready["url"], "--handle", handle)
        check_equal(got["states"], expected, f"{mdib}: GetMdState through sdc11073")
        check_equal(got["handle_states"], [[handle, "NumericMetricState"]], f"{mdib}: GetMdState HandleRef={handle}")
        check_equal(got["mds"], [mds], f"{mdib}: GetMdDescription")
        check_equal(got["handle_mds"], [mds], f"{mdib}: GetMdDescription HandleRef={handle}")
        check_equal(got["mdib_descriptors"], int(provider.ready["descriptors"]), f"{mdib}: GetMdib descriptors")
        check_equal(got["mdib_states"], len(expected), f"{mdib}: GetMdib states")
        check_equal(got["consumer_mdib_descriptors"], int(provider.ready["descriptors"]),
                    f"{mdib}: ConsumerMdib.init_mdib() descriptors")
        check(got["consumer_mdib_states"] > 0, f"{mdib}: ConsumerMdib.init_mdib() holds no states")

        step(f"{mdib}: sdc11073 consumer by WS-Discovery")
        got = peer(env, python, "--discover", provider.ready["epr"])
        check_equal(got["discovered"], [provider.ready["epr"]], f"{mdib}: WSDiscovery.search_services")
        check_equal(got["states"], expected, f"{mdib}: GetMdState after discovery")

        check_equal(provider.stop(), 0, f"{mdib}: exit status of sdc-provider after SIGTERM")
        with open(provider.log_paths[1]) as err:
            check("Bye sent" in err.read(), f"{mdib}: sdc-provider did not report its Bye")


if __name__ == "__main__":
    main(test)
