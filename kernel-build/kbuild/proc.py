"""Child processes: every one in a process group of its own (spawn), so an
interrupt or an error can end the whole tree it started (make and its
compilers, hyperfine and the timed command, QEMU), run with a timeout and
an error naming the command (run), piped into a tool (pipe), or many at
a time (run_jobs). Every -E has a time and a memory limit (pipe,
run_limited)."""
import collections
import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from .util import KexpandError

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
    # started and listed under the lock: a kill_all() from another thread
    # that comes once the child runs (it may run before Popen returns)
    # finds it listed
    with _LIVE_LOCK:
        try:
            proc = subprocess.Popen(cmd, start_new_session=True, env=env, **kw)
        except FileNotFoundError:
            raise missing_tool(str(cmd[0]))
        _LIVE[:] = [p for p in _LIVE if p.returncode is None] + [proc]
    return proc


# every child spawn() started, for kill_all(): a Ctrl-C reaches only the
# main thread, while worker threads wait on children in sessions of their own
_LIVE, _LIVE_LOCK = [], threading.RLock()


def kill_all():
    """Kill the process groups of every child still running (an interrupt
    or an infra error while threads run children)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)


# the limits of each command pipe() runs (every -E of a scan): wall
# seconds and address space in MiB (E_TIME_LIMIT=, E_MEM_LIMIT=, README
# "Variables"). The real minmax setup.c at laight-v4 (47 MB of -E output)
# takes gcc 23 s and 2.7 GB of RSS, clang 67 s and 3.8 GB, past 4 GiB of
# address space (the reference run); 16 GiB is the sandbox's RLIMIT_DATA
LIMITS = {"time_s": 300, "mem_mb": 16384}
LIMITS_HIT = ("time limit", "memory limit")     # what a LimitHit names
# what gcc, clang and the C tools write when an allocation fails
OUT_OF_MEMORY = re.compile(rb"out of memory|virtual memory exhausted|bad_alloc|MemoryError"
                           rb"|Cannot allocate memory|Allocation failed")


def set_limits(time_s=None, mem_mb=None):
    """The limits of every later pipe() in this process (settings.py's
    values; a Dask worker gets them with each task)."""
    LIMITS.update({k: v for k, v in (("time_s", time_s), ("mem_mb", mem_mb))
                   if v is not None})


class LimitHit(KexpandError):
    """A command pipe() ran went past its time or memory limit; `limit` is
    "time limit" or "memory limit" (the report names it)."""

    def __init__(self, message, limit):
        super().__init__(message, "build")
        self.limit = limit


def _limited(cmd, time_s, mem_mb):
    """cmd under prlimit(1): its address space, and CPU seconds as a
    backstop that holds even if nobody waits for it any more (its children
    inherit both). Not a preexec_fn: Dask workers run tasks in threads,
    and a preexec_fn after fork can deadlock there."""
    if shutil.which(str(cmd[0])) is None:       # prlimit would only say exit 1
        raise missing_tool(str(cmd[0]))
    lim = [f"--cpu={time_s}:{time_s + 5}"] if time_s else []
    lim += [f"--as={mem_mb << 20}"] if mem_mb else []
    return ["prlimit", *lim, "--", *cmd]


def limit_text(limit, time_s=None, mem_mb=None):
    """What a run past `limit` ("time limit" or "memory limit") says."""
    time_s = LIMITS["time_s"] if time_s is None else time_s
    mem_mb = LIMITS["mem_mb"] if mem_mb is None else mem_mb
    what = (f"the time limit of {time_s} s (E_TIME_LIMIT=)" if limit == "time limit"
            else f"the memory limit of {mem_mb} MiB (E_MEM_LIMIT=)")
    return (f"{limit}: went past {what}; a file this big or slow is the "
            "regression to look at (raise the limit only for a file known to need it)")


def _limit_error(cmd, limit, time_s, mem_mb):
    return LimitHit(f"{limit_text(limit, time_s, mem_mb)}: "
                    f"{shlex.join(map(str, cmd))[:300]}", limit)


def _wait4(proc, deadline):
    """wait4(2) of proc, until `deadline` (time.monotonic())."""
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            return status, ru
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(proc.args, 0)
        time.sleep(0.01)


def pipe(cmd, tool, cwd, limits=None):
    """cmd's stdout into tool through a pipe (never a temporary file), both
    in process groups of their own. Returns (tool's stdout, tool's stderr,
    cmd's exit code, cmd's stderr, tool's exit code, cmd's CPU seconds:
    user + system of cmd and the children it waited for, from wait4(2),
    which other work on the machine changes far less than wall time).
    cmd's stderr goes to a file: a pipe read only at the end fills at 64 kB
    and stops both. cmd runs under LIMITS (or `limits`): past them both
    groups are killed and LimitHit names the limit."""
    lim = dict(LIMITS, **(limits or {}))
    time_s, mem_mb = lim["time_s"], lim["mem_mb"]
    deadline = time.monotonic() + time_s
    with tempfile.TemporaryFile() as errf:
        pre = spawn(_limited(cmd, time_s, mem_mb), cwd=cwd, stdout=subprocess.PIPE,
                    stderr=errf)
        try:
            ana = spawn(tool, cwd=cwd, stdin=pre.stdout, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
        except BaseException:
            kill_group(pre)
            raise
        pre.stdout.close()
        try:
            out, aerr = ana.communicate(timeout=max(0.1, deadline - time.monotonic()))
            status, ru = _wait4(pre, deadline)
        except subprocess.TimeoutExpired:
            kill_group(pre)
            kill_group(ana)
            raise _limit_error(cmd, "time limit", time_s, mem_mb)
        except BaseException:
            kill_group(pre)
            kill_group(ana)
            raise
        pre.returncode = os.waitstatus_to_exitcode(status)
        errf.seek(0)
        err = errf.read()
        cpu = ru.ru_utime + ru.ru_stime
        if pre.returncode == -signal.SIGXCPU or (pre.returncode == -signal.SIGKILL
                                                 and cpu >= time_s):
            raise _limit_error(cmd, "time limit", time_s, mem_mb)
        if pre.returncode != 0 and OUT_OF_MEMORY.search(err[-4096:]):
            raise _limit_error(cmd, "memory limit", time_s, mem_mb)
        return out, aerr, pre.returncode, err, ana.returncode, cpu


def run_limited(cmd, cwd):
    """cmd (a tool that preprocesses itself: kx-macrostack) under LIMITS,
    in a process group of its own: (stdout, stderr, exit code); past a
    limit, LimitHit."""
    time_s, mem_mb = LIMITS["time_s"], LIMITS["mem_mb"]
    p = spawn(_limited(cmd, time_s, mem_mb), cwd=cwd, stdout=subprocess.PIPE,
              stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=time_s)
    except subprocess.TimeoutExpired:
        kill_group(p)
        raise _limit_error(cmd, "time limit", time_s, mem_mb)
    except BaseException:
        kill_group(p)
        raise
    if p.returncode == -signal.SIGXCPU:
        raise _limit_error(cmd, "time limit", time_s, mem_mb)
    if p.returncode != 0 and OUT_OF_MEMORY.search(err[-4096:]):
        raise _limit_error(cmd, "memory limit", time_s, mem_mb)
    return out, err, p.returncode


def run(cmd, cwd=None, check=True, capture=True, env=None, what=None,
        klass="infra", timeout=None, stdout=None, on_interrupt="kill"):
    """Run an argv list (never a shell string) in its own process group.
    On Ctrl-C, SIGTERM or a timeout the whole group is killed first, except
    with on_interrupt="finish": a command that must not stop half-way (git
    writing its index and work tree) is waited for, and "term": a program
    that ends its own children (kexpand itself) gets SIGTERM and is waited
    for; then the interrupt goes on.
    stdout: a binary file for the output (stderr is then captured). On
    failure (check=True) raise a KexpandError naming the command and the
    tail of its output."""
    assert on_interrupt in ("kill", "finish", "term"), on_interrupt
    if stdout is not None:
        out_kw = {"stdout": stdout, "stderr": subprocess.PIPE}
    elif capture:
        out_kw = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
    else:
        out_kw = {"stdout": None, "stderr": None}
    proc = spawn(cmd, cwd=cwd, env=env, text=stdout is None,
                 errors="replace" if stdout is None else None,
                 stdin=subprocess.DEVNULL, **out_kw)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise KexpandError(f"{what or 'command'} timed out after {timeout} s: "
                           f"{shlex.join(map(str, cmd))}", klass)
    except BaseException:
        if on_interrupt == "kill":
            kill_group(proc)
        else:
            if on_interrupt == "term":
                proc.send_signal(signal.SIGTERM)
            wait_through(proc)
        raise
    if stdout is not None:
        out = (err or b"").decode(errors="replace")
    p = subprocess.CompletedProcess(cmd, proc.returncode, out or "", None)
    if check and p.returncode != 0:
        tail = "\n".join(p.stdout.splitlines()[-20:])
        raise KexpandError(
            f"{what or 'command'} failed (exit {p.returncode}): "
            f"{shlex.join(map(str, cmd))}\n{tail}", klass)
    return p


def wait_through(proc):
    """Wait for a child to end, whatever interrupts arrive meanwhile (the
    first interrupt is already on its way up; later ones are ignored by
    util.main_wrapper's handlers)."""
    while True:
        try:
            proc.wait()
            return
        except BaseException:       # noqa: B902  a second Ctrl-C: keep waiting
            continue


# Debian package of each external tool kexpand runs.
PACKAGES = {"hyperfine": "hyperfine", "qemu-system-x86_64": "qemu-system-x86",
            "clang": "clang", "ld.lld": "lld", "gcc": "gcc", "make": "make",
            "git": "git", "tar": "tar", "/usr/bin/time": "time",
            "flex": "flex", "bison": "bison", "dpkg-query": "dpkg",
            "chromium": "chromium", "prlimit": "util-linux"}


def missing_tool(name):
    pkg = PACKAGES.get(name) or PACKAGES.get(os.path.basename(name))
    hint = (f"; install it with 'apt-get install {pkg}' (or run the make "
            "target as root: it installs what is missing)") if pkg else ""
    return KexpandError(f"{name}: command not found{hint}", "infra")



class Beside(threading.Thread):
    """fn(*args) in a thread of its own, started at once, beside the
    caller's work (`done` is set when it ends: run_jobs' `more`). join()
    waits for it and raises what it raised; an interrupt while waiting
    kills its children (kill_all) first."""

    def __init__(self, fn, args):
        super().__init__(daemon=True)
        self.fn, self.args, self.error = fn, args, None
        self.done = threading.Event()
        self.start()

    def run(self):
        try:
            self.fn(*self.args)
        except BaseException as e:      # noqa: B902  raised again by join()
            self.error = e
        finally:
            self.done.set()

    def join(self, timeout=None):
        try:
            while self.is_alive():
                super().join(0.5)
        except BaseException:
            kill_all()
            raise
        if self.error is not None:
            raise self.error


def run_jobs(work, jobs, failed, more=None):
    """Run [(function, file, ...)] `jobs` at a time, one more once the
    event `more` is set (a core that a Beside gave back). What a job returns,
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
        while any(t.is_alive() for t in threads):
            if more is not None and more.is_set():
                more = None
                threads.append(threading.Thread(target=worker, daemon=True))
                threads[-1].start()
            for t in threads:
                t.join(0.2)
    except BaseException as e:       # Ctrl-C in the main thread
        stop(e)
        raise
    if state["error"]:
        raise state["error"]
