#!/usr/bin/env python3
"""Tiers that fill themselves and copies between stores, with real daemons:

- read-through (`blobstored --read-through`): a workstation store that lacks
  a Blob is offered first by `blob locate` (marked as not holding it yet);
  `blob pull` without --store goes there, and the store fetches the Blob
  from the central tier, verified and committed, then serves it; the next
  pull is local (the central store sends it once). Concurrent pulls of one
  missing Blob fetch it once. A Blob no farther tier holds is no_such_blob;
  a central copy whose bytes rotted is refused (digest mismatch) and nothing
  is left at the workstation; a pull follows the fetch (the client has
  bytes while the workstation still receives the Blob, which is not listed
  there before its commit); central killed mid-fetch fails the following
  pull naming it, leaves no reservation, and the workstation keeps serving;
- `blob copy`: the destination stores fetch from the source (third-party
  transfer), in a chain (each destination from the one before it: the
  source sends each Blob once), bit-exact, with --json lines per copy and
  per destination; from a source on this host that offers its files, every
  destination reads the source's file instead (its data port sends
  nothing), so does a read-through cache filling itself from it, and a
  rotted file there is refused; `blob stores` shows each store's host and
  whether it offers its files; refusals of a Blob that
  exists (without --replace), a missing Blob, an unknown store and bad
  command lines;
- a pull of a Blob a copy is still bringing to the store follows the copy
  (the client has bytes while the store does not list the Blob yet); a
  source that stalls mid-fetch fails the read-through pull after
  --fetch-timeout, naming it, and nothing is left at the cache; a chain
  copy of a large Blob forwards while it receives (the second store
  receives from the first while the source is stopped mid-copy)."""

import glob
import json
import os
import pwd
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import EXIT, check, check_equal, log_text, MiB, step  # noqa: E402



def sent(daemon, name):
    """Pulls of `name` the daemon's data plane completed (its transfer log lines)."""
    return sum(1 for line in log_text(daemon).splitlines()
               if "transfer direction=pull" in line and f" blob={name} " in line and "outcome=ok" in line)


def fetched(daemon, name, source):
    return sum(1 for line in log_text(daemon).splitlines()
               if f'fetched "{name}"' in line and f'from store "{source}"' in line)


def corrupt_file_blob(daemon, name):
    [path] = glob.glob(os.path.join(daemon.store_dir, "blobs", "*", name))
    with open(path, "r+b") as f:
        f.seek(harness.FILE_HEADER + 1000)
        byte = f.read(1)
        f.seek(harness.FILE_HEADER + 1000)
        f.write(bytes([byte[0] ^ 0x01]))


def start_pull(c, name, to, store):
    """`blob pull NAME TO --store STORE` in the background (stdout and stderr piped)."""
    argv = [harness.program("clients/blob"), "--naming", c.naming, "--no-local", "pull", name, to, "--store", store]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=c.env)


def await_reservation(daemon, name):
    """Until the FileStore of `daemon` holds a reservation (a fetch of `name` began)."""
    tmp = os.path.join(daemon.store_dir, "tmp")
    harness.wait_for(lambda: os.listdir(tmp), 60, f"{daemon.name}'s reservation for {name}", interval=0.001)
    return tmp


def await_landed(daemon, name, n=4096):
    """Until the first `n` bytes of the Blob have landed in `daemon`'s FileStore reservation for `name`.

    The reservation is allocated whole when it is made (fallocate), so its size tells nothing; the
    bytes are random, and an allocated range reads as zeros until they land."""
    tmp = await_reservation(daemon, name)

    def landed():
        for entry in os.listdir(tmp):
            try:
                with open(os.path.join(tmp, entry), "rb") as f:
                    f.seek(harness.FILE_HEADER)
                    head = f.read(n)
            except FileNotFoundError:
                continue
            if len(head) == n and any(head[-64:]):
                return True
        return False

    harness.wait_for(landed, 60, f"the first {n} bytes of {name} at {daemon.name}", interval=0.001)


