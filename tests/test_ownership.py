#!/usr/bin/env python3
"""Ids a client can name belong to the client that made them
(docs/SECURITY.md, "Access and ownership"), with real omniNames, blobstored,
blob and tests/tools/corba_call processes under TLS: the client is the
certificate's subject (without TLS every process of a test is 127.0.0.1,
one client).

- a store event subscription: a reader that asks to unsubscribe the ids 1 to
  30 (what ended another client's `blob watch` before) and the watcher's own
  id gets the answer of an unknown id; the daemon logs the refusal naming
  both clients; the watcher keeps receiving; its own client ends it;
- a push in parts: client X reserves with reserveParts and both parts are
  acknowledged; client Y's push of the same name is refused (exit 21, the
  name, that another client's push is in progress, until when); X's commit
  succeeds and the Blob holds X's bytes; a push superseding X's own kept
  push in parts logs the bytes its parts brought (it logged 0);
- a ticket: another client's transporter cancelling it leaves it alone (the
  answer of an unknown ticket, logged): a pull with it still gets the Blob;
  the transporter that issued it withdraws it (a pull is then refused);
- a DICOM gateway's study-stable subscription (plaintext: blob-dicomd has
  no TLS): unsubscribing the ids 1 to 30 ends nothing, the watcher gets its
  event."""

import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, log_text, MiB, step  # noqa: E402
import test_events  # noqa: E402
from harness.dicom import AE, Gateway, make_objects  # noqa: E402
from test_tls import corba_call, make_ca, make_cert, tls_args  # noqa: E402


class Watcher(test_events.Watcher):
    """`blob watch --json --store STORE` as the client of `cert`, its events parsed."""

    def __init__(self, c, name, cert, store):
        super().__init__(c, name, "--store", store, options=tls_args(c, *cert))

    def next_name(self, timeout=20):
        """The Blob name of the next event; TestFailure when none comes in time."""
        return self.take(1, timeout)[0]["name"]


def test(c):
    if shutil.which("openssl") is None:
        raise harness.TestSkipped("openssl is not installed")
    step("certificates: a CA, the store, readers and writers")
    make_ca(c, "ca")
    store_cert = make_cert(c, "ca", "store", "/CN=store.alpha", "serverAuth,clientAuth", san="IP:127.0.0.1")
    certs = {name: make_cert(c, "ca", name, f"/CN={name}", "clientAuth")
             for name in ("watcher", "reader", "writer", "writer2")}
    acl = ["--allow-read", "CN=watcher", "--allow-read", "CN=reader", "--allow-read", "CN=writer",
           "--allow-write", "CN=writer", "--allow-read", "CN=writer2", "--allow-write", "CN=writer2"]
    alpha = c.start_daemon("alpha", "file", extra=tls_args(c, *store_cert) + acl)

    def call(who, op, *args, **kw):
        return corba_call(c, certs[who], op, *args, store="alpha", **kw)

    def ok(who, op, *args, **kw):
        code, out, err = call(who, op, *args, **kw)
        check(code == 0 and out["ok"], f"{op} as {who}: exit {code}, {out}, {err!r}")
        return out["result"]

    def push(who, name, path, *extra):
        return c.blob(*tls_args(c, *certs[who]), "push", *extra, "--name", name, path, store="alpha")

    small = c.path("small.bin")
    harness.write_random(small, 4096)

    subscription_ownership(c, alpha, certs, ok, push, small)
    push_in_parts_ownership(c, alpha, certs, ok, push)
    ticket_ownership(c, alpha, certs, ok, push, small)

    step("the daemon survived every refusal")
    check(alpha.running(), "the daemon died")

    study_subscription_ids(c)


