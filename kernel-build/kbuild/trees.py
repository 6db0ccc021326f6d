"""Kernel trees kexpand measures: the packaged tree it prepared, or a
user's git tree (KERNEL=), which is only ever read.

A user's tree is used through a clone of kexpand's own in the work
directory that borrows the user's objects (objects/info/alternates, as
`git clone --shared` does, also for a shallow repository, where `git
clone` would copy every object): checkouts and build directories happen
in the clone. Refs and files are looked up in the user's repository
before any clone is made, and errors name the user's paths. Nothing is
written to the user's repository: no worktree entry, no ref, no index
or HEAD change, no bisect state."""
import hashlib
import os
import re
import shutil
from pathlib import Path

from . import gitops, workdir
from .proc import run
from .util import KexpandError, atomic_write, log


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


def clone_path(user_top, work):
    """Where the clone of a user's tree lives: a name Kbuild can take (no
    spaces or make syntax, whatever the user's directory is called)."""
    h = hashlib.sha256(str(user_top).encode()).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", Path(user_top).name)[:40] or "tree"
    return workdir.user_trees(work) / f"{name}-{h}"


def _common_dir(top):
    p = _git_ro(top, "rev-parse", "--path-format=absolute", "--git-common-dir")
    return Path(p.stdout.strip())


def user_clone(user_top, work):
    """The clone of a user's tree in the work directory, borrowing its
    objects; made again when it no longer reads (the user's history was
    rewritten and pruned). Starts at the user's HEAD commit."""
    clone = clone_path(user_top, work)
    if clone.exists() and not _clone_usable(clone):
        log(f"the clone {clone} no longer reads (was {user_top}'s "
            "history rewritten and garbage-collected?); making it again")
        shutil.rmtree(clone)
    if not clone.exists():
        head = resolve(user_top, "HEAD")
        tmp = clone.with_name(clone.name + ".new")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        log(f"making a clone of {user_top} in {clone} that borrows its objects "
            "(the original is only read)")
        gitops.git(tmp.parent, "init", "-q", tmp.name)
        common = _common_dir(user_top)
        atomic_write(tmp / ".git/objects/info/alternates", f"{common / 'objects'}\n")
        if (common / "shallow").is_file():      # a shallow clone's boundary
            atomic_write(tmp / ".git/shallow", (common / "shallow").read_bytes())
        gitops.git(tmp, "config", "gc.auto", "0")
        with gitops.busy(tmp, "checkout"):
            gitops.git(tmp, "checkout", "-q", "--detach", head,
                       what=f"checkout of {user_top}'s HEAD in the clone")
        tmp.rename(clone)
    return clone


def resolve(repo, ref):
    """A commit id for `ref` in `repo` (read-only), or a user error; in a
    shallow repository the error says where its history stops."""
    p = _git_ro(repo, "rev-parse", "-q", "--verify", "--end-of-options",
                f"{ref}^{{commit}}")
    if p.returncode != 0 or not p.stdout.strip():
        tags = _git_ro(repo, "tag", "--sort=-creatordate").stdout.split()[:12]
        hint = f"; tags include: {', '.join(tags)}" if tags else ""
        if _git_ro(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == "true":
            n = _git_ro(repo, "rev-list", "--count", "HEAD").stdout.strip()
            hint = (f"; {repo} is a shallow clone whose history stops after {n} "
                    "commit(s) from HEAD: deepen it (git fetch --deepen=100, or "
                    "--unshallow) to reach older refs") + hint
        raise KexpandError(f"unknown ref '{ref}' in {repo}{hint}")
    return p.stdout.strip()


def require_ancestor(repo, a, b, what):
    """A..B runs forwards: A is B or an ancestor of B (exit 2 otherwise,
    naming both). `what` names the setting, as RANGE= or A= and B=."""
    ca, cb = resolve(repo, a), resolve(repo, b)
    if _git_ro(repo, "merge-base", "--is-ancestor", ca, cb).returncode == 0:
        return ca, cb
    if _git_ro(repo, "merge-base", "--is-ancestor", cb, ca).returncode == 0:
        raise KexpandError(f"{what}: {a} ({ca[:12]}) comes after {b} ({cb[:12]}), not "
                           f"before: the range is reversed; give {b} first, then {a}")
    raise KexpandError(f"{what}: {a} ({ca[:12]}) is not an ancestor of {b} ({cb[:12]}) "
                       f"in {repo}: their histories part; give as the first ref a commit "
                       f"of {b}'s history (git merge-base {a} {b} names the one they share)")


def has_file(repo, commit, path):
    """`path` is a file of `commit` in `repo` (read-only)."""
    return _git_ro(repo, "cat-file", "-e", f"{commit}:{path}").returncode == 0


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
