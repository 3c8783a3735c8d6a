#!/usr/bin/env python3
"""blob-dicomd receives each C-STORE's data set into memory (up to 8 MiB;
a larger one into its spool file) and pushes it only once its last PDV has
arrived and it has been read whole (docs/DICOM.md, "Ingest"):

- an association aborted (A-ABORT) or broken (the socket closed) in the
  middle of a data set leaves no Blob, no reservation, no index entry and no
  spool file; the same instance sent again afterwards is stored;
- a data set that ends inside its pixel data (the last PDV says it is the
  last) is refused with C000 naming the bytes declared and received, and is
  neither stored nor indexed;
- with the spool directory gone, instances up to 8 MiB are still stored
  (never written to the spool) while a larger one fails its receive, naming
  the spool file, and leaves nothing.

The peer is a raw socket speaking the upper layer protocol (PS3.8), so that
it can stop where a DICOM toolkit would not. Real omniNames, blobstored and
blob-dicomd on 127.0.0.1."""

import os
import shutil
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step, wait_for  # noqa: E402
from harness.dicom import AE, Gateway, associate_rq, data_set, make_objects, read_pdu  # noqa: E402

CT_IMAGE_STORAGE = "1.2.840.10008.5.1.4.1.1.2"
EXPLICIT_LITTLE = "1.2.840.10008.1.2.1"
FRAGMENT = 16384  # bytes of data set per P-DATA-TF PDU (below the gateway's --max-pdu)


def uid(value):
    data = value.encode()
    return data + b"\0" * (len(data) % 2)


def element(group, elem, value):
    """An implicit VR little endian element (the command set's encoding)."""
    return struct.pack("<HHI", group, elem, len(value)) + value


def store_command(sop_class, sop_instance, message_id=1):
    body = (element(0, 0x0002, uid(sop_class)) + element(0, 0x0100, struct.pack("<H", 1)) +
            element(0, 0x0110, struct.pack("<H", message_id)) + element(0, 0x0700, struct.pack("<H", 0)) +
            element(0, 0x0800, struct.pack("<H", 0)) + element(0, 0x1000, uid(sop_instance)))
    return element(0, 0x0000, struct.pack("<I", len(body))) + body


def p_data(fragment, command, last):
    """A P-DATA-TF PDU of one PDV on presentation context 1."""
    pdv = struct.pack(">IBB", len(fragment) + 2, 1, (1 if command else 0) | (2 if last else 0)) + fragment
    return struct.pack(">BBI", 4, 0, len(pdv)) + pdv


def data_set_of(path):
    """The data set of a DICOM file (what follows its File Meta Information)."""
    with open(path, "rb") as f:
        data = f.read()
    check(data[128:132] == b"DICM" and data[132:136] == b"\x02\x00\x00\x00", f"{path}: not a DICOM file")
    group_length = struct.unpack("<I", data[140:144])[0]
    return data[144 + group_length:]


