"""sdc-provider's event services (WS-Eventing as DPWS and IEEE 11073-20702
profile it), driven with raw SOAP: a subscriber receives the
EpisodicMetricReport of each metric change with increasing MdibVersion;
Renew, GetStatus and Unsubscribe; then every bad input, each with the
specified Fault: a malformed Subscribe, an unknown filter dialect, an
action the service does not have, a pull delivery mode, a date or zero
Expires, a Subscribe at the GetService, unknown and expired subscription
identifiers. A NotifyTo that refuses connections and one that never answers
end their subscriptions (SubscriptionEnd DeliveryFailure to EndTo) while a
good subscriber keeps receiving every report."""

import sys

sys.dont_write_bytecode = True  # noqa: E402 (keeps the source tree free of __pycache__)

import os
import re

from sdclib import (REPORTS, WSE, EventSink, check, check_equal, main, mdib_file, soap, soap_post, step,
                    subscribe_body, wait_for)

HANDLE = "numeric.ch0.vmd0"


def fault(answer, status, subcode, reason, what):
    code, body = answer
    check_equal(code, status, f"{what}: HTTP status")
    check(subcode in body and reason in body,
          f"{what}: expected a Fault {subcode} with {reason!r}, got {body[:800]!r}")
    step(f"{what}: HTTP {code}, {subcode}: {re.search(r'<s12:Text[^>]*>(.*?)</s12:Text>', body).group(1)}")


def identifier(body):
    """The subscription manager's reference parameter: bss:Identifier of our
    own namespace (not wse:Identifier, whose schema type allows no
    wsa:IsReferenceParameter)."""
    check("<wse:Identifier" not in body, f"a wse:Identifier reference parameter: {body[:800]}")
    return re.search(r'<bss:Identifier xmlns:bss="urn:blobstreaming:sdc:subscription">(.*?)</bss:Identifier>',
                     body).group(1)


def manager(body):
    return re.search(r"<wse:SubscriptionManager><wsa:Address>(.*?)</wsa:Address>", body).group(1)


def manage(op, subscription, body_extra="", old_form=False):
    """A subscription manager request with the reference parameter as a
    header; `old_form`: as wse:Identifier (what this provider used to hand
    out), still accepted."""
    address, ident = subscription
    header = (f'<wse:Identifier wsa:IsReferenceParameter="true">{ident}</wse:Identifier>' if old_form else
              f'<bss:Identifier xmlns:bss="urn:blobstreaming:sdc:subscription" wsa:IsReferenceParameter="true">'
              f'{ident}</bss:Identifier>')
    return soap_post(address, soap(f"{WSE}/{op}", f"<wse:{op}>{body_extra}</wse:{op}>", to=address, headers=header))


def setter(env, fifo_path):
    fifo = open(fifo_path, "w")

    def set_value(value):
        fifo.write(f"set {HANDLE} {value}\n")
        fifo.flush()
    return set_value


def mdib_version(report):
    return int(re.search(r'EpisodicMetricReport[^>]*MdibVersion="(\d+)"', report).group(1))


