"""pynetdicom peers of tests/test_dicom_move.py (C-MOVE and Storage Commitment
against blob-dicomd), in the venv of harness/dicom.py.

  dicom_move_peer.py scp AE DIR SYNTAX     a Storage SCP on 127.0.0.1 (a free port) accepting every storage
                                           SOP class in SYNTAX (any: the uncompressed ones; implicit: implicit
                                           VR little endian only) and the N-EVENT-REPORT of Storage
                                           Commitment (the requestor in the SCP role); prints
                                           "dicom-move-peer ready port=N", then one JSON line per C-STORE
                                           {"stored": SOP, "ts": UID, "originator": AE} (the data set saved
                                           as DIR/SOP.dcm in the received syntax) and per N-EVENT-REPORT
                                           {"event": TYPE, "transaction", "committed": [SOP], "failed": [[SOP, REASON]]}
  dicom_move_peer.py move HOST PORT AE MODEL LEVEL DEST [--cancel-after N] [--times] KEY=VALUE...
                                           C-MOVE in MODEL (patient or study root) to DEST; one JSON line
                                           per response {"status", "remaining", "completed", "failed",
                                           "warning"[, "failed_uids"]}; with --cancel-after, a C-CANCEL
                                           after the Nth pending response; with --times, each line also
                                           has "t": seconds from the C-MOVE request to that response
  dicom_move_peer.py get HOST PORT AE DIR [--syntaxes UID,UID...] [--times] KEY=VALUE...
                                           C-GET (Study Root, STUDY level) accepting CT Image Storage in
                                           implicit VR little endian only (SCP role; --syntaxes: in those);
                                           each instance saved as DIR/SOP.dcm, one JSON line per C-STORE
                                           {"stored", "ts"} and per response as move prints them (with
                                           "remaining" in pending ones; --times as move)
  dicom_move_peer.py commit HOST PORT AE MODE CLASS:SOP...
                                           N-ACTION (Request Storage Commitment) of the instances;
                                           prints {"action": STATUS, "transaction": UID}; MODE wait: then
                                           the N-EVENT-REPORT on the same association, as scp prints it;
                                           MODE release: releases the association at once
  dicom_move_peer.py fake-j2k IN OUT      OUT: IN with its pixel data encapsulated as JPEG 2000 (lossless) but not
                                           a JPEG 2000 code stream (no decoder needed to store it, none can read it)
  dicom_move_peer.py compare A B           {"equal": bool, "ts": [A's, B's], "differences": [keyword...]}:
                                           the data sets' elements compared decoded (not their bytes)
"""

import json
import os
import sys
import threading
import time

import pydicom
from pydicom.dataset import Dataset
from pydicom.uid import ExplicitVRBigEndian, ExplicitVRLittleEndian, ImplicitVRLittleEndian, generate_uid
from pynetdicom import AE, StoragePresentationContexts, evt
from pynetdicom.sop_class import (PatientRootQueryRetrieveInformationModelMove, StorageCommitmentPushModel,
                                  StudyRootQueryRetrieveInformationModelMove)

COMMITMENT_INSTANCE = "1.2.840.10008.1.20.1.1"


def emit(obj):
    print(json.dumps(obj), flush=True)


def event_json(event):
    ds = event.event_information
    return {"event": event.request.EventTypeID, "transaction": str(ds.get("TransactionUID", "")),
            "committed": [str(i.ReferencedSOPInstanceUID) for i in ds.get("ReferencedSOPSequence", [])],
            "failed": [[str(i.ReferencedSOPInstanceUID), int(i.FailureReason)] for i in ds.get("FailedSOPSequence", [])]}