class Peer:
    """One association to the gateway proposing CT Image Storage."""

    def __init__(self, gw):
        self.s = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
        self.s.sendall(associate_rq(calling="MODALITY", abstract_syntax=CT_IMAGE_STORAGE,
                                    transfer_syntax=EXPLICIT_LITTLE, max_pdu=65536))
        kind, body = read_pdu(self.s, 30)
        check_equal(kind, 2, "the answer to the A-ASSOCIATE-RQ (A-ASSOCIATE-AC)")

    def send(self, sop, data, stop=None, last=True):
        """The C-STORE-RQ of `sop`, then `data` in fragments; `stop`: only the data set's first bytes up to it,
        none flagged last; `last`: the final fragment says it is the last."""
        self.s.sendall(p_data(store_command(CT_IMAGE_STORAGE, sop), True, True))
        end = len(data) if stop is None else stop
        for offset in range(0, end, FRAGMENT):
            piece = data[offset:min(end, offset + FRAGMENT)]
            self.s.sendall(p_data(piece, False, last and stop is None and offset + FRAGMENT >= end))

    def status(self):
        """The C-STORE-RSP's Status (0000,0900) and Error Comment (0000,0902)."""
        kind, body = read_pdu(self.s, 30)
        check_equal(kind, 4, "the PDU answering the C-STORE (P-DATA-TF)")
        command = body[6:]  # one PDV: length, context, control header
        values, offset = {}, 0
        while offset + 8 <= len(command):
            group, elem, length = struct.unpack("<HHI", command[offset:offset + 8])
            values[(group, elem)] = command[offset + 8:offset + 8 + length]
            offset += 8 + length
        return struct.unpack("<H", values[(0, 0x0900)])[0], values.get((0, 0x0902), b"").rstrip(b" \0").decode()

    def abort(self):
        self.s.sendall(struct.pack(">BBIBBBB", 7, 0, 4, 0, 0, 0, 0))
        self.s.close()

    def release(self):
        self.s.sendall(struct.pack(">BBI", 5, 0, 4) + bytes(4))
        check_equal(read_pdu(self.s, 30)[0], 6, "the answer to the A-RELEASE-RQ (A-RELEASE-RP)")
        self.s.close()


def spool_files(c, gw):
    prefix = f"blob-dicomd-{gw.proc.pid}-"
    return sorted(n for n in os.listdir(c.root) if n.startswith(prefix)) if os.path.isdir(c.root) else []


def nothing_left(c, gw, entry, index, what):
    """No Blob, reservation, index entry or spool file of `entry` once the gateway has logged the failed receive."""
    wait_for(lambda: gw.log().count(f"instance {entry['sop']} from MODALITY@127.0.0.1: receiving failed") > 0, 20,
             f"the gateway's line for the {what} receive of {entry['sop']}")
    names = [e["name"] for e in c.blob("ls", store="ws1").ok()["blobs"]]
    check(entry["sop"] + ".dcm" not in names, f"Blob {entry['sop']}.dcm stored after the {what} data set")
    store = next(s for s in c.blob("stores").ok()["stores"] if s["name"] == "ws1")
    check_equal(store["reserved"], 0, f"bytes reserved in ws1 after the {what} data set")
    rows = c.blob("find", "--index", index, "--level", "instance", f"SOPInstanceUID={entry['sop']}").ok()["matches"]
    check_equal(rows, [], f"index entries of {entry['sop']} after the {what} data set")
    check_equal(spool_files(c, gw), [], f"spool files left after the {what} data set")


