"""A private omniNames: its command line, its URL, and whether it answers
(`nameclt list`). Used by the system tests (Cluster.start_naming) and the
benchmark runner, possibly through a prefix such as `ip netns exec NS`."""

import os
import shutil
import subprocess


def omninames_program():
    """$OMNINAMES, omniNames on PATH, or Debian's /usr/bin/omniNames."""
    return os.environ.get("OMNINAMES") or shutil.which("omniNames") or "/usr/bin/omniNames"


def naming_url(host, port):
    return f"corbaname::{host}:{port}"


def omninames_argv(omninames, port, datadir, host="127.0.0.1"):
    """omniNames on `host:port` with its data (and error log ns.err) in `datadir`."""
    return [omninames, "-start", str(port), "-always", "-datadir", datadir,
            "-errlog", os.path.join(datadir, "ns.err"), "-ORBendPoint", f"giop:tcp:{host}:{port}"]


def nameclt_answers(url, env=None, prefix=(), timeout=10):
    """True when `nameclt list` on the Naming Service at `url` succeeds;
    False when it fails or takes more than `timeout` s."""
    try:
        r = subprocess.run(list(prefix) + ["nameclt", "-ORBInitRef", f"NameService={url}", "list"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return False
    return r.returncode == 0
