"""Orthanc (Debian's `orthanc`, 1.10) as a peer of the interop test and the
DICOM benchmark: started as a process of the run with its own JSON
configuration in the workspace (storage and index there, DICOM and HTTP
ports on free ports, RemoteAccessAllowed false, no authentication), the
DICOMweb plugin (`orthanc-dicomweb`) loaded from Debian's path, blob-dicomd
as a DICOM modality and as a DICOMweb server. Ready means `/system`
answers; stopped by PID. Skipped when the packages are missing."""

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request

from .checks import TestFailure, TestSkipped, step
from .ports import free_port

ORTHANC = "/usr/sbin/Orthanc"
DICOMWEB_PLUGIN = "/usr/share/orthanc/plugins/libOrthancDicomWeb.so"
AET = "ORTHANC"


class Orthanc:
    """One Orthanc process. `modality`: (NAME, AE title, port) of blob-dicomd's DICOM port (or None);
    `dicomweb`: (NAME, URL of its /dicom-web root) (or None). `dicom_port`/`http_port`: given, or free ports
    (a port taken meanwhile makes Orthanc exit: tried again on others, unless given). Orthanc 1.10 has no bind
    address: it listens on every interface, so it answers HTTP from loopback only (RemoteAccessAllowed false)
    and DICOM only from the modality and the `senders` (AE titles) on 127.0.0.1 (DicomCheckModalityHost)."""

    def __init__(self, c, name="orthanc", modality=None, dicomweb=None, dicom_port=None, http_port=None,
                 senders=(), timeout=60):
        if shutil.which(ORTHANC) is None or not os.path.exists(ORTHANC):
            raise TestSkipped("Orthanc is missing: install orthanc and orthanc-dicomweb (scripts/install-deps)")
        if not os.path.exists(DICOMWEB_PLUGIN):
            raise TestSkipped(f"Orthanc's DICOMweb plugin is missing ({DICOMWEB_PLUGIN}): install orthanc-dicomweb")
        self.c = c
        fixed = dicom_port is not None
        for attempt in range(1, 4):
            self.dicom_port = dicom_port or free_port()
            self.http_port = http_port or free_port()
            self.url = f"http://127.0.0.1:{self.http_port}"
            root = c.path(f"{name}-{attempt}")
            os.makedirs(root)
            config = {
                "Name": name, "StorageDirectory": os.path.join(root, "storage"),
                "IndexDirectory": os.path.join(root, "index"), "DicomAet": AET, "DicomPort": self.dicom_port,
                "HttpPort": self.http_port, "RemoteAccessAllowed": False, "AuthenticationEnabled": False,
                "DicomCheckCalledAet": False, "DicomAlwaysAllowEcho": False, "DicomAlwaysAllowStore": False,
                "DicomCheckModalityHost": True, "Plugins": [DICOMWEB_PLUGIN],
                "DicomModalities": {}, "DicomWeb": {"Enable": True, "Root": "/dicom-web/", "Servers": {}},
            }
            if modality:
                config["DicomModalities"][modality[0]] = {"AET": modality[1], "Host": "127.0.0.1",
                                                          "Port": modality[2]}
            for sender in senders:
                config["DicomModalities"][sender] = {"AET": sender, "Host": "127.0.0.1", "Port": 104}
            if dicomweb:
                config["DicomWeb"]["Servers"][dicomweb[0]] = {"Url": dicomweb[1].rstrip("/") + "/"}
            self.config = os.path.join(root, "orthanc.json")
            with open(self.config, "w") as f:
                json.dump(config, f, indent=2)
            self.log_path = c.path(f"{name}-{attempt}.log")
            with open(self.log_path, "wb") as log:
                self.proc = c.spawn(name, [ORTHANC, "--verbose", "--no-jobs", self.config],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            self.proc.log_paths.append(self.log_path)
            deadline = time.monotonic() + timeout
            while self.proc.running() and time.monotonic() < deadline:
                try:
                    system = self.get("/system", timeout=2)
                    break
                except (OSError, TestFailure):
                    time.sleep(0.1)
            if self.proc.running() and time.monotonic() < deadline:
                step(f"Orthanc {system.get('Version')} pid {self.proc.pid}: DICOM {AET} on {self.dicom_port}, "
                     f"HTTP {self.url}")
                return
            if self.proc.running():
                raise TestFailure(f"Orthanc's /system did not answer within {timeout} s: {self.log()[-2000:]}")
            if fixed or "already in use" not in self.log():
                raise TestFailure(f"Orthanc exited with {self.proc.popen.returncode}: {self.log()[-3000:]}")
            step(f"Orthanc could not listen on {self.dicom_port}/{self.http_port} (attempt {attempt} of 3)")
        raise TestFailure("Orthanc did not start: " + self.log()[-2000:])

    def log(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def request(self, method, path, body=None, timeout=120, raw=False, headers=None):
        """One REST call; the JSON answer (or the bytes with `raw`). An HTTP error is a TestFailure naming
        the call and Orthanc's answer."""
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                answer = r.read()
        except urllib.error.HTTPError as e:
            raise TestFailure(f"Orthanc {method} {path}: HTTP {e.code}: {e.read()[-2000:]!r}") from None
        return answer if raw else json.loads(answer or b"null")

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def stop(self):
        return self.proc.stop()