def scp(aetitle, directory, syntax):
    syntaxes = {"any": [ExplicitVRLittleEndian, ImplicitVRLittleEndian, ExplicitVRBigEndian],
                "implicit": [ImplicitVRLittleEndian]}[syntax]
    ae = AE(ae_title=aetitle)
    ae.acse_timeout = ae.dimse_timeout = ae.network_timeout = 30
    ae.maximum_associations = 4
    for cx in StoragePresentationContexts:
        ae.add_supported_context(cx.abstract_syntax, syntaxes)
    ae.add_supported_context(StorageCommitmentPushModel, [ExplicitVRLittleEndian, ImplicitVRLittleEndian],
                             scu_role=False, scp_role=True)

    def on_store(event):
        ds = event.dataset
        ds.file_meta = event.file_meta
        ds.save_as(os.path.join(directory, str(ds.SOPInstanceUID) + ".dcm"), enforce_file_format=True)
        emit({"stored": str(ds.SOPInstanceUID), "ts": str(event.context.transfer_syntax),
              "originator": str(event.request.MoveOriginatorApplicationEntityTitle or "").strip()})
        return 0x0000

    def on_report(event):
        emit(event_json(event))
        return 0x0000, None

    server = ae.start_server(("127.0.0.1", 0), block=False,
                             evt_handlers=[(evt.EVT_C_STORE, on_store), (evt.EVT_N_EVENT_REPORT, on_report)])
    print(f"dicom-move-peer ready port={server.server_address[1]}", flush=True)
    threading.Event().wait()


def requestor(host, port, called, contexts):
    ae = AE(ae_title="MOVER")
    ae.acse_timeout = ae.dimse_timeout = ae.network_timeout = 30
    for cx in contexts:
        ae.add_requested_context(cx)
    return ae


def move(host, port, called, model, level, destination, args):
    cancel_after = None
    if args and args[0] == "--cancel-after":
        cancel_after, args = int(args[1]), args[2:]
    times = bool(args) and args[0] == "--times"
    if times:
        args = args[1:]
    query_model = {"patient": PatientRootQueryRetrieveInformationModelMove,
                   "study": StudyRootQueryRetrieveInformationModelMove}[model]
    identifier = Dataset()
    identifier.QueryRetrieveLevel = level
    for key in args:
        name, _, value = key.partition("=")
        setattr(identifier, name, value)
    assoc = requestor(host, port, called, [query_model]).associate(host, port, ae_title=called)
    if not assoc.is_established:
        sys.exit("association not established")
    pending = 0
    started = time.monotonic()
    for status, answer in assoc.send_c_move(identifier, destination, query_model, msg_id=1):
        if not status:
            emit({"status": -1})
            break
        out = {"status": status.Status}
        if times:
            out["t"] = time.monotonic() - started
        for key, field in (("remaining", "NumberOfRemainingSuboperations"), ("completed", "NumberOfCompletedSuboperations"),
                           ("failed", "NumberOfFailedSuboperations"), ("warning", "NumberOfWarningSuboperations")):
            if field in status:
                out[key] = status[field].value
        if "ErrorComment" in status:
            out["comment"] = str(status.ErrorComment)
        if answer is not None and "FailedSOPInstanceUIDList" in answer:
            value = answer.FailedSOPInstanceUIDList
            out["failed_uids"] = [str(value)] if isinstance(value, str) else [str(v) for v in value]
        emit(out)
        if status.Status in (0xFF00, 0xFF01):
            pending += 1
            if cancel_after is not None and pending == cancel_after:
                assoc.send_c_cancel(1, query_model=query_model)
    assoc.release()


