"""sdc11073's SdcConsumer (validate=True) with its default subscriptions
(start_all()) and a ConsumerMdib following a provider's metric changes.

For each value it writes `set HANDLE VALUE` to the provider's command FIFO
and waits (bounded) until the ConsumerMdib holds that value; prints one JSON
object: the subscribed actions, the values seen, the MdibVersions, and the
latency of each change (ns from just before the command to the value in the
ConsumerMdib, CLOCK_MONOTONIC).

Runs inside the test venv (sdc11073==3.0.0). Arguments:
  --url URL --handle H --fifo PATH [--rounds N] [--pause-ms MS], or
  --url URL --handle H --wait-for VALUE: prints `sdc11073-watch ready
  value=V mdib_version=N` once subscribed, then waits (--timeout) until the
  ConsumerMdib holds VALUE (the change is made by someone else)
  [--tls-key K --tls-cert C --tls-ca CA]   (TLS: the consumer's identity)
  [--first-value V]                         (values V, V+1, ...)
  [--hold S]   wait S seconds after subscribing before the first change
               (with a short subscription: sdc11073 renews it meanwhile)
The JSON object also lists "problems": every warning or error sdc11073
logged (e.g. a message its validation refused, a failed renew), and
"subscribed": each subscription's is_subscribed at the end.
"""

import argparse
import decimal
import json
import logging
import pathlib
import sys
import threading
import time

from sdc11073.certloader import mk_ssl_contexts
from sdc11073.consumer.consumerimpl import SdcConsumer
from sdc11073.definitions_sdc import SdcV1Definitions
from sdc11073.mdib.consumermdib import ConsumerMdib
from sdc11073 import observableproperties


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--handle", required=True)
    parser.add_argument("--fifo")
    parser.add_argument("--wait-for")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pause-ms", type=float, default=0.0)
    parser.add_argument("--first-value", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--tls-key")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-ca")
    parser.add_argument("--hold", type=float, default=0.0)
    args = parser.parse_args()
    problems = []

    class Problems(logging.Handler):
        def emit(self, record):
            try:
                text = record.getMessage()
            except Exception:  # sdc11073 formats some messages with {} itself
                text = f"{record.msg} {record.args}"
            problems.append(f"{record.levelname} {record.name}: {text}")

    handler = Problems(logging.WARNING)
    logging.getLogger("sdc").addHandler(handler)
    logging.getLogger("sdc").setLevel(logging.INFO)
    ssl_contexts = None
    if args.tls_cert:
        ssl_contexts = mk_ssl_contexts(pathlib.Path(args.tls_key), pathlib.Path(args.tls_cert),
                                       pathlib.Path(args.tls_ca))
    consumer = SdcConsumer(args.url, sdc_definitions=SdcV1Definitions, ssl_context_container=ssl_contexts,
                           validate=True)
    consumer.start_all()  # default: subscribes to every event service the metadata lists
    out = {"subscriptions": sorted(a.split("/")[-1] for s in consumer._subscription_mgr.subscriptions.values()
                                   for a in s._filter_type.text.split())}
    mdib = ConsumerMdib(consumer)
    mdib.init_mdib()
    changed = threading.Condition()

    def on_metrics(_):
        with changed:
            changed.notify_all()
    observableproperties.bind(mdib, metrics_by_handle=on_metrics)

    def current():
        state = mdib.states.descriptor_handle.get_one(args.handle, allow_none=True)
        if state is None or state.MetricValue is None or state.MetricValue.Value is None:
            return None
        return state.MetricValue.Value

    if args.wait_for is not None:
        try:
            print(f"sdc11073-watch ready value={current()} mdib_version={mdib.mdib_version}", flush=True)
            deadline = time.monotonic() + args.timeout
            with changed:
                while current() != decimal.Decimal(args.wait_for) and time.monotonic() < deadline:
                    changed.wait(0.05)
            out["seen"] = None if current() is None else str(current())
            out["mdib_version"] = mdib.mdib_version
            out["is_connected"] = consumer.is_connected
        finally:
            consumer.stop_all(unsubscribe=True)
        print(json.dumps(out), flush=True)
        return 0
    if args.hold:
        time.sleep(args.hold)  # the subscriptions are renewed meanwhile (or lost)
    fifo = open(args.fifo, "w")
    seen, latency, versions = [], [], []
    try:
        for i in range(args.rounds):
            value = args.first_value + i
            t0 = time.monotonic_ns()
            fifo.write(f"set {args.handle} {value}\n")
            fifo.flush()
            deadline = time.monotonic() + args.timeout
            with changed:
                while current() != decimal.Decimal(value) and time.monotonic() < deadline:
                    changed.wait(0.05)
            t1 = time.monotonic_ns()
            got = current()
            seen.append(None if got is None else str(got))
            if got != decimal.Decimal(value):
                break
            latency.append(t1 - t0)
            versions.append(mdib.mdib_version)
            if args.pause_ms:
                time.sleep(args.pause_ms / 1000.0)
        out["seen"] = seen
        out["latency_ns"] = latency
        out["mdib_versions"] = versions
        out["is_connected"] = consumer.is_connected
        out["subscribed"] = [s.is_subscribed for s in consumer._subscription_mgr.subscriptions.values()]
    finally:
        consumer.stop_all(unsubscribe=True)
    out["problems"] = problems
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
