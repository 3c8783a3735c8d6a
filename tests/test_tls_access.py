#!/usr/bin/env python3
"""Every control-plane operation against the access list (docs/PROTOCOL.md,
"Access list"), one call at a time through tests/tools/corba_call.

For each operation of BlobStore, BlobTransporter and BlobLocator: a client
without the permission the operation needs gets NO_PERMISSION (exit 53,
"permission denied: client "CN=..." may not read"), a client with it gets
the answer; operations that need only a verified certificate answer a
client that holds no permission at all. A reservation serves only the
client that made it (commit, abort, recv, resumable), a transporter only
the client that opened it. The locator of a TLS daemon answers for its own
store only, to a client that may read there: it tells nobody about a Blob
of another store (it used to ask every store with the daemon's own
certificate); without TLS it still asks every registered store."""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, step  # noqa: E402
from test_tls import corba_call, make_ca, make_cert, tls_args  # noqa: E402

NO_SUCH_RESERVATION = 25  # Errc::no_such_reservation (not a `blob` exit code: harness.EXIT lacks it)


def locator_ior(c):
    """The reference bound as BlobStreaming/Locator (the last daemon started)."""
    r = subprocess.run(["nameclt", "-ORBInitRef", f"NameService={c.naming}", "resolve", "BlobStreaming/Locator"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30, env=c.env)
    check(r.returncode == 0 and r.stdout.strip().startswith("IOR:"), f"nameclt resolve: {r.stderr!r}")
    return r.stdout.strip()


def test(c):
    if shutil.which("openssl") is None:
        raise harness.TestSkipped("openssl is not installed")

    step("without TLS the locator still asks every registered store, nearest tier first")
    src = c.path("ct.bin")
    digest = harness.write_random(src, 64 * 1024 + 3)
    c.start_daemon("plain-central", "file", tier="central")
    c.start_daemon("plain-mem", "memory:1M", tier="memory")
    c.start_daemon("plain-empty", "memory:1M", tier="workstation")
    for store in ("plain-central", "plain-mem"):
        c.blob("push", "--name", "CT.plain", src, store=store).ok()
    code, out, err = corba_call(c, None, "locate", "CT.plain")
    check_equal((code, [loc["store"] for loc in out["result"]]), (0, ["plain-mem", "plain-central"]),
                f"plaintext locate ({err!r})")

    # A Naming Service of its own: the plaintext daemons' locator would
    # otherwise take BlobStreaming/Locator back from the TLS ones.
    c.start_naming()
    step("certificates: a CA, the stores, and clients holding one permission each, or none")
    make_ca(c, "ca")
    store_cert = make_cert(c, "ca", "store", "/CN=store.central", "serverAuth,clientAuth", san="IP:127.0.0.1")
    clients = {name: make_cert(c, "ca", name, f"/CN={name}", "clientAuth")
               for name in ("reader", "writer", "writer2", "deleter", "nobody", "beta-reader")}
    acl = ["--allow-read", "CN=reader", "--allow-write", "CN=writer", "--allow-write", "CN=writer2",
           "--allow-delete", "CN=deleter",
           # What docs/SECURITY.md used to ask for: the daemons' own subject
           # (their locators asked the other stores with it).
           "--allow-read", "CN=store.central"]
    alpha = c.start_daemon("alpha", "file", tier="workstation", extra=tls_args(c, *store_cert) + acl)
    alpha_locator = locator_ior(c)
    beta = c.start_daemon("beta", "file", tier="central",
                          extra=tls_args(c, *store_cert) + ["--allow-read", "CN=beta-reader",
                                                            "--allow-read", "CN=store.central",
                                                            "--allow-write", "CN=writer"])
    beta_locator = locator_ior(c)
    check(alpha_locator != beta_locator, "each daemon binds its own locator")

    def cli(who):
        return tls_args(c, *clients[who])

    for name in ("CT.1", "CT.del"):
        c.blob(*cli("writer"), "push", "--name", name, src, store="alpha").ok()
    c.blob(*cli("writer"), "push", "--name", "CT.secret", src, store="beta").ok()

    step("a TLS client places a push without --store itself (its own identity asks the stores), nearest first")
    check_equal(c.blob(*cli("writer"), "push", "--name", "CT.placed", src).ok().get("store"), "alpha",
                "push without --store under TLS")
    check_equal(c.blob(*cli("writer"), "push", "--name", "CT.placed", "--tier", "central", src).ok().get("store"),
                "beta", "push --tier central under TLS")
    c.blob(*cli("writer"), "push", "--name", "CT.placed", "--tier", "memory", src).error(
        EXIT["unknown_store"], "no registered store is of tier memory (registered: alpha (workstation), "
                               "beta (central)) (no locator asked: TLS; this client asked the stores itself)")

    def call(who, op, *args, store="alpha", **kw):
        return corba_call(c, clients[who] if who else None, op, *args, store=store, **kw)

    def refused(who, op, *args, permission, what=None, label="alpha", **kw):
        code, out, err = call(who, op, *args, **kw)
        what = what or (op + (f' "{args[0]}"' if args else ""))
        want = f'{what}: store "{label}": permission denied: client "CN={who}" may not {permission}'
        check_equal((code, out and out.get("message")), (EXIT["refused"], want), f"{op} as {who} ({err!r})")

    def ok(who, op, *args, **kw):
        code, out, err = call(who, op, *args, **kw)
        check(code == 0 and out["ok"], f"{op} as {who}: exit {code}, {out}, {err!r}")
        return out["result"]

    def reserve(name, size=0, who="writer"):
        return ok(who, "reserve", name, size)["id"]

    step("operations that need only a verified certificate answer a client without any permission")
    check_equal(ok("nobody", "name"), "alpha", "name")
    check_equal(ok("nobody", "status")["name"], "alpha", "status")
    check_equal(ok("nobody", "dataAddress")["port"], alpha.data[1], "dataAddress")
    check(ok("nobody", "openTransporter")["ior"].startswith("IOR:"), "openTransporter")
    check_equal(sorted(ok("nobody", "stores", locator=alpha_locator)), ["alpha", "beta"], "BlobLocator::stores")

    step("read: contains, stat, list, verify, findLocalFile, shareImage, send, locate")
    read_ops = [("contains", "CT.1"), ("stat", "CT.1"), ("list",), ("verify", "CT.1"), ("findLocalFile", "CT.1"),
                ("shareImage", "CT.1"), ("send", "CT.1")]
    for op, *args in read_ops:
        for who in ("writer", "deleter", "nobody"):
            refused(who, op, *args, permission="read")
        ok("reader", op, *args)
    check_equal(ok("reader", "contains", "CT.1"), True, "contains")
    check_equal(ok("reader", "verify", "CT.1")["checksum"], digest, "verify")
    for who in ("writer", "nobody"):
        refused(who, "locate", "CT.1", permission="read", label="locator", locator=alpha_locator)
    check_equal(ok("reader", "locate", "CT.1", locator=alpha_locator),
                [{"store": "alpha", "tier": 1, "endpoint": alpha.ready["control"]}], "locate by a reader")

    step("write: reserve, commit, abort, resumable, recv")
    for who in ("reader", "deleter", "nobody"):
        refused(who, "reserve", "CT.w", 0, permission="write")
    committed, aborted, filled = reserve("CT.commit"), reserve("CT.abort"), reserve("CT.recv")
    reserve("CT.resume", 10)
    for who in ("reader", "deleter", "nobody"):
        refused(who, "commit", committed, permission="write")
        refused(who, "abort", aborted, permission="write")
        refused(who, "recv", filled, permission="write")
        refused(who, "resumable", "CT.resume", permission="write")
    for who in ("reader", "deleter", "nobody"):
        refused(who, "place", "1", permission="write", label="locator", locator=alpha_locator)
    check_equal(ok("writer", "place", "1", locator=alpha_locator), {"store": "alpha", "tier": 1, "byDefault": True},
                "place by a writer: the locator's own store only")
    code, out, err = call("writer", "place", "1", "3", locator=alpha_locator)
    check_equal((code, out and out.get("message")),
                (EXIT["unknown_store"], 'place "1": store "locator": no registered store is of tier central '
                                        '(registered: alpha (workstation, the default)) (with TLS the locator places '
                                        'on its own store only)'), f"place in tier central by a writer ({err!r})")
    check_equal(ok("writer", "commit", committed)["name"], "CT.commit", "commit by the writer")
    ok("writer", "abort", aborted)
    check_equal(ok("writer", "recv", filled)["length"], 0, "recv by the writer")
    check_equal(ok("writer", "resumable", "CT.resume")["size"], 10, "resumable by the writer")

    step("delete: remove")
    for who in ("reader", "writer", "nobody"):
        refused(who, "remove", "CT.del", permission="delete")
    ok("deleter", "remove", "CT.del")
    refused("writer", "stat", "CT.del", permission="read")
    code, out, _ = call("reader", "stat", "CT.del")
    check_equal(code, EXIT["no_such_blob"], "stat of the removed Blob")

    step("a reservation serves only the client that made it")
    mine = reserve("CT.mine", 10)
    for op, what in (("commit", "commit reservation"), ("abort", "abort reservation"),
                     ("recv", "recv into reservation")):
        code, out, err = call("writer2", op, mine)
        check_equal((code, out["message"]),
                    (NO_SUCH_RESERVATION,
                     f'{op} "{mine}": store "alpha": {what} {mine}: it was reserved by another client; only the '
                     "client that reserved it may commit, abort, fill or resume it"), f"{op} by another writer")
    code, out, _ = call("writer2", "resumable", "CT.mine")
    check_equal((code, out["message"]),
                (NO_SUCH_RESERVATION,
                 'resumable "CT.mine": store "alpha": no interrupted push of "CT.mine" to resume (none was started, '
                 "it was committed or aborted, its grace period ran out, or a data connection is still filling it)"),
                "another writer asking for the reservation")
    check_equal(ok("writer", "resumable", "CT.mine")["id"], mine, "its own writer resuming it")
    ok("writer", "abort", mine)
    with open(alpha.log_paths[0], errors="replace") as f:
        check('commit reservation %d refused: reserved by client "CN=writer", asked by "CN=writer2"' % mine
              in f.read(), "the store's log names both clients")

    step("a transporter serves only the client that opened it")
    transporter = ok("writer", "openTransporter")["ior"]
    theirs = reserve("CT.theirs")
    for op, args in (("poll", ()), ("observe", ()), ("cancel", ()), ("send", ("CT.1",)), ("recv", (theirs,)),
                     ("close", ())):
        for who in ("reader", "writer2"):
            refused(who, op, *args, permission="do this", transporter=transporter)
    check_equal(ok("writer", "poll", transporter=transporter), {"notices": 0}, "poll by its opener")
    ok("writer", "observe", transporter=transporter)
    ok("writer", "cancel", transporter=transporter)
    ok("writer", "recv", theirs, transporter=transporter)
    ok("writer", "close", transporter=transporter)

    step("the locator tells a client only what it may read: its own store, never another's")
    # The reader may read alpha, not beta, which holds CT.secret.
    check_equal(ok("reader", "locate", "CT.secret", locator=alpha_locator), [], "alpha's locator, CT.secret")
    refused("reader", "locate", "CT.secret", permission="read", label="locator", locator=beta_locator)
    refused("reader", "contains", "CT.secret", permission="read", store="beta", label="beta")
    check_equal(ok("beta-reader", "locate", "CT.secret", locator=beta_locator),
                [{"store": "beta", "tier": 3, "endpoint": beta.ready["control"]}], "beta's locator, its reader")
    refused("beta-reader", "locate", "CT.secret", permission="read", label="locator", locator=alpha_locator)
    c.blob(*cli("reader"), "locate", "CT.secret").error(EXIT["no_such_blob"],
                                                       'locate "CT.secret": no registered store holds it')
    r = c.blob(*cli("beta-reader"), "locate", "CT.secret")
    r.ok()
    check_equal([loc["store"] for loc in r.json["locations"]], ["beta"], "blob locate by beta's reader")
    with open(beta.log_paths[0], errors="replace") as f:
        check('contains refused: permission denied: client "CN=reader" may not read' in f.read(),
              "beta's log of the refused contains")

    step("both daemons survived every refusal")
    check(alpha.running() and beta.running(), "a daemon died")


if __name__ == "__main__":
    harness.main(test)