def subscription_ownership(c, alpha, certs, ok, push, small):
    step("a reader cannot end another client's subscription, whichever id it names")
    watch = Watcher(c, "watch", certs["watcher"], "alpha")
    found = re.findall(r'store events: subscription (\d+) (?:of client "CN=watcher" )?for the subscriber at',
                       log_text(alpha))
    check_equal(len(found), 1, "the daemon's log line of the watcher's subscription")
    sid = int(found[0])
    for guess in [*range(1, 31), sid, sid + 1]:
        check_equal(ok("reader", "unsubscribe", guess), None, f"unsubscribe {guess} by another client")

    step("the watcher still receives; the refusal is logged; its id is not one of a sequence")
    push("writer", "CT.after", small).ok()
    check_equal(watch.next_name(), "CT.after", "the watcher's next event")
    text = log_text(alpha)
    check(f"subscription {sid} ended" not in text, "the watcher's subscription was ended")
    check(f'store events: unsubscribe {sid} refused: the subscription is client "CN=watcher"\'s, asked by client '
          '"CN=reader"; it goes on' in text, "the daemon's log line of the refused unsubscribe")
    check(re.search(rf'subscription {sid} of client "CN=watcher" for the subscriber at', text),
          "the daemon's log line names the subscription's client")
    check(sid > 30, f"the subscription id {sid} is one of a short sequence")

    step("its own client ends its subscription")
    check_equal(ok("watcher", "unsubscribe", sid), None, "unsubscribe by its own client")
    check(f"store events: subscription {sid} ended by its subscriber" in log_text(alpha),
          "the daemon's log line of the owner's unsubscribe")
    push("writer", "CT.unwatched", small).ok()
    harness.wait_for(lambda: "CT.unwatched" in log_text(alpha), 20, "the push's log line")
    check(watch.events.empty(), f"an event after the unsubscribe: {list(watch.events.queue)}")
    watch.end()


def push_in_parts_ownership(c, alpha, certs, ok, push):
    step("X's push in parts, both parts acknowledged; Y's push of the name is refused")
    src = c.path("parts.bin")
    digest = harness.write_random(src, 2 * MiB, algorithm="crc32c")
    x = ok("writer", "pushParts", "CT.parts", src, 2)
    check_equal((x["size"], x["parts"], x["checksum"]), (2 * MiB, 2, digest), "X's parts")
    r = push("writer2", "CT.parts", src)
    r.error(EXIT["already_exists"],
            'reserve "CT.parts": another client\'s push of "CT.parts" is in progress (its reservation is kept '
            "for that client to finish or resume it); try again after ")
    message = r.stderr + json.dumps(r.json or {})
    check(re.search(r"try again after \d\d:\d\d:\d\d UTC \(in \d+ s\), when it is released if that push has not "
                    r"gone on", message), f"when to try again: {message!r}")
    r = push("writer2", "CT.parts", src, "--streams", "2")
    r.error(EXIT["already_exists"], 'another client\'s push of "CT.parts" is in progress')

    step("X's commit succeeds with X's bytes")
    info = ok("writer", "commit", x["id"], x["checksum"])
    check_equal((info["name"], info["size"], info["checksum"]), ("CT.parts", 2 * MiB, digest), "X's commit")
    out = c.path("parts.out")
    r = c.blob(*tls_args(c, *certs["writer"]), "--no-local", "pull", "CT.parts", out, store="alpha")
    r.ok()
    check_equal(harness.checksum_file(out, "crc32c"), digest, "the Blob's bytes are X's")
    check("superseded" not in log_text(alpha), "a push was superseded")

    step("X's own new push supersedes its kept push in parts; the log counts its bytes")
    y = ok("writer", "pushParts", "CT.again", src, 2)
    push("writer", "CT.again", src).ok()
    check('interrupted push of "CT.again" (2097152 of 2097152 bytes) superseded by a new push: aborted'
          in log_text(alpha), "the daemon's log line of the superseded push in parts")
    code, out_line, _ = corba_call(c, certs["writer"], "commit", y["id"], y["checksum"], store="alpha")
    check_equal(code, 25, f"the superseded reservation's commit: {out_line}")


