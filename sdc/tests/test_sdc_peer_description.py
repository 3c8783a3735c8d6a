"""sdc11073's unmodified consumer (validate=True, start_all() with its
default subscriptions, a ConsumerMdib) follows description changes made in
our sdc-provider through its --commands FIFO: a metric descriptor added
under a channel (its state too), its value set, its unit and Resolution
updated (DescriptorVersion +1), and the descriptor removed (its state goes
too). After each change every descriptor and state container of the
ConsumerMdib equals the provider's GetMdib, MdibVersion follows one per
change, and the parent channel's DescriptorVersion goes up with each
child added or removed."""

import sys

sys.dont_write_bytecode = True  # noqa: E402 (keeps the source tree free of __pycache__)

import json
import os

from sdclib import check, check_equal, main, mdib_file, peer_script, sdc11073_python, step

PARENT = "ch0.vmd0"
HANDLE = "added.ch0.vmd0"


def test(env):
    python = sdc11073_python()
    fifo = env.path("commands")
    os.mkfifo(fifo)
    provider = env.start_provider(mdib_file("mdib.xml"), "--no-discovery", "--commands", fifo)
    result = env.run([python, peer_script("sdc11073_description.py"), "--url", provider.ready["url"], "--fifo", fifo,
                      "--parent", PARENT, "--handle", HANDLE], timeout=120)
    got = json.loads(result.stdout.strip().splitlines()[-1])
    check("DescriptionModificationReport" in got["subscriptions"],
          f"start_all() did not subscribe to DescriptionModificationReport: {got['subscriptions']}")
    steps = {s["step"]: s for s in got["steps"]}
    for name in ("add", "set", "update", "remove"):
        check(name in steps and steps[name]["seen"],
              f"sdc11073's ConsumerMdib did not show the `{name}` change within its bound: {got['steps']}\n"
              f"consumer stderr: {result.stderr[-3000:]}")
        check_equal(steps[name]["mismatches"], [], f"{name}: ConsumerMdib against the provider's GetMdib")
        step(f"{name}: MdibVersion {steps[name]['mdib_version']}, descriptor {steps[name]['descriptor']}, "
             f"state {steps[name]['state']}")
    versions = [steps[n]["mdib_version"] for n in ("add", "set", "update", "remove")]
    check_equal(versions, list(range(versions[0], versions[0] + 4)), "MdibVersion: one per change")

    added = steps["add"]
    check_equal(added["descriptor"], {"type": "NumericMetricDescriptor", "version": 0, "parent": PARENT,
                                      "unit": "262656", "resolution": "1"}, "the added descriptor")
    check_equal((added["state"]["type"], added["state"]["version"], added["state"]["descriptor_version"],
                 added["state"]["value"]), ("NumericMetricState", 0, 0, None), "the added state")
    check_equal(steps["set"]["state"]["value"], "42", "the new metric's value")
    updated = steps["update"]
    check_equal((updated["descriptor"]["version"], updated["descriptor"]["unit"], updated["descriptor"]["resolution"]),
                (1, "264352", "0.5"), "the updated descriptor (DescriptorVersion, unit, Resolution)")
    check_equal((updated["state"]["descriptor_version"], updated["state"]["version"], updated["state"]["value"]),
                (1, 2, "42"), "the updated descriptor's state (DescriptorVersion, StateVersion, value kept)")
    check_equal(steps["remove"]["descriptor"], None, "the removed descriptor")
    check_equal(steps["remove"]["state"], None, "the removed descriptor's state")
    check_equal(steps["remove"]["parent_version"], added["parent_version"] + 1,
                "the channel's DescriptorVersion after adding and removing a metric")
    check(got["is_connected"], "sdc11073 consumer reports its subscriptions as not connected")
    check_equal(provider.stop(), 0, "exit status of sdc-provider after SIGTERM")
    with open(provider.log_paths[0]) as out:
        acks = [line.split()[0] for line in out if line.split() and line.split()[0] in ("add", "set", "update",
                                                                                       "remove", "error")]
    check_equal(acks, ["add", "set", "update", "remove"], "sdc-provider's acknowledgements")


if __name__ == "__main__":
    main(test)
