"""C-GET over DICOM TLS with pynetdicom (DCMTK 3.6.7's getscu has no TLS
options), for tests/test_dicom_tls.py:

  pynetdicom_tls_get.py HOST PORT CALLED CALLING CERT KEY CA OUT_DIR MODEL LEVEL KEY=VALUE...

retrieves into OUT_DIR/SOPInstanceUID the data set bytes of each C-STORE
sub-operation as they arrived (no meta header, not decoded); prints one JSON
line {"status": final status, "stored": N}."""

import json
import os
import ssl
import sys

from pydicom.dataset import Dataset
from pynetdicom import AE, build_role, evt
from pynetdicom.sop_class import (CTImageStorage, PatientRootQueryRetrieveInformationModelGet,
                                  SecondaryCaptureImageStorage, StudyRootQueryRetrieveInformationModelGet)


def main(argv):
    host, port, called, calling, cert, key, ca, out_dir, model, level = argv[1:11]
    keys = argv[11:]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_cert_chain(cert, key)
    context.load_verify_locations(ca)
    context.check_hostname = False
    storage = [CTImageStorage, SecondaryCaptureImageStorage]
    ae = AE(ae_title=calling)
    ae.acse_timeout = ae.dimse_timeout = ae.network_timeout = 30
    information_model = {"patient": PatientRootQueryRetrieveInformationModelGet,
                         "study": StudyRootQueryRetrieveInformationModelGet}[model]
    ae.add_requested_context(information_model)
    for sop_class in storage:
        ae.add_requested_context(sop_class, ["1.2.840.10008.1.2.1", "1.2.840.10008.1.2"])
    stored = []

    def on_store(event):
        uid = event.request.AffectedSOPInstanceUID
        with open(os.path.join(out_dir, uid), "wb") as f:
            f.write(event.request.DataSet.getvalue())
        stored.append(uid)
        return 0x0000

    roles = [build_role(sop_class, scp_role=True) for sop_class in storage]
    assoc = ae.associate(host, int(port), ae_title=called, ext_neg=roles, evt_handlers=[(evt.EVT_C_STORE, on_store)],
                         tls_args=(context, None))
    if not assoc.is_established:
        sys.exit("association not established (rejected or the TLS handshake failed)")
    identifier = Dataset()
    identifier.QueryRetrieveLevel = level
    for k in keys:
        name, _, value = k.partition("=")
        setattr(identifier, name, value)
    final = -1
    for status, _ in assoc.send_c_get(identifier, information_model):
        if status and "Status" in status:
            final = status.Status
    assoc.release()
    print(json.dumps({"status": final, "stored": len(stored)}), flush=True)


if __name__ == "__main__":
    main(sys.argv)
