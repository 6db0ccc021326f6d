"""Kernel configuration and builds, one O= directory per (commit, compiler);
the exact Kbuild command of each object is read by kcmd.

Build directories sit directly inside the source tree
(<tree>/kb-<commit12>-<compiler>): Kbuild then uses srctree=.., so every
path in the commands and in the preprocessor's line markers is relative,
and expansion bytes do not depend on where the work directory is."""
import collections
import hashlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import mtimes
from .util import KexpandError, atomic_write_json, kill_group, log, read_json, run, spawn

ARCH = "x86_64"
COMPILERS = {"gcc": [], "clang": ["LLVM=1"]}


def make_args(compiler):
    if compiler not in COMPILERS:
        raise KexpandError(f"unknown compiler '{compiler}'; use one of: "
                           f"{', '.join(COMPILERS)}")
    return [f"ARCH={ARCH}", *COMPILERS[compiler]]


def compiler_version(compiler):
    exe = "clang" if compiler == "clang" else "gcc"
    p = run([exe, "--version"], check=False)
    if p.returncode != 0:
        raise KexpandError(f"{exe} not found; install it with 'apt-get install "
                           f"{exe}'", "infra")
    return p.stdout.splitlines()[0].strip()


@dataclass(frozen=True)
class Config:
    """How a build directory is configured: a base target (tinyconfig,
    defconfig, allnoconfig) or a user's .config (kconfig), then the case's
    fragment, then olddefconfig. strict: every fragment option must
    survive (the packaged tree); otherwise a lost option is a warning."""
    fragment: Path
    base: str = "tinyconfig"
    kconfig: Path | None = None
    strict: bool = True

    def hash(self):
        """What decides the .config besides the compiler and the commit.
        (tinyconfig + fragment hashes as it always did, so caches stay.)"""
        base = f"kconfig {hashlib.sha256(Path(self.kconfig).read_bytes()).hexdigest()}" \
            if self.kconfig else self.base
        h = hashlib.sha256(f"{base} ARCH={ARCH}\n".encode())
        h.update(Path(self.fragment).read_bytes())
        return h.hexdigest()[:12]

    def describe(self):
        base = f"KCONFIG={self.kconfig}" if self.kconfig else self.base
        return f"x86_64 {base} + {Path(self.fragment).name}"


def build_dir(tree, commit, compiler):
    return Path(tree) / f"kb-{commit[:12]}-{compiler}"


def commit_of(bdir):
    """The (12-hex) commit a build_dir() name was made for."""
    return Path(bdir).name.split("-")[1]


def fragment_options(fragment):
    opts = {}
    for line in Path(fragment).read_text().splitlines():
        line = line.strip()
        m = re.match(r"(CONFIG_\w+)=(.*)", line)
        if m:
            opts[m.group(1)] = m.group(2)
        m = re.match(r"# (CONFIG_\w+) is not set", line)
        if m:
            opts[m.group(1)] = "n"
    return opts


def unknown_symbols(tree, names):
    """Which CONFIG_ names no Kconfig file of the tree defines."""
    p = run(["git", "-C", str(tree), "grep", "-h", "-E",
             r"^\s*(menu)?config\s+\w+", "--", "*Kconfig*"], check=False)
    known = {"CONFIG_" + l.split()[1] for l in p.stdout.splitlines()
             if len(l.split()) > 1}
    return [n for n in names if known and n not in known]


