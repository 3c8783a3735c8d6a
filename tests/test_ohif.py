#!/usr/bin/env python3
"""A real web viewer on blob-dicomd's DICOMweb (make check-interop, not make
check): the OHIF Viewer's prebuilt distribution (npm `@ohif/app`, its
`dist/`, fetched once per build tree with `npm pack`) served from a static
server on 127.0.0.1, its app-config.js pointing at the gateway as
docs/DICOM.md's recipe says (another origin: --http-cors-origin), opened in
headless Chromium (Debian's `chromium`, software WebGL). The study list is
drawn from QIDO-RS; the viewer opens the study with series metadata and
frames (log lines) and its viewport is not blank (the screenshot's pixels, by
PIL). The screenshots are kept in the build tree (tests/ohif-artefacts/).
Skipped (77) when Chromium, npm or the registry is missing."""

import fcntl
import functools
import http.server
import os
import shutil
import socketserver
import subprocess
import sys
import tarfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import TestSkipped, build_dir, check, step  # noqa: E402
from harness.dicom import SYSTEM_PYTHON, Gateway, make_objects  # noqa: E402

OHIF = "@ohif/app@3.13.2"
SLICES = 20


def ohif_dist():
    """The package's dist/ in the build tree, fetched once under a lock."""
    root = os.path.join(build_dir(), "tests", "ohif-3.13.2")
    dist = os.path.join(root, "package", "dist")
    os.makedirs(os.path.dirname(root), exist_ok=True)
    with open(root + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(dist, "index.html")):
            return dist
        if shutil.which("npm") is None:
            raise TestSkipped("npm is missing: cannot fetch the OHIF Viewer")
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        r = subprocess.run(["npm", "pack", OHIF], cwd=root, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise TestSkipped(f"npm pack {OHIF} failed (registry unreachable?): {r.stderr[-500:]}")
        tgz = os.path.join(root, r.stdout.strip().splitlines()[-1])
        with tarfile.open(tgz) as t:
            t.extractall(root)
        os.remove(tgz)
    return dist


def configure(dist_copy, wado_root):
    """app-config.js with the recipe's data source (docs/DICOM.md) in place of the public demo server."""
    path = os.path.join(dist_copy, "app-config.js")
    with open(path) as f:
        config = f.read()
    start = config.index("  defaultDataSourceName: 'ohif',")
    end = config.index("\n  ],\n", start) + len("\n  ],\n")
    ours = f"""  defaultDataSourceName: 'blob',
  dataSources: [
    {{
      namespace: '@ohif/extension-default.dataSourcesModule.dicomweb',
      sourceName: 'blob',
      configuration: {{
        friendlyName: 'Blob Streaming',
        name: 'blob',
        qidoRoot: '{wado_root}',
        wadoRoot: '{wado_root}',
        wadoUriRoot: '{wado_root}',
        qidoSupportsIncludeField: false,
        imageRendering: 'wadors',
        thumbnailRendering: 'wadors',
        enableStudyLazyLoad: true,
        supportsFuzzyMatching: false,
        supportsWildcard: true,
        staticWado: false,
        singlepart: 'bulkdata',
        bulkDataURI: {{ enabled: true }},
        omitQuotationForMultipartRequest: true,
      }},
    }},
  ],
"""
    with open(path, "w") as f:
        f.write(config[:start] + ours + config[end:])


class SinglePageApp(http.server.SimpleHTTPRequestHandler):
    """Static files; the viewer's own routes (/viewer?...) get index.html."""

    def send_head(self):
        if not os.path.exists(self.translate_path(self.path)):
            self.path = "/index.html"
        return super().send_head()

    def log_message(self, *args):
        pass


def screenshot(c, url, path):
    r = subprocess.run(["chromium", "--headless=new", "--no-sandbox", "--use-angle=swiftshader",
                        "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist", "--window-size=1280,900",
                        "--virtual-time-budget=60000", f"--user-data-dir={c.path('chromium-profile')}",
                        f"--screenshot={path}", url], capture_output=True, text=True, timeout=180, env=c.env)
    check(r.returncode == 0 and os.path.exists(path), f"chromium exited {r.returncode}: {r.stderr[-2000:]}")


def test(c):
    if shutil.which("chromium") is None:
        raise TestSkipped("chromium is missing: install it (scripts/install-deps)")
    dist = ohif_dist()
    c.env["TCP_NODELAY"] = "1"
    web = socketserver.ThreadingTCPServer(("127.0.0.1", 0), functools.partial(SinglePageApp,
                                                                              directory=c.path("ohif")))
    origin = f"http://127.0.0.1:{web.server_address[1]}"
    c.start_daemon("ws1", "file")
    gw = Gateway(c, "ws1", "gateway", extra=["--http-address", "127.0.0.1:0", "--http-cors-origin", origin])
    step(f"a CT study of {SLICES} slices of 256 x 256 through storescu; OHIF at {origin}, DICOMweb at {gw.http}")
    ct = make_objects(c, "study", c.path("ct"), str(SLICES), "PAT1", "20261115", "CT", "256")
    gw.storescu("+sd", c.path("ct"))
    shutil.copytree(dist, c.path("ohif"))
    configure(c.path("ohif"), gw.http)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    artefacts = os.path.join(build_dir(), "tests", "ohif-artefacts")
    os.makedirs(artefacts, exist_ok=True)
    try:
        step("the study list (QIDO-RS)")
        screenshot(c, origin + "/", os.path.join(artefacts, "study-list.png"))
        check("DICOMweb QIDO-RS from 127.0.0.1: study level, 1 matches, 1 returned" in gw.log(),
              "the viewer's study list made no QIDO-RS search")
        step("the viewer on the study: series metadata, frames, a viewport that is not blank")
        viewer = os.path.join(artefacts, "viewer.png")
        screenshot(c, f"{origin}/viewer?StudyInstanceUIDs={ct[0]['study']}", viewer)
    finally:
        web.shutdown()
    log = gw.log()
    check(f"DICOMweb metadata to 127.0.0.1: {SLICES} of {SLICES} instances" in log, "no series metadata was served")
    frames = sum(1 for line in log.splitlines() if "DICOMweb frames to 127.0.0.1:" in line)
    check(frames >= 1, "the viewer fetched no frame")
    # The viewport (right of the study panel, below the toolbar): many grey levels, not one background colour.
    r = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; from PIL import Image; "
                        "im = Image.open(sys.argv[1]).convert('L').crop((300, 60, 1240, 780)); "
                        "print(len(set(im.getdata())), im.getextrema()[1] - im.getextrema()[0])", viewer],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"PIL could not read the screenshot: {r.stderr[-1000:]}")
    levels, spread = (int(v) for v in r.stdout.split())
    check(levels >= 32 and spread >= 128, f"the viewport looks blank: {levels} grey levels, spread {spread}")
    step(f"{frames} frames served; the viewport shows {levels} grey levels (spread {spread}); "
         f"screenshots in {artefacts}")


if __name__ == "__main__":
    harness.main(test)
