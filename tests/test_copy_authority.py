#!/usr/bin/env python3
"""Store-to-store copies carry the client's authority, never the
destination's (docs/SECURITY.md, "Copies by capability").

Two TLS stores with certificates of their own: the source C lets the
destination B read everything (what an operator grants a cache that mirrors
a tier), and lets the client "reader" read. A client that may write to B
but not read C cannot get C's Blob into B with `blob copy` (it used to: B
read C with its own certificate), and cannot learn whether C holds a name
either. A client that may read C and write B copies bit-exact: it asks C
for a read grant for B, and B presents it. The grant is bound to B: its
client cannot present it on C's data port, nor for C's same-host file; and
B answers awaitFetch only to the client that began the fetch. A batch
whose later grants expire before the destination reaches them (a source
with a short --ticket-lifetime) is still copied whole: the client asks
again for what expired."""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, step  # noqa: E402
from test_tls import corba_call, make_ca, make_cert, tls_args  # noqa: E402


def test(c):
    if shutil.which("openssl") is None:
        raise harness.TestSkipped("openssl is not installed")
    step("certificates: a CA, the two stores (each its own subject) and the clients")
    make_ca(c, "ca")
    certs = {name: make_cert(c, "ca", name, f"/CN={name}", "serverAuth,clientAuth", san="IP:127.0.0.1")
             for name in ("store.b", "store.c")}
    certs.update({name: make_cert(c, "ca", name, f"/CN={name}", "clientAuth")
                  for name in ("writer", "bwriter", "both", "reader")})
    source = c.start_daemon("C", "file", tier="central", extra=tls_args(c, *certs["store.c"]) + [
        "--allow-write", "CN=writer", "--allow-read", "CN=both", "--allow-read", "CN=reader",
        # The operator lets B read everything here (a cache of this tier).
        "--allow-read", "CN=store.b"])
    c.start_daemon("B", "file", tier="workstation", extra=tls_args(c, *certs["store.b"]) + [
        "--allow-write", "CN=bwriter", "--allow-write", "CN=both", "--allow-read", "CN=reader",
        "--allow-read", "CN=both"])

    def cli(who):
        return tls_args(c, *certs[who])

    src = c.path("secret.bin")
    digest = harness.write_random(src, 3 * 1024 * 1024 + 17)
    c.blob(*cli("writer"), "push", "--name", "CT.SECRET", src, store="C").ok()

    step("a client that may write to B but not read C: `blob copy` is refused by C, B holds nothing")
    r = c.blob(*cli("bwriter"), "copy", "CT.SECRET", "--from", "C", "--to", "B", json_out=False)
    r.error(EXIT["refused"], 'permission denied: client "CN=bwriter" may not read')
    check('store "C"' in r.stderr, f"the refusal names the source store: {r.stderr!r}")
    c.blob(*cli("reader"), "stat", "CT.SECRET", store="B", json_out=False).error(EXIT["no_such_blob"], "CT.SECRET")

    step("no oracle: a name C does not hold is refused alike, not answered \"not found\"")
    c.blob(*cli("bwriter"), "copy", "CT.NO.SUCH", "--from", "C", "--to", "B", json_out=False).error(
        EXIT["refused"], 'permission denied: client "CN=bwriter" may not read')

    step("a client that may read C and write B copies bit-exact (C's grant for B)")
    c.blob(*cli("both"), "copy", "CT.SECRET", "--from", "C", "--to", "B").ok()
    out = c.path("copied.bin")
    c.blob(*cli("reader"), "pull", "CT.SECRET", out, store="B").ok()
    check_equal(harness.checksum_file(out), digest, "the copy at B")
    check("read grant of \"CT.SECRET\"" in harness.log_text(source) and 'for store "CN=store.b"' in
          harness.log_text(source), "C logged the grant and its reader")

    step("B says who it is: the reader a client names in a grant")
    code, line, err = corba_call(c, certs["reader"], "identity", store="B")
    check_equal((code, line and line.get("result")), (0, "CN=store.b"), f"identity of B ({err!r})")

    step("a grant for B is B's: its client cannot present it on C's data port")
    code, line, err = corba_call(c, certs["reader"], "grantRead", "CT.SECRET", "CN=store.b", store="C")
    check(code == 0 and line["ok"], f"grantRead as reader: exit {code}, {line}, {err!r}")
    ticket = line["result"]
    code, line, err = corba_call(c, certs["reader"], "pull", ticket["ticket"], ticket["port"], 0, ticket["length"])
    check(code != 0 and "was issued to client \"CN=store.b\"" in (line or {}).get("message", ""),
          f"the reader presenting B's grant on C's data port: exit {code}, {line}, {err!r}")

    step("nor for C's file on this host (findGrantedFile): only the grant's reader may")
    code, line, err = corba_call(c, certs["reader"], "grantRead", "CT.SECRET", "CN=store.b", store="C")
    ticket = line["result"]
    code, line, err = corba_call(c, certs["reader"], "findGrantedFile", ticket["ticket"], store="C")
    check(code != 0 and "was issued to another client" in (line or {}).get("message", ""),
          f"findGrantedFile as the grant's client: exit {code}, {line}, {err!r}")
    code, line, err = corba_call(c, certs["reader"], "findGrantedFile", "0" * 32, store="C")
    check(code != 0 and "unknown ticket" in (line or {}).get("message", ""),
          f"findGrantedFile of an unknown ticket: exit {code}, {line}, {err!r}")

    step("grantRead needs read permission at the source, as send does")
    code, line, err = corba_call(c, certs["bwriter"], "grantRead", "CT.SECRET", "CN=store.b", store="C")
    check_equal((code, line and line.get("message")),
                (EXIT["refused"], 'grantRead "CT.SECRET": store "C": permission denied: client "CN=bwriter" may not read'),
                f"grantRead as bwriter ({err!r})")

    step("a grant whose data endpoint is not the source's is refused: B connects only where C serves")
    code, line, err = corba_call(c, certs["both"], "fetchGrant", "CT.SECRET", "C", source.data[1] + 1, store="B")
    check(code != 0 and f"is not store \"C\"'s (127.0.0.1:{source.data[1]})" in (line or {}).get("message", ""),
          f"fetch of a forged grant: exit {code}, {line}, {err!r}")
    code, line, err = corba_call(c, certs["both"], "fetchGrant", "CT.SECRET", "C", "-", store="B")
    check(code == 0 and line["result"]["size"] == 3 * 1024 * 1024 + 17, f"fetch of the grant as issued: {line}, {err!r}")

    step("awaitFetch answers only the client that began the fetch")
    code, line, err = corba_call(c, certs["bwriter"], "awaitFetch", "CT.SECRET", store="B")
    check(code == EXIT["no_such_blob"] and "this client began no fetch of it" in (line or {}).get("message", ""),
          f"awaitFetch of a fetch this client did not begin: exit {code}, {line}, {err!r}")

    step("a batch outlasting its grants: the expired ones are asked for again, every Blob copied")
    s_access = tls_args(c, *certs["store.c"]) + ["--allow-write", "CN=writer", "--allow-read", "CN=both"]
    # The Blobs are pushed before the store's tickets are made short: a push's
    # own ticket must not expire in a slow TLS handshake (a sanitizer build).
    slow = c.start_daemon("S", "file", tier="central", extra=s_access)
    big = c.path("big.bin")
    big_digest = harness.write_random(big, 24 * 1024 * 1024)
    names = [f"CT.batch.{i}" for i in range(8)]
    for name in names:
        c.blob(*cli("writer"), "push", "--name", name, big, store="S").ok()
    slow.stop()
    slow = c.start_daemon("S", "file", tier="central", store_dir=slow.store_dir,
                          extra=s_access + ["--ticket-lifetime", "150ms"])
    c.start_daemon("D", "memory:512M", tier="workstation", extra=tls_args(c, *certs["store.b"]) + [
        "--allow-write", "CN=both", "--allow-read", "CN=both", "--no-local"])
    c.blob(*cli("both"), "copy", *names, "--from", "S", "--to", "D", "--window", "1").ok()
    for name in names:
        got = c.path(name + ".pulled")
        c.blob(*cli("both"), "pull", name, got, store="D").ok()
        check_equal(harness.checksum_file(got), big_digest, f"{name} at D")
    expired = harness.log_text(slow).count(" expired ")
    step(f"grants that expired before their turn and were asked for again: {expired}")


if __name__ == "__main__":
    harness.main(test)
