"""DCMTK storescu -> storescp as the peer radiology users would otherwise pick.

Writes its own DICOM files (explicit VR little endian, no third-party
module): a CT series of 512x512x16-bit slices (0.5 MiB of pixels each) and a
multi-frame 16-bit secondary-capture image. Each run sends the files in one
storescu association to a storescp started by the caller's Suite, and checks
the SHA-256 of every received Pixel Data value against what was sent.

Timing: the association, from storescu's own log (a --log-config with
microsecond timestamps): from "Requesting Association" to "Releasing
Association", i.e. connection, association negotiation and every C-STORE
with its response, without the process's start-up and its check of the
input files (tens of milliseconds here, as much as a 0.5 MiB transfer). When
the log does not show both lines (another DCMTK version), the whole storescu
process is timed instead and the record says so ("timed": "process").

Two configurations (the issue's "out of the box" and "tuned"):
  default  storescp -od DIR PORT            storescu HOST PORT FILES
  tuned    TCP_NODELAY=1 storescp --max-pdu 131072 +B -od DIR PORT
           storescu --max-pdu 131072 HOST PORT FILES
"""

import hashlib
import os
import re
import struct
import subprocess
import time

CT_IMAGE = "1.2.840.10008.5.1.4.1.1.2"
MULTIFRAME_WORD_SC = "1.2.840.10008.5.1.4.1.1.7.3"
EXPLICIT_LE = "1.2.840.10008.1.2.1"
UID_ROOT = "1.2.826.0.1.3680043.9.7433.1"  # an example root for generated test data
PIXEL_TAG = struct.pack("<HH", 0x7FE0, 0x0010) + b"OW\0\0"
LONG_VRS = {"OB", "OW", "SQ", "UN", "UT"}


def _element(group, element, vr, value):
    if isinstance(value, str):
        value = value.encode()
        if len(value) % 2:
            value += b"\0" if vr == "UI" else b" "
    head = struct.pack("<HH", group, element) + vr.encode()
    if vr in LONG_VRS:
        return head + b"\0\0" + struct.pack("<I", len(value)) + value
    return head + struct.pack("<H", len(value)) + value


def _us(v):
    return struct.pack("<H", v)


def write_dicom(path, sop_class, instance_uid, study_uid, series_uid, number, rows, cols, frames, pixels):
    meta = b"".join([
        _element(0x0002, 0x0001, "OB", b"\0\1"),
        _element(0x0002, 0x0002, "UI", sop_class),
        _element(0x0002, 0x0003, "UI", instance_uid),
        _element(0x0002, 0x0010, "UI", EXPLICIT_LE),
        _element(0x0002, 0x0012, "UI", UID_ROOT + ".0"),
    ])
    data = [
        _element(0x0008, 0x0016, "UI", sop_class),
        _element(0x0008, 0x0018, "UI", instance_uid),
        _element(0x0008, 0x0060, "CS", "CT" if sop_class == CT_IMAGE else "OT"),
        _element(0x0010, 0x0010, "PN", "BENCH^SERIES"),
        _element(0x0010, 0x0020, "LO", "BSBENCH"),
        _element(0x0020, 0x000D, "UI", study_uid),
        _element(0x0020, 0x000E, "UI", series_uid),
        _element(0x0020, 0x0013, "IS", str(number)),
        _element(0x0028, 0x0002, "US", _us(1)),
        _element(0x0028, 0x0004, "CS", "MONOCHROME2"),
    ]
    if frames > 1:
        data.append(_element(0x0028, 0x0008, "IS", str(frames)))
    data += [
        _element(0x0028, 0x0010, "US", _us(rows)),
        _element(0x0028, 0x0011, "US", _us(cols)),
        _element(0x0028, 0x0100, "US", _us(16)),
        _element(0x0028, 0x0101, "US", _us(16)),
        _element(0x0028, 0x0102, "US", _us(15)),
        _element(0x0028, 0x0103, "US", _us(0)),
    ]
    with open(path, "wb") as f:
        f.write(b"\0" * 128 + b"DICM")
        f.write(_element(0x0002, 0x0000, "UL", struct.pack("<I", len(meta))))
        f.write(meta)
        f.write(b"".join(data))
        f.write(PIXEL_TAG + struct.pack("<I", len(pixels)))
        f.write(pixels)


def pixel_digest(path):
    """SHA-256 of the Pixel Data value of a file written by write_dicom or
    stored by storescp (the first (7FE0,0010) OW element: nothing before it
    can contain that byte string)."""
    with open(path, "rb") as f:
        blob = f.read()
    at = blob.find(PIXEL_TAG)
    if at < 0:
        return None
    length = struct.unpack_from("<I", blob, at + len(PIXEL_TAG))[0]
    start = at + len(PIXEL_TAG) + 4
    return hashlib.sha256(blob[start:start + length]).hexdigest()


