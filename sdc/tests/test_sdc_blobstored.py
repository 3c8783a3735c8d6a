"""blobstored --sdc-address: the store's status over SDC. sdc-get reads the
metrics (capacity, used bytes, blob count, active transfers, the last
transfer's throughput) and sees them change after a push; a subscriber
(`sdc-get watch`) receives the push's blob count, used bytes and throughput
in one report as the transfer ends (the periodic refresh is set to 10
minutes here, so only the end-of-transfer path can deliver it); the store is
found by WS-Discovery too."""

import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # keeps the source tree free of __pycache__
sys.path.insert(0, os.path.join(os.environ.get("BS_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                                "tests"))
import harness  # noqa: E402
from harness import check, check_equal, program, step, wait_for  # noqa: E402
from sdclib import Watch  # noqa: E402


def sdc_get(*args):
    import json
    import subprocess
    out = subprocess.run([program("sdc/sdc-get"), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, timeout=60)
    check(out.returncode == 0, f"sdc-get {' '.join(args)} exited {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def values(url):
    answer = sdc_get("--url", url, "--json", "state")
    return {s["descriptor_handle"]: s["value"] for s in answer["states"] if s["type"] == "NumericMetricState"}


def test(c):
    program("sdc/sdc-get")
    daemon = c.start_daemon("sdcstore", "memory:64M", extra=["--sdc-address", "127.0.0.1:0", "--naming-check", "600"])
    url = daemon.ready["sdc"]
    before = values(url)
    step(f"metrics before a push: {before}")
    check_equal(before.get("blobstore.blob_count"), "0", "blob count of an empty store")
    check_equal(before.get("blobstore.used_bytes"), "0", "used bytes of an empty store")
    check_equal(before.get("blobstore.capacity_bytes"), str(64 << 20), "capacity")
    check_equal(before.get("blobstore.active_transfers"), "0", "active transfers")
    check_equal(before.get("blobstore.last_transfer_mb_per_s"), "", "throughput before any transfer (no value)")

    source = c.path("one.bin")
    harness.write_random(source, 1 << 20)
    watch = Watch(None, "--url", url, "--json", "--count", "1", "--duration", "60", "watch", "blobstore.blob_count",
                  "blobstore.used_bytes", "blobstore.last_transfer_mb_per_s")
    start = watch.wait_watching()
    c.blob("push", "--name", "CT.1", source, store="sdcstore").ok()
    code, err = watch.finish(timeout=90)
    check_equal(code, 0, f"sdc-get watch: exit status ({err.strip()})")
    check_equal(len(watch.lines), 2, f"sdc-get watch printed one report: {watch.lines}")
    report = json.loads(watch.lines[1])
    got = {s["descriptor_handle"]: s["value"] for s in report["states"]}
    step(f"report after the push (MdibVersion {start['mdib_version']} -> {report['mdib_version']}): {got}")
    check_equal(got.get("blobstore.blob_count"), "1", "blob count in the push's report")
    check_equal(got.get("blobstore.used_bytes"), str(1 << 20), "used bytes in the push's report")
    check(float(got.get("blobstore.last_transfer_mb_per_s", "0")) > 0, f"throughput in the push's report: {got}")
    after = wait_for(lambda: (lambda v: v if v.get("blobstore.blob_count") == "1" else None)(values(url)), 20,
                     "the SDC blob count to become 1 after a push")
    step(f"metrics after a push: {after}")
    check_equal(after.get("blobstore.used_bytes"), str(1 << 20), "used bytes after a push")
    pushed = wait_for(lambda: values(url).get("blobstore.last_transfer_mb_per_s"), 20,
                      "the SDC throughput of the last transfer to be set")
    check(float(pushed) > 0, f"throughput of the last transfer: {pushed}")

    found = sdc_get("--discover", "--epr", sdc_get("--url", url, "--json", "state")["epr"], "--wait", "2000",
                    "--json", "state", "blobstore.blob_count")
    check_equal([s["value"] for s in found["states"]], ["1"], "blob count through WS-Discovery")


if __name__ == "__main__":
    harness.main(test)
