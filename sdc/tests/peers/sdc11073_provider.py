"""sdc11073's own SdcProvider serving an MDIB file (validate=True, plain HTTP,
WS-Discovery on 127.0.0.1). Prints one ready line
`sdc11073-provider ready url=URL epr=EPR` and serves until SIGTERM.

Runs inside the test venv (sdc11073==3.0.0). Arguments: --mdib FILE
[--tls-key K --tls-cert C --tls-ca CA]: TLS (https, client certificates
required) with sdc11073's ssl_context_container.
[--commands FIFO]: apply `set HANDLE VALUE` lines (a metric state
transaction each, so sdc11073 sends an EpisodicMetricReport), each
acknowledged on stdout with `set HANDLE VALUE mdib_version=N`; and
description changes (a descriptor transaction each, so sdc11073 sends a
DescriptionModificationReport): `add PARENT HANDLE` (a
NumericMetricDescriptor with its state under channel PARENT), `update
HANDLE unit=CODE`, `remove HANDLE`, acknowledged as
`VERB HANDLE mdib_version=N`.
"""

import argparse
import decimal
import pathlib
import signal
import sys
import threading
import uuid

from sdc11073.definitions_sdc import SdcV1Definitions
from sdc11073.mdib.providermdib import ProviderMdib
from sdc11073.provider import SdcProvider
from sdc11073.wsdiscovery import WSDiscovery
from sdc11073.xml_types.dpws_types import ThisDeviceType, ThisModelType


def describe(mdib, words):
    """A description change in one descriptor transaction (see the module's text)."""
    model = mdib.data_model
    with mdib.descriptor_transaction() as transaction:
        if words[0] == "add" and len(words) == 3:
            parent = mdib.descriptions.handle.get_one(words[1])
            descriptor = model.mk_descriptor_container(model.pm_names.NumericMetricDescriptor, words[2], parent)
            descriptor.Unit = model.pm_types.CodedValue("262656")
            descriptor.MetricCategory = model.pm_types.MetricCategory.MEASUREMENT
            descriptor.MetricAvailability = model.pm_types.MetricAvailability.CONTINUOUS
            descriptor.Resolution = decimal.Decimal("1")
            transaction.add_descriptor(descriptor)
            transaction.add_state(model.mk_state_container(descriptor))
        elif words[0] == "update" and len(words) == 3 and words[2].startswith("unit="):
            transaction.get_descriptor(words[1]).Unit = model.pm_types.CodedValue(words[2][len("unit="):])
        elif words[0] == "remove" and len(words) == 2:
            transaction.remove_descriptor(words[1])
        else:
            raise ValueError("expected `add PARENT HANDLE`, `update HANDLE unit=CODE` or `remove HANDLE`")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mdib", required=True)
    parser.add_argument("--commands")
    parser.add_argument("--tls-key")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-ca")
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
    ssl_contexts = None
    if args.tls_cert:
        from sdc11073.certloader import mk_ssl_contexts
        ssl_contexts = mk_ssl_contexts(pathlib.Path(args.tls_key), pathlib.Path(args.tls_cert),
                                       pathlib.Path(args.tls_ca))
    provider = SdcProvider(wsd, model, device, mdib, epr=uuid.uuid4(), validate=True,
                           ssl_context_container=ssl_contexts)
    provider.start_all(start_rtsample_loop=False)
    provider.publish()
    print(f"sdc11073-provider ready url={provider.get_xaddrs()[0]} epr={provider.epr_urn}", flush=True)
    if args.commands:
        def apply():
            with open(args.commands) as commands:
                for line in commands:
                    words = line.split()
                    if words and words[0] in ("add", "update", "remove"):
                        try:
                            describe(mdib, words)
                        except Exception as e:  # noqa: BLE001 (the error goes back to the test)
                            print(f"error {line.strip()}: {e}", flush=True)
                            continue
                        handle = words[2] if words[0] == "add" else words[1]
                        print(f"{words[0]} {handle} mdib_version={mdib.mdib_version}", flush=True)
                        continue
                    if len(words) != 3 or words[0] != "set":
                        print(f"error {line.strip()}: expected `set HANDLE VALUE`", flush=True)
                        continue
                    with mdib.metric_state_transaction() as transaction:
                        state = transaction.get_state(words[1])
                        if state.MetricValue is None:
                            state.mk_metric_value()
                        state.MetricValue.Value = decimal.Decimal(words[2])
                    print(f"set {words[1]} {words[2]} mdib_version={mdib.mdib_version}", flush=True)
        threading.Thread(target=apply, daemon=True).start()
    stop.wait(3600)
    provider.stop_all()
    wsd.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