def read_through(c):
    # --no-local: central's Blobs come through its data port, as from the
    # central archive's own host (copies() covers a source on this host).
    central = c.start_daemon("central", "file", tier="central", extra=["--no-sync", "--no-local"])
    ws = c.start_daemon("ws", "file", tier="workstation", extra=["--read-through", "--no-sync"])
    sources = {}
    for name, size in (("CT.1", 3 * MiB + 17), ("CT.2", 24 * MiB), ("CT.3", MiB), ("CT.4", MiB), ("CT.5", MiB),
                       ("CT.6", 16 * MiB + 5)):
        sources[name] = c.path(f"src-{name}")
        harness.write_random(sources[name], size, algorithm=None)
        c.blob("push", "--name", name, sources[name], store="central").ok()

    step("locate offers the read-through workstation first, marked as not holding the Blob yet")
    loc = c.blob("locate", "CT.1").ok()["locations"]
    check_equal([(x["store"], x["tier"], x["holds"]) for x in loc],
                [("ws", "workstation", False), ("central", "central", True)], "locations of CT.1")

    step("a pull without --store goes to the workstation, which fetches CT.1 from central and serves it")
    out = c.path("out-CT.1")
    r = c.blob("--no-local", "pull", "CT.1", out).ok()
    check_equal(r["store"], "ws", "the store that served the first pull")
    check_equal(harness.checksum_file(out), harness.checksum_file(sources["CT.1"]), "CT.1 pulled through ws")
    check_equal(fetched(ws, "CT.1", "central"), 1, "fetches of CT.1 logged by ws")
    check_equal(c.blob("stat", "CT.1", store="ws").ok()["size"], 3 * MiB + 17, "CT.1's size at ws")

    step("the next pull is local: central does not send CT.1 again")
    before = sent(central, "CT.1")
    check_equal(before, 1, "pulls of CT.1 served by central so far")
    r = c.blob("--no-local", "pull", "CT.1", out).ok()
    check_equal(r["store"], "ws", "the store that served the second pull")
    check_equal(sent(central, "CT.1"), before, "central's pulls of CT.1 after the second pull")
    loc = c.blob("locate", "CT.1").ok()["locations"]
    check_equal([(x["store"], x["holds"]) for x in loc], [("ws", True), ("central", True)], "locations afterwards")

    step("four concurrent pulls of a missing Blob fetch it once")
    blob = harness.program("clients/blob")
    procs = []
    for i in range(4):
        argv = [blob, "--naming", c.naming, "--no-local", "--json", "pull", "CT.2", c.path(f"out-CT.2-{i}"),
                "--store", "ws"]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=c.env))
    want = harness.checksum_file(sources["CT.2"])
    for i, p in enumerate(procs):
        out_text, err_text = p.communicate(timeout=120)
        check(p.returncode == 0, f"concurrent pull {i}: exit {p.returncode}: {err_text!r}")
        check_equal(harness.checksum_file(c.path(f"out-CT.2-{i}")), want, f"bytes of concurrent pull {i}")
    check_equal(sent(central, "CT.2"), 1, "pulls of CT.2 served by central for four concurrent pulls at ws")
    check_equal(fetched(ws, "CT.2", "central"), 1, "fetches of CT.2 logged by ws")

    step("a pull over 4 streams through the cache: every range follows the one fetch")
    r = c.blob("--no-local", "pull", "CT.6", c.path("out-CT.6"), "--streams", "4", store="ws").ok()
    check_equal(r.get("streams"), 4, "streams of the pull")
    check_equal(harness.checksum_file(c.path("out-CT.6")), harness.checksum_file(sources["CT.6"]), "CT.6 bytes")
    check_equal(fetched(ws, "CT.6", "central"), 1, "fetches of CT.6 logged by ws")
    check_equal(sent(central, "CT.6"), 1, "pulls of CT.6 served by central")

    step("a Blob no farther tier holds: no_such_blob, saying where it looked")
    c.blob("pull", "CT.none", c.path("none"), store="ws").error(
        EXIT["no_such_blob"], "nor in any store of a farther tier (read-through)")

    step("a central copy whose bytes rotted is refused; nothing is left at the workstation")
    corrupt_file_blob(central, "CT.3")
    # The pull follows the fetch: either it received every byte before ws
    # verified them (the client's own check refuses them), or ws's refusal
    # came first and the client asked ws why. Digest mismatch either way.
    c.blob("--no-local", "pull", "CT.3", c.path("out-CT.3"), store="ws").error(
        EXIT["digest_mismatch"], "checksum crc32c:")
    check(not os.path.exists(c.path("out-CT.3")), "no output file of the refused pull")
    names = [b["name"] for b in c.blob("ls", store="ws").ok()["blobs"]]
    check("CT.3" not in names, f"CT.3 is not listed at ws after the refused fetch: {names}")
    check(c.blob("stat", "CT.3", store="ws").code == EXIT["no_such_blob"], "CT.3 is absent at ws")

    step("the same-host path (findLocalFile) fills the workstation too and reads its file")
    r = c.blob("pull", "CT.5", c.path("out-CT.5"), store="ws").ok()
    check_equal((r["store"], r["local"]), ("ws", True), "store and path of the same-host pull")
    check_equal(harness.checksum_file(c.path("out-CT.5")), harness.checksum_file(sources["CT.5"]), "CT.5 bytes")
    check_equal(fetched(ws, "CT.5", "central"), 1, "fetches of CT.5 logged by ws")

    step("a pull through ws follows the fetch: the client has bytes while ws still receives the Blob "
         "(central stopped mid-fetch), and nothing partial is listed at ws")
    big = c.path("src-CT.big")
    harness.write_random(big, 256 * MiB, algorithm=None)
    c.blob("push", "--name", "CT.big", big, store="central").ok()
    c.blob("push", "--name", "CT.big2", big, store="central").ok()
    client = start_pull(c, "CT.big", "-", "ws")
    try:
        first = client.stdout.read(1)  # the first byte, while the fetch goes on
        os.kill(central.pid, signal.SIGSTOP)
        try:
            check_equal(len(first), 1, "bytes the client wrote before central was stopped")
            check_equal(c.blob("stat", "CT.big", store="ws").code, EXIT["no_such_blob"],
                        "exit of `stat CT.big` at ws while its fetch is stalled")
            names = [b["name"] for b in c.blob("ls", store="ws").ok()["blobs"]]
            check("CT.big" not in names, f"CT.big is not listed at ws before its fetch ends: {names}")
        finally:
            os.kill(central.pid, signal.SIGCONT)
        rest = client.stdout.read()
        _, err_text = client.communicate(timeout=120)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    check(client.returncode == 0, f"the following pull: exit {client.returncode}: {err_text!r}")
    check_equal(harness.checksum_bytes(first + rest), harness.checksum_file(big), "bytes of the following pull")
    check_equal(c.blob("stat", "CT.big", store="ws").ok()["size"], 256 * MiB, "CT.big's size at ws afterwards")
    check_equal(sent(central, "CT.big"), 1, "pulls of CT.big served by central")

    step("central killed mid-fetch: the pull following it fails naming central and why; nothing partial "
         "at ws; ws keeps serving")
    client = start_pull(c, "CT.big2", c.path("out-big2"), "ws")
    try:
        tmp = await_reservation(ws, "CT.big2")
        central.kill()
        _, err_text = client.communicate(timeout=120)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    check(client.returncode not in (0, None), "the pull of CT.big2 failed")
    err_text = err_text.decode(errors="replace")
    step(f"the pull failed: {err_text.strip()}")
    check('from store "central"' in err_text, f"the failure names the store it fetched from: {err_text!r}")
    check(not os.path.exists(c.path("out-big2")), "no output file of the failed pull")
    check_equal(os.listdir(tmp), [], "reservations left at ws")
    names = [b["name"] for b in c.blob("ls", store="ws").ok()["blobs"]]
    check("CT.big2" not in names, f"CT.big2 is not listed at ws: {names}")

    step("central dead: a pull of a Blob only it held fails and says who did not answer; ws keeps serving")
    c.blob("--no-local", "pull", "CT.4", c.path("out-CT.4"), store="ws").error(
        EXIT["no_such_blob"], "did not answer: central")
    r = c.blob("--no-local", "pull", "CT.1", out, store="ws").ok()
    check_equal(harness.checksum_file(out), harness.checksum_file(sources["CT.1"]), "CT.1 still served by ws")
    ws.stop()


