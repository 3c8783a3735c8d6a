#!/usr/bin/env python3
"""A registered store whose daemon is gone (SIGKILL: its Naming entry stays)
or stopped (SIGSTOP) does not break the commands across every store: `ls`
lists the Blobs of the stores that answered and names the others (a stderr
line; `unreachable` in --json) with exit 58 (partial); `locate` likewise;
`stat`, `pull` and `rm` without --store use the nearest store that answers,
and a Blob held only by a silent store is "not found in the stores that
answered", naming them. The daemons' naming checks leave the dead entry
alone; `blob stores --prune` removes it — and only it: a stopped daemon's
entry stays — reporting each one removed; then `ls` is whole again (exit 0)."""

import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, step  # noqa: E402


def names(listing):
    return sorted((b["store"], b["name"]) for b in listing["blobs"])


def unreachable(answer):
    return sorted(u["store"] for u in answer.get("unreachable", []))


def test(c):
    quick = ["--naming-check", "0.2"]
    c.start_daemon("a-archive", "file", tier="central", extra=quick)
    dead = c.start_daemon("b-dead", "file", tier="workstation", extra=quick)
    c.start_daemon("c-cache", "memory:16M", tier="memory", extra=quick)
    source = c.path("source")
    digest = harness.write_random(source, 50000)
    for store, blob in (("a-archive", "CT.a"), ("b-dead", "CT.b"), ("c-cache", "CT.c"), ("b-dead", "CT.shared"),
                        ("a-archive", "CT.shared")):
        c.blob("push", "--name", blob, source, store=store).ok()
    check_equal(names(c.blob("ls").ok()), [("a-archive", "CT.a"), ("a-archive", "CT.shared"), ("b-dead", "CT.b"),
                                           ("b-dead", "CT.shared"), ("c-cache", "CT.c")], "ls with every store up")

    step("b-dead SIGKILLed: its entry stays behind")
    dead.kill()

    step("ls across every store: the others' Blobs, b-dead named, exit 58")
    r = c.blob("ls")
    check_equal(r.code, EXIT["partial"], "exit status of ls with a dead store: " + r.describe())
    check_equal(names(r.json), [("a-archive", "CT.a"), ("a-archive", "CT.shared"), ("c-cache", "CT.c")],
                "Blobs listed with b-dead gone")
    check_equal(unreachable(r.json), ["b-dead"], "ls --json: unreachable")
    check(dead.ready["control"] in r.json["unreachable"][0]["error"],
          "the unreachable entry does not say where b-dead was: " + r.describe())
    r = c.blob("ls", json_out=False)
    check_equal(r.code, EXIT["partial"], "exit status of ls (text) with a dead store")
    check('blob: partial result: store "b-dead" did not answer (' in r.stderr, "ls (text): stderr " + r.describe())
    check(sorted(line.split()[-1] for line in r.stdout.splitlines()) == ["CT.a", "CT.c", "CT.shared"],
          "ls (text): stdout " + r.describe())
    c.blob("ls", store="a-archive").ok()

    step("locate: the stores that answered, b-dead named, exit 58")
    r = c.blob("locate", "CT.shared")
    check_equal(r.code, EXIT["partial"], "exit status of locate with a dead store: " + r.describe())
    check_equal([loc["store"] for loc in r.json["locations"]], ["a-archive"], "locate CT.shared: locations")
    check_equal(unreachable(r.json), ["b-dead"], "locate --json: unreachable")
    c.blob("locate", "CT.b").error(EXIT["no_such_blob"],
                                   'locate "CT.b": no registered store that answered holds it (did not answer: b-dead)')

    step("stat, pull without --store: the nearest store that answers")
    stat = c.blob("stat", "CT.shared").ok()
    check_equal((stat["store"], stat["checksum"]), ("a-archive", digest), "stat CT.shared without --store")
    out = c.path("out")
    c.blob("--no-local", "pull", "CT.shared", out).ok()
    check_equal(harness.checksum_file(out), digest, "pull CT.shared without --store")
    c.blob("stat", "CT.b").error(EXIT["no_such_blob"], 'stat "CT.b": no registered store that answered holds it '
                                 "(asked: a-archive, c-cache; did not answer: b-dead)")

    step("stores shows the dead entry unreachable (exit 0)")
    r = c.blob("stores").ok()
    entry = [s for s in r["stores"] if s["name"] == "b-dead"]
    check(len(entry) == 1 and "error" in entry[0], "b-dead in `blob stores`: " + str(r))

    # Meanwhile the daemons' naming checks (every 0.2 s) ran several times:
    # they leave the dead entry alone (ls below still names it).
    step("a stopped store (SIGSTOP) answers nothing within --timeout: ls names it too")
    stopped = next(p for p in c.processes if p.name.startswith("blobstored c-cache"))
    os.kill(stopped.pid, signal.SIGSTOP)
    try:
        r = c.blob("--timeout", "1", "ls")
        check_equal(r.code, EXIT["partial"], "exit status of ls with a dead and a stopped store: " + r.describe())
        check_equal(unreachable(r.json), ["b-dead", "c-cache"], "ls --json: unreachable (dead and stopped)")

        step("stores --prune: removes b-dead's entry only, and says so")
        r = c.blob("--timeout", "1", "stores", "--prune")
        r.ok()
        check_equal([(p["name"], p["control"]) for p in r.json["pruned"]], [("b-dead", dead.ready["control"])],
                    "stores --prune --json: pruned")
        check("connection refused" in r.json["pruned"][0]["reason"], "the reason of the removal: " + r.describe())
        check_equal(sorted(s["name"] for s in r.json["stores"]), ["a-archive", "c-cache"],
                    "the entries left after --prune (the stopped one stays)")
    finally:
        os.kill(stopped.pid, signal.SIGCONT)
    r = c.blob("stores", "--prune", json_out=False)
    r.ok()
    check("pruned" not in r.stdout, "a second --prune removed something: " + r.describe())

    step("ls is whole again")
    check_equal(names(c.blob("ls").ok()), [("a-archive", "CT.a"), ("a-archive", "CT.shared"), ("c-cache", "CT.c")],
                "ls after --prune")
    check_equal(c.blob("ls").ok()["unreachable"], [], "ls --json after --prune: unreachable")
    c.blob("--prune", "ls").error(EXIT["usage"], "--prune applies to stores only, not ls")


if __name__ == "__main__":
    harness.main(test)
