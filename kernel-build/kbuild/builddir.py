"""The one owner of a build directory's state. A build dir
(<tree>/kb-<commit12>-<compiler>, build.build_dir) is only ever built at
its one commit; what kexpand knows about it lives in three small files
that only this module reads or writes:

  .kexpand-config        the config hash it was configured with (build.Config)
  .kexpand-built         what was built in it at that config: the dir's own
                         name and hash on the first line (a copy does not
                         inherit the list), then objects, or "*" for a whole
                         kernel (every object with a .cmd file)
  .kexpand-seeded-from   the build dir it started as a copy of
  .kexpand-kernel.json   how the whole kernel in it was built (build info)
  .kexpand-at            a scan dir's commit at its last make (it may be
                         walked through other commits: kbuildscan)

`configure` (base + fragment + olddefconfig), `seed` (start from a copy of
another dir of the same config and compiler), `built`/`note_built` (is
measuring again free of building) and `ensure_kernel` (a whole kernel at
this config, built once: the boot check and local and remote scans all
use it)."""
import os
import re
import shutil
import stat
from pathlib import Path

from . import build, mtimes, sandbox
from .kcmd import cmd_file, obj_of
from .proc import run
from .util import KexpandError, atomic_write, atomic_write_json, log, read_json

CONFIG = ".kexpand-config"
BUILT = ".kexpand-built"
SEEDED = ".kexpand-seeded-from"
KERNEL = ".kexpand-kernel.json"
AT = ".kexpand-at"


def config_hash(bdir):
    """The config hash bdir was configured with, or None."""
    p = Path(bdir) / CONFIG
    try:
        return p.read_text().strip() or None
    except OSError:
        return None


def made_at(bdir):
    """The commit a scan dir's last make ran at, or None (none, or one
    that stopped half way: unmade_at)."""
    p = Path(bdir) / AT
    return p.read_text().strip() or None if p.is_file() else None


def unmade_at(bdir):
    (Path(bdir) / AT).unlink(missing_ok=True)


def note_made_at(bdir, commit):
    atomic_write(Path(bdir) / AT, commit + "\n")


def seeded_from(bdir):
    """The name of the dir bdir was copied from, or None."""
    p = Path(bdir) / SEEDED
    return p.read_text().strip() if p.is_file() else None


def _owner(bdir, chash):
    """The list's first line: the dir (so a seeded copy, another commit's
    dir, does not take its source's list) and the config it was made with."""
    return f"for={Path(bdir).name}:{chash}"


def _list(bdir):
    done = Path(bdir) / BUILT
    return set(done.read_text().split()) if done.is_file() else set()


def built(bdir, chash, files):
    """Every file's object was built in bdir, at its commit, with this
    config (or the whole kernel was: "*"): measuring them again (a new
    kind, a new analyzer) needs no build. Building again would not be
    free: checkouts of other commits leave newer files behind, so make
    would recompile objects that are already this commit's."""
    if config_hash(bdir) != chash:
        return False
    have = _list(bdir)
    return _owner(bdir, chash) in have and all(
        (obj_of(f) in have or "*" in have) and cmd_file(bdir, f).exists()
        for f in files)


def has_kernel(bdir, chash):
    """A whole kernel was built in bdir at this config."""
    return config_hash(bdir) == chash and "*" in _list(bdir) and \
        _owner(bdir, chash) in _list(bdir)


def note_built(bdir, targets, failed=()):
    """Add the targets just built (but not those that failed) to the list;
    a list of another dir or config starts again. Nothing to note where
    the dir was never configured (its config step failed)."""
    chash = config_hash(bdir)
    if chash is None:
        return
    have, owner = _list(bdir), _owner(bdir, chash)
    if owner not in have:
        have = {owner}
    have |= {t for t in targets if t not in failed}
    atomic_write(Path(bdir) / BUILT, "".join(f"{t}\n" for t in sorted(have)))


def note_full_build(bdir, info=None):
    """The whole kernel was built in bdir at its commit: every object with
    a command file is this commit's. `info`: how (kept for reports)."""
    if info is not None:
        atomic_write_json(Path(bdir) / KERNEL, info)
    note_built(bdir, ["*"])


