"""Clients under test: one `blob` run (BlobResult: exit code, output, the
--json object, checks of success and of exact errors) and the long-lived
client_driver shell."""

import json
import subprocess

from .checks import TestFailure, check, check_equal, program, step
from .processes import JsonLines


class BlobResult:
    """Outcome of one `blob` run: exit code, stdout, stderr and the parsed
    --json object (from stdout, or from stderr when the data went to stdout)."""

    def __init__(self, argv, code, stdout, stderr, json_from_stderr=False):
        self.argv = argv
        self.code = code
        self.stdout = stdout
        self.stderr = stderr if isinstance(stderr, str) else stderr.decode("utf-8", "replace")
        self.json = None
        text = self.stderr if json_from_stderr else stdout
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        for line in reversed(text.strip().splitlines() if text else []):
            line = line.strip()
            if line.startswith("{"):
                try:
                    self.json = json.loads(line)
                    break
                except ValueError:
                    pass
        if self.json is None and text and text.strip().startswith("{"):
            try:
                self.json = json.loads(text)
            except ValueError:
                pass
        # Every object `blob --json` prints carries the version of its shape
        # (docs/CLI.md); checked here for every call, then taken out, so that
        # tests compare the fields of the command itself.
        if isinstance(self.json, dict) and "version" in self.json:
            self.json_version = self.json.pop("version")
        else:
            self.json_version = None

    def describe(self):
        out = self.stdout if isinstance(self.stdout, str) else f"<{len(self.stdout)} bytes>"
        return (f"`{' '.join(self.argv)}` exited {self.code}\n  stdout: {out.strip()[:2000]!r}\n"
                f"  stderr: {self.stderr.strip()[:2000]!r}")

    def ok(self):
        """Checks exit 0 and returns the JSON object (if --json was given),
        which must have carried "version": 2."""
        if self.code != 0:
            raise TestFailure("expected success of " + self.describe())
        if self.json is not None and self.json_version != 2:
            raise TestFailure(f"JSON version {self.json_version!r}, not 2, in " + self.describe())
        return self.json

    def error(self, code, text):
        """Checks a failure with exit `code` whose message contains `text`,
        on stderr (`blob: <message>`) or in the JSON error object."""
        if self.code != code:
            raise TestFailure(f"expected exit {code} with message containing {text!r}, got " + self.describe())
        messages = [self.stderr]
        if self.json and isinstance(self.json.get("error"), dict):
            err = self.json["error"]
            messages.append(str(err.get("message", "")))
            if err.get("code") != code:
                raise TestFailure(f"JSON error code {err.get('code')!r} differs from exit {code}: "
                                  + self.describe())
        if not any(text in m for m in messages):
            raise TestFailure(f"expected a message containing {text!r}, got " + self.describe())
        return self


def run_blob(args, naming, env, store=None, json_out=True, timeout=300, stdin=None, binary=False, blob=None):
    """Runs `blob --naming URL [--store S] [--json] ARGS...` (`blob`: the
    program's path, default the build tree's). With binary=True, stdout is
    kept as bytes (pull NAME -) and the JSON object is read from stderr."""
    argv = [blob or program("clients/blob"), "--naming", naming]
    if store:
        argv += ["--store", store]
    if json_out:
        argv.append("--json")
    argv += [str(a) for a in args]
    io = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    try:
        r = subprocess.run(argv, capture_output=True, timeout=timeout, env=env,
                           text=not binary and not isinstance(stdin, bytes), **io)
    except subprocess.TimeoutExpired as e:
        raise TestFailure(f"`{' '.join(argv)}` did not finish within {timeout} s "
                          f"(stderr so far: {e.stderr!r})") from None
    return BlobResult(argv, r.returncode, r.stdout, r.stderr, json_from_stderr=binary)


class DriverShell(JsonLines):
    """tests/tools/client_driver shell: one long-lived Session (pooled data
    connections, cached references) under the test's control; one command
    in, one JSON line out."""

    def __init__(self, c, store, extra=(), err="shell.err", env=None):
        """`extra`: more client_driver options (--named-requests, --tls-*);
        stderr goes to c.path(err); `env`: instead of c.env."""
        super().__init__(c, "client_driver shell",
                         [program("tests/tools/client_driver"), "shell", "--naming", c.naming, "--store", store,
                          *extra], c.path(err), env=env)
        check_equal(self.read(60).get("command"), "ready", "first line of client_driver shell")

    def ok(self, command):
        answer = self.do(command)
        check(answer.get("ok"), f"the long-lived client failed `{command}`: {answer}")
        return answer
