"""The work directory (KEXPAND_WORK): what kexpand keeps there, and the
lock that lets one run at a time use it.

- Only kexpand's own entries (ENTRIES) may be in it: a directory that holds
  anything else is refused (exit 2), never cleaned. `.kexpand-work` marks a
  directory kexpand made or adopted.
- The lock file always names the live holder: its pid is written when the
  lock is taken and removed when it is released; a refused run reads it
  and never writes it.
- A run that died (kill -9) can leave children behind: every child a run
  starts carries KEXPAND_RUN=<work dir hash>:<pid> in its environment (make,
  the compilers, git, QEMU inherit it). The next run that takes the
  lock kills the processes whose tag names this work directory and a pid
  that is no longer alive, then removes the dead run's half-made entries
  (an interrupted unpack) and lets series/trees repair their git trees."""
import contextlib
import fcntl
import fnmatch
import hashlib
import os
import shutil
import signal
import time
from pathlib import Path

from .util import KexpandError, atomic_write_json, log

MARKER = ".kexpand-work"
LOCK = "lock"
RUN_VAR = "KEXPAND_RUN"
# everything kexpand makes at the top of a work directory
ENTRIES = (MARKER, LOCK, "tree", "tree.unpacking", "cache", "trees", "bisect",
           "scratch", "boot", "build-steps.json", "series-*.json", "kconfigs",
           "sweep-allconfig", "check", "track", "dask")


# The paths kexpand keeps in a work directory, named here and nowhere else
# (tests/test_layout.py holds the other modules to it).
def tree(work):
    """The packaged tree, unpacked, with the case's series committed."""
    return Path(work) / "tree"


def unpacking(work):
    """Where the tarball is unpacked before it becomes tree()."""
    return Path(work) / "tree.unpacking"


def cache(work):
    """The measurement cache (bench/measure/cache.py)."""
    return Path(work) / "cache"


def user_trees(work):
    """Clones of users' trees (KERNEL=), one per tree (kbuild/trees.py)."""
    return Path(work) / "trees"


def scratch(work):
    """Objects and outputs of timed and counted commands, thrown away."""
    return Path(work) / "scratch"


def boot(work, commit):
    """One commit's boot: its initramfs and console log."""
    return Path(work) / "boot" / commit[:12]


def bisect(work):
    """The bare clone `git bisect run` walks (make bisect)."""
    return Path(work) / "bisect"


def track_state(work, name):
    """Which build dir a track (or a Dask worker's share) left at which commit."""
    return Path(work) / "track" / f"{name}-dirs.json"


def kconfigs(work):
    """KCONFIG= files a Dask worker got as text from its client."""
    return Path(work) / "kconfigs"


def sweep_allconfig(work):
    """make sweep's KCONFIG_ALLCONFIG files."""
    return Path(work) / "sweep-allconfig"


def series_state(work, case):
    """Which commit each point of the case's series is, in tree()."""
    return Path(work) / f"series-{case}.json"


def _known(name):
    if any(fnmatch.fnmatchcase(name, pat) for pat in ENTRIES):
        return True
    # a write that was cut off: util.atomic_write's ".<name>.<random>"
    return name.startswith(".") and "." in name[1:] and \
        _known(name[1:].rsplit(".", 1)[0]) and not name[1:].startswith(".")


def unknown_entries(work):
    """Names in `work` that kexpand does not make."""
    return sorted(n for n in os.listdir(work) if not _known(n))


def check_entries(work, adopt=True):
    """Refuse (exit 2) a work directory with entries kexpand did not make;
    adopt one that holds only kexpand's (an older kexpand made it)."""
    bad = unknown_entries(work)
    t = tree(work)
    if t.exists() and not is_own_tree(t):
        bad.append("tree (not a tree kexpand unpacked)")
    if bad:
        raise KexpandError(
            f"KEXPAND_WORK={work} holds entries kexpand did not make: "
            f"{', '.join(bad[:8])}{' ...' if len(bad) > 8 else ''}. kexpand never "
            "deletes what it did not make; give an empty or new directory, for "
            "example KEXPAND_WORK=~/.cache/kexpand", "user")
    if adopt and not (Path(work) / MARKER).exists():
        atomic_write_json(Path(work) / MARKER, {"kexpand": 1})


