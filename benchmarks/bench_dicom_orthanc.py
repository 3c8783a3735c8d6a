#!/usr/bin/env python3
"""blob-dicomd's DICOMweb against Orthanc's DICOMweb plugin on the same files
(`make bench-dicom-orthanc`, also run by `make bench-dicom`), reported, never
asserted (docs/BENCHMARKS.md, "DICOM").

Debian's Orthanc 1.10 with orthanc-dicomweb 1.7, started by the benchmark
(tests/harness/orthanc.py: storage and index in the workspace, default
settings otherwise, SyncStorageArea included), and blob-dicomd (a file store,
the SQLite index, --http-address) receive the same objects through the same
storescu: a study of --slices CT slices (512x512, 16 bit: 0.5 MiB each) and
two multi-frame instances of --frame-rows square 16-bit frames, uncompressed:
--frames frames (600: 300 MiB at 512) and 20 frames. TCP_NODELAY=1 in every
process's environment (DCMTK's receivers, Orthanc among them, leave Nagle on
otherwise).

1. Study retrieve: WADO-RS `GET /dicom-web/studies/UID` with `Accept:
   multipart/related; type="application/dicom"`, the response read to its
   end in 1 MiB reads into one reused buffer by one Python client
   (http.client's readinto, a new connection each time), alternately from
   blob-dicomd and Orthanc, --runs times each;
   timed: request to last byte. Goal: blob-dicomd >= 2 x Orthanc's throughput.
   A third server in the same rotation, the floor, only sendfile(2)s the
   study's Blob files (FLOOR_SERVER): what a study retrieve costs at least
   here, whatever the server. With --baseline BUILD, another build's
   blob-dicomd (on the same store and index) joins the rotation: this
   build against it in one invocation.
2. Frame fetch: `GET .../instances/UID/frames/N` (N the middle frame) on one
   keep-alive connection per server, --fetches times each, alternately; the
   first fetch reported apart (Orthanc parses the instance then); the frame's
   bytes checked (its first two bytes are N, little endian). Goal: <= 5 ms,
   the same for the large and the small instance.

Prints and writes --out/summary.json."""

import argparse
import glob
import http.client
import json
import os
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import harness  # noqa: E402
from harness.dicom import AE, Gateway, make_objects  # noqa: E402
from harness.orthanc import AET, Orthanc  # noqa: E402

STUDY_ACCEPT = 'multipart/related; type="application/dicom"'
# The floor: an HTTP server that does nothing but sendfile(2) the study's
# Blob files (from byte 4096, after the FileStore's header) to each client,
# in one response ended by closing the connection, as Orthanc's is. No
# index, no access check, no verification, no multipart framing: what any
# server's study retrieve costs at least on this machine with this client.
FLOOR_SERVER = r"""
import os, socket, sys
paths = sys.argv[1:]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    data = b""
    while b"\r\n\r\n" not in data:
        more = c.recv(65536)
        if not more:
            break
        data += more
    c.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/octet-stream\r\n\r\n")
    try:
        for p in paths:
            with open(p, "rb") as f:
                offset, left = 4096, os.fstat(f.fileno()).st_size - 4096
                while left > 0:
                    n = os.sendfile(c.fileno(), f.fileno(), offset, left)
                    if n == 0:
                        break
                    offset += n
                    left -= n
    except OSError:
        pass
    c.close()
"""
FRAME_ACCEPT = 'multipart/related; type="application/octet-stream"; transfer-syntax=*'


def storescu(c, aec, port, *paths):
    argv = ["storescu", "-aet", "MODALITY", "-aec", aec, "127.0.0.1", str(port), *paths]
    started = time.monotonic()
    code, _, err = c.run(argv, timeout=600)
    if code != 0:
        raise harness.TestFailure(f"storescu to {aec} exited {code}: {err[-2000:]}")
    return time.monotonic() - started