def file_reads(daemon, name, source, how="its file on this host"):
    """Fetches of `name` the daemon made by reading `source`'s file on this host (`how`: "its image on this
    host" for a memory store, which maps the source's sealed image of the file)."""
    return sum(1 for line in log_text(daemon).splitlines()
               if f'fetched "{name}"' in line and f'from store "{source}"' in line and how in line)


def image_reads(daemon, name, source):
    return file_reads(daemon, name, source, "its image on this host")


def mapped_images(pid):
    """{Blob name: inode} of the sealed images (memfds "blob NAME") the process maps."""
    out = {}
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split(None, 5)
            if len(fields) == 6 and fields[5].startswith("/memfd:blob "):
                out[fields[5][len("/memfd:blob "):].rsplit(" (deleted)", 1)[0].strip()] = int(fields[4])
    return out


def copies(c):
    # --no-local: the source offers no file to this host, as one on another
    # host: the destinations chain through their data ports.
    src = c.start_daemon("src", "file", tier="central", extra=["--no-sync", "--no-local"])
    dests = [c.start_daemon(n, "memory:256M", tier="cluster") for n in ("a", "b", "c")]
    names = [f"MR.{i}" for i in range(12)]
    files = []
    for i, name in enumerate(names):
        path = c.path(name)
        harness.write_random(path, 256 * 1024 + i * 1000, algorithm=None)
        files.append(path)
    c.blob("push", *files, store="src").ok()

    step("blob copy to three stores in a chain: bit-exact everywhere, the source sends each Blob once")
    t0 = time.monotonic()
    r = c.blob("copy", *names, "--to", "a,b,c", "--from", "src")
    r.ok()
    step(f"copied in {time.monotonic() - t0:.2f} s")
    lines = [x for x in (r.stdout if isinstance(r.stdout, str) else r.stdout.decode()).splitlines() if x.strip()]
    objs = [json.loads(x) for x in lines]
    per_copy = [o for o in objs if "copied" not in o]
    summary = [o for o in objs if "copied" in o]
    check_equal(len(per_copy), 36, "JSON lines of single copies")
    check(all(o.get("command") == "copy" and o.get("version") == 2 and o.get("bytes", 0) > 0 for o in per_copy),
          f"single copy lines: {per_copy[:2]}")
    check_equal(sorted((o["store"], o["copied"], o["failed"]) for o in summary),
                [("a", 12, 0), ("b", 12, 0), ("c", 12, 0)], "per-destination summary lines")
    want = {b["name"]: (b["size"], b["checksum"]) for b in c.blob("ls", store="src").ok()["blobs"]}
    for d in ("a", "b", "c"):
        got = {b["name"]: (b["size"], b["checksum"]) for b in c.blob("ls", store=d).ok()["blobs"]}
        check_equal(got, want, f"sizes and checksums of the Blobs at {d}")
    for name, path in list(zip(names, files))[::5]:
        check_equal(c.pull_checksum(name, "c", c.path("pulled")), harness.checksum_file(path), f"{name} at c")
    for name in names:
        check_equal(sent(src, name), 1, f"pulls of {name} served by the source")
        check_equal(fetched(dests[0], name, "src"), 1, f"a fetched {name} from src")
        check_equal(fetched(dests[1], name, "a"), 1, f"b fetched {name} from a")
        check_equal(fetched(dests[2], name, "b"), 1, f"c fetched {name} from b")

    step("a source on this host that offers its files: no destination chains, the source's data port sends "
         "nothing; each memory store maps the source's sealed image of the file, one image per Blob shared by "
         "all three; a file store reads the file; bit-exact")
    near = c.start_daemon("near", "file", tier="central", extra=["--no-sync"])
    fsd = c.start_daemon("fsd", "file", tier="cluster", extra=["--no-sync"])
    c.blob("push", *files, store="near").ok()
    stores = {s["name"]: s for s in c.blob("stores").ok()["stores"]}
    with open("/proc/sys/kernel/random/boot_id") as f:
        here = f.read().strip()
    check_equal({n: (s["host"], s["local_files"]) for n, s in stores.items() if n in ("near", "src", "a")},
                {"near": (here, True), "src": (here, False), "a": (here, False)},
                "host and local_files of a file store, a --no-local one and a memory store")
    near_sums = {b["name"]: (b["size"], b["checksum"]) for b in c.blob("ls", store="near").ok()["blobs"]}
    c.blob("copy", *names, "--to", "a,b,c,fsd", "--from", "near", "--replace", json_out=False).ok()
    for d in ("a", "b", "c", "fsd"):
        got = {b["name"]: (b["size"], b["checksum"]) for b in c.blob("ls", store=d).ok()["blobs"]}
        check_equal(got, near_sums, f"sizes and checksums at {d} copied from near")
    images = [mapped_images(d.pid) for d in dests]
    for name in names:
        check_equal(sent(near, name), 0, f"pulls of {name} served by near's data port")
        for d in dests:
            check_equal(image_reads(d, name, "near"), 1, f"{d.name} mapped near's image of {name}")
        check_equal(file_reads(fsd, name, "near"), 1, f"fsd read {name} from near's file")
        inodes = [m.get(name) for m in images]
        check(inodes[0] is not None and inodes.count(inodes[0]) == 3,
              f"a, b and c map one image of {name}: inodes {inodes}")
    check_equal(c.pull_checksum("MR.7", "b", c.path("pulled")), harness.checksum_file(files[7]), "MR.7 at b")
    step("an image cannot be changed: writing or truncating it through b's /proc link is refused by its seals")
    link = next(f"/proc/{dests[1].pid}/map_files/{line.split()[0]}" for line in open(f"/proc/{dests[1].pid}/maps")
                if line.rstrip().endswith("/memfd:blob MR.7 (deleted)"))
    for how in ("write", "truncate"):
        try:
            with open(link, "r+b") as f:
                f.write(b"x") if how == "write" else f.truncate(0)
                f.flush()
            raise harness.TestFailure(f"a {how} of MR.7's image succeeded")
        except PermissionError:
            pass
    check_equal(c.pull_checksum("MR.7", "b", c.path("pulled")), harness.checksum_file(files[7]), "MR.7 at b after")
    fsd.stop()

    if os.geteuid() == 0:
        step("a memory store run as another user may not open the source's image (/proc/PID/fd): it says so once, "
             "reads the file or the data port instead, and the copies are bit-exact")
        nobody = pwd.getpwnam("nobody")

        def as_nobody():
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
        other = c.start_daemon("other", "memory:64M", tier="cluster", preexec_fn=as_nobody)
        # --window 1: one batch, whose fetches run one after the other.
        c.blob("copy", "MR.8", "MR.9", "--to", "other", "--from", "near", "--window", "1", json_out=False).ok()
        for name in ("MR.8", "MR.9"):
            check_equal(c.blob("stat", name, store="other").ok()["checksum"], near_sums[name][1], f"{name} at other")
            check_equal(image_reads(other, name, "near"), 0, f"other mapped near's image of {name}")
        refusals = log_text(other).count("cannot open the source's image")
        check_equal(refusals, 1, "other's lines saying it may not open near's images (then not asked again)")
        other.stop()

    step("a destination started with --no-local reads no other store's file: the source's data port serves it")
    far = c.start_daemon("far", "memory:64M", tier="cluster", extra=["--no-local"])
    c.blob("copy", "MR.1", "--to", "far", "--from", "near", json_out=False).ok()
    check_equal((sent(near, "MR.1"), file_reads(far, "MR.1", "near"), fetched(far, "MR.1", "near")), (1, 0, 1),
                "near's data-port pulls, far's file reads and far's fetches of MR.1")
    check_equal(c.blob("stat", "MR.1", store="far").ok()["checksum"], near_sums["MR.1"][1], "MR.1 at far")
    far.stop()

    step("read-through from a store of this host that offers its files: the cache reads the file")
    wsr = c.start_daemon("wsr", "memory:64M", tier="workstation", extra=["--read-through"])
    c.blob("push", "--name", "MR.near", files[9], store="near").ok()  # only near holds it
    out = c.path("out-MR.near")
    check_equal(c.blob("pull", "MR.near", out, store="wsr").ok()["store"], "wsr", "the store that served MR.near")
    check_equal(harness.checksum_file(out), harness.checksum_file(files[9]), "MR.near through wsr")
    check_equal(image_reads(wsr, "MR.near", "near"), 1, "wsr mapped near's image of MR.near")
    check_equal(sent(near, "MR.near"), 0, "pulls of MR.near served by near's data port")
    wsr.stop()

    step("a rotted file at a source on this host: the source shares no image of it (logged), the copy is "
         "refused, nothing appears at the destination")
    c.blob("push", "--name", "MR.rot", files[6], store="near").ok()  # no image of it made yet
    corrupt_file_blob(near, "MR.rot")
    c.blob("copy", "MR.rot", "--to", "a", "--from", "near", json_out=False).error(
        EXIT["digest_mismatch"], "source's checksum")
    check('image of "MR.rot": the bytes of' in log_text(near) and "not shared" in log_text(near),
          "near logs that it shares no image of the rotted MR.rot")
    check_equal(c.blob("stat", "MR.rot", store="a").code, EXIT["no_such_blob"], "exit of stat MR.rot at a")
    check_equal(sent(near, "MR.rot"), 0, "pulls of MR.rot served by near's data port")

    step("refusals: an existing Blob without --replace, a missing Blob, an unknown store, bad command lines")
    c.blob("copy", "MR.0", "--to", "a", "--from", "src", json_out=False).error(EXIT["already_exists"], "MR.0")
    c.blob("copy", "MR.0", "--to", "a", "--from", "src", "--replace").ok()
    c.blob("copy", "MR.none", "--to", "a", "--from", "src", json_out=False).error(EXIT["no_such_blob"], "MR.none")
    c.blob("copy", "MR.none", "--to", "a", json_out=False).error(EXIT["no_such_blob"], "no registered store other than the destinations")
    c.blob("copy", "MR.1", "--to", "nowhere", "--from", "src", json_out=False).error(EXIT["unknown_store"], "nowhere")
    c.blob("copy", "MR.1", "--to", "a", "--from", "a", json_out=False).error(EXIT["usage"], "is also a destination")
    c.blob("copy", "MR.1", "--to", "a,,b", json_out=False).error(EXIT["usage"], "an empty store name")
    c.blob("copy", "MR.1", "--to", "a,a", json_out=False).error(EXIT["usage"], "given twice")
    c.blob("copy", "MR.1", json_out=False).error(EXIT["usage"], "no destination given")
    c.blob("copy", "MR.1", "--to", "a", "--window", "0", json_out=False).error(EXIT["usage"], "out of range (allowed: 1 to 64)")
    c.blob("pull", "MR.1", c.path("x"), "--to", "a").error(EXIT["usage"], "--to applies to copy only")

    step("one batch (fetchEach) with a good name, a missing one, one that exists without --replace and a bad "
         "one: each gets its own outcome, the good one is copied")
    c.blob("rm", "MR.2", store="a").ok()
    r = c.blob("copy", "MR.2", "MR.none", "MR.3", "bad/../name", "--to", "a", "--from", "near")
    check(r.code != 0, "the copy with failures exits non-zero")
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    outcome = {o["name"]: o.get("error", {}).get("name", "ok") for o in lines if "name" in o}
    check_equal(outcome, {"MR.2": "ok", "MR.none": "no_such_blob", "MR.3": "already_exists",
                          "bad/../name": "invalid_name"}, "outcome per name of one batch")
    check_equal(c.blob("stat", "MR.2", store="a").ok()["checksum"], near_sums["MR.2"][1], "MR.2 at a")

    step("a source whose bytes rotted: the copy is refused and nothing appears at the destination")
    corrupt_file_blob(src, "MR.5")
    c.blob("rm", "MR.5", store="c").ok()
    c.blob("copy", "MR.5", "--to", "c", "--from", "src", json_out=False).error(EXIT["digest_mismatch"], "source's checksum")
    check_equal(c.blob("stat", "MR.5", store="c").code, EXIT["no_such_blob"], "exit of stat MR.5 at c")
    for d in dests:
        check(d.running(), f"{d.name} still runs")


