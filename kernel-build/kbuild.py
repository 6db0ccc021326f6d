"""Kernel configuration and builds, one O= directory per (commit, compiler),
and the exact Kbuild command of each object (from its .cmd file).

Build directories sit directly inside the source tree
(<tree>/kb-<commit12>-<compiler>): Kbuild then uses srctree=.., so every
path in the commands and in the preprocessor's line markers is relative,
and expansion bytes do not depend on where the work directory is."""
import hashlib
import os
import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from kxutil import KexpandError, jobs, run, log

ARCH = "x86_64"
# On the packaged tree every fragment option must survive olddefconfig; on a
# user's tree of another version (KERNEL=) a lost option is only a warning.
STRICT_CONFIG = True
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


def config_hash(fragment):
    """What decides the .config besides the compiler: base + fragment."""
    h = hashlib.sha256(f"tinyconfig ARCH={ARCH}\n".encode())
    h.update(Path(fragment).read_bytes())
    return h.hexdigest()[:12]


def build_dir(tree, commit, compiler):
    return Path(tree) / f"kb-{commit[:12]}-{compiler}"


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


def configure(tree, bdir, compiler, fragment):
    """tinyconfig + fragment + olddefconfig; checks every fragment option
    took effect. Skipped when the build dir already has this config."""
    stamp = bdir / ".kexpand-config"
    want = config_hash(fragment)
    if stamp.exists() and stamp.read_text().strip() == want and \
            (bdir / ".config").exists():
        return
    bdir.mkdir(parents=True, exist_ok=True)
    margs = make_args(compiler)
    run(["make", "-s", "-C", str(tree), f"O={bdir.name}", *margs,
         "tinyconfig"], what="make tinyconfig", klass="build")
    run([str(tree / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(bdir),
         str(bdir / ".config"), str(fragment)], what="merge_config.sh",
        klass="build")
    run(["make", "-s", "-C", str(tree), f"O={bdir.name}", *margs,
         "olddefconfig"], what="make olddefconfig", klass="build")
    have = {}
    for line in (bdir / ".config").read_text().splitlines():
        m = re.match(r"(CONFIG_\w+)=(.*)", line)
        if m:
            have[m.group(1)] = m.group(2)
    lost = [f"{k}={v}" for k, v in fragment_options(fragment).items()
            if have.get(k, "n") != v]
    if lost and not STRICT_CONFIG:
        log(f"warning: config fragment options not available in this tree: "
            f"{', '.join(lost)}")
    elif lost:
        raise KexpandError(f"config fragment {fragment}: options lost after "
                           f"olddefconfig (unmet dependencies?): {', '.join(lost)}")
    stamp.write_text(want + "\n")


@dataclass
class BuildResult:
    ok: bool
    seconds: float
    log_tail: str
    failed: list          # objects that did not build


def build(tree, bdir, compiler, targets, keep_going=True):
    """make the given targets (objects like mm/compaction.o, or bzImage)."""
    cmd = ["make", "-C", str(tree), f"O={bdir.name}", *make_args(compiler),
           f"-j{jobs()}", *(["-k"] if keep_going else []), *targets]
    log(f"building {' '.join(targets)} in {bdir.name}")
    t0 = time.monotonic()
    p = run(cmd, check=False)
    secs = time.monotonic() - t0
    tail = "\n".join(p.stdout.splitlines()[-30:])
    failed = [t for t in targets if t.endswith(".o") and
              not (bdir / t).exists()]
    if p.returncode != 0 and not failed:
        failed = [t for t in targets if not t.endswith(".o")]
    return BuildResult(p.returncode == 0, secs, tail, failed)


def obj_of(src):
    if not src.endswith(".c"):
        raise KexpandError(f"focus file {src} is not a .c file")
    return src[:-2] + ".o"


def compile_command(bdir, src):
    """The exact compile command Kbuild ran for `src`, as an argv list,
    from <bdir>/<dir>/.<name>.o.cmd (objtool and other post-steps that
    Kbuild chains with ';' are dropped)."""
    obj = obj_of(src)
    cmdfile = bdir / Path(obj).parent / f".{Path(obj).name}.cmd"
    if not cmdfile.exists():
        raise KexpandError(f"{cmdfile} missing: {src} was not compiled by this "
                           "config (is it in the build?)", "build")
    text = cmdfile.read_text()
    m = re.search(r"^cmd_\S+ := (.*)$", text, re.M)
    if not m:
        raise KexpandError(f"{cmdfile}: no cmd_ line", "build")
    argv = []
    for tok in shlex.split(m.group(1)):
        if tok == ";":
            break
        argv.append(tok)
    return argv


def _strip_output(argv):
    """argv without the dependency-file option, -c/-E/-S and -o X;
    returns (flags, source)."""
    out, skip = [], False
    for tok in argv:
        if skip:
            skip = False
            continue
        if tok.startswith("-Wp,-MMD") or tok.startswith("-Wp,-MD"):
            continue
        if tok in ("-c", "-E", "-S"):
            continue
        if tok == "-o":
            skip = True
            continue
        out.append(tok)
    return out[:-1], out[-1]


def preprocess_command(argv, output="-"):
    """The compile command as preprocess-only, to stdout by default."""
    flags, src = _strip_output(argv)
    return flags + ["-E", "-o", output, src]


def object_command(argv, obj):
    """The compile command writing a scratch object (for timing -c)."""
    flags, src = _strip_output(argv)
    return flags + ["-c", "-o", obj, src]
