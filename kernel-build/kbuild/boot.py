"""Boot check: build a point's bzImage, build the minmax KUnit module
against it, pack an initramfs with our static C /init, boot it in QEMU
(TCG, no network, serial console, -no-reboot) under a timeout, and parse
the console log (KTAP + the /init verdict line).

Nothing is ever loaded into the host's kernel: the module is only built
here and loaded by /init inside QEMU."""
import hashlib
import re
import shlex
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import build, builddir, sandbox
from .proc import kill_group, run, spawn
from .util import KexpandError, atomic_write, log

HERE = Path(__file__).resolve().parent.parent       # kernel-build/
MODULE_SRC = HERE / "minmax-test"
INIT_SRC = HERE / "init.c"
QEMU = "qemu-system-x86_64"

# status values (results/boot.csv), each with its failure class
STATUS_CLASS = {"booted": None, "build-failure": "build",
                "kernel-panic": "boot", "timeout": "boot",
                "test-failure": "boot", "infra-error": "infra"}


# Bump when the way a point is booted changes (QEMU command line, console
# parsing): cached boot results then become stale. Not a hash of this file,
# so that moving code around does not rebuild and reboot every point.
BOOT_SETUP_VERSION = 1


def inputs_hash():
    """What decides a boot result besides the commit and config: the test
    module's sources, /init's source and the boot set-up version."""
    h = hashlib.sha256(f"boot-setup-v{BOOT_SETUP_VERSION}\n".encode())
    for p in sorted(MODULE_SRC.iterdir()) + [INIT_SRC]:
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:16]


def qemu_version():
    p = run([QEMU, "--version"], check=False)
    if p.returncode != 0:
        raise KexpandError(f"{QEMU} not found; install it with 'apt-get "
                           "install qemu-system-x86'", "infra")
    return p.stdout.splitlines()[0]


def build_module(tree, bdir, promises, jobs):
    """The KUnit module, built in a copy under the build dir; `promises`
    ("const_min=1 const_min_t=0") become -DKX_CONST_MIN=1 ... flags."""
    defs = " ".join(f"-DKX_{k.upper()}={v}" for k, v in
                    (kv.split("=", 1) for kv in promises.split()))
    mdir = bdir / "kexpand-minmax-test"
    shutil.rmtree(mdir, ignore_errors=True)
    shutil.copytree(MODULE_SRC, mdir)
    p = run(sandbox.wrap(["make", "-C", str(tree), f"O={bdir.name}", f"M={mdir}",
                          *build.make_args("gcc"), f"KX_PROMISES={defs}", f"-j{jobs}",
                          "modules"], bdir), check=False)
    ko = mdir / "minmax_kunit.ko"
    if p.returncode != 0 or not ko.exists():
        raise KexpandError("building the minmax KUnit module failed:\n" +
                           "\n".join(p.stdout.splitlines()[-25:]), "build")
    return ko


def build_init(outdir):
    out = Path(outdir) / "init"
    run(["gcc", "-static", "-Os", "-Wall", "-Werror", "-o", str(out),
         str(INIT_SRC)], what="building the static /init", klass="infra")
    return out


# --- initramfs -------------------------------------------------------------------

def gen_init_cpio(tree, bdir, outdir):
    """The kernel's own initramfs writer, usr/gen_init_cpio: built by Kbuild
    in the build dir when CONFIG_BLK_DEV_INITRD=y, else built here from the
    tree's source. (Debian's cpio would need a real /dev/console node,
    which only root can make; gen_init_cpio writes it from a spec.)"""
    exe = Path(bdir) / "usr" / "gen_init_cpio"
    if exe.is_file():
        return exe
    exe = Path(outdir) / "gen_init_cpio"
    run(sandbox.wrap(["gcc", "-O2", "-o", str(exe),
                      str(Path(tree) / "usr/gen_init_cpio.c")], bdir, rw=[outdir]),
        what="building usr/gen_init_cpio", klass="infra")
    return exe


def make_initramfs(tool, path, files, bdir):
    """files: {name: path}; /init is executable, and /dev/console is there
    so that /init has stdio. Written with gen_init_cpio (`tool`, built from
    the tree: it runs in bdir's sandbox, reading the files)."""
    spec = ["dir /dev 0755 0 0", "nod /dev/console 0600 0 0 c 5 1"]
    for name, src in files.items():
        mode = "0755" if name == "init" else "0644"
        spec.append(f"file /{name} {Path(src).resolve()} {mode} 0 0")
    spec_file = Path(path).with_suffix(".spec")
    atomic_write(spec_file, "\n".join(spec) + "\n")
    tmp = Path(path).with_suffix(".part")
    with open(tmp, "wb") as out:
        run(sandbox.wrap([str(tool), str(spec_file)], bdir,
                         ro=[tool, spec_file, *files.values()]),
            stdout=out, what="gen_init_cpio")
    tmp.replace(path)
    return path


# --- QEMU ------------------------------------------------------------------------

def qemu_command(bzimage, initrd):
    return [QEMU, "-machine", "pc", "-accel", "tcg", "-m", "512", "-smp", "1",
            "-nographic", "-monitor", "none", "-no-reboot", "-nic", "none",
            "-kernel", str(bzimage), "-initrd", str(initrd),
            "-append", "console=ttyS0 panic=-1 oops=panic loglevel=7"]


@dataclass
class BootRun:
    returncode: int | None
    timed_out: bool
    lines: list = field(default_factory=list)   # [(seconds, text)]
    seconds: float = 0.0


