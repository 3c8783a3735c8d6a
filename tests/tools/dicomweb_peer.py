"""The reference DICOMweb client, dicomweb-client (PyPI), driven for
tests/test_dicomweb.py; run with the DICOM venv's python
(tests/harness/dicom.py). Prints one JSON document on standard output.

  dicomweb_peer.py URL search LEVEL [STUDY [SERIES]] [--limit N] [--offset N] [KEY=VALUE...]
                                               QIDO-RS (LEVEL studies, series or instances): the matches
  dicomweb_peer.py URL study STUDY DIR         retrieve_study: each instance's data set to DIR/SOP.dcm
  dicomweb_peer.py URL instance STUDY SERIES SOP FILE
                                               retrieve_instance: the data set to FILE
  dicomweb_peer.py URL metadata STUDY SERIES SOP
                                               retrieve_instance_metadata: the DICOM JSON
  dicomweb_peer.py URL frames STUDY SERIES SOP N[,N...] DIR
                                               retrieve_instance_frames: frame N's bytes to DIR/N
  dicomweb_peer.py URL store FILE...           store_instances: the response data set as DICOM JSON
Files are written with pydicom's dcmwrite(write_like_original=True): the
data set's bytes as the server sent them (pydicom reads and writes the
explicit VR little endian objects of the tests without a change)."""

import json
import os
import sys

import pydicom
from dicomweb_client.api import DICOMwebClient


def save(ds, path):
    pydicom.dcmwrite(path, ds, write_like_original=True)


def main(argv):
    url, command, args = argv[1], argv[2], argv[3:]
    client = DICOMwebClient(url=url)
    if command == "search":
        level, rest = args[0], args[1:]
        uids, limit, offset, filters = [], None, None, {}
        i = 0
        while i < len(rest):
            if rest[i] == "--limit":
                limit = int(rest[i + 1])
                i += 2
            elif rest[i] == "--offset":
                offset = int(rest[i + 1])
                i += 2
            elif "=" in rest[i]:
                key, value = rest[i].split("=", 1)
                filters[key] = value
                i += 1
            else:
                uids.append(rest[i])
                i += 1
        common = dict(limit=limit, offset=offset, search_filters=filters or None)
        if level == "studies":
            found = client.search_for_studies(**common)
        elif level == "series":
            found = client.search_for_series(study_instance_uid=uids[0] if uids else None, **common)
        else:
            found = client.search_for_instances(study_instance_uid=uids[0] if uids else None,
                                                series_instance_uid=uids[1] if len(uids) > 1 else None, **common)
        print(json.dumps(found))
    elif command == "study":
        study, directory = args
        os.makedirs(directory, exist_ok=True)
        names = []
        for ds in client.retrieve_study(study):
            names.append(ds.SOPInstanceUID + ".dcm")
            save(ds, os.path.join(directory, names[-1]))
        print(json.dumps({"files": names}))
    elif command == "instance":
        study, series, sop, path = args
        save(client.retrieve_instance(study, series, sop), path)
        print(json.dumps({"file": path}))
    elif command == "metadata":
        study, series, sop = args
        print(json.dumps(client.retrieve_instance_metadata(study, series, sop)))
    elif command == "frames":
        study, series, sop, numbers, directory = args
        numbers = [int(n) for n in numbers.split(",")]
        os.makedirs(directory, exist_ok=True)
        frames = client.retrieve_instance_frames(study, series, sop, frame_numbers=numbers)
        for n, data in zip(numbers, frames):
            with open(os.path.join(directory, str(n)), "wb") as f:
                f.write(data)
        print(json.dumps({"frames": len(frames)}))
    elif command == "store":
        datasets = [pydicom.dcmread(p) for p in args]
        print(json.dumps(client.store_instances(datasets).to_json_dict()))
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
