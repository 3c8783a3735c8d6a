"""Test data on disk: random files with their digests, byte ranges, and the
FileStore's reservation files."""

import hashlib
import os

from .checks import MiB

FILE_HEADER = 4096  # FileStore: byte i of a Blob is at file offset 4096 + i


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(4 * MiB), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def write_random(path, size, seed_block=MiB):
    """A file of `size` pseudo-random bytes, fast: one random block, rotated
    between writes so that no two blocks are equal. Returns its SHA-256."""
    block = os.urandom(seed_block)
    h = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        shift = 1
        while left:
            n = min(left, len(block))
            chunk = block[:n]
            f.write(chunk)
            h.update(chunk)
            left -= n
            block = block[shift:] + block[:shift]
            shift = shift % 4093 + 1
    return h.hexdigest()


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
