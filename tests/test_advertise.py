#!/usr/bin/env python3
"""`blobstored --advertise HOST`: what clients are told to connect to (NAT,
a DNS name in a certificate), for both endpoints, while the daemon listens
where --control-address and --data-address say.

- A daemon listening on every interface that advertises 127.0.0.2 (another
  loopback address): its ready line, `blob stores --json` and the CORBA
  reference name 127.0.0.2 with the ports it listens on; a push and a pull
  through it are bit-exact, and the daemon saw the data connections come to
  127.0.0.2 (ss: its established connections' local address).
- Without --advertise, the same daemon advertises the control endpoint's
  host (not 127.0.0.2).
- Bad values (a port, blanks, an empty name) are refused, exit 1, naming the
  value and what is allowed."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402


def start(c, name, extra):
    argv = [harness.program("blobstore/blobstored"), "--name", name, "--store", "memory:64M", "--naming", c.naming,
            *extra]
    err_path = c.path(f"{name}.err")
    with open(err_path, "wb") as err:
        popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=c.env,
                                 text=True)
    c.processes.append(harness.Process(f"blobstored {name}", popen, [err_path]))
    line = popen.stdout.readline().strip()
    check(line.startswith("blobstored ready"), f"blobstored {' '.join(extra)}: no ready line ({line!r})")
    fields = dict(f.split("=", 1) for f in line.split()[2:])
    step(line)
    return popen, fields


def test(c):
    step("bad --advertise values")
    for value in ("127.0.0.2:80", "a b", "", "-x"):
        code, _out, err = c.run([harness.program("blobstore/blobstored"), "--name", "x", "--store", "memory:1M",
                                 "--naming", c.naming, "--advertise", value], timeout=60)
        check(code == 1 and f'--advertise: "{value}" is not a host name or address' in err,
              f"--advertise {value!r}: exit {code}: {err.strip()!r}")

    popen, fields = start(c, "nat", ["--advertise", "127.0.0.2"])
    check(fields["data"].startswith("127.0.0.2:") and fields["control"].startswith("127.0.0.2:"),
          f"ready line with --advertise 127.0.0.2: {fields}")
    stores = {s["name"]: s for s in c.blob("stores").ok()["stores"]}
    check_equal(stores["nat"].get("data"), fields["data"], "data endpoint of `blob stores` for nat")

    src = c.path("src")
    digest = harness.write_random(src, 3 * harness.MiB)
    check_equal(c.blob("push", "--name", "CT.adv", src, store="nat").ok().get("checksum"), digest, "push via 127.0.0.2")
    check_equal(c.pull_checksum("CT.adv", "nat", c.path("out")), digest, "pull via 127.0.0.2")
    # The data connections went to 127.0.0.2 (their TIME_WAIT remains, on
    # whichever side closed first): TCP sockets with 127.0.0.2:DATA_PORT.
    r = subprocess.run(["ss", "-Htan"], capture_output=True, text=True, timeout=30)
    check(fields["data"] in r.stdout, f"no TCP connection with {fields['data']} in `ss -tan`")

    _popen, plain = start(c, "plain", [])
    check(not plain["data"].startswith("127.0.0.2:"), f"without --advertise the data host is {plain['data']}")
    check_equal(plain["data"].rsplit(":", 1)[0], plain["control"].rsplit(":", 1)[0],
                "without --advertise, the data host is the control endpoint's")


if __name__ == "__main__":
    harness.main(test)
