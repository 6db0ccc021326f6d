"""git in kexpand's own trees (the packaged tree, the clones of users'
trees), so that no interrupt leaves one broken.

- Every git command runs to its end even when the run is interrupted
  (proc.run's on_interrupt="finish"): git writing its index and work tree is never
  killed half-way; the interrupt goes on once it is done.
- A command that rewrites the work tree (checkout, reset, apply, am,
  commit) runs inside `busy(tree)`, which leaves a mark in the tree's git
  directory while it runs. Only kill -9 can stop kexpand between the mark
  and its removal; the next run finds the mark and repairs the tree
  (`repair`: a stale index.lock removed, an unfinished `git am` aborted,
  the work tree reset to HEAD). A tree that is dirty without the mark was
  changed by someone else, and kexpand refuses to touch it."""
import contextlib
import os
import shutil
from pathlib import Path

from .proc import run
from .util import atomic_write, log

BUSY = "kexpand-busy"


def git(tree, *args, check=True, env=None, what=None):
    """git -C tree ..., never killed half-way, without the system's or the
    user's git config (a core.autocrlf or a hook there would change what
    kexpand's own trees hold)."""
    return run(["git", "-C", str(tree), *args], check=check, env=git_environ(env),
               what=what or f"git {args[0]}", on_interrupt="finish")


def git_environ(env=None):
    """The environment of git in kexpand's trees: os.environ plus `env`,
    without the system's or the user's config."""
    full = dict(os.environ, **(env or {}))
    full.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    full.setdefault("GIT_CONFIG_GLOBAL", "/dev/null")
    return full


def is_clean(tree):
    """No tracked file of `tree` differs from its HEAD (untracked files,
    such as build dirs inside the tree, are not looked at)."""
    return not git(tree, "status", "--porcelain", "-uno").stdout.strip()


def git_dir(tree):
    g = Path(tree) / ".git"
    return g if g.is_dir() else Path(tree)


def interrupted(tree):
    """A command of a run that was killed did not finish in this tree."""
    g = git_dir(tree)
    return (g / BUSY).exists() or (g / "index.lock").exists()


def repair(tree):
    """Bring a tree that a killed run left mid-command back to a clean
    state at its HEAD. Only called while this run holds the work lock, so
    no other kexpand uses the tree; the dead run's processes were ended
    (workdir.kill_leftovers)."""
    g = git_dir(tree)
    log(f"{tree}: a kexpand run was killed in the middle of a git command here; "
        "repairing (index lock removed, work tree reset to HEAD)")
    (g / "index.lock").unlink(missing_ok=True)
    if (g / "rebase-apply").exists():
        git(tree, "am", "--abort", check=False)
        shutil.rmtree(g / "rebase-apply", ignore_errors=True)
    git(tree, "reset", "-q", "--hard", what="git reset (repair)")
    (g / BUSY).unlink(missing_ok=True)


@contextlib.contextmanager
def busy(tree, what="git"):
    """Mark `tree` as being rewritten while the body runs."""
    if interrupted(tree):
        repair(tree)
    mark = git_dir(tree) / BUSY
    atomic_write(mark, f"{os.getpid()} {what}\n")
    yield
    mark.unlink(missing_ok=True)