def test(c):
    c.env["TCP_NODELAY"] = "1"
    c.start_daemon("ws1", "file")
    index = f"sqlite:{c.path('index.sqlite')}"
    gw = Gateway(c, "ws1", "gateway", index_url=index)
    slices = make_objects(c, "study", c.path("study"), "3", "PATINGEST", "20261128", "CT", "512")
    big = make_objects(c, "multiframe", c.path("big.dcm"), "80")[0]  # 80 x 128 KiB: past the 8 MiB in memory

    step("an A-ABORT in the middle of a 0.5 MiB data set: no Blob, reservation, index entry or spool file")
    first = slices[0]
    data = data_set_of(first["path"])
    peer = Peer(gw)
    peer.send(first["sop"], data, stop=len(data) // 4 * 2)  # PDVs of even length
    peer.abort()
    nothing_left(c, gw, first, index, "aborted")

    step("the socket closed in the middle of a 10 MiB data set (past the memory, into the spool file): nothing left")
    big_data = data_set_of(big["path"])
    peer = Peer(gw)
    peer.send(big["sop"], big_data, stop=9 << 20)
    peer.s.close()
    nothing_left(c, gw, big, index, "broken")

    step("a data set whose last PDV ends inside its pixel data: refused C000 with the byte counts, not stored")
    second = slices[1]
    data = data_set_of(second["path"])
    peer = Peer(gw)
    peer.send(second["sop"], data[:len(data) - 1000])
    status, comment = peer.status()
    check_equal(status, 0xC000, f"the status of the cut data set ({comment!r})")
    why = f"the data set ends inside its pixel data (7FE0,0010): 524288 bytes declared, {524288 - 1000} received"
    check_equal(comment, why[:64], "the Error Comment of the cut data set (LO: 64 characters)")
    check(f"instance {second['sop']} from MODALITY@127.0.0.1: refused (status C000): {why}" in gw.log(),
          "no log line naming the cut data set's byte counts")
    peer.release()
    check(f"{second['sop']}.dcm" not in [e["name"] for e in c.blob("ls", store="ws1").ok()["blobs"]],
          "the cut data set was stored")
    check_equal(spool_files(c, gw), [], "spool files left after the refusal")

    step("the three slices and the 10 MiB instance sent again by storescu: stored, bit-exact, indexed")
    gw.storescu(*[e["path"] for e in slices], big["path"])
    for entry in [*slices, big]:
        pulled = c.blob("pull", entry["sop"] + ".dcm", "-", store="ws1", binary=True, json_out=False)
        pulled.ok()
        with open(entry["path"], "rb") as f:
            check(data_set(pulled.stdout) == data_set(f.read()), f"the data set of Blob {entry['sop']}.dcm differs")
    rows = c.blob("find", "--index", index, "--level", "instance", "PatientID=PATINGEST").ok()["matches"]
    check_equal(len(rows), 3, "index entries of PATINGEST")

    step("a slice sent deflated (storescu -xd): parsed in memory through the inflating filter, stored, indexed")
    deflated = make_objects(c, "study", c.path("deflated"), "1", "PATDEFLATE", "20261128", "CT", "512")[0]
    c.run(["storescu", "-xd", "-aet", "MODALITY", "-aec", AE, "127.0.0.1", str(gw.port), deflated["path"]],
          timeout=120)
    check(f"instance {deflated['sop']} from MODALITY@127.0.0.1: stored as {deflated['sop']}.dcm" in gw.log(),
          "no line for the deflated slice stored")
    pulled = c.blob("pull", deflated["sop"] + ".dcm", "-", store="ws1", binary=True, json_out=False)
    pulled.ok()
    check(b"1.2.840.10008.1.2.1.99" in pulled.stdout[:1024], "the Blob of the deflated slice is not deflated")
    rows = c.blob("find", "--index", index, "--level", "instance", "PatientID=PATDEFLATE").ok()["matches"]
    check_equal([r["SOPInstanceUID"] for r in rows], [deflated["sop"]], "index entries of PATDEFLATE")

    step("the spool directory gone: a 0.5 MiB slice is stored (never spooled), a 10 MiB instance fails its "
         "receive naming its spool file, nothing of it left")
    spool = c.path("spool")
    os.makedirs(spool)
    gw2 = Gateway(c, "ws1", "gateway-nospool", index_url="", spool=spool)
    shutil.rmtree(spool)
    more = make_objects(c, "study", c.path("more"), "1", "PATNOSPOOL", "20261128", "CT", "512")[0]
    gw2.storescu(more["path"])
    check(more["sop"] + ".dcm" in [e["name"] for e in c.blob("ls", store="ws1").ok()["blobs"]],
          "the slice sent with the spool directory gone is not stored")
    other = make_objects(c, "multiframe", c.path("big2.dcm"), "80")[0]
    gw2.storescu(other["path"], refused=True)
    log = gw2.log()
    check(f"instance {other['sop']} from MODALITY@127.0.0.1: receiving failed" in log and
          f"cannot create the spool file {spool}/blob-dicomd-{gw2.proc.pid}-" in log,
          f"no line naming the spool file for the 10 MiB instance: {log[-1500:]!r}")
    check(other["sop"] + ".dcm" not in [e["name"] for e in c.blob("ls", store="ws1").ok()["blobs"]],
          "the 10 MiB instance was stored without its spool file")


if __name__ == "__main__":
    harness.main(test)
