"""Description changes, ours↔ours: sdc-provider's --commands FIFO adds a
metric descriptor under a channel, sets its value, updates its unit and
Resolution and removes it; `sdc-get watch --json` (our MdibMirror) prints
one DescriptionModificationReport per description change (created,
updated, deleted descriptors with their versions and states) and the
metric report in between, MdibVersions following one by one. Bad
commands (unknown parent or handle, a parent that is not a channel, a
handle in use, an attribute that cannot be set, a bad kind) are answered
with a specific error and change nothing: no report, no MdibVersion.
Then the other direction: `sdc-get watch` follows the description changes
of sdc11073's own SdcProvider (validate=True), which sends a
DescriptionModificationReport and episodic reports of the same
MdibVersion for one change."""

import sys

sys.dont_write_bytecode = True  # noqa: E402 (keeps the source tree free of __pycache__)

import json
import os

from sdclib import Watch, check, check_equal, main, mdib_file, peer_script, sdc11073_python, step, wait_for

PARENT = "ch0.vmd0"
HANDLE = "added.ch0.vmd0"

BAD = [
    (f"add no.such.channel {HANDLE}", 'parent "no.such.channel" is not a descriptor'),
    (f"add vmd0 {HANDLE}", "it is a VmdDescriptor; metrics are added under a ChannelDescriptor"),
    (f"add {PARENT} numeric.ch0.vmd0", 'cannot add metric "numeric.ch0.vmd0": the handle is in use'),
    (f"add {PARENT} {HANDLE} float", 'kind "float": expected numeric or string'),
    ("update no.such.metric unit=1", 'cannot update metric descriptor "no.such.metric"'),
    ("update numeric.ch0.vmd0 Handle=x", 'attribute "Handle" cannot be set'),
    ("update numeric.ch0.vmd0 MetricCategory=Guess", 'MetricCategory "Guess": allowed are'),
    ("update numeric.ch0.vmd0", "expected `update HANDLE unit=CODE|ATTRIBUTE=VALUE...`"),
    (f"remove {PARENT}", f'cannot remove "{PARENT}": it is a ChannelDescriptor, not a metric descriptor'),
    ("remove no.such.metric", 'cannot remove metric descriptor "no.such.metric"'),
]


def acks(provider):
    with open(provider.log_paths[0]) as out:
        return [line.rstrip("\n") for line in out if line.split() and line.split()[0] in
                ("add", "set", "update", "remove", "error")]