def ticket_ownership(c, alpha, certs, ok, push, small):
    step("another client's transporter cannot cancel a ticket: it stays usable")
    push("writer", "CT.ticket", small).ok()
    digest = harness.checksum_file(small, "crc32c")
    mine = ok("writer", "openTransporter")["ior"]
    theirs = ok("writer2", "openTransporter")["ior"]

    def pull(ticket):
        return corba_call(c, certs["writer"], "pull", ticket["ticket"], ticket["port"], 0, ticket["length"])

    ticket = ok("writer", "send", "CT.ticket", transporter=mine)
    check_equal(ok("writer2", "cancel", ticket["ticket"], transporter=theirs), None, "cancel by another client")
    code, out, err = pull(ticket)
    check_equal((code, out and out.get("result")), (0, {"bytes": 4096, "checksum": digest}),
                f"a pull with the ticket another client cancelled ({out}, {err!r})")
    check(f'cancel of ticket {ticket["ticket"][:8]} ignored: this transporter did not issue it' in log_text(alpha),
          "the daemon's log line of the ignored cancel")

    step("the transporter that issued a ticket withdraws it")
    ticket = ok("writer", "send", "CT.ticket", transporter=mine)
    ok("writer", "cancel", ticket["ticket"], transporter=mine)
    code, out, err = pull(ticket)
    check_equal(code, EXIT["refused"], f"a pull with a withdrawn ticket ({out}, {err!r})")
    ok("writer", "close", transporter=mine)
    ok("writer2", "close", transporter=theirs)


def study_subscription_ids(c):
    """blob-dicomd has no TLS: every client of this test is one client
    (127.0.0.1), so what shows here is that its ids are no sequence; that
    another client's id is refused is StudyEvents' use of the stores' rule
    (SubscriptionTable, EventHubTest)."""
    if not os.access(os.path.join(harness.build_dir(), "gateway/blob-dicomd"), os.X_OK):
        step("blob-dicomd is not built: its study-stable subscriptions are not checked")
        return
    step("a gateway's study-stable subscription: unsubscribing ids 1 to 30 ends nothing")
    c.start_naming()  # the plaintext gateway and store apart from the TLS ones
    c.start_daemon("plain", "file")
    gw = Gateway(c, "plain", "gateway", extra=("--stable-after", "1"))
    watch = test_events.Watcher(c, "watch-study", "--events", "study-stable")
    found = re.findall(r'study events: subscription (\d+) (?:of client "[^"]*" )?for the subscriber at', gw.log())
    check_equal(len(found), 1, "the gateway's log line of the watcher's subscription")
    sid = int(found[0])
    for guess in range(1, 31):
        code, out, err = corba_call(c, None, "studyUnsubscribe", AE, guess)
        check_equal((code, out and out.get("ok")), (0, True), f"studyUnsubscribe {guess} ({out}, {err!r})")
    study = make_objects(c, "study", c.path("owned"), "2", "PATOWN", "20261115")
    gw.storescu(*[o["path"] for o in study])
    (event,) = watch.take(1, timeout=30)
    check_equal((event["event"], event["study"]), ("study-stable", study[0]["study"]),
                "the watcher's study-stable event after the unsubscribe attempts")
    check("ended by its subscriber" not in gw.log(), "the gateway ended the watcher's subscription")
    check(sid > 30, f"the study subscription id {sid} is one of a short sequence")

    step("a client keeps at most 16 study-stable subscriptions")
    more = [test_events.Watcher(c, f"watch-study-{n}", "--events", "study-stable") for n in range(2, 17)]
    code, _, err = c.run([harness.program("clients/blob"), "--naming", c.naming, "watch", "--json", "--events",
                          "study-stable"], timeout=60)
    check_equal(code, EXIT["limit_reached"], f"exit code of a 17th study-stable watch ({err.strip()!r})")
    check(re.search(r'client "[^"]+" has 16 subscriptions open, the most one client may keep; unsubscribe one first',
                    err) is not None,
          f"the 17th study-stable watch's message: {err.strip()!r}")
    for w in more:
        w.end()
    watch.end()


if __name__ == "__main__":
    harness.main(test)
