"""Kernel configuration and builds, one O= directory per (commit, compiler);
the exact Kbuild command of each object is read by kcmd.

Build directories sit directly inside the source tree
(<tree>/kb-<commit12>-<compiler>): Kbuild then uses srctree=.., so every
path in the commands and in the preprocessor's line markers is relative,
and expansion bytes do not depend on where the work directory is."""
import collections
import functools
import hashlib
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import kcmd, sandbox
from .proc import LIMITS, kill_group, run, spawn
from .util import REPO, KexpandError, atomic_write_json, log, read_json

ARCH = "x86_64"
COMPILERS = {"gcc": [], "clang": ["LLVM=1"]}
# a scan dir (<tree>/ks-<commit12>-<compiler>, scan_dir) is where Kbuild
# drives a scan: every make in it compiles through kexpand's wrapper
SCAN_PREFIX = "ks-"
KX_CC = REPO / "bench" / "tools" / "kx-cc"
KX_ANALYZE = REPO / "bench" / "tools" / "kx-analyze"
SCAN_TOP = 5            # hot lines kept per file (scanfiles.HOT_LINES)
# objects a later step of the build reads (kx-cc compiles them for real):
# the vDSO, whose image becomes a generated C file; real-mode and
# purgatory code; the boot code; the host side of scripts/
SCAN_REAL = ("arch/x86/entry/vdso/", "arch/x86/realmode/", "arch/x86/purgatory/",
             "arch/x86/boot/", "scripts/")


def make_args(compiler, bdir=None):
    """ARCH= and the compiler's variables; in a scan dir, CC= names the
    wrapper (kx-cc) in front of the compiler, for the config steps too:
    Kconfig records $(CC), and a new one would configure the dir again."""
    if compiler not in COMPILERS:
        raise KexpandError(f"unknown compiler '{compiler}'; use one of: "
                           f"{', '.join(COMPILERS)}")
    args = [f"ARCH={ARCH}", *COMPILERS[compiler], *gnu_nm(compiler)]
    if bdir is not None and is_scan_dir(bdir):
        args += scan_args(compiler)
    return args


@functools.cache
def gnu_nm(compiler):
    """For gcc builds, NM= with binutils' LTO plugin named: without it, nm
    loads every plugin in /usr/lib/bfd-plugins, and LLVM's (Debian's
    llvm-14-linker-tools, which clang's packages bring) costs about 0.1 s
    a call here. Kbuild runs nm once per object (check-local-export): 67
    of a tinyconfig scan's 550 CPU seconds. The symbols are the same (the
    kernel's objects are not LTO objects for gcc). clang builds (LLVM=1)
    use llvm-nm."""
    if compiler != "gcc":
        return ()
    p = run(["gcc", "-print-file-name=liblto_plugin.so"], check=False)
    path = p.stdout.strip() if p.returncode == 0 else ""
    ok = path.startswith("/") and " " not in path and Path(path).is_file()
    return (f"NM=nm --plugin {path}",) if ok else ()


# Kbuild's steps after an object's compile that only read the object:
# objtool (and the dependency on it that it records), check-local-export
# (nm and awk, 6.1 to 6.4). A scan's object is empty: these checked
# nothing and cost about 8% of a scan's CPU. A tree without them ignores
# the variables.
SCAN_SKIP = ("cmd_objtool=", "cmd_gen_objtooldep=", "cmd_check_local_export=")


def scan_args(compiler):
    """A scan dir's make variables: kx-cc in front of the compiler and the
    host compiler (host programs' C files are in a full build's scan too),
    kx-cc's settings (make gives command-line variables to every
    command's environment), and no steps that read an empty object
    (SCAN_SKIP). Kbuild's generators run with Debian's python."""
    cc = "clang" if compiler == "clang" else "gcc"
    return [f"CC={KX_CC.name} {cc}", f"HOSTCC={KX_CC.name} --host {cc}", *SCAN_SKIP,
            "PYTHON3=/usr/bin/python3", f"KX_SCAN_ANALYZE={KX_ANALYZE}",
            f"KX_SCAN_TOP={SCAN_TOP}", f"KX_SCAN_REAL={':'.join(SCAN_REAL)}",
            f"KX_SCAN_TIME={LIMITS['time_s']}", f"KX_SCAN_MEM={LIMITS['mem_mb']}"]


def scan_e_flags(argv):
    """What a scan's -E adds to compile command `argv` (kx-cc decides, with
    track_off() in kx-ccargs.h), so that another -E of the file gives the
    scan's bytes."""
    if not KX_CC.exists():
        raise KexpandError(f"{KX_CC} missing: run 'make -C {REPO} all'",
                           "infra")
    p = run([str(KX_CC), "--e-flags", *argv], check=False)
    flags = p.stdout.split()
    if p.returncode != 0 or not all(f.startswith("-f") for f in flags):
        raise KexpandError(f"{KX_CC} --e-flags failed (exit {p.returncode}): "
                           f"{p.stdout.strip()[-300:]}; an older build of it? run "
                           f"'make -C {REPO} all'", "infra")
    return flags


