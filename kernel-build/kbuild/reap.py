"""The end of every process a run started, also of those its Dask
workers started in process groups of their own (proc.spawn): while in
reaping(), this process is their child subreaper, so that a worker that
ends hands its compilers and analyzers to it, not to init;
end_descendants() kills them."""
import collections
import contextlib
import ctypes
import os
import signal
import time

from .proc import live_pids


def descendants(pid=None):
    """[(pid, process group)] of every process below `pid` (default: this
    one), from /proc."""
    kids = collections.defaultdict(list)
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            kids[int(fields[1])].append((int(d), int(fields[2])))
    out, todo = [], [pid or os.getpid()]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out


def end_descendants(everything=False):
    """Kill the process groups below this process that are not its own:
    the compilers, analyzers and builds spawn() started, here or in a Dask
    worker process. With `everything`, also what is left in its own group
    (the workers), and reap what was reparented here (reaping)."""
    own = os.getpgrp()
    for pid, pgid in descendants():
        if pid in _SPARED:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if pgid != own:
                os.killpg(pgid, signal.SIGKILL)
            elif everything and not _kept(pid):
                os.kill(pid, signal.SIGKILL)
    if everything:
        _reap_orphans()


def _reap_orphans():
    """Wait for this process's children that no Popen waits for (orphans
    reparented here), for up to 5 s after they were killed."""
    mine = live_pids()
    deadline = time.monotonic() + 5
    while True:
        left = [pid for pid, _ in descendants() if pid not in mine | _SPARED
                and _parent(pid) == os.getpid() and not _kept(pid) and not _reaped(pid)]
        if not left or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def _kept(pid):
    """multiprocessing's resource tracker: it lives as long as this
    process, and relaunching it is a warning on the terminal."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"resource_tracker" in f.read()
    except OSError:
        return True


def _reaped(pid):
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def _parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


PR_SET_CHILD_SUBREAPER = 36
# what ran below this process before reaping() began (a test's own
# scheduler): not the run's to end
_SPARED = set()


@contextlib.contextmanager
def reaping():
    """While in it, this process is a child subreaper (prctl(2)): the
    children of a process that ends (a Dask worker's compilers) are
    reparented here, not to init, where end_descendants finds them. On the
    way out, everything still running below this process is killed."""
    libc = ctypes.CDLL(None, use_errno=True)
    _SPARED.update(pid for pid, _ in descendants())
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        yield
    finally:
        end_descendants(everything=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        _SPARED.clear()