def make_study(directory, kind, count, frame_bytes=512 * 512 * 2, frames=1):
    """`count` files of `frames` 512x512x16-bit frames; returns (paths, digests)."""
    os.makedirs(directory, exist_ok=True)
    stamp = "%d.%d" % (os.getpid(), int(time.time()))
    study = "%s.%s.1" % (UID_ROOT, stamp)
    series = "%s.%s.2.%s" % (UID_ROOT, stamp, kind)
    sop = CT_IMAGE if frames == 1 else MULTIFRAME_WORD_SC
    paths, digests = [], []
    for i in range(count):
        pixels = os.urandom(frame_bytes * frames)
        path = os.path.join(directory, "%s-%04d.dcm" % (kind, i))
        write_dicom(path, sop, "%s.%d" % (series, i + 1), study, series, i + 1, 512, 512, frames, pixels)
        paths.append(path)
        digests.append(hashlib.sha256(pixels).hexdigest())
    return paths, digests


def storescp_argv(port, out_dir, tuned):
    argv = ["storescp"]
    if tuned:
        argv += ["--max-pdu", "131072", "+B"]
    return argv + ["-od", out_dir, str(port)]


def storescp_env(tuned):
    env = dict(os.environ)
    env.pop("TCP_NODELAY", None)
    if tuned:
        env["TCP_NODELAY"] = "1"
    return env


def wait_ready(prefix, host, port, timeout=20.0):
    """C-ECHO until storescp answers (bounded). `prefix`: e.g. ip netns exec NS."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = subprocess.run(prefix + ["echoscu", host, str(port)], capture_output=True, timeout=10)
        if r.returncode == 0:
            return True
        time.sleep(0.1)
    return False


# storescu's log: "SECONDS.MILLISECONDS.MICROSECONDS LEVEL: message" (oflog's
# PatternLayout, %Q = milliseconds with a fraction).
LOG_CONFIG = """log4cplus.rootLogger = INFO, console
log4cplus.appender.console = log4cplus::ConsoleAppender
log4cplus.appender.console.layout = log4cplus::PatternLayout
log4cplus.appender.console.layout.ConversionPattern = %D{%s}.%D{%Q} %p: %m%n
"""
LOG_LINE = re.compile(r"^(\d+)\.(\d+\.\d+) \w+: (.*)$", re.M)


def association_seconds(log):
    """Seconds from "Requesting Association" to "Releasing Association" in
    storescu's log (LOG_CONFIG), or None when either line is missing."""
    at = {}
    for secs, millis, message in LOG_LINE.findall(log):
        for event in ("Requesting Association", "Releasing Association"):
            if message.startswith(event) and event not in at:
                at[event] = int(secs) + float(millis) / 1000
    if len(at) != 2:
        return None
    return at["Releasing Association"] - at["Requesting Association"]


def send(prefix, host, port, paths, out_dir, expected, tuned, timeout):
    """One storescu association with every file; returns (seconds, bytes,
    error or "", what was timed: "association" or "process")."""
    for name in os.listdir(out_dir):
        os.unlink(os.path.join(out_dir, name))
    config = os.path.join(os.path.dirname(os.path.abspath(out_dir)), "storescu-log.cfg")
    with open(config, "w") as f:
        f.write(LOG_CONFIG)
    argv = prefix + ["storescu", "-lc", config] + (["--max-pdu", "131072"] if tuned else []) + \
        [host, str(port)] + paths
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    seconds = time.monotonic() - t0
    association = association_seconds(r.stdout + "\n" + r.stderr)
    timed = "process" if association is None else "association"
    if association is not None:
        seconds = association
    total = sum(os.path.getsize(p) for p in paths)
    if r.returncode != 0:
        return seconds, total, "storescu exit %d: %s" % (r.returncode, r.stderr.strip()[-300:]), timed
    # storescp may still be writing the last file when storescu exits.
    deadline = time.monotonic() + 30
    while len(os.listdir(out_dir)) < len(paths) and time.monotonic() < deadline:
        time.sleep(0.05)
    got = sorted(pixel_digest(os.path.join(out_dir, n)) for n in os.listdir(out_dir))
    if got != sorted(expected):
        return seconds, total, "wrong bytes: %d files received, pixel data digests differ from those sent" % len(
            got), timed
    return seconds, total, "", timed


def record(seconds, total, error, blob_bytes, count, tuned, link, run, timed="process"):
    """An iperf3-shaped result like bsbench's; `timed`: what `seconds` covers
    ("association" or "process", see send)."""
    bps = 8.0 * total / seconds if seconds > 0 else 0.0
    interval = {"start": 0.0, "end": seconds, "seconds": seconds, "bytes": total, "bits_per_second": bps,
                "omitted": False, "sender": True}
    rec = {"variant": "dcmtk", "target": "tuned" if tuned else "default", "direction": "push",
           "blob_bytes": blob_bytes, "count": count, "socket_buffer": "auto", "chunk": 131072 if tuned else 16384,
           "link": link, "run": run, "timed": timed,
           "start": {"version": "storescu/storescp (DCMTK)", "timestamp": {"timesecs": int(time.time())},
                     "connecting_to": {"host": "storescp"},
                     "test_start": {"protocol": "DICOM", "num_streams": 1, "bytes": total, "blocks": count}},
           "intervals": [{"streams": [interval], "sum": interval}],
           "end": {"sum_sent": interval, "sum_received": dict(interval, sender=False),
                   "sha256_verified": not error}}
    if error:
        rec["error"] = error
    return rec
