#!/usr/bin/env python3
"""Every listening socket of the programs, checked from /proc against the
table in docs/SECURITY.md ("Listening sockets"): each program started with
its defaults listens on every interface only where the table's default says
so (blobstored's control and data ports, blob-activatord's endpoint,
blob-dicomd's DICOM port: servers for other hosts), on 127.0.0.1 where the
endpoint only serves callbacks of daemons on this host (the CORBA endpoint
of `blob watch` and of blob-dicomd when the naming service is on loopback);
and each address option moves its socket (to 127.0.0.2, a loopback address
that no default uses). The sockets are those of the process's own
descriptors among the LISTEN entries of /proc/net/tcp and tcp6.
"""

import os
import socket
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402
from harness import ceph, processes  # noqa: E402

WILDCARDS = {"0.0.0.0", "::"}


def _addr(hex_addr):
    ip, port = hex_addr.split(":")
    raw = bytes.fromhex(ip)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, struct.pack("<I", struct.unpack(">I", raw)[0])), int(port, 16)
    words = struct.unpack(">4I", raw)
    packed = b"".join(struct.pack("<I", w) for w in words)
    return socket.inet_ntop(socket.AF_INET6, packed), int(port, 16)


def listening(pid):
    """Sorted (address, port) of the TCP sockets process `pid` listens on."""
    inodes = set(ceph.listening_sockets([pid]))  # its descriptors among the LISTEN entries
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                    found.add(_addr(fields[1]))
    return sorted(found)


def wait_listening(proc, count, what):
    """The sockets of `proc` once it listens on at least `count` of them."""
    def enough():
        if not proc.running():
            raise harness.TestFailure(f"{what} exited with {proc.popen.returncode}")
        got = listening(proc.pid)
        return got if len(got) >= count else None

    return harness.wait_for(enough, 30, f"{what} to listen on {count} socket(s)")


def check_hosts(sockets, expected, what):
    """`expected`: the addresses, "*" for every interface (0.0.0.0, or ::
    for a dual-stack socket)."""
    hosts = sorted("*" if host in WILDCARDS else host for host, _ in sockets)
    check_equal(hosts, sorted(expected), f"addresses {what} listens on ({sockets})")


def start(c, name, argv, ready):
    return processes.start_service(name, argv, ready, 60, env=c.env, out_path=c.path(f"{name}.out"),
                                   err_path=c.path(f"{name}.err"), track=c.processes)


def watch(c, name, *options):
    err = c.path(f"{name}.err")
    with open(err, "wb") as e:
        proc = c.spawn(name, [harness.program("clients/blob"), "--naming", c.naming, "--store", "central",
                              *options, "watch"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=e)
    proc.log_paths.append(err)
    return proc


def test(c):
    blobstored = harness.program("blobstore/blobstored")

    step("blobstored with its defaults: control and data ports on every interface (servers), as documented")
    daemon = start(c, "blobstored defaults", [blobstored, "--name", "open", "--store", "memory:64M", "--naming",
                                              c.naming], "blobstored ready")
    check_hosts(listening(daemon.pid), ["*", "*"], "blobstored with defaults")
    daemon.stop()

    step("blobstored: --control-address, --data-address, --metrics-address move each socket")
    daemon = start(c, "blobstored moved",
                   [blobstored, "--name", "central", "--store", "memory:64M", "--naming", c.naming,
                    "--control-address", "127.0.0.2:0", "--data-address", "127.0.0.2:0",
                    "--metrics-address", "127.0.0.2:0"], "blobstored ready")
    check_hosts(listening(daemon.pid), ["127.0.0.2"] * 3, "blobstored with every address option")

    step("blob watch: its callback endpoint on 127.0.0.1 (the naming service is on loopback); "
         "--callback-address moves it")
    w = watch(c, "watch defaults")
    check_hosts(wait_listening(w, 1, "blob watch"), ["127.0.0.1"], "blob watch with defaults")
    w.stop()
    w = watch(c, "watch moved", "--callback-address", "127.0.0.2")
    check_hosts(wait_listening(w, 1, "blob watch --callback-address"), ["127.0.0.2"],
                "blob watch --callback-address 127.0.0.2")
    w.stop()
    bad = c.blob("--callback-address", "127.0.0.1:99999", "watch", store="central")
    bad.error(harness.EXIT["usage"], "--callback-address: callback address \"127.0.0.1:99999\" is not HOST[:PORT]")

    step("blob-dicomd with --index: DICOM port on every interface (a server), its CORBA endpoint on 127.0.0.1; "
         "--address and --callback-address move them")
    dicomd = harness.program("gateway/blob-dicomd")
    base = [dicomd, "--aetitle", "GW", "--port", "0", "--store", "central", "--naming", c.naming, "--spool", c.root]
    gw = start(c, "gateway defaults", base + ["--index", "sqlite:" + c.path("a.sqlite")], "blob-dicomd ready")
    got = wait_listening(gw, 2, "blob-dicomd")
    check_hosts(got, ["*", "127.0.0.1"], "blob-dicomd with defaults")
    check(any(h in WILDCARDS and p == int(gw.ready["port"]) for h, p in got),
          f"the DICOM port {gw.ready['port']} does not listen on every interface: {got}")
    gw.stop()
    gw = start(c, "gateway moved", base + ["--index", "sqlite:" + c.path("b.sqlite"), "--address", "127.0.0.2",
                                           "--callback-address", "127.0.0.2:0"], "blob-dicomd ready")
    check_hosts(wait_listening(gw, 2, "blob-dicomd --address"), ["127.0.0.2", "127.0.0.2"],
                "blob-dicomd --address 127.0.0.2 --callback-address 127.0.0.2:0")
    gw.stop()
    code, _, err = c.run(base + ["--address", "localhost"])
    check_equal(code, harness.EXIT["usage"], f"exit code of --address localhost ({err.strip()})")
    check("--address \"localhost\": expected an IPv4 address of this host" in err, f"message: {err.strip()!r}")

    step("blob-activatord: its endpoint on every interface by default (clients of other hosts call it), "
         "--control-address moves it")
    conf = c.path("conf")
    os.makedirs(conf)
    with open(os.path.join(conf, "ws1.conf"), "w") as f:
        f.write("store = memory:64M\ncontrol-address = 127.0.0.1:0\ndata-address = 127.0.0.1:0\n")
    activatord = harness.program("blobstore/blob-activatord")
    for label, extra, hosts in (("defaults", [], ["*"]),
                                ("moved", ["--control-address", "127.0.0.2:0"], ["127.0.0.2"])):
        act = start(c, f"activator {label}", [activatord, "--config-dir", conf, "--naming", c.naming,
                                              "--blobstored", blobstored, *extra], "blob-activatord ready")
        check_hosts(wait_listening(act, 1, "blob-activatord"), hosts, f"blob-activatord {label}")
        act.stop()


if __name__ == "__main__":
    harness.main(test)