def test(env):
    fifo = env.path("commands")
    os.mkfifo(fifo)
    provider = env.start_provider(mdib_file("mdib.xml"), "--no-discovery", "--commands", fifo)
    url = provider.ready["url"]
    w = Watch(env.env, "--url", url, "--json", "--count", "4", "watch")
    first = w.wait_watching()
    start = first["mdib_version"]
    commands = [b[0] for b in BAD[:5]] + [f"add {PARENT} {HANDLE} numeric 262656"] + [b[0] for b in BAD[5:]] + [
        f"set {HANDLE} 42", f"update {HANDLE} unit=264352 Resolution=0.5", f"remove {HANDLE}"]
    with open(fifo, "w") as f:
        for c in commands:
            f.write(c + "\n")
            f.flush()
    code, err = w.finish()
    check_equal(code, 0, f"exit status of sdc-get watch ({err.strip()})")
    reports = [json.loads(line) for line in w.lines[1:]]
    check_equal([r["report"] for r in reports], ["DescriptionModificationReport", "EpisodicMetricReport",
                                                 "DescriptionModificationReport", "DescriptionModificationReport"],
                "report kinds")
    check_equal([r["mdib_version"] for r in reports], [start + 1, start + 2, start + 3, start + 4],
                "MdibVersions: one per change, none for the refused commands")

    add, value, update, remove = reports
    check_equal([d["handle"] for d in add["created"]], [HANDLE], "add: created")
    check_equal([d["handle"] for d in add["updated"]], [PARENT], "add: the parent channel is updated")
    created = add["created"][0]
    check_equal((created["parent_handle"], created["type"], created["descriptor_version"], created["unit_code"]),
                (PARENT, "NumericMetricDescriptor", "0", "262656"), "add: the new descriptor")
    check_equal(sorted(s["descriptor_handle"] for s in add["states"]), sorted([HANDLE, PARENT]), "add: states")
    check_equal(value["states"][0]["value"], "42", "the new metric's value")
    check_equal((update["created"], update["deleted"], [d["handle"] for d in update["updated"]]),
                ([], [], [HANDLE]), "update: report parts")
    changed = update["updated"][0]
    check_equal((changed["descriptor_version"], changed["unit_code"], changed["attributes"].get("Resolution")),
                ("1", "264352", "0.5"), "update: DescriptorVersion, unit, Resolution")
    state = update["states"][0]
    check_equal((state["descriptor_handle"], state["state_version"], state["value"],
                 state["attributes"].get("DescriptorVersion")), (HANDLE, "2", "42", "1"), "update: the state")
    check_equal([d["handle"] for d in remove["deleted"]], [HANDLE], "remove: deleted")
    check(all(s["descriptor_handle"] != HANDLE for s in remove["states"]), "remove: a deleted descriptor's state")
    step(f"watch followed add, set, update, remove at MdibVersion {start + 1}..{start + 4}")

    wait_for(lambda: len(acks(provider)) == len(commands), 10, "sdc-provider to acknowledge every command")
    lines = acks(provider)
    for (command, reason), line in zip(BAD, [a for a in lines if a.startswith("error ")]):
        check(line.startswith(f"error {command}: ") and reason in line, f"`{command}` answered {line!r}, expected "
                                                                         f"{reason!r}")
    check_equal(len([a for a in lines if a.startswith("error ")]), len(BAD), f"errors among {lines}")

    after = env.sdc_get("--url", url, "--json", "state")
    check_equal(after["mdib_version"], start + 4, "MdibVersion after the changes")
    check(all(s["descriptor_handle"] != HANDLE for s in after["states"]), "the removed metric's state is served")
    gone = env.sdc_get("--url", url, "state", HANDLE, expect=56)  # the provider's Fault
    check(f'unknown handle "{HANDLE}"' in gone.stderr, f"GetMdState of the removed handle: {gone.stderr!r}")
    check_equal(provider.stop(), 0, "exit status of sdc-provider after SIGTERM")

    step("ours → sdc11073's SdcProvider")
    python = sdc11073_python()
    peer_fifo = env.path("peer.fifo")
    os.mkfifo(peer_fifo)
    peer = env.start("sdc11073-provider", [python, peer_script("sdc11073_provider.py"), "--mdib",
                                           mdib_file("mdib.xml"), "--commands", peer_fifo], "sdc11073-provider ready")
    w = Watch(env.env, "--url", peer.ready["url"], "--json", "watch")
    w.wait_watching()

    def descriptions():
        return [json.loads(line) for line in w.lines[1:]
                if json.loads(line)["report"] == "DescriptionModificationReport"]
    with open(peer_fifo, "w") as f:
        for n, command in enumerate((f"add {PARENT} {HANDLE}", f"update {HANDLE} unit=264352", f"remove {HANDLE}")):
            f.write(command + "\n")
            f.flush()
            wait_for(lambda: len(descriptions()) > n or w.proc.poll() is not None, 20,
                     f"sdc-get watch to print the DescriptionModificationReport of `{command}`")
    w.proc.terminate()
    code, err = w.finish()
    check_equal(code, 0, f"exit status of sdc-get watch after SIGTERM ({err.strip()})")
    add, update, remove = descriptions()
    check_equal([(d["handle"], d["parent_handle"], d["unit_code"]) for d in add["created"]],
                [(HANDLE, PARENT, "262656")], "sdc11073 add: created")
    check_equal([(d["handle"], d["descriptor_version"], d["unit_code"]) for d in update["updated"]],
                [(HANDLE, "1", "264352")], "sdc11073 update: updated")
    check_equal([d["handle"] for d in remove["deleted"]], [HANDLE], "sdc11073 remove: deleted")
    versions = [r["mdib_version"] for r in (add, update, remove)]
    check(versions == sorted(set(versions)), f"sdc11073's MdibVersions of the changes: {versions}")
    reports = [json.loads(line) for line in w.lines[1:]]
    check(all(r["report"] != "Resync" for r in reports), f"the watch resynced: {[r['report'] for r in reports]}")
    step(f"sdc11073 → ours: {[r['report'] for r in reports]}")


if __name__ == "__main__":
    main(test)
