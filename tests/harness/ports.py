"""Ports on 127.0.0.1 (or another local address) for programs that cannot
bind port 0 themselves and print the port they got."""

import random
import socket

# Below the kernel's ephemeral range: a port given out there can be taken by
# any outgoing connection between the check here and the program's bind
# (storescp then failed with "Address already in use"); a port below it is
# taken only by a program that binds it.
_LOWEST = 10000


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(v) for v in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


def _bindable(host, port):
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def free_port(host="127.0.0.1"):
    """A port that was free a moment ago, outside the ephemeral range when
    there is room below it (omniNames, iperf3 and storescp have no port 0
    mode)."""
    low, _high = _ephemeral_range()
    if low - _LOWEST >= 1000:
        for _ in range(100):
            port = random.randrange(_LOWEST, low)
            if _bindable(host, port):
                return port
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]



def tcp_rows():
    """The fields of every row of /proc/net/tcp and tcp6."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            yield row.split()


def _ipv4_port(field):
    """("127.0.0.1", 80) of a /proc/net/tcp address field ("0100007F:0050")."""
    address, port = field.split(":")
    return socket.inet_ntoa(bytes.fromhex(address)[::-1]), int(port, 16)


def all_accepted(port, clients):
    """Whether the server listening on IPv4 `port` has accepted every
    connection of `clients` (connected sockets): each has its socket on the
    server's side (/proc/net/tcp: established, or closing when the server
    has ended it since) and the listening socket's accept queue (its
    rx_queue there) is empty."""
    peers = {c.getsockname() for c in clients}
    queued, known = 0, set()
    for fields in tcp_rows():
        if len(fields[1].split(":")[0]) != 8:
            continue  # an IPv6 row
        local = _ipv4_port(fields[1])
        if local[1] != port:
            continue
        if fields[3] == "0A":
            queued += int(fields[4].split(":")[1], 16)
        else:
            known.add(_ipv4_port(fields[2]))
    return queued == 0 and peers <= known
