"""The sandbox: everything that runs on a tree that may hold someone
else's patches (Kconfig, make and its scripts, the preprocessor, the
compiler, clang's tools, timed runs and instruction counts) runs under
bubblewrap (Debian's bubblewrap):

- no network (a network namespace of its own: only its own loopback);
- its own pid, ipc, uts and cgroup namespaces, a new session, and it
  dies with kexpand (--die-with-parent): when its first process ends,
  the kernel ends every process left in it;
- an unprivileged uid (65534) in a user namespace, no capabilities;
- a read-only view of the toolchain (/usr and its links, a few files
  of /etc: no shadow, no ssh or TLS keys) and of kexpand's own tools;
- the tree state's source read-only, its build dir writable; the other
  build dirs of the tree read-only; nothing else of the work dir, the
  results dir, /root or /home; a private /tmp;
- a clean environment (the locale, PATH and kexpand's and Kbuild's own
  variables; git told to trust its index by a file's mtime and size);
- a time limit (coreutils timeout, on the whole process group) and a
  memory limit per process (RLIMIT_DATA, through prlimit).

A file outside the tree that a patch #includes is not there. SANDBOX=0
turns it off, for series one trusts (settings puts KEXPAND_SANDBOX=0 in
the environment, which local Dask workers inherit). Where it cannot
start, check() refuses with what is missing instead of running bare."""
import functools
import os
import pwd
import subprocess
from pathlib import Path

from .util import REPO, KexpandError, log

ENV = "KEXPAND_SANDBOX"
# dirs the operator lets every sandbox write, ':'-separated (the tests'
# fake Kbuild announces and blocks through a fifo in one)
ENV_RW = "KEXPAND_SANDBOX_RW"
BWRAP = "bwrap"
UID = 65534
# a whole kernel build is one command; a stuck one ends here at the latest
LIMIT_S = 6 * 3600
# per process (RLIMIT_DATA: heap and private writable maps); cc1 on the
# worst minmax.h point needs about 2 GiB
LIMIT_DATA = 16 << 30
# the private /tmp and /dev/shm (RAM): a compiler's temporary files
TMP_SIZE = 4 << 30
# what the toolchain reads of /etc: the links of alternatives (cc, awk,
# ld), the loader's cache, user and group names
ETC = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd",
       "group", "nsswitch.conf", "localtime", "timezone", "os-release",
       "debian_version", "perl", "python3", "python3.11")
TOP = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
KEEP = {"PATH", "LANG", "LANGUAGE", "TZ", "PWD", "SOURCE_DATE_EPOCH", "ARCH",
        "CROSS_COMPILE", "LLVM"}
KEEP_PREFIX = ("LC_", "KBUILD_", "KCONFIG_", "KEXPAND_RUN", "KX_ICOUNT_", "KX_QEMU",
               "FAKE_")
# git inside: compare a file's stat by mtime and size only (wrap)
GIT_CONFIG = {"core.checkStat": "minimal"}
# a tree's build dirs (build.build_dir) and scan dirs (build.scan_dir)
BUILD_DIRS = ("kb-", "ks-")
# kexpand's own tools and the case data (config fragments): read-only
OWN_RO = (REPO / "bench" / "tools", REPO / "cases", REPO / "kernel-build")


def enabled(env=None):
    return (os.environ if env is None else env).get(ENV, "1") != "0"


def set_enabled(on):
    """SANDBOX= as settings read it, for this process and its children
    (local Dask workers start from this environment)."""
    if on:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = "0"


def _git_objects(tree):
    """The object stores the tree's git borrows (the alternates of a clone
    of a user's tree, and theirs): git inside (setlocalversion) reads them,
    read-only like the tree's own .git, so a build cannot plant a hook
    that kexpand's own git would run outside."""
    git = Path(tree) / ".git"
    todo, out = ([git / "objects"] if git.is_dir() else []), []
    while todo:
        obj = todo.pop()
        if obj in out or not obj.is_dir():
            continue
        out.append(obj)
        try:
            lines = (obj / "info" / "alternates").read_text().splitlines()
        except OSError:
            lines = []
        for line in (x.strip() for x in lines):
            if line and not line.startswith("#"):
                todo.append((obj / line).resolve())
    return out[1:]