def read_within(pipe, n, timeout, what):
    """Up to `n` bytes from `pipe` (a child's stdout), at least one, within `timeout` s."""
    ready, _, _ = select.select([pipe], [], [], timeout)
    check(ready, f"{what}: nothing within {timeout} s")
    data = os.read(pipe.fileno(), n)
    check(data, f"{what}: end of output before the first byte")
    return data


def in_flight(c):
    # --no-local: bytes through src2's data port, which SIGSTOP stalls.
    src = c.start_daemon("src2", "file", tier="central", extra=["--no-sync", "--no-local"])
    d = c.start_daemon("d", "file", tier="workstation", extra=["--no-sync", "--fetch-timeout", "20"])
    ws2 = c.start_daemon("ws2", "file", tier="workstation", extra=["--no-sync", "--read-through", "--fetch-timeout", "2"])
    big = c.path("src-CT.copied")
    harness.write_random(big, 256 * MiB, algorithm=None)
    c.blob("push", "--name", "CT.copied", big, store="src2").ok()
    c.blob("push", "--name", "CT.stall", big, store="src2").ok()
    blob = harness.program("clients/blob")

    step("a pull of a Blob a `blob copy` is still bringing to the store follows the copy")
    copy = subprocess.Popen([blob, "--naming", c.naming, "copy", "CT.copied", "--to", "d", "--from", "src2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=c.env)
    pull = None
    try:
        await_landed(d, "CT.copied")  # the pull must have bytes to follow while the source is stopped
        os.kill(src.pid, signal.SIGSTOP)
        try:
            pull = start_pull(c, "CT.copied", "-", "d")
            first = read_within(pull.stdout, MiB, 30, "the pull following the copy")
            check_equal(c.blob("stat", "CT.copied", store="d").code, EXIT["no_such_blob"],
                        "exit of `stat CT.copied` at d while the copy is stalled")
        finally:
            os.kill(src.pid, signal.SIGCONT)
        rest = pull.stdout.read()
        _, pull_err = pull.communicate(timeout=120)
        _, copy_err = copy.communicate(timeout=120)
    finally:
        for p in (copy, pull):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    check(copy.returncode == 0, f"the copy: exit {copy.returncode}: {copy_err!r}")
    check(pull.returncode == 0, f"the pull following it: exit {pull.returncode}: {pull_err!r}")
    check_equal(harness.checksum_bytes(first + rest), harness.checksum_file(big), "bytes of the following pull")

    step("a source that stalls mid-fetch (SIGSTOP): the read-through pull fails after --fetch-timeout, "
         "naming the source; nothing is left at the cache, which keeps serving")
    pull = start_pull(c, "CT.stall", c.path("out-stall"), "ws2")
    try:
        tmp = await_reservation(ws2, "CT.stall")
        os.kill(src.pid, signal.SIGSTOP)
        try:
            _, err_text = pull.communicate(timeout=60)
        finally:
            os.kill(src.pid, signal.SIGCONT)
    finally:
        if pull.poll() is None:
            pull.kill()
            pull.wait()
    err_text = err_text.decode(errors="replace")
    step(f"the pull failed: {err_text.strip()}")
    check_equal(pull.returncode, EXIT["timeout"], f"exit of the stalled pull ({err_text!r})")
    check('from store "src2"' in err_text and "no progress for 2.000 s" in err_text,
          f"the failure names the source and the timeout: {err_text!r}")
    check_equal(os.listdir(tmp), [], "reservations left at ws2")
    check_equal(c.blob("stat", "CT.stall", store="ws2").code, EXIT["no_such_blob"], "exit of stat CT.stall at ws2")
    step("once the source answers again, the next pull fills the cache")
    harness.wait_for(lambda: c.blob("--no-local", "pull", "CT.stall", c.path("out-stall"), store="ws2").code == 0,
                     30, "a pull of CT.stall through ws2 after the failure is no longer remembered", interval=0.5)
    check_equal(harness.checksum_file(c.path("out-stall")), harness.checksum_file(big), "CT.stall through ws2")

    step("a chain copy of a large Blob forwards while it receives: with the source stopped mid-copy, the second "
         "store of the chain is already receiving from the first")
    e = c.start_daemon("e", "file", tier="workstation", extra=["--no-sync", "--fetch-timeout", "20"])
    f = c.start_daemon("f", "file", tier="workstation", extra=["--no-sync", "--fetch-timeout", "20"])
    sent_before = sent(src, "CT.stall")
    copy = subprocess.Popen([blob, "--naming", c.naming, "copy", "CT.stall", "--to", "e,f", "--from", "src2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=c.env)
    try:
        await_reservation(e, "CT.stall")
        os.kill(src.pid, signal.SIGSTOP)
        try:
            await_reservation(f, "CT.stall")
            for store in ("e", "f"):
                check_equal(c.blob("stat", "CT.stall", store=store).code, EXIT["no_such_blob"],
                            f"exit of `stat CT.stall` at {store} while the source is stopped")
        finally:
            os.kill(src.pid, signal.SIGCONT)
        _, copy_err = copy.communicate(timeout=120)
    finally:
        if copy.poll() is None:
            copy.kill()
            copy.wait()
    check(copy.returncode == 0, f"the chain copy: exit {copy.returncode}: {copy_err!r}")
    want = c.blob("stat", "CT.stall", store="src2").ok()["checksum"]
    for store in ("e", "f"):
        check_equal(c.blob("stat", "CT.stall", store=store).ok()["checksum"], want, f"CT.stall at {store}")
    check_equal(sent(src, "CT.stall") - sent_before, 1, "pulls of CT.stall the source served for the chain")
    check_equal(fetched(f, "CT.stall", "e"), 1, "f fetched CT.stall from e")

    step("a chain copy with --replace: every store ends with the new version, none with the one it replaced")
    harness.write_random(big, 256 * MiB, algorithm=None)
    c.blob("push", "--name", "CT.stall", "--replace", big, store="src2").ok()
    new = c.blob("stat", "CT.stall", store="src2").ok()["checksum"]
    check(new != want, "the source holds a new version")
    c.blob("copy", "CT.stall", "--to", "e,f", "--from", "src2", "--replace", json_out=False).ok()
    for store in ("e", "f"):
        check_equal(c.blob("stat", "CT.stall", store=store).ok()["checksum"], new, f"CT.stall at {store}")


def test(c):
    read_through(c)
    copies(c)
    in_flight(c)


if __name__ == "__main__":
    harness.main(test)