def retarget(src, dst):
    """After copying build dir src to dst: Kbuild names the build dir
    relatively, but objtool's build (tools/) and external modules record
    it as an absolute path. Left naming src, their commands look changed,
    objtool is rebuilt, and its new binary puts every object out of date
    (a full rebuild: measured, 1,204 steps on 6.12). Build dir names have
    one length (kb-<12 hex>-<cc>), so the text is rewritten in place;
    mtimes are kept, which is what make compares."""
    old, new = str(Path(src).resolve()), str(Path(dst).resolve())
    hits = run(["grep", "-rlIFZ", "--", old, str(dst)], check=False).stdout
    # (names end with NUL: a build can make a dir named "x\n/etc/..."; and
    # only regular files inside dst, never through a link a build planted)
    for f in filter(None, hits.split("\0")):
        path = Path(f)
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or \
                not path.parent.resolve().is_relative_to(Path(new)):
            continue
        atomic_write(path, path.read_bytes().replace(old.encode(), new.encode()))
        os.chmod(path, st.st_mode & 0o7777)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def seed(tree, bdir, compiler, want, full=False, move_from=None):
    """Start a new build dir as a copy of the newest build dir of the same
    compiler and config in this tree, so Kbuild rebuilds only what differs
    between the two commits (a checkout rewrites exactly the files that
    differ, so they are newer than the copied objects, and Kbuild's
    dependency files take it from there; mtimes.mark_changed makes sure of
    the first part). Expansion bytes do not depend on it; build times do,
    so a seeded dir never reports a clean build.
    full: a whole kernel is about to be built: an existing dir without one
    is replaced by a copy of a dir that has one (its objects are as good a
    start as the copy's, by the same argument).
    move_from: a dir of the same config to take over instead (renamed, not
    copied: make track rolls one dir through a history). Returns the
    source dir's name, or None."""
    if bdir.exists() and (not full or (bdir / "vmlinux").exists()):
        return None
    if move_from is not None and Path(move_from).is_dir() and \
            config_hash(move_from) == want and Path(move_from) != bdir:
        return _take_over(tree, Path(move_from), bdir)
    same = [d for d in Path(tree).glob(f"{bdir.name[:3]}*-{compiler}")
            if d != bdir and config_hash(d) == want
            and (d / "include/generated/autoconf.h").is_file()
            and (not full or (d / "vmlinux").is_file())]
    if not same:
        return None
    src = nearest(tree, bdir, same)
    kept = mtimes.kept(tree)
    if kept and not mtimes.known(tree, build.commit_of(src)):
        return None                 # which files differ is unknowable
    if bdir.exists():
        shutil.rmtree(bdir)
    run(["cp", "-a", "--reflink=auto", str(src), str(bdir)],
        what=f"copying build dir {src.name}")
    retarget(src, bdir)
    # the files that differ must look newer than the copied objects, which
    # a time kept from an earlier checkout (kbuild.mtimes) would not
    if kept:
        mtimes.mark_changed(tree, build.commit_of(src), build.commit_of(bdir))
    atomic_write(bdir / SEEDED, src.name + "\n")
    (bdir / CONFIG).touch()       # the next dir seeds from this one
    log(f"{bdir.name}: starts from a copy of {src.name} (same config and compiler)")
    return src.name


def nearest(tree, bdir, dirs):
    """Of build dirs `dirs`, the one whose commit differs from bdir's in
    the fewest files (the least to rebuild; a dir of another commit with
    the same tree rebuilds nothing), the newest of those."""
    def cost(d):
        n = mtimes.count_changed(tree, build.commit_of(d), build.commit_of(bdir))
        return (n if n is not None else 1 << 30, -(d / CONFIG).stat().st_mtime)
    return min(dirs, key=cost)


def _take_over(tree, src, bdir):
    """Rename build dir src (another commit's) to bdir, with the same care
    as a copy: paths retargeted, the files that differ marked new."""
    if mtimes.kept(tree) and not mtimes.known(tree, build.commit_of(src)):
        return None
    if bdir.exists():
        shutil.rmtree(bdir)
    src.rename(bdir)
    retarget(src, bdir)
    if mtimes.kept(tree):
        mtimes.mark_changed(tree, build.commit_of(src), build.commit_of(bdir))
    atomic_write(bdir / SEEDED, src.name + " (taken over)\n")
    (bdir / BUILT).unlink(missing_ok=True)
    (bdir / KERNEL).unlink(missing_ok=True)
    log(f"{bdir.name}: takes over {src.name}'s build dir (same config and compiler)")
    return src.name


def _options(path):
    have = {}
    for line in Path(path).read_text().splitlines():
        m = re.match(r"(CONFIG_\w+)=(.*)", line)
        if m:
            have[m.group(1)] = m.group(2)
    return have


# what a config is made from besides the Config: Kconfig files, the
# config fragments of make tinyconfig and the like, the kconfig tool
CONFIG_INPUT = re.compile(r"(^|/)Kconfig[^/]*$|\.config$|^scripts/kconfig/")


def config_inputs_differ(tree, a, b):
    """Commits a and b may give one Config two .config files."""
    files = mtimes.changed(tree, a, b)
    return files is None or any(CONFIG_INPUT.search(f) for f in files)