def tree_of(bdir):
    """The tree a build or scan dir belongs to (<tree>/kb-*, ks-*); any
    other dir is a tree of its own, with nothing writable in it but what
    rw names."""
    p = Path(bdir).resolve()
    return p.parent if p.name.startswith(BUILD_DIRS) else p


# a source file kexpand reads itself (a hot line's statement): at most this
READ_CAP = 16 << 20


def tree_file(bdir, rel):
    """The file `rel` (relative to build dir bdir, as a line marker names
    it) if it is a regular file inside bdir's tree (its parent), else None. What a
    build or a patch names (#line "/root/.ssh/id_rsa", a symlink out of
    the tree, a fifo) is read by kexpand outside the sandbox: only the
    tree's own files are."""
    if not rel or rel.startswith("<"):
        return None
    try:
        p = (Path(bdir) / rel).resolve()
        ok = p.is_relative_to(Path(bdir).resolve().parent) and p.is_file() and \
            p.stat().st_size <= READ_CAP
    except (OSError, RuntimeError):
        return None
    return p if ok else None


def wrap(argv, bdir, *, cwd=None, rw=(), ro=(), env=None, seconds=None,
         data=None, view=None):
    """argv as it runs in the sandbox for the tree of build dir `bdir`
    (writable; the tree's source and its other build dirs read-only).
    rw, ro: further paths (scratch dirs, a config file). env: the
    environment the command is to see (default: this process's),
    filtered. seconds, data: the limits (default LIMIT_S, LIMIT_DATA).
    view: a copy of some of the tree's files (cost.freeze), seen
    read-only in the tree's place, build dir included: the command reads
    them as they were while the tree moves on to other commits.
    Unchanged when the sandbox is off (a view then needs the sandbox)."""
    own_env = env is None
    env = dict(os.environ if env is None else env)
    if not enabled():
        if view is not None:
            raise KexpandError("a command on a frozen view of the tree runs only in "
                               "the sandbox", "infra")
        return list(map(str, argv))
    bdir = Path(bdir).resolve()
    tree = tree_of(bdir)
    cwd = Path(cwd).resolve() if cwd is not None else bdir
    a = _system() + _path_dirs(env, tree) + ["--ro-bind", str(view or tree), str(tree)]
    if view is None:        # (a view holds the build dir's part the command reads)
        for d in sorted(d for d in tree.iterdir() if d.name.startswith(BUILD_DIRS)):
            if d.is_dir() and d != bdir:
                a += ["--ro-bind", str(d), str(d)]
        if bdir != tree:
            bdir.mkdir(parents=True, exist_ok=True)
            a += ["--bind", str(bdir), str(bdir)]
    for p in (*(_git_objects(tree) if view is None else ()), *OWN_RO, *ro):
        p = Path(p).resolve()
        if p.exists() and not p.is_relative_to(tree):
            a += ["--ro-bind", str(p), str(p)]
    extra = [x for x in os.environ.get(ENV_RW, "").split(":") if x]
    for p in (*rw, *extra):
        p = Path(p).resolve()
        if p.exists():
            a += ["--bind", str(p), str(p)]
    a += ["--chdir", str(cwd), "--clearenv"]
    keep = {k: v for k, v in env.items()
            if k in KEEP or k.startswith(KEEP_PREFIX)}
    # Kbuild names the builder with whoami, which says "nobody" inside:
    # the name of the user kexpand runs as keeps the bytes of version.c
    if own_env:     # (a given environment, an instruction count's, stays as given)
        keep.setdefault("KBUILD_BUILD_USER", _user())
        # inside, the tree's files belong to the sandbox's uid, not to the
        # one git's index recorded: git (Kbuild's setlocalversion, at every
        # make) would read the whole tree again to compare, 3-5 s; the
        # mtime and size still tell a changed file
        keep["GIT_CONFIG_COUNT"] = str(len(GIT_CONFIG))
        for i, (k, v) in enumerate(GIT_CONFIG.items()):
            keep[f"GIT_CONFIG_KEY_{i}"], keep[f"GIT_CONFIG_VALUE_{i}"] = k, v
    for k, v in sorted(keep.items()):
        a += ["--setenv", k, v]
    a += ["--", "timeout", "-k", "10", str(int(seconds or LIMIT_S)),
          "prlimit", f"--data={int(data or LIMIT_DATA)}", "--", *map(str, argv)]
    return a