def retarget(src, dst):
    """After copying build dir src to dst: Kbuild names the build dir
    relatively, but objtool's build (tools/) and external modules record
    it as an absolute path. Left naming src, their commands look changed,
    objtool is rebuilt, and its new binary puts every object out of date
    (a full rebuild: measured, 1,204 steps on 6.12). Build dir names have
    one length (kb-<12 hex>-<cc>), so the text is rewritten in place;
    mtimes are kept, which is what make compares."""
    old, new = str(Path(src).resolve()), str(Path(dst).resolve())
    hits = run(["grep", "-rlIF", "--", old, str(dst)], check=False).stdout
    for f in hits.splitlines():
        path = Path(f)
        st = path.stat()
        path.write_bytes(path.read_bytes().replace(old.encode(), new.encode()))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def seed_build_dir(tree, bdir, compiler, want, full=False):
    """Start a new build dir as a copy of the newest build dir of the same
    compiler and config in this tree, so Kbuild rebuilds only what differs
    between the two commits (a checkout rewrites exactly the files that
    differ, so they are newer than the copied objects, and Kbuild's
    dependency files take it from there; mtimes.mark_changed makes sure of
    the first part). Expansion bytes do not depend on it; build times do,
    so a seeded dir never reports a clean build.
    full: a whole kernel is about to be built: an existing dir without one
    is replaced by a copy of a dir that has one (its objects are as good a
    start as the copy's, by the same argument). Returns the source dir's
    name, or None."""
    if bdir.exists() and (not full or (bdir / "vmlinux").exists()):
        return None
    same = [d for d in Path(tree).glob(f"kb-*-{compiler}")
            if d != bdir and (d / ".kexpand-config").is_file()
            and (d / ".kexpand-config").read_text().strip() == want
            and (d / "include/generated/autoconf.h").is_file()
            and (not full or (d / "vmlinux").is_file())]
    if not same:
        return None
    src = max(same, key=lambda d: (d / ".kexpand-config").stat().st_mtime)
    kept = mtimes.kept(tree)
    if kept and not mtimes.known(tree, commit_of(src)):
        return None                 # which files differ is unknowable
    if bdir.exists():
        shutil.rmtree(bdir)
    run(["cp", "-a", "--reflink=auto", str(src), str(bdir)],
        what=f"copying build dir {src.name}")
    retarget(src, bdir)
    # the files that differ must look newer than the copied objects, which
    # a time kept from an earlier checkout (kbuild.mtimes) would not
    if kept:
        mtimes.mark_changed(tree, commit_of(src), commit_of(bdir))
    (bdir / ".kexpand-seeded-from").write_text(src.name + "\n")
    (bdir / ".kexpand-config").touch()       # the next dir seeds from this one
    log(f"{bdir.name}: starts from a copy of {src.name} (same config and compiler)")
    return src.name


