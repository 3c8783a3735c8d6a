"""The life of a test script: run(test, setup) exits 0 (pass), 1 (fail, with
the logs of every process) or 77 (skip); main(test) runs it on a Cluster."""

import os
import signal
import sys
import traceback

from .checks import SKIP, TestFailure, TestSkipped, last_step, program, step
from .cluster import Cluster


def _terminate(signum, _frame):
    raise SystemExit(f"terminated by signal {signum}")


# `make check` gives each test descriptor 9 as its own standard error
# (AM_TESTS_FD_REDIRECT in Makefile.am): a failure's reason and the step it
# came in reach the run's output beside automake's FAIL line, where the log
# itself (with every process's log dumped after it) is only in the build tree.
CONSOLE_FD = 9


def _tell_console(line):
    try:
        os.fstat(CONSOLE_FD)
    except OSError:
        return  # run by hand: the reason is on standard output already
    try:
        os.write(CONSOLE_FD, (line.replace("\n", " ")[:2000] + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def _failed(name, reason):
    line = f"FAIL {name}: {reason}"
    print(line, flush=True)
    _tell_console(f"{line} (last step: {last_step() or 'none'})")


def run(test, setup, name=None, finish=None):
    """Runs `test(env)` on the environment `setup(name)` builds and exits
    0 (pass), 1 (fail) or 77 (skip). `finish(env)` runs after the test body
    has passed and may still fail it; on failure the environment's
    dump_logs() shows what its processes said; close() always runs."""
    name = name or os.path.splitext(os.path.basename(sys.argv[0]))[0]
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    env = None
    rc = 1
    try:
        env = setup(name)
        test(env)
        if finish:
            finish(env)
        step(f"{name}: PASS")
        rc = 0
    except TestSkipped as e:
        print(f"SKIP {name}: {e}", flush=True)
        rc = SKIP
    except TestFailure as e:
        _failed(name, e)
        if env:
            env.dump_logs()
    except BaseException as e:
        _failed(name, f"unexpected exception: {type(e).__name__}: {e}")
        traceback.print_exc(file=sys.stdout)
        if env:
            env.dump_logs()
    finally:
        if env:
            env.close()
    sys.exit(rc)


def main(test, name=None):
    """Runs `test(cluster)` against a Cluster with its Naming Service running;
    exits 0 (pass), 1 (fail) or 77 (skip); a sanitizer report in any
    process's log fails the test."""
    def setup(test_name):
        program("blobstore/blobstored")
        program("clients/blob")
        cluster = Cluster(test_name)
        cluster.start_naming()
        return cluster

    run(test, setup, name, Cluster.check_sanitizers)
