#!/usr/bin/env python3
"""Every program speaks the same command line (docs/CLI.md, "Common options"):
blob, blobstored, bsbench, sdc-get, sdc-provider and sdc-bench each

- print their version and their libraries' on --version (exit 0);
- accept -q, -v, -d and --log-level warning (the run then fails on a later,
  deliberate error, whose message proves the flags were taken), and refuse an
  unknown level naming the allowed ones;
- parse sizes with T and G (x1024): a value past the option's range is
  refused with the range, one within it gets past the parser;
- refuse an abbreviated option (--stor for --store), naming it (exit 1);
- exit with the shared codes: sdc-get's unreachable provider is 52 and
  sdc-provider's unreadable MDIB 13, as in the table of docs/CLI.md.

No Naming Service is needed: nothing here gets as far as contacting one,
except blob against a closed port (52).
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, TestFailure, check, step  # noqa: E402

CORBA_LIBS = ("omniORB", "ACE", "OpenSSL", "Boost", "spdlog")
SDC_LIBS = ("libxml2", "Boost", "spdlog")
CLOSED = f"corbaname::127.0.0.1:{harness.free_port()}"  # nobody listens there


class Env:
    def dump_logs(self):
        pass

    def close(self):
        pass


def run(prog, *args, expect, says=None):
    argv = [harness.program(prog), *map(str, args)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    where = f"`{prog} {' '.join(map(str, args))}`"
    if r.returncode != expect:
        raise TestFailure(f"{where} exited {r.returncode}, expected {expect}\n{r.stdout}{r.stderr}")
    if says is not None and says not in r.stdout + r.stderr:
        raise TestFailure(f"{where}: {says!r} not in its output:\n{r.stdout}{r.stderr}")
    return r


def test(_env):
    programs = {
        # program: (libraries in --version, an abbreviation of one of its options,
        #           a valid run that fails later: (argv, exit, message))
        "clients/blob": (CORBA_LIBS, ("--stor", "x", "ls"),
                         (["-n", CLOSED, "ls"], EXIT["unreachable"], "cannot contact the naming service")),
        "blobstore/blobstored": (CORBA_LIBS, ("--nam", "x"),
                                 (["--name", "a", "--store", "bogus"], 1,
                                  '--store: "bogus" is not file:DIR, memory:SIZE or rados:POOL')),
        "benchmarks/bsbench": (CORBA_LIBS, ("--serv",), ([], 1, "must either be a client (-c) or server (-s)")),
        "sdc/sdc-get": (SDC_LIBS, ("--disc",), (["state"], 1, "give exactly one of --url and --discover")),
        "sdc/sdc-provider": (SDC_LIBS, ("--mdi", "x"),
                             (["--mdib", "/nonexistent.xml"], EXIT["invalid_mdib"], "cannot open")),
        "sdc/sdc-bench": (SDC_LIBS, ("--roun", "3"), ([], 1, "--url is required")),
    }
    for prog, (libraries, abbreviated, (later, code, message)) in programs.items():
        name = prog.split("/")[1]
        step(f"{name}: --version names the program and its libraries")
        out = run(prog, "--version", expect=0).stdout
        check(out.startswith(f"{name} (Blob Streaming) "), f"{name} --version: {out!r}")
        for library in libraries:
            check(f"\n  {library} " in out, f"{name} --version does not name {library}: {out!r}")

        step(f"{name}: an abbreviated option is refused, by name")
        run(prog, *abbreviated, expect=1, says=f"unrecognised option '{abbreviated[0]}'")

        step(f"{name}: -q, -v, -d, --log-level warning are taken; an unknown level is refused")
        for flags in (["-q"], ["-v"], ["-d"], ["--log-level", "warning"], ["-q", "--log-level=warning"]):
            run(prog, *flags, *later, expect=code, says=message)
        run(prog, "--log-level", "loud", *later, expect=1,
            says='--log-level: "loud" is not one of trace, debug, info, warning (warn), error, critical, off')

    step("sizes with T and G: past the range refused with the range, within it accepted")
    run("clients/blob", "--socket-buffer", "2T", "ls", expect=1,
        says='--socket-buffer: "2T" is out of range (allowed: 0 to 1G)')
    run("clients/blob", "--socket-buffer", "1G", "-n", CLOSED, "ls", expect=EXIT["unreachable"])
    run("clients/blob", "--offset", "2X", "ls", expect=1,
        says='--offset: "2X" is not a size (a number of bytes, optionally with K, M, G or T: x1024)')
    run("blobstore/blobstored", "--name", "a", "--store", "memory:1M", "--socket-buffer", "2T", expect=1,
        says='--socket-buffer: "2T" is out of range (allowed: 4K to 1G)')
    run("blobstore/blobstored", "--name", "a", "--store", "memory:1T", "--evict", "--capacity", "1G", expect=1,
        says="--capacity applies to a file or rados store")
    # A store's size without a unit below 1 MiB is a typo for 512M, not a store of 512 bytes.
    run("blobstore/blobstored", "--name", "a", "--store", "memory:512", expect=1,
        says='"memory:512": 512 bytes is too small for a store; give a unit (512M: 512 MiB;')
    run("blobstore/blobstored", "--name", "a", "--store", "file:/nonexistent/cap", "--capacity", "100", expect=1,
        says="--capacity: 100 bytes is too small for a store; give a unit (100M: 100 MiB;")
    run("benchmarks/bsbench", "-c", "127.0.0.1", "-p", "1", "--size", "2T", expect=1,
        says='--size: "2T" is out of range (allowed: 1 to 1T)')
    run("benchmarks/bsbench", "-c", "127.0.0.1", "-p", "1", "--size", "1T", expect=1,
        says="--size x --count: at most 8G per run")
    run("benchmarks/bsbench", "-c", "127.0.0.1", "-p", "1", "--chunk", "2G", expect=1,
        says='--chunk: "2G" is out of range (allowed: 1K to 1G)')
    run("sdc/sdc-provider", "--max-body", "1T", "--mdib", "/nonexistent.xml", expect=EXIT["invalid_mdib"],
        says="cannot open")
    run("sdc/sdc-bench", "--raw", "1G:1K", expect=1, says='--raw (request): "1G" is out of range (allowed: 1 to 64M)')

    step("durations: seconds by default, units allowed, range in the message")
    run("sdc/sdc-get", "--url", "http://127.0.0.1:1/x", "-t", "500ms", "state", expect=EXIT["unreachable"],
        says="cannot connect")
    run("sdc/sdc-get", "--url", "http://127.0.0.1:1/x", "-t", "0", "state", expect=1,
        says='--timeout: "0" is out of range (allowed: 0.001 to 86400 seconds)')
    run("sdc/sdc-get", "--url", "http://127.0.0.1:1/x", "--timeout", "5x", "state", expect=1,
        says='--timeout: "5x" is not a duration (a number of seconds, or a number with ms, s, m or h)')
    run("clients/blob", "--timeout", "25h", "ls", expect=1,
        says='--timeout: "25h" is out of range (allowed: 0.001 to 86400 seconds)')
    run("blobstore/blobstored", "--name", "a", "--store", "memory:1M", "--idle-timeout", "50ms", expect=1,
        says='--idle-timeout: "50ms" is out of range (allowed: 0.1 to 86400 seconds)')

    step("checksum algorithms: the names allowed, in the message")
    run("blobstore/blobstored", "--name", "a", "--store", "memory:1M", "--checksum", "md5", expect=1,
        says='--checksum: "md5" is not a checksum algorithm (allowed: crc32c, sha256)')

    step("sdc-get: -d is debug, not --discover")
    run("sdc/sdc-get", "-d", "state", expect=1, says="give exactly one of --url and --discover")


if __name__ == "__main__":
    harness.run(test, lambda _name: Env())
