#!/usr/bin/env python3
"""What `make install` gives a sysadmin, and blobstored under systemd:

- `make install DESTDIR=TMP` from this build tree installs the programs, a
  manual page for each (blob(1), blobstored(8), blob-dicomd(8),
  sdc-provider(1), sdc-get(1)), the template unit blobstored@.service with
  the install's paths, the sysusers.d file and the annotated example
  configuration under share/doc/blobstreaming/;
- `systemd-analyze verify` accepts the installed unit (an instance of it)
  without a single complaint;
- every page renders with `man -l` without a warning and names every long
  option its program's --help lists (the pages are made from --help);
- the installed example configuration is one blobstored accepts: the
  installed daemon starts with it (its store and Naming Service replaced on
  the command line, which wins over the file);
- the notification protocol of Type=notify, on a socket the test binds as
  $NOTIFY_SOCKET: READY=1 with the ready line as STATUS, after the store is
  registered (`blob stores` lists it then); RELOADING=1 then READY=1 on
  SIGHUP; STOPPING=1 on SIGTERM;
- with standard error the journal's stream ($JOURNAL_STREAM names its device
  and inode), log lines carry a syslog priority and no timestamp of their own.

Skipped (77) only when systemd-analyze or man is missing."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, check_equal, step  # noqa: E402

PROGRAMS = {"blob": "1", "blobstored": "8", "blob-activatord": "8", "blob-dicomd": "8", "sdc-provider": "1", "sdc-get": "1"}


def install(c):
    """`make install DESTDIR=TMP` (libtool installs only into the configured
    prefix, staged under DESTDIR as a package build does): (DESTDIR, prefix,
    the staged prefix). The installed programs find their libraries through
    LD_LIBRARY_PATH in `c.env` from then on."""
    destdir = c.path("destdir")
    env = {k: v for k, v in c.env.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    r = subprocess.run(["make", "-C", harness.build_dir(), "install", f"DESTDIR={destdir}"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600, env=env)
    check(r.returncode == 0, f"make install DESTDIR={destdir} exited {r.returncode}: {r.stderr[-2000:]}")
    found = [root for root, _dirs, files in os.walk(destdir) if "blobstored" in files and root.endswith("/bin")]
    check(len(found) == 1, f"bin/blobstored under {destdir}: {found}")
    staged = os.path.dirname(found[0])
    prefix = staged[len(destdir):]
    c.env["LD_LIBRARY_PATH"] = ":".join([os.path.join(staged, "lib")] +
                                        [p for p in [c.env.get("LD_LIBRARY_PATH")] if p])
    step(f"make install DESTDIR={destdir}: prefix {prefix}")
    return destdir, prefix, staged


def installed_files(destdir, prefix, staged):
    step("make install: programs, manual pages, unit, sysusers.d, example configuration")
    expected = [f"bin/{p}" for p in PROGRAMS] + [f"share/man/man{s}/{p}.{s}" for p, s in PROGRAMS.items()] + \
        ["lib/systemd/system/blobstored@.service", "lib/sysusers.d/blobstreaming.conf",
         "share/doc/blobstreaming/blobstored.conf.example"]
    missing = [f for f in expected if not os.path.isfile(os.path.join(staged, f))]
    check(not missing, f"not installed under {staged}: {missing}")
    with open(os.path.join(staged, "lib/systemd/system/blobstored@.service")) as f:
        unit = f.read()
    check(f"ExecStart={prefix}/bin/blobstored --name %i --config {prefix}/etc/blobstreaming/%i.conf" in unit,
          "the unit's ExecStart does not name the installed program and configuration")
    check(not re.search(r"@[a-z]+@", unit), "a placeholder left in the installed unit")
    return unit


def unit_verified(c, unit, prefix, staged):
    """systemd-analyze verify of the unit as installed, its paths pointing
    into the staged tree (verify checks that ExecStart is executable)."""
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        raise harness.TestSkipped("systemd-analyze is not installed (Debian package systemd)")
    step("systemd-analyze verify blobstored@ws1.service")
    units = c.path("units")
    os.makedirs(units)
    with open(os.path.join(units, "blobstored@.service"), "w") as f:
        f.write(unit.replace(prefix + "/", staged + "/"))
    r = subprocess.run([analyze, "verify", "--man=no", os.path.join(units, "blobstored@ws1.service")],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and not r.stderr.strip(),
          f"systemd-analyze verify: exit {r.returncode}: {r.stderr.strip()!r}")


def pages_render(c, prefix):
    """`prefix`: the staged prefix."""
    if not shutil.which("man"):
        raise harness.TestSkipped("man is not installed (Debian package man-db)")
    for program, section in PROGRAMS.items():
        page = os.path.join(prefix, f"share/man/man{section}/{program}.{section}")
        r = subprocess.run(["man", "-l", page], capture_output=True, text=True, timeout=60,
                           env=dict(c.env, MANWIDTH="100", MAN_KEEP_FORMATTING="0", MANPAGER="cat", PAGER="cat"))
        check(r.returncode == 0 and not r.stderr.strip() and program.upper() in r.stdout,
              f"man -l {page}: exit {r.returncode}: {r.stderr.strip()!r}")
        helped = subprocess.run([os.path.join(prefix, "bin", program), "--help"], capture_output=True, text=True,
                                timeout=60, env=c.env)
        options = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", helped.stdout + helped.stderr))
        check(len(options) >= 2, f"{program} --help lists no options: {helped.stdout[:300]!r}")
        with open(page) as f:
            source = f.read().replace("\\-", "-")
        missing = sorted(o for o in options if o not in source)
        check(not missing, f"{program}.{section} does not name {missing} of its --help")
        step(f"{program}.{section}: renders, names all {len(options)} options of --help")


def notify_socket(c):
    path = c.path("notify.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(30)
    return s, path


def next_notice(sock, what):
    try:
        return sock.recv(4096).decode()
    except socket.timeout:
        raise harness.TestFailure(f"no {what} notification within 30 s") from None


def under_systemd(c, prefix):
    """`prefix`: the staged prefix."""
    step("Type=notify: READY=1 after the registration, RELOADING=1/READY=1 on SIGHUP, STOPPING=1 on SIGTERM")
    example = os.path.join(prefix, "share/doc/blobstreaming/blobstored.conf.example")
    sock, path = notify_socket(c)
    err_path = c.path("journal.err")
    err = open(err_path, "wb")
    st = os.fstat(err.fileno())
    env = dict(c.env, NOTIFY_SOCKET=path, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
    argv = [os.path.join(prefix, "bin/blobstored"), "--config", example, "--name", "unit", "--naming", c.naming,
            "--store", "file:" + c.path("unit-store"), "--control-address", "127.0.0.1:0",
            "--data-address", "127.0.0.1:0"]
    popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=env, text=True)
    daemon = harness.Process("installed blobstored", popen, [err_path])
    c.processes.append(daemon)
    try:
        ready = next_notice(sock, "READY")
        check(ready.startswith("READY=1\nSTATUS=blobstored ready name=unit "), f"first notification: {ready!r}")
        names = [s["name"] for s in c.blob("stores").ok()["stores"]]
        check("unit" in names, f"READY=1 came before the store was registered: `blob stores` lists {names}")
        check_equal(popen.stdout.readline().strip(), ready.split("STATUS=", 1)[1], "the ready line and STATUS")
        os.kill(popen.pid, signal.SIGHUP)
        check(next_notice(sock, "RELOADING").startswith("RELOADING=1\n"), "notification on SIGHUP")
        check(next_notice(sock, "READY after the reload").startswith("READY=1\n"), "notification after the reload")
        os.kill(popen.pid, signal.SIGTERM)
        check_equal(next_notice(sock, "STOPPING"), 'STOPPING=1\nSTATUS=shutting down store "unit"',
                    "notification on SIGTERM")
        check_equal(popen.wait(timeout=60), 0, "exit status after SIGTERM")
    finally:
        if popen.poll() is None:
            popen.kill()
            popen.wait()
        err.close()
        sock.close()
    with open(err_path, encoding="utf-8", errors="replace") as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    check(lines and all(re.match(r"<[0-7]>(trace|debug|info|warning|error|critical): ", line) for line in lines),
          f"log lines to the journal are not `<N>level: message`: {lines[:5]}")
    check(not any(re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", line) for line in lines),
          f"a log line to the journal has a timestamp of its own: {lines[:5]}")
    step(f"journal format: {lines[0]!r}")


def test(c):
    destdir, prefix, staged = install(c)
    unit = installed_files(destdir, prefix, staged)
    unit_verified(c, unit, prefix, staged)
    pages_render(c, staged)
    under_systemd(c, staged)


if __name__ == "__main__":
    harness.main(test)
