#!/usr/bin/env python3
"""A series of slices: 200 x 0.5 MB through async_series (the series API,
Session::push_series/pull_series) over one data connection, the next
slice's ticket obtained while one streams (pulls over TCP too: --no-local;
connections reused: one or two TCP handshakes for 400 transfers), 16
concurrent transfers from one single-threaded client, and the synchronous
path through the blob CLI (sequential pushes and pulls)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402

SLICE = 524288


def run_series(c, store, count, concurrency, size=SLICE):
    series = harness.program("clients/examples/async_series")
    argv = [series, "--naming", c.naming, "--store", store, "--count", str(count), "--size", str(size),
            "--concurrency", str(concurrency), "--no-local", "--json"]
    code, out, err = c.run(argv, timeout=300)
    check(code == 0, f"`{' '.join(argv)}` exited {code}\n  stdout: {out.strip()!r}\n  stderr: {err.strip()!r}")
    summary = harness.BlobResult(argv, code, out, err).json
    check(summary is not None, f"async_series --json printed no JSON object: {out!r}")
    step(f"async_series --count {count} --concurrency {concurrency}: {summary}")
    check_equal(summary.get("pushed"), count, f"async_series --count {count}: slices pushed")
    check_equal(summary.get("pulled"), count, f"async_series --count {count}: slices pulled (checksums checked)")
    check_equal((summary.get("mismatches"), summary.get("errors")), (0, 0),
                f"async_series --count {count}: (mismatches, errors)")
    check(isinstance(summary.get("connections_opened"), int),
          f"async_series --json has no integer connections_opened: {summary}")
    # Independent of the tool's own report: the store holds `count` Blobs of `size` bytes.
    blobs = c.blob("ls", store=store).ok().get("blobs", [])
    check_equal(len(blobs), count, f"number of Blobs in {store} after the series")
    check(all(b.get("size") == size for b in blobs),
          f"Blobs in {store} not all of {size} bytes: {sorted({b.get('size') for b in blobs})}")
    # Pull two slices back with the CLI: the checksum on the wire matches the stored one.
    for b in (blobs[0], blobs[-1]):
        out_path = c.path(f"check-{b['name']}")
        pulled = c.blob("--no-local", "pull", b["name"], out_path, store=store).ok()
        check_equal(harness.checksum_file(out_path), b.get("checksum"),
                    f"checksum of slice {b['name']} pulled from {store}")
        check_equal(pulled.get("bytes"), size, f"bytes of slice {b['name']}")
        os.unlink(out_path)
    return summary


def test(c):
    c.start_daemon("seq", "file", tier="workstation", extra=["--no-sync"])
    c.start_daemon("par", "memory:64M", tier="memory")

    step("200 x 0.5 MB over one data connection: it is reused")
    summary = run_series(c, "seq", 200, 1)
    check(1 <= summary["connections_opened"] <= 2,
          f"200 sequential slices opened {summary['connections_opened']} data connections; "
          "expected 1 or 2 (reused, docs/PROTOCOL.md 'Connections')")

    step("16 concurrent transfers from one single-threaded client")
    summary = run_series(c, "par", 16, 16)
    check(2 <= summary["connections_opened"] <= 16,
          f"16 concurrent slices opened {summary['connections_opened']} data connections; expected more than "
          "one (transfers on one connection are sequential) and at most 16")

    step("synchronous path: sequential pushes and pulls through the blob CLI")
    sources = {}
    for i in range(8):
        name = f"CT.9.{i}"
        path = c.path(f"slice-{i}")
        sources[name] = (path, harness.write_random(path, SLICE + i))
        pushed = c.blob("push", "--name", name, path, store="seq").ok()
        check_equal(pushed.get("checksum"), sources[name][1], f"push {name}: checksum")
    for name, (path, digest) in sources.items():
        out_path = path + ".pulled"
        pulled = c.blob("--no-local", "pull", name, out_path, store="seq").ok()
        check_equal(pulled.get("bytes"), os.path.getsize(path), f"pull {name}: bytes")
        check_equal(harness.checksum_file(out_path), digest, f"pull {name}: checksum of the pulled file")


if __name__ == "__main__":
    harness.main(test)
