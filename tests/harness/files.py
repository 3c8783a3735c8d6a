"""Test data on disk: random files with their checksums, byte ranges, and
the FileStore's reservation files.

A checksum is in the text form of the blob CLI and its JSON: `crc32c:` and 8
hex digits (the default algorithm of every store) or `sha256:` and 64. CRC32C
is computed by the built `blob checksum` (Python has none; tests/
test_checksum_cli.py holds that tool to an independent implementation),
SHA-256 by hashlib."""

import hashlib
import json
import os
import struct
import subprocess
import sys

from .checks import MiB, TestFailure, program

FILE_HEADER = 4096  # FileStore: byte i of a Blob is at file offset 4096 + i
ALGORITHMS = ("crc32c", "sha256")


def _blob_checksum(args, algorithm, stdin=None):
    """`blob checksum --json --checksum ALGORITHM ARGS...`: the checksum texts
    of its files, in order."""
    argv = [program("clients/blob"), "checksum", "--json", "--checksum", algorithm] + list(args)
    io = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    try:
        r = subprocess.run(argv, capture_output=True, timeout=300, **io)
    except subprocess.TimeoutExpired:
        raise TestFailure(f"`{' '.join(argv)}` did not finish within 300 s") from None
    if r.returncode != 0:
        raise TestFailure(f"`{' '.join(argv)}` exited {r.returncode}: {r.stderr.decode('utf-8', 'replace').strip()}")
    return [f["checksum"] for f in json.loads(r.stdout)["files"]]


def _check_algorithm(algorithm):
    if algorithm not in ALGORITHMS:
        raise ValueError(f"checksum algorithm {algorithm!r} (allowed: {', '.join(ALGORITHMS)})")


def checksum_file(path, algorithm="crc32c"):
    """The checksum of the file at `path` as text (`crc32c:e3069283`)."""
    _check_algorithm(algorithm)
    if algorithm == "crc32c":
        return _blob_checksum([path], algorithm)[0]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(4 * MiB), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def checksum_bytes(data, algorithm="crc32c"):
    """The checksum of `data` as text (`crc32c:e3069283`)."""
    _check_algorithm(algorithm)
    if algorithm == "crc32c":
        return _blob_checksum(["-"], algorithm, stdin=bytes(data))[0]
    return "sha256:" + hashlib.sha256(data).hexdigest()


def write_random(path, size, seed_block=MiB, algorithm="crc32c"):
    """A file of `size` pseudo-random bytes, fast: one random block, rotated
    between writes so that no two blocks are equal. Returns its checksum
    (None with algorithm=None: no checksum, no `blob` program needed)."""
    block = os.urandom(seed_block)
    with open(path, "wb") as f:
        left = size
        shift = 1
        while left:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
            block = block[shift:] + block[:shift]
            shift = shift % 4093 + 1
    return checksum_file(path, algorithm) if algorithm else None


def read_range(path, offset, length):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)


def reservation_written_past(tmp_dir, offset):
    """The FileStore reservation file in `tmp_dir` whose page at Blob offset
    `offset` is no longer the zeros of fallocate (the tests push random data:
    a written page is never all zeros), or None."""
    try:
        entries = os.listdir(tmp_dir)
    except FileNotFoundError:
        return None
    for entry in entries:
        path = os.path.join(tmp_dir, entry)
        try:
            with open(path, "rb") as f:
                f.seek(FILE_HEADER + offset)
                page = f.read(4096)
        except OSError:
            continue
        if page and any(page):
            return path
    return None


def resume_journal_ranges(data):
    """The (start, end) of each range record of a resume journal's bytes
    (blobstore/src/store/ResumeJournal.h: records [u32 length][u32 CRC32C]
    [payload], a header first), in order, up to the first torn record. The
    stores' own reading also checks each record's CRC32C; a test only needs
    the offsets."""
    ranges, at, first = [], 0, True
    while at + 8 <= len(data):
        length, _crc = struct.unpack_from("<II", data, at)
        payload = data[at + 8:at + 8 + length]
        if len(payload) < length:
            break
        if not first:
            if payload[:1] != b"R":
                break
            start, end = struct.unpack_from("<QQ", payload, 1)
            ranges.append((start, end))
        first = False
        at += 8 + length
    return ranges


def ct_slice(index, seed=7):
    """One synthetic CT slice as a DICOM modality stores it: 512 x 512
    samples of 16 bits (little-endian, CT number + 1024), the padding value 0
    outside the scanner's circular field of view, air inside it, an
    elliptical body of soft tissue with a fat layer, a bone ring and lungs
    that change from slice to slice, and Gaussian noise (sigma 10 HU, as a
    routine dose gives). Uncompressed CT compresses about 2x with zstd -1,
    as this does. Deterministic in (index, seed)."""
    import array
    import math
    import random
    rng = random.Random(seed * 100003 + index)
    # Noise from 4 uniform bytes a sample (near Gaussian), never repeating.
    raw = rng.randbytes(4 * 512 * 512)
    rows = array.array("H")
    ax, by = 200.0, 150.0 + 10.0 * math.sin(index / 9.0)
    lung = 60.0 + 25.0 * math.sin(index / 7.0)
    for y in range(512):
        dy = y - 256.0
        fov = int(math.sqrt(max(0.0, 256.0 ** 2 - dy * dy)))
        body = int(ax * math.sqrt(max(0.0, 1.0 - (dy / by) ** 2))) if abs(dy) < by else 0
        row = [0] * 512
        for x in range(256 - fov, 256 + fov):
            dx = x - 256.0
            adx = abs(dx)
            if adx >= body:
                hu = -1000
            elif adx >= body - 12:
                hu = -100  # fat
            elif adx >= body - 20:
                hu = 900  # bone
            elif abs(adx - 90.0) < lung and abs(dy) < by * 0.6:
                hu = -850  # lungs
            else:
                hu = 40  # soft tissue
            j = 4 * (y * 512 + x)
            noise = (raw[j] + raw[j + 1] + raw[j + 2] + raw[j + 3] - 510) * 10 // 148
            row[x] = max(0, min(4095, hu + 1024 + noise))
        rows.extend(row)
    if sys.byteorder != "little":
        rows.byteswap()
    return rows.tobytes()


def write_ct_slices(path, slices, seed=7):
    """`slices` slices of ct_slice() one after another into `path`
    (0.5 MiB each, a series as one Blob); returns the size."""
    with open(path, "wb") as f:
        for i in range(slices):
            f.write(ct_slice(i, seed))
    return slices * 512 * 512 * 2
