#!/usr/bin/env python3
"""A point-to-point link with a fixed one-way delay, for kernels without netem.

Creates two TUN devices (IFF_TUN | IFF_NO_PI) named by --a and --b, prints
"tun_delay ready" on stdout, then relays every IP packet read from one device
to the other after --delay-ms milliseconds (each direction, so the round trip
gains twice that). The caller moves the devices into two network namespaces,
addresses them point-to-point and may rate-limit them with tc tbf; the file
descriptors stay valid across the move. Runs until SIGTERM.

Packets keep their order (a FIFO per direction, all with the same delay).
A large MTU on the devices (e.g. 16000) keeps the packet rate, and so this
process's CPU time, small at 1 Gbit/s.
"""

import argparse
import collections
import fcntl
import os
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
MAX_PACKET = 65536
MAX_QUEUED = 100000  # packets per direction: beyond this, drop (like a full queue)


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="name of the first TUN device")
    ap.add_argument("--b", required=True, help="name of the second TUN device")
    ap.add_argument("--delay-ms", type=float, required=True, help="one-way delay in milliseconds")
    args = ap.parse_args()

    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    fa, fb = open_tun(args.a), open_tun(args.b)
    peer = {fa: fb, fb: fa}
    queues = {fa: collections.deque(), fb: collections.deque()}  # packets to write to the key fd
    delay = args.delay_ms / 1000.0
    print("tun_delay ready a=%s b=%s delay_ms=%g" % (args.a, args.b, args.delay_ms), flush=True)

    while running[0]:
        now = time.monotonic()
        due = [q[0][0] for q in queues.values() if q]
        timeout = max(0.0, min(due) - now) if due else 0.5
        try:
            readable, _, _ = select.select([fa, fb], [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for fd in readable:
            for _ in range(256):  # drain, bounded
                try:
                    packet = os.read(fd, MAX_PACKET)
                except BlockingIOError:
                    break
                q = queues[peer[fd]]
                if len(q) < MAX_QUEUED:
                    q.append((now + delay, packet))
        now = time.monotonic()
        for fd, q in queues.items():
            while q and q[0][0] <= now:
                try:
                    os.write(fd, q[0][1])
                except BlockingIOError:
                    break
                except OSError:
                    pass  # device down or packet refused: dropped, like a lossy link
                q.popleft()
    return 0


if __name__ == "__main__":
    sys.exit(main())
