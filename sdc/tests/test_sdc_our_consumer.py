"""Our consumer (sdc-get) against sdc11073's own SdcProvider serving the same
MDIB as our sdc-provider: the same states (handles and types), by URL and
by WS-Discovery, with and without a HandleRef."""

import sys

sys.dont_write_bytecode = True  # noqa: E402 (keeps the source tree free of __pycache__)

from sdclib import check, check_equal, main, mdib_file, peer_script, sdc11073_python, step

HANDLE = "numeric.ch0.vmd0"


def single_states(answer):
    # sdc11073 creates no context states for an MDIB without them; ours has
    # one unassociated state per context descriptor (see docs/SDC.md).
    return sorted([s["descriptor_handle"], s["type"]] for s in answer["states"] if not s["handle"])


def test(env):
    python = sdc11073_python()
    mdib = mdib_file("mdib.xml")
    ours = env.start_provider(mdib)
    theirs = env.start(
        "sdc11073-provider", [python, peer_script("sdc11073_provider.py"), "--mdib", mdib], "sdc11073-provider ready",
        timeout=120)

    expected = single_states(env.sdc_get("--url", ours.ready["url"], "--json", "state"))
    step("sdc-get against sdc11073's provider by URL")
    got = env.sdc_get("--url", theirs.ready["url"], "--json", "state")
    check_equal(single_states(got), expected, "states of sdc11073's provider")
    check_equal(got["epr"], theirs.ready["epr"], "EPR read from the metadata")

    one = env.sdc_get("--url", theirs.ready["url"], "--json", "state", HANDLE)
    check_equal([[s["descriptor_handle"], s["type"]] for s in one["states"]], [[HANDLE, "NumericMetricState"]],
                f"GetMdState HandleRef={HANDLE}")
    description = env.sdc_get("--url", theirs.ready["url"], "--json", "description")
    check('Handle="mds0"' in description["xml"], "GetMdDescription holds no Mds mds0")
    mdib_answer = env.sdc_get("--url", theirs.ready["url"], "--json", "mdib")
    check("MdState" in mdib_answer["xml"], "GetMdib holds no MdState")

    step("sdc-get against sdc11073's provider by WS-Discovery")
    found = env.sdc_get("--discover", "--epr", theirs.ready["epr"], "--wait", "3000", "--json", "state")
    check_equal(single_states(found), expected, "states after discovery")
    probe = env.sdc_get("probe", "--wait", "2000", "--json")
    eprs = [p["epr"] for p in probe]
    check(theirs.ready["epr"] in eprs and ours.ready["epr"] in eprs,
          f"a Probe found {eprs}, expected both {theirs.ready['epr']} and {ours.ready['epr']}")


if __name__ == "__main__":
    main(test)