def split(url):
    """(host, port, path prefix) of http://HOST:PORT/PREFIX."""
    rest = url.split("://", 1)[1]
    hostport, _, prefix = rest.partition("/")
    host, port = hostport.rsplit(":", 1)
    return host, int(port), "/" + prefix.rstrip("/")


# Reused by every read (readinto): no allocation and no copy per read, so
# the client costs as little as the standard library allows.
BUFFER = memoryview(bytearray(1 << 20))


def cpu_s(pid):
    """CPU seconds (user + system) process `pid` has used so far (/proc/PID/stat; 0 when unknown)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def retrieve_study(root, study, expect_bytes):
    """Seconds and bytes of one WADO-RS study retrieve, read to its end."""
    host, port, prefix = split(root)
    started = time.monotonic()
    conn = http.client.HTTPConnection(host, port, timeout=300)
    try:
        conn.request("GET", f"{prefix}/studies/{study}", headers={"Accept": STUDY_ACCEPT})
        r = conn.getresponse()
        if r.status != 200:
            raise harness.TestFailure(f"GET {root}/studies/{study}: HTTP {r.status}: {r.read()[:500]!r}")
        got = 0
        while True:
            n = r.readinto(BUFFER)
            if not n:
                break
            got += n
    finally:
        conn.close()
    seconds = time.monotonic() - started
    if got < expect_bytes:
        raise harness.TestFailure(f"GET {root}/studies/{study}: {got} bytes, fewer than the study's "
                                  f"{expect_bytes}")
    return seconds, got


class FrameClient:
    """One keep-alive connection to a DICOMweb server fetching frames."""

    def __init__(self, root):
        host, port, self.prefix = split(root)
        self.root = root
        self.conn = http.client.HTTPConnection(host, port, timeout=300)

    def fetch(self, entry, frame, frame_bytes):
        path = (f"{self.prefix}/studies/{entry['study']}/series/{entry['series']}/instances/{entry['sop']}"
                f"/frames/{frame}")
        started = time.monotonic()
        self.conn.request("GET", path, headers={"Accept": FRAME_ACCEPT})
        r = self.conn.getresponse()
        body = r.read()
        seconds = time.monotonic() - started
        if r.status != 200:
            raise harness.TestFailure(f"GET {self.root}{path}: HTTP {r.status}: {body[:500]!r}")
        boundary = r.getheader("Content-Type", "").split("boundary=", 1)[-1].split(";")[0].strip('"')
        part = body.split(b"--" + boundary.encode())[1]
        payload = part.split(b"\r\n\r\n", 1)[1][:-2]
        if len(payload) != frame_bytes or payload[:2] != bytes([frame % 256, frame // 256 % 256]):
            raise harness.TestFailure(f"GET {self.root}{path}: a part of {len(payload)} bytes starting "
                                      f"{payload[:2].hex()}, not frame {frame} ({frame_bytes} bytes)")
        return seconds

    def close(self):
        self.conn.close()


def frames(servers, entry, frame, frame_bytes, fetches):
    """{server: {first_ms, median_ms, p90_ms, samples_ms}}: fetches alternate between the servers."""
    clients = {name: FrameClient(root) for name, root in servers.items()}
    times = {name: [] for name in servers}
    try:
        for _ in range(fetches + 1):
            for name, client in clients.items():
                times[name].append(client.fetch(entry, frame, frame_bytes) * 1000)
    finally:
        for client in clients.values():
            client.close()
    out = {}
    for name, samples in times.items():
        rest = sorted(samples[1:])
        out[name] = {"first_ms": samples[0], "median_ms": statistics.median(rest),
                     "p90_ms": rest[min(len(rest) - 1, int(round(0.9 * (len(rest) - 1))))], "samples_ms": samples}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build tree")
    ap.add_argument("--out", required=True, help="directory for summary.json")
    ap.add_argument("--slices", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5, help="study retrieves from each server")
    ap.add_argument("--frames", type=int, default=600, help="frames of the large multi-frame instance")
    ap.add_argument("--frame-rows", type=int, default=512, help="rows (= columns) of its 16-bit frames")
    ap.add_argument("--fetches", type=int, default=20, help="frame fetches from each server and instance")
    ap.add_argument("--baseline", help="another build tree (e.g. main's) whose blob-dicomd joins the study "
                    "retrieves' rotation as \"baseline\", on the same store and index")
    args = ap.parse_args()
    os.environ["BS_BUILDDIR"] = os.path.abspath(args.build)
    os.makedirs(args.out, exist_ok=True)
    c = harness.Cluster("bench-dicom-orthanc")
    c.env["TCP_NODELAY"] = "1"
    summary = {"slices": args.slices, "runs": args.runs, "frames": args.frames, "frame_rows": args.frame_rows,
               "fetches": args.fetches, "tcp_nodelay": True}
    try:
        c.start_naming()
        store = c.start_daemon("ws1", "file")
        gw = Gateway(c, "ws1", "gateway", extra=["--http-address", "127.0.0.1:0"])
        try:
            orthanc = Orthanc(c, senders=["MODALITY"])  # storescu's AE title
        except harness.TestSkipped as e:
            print(f"Orthanc skipped: {e}", flush=True)
            summary["skipped"] = str(e)
            return
        servers = {"blob-dicomd": gw.http, "orthanc": f"{orthanc.url}/dicom-web"}
        summary["orthanc_version"] = orthanc.get("/system")["Version"]

        study_dir = c.path("study")
        study = make_objects(c, "study", study_dir, str(args.slices), "BENCH", "20261128", "CT", "512")
        total = sum(os.path.getsize(e["path"]) for e in study)
        large = make_objects(c, "framed", c.path("large.dcm"), str(args.frames), str(args.frame_rows))[0]
        small = make_objects(c, "framed", c.path("small.dcm"), "20", str(args.frame_rows))[0]
        summary["ingest_s"] = {"blob-dicomd": storescu(c, AE, gw.port, "+sd", study_dir),
                               "orthanc": storescu(c, AET, orthanc.dicom_port, "+sd", study_dir)}
        for name, aec, port in (("blob-dicomd", AE, gw.port), ("orthanc", AET, orthanc.dicom_port)):
            storescu(c, aec, port, large["path"], small["path"])
        harness.step(f"{args.slices} slices ({total / 2**20:.1f} MiB) and the {args.frames}- and 20-frame "
                     f"instances in both; ingest of the study: blob-dicomd {summary['ingest_s']['blob-dicomd']:.2f} "
                     f"s, Orthanc {summary['ingest_s']['orthanc']:.2f} s")

        study_servers = dict(servers)
        if args.baseline:
            base = Gateway(c, "ws1", "gateway-baseline", extra=["--http-address", "127.0.0.1:0"],
                           index_url=gw.index_url, binary=os.path.join(os.path.abspath(args.baseline), "gateway",
                                                                       "blob-dicomd"))
            study_servers["baseline"] = base.http
            summary["baseline"] = os.path.abspath(args.baseline)
        blobs = [glob.glob(c.path("store-ws1", "blobs", "*", e["sop"] + ".dcm")) for e in study]
        harness.check(all(len(b) == 1 for b in blobs), "every slice's Blob file in the store's directory")
        blobs = [b[0] for b in blobs]
        floor = subprocess.Popen([sys.executable, "-c", FLOOR_SERVER, *blobs], stdout=subprocess.PIPE, text=True)
        try:
            floor_port = int(floor.stdout.readline())
            floor_bytes = sum(os.path.getsize(b) - 4096 for b in blobs)
            times = {name: [] for name in (*study_servers, "floor")}
            # The CPU a blob-dicomd and its store use for the retrieves (one at a time: the store's is theirs).
            pids = {"blob-dicomd": gw.proc.pid}
            if args.baseline:
                pids["baseline"] = base.proc.pid
            cpu = {name: {"gateway_s": 0.0, "store_s": 0.0} for name in pids}
            sizes = {}
            for _ in range(args.runs):
                for name, root in (*study_servers.items(), ("floor", f"http://127.0.0.1:{floor_port}/floor")):
                    before = (cpu_s(pids[name]), cpu_s(store.pid)) if name in pids else None
                    seconds, sizes[name] = retrieve_study(root, study[0]["study"],
                                                          floor_bytes if name == "floor" else total)
                    times[name].append(seconds)
                    if before:
                        cpu[name]["gateway_s"] += cpu_s(pids[name]) - before[0]
                        cpu[name]["store_s"] += cpu_s(store.pid) - before[1]
        finally:
            floor.kill()
            floor.wait()
        retrieve = {name: {"samples_s": t, "median_s": statistics.median(t), "bytes": sizes[name],
                           "MBps": sizes[name] / statistics.median(t) / 1e6} for name, t in times.items()}
        for name, used in cpu.items():
            retrieve[name]["cpu_ms_per_retrieve"] = {k[:-2]: v * 1000 / args.runs for k, v in used.items()}
        retrieve["ratio"] = retrieve["orthanc"]["median_s"] / retrieve["blob-dicomd"]["median_s"]
        retrieve["floor_ratio"] = retrieve["orthanc"]["median_s"] / retrieve["floor"]["median_s"]
        retrieve["study_bytes"] = total
        summary["study_retrieve"] = retrieve
        print(f"WADO-RS retrieve of {args.slices} slices ({total / 2**20:.1f} MiB), median of {args.runs}: "
              f"blob-dicomd {retrieve['blob-dicomd']['median_s']:.3f} s ({retrieve['blob-dicomd']['MBps']:.0f} MB/s), "
              f"Orthanc {retrieve['orthanc']['median_s']:.3f} s ({retrieve['orthanc']['MBps']:.0f} MB/s): "
              f"{retrieve['ratio']:.2f} x Orthanc (goal >= 2); the floor (sendfile of the Blob files alone) "
              f"{retrieve['floor']['median_s']:.3f} s: {retrieve['floor_ratio']:.2f} x Orthanc", flush=True)
        if args.baseline:
            retrieve["baseline_ratio"] = retrieve["baseline"]["median_s"] / retrieve["blob-dicomd"]["median_s"]
            print(f"the baseline's blob-dicomd ({args.baseline}) {retrieve['baseline']['median_s']:.3f} s: this "
                  f"build {retrieve['baseline_ratio']:.2f} x the baseline's throughput; this build / the floor "
                  f"{retrieve['blob-dicomd']['median_s'] / retrieve['floor']['median_s']:.2f} x the floor's time",
                  flush=True)
        for name in cpu:
            used = retrieve[name]["cpu_ms_per_retrieve"]
            print(f"CPU per retrieve, {name}: the gateway {used['gateway']:.0f} ms, its store {used['store']:.0f} ms "
                  f"(/proc/PID/stat, mean of {args.runs})", flush=True)

        frame_bytes = args.frame_rows * args.frame_rows * 2
        summary["frame"] = {}
        for label, entry, count in (("large", large, args.frames), ("small", small, 20)):
            n = count // 2
            result = frames(servers, entry, n, frame_bytes, args.fetches)
            result["instance_bytes"] = os.path.getsize(entry["path"])
            result["frame"] = n
            summary["frame"][label] = result
            print(f"frame {n} of a {count}-frame instance ({result['instance_bytes'] / 2**20:.0f} MiB), "
                  f"{frame_bytes} bytes, median of {args.fetches} on one connection: blob-dicomd "
                  f"{result['blob-dicomd']['median_ms']:.2f} ms (first {result['blob-dicomd']['first_ms']:.1f}), "
                  f"Orthanc {result['orthanc']['median_ms']:.2f} ms (first {result['orthanc']['first_ms']:.1f}) "
                  f"(goal <= 5 ms)", flush=True)
        orthanc.stop()
    finally:
        c.close()
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
