"""Ports on 127.0.0.1 (or another local address) for programs that cannot
bind port 0 themselves and print the port they got."""

import socket


def free_port(host="127.0.0.1"):
    """An ephemeral port that was free a moment ago (omniNames, iperf3 and
    storescp have no port 0 mode)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]
