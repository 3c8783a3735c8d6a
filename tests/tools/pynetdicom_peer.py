"""A second, independent DICOM implementation for tests/test_dicom_gateway.py
(pynetdicom, from PyPI, in a venv over Debian's pydicom).

  pynetdicom_peer.py store HOST PORT AE FILE...   C-STORE each FILE as it is on disk (its data set
                                                  bytes are sent unparsed); one JSON line per FILE:
                                                  {"file", "status"} (status -1: no response)
  pynetdicom_peer.py hold HOST PORT AE N          opens N associations, then one more; prints
                                                  {"held": N opened, "extra": "accepted"|"rejected"}
"""

import json
import sys

from pynetdicom import AE
from pynetdicom.sop_class import CTImageStorage, SecondaryCaptureImageStorage, Verification


def associate(host, port, called):
    ae = AE(ae_title="PYNETDICOM")
    ae.acse_timeout = ae.dimse_timeout = ae.network_timeout = 30
    for context in (CTImageStorage, SecondaryCaptureImageStorage, Verification):
        ae.add_requested_context(context)
    return ae.associate(host, port, ae_title=called)


def store(host, port, called, files):
    assoc = associate(host, port, called)
    if not assoc.is_established:
        sys.exit("association not established")
    for path in files:
        status = assoc.send_c_store(path)
        print(json.dumps({"file": path, "status": status.Status if status and "Status" in status else -1}),
              flush=True)
    assoc.release()


def hold(host, port, called, n):
    held = [associate(host, port, called) for _ in range(n)]
    opened = sum(1 for a in held if a.is_established)
    extra = associate(host, port, called)
    result = {"held": opened, "extra": "accepted" if extra.is_established else
              "rejected" if extra.is_rejected else "failed"}
    for a in held + [extra]:
        if a.is_established:
            a.release()
    print(json.dumps(result), flush=True)


def main(argv):
    host, port, called = argv[2], int(argv[3]), argv[4]
    if argv[1] == "store":
        store(host, port, called, argv[5:])
    elif argv[1] == "hold":
        hold(host, port, called, int(argv[5]))
    else:
        sys.exit(f"unknown command {argv[1]}")


if __name__ == "__main__":
    main(sys.argv)
