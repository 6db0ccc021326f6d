"""Shared plumbing: errors with exit classes, the work directory, progress,
subprocess runs, atomic writes and the run lock."""
import contextlib
import fcntl
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Exit codes (documented in README.md, "Exit codes").
EXIT_OK = 0
EXIT_USER = 2       # bad names, bad arguments, case data that does not apply
EXIT_BUILD = 3      # a kernel or object build failed
EXIT_BOOT = 4       # a kernel did not boot or its tests failed
EXIT_INFRA = 5      # missing tools, disk full, lock held, anything environmental

CLASS_EXIT = {"user": EXIT_USER, "build": EXIT_BUILD, "boot": EXIT_BOOT,
              "infra": EXIT_INFRA}


class KexpandError(Exception):
    """An error meant for the user: one message, one class, no traceback."""

    def __init__(self, message, klass="user"):
        super().__init__(message)
        self.klass = klass

    @property
    def exit_code(self):
        return CLASS_EXIT[self.klass]


def work_dir():
    env = os.environ.get("KEXPAND_WORK")
    if env:
        return Path(env).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kexpand"


def results_dir():
    return Path(os.environ.get("KEXPAND_RESULTS") or REPO / "results").resolve()


def jobs():
    return int(os.environ.get("JOBS") or os.cpu_count() or 1)


class Progress:
    """Step n/N lines with elapsed time, on stderr."""

    def __init__(self, total, stream=None):
        self.total = total
        self.n = 0
        self.t0 = time.monotonic()
        self.stream = stream or sys.stderr

    def step(self, what):
        self.n += 1
        self.say(f"[{self.n}/{self.total}] {what}")

    def say(self, text):
        el = time.monotonic() - self.t0
        print(f"kexpand {el:7.1f}s {text}", file=self.stream, flush=True)


class Split:
    """Where a run's wall time goes: builds, expansion, timed runs, boots;
    the rest is 'everything else'."""

    def __init__(self):
        self.t0 = time.monotonic()
        self.parts = {}

    @contextlib.contextmanager
    def timed(self, what):
        t = time.monotonic()
        try:
            yield
        finally:
            self.parts[what] = self.parts.get(what, 0.0) + time.monotonic() - t

    def add(self, what, seconds):
        self.parts[what] = self.parts.get(what, 0.0) + seconds

    def report(self):
        total = time.monotonic() - self.t0
        parts = dict(self.parts)
        parts["everything else"] = max(0.0, total - sum(self.parts.values()))
        return total, parts


SPLIT = Split()


def log(text):
    print(f"kexpand: {text}", file=sys.stderr, flush=True)


def run(cmd, cwd=None, check=True, capture=True, env=None, what=None,
        klass="infra", timeout=None):
    """Run an argv list (never a shell string). On failure raise a
    KexpandError naming the command and the tail of its output."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, text=True,
                           stdout=subprocess.PIPE if capture else None,
                           stderr=subprocess.STDOUT if capture else None,
                           timeout=timeout)
    except FileNotFoundError:
        raise missing_tool(cmd[0])
    if check and p.returncode != 0:
        tail = "\n".join((p.stdout or "").splitlines()[-20:])
        raise KexpandError(
            f"{what or 'command'} failed (exit {p.returncode}): "
            f"{shlex.join(map(str, cmd))}\n{tail}", klass)
    return p


# Debian package of each external tool kexpand runs.
PACKAGES = {"hyperfine": "hyperfine", "qemu-system-x86_64": "qemu-system-x86",
            "clang": "clang", "ld.lld": "lld", "gcc": "gcc", "make": "make",
            "git": "git", "tar": "tar", "/usr/bin/time": "time",
            "flex": "flex", "bison": "bison", "dpkg-query": "dpkg",
            "chromium": "chromium"}


def missing_tool(name):
    pkg = PACKAGES.get(name) or PACKAGES.get(os.path.basename(name))
    hint = (f"; install it with 'apt-get install {pkg}' (or run the make "
            "target as root: it installs what is missing)") if pkg else ""
    return KexpandError(f"{name}: command not found{hint}", "infra")


def atomic_write(path, data):
    """Write text through a temp file in the same directory, then rename:
    a reader sees the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
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


@contextlib.contextmanager
def work_lock(work):
    """One kexpand run per work directory at a time."""
    work.mkdir(parents=True, exist_ok=True)
    f = open(work / "lock", "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise KexpandError(f"another kexpand run holds {work}/lock; wait for "
                           "it to finish or use another KEXPAND_WORK", "infra")
    try:
        f.write(f"{os.getpid()}\n")
        f.flush()
        yield
    finally:
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


def _sigterm(signum, frame):
    raise KeyboardInterrupt


def main_wrapper(fn):
    """Run a CLI main: KexpandError -> message + class exit code; SIGTERM
    is handled like Ctrl-C (children are killed, no half-written file)."""
    import signal
    signal.signal(signal.SIGTERM, _sigterm)
    try:
        sys.exit(fn() or 0)
    except KexpandError as e:
        print(f"kexpand: error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        print("kexpand: interrupted; finished results are kept, rerun to "
              "resume from the cache", file=sys.stderr)
        sys.exit(130)