def configure(tree, bdir, compiler, config, seed=False, full=False):
    """base config (or the user's .config) + fragment + olddefconfig;
    checks every fragment option took effect. Skipped when the build dir
    already has this config. seed: a new build dir may start as a copy of
    another (seed_build_dir). A new config forgets engine.BUILT's list."""
    stamp = bdir / ".kexpand-config"
    want = config.hash()
    if seed:
        seed_build_dir(tree, bdir, compiler, want, full)
    if stamp.exists() and stamp.read_text().strip() == want and \
            (bdir / ".config").exists():
        return
    bdir.mkdir(parents=True, exist_ok=True)
    margs = make_args(compiler)
    if config.kconfig:
        (bdir / ".config").write_bytes(Path(config.kconfig).read_bytes())
    else:
        run(["make", "-s", "-C", str(tree), f"O={bdir.name}", *margs,
             config.base], what=f"make {config.base}", klass="build")
    run([str(tree / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(bdir),
         str(bdir / ".config"), str(config.fragment)], what="merge_config.sh",
        klass="build")
    run(["make", "-s", "-C", str(tree), f"O={bdir.name}", *margs,
         "olddefconfig"], what="make olddefconfig", klass="build")
    have = {}
    for line in (bdir / ".config").read_text().splitlines():
        m = re.match(r"(CONFIG_\w+)=(.*)", line)
        if m:
            have[m.group(1)] = m.group(2)
    want_opts = fragment_options(config.fragment)
    lost = [k for k, v in want_opts.items() if have.get(k, "n") != v]
    if lost:
        unknown = unknown_symbols(tree, lost)
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
    (bdir / ".kexpand-built").unlink(missing_ok=True)
    stamp.write_text(want + "\n")


@dataclass
class BuildResult:
    ok: bool
    seconds: float
    log_tail: str
    failed: list          # targets that did not build
    steps: int = 0        # Kbuild steps (CC, LD, AR, ...) it printed
    from_clean: bool = False
    info: dict = field(default_factory=dict)


# Build failures the machine causes: a full disk, the OOM killer, a
# missing tool. They are environment failures (exit 5, not cached).
MACHINE_FAILURE = re.compile(r"No space left on device|Killed signal terminated|"
                             r"virtual memory exhausted|Cannot allocate memory|"
                             r"command not found|: not found$", re.M)
STEP = re.compile(r"^  [A-Z][A-Z0-9_]*(?: \[[A-Z]\])?\s+\S")


class BuildProgress:
    """Counts Kbuild's quiet-mode steps and says, at most every `every`
    seconds, how far a long build is, against the step count the same
    (config, compiler, targets) took last time."""

    def __init__(self, counts_file, key, label, every=30.0):
        self.file, self.key, self.label, self.every = counts_file, key, label, every
        known = read_json(counts_file) if counts_file.exists() else None
        self.expected = (known or {}).get(key)
        self.steps, self.t0, self.last = 0, time.monotonic(), time.monotonic()

    def line(self, text):
        if STEP.match(text):
            self.steps += 1
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            el = now - self.t0
            msg = f"  {self.label}: {self.steps} steps"
            if self.expected:
                frac = min(self.steps / self.expected, 0.99)
                msg += f" of ~{self.expected} ({frac:.0%})"
                if frac > 0.05:
                    msg += f", ~{el / frac - el:.0f}s left"
            log(f"{msg}, {el:.0f}s elapsed")

    def done(self, ok):
        # a build with (nearly) nothing to do would teach the next real one
        # to expect a handful of steps
        if ok and self.steps > (self.expected or 0) / 10:
            known = (read_json(self.file) if self.file.exists() else None) or {}
            known[self.key] = self.steps
            atomic_write_json(self.file, known)


def build(tree, bdir, compiler, targets, jobs, keep_going=True):
    """make the given targets (objects like mm/compaction.o, or bzImage),
    streaming Kbuild's output into a progress line every 30 s."""
    cmd = ["make", "-C", str(tree), f"O={bdir.name}", *make_args(compiler),
           f"-j{jobs}", *(["-k"] if keep_going else []), *targets]
    from_clean = not any(bdir.glob("*/*.o")) and not (bdir / "vmlinux").exists() \
        and not (bdir / ".kexpand-seeded-from").exists()
    stamp = bdir / ".kexpand-config"
    key = f"{stamp.read_text().strip() if stamp.exists() else '-'} {compiler} " \
          f"{' '.join(targets)}"
    prog = BuildProgress(Path(tree).parent / "build-steps.json", key,
                         f"building {' '.join(targets[:3])}"
                         f"{' ...' if len(targets) > 3 else ''} in {bdir.name}")
    log(f"building {' '.join(targets)} in {bdir.name}"
        + (f" (~{prog.expected} steps last time)" if prog.expected else ""))
    t0 = time.monotonic()
    tail = collections.deque(maxlen=30)
    proc = spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                 stderr=subprocess.STDOUT, text=True, errors="replace")
    try:
        for text in proc.stdout:
            tail.append(text.rstrip("\n"))
            prog.line(text)
        proc.wait()
    except BaseException:
        kill_group(proc)
        raise
    secs = time.monotonic() - t0
    failed = [t for t in targets if t.endswith(".o") and
              not (bdir / t).exists()]
    if proc.returncode != 0 and not failed:
        failed = [t for t in targets if not t.endswith(".o")]
    prog.done(proc.returncode == 0)
    text = "\n".join(tail)
    if proc.returncode != 0 and MACHINE_FAILURE.search(text):
        # not the code under test: report, never cache as the point's verdict
        raise KexpandError(f"building {' '.join(targets)} in {bdir} failed "
                           f"because of the machine, not the code:\n{text}", "infra")
    return BuildResult(proc.returncode == 0, secs, text, failed,
                       prog.steps, from_clean)


def build_kernel(tree, bdir, compiler, jobs):
    """The whole kernel: bzImage, and for gcc what external modules need
    (modules_prepare). Used by the boot check and the scan alike; `info`
    says how long it took and whether it started from a clean build dir."""
    targets = ["bzImage", "modules_prepare"] if compiler == "gcc" else ["bzImage"]
    b = build(tree, bdir, compiler, targets, jobs, keep_going=False)
    b.info = {"full_build_s": round(b.seconds, 1), "from_clean": b.from_clean,
              "jobs": jobs, "ok": b.ok, "steps": b.steps}
    return b
