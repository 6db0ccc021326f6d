"""Plumbing shared by every stage (kernel-build/, bench/, compare.py):
errors with exit classes, logging and progress, subprocess runs that never
outlive an interrupt, atomic writes, and the work-directory lock.

This module is the most upstream code of kexpand: it imports nothing of
the project."""
import collections
import contextlib
import fcntl
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
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


def log(text):
    print(f"kexpand: {text}", file=sys.stderr, flush=True)


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
        print(f"kexpand {el:7.1f}s {text}", file=self.stream, flush=True)


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


# --- processes ---------------------------------------------------------------

def kill_group(proc):
    """Kill a child started with start_new_session=True and everything it
    started (make's sub-makes and compilers), then reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


# make's own variables: when kexpand runs under `make bench CC=clang`, they
# would pass the user's command-line variables (CC=clang, A=..., FILES=...)
# on to every kernel make kexpand starts, as overrides.
MAKE_ENV = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "GNUMAKEFLAGS")


def spawn(cmd, env=None, **kw):
    """Popen in a process group of its own, so an interrupt can end the
    whole tree it starts, without make's variables of an outer make; a
    missing program is a KexpandError."""
    env = {k: v for k, v in (os.environ if env is None else env).items()
           if k not in MAKE_ENV}
    try:
        proc = subprocess.Popen(cmd, start_new_session=True, env=env, **kw)
    except FileNotFoundError:
        raise missing_tool(str(cmd[0]))
    with _LIVE_LOCK:
        _LIVE[:] = [p for p in _LIVE if p.returncode is None] + [proc]
    return proc


# every child spawn() started, for kill_all(): a Ctrl-C reaches only the
# main thread, while worker threads wait on children in sessions of their own
_LIVE, _LIVE_LOCK = [], threading.Lock()


def kill_all():
    """Kill the process groups of every child still running (an interrupt
    or an infra error while threads run children)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)


def pipe(cmd, tool, cwd):
    """cmd's stdout into tool through a pipe (never a temporary file), both
    in process groups of their own. Returns (tool's stdout, tool's stderr,
    cmd's exit code, cmd's stderr, tool's exit code, cmd's CPU seconds:
    user + system of cmd and the children it waited for, from wait4(2),
    which other work on the machine changes far less than wall time).
    cmd's stderr goes to a file: a pipe read only at the end fills at 64 kB
    and stops both."""
    with tempfile.TemporaryFile() as errf:
        pre = spawn(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=errf)
        try:
            ana = spawn(tool, cwd=cwd, stdin=pre.stdout, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
        except BaseException:
            kill_group(pre)
            raise
        pre.stdout.close()
        try:
            out, aerr = ana.communicate()
            _, status, ru = os.wait4(pre.pid, 0)
        except BaseException:
            kill_group(pre)
            kill_group(ana)
            raise
        pre.returncode = os.waitstatus_to_exitcode(status)
        errf.seek(0)
        return (out, aerr, pre.returncode, errf.read(), ana.returncode,
                ru.ru_utime + ru.ru_stime)


def run(cmd, cwd=None, check=True, capture=True, env=None, what=None,
        klass="infra", timeout=None):
    """Run an argv list (never a shell string) in its own process group.
    On Ctrl-C, SIGTERM or a timeout the whole group is killed first. On
    failure (check=True) raise a KexpandError naming the command and the
    tail of its output."""
    proc = spawn(cmd, cwd=cwd, env=env, text=True, errors="replace",
                 stdin=subprocess.DEVNULL,
                 stdout=subprocess.PIPE if capture else None,
                 stderr=subprocess.STDOUT if capture else None)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise KexpandError(f"{what or 'command'} timed out after {timeout} s: "
                           f"{shlex.join(map(str, cmd))}", klass)
    except BaseException:
        kill_group(proc)
        raise
    p = subprocess.CompletedProcess(cmd, proc.returncode, out or "", None)
    if check and p.returncode != 0:
        tail = "\n".join(p.stdout.splitlines()[-20:])
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


# --- files -------------------------------------------------------------------

def make_dirs(d):
    """mkdir -p, each new directory 0755 whatever the umask: results are
    meant to be read and shared."""
    d = Path(d)
    if not d.is_dir():
        make_dirs(d.parent)
        d.mkdir(exist_ok=True)
        os.chmod(d, 0o755)


def atomic_write(path, data):
    """Write text (or bytes) through a temp file in the same directory,
    then rename: a reader sees the old file or the new one, never half of
    one. Mode 0644, whoever runs kexpand and whatever the umask."""
    path = Path(path)
    try:
        make_dirs(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as e:
        raise KexpandError(f"cannot write {path}: {e.strerror}", "infra")
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
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


@contextlib.contextmanager
def work_lock(work):
    """One kexpand run per work directory at a time."""
    try:
        work.mkdir(parents=True, exist_ok=True)
        f = open(work / "lock", "w")
    except OSError as e:
        raise KexpandError(f"work directory {work} is not usable: {e.strerror}; "
                           "set KEXPAND_WORK= to a writable directory", "infra")
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


# --- the command-line wrapper --------------------------------------------------

def _sigterm(signum, frame):
    raise KeyboardInterrupt


def main_wrapper(fn, argv=None):
    """Run a CLI main(argv): KexpandError -> message + class exit code;
    SIGTERM is handled like Ctrl-C (the process groups of every child are
    killed by run()/spawn() callers, no half-written file)."""
    signal.signal(signal.SIGTERM, _sigterm)
    try:
        code = fn(argv) or 0
    except KexpandError as e:
        print(f"kexpand: error: {e}", file=sys.stderr)
        code = e.exit_code
    except KeyboardInterrupt:
        print("kexpand: interrupted; finished results are kept, rerun to "
              "resume from the cache", file=sys.stderr)
        code = EXIT_INTERRUPTED
    sys.exit(code)


def run_jobs(work, jobs, failed):
    """Run [(function, file, ...)] `jobs` at a time. What a job returns,
    more [(function, args)], starts before anything still queued. A job's
    non-infra KexpandError fails its file (`failed[file]`, first argument);
    the first infra error or interrupt stops the queue, kills the children
    of the running jobs and is raised."""
    queue, lock = collections.deque(work), threading.Condition()
    state = {"running": 0, "error": None}

    def stop(e):
        with lock:
            state["error"] = state["error"] or e
            queue.clear()
            lock.notify_all()
        kill_all()      # the other jobs' children: minutes of QEMU otherwise

    def worker():
        while True:
            with lock:
                while not queue and state["running"] and not state["error"]:
                    lock.wait()
                if state["error"] or not queue:
                    lock.notify_all()
                    return
                fn, args = queue.popleft()
                state["running"] += 1
            nxt = []
            try:
                nxt = fn(*args) or []
            except KexpandError as e:
                if e.klass != "infra":
                    failed[args[0]] = {"status": "error", "error": str(e)}
                else:
                    stop(e)
            except BaseException as e:      # a bug: stop, and show it
                stop(e)
            with lock:
                queue.extendleft(reversed(nxt))
                state["running"] -= 1
                lock.notify_all()

    threads = [threading.Thread(target=worker, daemon=True)
               for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.5)
    except BaseException as e:       # Ctrl-C in the main thread
        stop(e)
        raise
    if state["error"]:
        raise state["error"]
