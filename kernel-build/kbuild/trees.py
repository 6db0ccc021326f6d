"""Kernel trees kexpand measures: the packaged tree it prepared, or a
user's git tree (KERNEL=), which is only ever read.

A user's tree is used through a shared clone in the work directory
(`git clone --shared --no-checkout`): objects come from the user's
repository through alternates, checkouts and build directories happen in
the clone. Nothing is written to the user's repository: no worktree
entry, no ref, no index or HEAD change, no bisect state."""
import hashlib
import os
import shutil
from pathlib import Path

from .proc import run
from .util import KexpandError, log


def _git_ro(repo, *args):
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", GIT_CONFIG_NOSYSTEM="1")
    return run(["git", "-C", str(repo), *args], check=False, env=env)


def check_user_tree(path):
    """Refuse what is not a kernel git tree; warn about local changes."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise KexpandError(f"KERNEL={path}: no such directory")
    top = _git_ro(p, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise KexpandError(f"KERNEL={path} is not a git tree; give the top "
                           "of a kernel git checkout (git clone of linux.git)")
    top = Path(top.stdout.strip())
    if _git_ro(top, "cat-file", "-e", "HEAD:scripts/kconfig/merge_config.sh"
               ).returncode != 0 or _git_ro(top, "cat-file", "-e",
                                            "HEAD:include/linux/kernel.h").returncode != 0:
        raise KexpandError(f"KERNEL={path} is a git tree but not a Linux "
                           "kernel tree (no scripts/kconfig/merge_config.sh or "
                           "include/linux/kernel.h at HEAD)")
    st = _git_ro(top, "status", "--porcelain", "-uno")
    if st.returncode == 0 and st.stdout.strip():
        log(f"warning: {top} has uncommitted changes; kexpand measures "
            "committed state only and leaves them alone")
    return top


def _clone_usable(clone):
    """The clone's HEAD commit and its tree are readable: false after the
    user rewrote history and pruned the objects the clone pointed at."""
    return (clone / ".git").is_dir() and all(
        _git_ro(clone, "cat-file", "-e", rev).returncode == 0
        for rev in ("HEAD^{commit}", "HEAD^{tree}"))


def user_clone(user_top, work):
    """The shared clone of a user's tree in the work directory; made again
    when it no longer reads (the user's history was rewritten and pruned)."""
    h = hashlib.sha256(str(user_top).encode()).hexdigest()[:12]
    clone = Path(work) / "trees" / f"{Path(user_top).name}-{h}"
    if clone.exists() and not _clone_usable(clone):
        log(f"the shared clone {clone} no longer reads (was {user_top}'s "
            "history rewritten and garbage-collected?); cloning it again")
        shutil.rmtree(clone)
    if not clone.exists():
        clone.parent.mkdir(parents=True, exist_ok=True)
        log(f"making a shared clone of {user_top} in {clone} (the original "
            "is only read)")
        run(["git", "clone", "-q", "--shared", "--no-checkout",
             str(user_top), str(clone)], what="git clone --shared")
        run(["git", "-C", str(clone), "config", "gc.auto", "0"])
        run(["git", "-C", str(clone), "checkout", "-q", "--detach", "HEAD"],
            what="checkout in the clone")
    return clone


def resolve(repo, ref):
    """A commit id for `ref` in `repo` (read-only), or a user error."""
    p = _git_ro(repo, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}")
    if p.returncode != 0 or not p.stdout.strip():
        tags = _git_ro(repo, "tag", "--sort=-creatordate").stdout.split()[:12]
        hint = f"; tags include: {', '.join(tags)}" if tags else ""
        raise KexpandError(f"unknown ref '{ref}' in {repo}{hint}")
    return p.stdout.strip()


def subject(repo, commit):
    return _git_ro(repo, "log", "-1", "--format=%s", commit).stdout.strip()


def snapshot(repo):
    """Everything that identifies a repository's state, for tests and for
    proving we left a user's tree alone."""
    out = []
    for args in (["rev-parse", "HEAD"], ["symbolic-ref", "-q", "HEAD"],
                 ["status", "--porcelain", "--ignored"],
                 ["for-each-ref"], ["worktree", "list", "--porcelain"],
                 ["stash", "list"]):
        out.append(_git_ro(repo, *args).stdout)
    gd = Path(_git_ro(repo, "rev-parse", "--absolute-git-dir").stdout.strip())
    for name in ("index", "BISECT_LOG", "BISECT_START", "HEAD"):
        f = gd / name
        out.append(hashlib.sha256(f.read_bytes()).hexdigest() if f.exists() else "-")
    return out