# never shown through PATH: the system's own places, and whole homes
NOT_ON_PATH = ("/", "/tmp", "/var", "/var/tmp", "/etc", "/proc", "/dev", "/sys", "/run",
               "/root", "/home")


def _path_dirs(env, tree):
    """The directories of PATH outside /usr, read-only (a cross toolchain
    in /opt, a user's bin dir): the programs, not their owner's home, and
    never a dir that holds the tree (the rest of the work dir)."""
    out = []
    for d in env.get("PATH", "").split(":"):
        p = Path(d)
        if p.is_absolute() and p.is_dir() and str(p) not in NOT_ON_PATH \
                and not p.is_relative_to("/usr") and not tree.is_relative_to(p) \
                and str(p) not in (f"/{t}" for t in TOP) and str(p) not in out:
            out.append(str(p))
    return [x for d in out for x in ("--ro-bind", d, d)]


def _system():
    """The namespaces, the uid and the read-only system of every sandbox."""
    a = [BWRAP, "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net",
         "--unshare-uts", "--unshare-cgroup-try", "--uid", str(UID), "--gid", str(UID),
         "--cap-drop", "ALL", "--new-session", "--die-with-parent",
         "--disable-userns", "--ro-bind", "/usr", "/usr", "--proc", "/proc",
         "--dev", "/dev", "--size", str(TMP_SIZE), "--tmpfs", "/dev/shm",
         "--size", str(TMP_SIZE), "--tmpfs", "/tmp", "--dir", "/var/tmp"]
    for t in TOP:
        p = Path("/") / t
        if p.is_symlink():
            a += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            a += ["--ro-bind", str(p), str(p)]
    for e in ETC:
        p = Path("/etc") / e
        if p.exists():
            a += ["--ro-bind", str(p), str(p)]
    return a


@functools.lru_cache(maxsize=None)
def _user():
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


@functools.lru_cache(maxsize=None)
def check():
    """Refuse before any work where the sandbox cannot start: bubblewrap
    missing, or no user namespaces. SANDBOX=0 skips it (README)."""
    if not enabled():
        return
    if os.environ.get(ENV_RW):
        log(f"warning: {ENV_RW}={os.environ[ENV_RW]}: every sandbox may write there too")
    try:
        p = subprocess.run(_system() + ["--", "/bin/true"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise KexpandError(
            "the sandbox cannot start: bubblewrap (bwrap) is not installed; "
            "install it (apt-get install bubblewrap; make bench and make check "
            "install it as root), or give SANDBOX=0, only for series you trust",
            "infra")
    except subprocess.TimeoutExpired:
        raise KexpandError("the sandbox did not start within 60 s (bwrap ... true); "
                           "give SANDBOX=0 only for series you trust", "infra")
    if p.returncode != 0:
        why = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no message"]
        raise KexpandError(
            f"the sandbox cannot start: bwrap says '{why[0]}'. It needs user "
            "namespaces (sysctl user.max_user_namespaces > 0, and on some "
            "kernels kernel.unprivileged_userns_clone=1 for a user other than "
            "root); or give SANDBOX=0, only for series you trust", "infra")
