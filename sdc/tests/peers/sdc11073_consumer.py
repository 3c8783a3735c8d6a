"""sdc11073's SdcConsumer (validate=True) against an SDC provider: runs the
get-service checks and prints one JSON object on stdout.

Runs inside the test venv (sdc11073==3.0.0). Arguments:
  --url URL          the provider's device URL, or
  --discover EPR     find it by WSDiscovery.search_services on 127.0.0.1
  --handle H         a handle for the HandleRef checks
  --rounds N         additionally time N GetMdState round trips (ns list in "rtt_ns")
"""

import argparse
import json
import sys
import time

from sdc11073.consumer.consumerimpl import SdcConsumer
from sdc11073.definitions_sdc import SdcV1Definitions
from sdc11073.mdib.consumermdib import ConsumerMdib
from sdc11073.wsdiscovery import WSDiscovery


def state_list(states):
    return sorted([s.DescriptorHandle, s.NODETYPE.localname] for s in states)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("--discover")
    parser.add_argument("--handle", default="")
    parser.add_argument("--rounds", type=int, default=0)
    parser.add_argument("--pause-ms", type=float, default=0.0)
    parser.add_argument("--stamps-url", default="")
    args = parser.parse_args()
    out = {}
    url = args.url
    if args.discover:
        wsd = WSDiscovery("127.0.0.1")
        wsd.start()
        try:
            services = []
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                services = [s for s in wsd.search_services(types=SdcV1Definitions.MedicalDeviceTypesFilter, timeout=2)
                            if s.epr == args.discover]
                if services:
                    break
            out["discovered"] = [s.epr for s in services]
            if not services:
                print(json.dumps(out), flush=True)
                return 3
            consumer = SdcConsumer.from_wsd_service(services[0], ssl_context_container=None, validate=True)
        finally:
            wsd.stop()
    else:
        consumer = SdcConsumer(url, sdc_definitions=SdcV1Definitions, ssl_context_container=None, validate=True)
    consumer.start_all(not_subscribed_actions=[a.value for a in SdcV1Definitions.Actions])
    try:
        get = consumer.client("Get")
        result = get.get_md_state()
        out["states"] = state_list(result.result.MdState.State)
        out["mdib_version"] = result.mdib_version_group.mdib_version
        if args.handle:
            one = get.get_md_state([args.handle])
            out["handle_states"] = state_list(one.result.MdState.State)
            desc_one = get.get_md_description([args.handle])
            out["handle_mds"] = sorted(m.container.Handle for m in desc_one.result.MdDescription.Mds)
        desc = get.get_md_description()
        out["mds"] = sorted(m.container.Handle for m in desc.result.MdDescription.Mds)
        mdib = get.get_mdib()
        descriptors, states = mdib.result  # sdc11073 returns (descriptor containers, state containers)
        out["mdib_descriptors"] = len(descriptors)
        out["mdib_states"] = len(states)
        cmdib = ConsumerMdib(consumer)
        cmdib.init_mdib()
        out["consumer_mdib_descriptors"] = len(cmdib.descriptions.objects)
        out["consumer_mdib_states"] = len(cmdib.states.objects)
        if args.rounds:
            rtt = []
            for _ in range(args.rounds):
                t0 = time.monotonic_ns()
                get.get_md_state([args.handle] if args.handle else None)
                rtt.append(time.monotonic_ns() - t0)
                if args.pause_ms:
                    time.sleep(args.pause_ms / 1000.0)
            out["rtt_ns"] = rtt
    finally:
        consumer.stop_all(unsubscribe=False)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