def scan_preprocess_command(argv, output="-"):
    """The -E a scan runs for compile command `argv`: Kbuild's, with what
    kx-cc adds (scan_e_flags), to stdout by default."""
    flags, src = kcmd.strip_output(argv)
    return flags + scan_e_flags(argv) + ["-E", "-o", output, src]


def make(tree, bdir, compiler, *args):
    """The make command of build or scan dir `bdir`. In a scan dir it runs
    with kexpand's tools first on PATH: Kbuild's commands (and Kconfig's
    record of $(CC)) name the wrapper `kx-cc`, not where this kexpand is,
    so that a scan dir made by one clone of kexpand is as good for
    another (an absolute path made Kbuild measure every file again)."""
    cmd = ["make", "-C", str(tree), f"O={Path(bdir).name}", *make_args(compiler, bdir),
           *args]
    if is_scan_dir(bdir):
        cmd = ["env", f"PATH={KX_CC.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
               *cmd]
    return cmd


def is_scan_dir(bdir):
    return Path(bdir).name.startswith(SCAN_PREFIX)


def compiler_version(compiler):
    exe = "clang" if compiler == "clang" else "gcc"
    p = run([exe, "--version"], check=False)
    if p.returncode != 0:
        raise KexpandError(f"{exe} not found; install it with 'apt-get install "
                           f"{exe}'", "infra")
    return p.stdout.splitlines()[0].strip()



CONFIG_ID_HEX = 12


def config_id(data):
    """The one identity of a config, 12 hex digits of sha256: of what
    decides a .config (Config.hash), of a KCONFIG= file (report names,
    identity, Dask workers)."""
    return hashlib.sha256(data).hexdigest()[:CONFIG_ID_HEX]

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
        """What decides the .config besides the compiler and the commit
        (config_id). (tinyconfig + fragment hashes as it always did, so
        caches stay.)"""
        base = f"kconfig {hashlib.sha256(Path(self.kconfig).read_bytes()).hexdigest()}" \
            if self.kconfig else self.base
        return config_id(f"{base} ARCH={ARCH}\n".encode() + Path(self.fragment).read_bytes())

    def describe(self):
        base = f"KCONFIG={self.kconfig}" if self.kconfig else self.base
        return f"x86_64 {base} + {Path(self.fragment).name}"


def build_dir(tree, commit, compiler):
    return Path(tree) / f"kb-{commit[:12]}-{compiler}"


def scan_dir(tree, commit, compiler):
    """Where Kbuild measures `commit` (bench/measure/kbuildscan.py): a
    name as long as build_dir's, so line markers that name the working
    directory (-g) have the same length in both."""
    return Path(tree) / f"{SCAN_PREFIX}{commit[:12]}-{compiler}"


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


def build(tree, bdir, compiler, targets, jobs, keep_going=True, seeded=False,
          config_hash=None, variables=()):
    """make the given targets (objects like mm/compaction.o, or bzImage),
    streaming Kbuild's output into a progress line every 30 s. seeded: the
    dir started as a copy of another (never a clean build); config_hash
    keys the step counts of the progress line."""
    cmd = make(tree, bdir, compiler, f"-j{jobs}", *(["-k"] if keep_going else []),
               *targets, *variables)
    from_clean = not any(bdir.glob("*/*.o")) and not (bdir / "vmlinux").exists() \
        and not seeded
    key = f"{config_hash or '-'} {compiler} {' '.join(targets)}"
    prog = BuildProgress(Path(tree).parent / "build-steps.json", key,
                         f"building {' '.join(targets[:3])}"
                         f"{' ...' if len(targets) > 3 else ''} in {bdir.name}")
    log(f"building {' '.join(targets)} in {bdir.name}"
        + (f" (~{prog.expected} steps last time)" if prog.expected else ""))
    t0 = time.monotonic()
    tail = collections.deque(maxlen=30)
    proc = spawn(sandbox.wrap(cmd, bdir), stdin=subprocess.DEVNULL,
                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                 errors="replace")
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


def build_kernel(tree, bdir, compiler, jobs, seeded=False, config_hash=None):
    """The whole kernel: bzImage, and for gcc what external modules need
    (modules_prepare). builddir.ensure_kernel calls it (the boot check and
    the scans); `info` says how long it took and whether it started from a
    clean build dir."""
    targets = ["bzImage", "modules_prepare"] if compiler == "gcc" else ["bzImage"]
    b = build(tree, bdir, compiler, targets, jobs, keep_going=False, seeded=seeded,
              config_hash=config_hash)
    b.info = {"full_build_s": round(b.seconds, 1), "from_clean": b.from_clean,
              "jobs": jobs, "ok": b.ok, "steps": b.steps}
    return b


def case_config(req, case):
    """The Config of a request: the case's fragment on the base the user
    chose (CONFIG=, default tinyconfig, or KCONFIG=), strict on the
    packaged tree, lenient on a user's tree."""
    return Config(case.config, base=req.config_base, kconfig=req.kconfig,
                  strict=req.strict_config)
