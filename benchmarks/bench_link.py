"""The link a benchmark runs over.

  loopback   127.0.0.1 in the current namespace (no root needed)
  veth       two network namespaces joined by a veth pair, optionally
             rate-limited with tc tbf on both ends
  tun        two namespaces joined by two TUN devices relayed by
             tun_delay.py with a fixed delay (this kernel has no netem),
             optionally rate-limited with tbf; chosen when --rtt-ms > 0

Servers run in the server namespace (`srv` prefix), clients in the client
namespace (`cli` prefix). Everything created here is removed by close().
"""

import json
import os
import subprocess
import sys
import time


TUN_MTU = 16000  # fewer packets for the forwarder, still well below a tbf bucket


class LinkUnavailable(Exception):
    """The link cannot be built here (not root, no ip/tc, ...): skip it."""


class Link:
    def __init__(self):
        self.label = "loopback"
        self.server_host = "127.0.0.1"
        self.srv = []
        self.cli = []
        self._namespaces = []
        self._forwarder = None

    def close(self):
        if self._forwarder is not None:
            self._forwarder.stop()
            self._forwarder = None
        for ns in self._namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        self._namespaces = []


def _ip(*argv):
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise LinkUnavailable("%s: %s" % (" ".join(argv), r.stderr.strip()))


def _burst(rate):
    """tbf bucket: 0.5 ms of traffic, at least two TUN packets (MTU 16000).
    A bigger bucket refills while a request/response protocol waits for its
    round trip and then hides that wait, which is what we measure."""
    units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    for suffix, scale in units.items():
        if rate.endswith(suffix):
            bits = float(rate[:-len(suffix)]) * scale
            return max(2 * TUN_MTU + 768, int(bits / 8 * 0.0005))
    raise LinkUnavailable("rate %r: expected e.g. 1gbit or 155mbit" % rate)


def loopback():
    return Link()


def namespaces(rate, rtt_ms, start_process, tun_delay_script):
    """A link between two new namespaces. `start_process(name, argv, ready)`
    starts and tracks a child process (for the delay forwarder)."""
    if os.geteuid() != 0:
        raise LinkUnavailable("needs root to create network namespaces (run as root, or use --link loopback)")
    tag = str(os.getpid())
    link = Link()
    ns_s, ns_c = "bsb-s-" + tag, "bsb-c-" + tag
    try:
        for ns in (ns_s, ns_c):
            _ip("ip", "netns", "add", ns)
            link._namespaces.append(ns)
            _ip("ip", "-n", ns, "link", "set", "lo", "up")
        if rtt_ms > 0:
            dev_s, dev_c = "bsbta" + tag, "bsbtb" + tag
            link._forwarder = start_process(
                "tun_delay", [sys.executable, tun_delay_script, "--a", dev_s, "--b", dev_c,
                              "--delay-ms", str(rtt_ms / 2.0)], "tun_delay ready")
            _ip("ip", "link", "set", dev_s, "netns", ns_s)
            _ip("ip", "link", "set", dev_c, "netns", ns_c)
            link.server_host, client_host = "10.78.0.1", "10.78.0.2"
            for ns, dev, mine, peer in ((ns_s, dev_s, link.server_host, client_host),
                                        (ns_c, dev_c, client_host, link.server_host)):
                _ip("ip", "-n", ns, "addr", "add", mine, "peer", peer, "dev", dev)
                _ip("ip", "-n", ns, "link", "set", dev, "mtu", str(TUN_MTU), "up")
        else:
            dev_s, dev_c = "bsbvs" + tag, "bsbvc" + tag
            _ip("ip", "link", "add", dev_s, "type", "veth", "peer", "name", dev_c)
            _ip("ip", "link", "set", dev_s, "netns", ns_s)
            _ip("ip", "link", "set", dev_c, "netns", ns_c)
            link.server_host = "10.77.0.1"
            for ns, dev, mine in ((ns_s, dev_s, "10.77.0.1/24"), (ns_c, dev_c, "10.77.0.2/24")):
                _ip("ip", "-n", ns, "addr", "add", mine, "dev", dev)
                _ip("ip", "-n", ns, "link", "set", dev, "up")
        if rate:
            for ns, dev in ((ns_s, dev_s), (ns_c, dev_c)):
                _ip("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate,
                    "burst", str(_burst(rate)), "latency", "50ms")
    except LinkUnavailable:
        link.close()
        raise
    link.srv = ["ip", "netns", "exec", ns_s]
    link.cli = ["ip", "netns", "exec", ns_c]
    link.label = namespaces_label(rate, rtt_ms)
    return link


def namespaces_label(rate, rtt_ms):
    """The label of namespaces(rate, rtt_ms), also for a run that skipped
    it: veth or tun (with a delay), the rate, the round trip."""
    return (("tun" if rtt_ms > 0 else "veth") + ("-" + rate if rate else "") +
            ("-rtt%gms" % rtt_ms if rtt_ms > 0 else ""))


def iperf3_client(argv, server, timeout):
    """Runs the iperf3 client `argv` (with -J) against `server` (a started
    iperf3 -s process), again while the server does not listen yet (at most
    50 times, 0.1 s apart); its JSON, or {"error": ...}."""
    rec = {"error": "not run"}
    for _attempt in range(50):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        try:
            rec = json.loads(r.stdout)
        except ValueError:
            rec = {"error": r.stderr.strip() or "no JSON"}
        if "error" not in rec or "connect" not in rec["error"] or not server.running():
            return rec
        time.sleep(0.1)
    return rec