TREE_MARK = "kexpand-tree"      # in the tree's .git: this tree is kexpand's


def is_own_tree(tree):
    """`tree` is kexpand's: a git tree it unpacked (marked, or tagged
    `packaged` by an earlier kexpand)."""
    g = Path(tree) / ".git"
    return (g / TREE_MARK).exists() or (g / "refs/tags/packaged").exists() or \
        _packed_tag(g / "packed-refs")


def _packed_tag(f):
    try:
        return "refs/tags/packaged" in f.read_text()
    except OSError:
        return False


# --- processes of a dead run ---------------------------------------------------

def _tag_of(pid):
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for kv in env:
        if kv.startswith(RUN_VAR.encode() + b"="):
            return kv.split(b"=", 1)[1].decode(errors="replace")
    return None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def tag_prefix(work):
    """The part of KEXPAND_RUN that names the work directory (hashed)."""
    return hashlib.sha256(str(work).encode()).hexdigest()[:16] + ":"


def run_tag(work, pid):
    """KEXPAND_RUN's value: the work directory (hashed) and the run's pid,
    of one length whatever they are (an instruction count sees it)."""
    return f"{tag_prefix(work)}{pid:010d}"


def leftovers(work):
    """Pids of processes started by a run on `work` that is dead."""
    out, me = [], os.getpid()
    prefix = tag_prefix(work)
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        tag = _tag_of(d.name)
        if not tag or not tag.startswith(prefix):
            continue
        owner = tag[len(prefix):]
        if owner.isdigit() and int(owner) != me and not _alive(int(owner)):
            out.append(int(d.name))
    return out


def kill_leftovers(work, wait_s=30.0):
    """Kill what a dead run left running (kill -9 leaves git, make,
    QEMU); wait until they are gone, so none of them writes into what the
    new run is about to repair."""
    pids = leftovers(work)
    if not pids:
        return []
    log(f"a run on {work} that was killed left {len(pids)} processes running; "
        "ending them")
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    t0 = time.monotonic()
    while any(_alive(p) and not _zombie(p) for p in pids) and \
            time.monotonic() - t0 < wait_s:
        time.sleep(0.05)
    return pids


def _zombie(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


# --- the lock ------------------------------------------------------------------

def holder(work):
    """The pid the lock file names ('' when none)."""
    try:
        return (Path(work) / LOCK).read_text().strip()
    except OSError:
        return ""


@contextlib.contextmanager
def lock(work):
    """One kexpand run per work directory at a time. While held, the lock
    file names this process, and children carry this run's tag."""
    work = Path(work)
    try:
        work.mkdir(parents=True, exist_ok=True)
        check_entries(work, adopt=False)    # before the lock file is made in it
        fd = os.open(work / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise KexpandError(f"work directory {work} is not usable: {e.strerror}; "
                           "set KEXPAND_WORK= to a writable directory", "infra")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        who = holder(work)
        raise KexpandError(f"another kexpand run{f' (pid {who})' if who else ''} "
                           f"holds {work}/lock; wait for it to finish or use "
                           "another KEXPAND_WORK", "infra")
    old_tag = os.environ.get(RUN_VAR)
    try:
        check_entries(work)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        kill_leftovers(work)
        unpacking = work / "tree.unpacking"
        if unpacking.exists():
            log(f"removing {unpacking}: an unpack that did not finish")
            shutil.rmtree(unpacking)
        os.environ[RUN_VAR] = run_tag(work, os.getpid())
        yield
    finally:
        if old_tag is None:
            os.environ.pop(RUN_VAR, None)
        else:
            os.environ[RUN_VAR] = old_tag
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

