"""A second, independent DICOM implementation for tests/test_dicom_gateway.py
(pynetdicom, from PyPI, in a venv over Debian's pydicom).

  pynetdicom_peer.py store HOST PORT AE FILE...   C-STORE each FILE as it is on disk (its data set
                                                  bytes are sent unparsed); one JSON line per FILE:
                                                  {"file", "status"[, "comment"]} (status -1: no
                                                  response; comment: the Error Comment)
  pynetdicom_peer.py hold HOST PORT AE N          opens N associations, then one more; prints
                                                  {"held": N opened, "extra": "accepted"|"rejected"}
  pynetdicom_peer.py find HOST PORT AE MODEL LEVEL KEY[=VALUE]...
                                                  C-FIND in MODEL (patient or study root) at LEVEL; one JSON
                                                  line per response: {"status", "identifier": {KEY: VALUE}}
                                                  (and "comment": the Error Comment); a SpecificCharacterSet
                                                  key is set first: the other values are encoded in it;
                                                  %00 in a value stands for a NUL byte
"""

import json
import sys

from pynetdicom import AE, _config
from pydicom.dataset import Dataset
from pynetdicom.sop_class import (CTImageStorage, PatientRootQueryRetrieveInformationModelFind,
                                  SecondaryCaptureImageStorage, StudyRootQueryRetrieveInformationModelFind,
                                  Verification)


def associate(host, port, called):
    ae = AE(ae_title="PYNETDICOM")
    ae.acse_timeout = ae.dimse_timeout = ae.network_timeout = 30
    for context in (CTImageStorage, SecondaryCaptureImageStorage, Verification,
                    PatientRootQueryRetrieveInformationModelFind, StudyRootQueryRetrieveInformationModelFind):
        ae.add_requested_context(context)
    return ae.associate(host, port, ae_title=called)


def store(host, port, called, files):
    # The data set's bytes as they are in the file, from after its meta
    # header (pynetdicom would otherwise decode and re-encode it: a value cut
    # short would then go out whole, with a shorter length).
    _config.STORE_SEND_CHUNKED_DATASET = True
    assoc = associate(host, port, called)
    if not assoc.is_established:
        sys.exit("association not established")
    for path in files:
        status = assoc.send_c_store(path)
        out = {"file": path, "status": status.Status if status and "Status" in status else -1}
        if status and "ErrorComment" in status:
            out["comment"] = str(status.ErrorComment)
        print(json.dumps(out), flush=True)
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


def find(host, port, called, model, level, keys):
    identifier = Dataset()
    identifier.QueryRetrieveLevel = level
    # The character set first: pydicom encodes the text values in it.
    for key in sorted(keys, key=lambda k: not k.startswith("SpecificCharacterSet=")):
        name, _, value = key.partition("=")
        setattr(identifier, name, value.replace("%00", "\0"))
    information_model = {"patient": PatientRootQueryRetrieveInformationModelFind,
                         "study": StudyRootQueryRetrieveInformationModelFind}[model]
    assoc = associate(host, port, called)
    if not assoc.is_established:
        sys.exit("association not established")
    for status, answer in assoc.send_c_find(identifier, information_model):
        code = status.Status if status and "Status" in status else -1
        out = {"status": code}
        if answer is not None:
            out["identifier"] = {e.keyword: "" if e.value is None else str(e.value) for e in answer}
        if status and "ErrorComment" in status:
            out["comment"] = str(status.ErrorComment)
        print(json.dumps(out), flush=True)
    assoc.release()


def main(argv):
    host, port, called = argv[2], int(argv[3]), argv[4]
    if argv[1] == "store":
        store(host, port, called, argv[5:])
    elif argv[1] == "find":
        find(host, port, called, argv[5], argv[6], argv[7:])
    elif argv[1] == "hold":
        hold(host, port, called, int(argv[5]))
    else:
        sys.exit(f"unknown command {argv[1]}")


if __name__ == "__main__":
    main(sys.argv)
