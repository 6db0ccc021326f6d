"""Plumbing shared by every stage (kernel-build/, bench/, report.py):
errors with exit classes, logging and progress, atomic writes, and the
command-line wrapper. Child processes are kbuild.proc's, the work
directory kbuild.workdir's.

This module is the most upstream code of kexpand: it imports nothing of
the project."""
import contextlib
import json
import os
import re
import signal
import stat
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Exit codes (documented in README.md, "Exit codes").
EXIT_OK = 0
EXIT_USER = 2       # bad names, bad arguments, case data that does not apply
EXIT_BUILD = 3      # a kernel or object build failed
EXIT_BOOT = 4       # a kernel did not boot or its tests failed
EXIT_INFRA = 5      # missing tools, disk full, lock held, anything environmental
EXIT_INTERRUPTED = 130

CLASS_EXIT = {"user": EXIT_USER, "build": EXIT_BUILD, "boot": EXIT_BOOT,
              "infra": EXIT_INFRA}


class KexpandError(Exception):
    """An error meant for the user: one message, one class, no traceback.
    Classes: user (asked for something impossible), build (the code under
    test failed), boot, infra (the machine or a tool failed)."""

    def __init__(self, message, klass="user"):
        super().__init__(message)
        self.klass = klass

    @property
    def exit_code(self):
        return CLASS_EXIT[self.klass]


_LINES = threading.Lock()


def write_line(stream, line):
    """One line, in one write and under one lock: print() writes the text
    and its newline apart, and lines of two threads (make check's details)
    ran together."""
    with _LINES:
        stream.write(line + "\n")
        stream.flush()


def log(text):
    write_line(sys.stderr, f"kexpand: {text}")


# C0 controls but tab and newline, DEL, C1 controls and the bidirectional
# overrides: what a mail or commit subject could use to rewrite or hide
# what a reader of a terminal, a report or a page sees
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text):
    """text with its control characters escaped (ESC -> \\x1b)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100
                        else f"\\u{ord(m[0]):04x}", text)


class _Printable:
    """A terminal stream that writes control characters escaped."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        return self.stream.write(printable(text))

    def __getattr__(self, name):
        return getattr(self.stream, name)


class Progress:
    """Step n/N lines with elapsed time, on stderr."""

    def __init__(self, total=1, stream=None):
        self.total = total
        self.n = 0
        self.t0 = time.monotonic()
        self.stream = stream or sys.stderr

    def step(self, what):
        self.n += 1
        self.say(f"[{self.n}/{self.total}] {what}")

    def say(self, text):
        el = time.monotonic() - self.t0
        write_line(self.stream, f"kexpand {el:7.1f}s {text}")


class Split:
    """Where a run's wall time goes (builds, expansion, timed runs, boots);
    the rest is 'everything else'. One per run, carried by the request."""

    def __init__(self):
        self.t0 = time.monotonic()
        self.parts = {}

    @contextlib.contextmanager
    def timed(self, what):
        t = time.monotonic()
        try:
            yield
        finally:
            self.add(what, time.monotonic() - t)

    def add(self, what, seconds):
        self.parts[what] = self.parts.get(what, 0.0) + seconds

    def report(self):
        total = time.monotonic() - self.t0
        parts = dict(self.parts)
        parts["everything else"] = max(0.0, total - sum(self.parts.values()))
        return total, parts


# --- files -------------------------------------------------------------------

def make_dirs(d):
    """mkdir -p, each new directory 0755 whatever the umask: results are
    meant to be read and shared."""
    d = Path(d)
    if not d.is_dir():
        make_dirs(d.parent)
        d.mkdir(exist_ok=True)
        os.chmod(d, 0o755)


def read_regular(path, limit=-1):
    """The bytes of `path` (at most `limit`) if it is a regular file, else
    None: never through a link, never blocked on a FIFO or device that a
    build (untrusted) may have left where kexpand reads."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(limit)
    finally:
        os.close(fd)


def atomic_write(path, data, sync=True):
    """Write text (or bytes) through a temp file in the same directory,
    then rename: a reader sees the old file or the new one, never half of
    one. Mode 0644, whoever runs kexpand and whatever the umask. The temp
    file has a new random name (never one a build planted). sync=False:
    a cache, not flushed to disk."""
    path = Path(path)
    try:
        make_dirs(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as e:
        raise KexpandError(f"cannot write {path}: {e.strerror}", "infra")
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise KexpandError(f"cannot write {path}: {e.strerror}; earlier "
                           "results are untouched", "infra")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_json(path, obj):
    atomic_write(path, json.dumps(obj, indent=1, sort_keys=False) + "\n")


def read_json(path):
    """Read a JSON file; None (with a warning naming it) if unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        log(f"warning: skipping {path}: {e}")
        return None


# --- the command-line wrapper --------------------------------------------------

EXIT_REGRESSION = 1   # make check: a file grew past THRESHOLD (a finding, not an error)
EXIT_BUG = 70         # an error in kexpand itself (sysexits' EX_SOFTWARE)

_INTERRUPTED = []


def _interrupt(signum, frame):
    """The first SIGINT or SIGTERM interrupts the run (KeyboardInterrupt,
    which kills the children's process groups on its way up); later ones
    are ignored, so that they cannot cut the cleanup short."""
    if not _INTERRUPTED:
        _INTERRUPTED.append(signum)
        raise KeyboardInterrupt


def _bug_report(e):
    """An exception kexpand did not expect: one line on stderr, the
    traceback in a file (never on the terminal)."""
    text = "".join(traceback.format_exception(e))
    try:
        fd, path = tempfile.mkstemp(prefix="kexpand-error-", suffix=".txt")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        where = f"; the details are in {path}"
    except OSError:
        where = ""
    return (f"kexpand: internal error ({type(e).__name__}: {e}): this is a bug in "
            f"kexpand, please report it{where}")


def main_wrapper(fn, argv=None):
    """Run a CLI main(argv) under one error policy, and exit:
    KexpandError -> its message and class exit code; an interrupt (SIGINT
    or SIGTERM; a SIGINT a non-interactive shell left ignored is taken
    back) -> 130; the machine failing under us (OSError: disk full, a
    vanished file) -> 5 with the file named; anything else is a bug: 70,
    one line, the traceback in a file. No traceback reaches the terminal."""
    _INTERRUPTED.clear()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Printable(sys.stdout), _Printable(sys.stderr)
    try:
        code = fn(argv) or 0
    except KexpandError as e:
        print(f"kexpand: error: {e}", file=sys.stderr)
        code = e.exit_code
    except KeyboardInterrupt:
        print("kexpand: interrupted; finished results are kept, rerun to "
              "resume from the cache", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except OSError as e:
        what = f" {e.filename}" if e.filename else ""
        print(f"kexpand: error: the machine failed under the run:{what}: "
              f"{e.strerror or e}; finished results are kept, fix it and rerun",
              file=sys.stderr)
        code = EXIT_INFRA
    except Exception as e:      # noqa: B902  the last line of the policy
        print(_bug_report(e), file=sys.stderr)
        code = EXIT_BUG
    sys.stdout, sys.stderr = streams
    sys.exit(code)


def one_line(s):
    """A mail header's value as one line: any line break (CR, LF, VT, FF,
    ..., which a header cannot carry) as a blank."""
    return " ".join(s.splitlines())