def run_qemu(cmd, timeout):
    """Run QEMU in its own process group; kill the group on timeout or
    interrupt, so no QEMU is ever left behind."""
    log("running: " + shlex.join(cmd))
    t0 = time.monotonic()
    p = spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
              stderr=subprocess.STDOUT)
    lines = []

    def reader():
        for raw in p.stdout:
            lines.append((time.monotonic() - t0,
                          raw.decode(errors="replace").rstrip("\r\n")))
    th = threading.Thread(target=reader, daemon=True)
    th.start()
    timed_out = False
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        kill_group(p)
        th.join(5)
    return BootRun(None if timed_out else p.returncode, timed_out, lines,
                   time.monotonic() - t0)


# --- console parsing ------------------------------------------------------------

# Not the tree's tools/testing/kunit/kunit_parser.py: it lives in the tree
# being measured, so it changes from commit to commit (and a user's old
# commits may lack it), and it expects a clean KTAP stream, while our
# console interleaves kernel messages. The verdict line that /init prints
# is the authority; this parser only names the subtests.
PREFIX = re.compile(r"^(?:\[\s*\d+\.\d+\] ?)?")
VERDICT = re.compile(r"KEXPAND-VERDICT: suite=(\S+) pass=(\d+) fail=(\d+) "
                     r"skip=(\d+) total=(\d+) status=(\w+)")


def parse_ktap(lines):
    """Subtest results of each KUnit suite in a console log:
    {suite: {"passed": [...], "failed": [...], "skipped": [...]}}."""
    suites, current = {}, None
    for text in lines:
        t = PREFIX.sub("", text)
        m = re.match(r"\s*# Subtest: (\S+)", t)
        if m:
            current = suites.setdefault(m.group(1), {"passed": [], "failed": [],
                                                     "skipped": []})
            continue
        m = re.match(r"(\s+)(not ok|ok) \d+ (?:- )?(\S+)(.*)", t)
        if m and current is not None:
            name, rest = m.group(3), m.group(4)
            if "# SKIP" in rest:
                current["skipped"].append(name)
            elif m.group(2) == "ok":
                current["passed"].append(name)
            else:
                current["failed"].append(name)
    return suites


def classify(run_, suite="kexpand-minmax"):
    """A BootRun -> result dict with status, class, counts and log tail."""
    texts = [t for _, t in run_.lines]
    tail = "\n".join(texts[-40:])
    reached = next((s for s, t in run_.lines if "KEXPAND-INIT:" in t), None)
    verdict = next((VERDICT.search(t) for t in texts if VERDICT.search(t)), None)
    panic = next((t for t in texts if "Kernel panic" in t), None)
    ktap = parse_ktap(texts).get(suite, {"passed": [], "failed": [], "skipped": []})
    out = {"reached_init": reached is not None,
           "boot_s": round(reached, 2) if reached is not None else None,
           "tests_passed": len(ktap["passed"]), "tests_failed": len(ktap["failed"]),
           "tests_skipped": len(ktap["skipped"]), "failures": ktap["failed"],
           "skipped": ktap["skipped"], "verdict": verdict.group(0) if verdict else None,
           "qemu_exit": run_.returncode, "seconds": round(run_.seconds, 2),
           "log_tail": tail}
    if verdict:
        # the verdict counts win when KTAP lines were interleaved/garbled
        out["tests_passed"], out["tests_failed"], out["tests_skipped"] = (
            int(verdict.group(2)), int(verdict.group(3)), int(verdict.group(4)))
    if panic:
        status = "kernel-panic"
        out["panic"] = panic.strip()
    elif run_.timed_out:
        status = "timeout"
    elif not texts or (run_.returncode not in (0, None) and reached is None
                       and not any("Linux version" in t for t in texts)):
        status = "infra-error"
    elif verdict is None:
        status = "test-failure" if reached is not None else "kernel-panic"
    elif verdict.group(6) == "ok" and out["tests_failed"] == 0 and out["tests_passed"] > 0:
        status = "booted"
    else:
        status = "test-failure"
    out["status"] = status
    out["class"] = STATUS_CLASS[status]
    return out


def boot_point(tree, bdir, config, promises, workdir, timeout, jobs):
    """Build everything for one point and boot it. Returns the result dict
    (status "build-failure" when the kernel or the module did not build).
    The kernel comes from builddir.ensure_kernel: a new dir starts from a
    copy of the previous point's (kernel_build_from says which)."""
    out = {"qemu_version": qemu_version()}
    b = builddir.ensure_kernel(tree, bdir, "gcc", config, jobs)
    out["kernel_build_s"] = round(b.seconds, 1)
    out["kernel_build_from"] = "cached" if b.info.get("cached") else b.info.get("from")
    ko, tail = None, b.log_tail
    if b.ok:
        try:
            ko = build_module(tree, bdir, promises, jobs)
        except KexpandError as e:
            tail = str(e)
    if ko is None:
        out.update({"status": "build-failure", "class": "build",
                    "log_tail": tail, "reached_init": False, "boot_s": None,
                    "tests_passed": 0, "tests_failed": 0, "tests_skipped": 0,
                    "failures": []})
        return out
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    init = build_init(workdir)
    initrd = make_initramfs(gen_init_cpio(tree, bdir, workdir),
                            workdir / "initramfs.cpio",
                            {"init": init, "minmax_kunit.ko": ko}, bdir)
    cmd = qemu_command(bdir / "arch/x86/boot/bzImage", initrd)
    r = run_qemu(cmd, timeout)
    out.update(classify(r))
    out["qemu_command"] = shlex.join(cmd)
    out["promises"] = promises
    out["timeout_s"] = timeout
    return out
