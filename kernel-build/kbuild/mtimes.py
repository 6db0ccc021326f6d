"""File times across checkouts, so that make rebuilds what changed and only
that.

All points share one source tree; each has its own build dirs
(kb-<commit12>-<cc>). A checkout rewrites the files that differ and stamps
them with the current time, so going A -> B -> A left A's build dirs older
than those files, and make rebuilt everything that includes them although
nothing they were built from had changed (minmax.h reaches nearly the
whole kernel: measured, a second `make scan CONFIG=defconfig` rebuilt both
points). So `checkout` keeps, per commit, the times of the files a
checkout rewrites and puts them back when the tree returns to that commit:
a path's content at a commit never changes, so make sees what it saw when
that commit's build dirs were built.

The one case where an old time would hide a change is a build dir copied
from another commit's (build.seed_build_dir): `mark_changed` stamps the
files that differ between the two commits as new."""
import os
from pathlib import Path

from .gitops import git
from .util import atomic_write_json, read_json

STORE = "kexpand-mtimes.json"      # in the tree's git dir, never in a commit
KEEP = 32       # commits remembered (a bisect of a user's tree visits many)


def _git(tree, *args, check=True):
    return git(tree, *args, check=check)


def _changed(tree, a, b):
    out = _git(tree, "diff", "--name-only", "--no-renames", "-z", a, b).stdout
    return [p for p in out.split("\0") if p]


def changed(tree, a, b):
    """The files that differ between commits a and b (None: unknown)."""
    p = _git(tree, "diff", "--name-only", "--no-renames", "-z", a, b, check=False)
    return [x for x in p.stdout.split("\0") if x] if p.returncode == 0 else None


def count_changed(tree, a, b):
    """How many files differ between commits a and b (None: unknown)."""
    p = _git(tree, "diff", "--name-only", "--no-renames", "-z", a, b, check=False)
    return len([x for x in p.stdout.split("\0") if x]) if p.returncode == 0 else None


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


def checkout(tree, cur, commit):
    """git checkout --detach `commit` (the tree is at `cur` and clean), then
    give the rewritten files back the times they had when the tree was last
    at `commit`; files new to this tree keep the checkout's time."""
    changed = _changed(tree, cur, commit)
    store_file = _store_file(tree)
    store = read_json(store_file) if store_file.is_file() else None
    store = store if isinstance(store, dict) else {}
    mine = store.pop(cur, {})
    for rel in changed:
        if (p := _file(tree, rel)):
            mine[rel] = p.stat().st_mtime_ns
    store[cur] = mine                       # most recent last
    back = store.get(commit, {})
    while len(store) > KEEP:                # forgetting costs only a rebuild
        store.pop(next(iter(store)))
    atomic_write_json(store_file, store)
    _git(tree, "checkout", "-q", "--detach", commit)
    for rel in changed:
        if rel in back and isinstance(back[rel], int) and (p := _file(tree, rel)):
            os.utime(p, ns=(back[rel], back[rel]))


def mark_changed(tree, a, b):
    """Stamp the files that differ between commits a and b (the tree is at
    b) with the current time."""
    for rel in _changed(tree, a, b):
        if (p := _file(tree, rel)):
            os.utime(p)