def configure(tree, bdir, compiler, config, seed_from_others=False, full=False,
              move_from=None):
    """base config (or the user's .config) + fragment + olddefconfig;
    checks every fragment option took effect. Skipped when the build dir
    already has this config. seed_from_others: a new build dir may start
    as a copy of another (seed). A new config forgets what was built."""
    want = config.hash()
    if seed_from_others:
        src = seed(tree, bdir, compiler, want, full, move_from)
        if src and config_inputs_differ(tree, build.commit_of(src.split()[0]),
                                        build.commit_of(bdir)):
            # the copy's .config was made at another commit's Kconfig: made
            # again here, so that a dir's config depends on its commit and
            # Config only (Kbuild redoes what the new one changes)
            (bdir / CONFIG).unlink(missing_ok=True)
    if config_hash(bdir) == want and (bdir / ".config").exists():
        return
    bdir.mkdir(parents=True, exist_ok=True)
    (bdir / CONFIG).unlink(missing_ok=True)   # half-configured: not this config
    if config.kconfig:
        atomic_write(bdir / ".config", Path(config.kconfig).read_bytes())
    else:
        run(sandbox.wrap(build.make(tree, bdir, compiler, "-s", config.base), bdir),
            what=f"make {config.base}", klass="build")
    run(sandbox.wrap([str(tree / "scripts/kconfig/merge_config.sh"), "-m", "-O",
                      str(bdir), str(bdir / ".config"), str(config.fragment)], bdir,
                     ro=[config.fragment]),
        what="merge_config.sh", klass="build")
    run(sandbox.wrap(build.make(tree, bdir, compiler, "-s", "olddefconfig"), bdir),
        what="make olddefconfig", klass="build")
    have = _options(bdir / ".config")
    want_opts = build.fragment_options(config.fragment)
    lost = [k for k, v in want_opts.items() if have.get(k, "n") != v]
    if lost:
        unknown = build.unknown_symbols(tree, lost)
        parts = []
        if unknown:
            parts.append(f"unknown to this tree (no Kconfig defines them): "
                         f"{', '.join(unknown)}")
        rest = [f"{k}={want_opts[k]}" for k in lost if k not in unknown]
        if rest:
            parts.append(f"lost after olddefconfig (unmet dependencies?): "
                         f"{', '.join(rest)}")
        msg = f"config fragment {config.fragment}: " + "; ".join(parts)
        if config.strict:
            raise KexpandError(msg)
        log(f"warning: {msg}; measuring without them")
    (bdir / BUILT).unlink(missing_ok=True)
    atomic_write(bdir / CONFIG, want + "\n")


def build_objects(tree, bdir, compiler, config, targets, jobs, move_from=None):
    """Configure (seeding a new dir) and build `targets`; a config that
    fails is a build failure of every target (the code under test). The
    targets that built are noted."""
    try:
        configure(tree, bdir, compiler, config, seed_from_others=True, move_from=move_from)
    except KexpandError as e:
        if e.klass != "build":
            raise
        log(f"{bdir.name}: {e}")
        return build.BuildResult(False, 0.0, str(e), list(targets))
    b = build.build(tree, bdir, compiler, targets, jobs,
                    seeded=seeded_from(bdir) is not None, config_hash=config_hash(bdir))
    note_built(bdir, targets, b.failed)
    return b


def ensure_kernel(tree, bdir, compiler, config, jobs, seed_from_others=True):
    """A whole kernel (build.build_kernel) in bdir at this config, built
    only when it was not: the boot check, the local scan and a Dask
    worker's scan all come through here. Returns the BuildResult (with
    `info`; seconds 0 and `info["cached"]` when nothing was built). A
    config that fails is a failed build."""
    want = config.hash()
    if has_kernel(bdir, want) and (bdir / "vmlinux").is_file():
        b = build.BuildResult(True, 0.0, "", [])
        old = read_json(bdir / KERNEL) if (bdir / KERNEL).is_file() else None
        b.info = dict(old if isinstance(old, dict) else
                      {"full_build_s": None, "from_clean": False, "jobs": jobs,
                       "ok": True, "steps": 0}, cached=True)
        return b
    try:
        configure(tree, bdir, compiler, config, seed_from_others, full=True)
    except KexpandError as e:
        if e.klass != "build":
            raise
        b = build.BuildResult(False, 0.0, str(e), ["bzImage"])
        b.info = {"full_build_s": 0.0, "from_clean": False, "jobs": jobs,
                  "ok": False, "steps": 0}
        return b
    b = build.build_kernel(tree, bdir, compiler, jobs,
                           seeded=seeded_from(bdir) is not None, config_hash=want)
    b.info["from"] = seeded_from(bdir) or ("clean" if b.from_clean else "incremental")
    if b.ok:
        note_full_build(bdir, b.info)
    return b
