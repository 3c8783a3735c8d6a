"""sdc11073's own SdcProvider serving an MDIB file (validate=True, plain HTTP,
WS-Discovery on 127.0.0.1). Prints one ready line
`sdc11073-provider ready url=URL epr=EPR` and serves until SIGTERM.

Runs inside the test venv (sdc11073==3.0.0). Arguments: --mdib FILE
"""

import argparse
import signal
import sys
import threading
import uuid

from sdc11073.definitions_sdc import SdcV1Definitions
from sdc11073.mdib.providermdib import ProviderMdib
from sdc11073.provider import SdcProvider
from sdc11073.wsdiscovery import WSDiscovery
from sdc11073.xml_types.dpws_types import ThisDeviceType, ThisModelType


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mdib", required=True)
    args = parser.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    wsd = WSDiscovery("127.0.0.1")
    wsd.start()
    mdib = ProviderMdib.from_mdib_file(args.mdib, protocol_definition=SdcV1Definitions)
    model = ThisModelType(manufacturer="sdc11073", manufacturer_url="http://example.invalid",
                          model_name="peer", model_number="1", model_url="http://example.invalid/model",
                          presentation_url="http://example.invalid/presentation")
    device = ThisDeviceType(friendly_name="sdc11073 peer", firmware_version="1", serial_number="1")
    provider = SdcProvider(wsd, model, device, mdib, epr=uuid.uuid4(), validate=True, ssl_context_container=None)
    provider.start_all(start_rtsample_loop=False)
    provider.publish()
    print(f"sdc11073-provider ready url={provider.get_xaddrs()[0]} epr={provider.epr_urn}", flush=True)
    stop.wait(3600)
    provider.stop_all()
    wsd.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