def test(env):
    fifo_path = env.path("commands")
    os.mkfifo(fifo_path)
    provider = env.start_provider(mdib_file("mdib.xml"), "--no-discovery", "--notify-timeout", "700",
                                  "--commands", fifo_path)
    set_value = setter(env, fifo_path)
    device = provider.ready["url"]
    state_event = device + "/StateEvent"
    good = EventSink()

    step("Subscribe to EpisodicMetricReport")
    code, body = soap_post(state_event, soap(f"{WSE}/Subscribe", subscribe_body(good.url(), expires="PT30S"),
                                             to=state_event))
    check_equal(code, 200, f"Subscribe: HTTP status ({body[:500]})")
    check("<wse:Expires>PT30S</wse:Expires>" in body, f"granted expiry: {body}")
    sub = (manager(body), identifier(body))
    step(f"subscribed: manager {sub[0]}, identifier {sub[1]}")

    versions = []
    for value in (11, 12, 13):
        set_value(value)
        path, report = good.next(what=f"the report of value {value}")
        check_equal(path, "/notify", "NotifyTo path")
        check(f"{REPORTS}EpisodicMetricReport" in report, f"report action: {report[:400]}")
        check(f'DescriptorHandle="{HANDLE}"' in report and f'Value="{value}"' in report,
              f"report of {HANDLE}={value}: {report}")
        versions.append(mdib_version(report))
    check_equal(versions, [versions[0], versions[0] + 1, versions[0] + 2], "MdibVersion of successive reports")

    code, body = manage("GetStatus", sub)
    check(code == 200 and "GetStatusResponse" in body and "<wse:Expires>PT" in body, f"GetStatus: {code} {body}")
    code, body = manage("Renew", sub, "<wse:Expires>PT20S</wse:Expires>")
    check(code == 200 and "<wse:Expires>PT20S</wse:Expires>" in body, f"Renew: {code} {body}")
    code, body = manage("GetStatus", (sub[0].rsplit("/", 1)[0] + "/other", sub[1]), old_form=True)
    check(code == 200 and "GetStatusResponse" in body, f"GetStatus with a wse:Identifier header: {code} {body}")
    step("GetStatus and Renew answered (also with the older wse:Identifier header)")

    step("bad Subscribe requests")
    post = lambda body, to=state_event: soap_post(to, soap(f"{WSE}/Subscribe", body, to=to))  # noqa: E731
    fault(post("<wse:Subscribe><wse:Filter/></wse:Subscribe>"), 400, "wse:InvalidMessage",
          "no wse:Delivery element", "Subscribe without Delivery")
    fault(post("<wse:Subscribe><wse:Delivery><wse:NotifyTo/></wse:Delivery></wse:Subscribe>"), 400,
          "wse:InvalidMessage", "no wse:Delivery/wse:NotifyTo/wsa:Address", "Subscribe without NotifyTo address")
    fault(post(subscribe_body("ftp://127.0.0.1:1/x")), 400, "wse:InvalidMessage",
          "only http:// and https:// are supported", "Subscribe with an ftp NotifyTo")
    fault(post(subscribe_body(good.url(), dialect="http://www.w3.org/TR/1999/REC-xpath-19991116")), 400,
          "wse:FilteringRequestedUnavailable", 'filter dialect "http://www.w3.org/TR/1999/REC-xpath-19991116" '
          "is not supported", "Subscribe with an XPath filter")
    fault(post(subscribe_body(good.url(), actions=[REPORTS + "NoSuchReport"])), 400,
          "dpws:FilterActionNotSupported", f'filter action "{REPORTS}NoSuchReport" is not an event of the '
          "StateEventService", "Subscribe to an unknown action")
    fault(post(subscribe_body(good.url(), mode=f"{WSE}/DeliveryModes/Pull")), 400,
          "wse:DeliveryModeRequestedUnavailable", "is not supported; only", "Subscribe with pull delivery")
    fault(post(subscribe_body(good.url(), expires="2030-01-01T00:00:00Z")), 400, "wse:UnsupportedExpirationType",
          "only an xs:duration", "Subscribe with a date as Expires")
    fault(post(subscribe_body(good.url(), expires="PT0S")), 400, "wse:InvalidExpirationTime",
          '"PT0S" is not a positive xs:duration', "Subscribe with Expires PT0S")
    fault(post(subscribe_body(good.url()), to=device + "/Get"), 400, "wsa:ActionNotSupported",
          "subscriptions are served at", "Subscribe posted to the GetService")

    step("unknown and expired subscription identifiers")
    unknown = (sub[0], "urn:uuid:00000000-0000-0000-0000-000000000000")
    fault(manage("GetStatus", unknown), 400, "wsa:DestinationUnreachable",
          'no subscription "urn:uuid:00000000-0000-0000-0000-000000000000" (unknown, expired or ended)',
          "GetStatus of an unknown identifier")
    fault(manage("Renew", unknown), 500, "wse:UnableToRenew", "cannot renew: no subscription",
          "Renew of an unknown identifier")
    fault(manage("Unsubscribe", unknown), 400, "wsa:DestinationUnreachable", "no subscription",
          "Unsubscribe of an unknown identifier")
    code, body = post(subscribe_body(EventSink().url(), expires="PT1S"))
    check_equal(code, 200, "Subscribe with Expires PT1S")
    short = (manager(body), identifier(body))
    wait_for(lambda: manage("GetStatus", short)[0] == 400, 10, "the 1 s subscription to expire")
    fault(manage("Renew", short), 500, "wse:UnableToRenew", "(unknown, expired or ended)",
          "Renew of an expired subscription")

    step("a NotifyTo that refuses connections and one that never answers")
    ends = EventSink()
    refused, silent = EventSink("refuse"), EventSink("silent")
    subs = {}
    for name, sink in (("refused", refused), ("silent", silent)):
        code, body = post(subscribe_body(sink.url(), end_to=ends.url(f"/end-{name}")))
        check_equal(code, 200, f"Subscribe with a {name} NotifyTo")
        subs[name] = (manager(body), identifier(body))
    for value in (21, 22, 23):
        set_value(value)
        path, report = good.next(timeout=5, what=f"the good subscriber's report of {value}")
        check(f'Value="{value}"' in report, f"good subscriber, value {value}: {report[:300]}")
    got = {}
    for _ in range(2):
        path, body = ends.next(timeout=15, what="SubscriptionEnd of a failed subscriber")
        got[path] = body
    for name in ("refused", "silent"):
        body = got.get(f"/end-{name}")
        check(body is not None, f"no SubscriptionEnd for the {name} NotifyTo (got {list(got)})")
        check(f"{WSE}/SubscriptionEnd" in body and f"{WSE}/DeliveryFailure" in body and subs[name][1] in body,
              f"SubscriptionEnd of the {name} subscriber: {body}")
        fault(manage("GetStatus", subs[name]), 400, "wsa:DestinationUnreachable",
              f'the subscription "{subs[name][1]}" was ended by the provider: cannot deliver to',
              f"GetStatus of the ended ({name}) subscription")
        fault(manage("Renew", subs[name]), 500, "wse:UnableToRenew",
              "was ended by the provider: cannot deliver to", f"Renew of the ended ({name}) subscription")
        step(f"{name}: {re.search(r'<wse:Reason[^>]*>(.*?)</wse:Reason>', body).group(1)}")
    set_value(24)
    check('Value="24"' in good.next(timeout=5)[1], "the good subscriber still receives reports")

    step("Unsubscribe")
    code, body = manage("Unsubscribe", sub)
    check(code == 200 and f"{WSE}/UnsubscribeResponse" in body, f"Unsubscribe: {code} {body}")
    fault(manage("GetStatus", sub), 400, "wsa:DestinationUnreachable", "no subscription",
          "GetStatus after Unsubscribe")
    set_value(25)
    check_equal(provider.stop(), 0, "exit status of sdc-provider after SIGTERM")
    check(good.posts.empty(), "a report arrived after Unsubscribe")
    for sink in (good, ends, refused, silent):
        sink.close()

    step("a subscriber that falls behind: --notify-queue 2, a NotifyTo that never answers, a 60 s timeout")
    fifo2 = env.path("commands2")
    os.mkfifo(fifo2)
    slow_provider = env.start_provider(mdib_file("mdib.xml"), "--no-discovery", "--notify-timeout", "60000",
                                       "--notify-queue", "2", "--commands", fifo2, name="sdc-provider-queue")
    state_event = slow_provider.ready["url"] + "/StateEvent"
    stuck, ends = EventSink("silent"), EventSink()
    code, body = soap_post(state_event, soap(f"{WSE}/Subscribe", subscribe_body(stuck.url(), end_to=ends.url("/end")),
                                             to=state_event))
    check_equal(code, 200, "Subscribe of the stuck subscriber")
    set_slow = setter(env, fifo2)
    for value in range(31, 36):  # the first (in flight) and the second fill the queue; the third overflows
        set_slow(value)
    path, body = ends.next(timeout=15, what="SubscriptionEnd of the subscriber that fell behind")
    check(f"{WSE}/DeliveryFailure" in body and "did not keep up: 2 notifications queued" in body,
          f"SubscriptionEnd of the subscriber that fell behind: {body}")
    step(f"fell behind: {re.search(r'<wse:Reason[^>]*>(.*?)</wse:Reason>', body).group(1)}")
    check_equal(slow_provider.stop(), 0, "exit status of the second sdc-provider")
    stuck.close()
    ends.close()


if __name__ == "__main__":
    main(test)
