"""Harness of the multi-process system tests and benchmarks: real processes
(omniNames, blobstored, blob, sdc-provider, bsbench) on 127.0.0.1 with
ephemeral ports, each stopped by PID; every wait on a condition with a
deadline, every subprocess call with a timeout.

  checks     exit codes, TestFailure/TestSkipped, step, check, wait_for, program
  files      random files and their checksums, byte ranges, FileStore reservations
  ports      free_port (for programs without a port 0 mode)
  processes  Process (stop by PID), Service (ready line), JsonLines, /proc
  naming     omniNames command line and readiness (nameclt)
  daemons    blobstored command line and ready line
  cli        one `blob` run (BlobResult), the client_driver shell
  workspace  the temporary directory and processes of a run, logs, sanitizers
  cluster    Cluster: omniNames + daemons + clients of a system test
  ceph       CephCluster: a throwaway single-node Ceph cluster (mon, mgr, OSD)
  script     run()/main(): exit 0 pass, 1 fail, 77 skip

A test imports it with tests/ on sys.path (`sys.path.insert(0,
os.path.dirname(os.path.abspath(__file__)))` from tests/, or
`$BS_SRCDIR/tests` from elsewhere); the names below are its interface.
"""

import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (read-only in distcheck)

from .checks import (EXIT, SKIP, MiB, TestFailure, TestSkipped, build_dir, check, check_equal,  # noqa: E402
                     program, src_dir, step, wait_for)
from .cli import BlobResult, DriverShell, run_blob  # noqa: E402
from .ceph import CephCluster  # noqa: E402
from .cluster import Cluster  # noqa: E402
from .daemons import Daemon  # noqa: E402
from .files import (FILE_HEADER, checksum_bytes, checksum_file, ct_slice, read_range,  # noqa: E402
                    reservation_written_past, resume_journal_ranges, write_ct_slices, write_random)
from .ports import all_accepted, free_port  # noqa: E402
from .processes import (JsonLines, Process, Service, cpu_seconds, ensure_descriptors, log_text, peak_rss_kib, proc_status,  # noqa: E402
                        start_service)
from .script import main, run  # noqa: E402
from .workspace import Workspace  # noqa: E402

__all__ = ["EXIT", "SKIP", "MiB", "TestFailure", "TestSkipped", "build_dir", "check", "check_equal", "program",
           "src_dir", "step", "wait_for", "BlobResult", "DriverShell", "run_blob", "CephCluster", "Cluster", "Daemon",
           "FILE_HEADER", "checksum_bytes", "checksum_file", "read_range", "reservation_written_past",
           "resume_journal_ranges", "write_random",
           "all_accepted", "free_port", "JsonLines", "Process", "Service", "cpu_seconds", "ensure_descriptors", "log_text", "peak_rss_kib", "proc_status", "start_service", "main",
           "run", "Workspace"]