def get(host, port, called, directory, args):
    from pynetdicom import build_role
    from pynetdicom.sop_class import CTImageStorage, StudyRootQueryRetrieveInformationModelGet
    syntaxes = [ImplicitVRLittleEndian]
    if args and args[0] == "--syntaxes":
        syntaxes, args = args[1].split(","), args[2:]
    times = bool(args) and args[0] == "--times"
    if times:
        args = args[1:]
    ae = requestor(host, port, called, [StudyRootQueryRetrieveInformationModelGet])
    ae.add_requested_context(CTImageStorage, syntaxes)

    def on_store(event):
        ds = event.dataset
        ds.file_meta = event.file_meta
        ds.save_as(os.path.join(directory, str(ds.SOPInstanceUID) + ".dcm"), enforce_file_format=True)
        emit({"stored": str(ds.SOPInstanceUID), "ts": str(event.context.transfer_syntax)})
        return 0x0000

    identifier = Dataset()
    identifier.QueryRetrieveLevel = "STUDY"
    for key in args:
        name, _, value = key.partition("=")
        setattr(identifier, name, value)
    assoc = ae.associate(host, port, ae_title=called, ext_neg=[build_role(CTImageStorage, scp_role=True)],
                         evt_handlers=[(evt.EVT_C_STORE, on_store)])
    if not assoc.is_established:
        sys.exit("association not established")
    started = time.monotonic()
    for status, answer in assoc.send_c_get(identifier, StudyRootQueryRetrieveInformationModelGet):
        out = {"status": status.Status if status else -1}
        if times:
            out["t"] = time.monotonic() - started
        pending = bool(status) and status.Status in (0xFF00, 0xFF01)
        for key, field in (("remaining", "NumberOfRemainingSuboperations"), ("completed", "NumberOfCompletedSuboperations"),
                           ("failed", "NumberOfFailedSuboperations")):
            if key == "remaining" and not pending:
                continue
            if status and field in status:
                out[key] = status[field].value
        if status and "ErrorComment" in status:
            out["comment"] = str(status.ErrorComment)
        if answer is not None and "FailedSOPInstanceUIDList" in answer:
            value = answer.FailedSOPInstanceUIDList
            out["failed_uids"] = [str(value)] if isinstance(value, str) else [str(v) for v in value]
        emit(out)
    assoc.release()


def commit(host, port, called, mode, references):
    assoc_ae = requestor(host, port, called, [])
    assoc_ae.add_requested_context(StorageCommitmentPushModel)
    got = threading.Event()

    def on_report(event):
        emit(event_json(event))
        got.set()
        return 0x0000, None

    handlers = [(evt.EVT_N_EVENT_REPORT, on_report)] if mode == "wait" else []
    assoc = assoc_ae.associate(host, port, ae_title=called, evt_handlers=handlers)
    if not assoc.is_established:
        sys.exit("association not established")
    ds = Dataset()
    ds.TransactionUID = generate_uid()
    items = []
    for ref in references:
        sop_class, _, sop = ref.partition(":")
        item = Dataset()
        item.ReferencedSOPClassUID = sop_class
        item.ReferencedSOPInstanceUID = sop
        items.append(item)
    ds.ReferencedSOPSequence = items
    status, _ = assoc.send_n_action(ds, 1, StorageCommitmentPushModel, COMMITMENT_INSTANCE)
    emit({"action": status.Status if status else -1, "transaction": ds.TransactionUID})
    if mode == "wait" and not got.wait(30):
        emit({"event": None})
    assoc.release()


def compare(a, b):
    da, db = pydicom.dcmread(a), pydicom.dcmread(b)
    differences = sorted({e.keyword or str(e.tag) for e in da if e.tag not in db or db[e.tag].value != e.value} |
                         {e.keyword or str(e.tag) for e in db if e.tag not in da})
    emit({"equal": not differences, "ts": [str(da.file_meta.TransferSyntaxUID), str(db.file_meta.TransferSyntaxUID)],
          "differences": differences})


def fake_j2k(source, target):
    from pydicom.encaps import encapsulate
    from pydicom.uid import JPEG2000Lossless
    ds = pydicom.dcmread(source)
    ds.file_meta.TransferSyntaxUID = JPEG2000Lossless
    ds.PixelData = encapsulate([b"\xff\x4f\xff\x51" + bytes(60)])
    ds["PixelData"].VR = "OB"
    ds.save_as(target, enforce_file_format=True)
    emit({"path": target, "sop": str(ds.SOPInstanceUID)})


def main(argv):
    if argv[1] == "scp":
        scp(argv[2], argv[3], argv[4])
    elif argv[1] == "move":
        move(argv[2], int(argv[3]), argv[4], argv[5], argv[6], argv[7], argv[8:])
    elif argv[1] == "get":
        get(argv[2], int(argv[3]), argv[4], argv[5], argv[6:])
    elif argv[1] == "commit":
        commit(argv[2], int(argv[3]), argv[4], argv[5], argv[6:])
    elif argv[1] == "fake-j2k":
        fake_j2k(argv[2], argv[3])
    elif argv[1] == "compare":
        compare(argv[2], argv[3])
    else:
        sys.exit(f"unknown command {argv[1]}")


if __name__ == "__main__":
    main(sys.argv)
