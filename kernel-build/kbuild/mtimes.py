"""File times across checkouts, so that make rebuilds what changed and only
that.

All points share one source tree; each has its own build dirs
(kb-<commit12>-<cc>). A checkout rewrites the files that differ and stamps
them with the current time, so going A -> B -> A left A's build dirs older
than those files, and make rebuilt everything that includes them although
nothing they were built from had changed (minmax.h reaches nearly the
whole kernel: measured, a second `make scan CONFIG=defconfig` rebuilt both
points). So `checkout` keeps the time of each (path, content) a checkout
rewrites and puts it back whenever the tree holds that content again, at
any commit: make sees what it saw when the build dirs of that content
were built (a series checked after another on the same base: the files
the first one changed are the base's again, with the base's times).

Files written by git commands other than a checkout (git am applying a
posted series, git reset after a patch that does not apply) are kept the
same way by `kept_across`.

The one case where an old time would hide a change is a build dir copied
from another commit's (build.seed_build_dir): `mark_changed` stamps the
files that differ between the two commits as new."""
import os
import stat
from contextlib import contextmanager, suppress
from pathlib import Path

from .gitops import git, is_clean
from .util import KexpandError, atomic_write_json, read_json

STORE = "kexpand-mtimes.json"      # in the tree's git dir, never in a commit
KEEP = 100000   # (path, content) times remembered (a bisect of a user's tree visits many)


def _git(tree, *args, check=True):
    return git(tree, *args, check=check)


def changed(tree, a, b, check=False):
    """The files that differ between commits a and b (None: unknown; with
    check, git's failure is raised)."""
    p = _git(tree, "diff", "--name-only", "--no-renames", "-z", a, b, check=check)
    return [x for x in p.stdout.split("\0") if x] if p.returncode == 0 else None


def count_changed(tree, a, b):
    """How many files differ between commits a and b (None: unknown)."""
    files = changed(tree, a, b)
    return None if files is None else len(files)


def _store_file(tree):
    p = _git(tree, "rev-parse", "--absolute-git-dir", check=False)
    return Path(p.stdout.strip()) / STORE if p.returncode == 0 else None


def kept(tree):
    """Whether checkouts in this tree ever kept times (only then can a
    file's time be older than its last change)."""
    f = _store_file(tree)
    return bool(f and f.exists())


def known(tree, commit):
    return _git(tree, "cat-file", "-e", f"{commit}^{{commit}}",
                check=False).returncode == 0


def _file(tree, rel):
    p = Path(tree) / rel
    return p if p.is_file() and not p.is_symlink() else None


def _blobs(tree, a, b):
    """[(path, blob at a, blob at b)] of the files that differ between
    commits a and b (a blob of zeros: no file there)."""
    out = _git(tree, "diff", "--raw", "--no-renames", "--abbrev=40", "-z", a, b).stdout
    parts = out.split("\0")
    return [(parts[i + 1], head.split()[2], head.split()[3])
            for i, head in enumerate(parts) if head.startswith(":") and i + 1 < len(parts)]


def checkout(tree, cur, commit):
    """git checkout --detach `commit` (the tree is at `cur` and clean), then
    give each rewritten file back the time it had when the tree last held
    that content (the path and its blob: whichever commit it was, make
    saw that time with those bytes); content new to this tree keeps the
    checkout's time."""
    diff = _blobs(tree, cur, commit)
    seen = _keep(tree, [(rel, old, p.stat().st_mtime_ns) for rel, old, _new in diff
                        if (p := _file(tree, rel))])
    _git(tree, "checkout", "-q", "--detach", commit)
    for rel, _old, new in diff:
        t = seen.get(f"{rel}\0{new}")
        if isinstance(t, int) and (p := _file(tree, rel)):
            os.utime(p, ns=(t, t))


def _keep(tree, times):
    """Remember [(path, blob, time)]; returns the whole store."""
    store_file = _store_file(tree)
    store = read_json(store_file) if store_file.is_file() else None
    seen = store.get("blobs") if isinstance(store, dict) and \
        isinstance(store.get("blobs"), dict) else {}
    for rel, blob, t in times:
        seen.pop(f"{rel}\0{blob}", None)
        seen[f"{rel}\0{blob}"] = t                       # most recent last
    while len(seen) > KEEP:                 # forgetting costs only a rebuild
        seen.pop(next(iter(seen)))
    atomic_write_json(store_file, {"blobs": seen})
    return seen


def _times(tree):
    """{path: time} of the tree's files (as _file: no symlinks)."""
    out, times = _git(tree, "ls-files", "-z").stdout, {}
    for rel in filter(None, out.split("\0")):
        try:
            st = os.lstat(os.path.join(tree, rel))
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            times[rel] = st.st_mtime_ns
    return times


@contextmanager
def kept_across(tree):
    """Around git commands that move the clean tree from its commit to
    another by rewriting files (git am, git apply, git reset): each file
    that holds the content it had again gets its time back, and its time
    of each file that now differs is kept for the next checkout of it."""
    if not is_clean(tree):            # (a dirty file's time is not its content's)
        yield
        return
    base = _git(tree, "rev-parse", "HEAD").stdout.strip()
    before = _times(tree)
    try:
        yield
    except BaseException:
        # (a run stopped half way leaves new times: they cost only a rebuild)
        with suppress(KexpandError):
            if is_clean(tree):
                _restore(tree, base, before)
        raise
    if is_clean(tree):
        _restore(tree, base, before)


def _restore(tree, base, before):
    head = _git(tree, "rev-parse", "HEAD").stdout.strip()
    diff = {rel: old for rel, old, _new in _blobs(tree, base, head)}
    _keep(tree, [(rel, old, before[rel]) for rel, old in diff.items() if rel in before])
    for rel, t in _times(tree).items():
        if rel not in diff and before.get(rel, t) != t:
            os.utime(os.path.join(tree, rel), ns=(before[rel], before[rel]))


def mark_changed(tree, a, b):
    """Stamp the files that differ between commits a and b (the tree is at
    b) with the current time."""
    for rel in changed(tree, a, b, check=True):
        if (p := _file(tree, rel)):
            os.utime(p)
