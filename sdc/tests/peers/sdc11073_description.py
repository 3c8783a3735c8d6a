"""sdc11073's SdcConsumer (validate=True) with its default subscriptions
(start_all()) and a ConsumerMdib following a provider's description changes.

Drives the provider through its command FIFO: adds a metric descriptor
under a channel, sets its value, updates its unit and Resolution, removes
it. After each step it waits (bounded) until the ConsumerMdib shows the
change, then compares every descriptor and state container of the
ConsumerMdib with those of a fresh GetMdib from the provider (all container
properties, plus each descriptor's parent). Prints one JSON object:
{"subscriptions": [...], "steps": [{"step", "seen", "mdib_version",
"descriptor", "state", "mismatches"}...], "is_connected"}.

Runs inside the test venv (sdc11073==3.0.0). Arguments:
  --url URL --fifo PATH --parent CHANNEL --handle NEW_HANDLE [--timeout S]
"""

import argparse
import json
import sys
import threading
import time

from sdc11073 import observableproperties
from sdc11073.consumer.consumerimpl import SdcConsumer
from sdc11073.definitions_sdc import SdcV1Definitions
from sdc11073.mdib.consumermdib import ConsumerMdib


def properties(container):
    """The container's properties as comparable text (name -> repr of the value)."""
    return {name: repr(getattr(container, name)) for name, _ in container.sorted_container_properties()}


def compare(mdib, get):
    """Differences between the ConsumerMdib and the provider's GetMdib."""
    descriptors, states = get.get_mdib().result
    mismatches = []
    theirs = {d.Handle: d for d in descriptors}
    with mdib.mdib_lock:
        ours = {d.Handle: d for d in mdib.descriptions.objects}
        our_states = {s.DescriptorHandle: s for s in mdib.states.objects}
        our_states.update({s.Handle: s for s in mdib.context_states.objects})
        if set(ours) != set(theirs):
            mismatches.append(f"descriptor handles: only in ConsumerMdib {sorted(set(ours) - set(theirs))}, "
                              f"only in GetMdib {sorted(set(theirs) - set(ours))}")
        for handle in sorted(set(ours) & set(theirs)):
            a, b = properties(ours[handle]), properties(theirs[handle])
            if a != b:
                mismatches.append(f"descriptor {handle}: " + ", ".join(
                    f"{k}: {a.get(k)} != {b.get(k)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)))
            if ours[handle].parent_handle != theirs[handle].parent_handle:
                mismatches.append(f"descriptor {handle}: parent {ours[handle].parent_handle} != "
                                  f"{theirs[handle].parent_handle}")
        their_states = {(s.Handle if s.is_context_state else s.DescriptorHandle): s for s in states}
        if set(our_states) != set(their_states):
            mismatches.append(f"state keys: only in ConsumerMdib {sorted(set(our_states) - set(their_states))}, "
                              f"only in GetMdib {sorted(set(their_states) - set(our_states))}")
        for key in sorted(set(our_states) & set(their_states)):
            a, b = properties(our_states[key]), properties(their_states[key])
            if a != b:
                mismatches.append(f"state {key}: " + ", ".join(
                    f"{k}: {a.get(k)} != {b.get(k)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)))
    return mismatches


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--fifo", required=True)
    parser.add_argument("--parent", required=True)
    parser.add_argument("--handle", required=True)
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args()
    consumer = SdcConsumer(args.url, sdc_definitions=SdcV1Definitions, ssl_context_container=None, validate=True)
    consumer.start_all()  # default: subscribes to every event service the metadata lists
    out = {"subscriptions": sorted(a.split("/")[-1] for s in consumer._subscription_mgr.subscriptions.values()
                                   for a in s._filter_type.text.split())}
    mdib = ConsumerMdib(consumer)
    mdib.init_mdib()
    get = consumer.client("Get")
    changed = threading.Condition()

    def wake(_):
        with changed:
            changed.notify_all()
    observableproperties.bind(mdib, description_modifications=wake, metrics_by_handle=wake)

    def descriptor():
        return mdib.descriptions.handle.get_one(args.handle, allow_none=True)

    def state():
        return mdib.states.descriptor_handle.get_one(args.handle, allow_none=True)

    def describe_descriptor(d):
        if d is None:
            return None
        return {"type": d.NODETYPE.localname, "version": d.DescriptorVersion, "parent": d.parent_handle,
                "unit": d.Unit.Code if d.Unit is not None else None,
                "resolution": None if getattr(d, "Resolution", None) is None else str(d.Resolution)}

    def describe_state(s):
        if s is None:
            return None
        value = s.MetricValue.Value if s.MetricValue is not None else None
        return {"type": s.NODETYPE.localname, "version": s.StateVersion, "descriptor_version": s.DescriptorVersion,
                "value": None if value is None else str(value)}

    steps = [
        ("add", f"add {args.parent} {args.handle} numeric 262656",
         lambda: descriptor() is not None and state() is not None),
        ("set", f"set {args.handle} 42",
         lambda: state() is not None and state().MetricValue is not None and str(state().MetricValue.Value) == "42"),
        ("update", f"update {args.handle} unit=264352 Resolution=0.5",
         lambda: descriptor() is not None and descriptor().Unit.Code == "264352"),
        ("remove", f"remove {args.handle}", lambda: descriptor() is None and state() is None),
    ]
    out["steps"] = []
    fifo = open(args.fifo, "w")
    try:
        for name, command, done in steps:
            fifo.write(command + "\n")
            fifo.flush()
            deadline = time.monotonic() + args.timeout
            with changed:
                while not done() and time.monotonic() < deadline:
                    changed.wait(0.05)
            seen = done()
            with mdib.mdib_lock:
                record = {"step": name, "seen": seen, "mdib_version": mdib.mdib_version,
                          "descriptor": describe_descriptor(descriptor()), "state": describe_state(state()),
                          "parent_version": mdib.descriptions.handle.get_one(args.parent).DescriptorVersion}
            record["mismatches"] = compare(mdib, get)
            out["steps"].append(record)
            if not seen:
                break
        out["is_connected"] = consumer.is_connected
    finally:
        fifo.close()
        consumer.stop_all(unsubscribe=True)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
