"""Instruction counts of a compile command: a cost that other tenants of the
machine cannot disturb (llvm-compile-time-tracker's metric).

Two counters, chosen per machine by probing, and named in every record
(`instructions_source`):
- "perf": `perf stat -e instructions:u` (Debian linux-perf), where the
  machine has a usable PMU; counts the command and all its children.
- "qemu-tcg": QEMU user mode (Debian qemu-user) with kexpand's plugin
  bench/tools/kx-icount.so, where perf says "not supported" (most cloud VMs, and
  this machine). gcc's subprocesses (cc1, as) run under the same plugin
  through `gcc -wrapper bench/tools/kx-icount-wrap`; clang runs its cc1 and
  assembler in its own process, which is checked (`clang -###` must list
  only in-process jobs) rather than assumed.
Counts under QEMU are of guest x86_64 instructions; they are deterministic
for the same program, arguments and input (the slowdown is about 7-8x).
Every count has a time limit (count_limit); a count that reaches it is
killed with its process group (timing.TimedOut)."""
import contextlib
import fcntl
import hashlib
import shlex
import shutil
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from kbuild import sandbox
from kbuild.proc import run
from kbuild.util import KexpandError

from .timing import Limit, TimedOut, run_limit

HERE = Path(__file__).resolve().parent.parent / "tools"
PLUGIN = HERE / "kx-icount.so"
WRAP = HERE / "kx-icount-wrap"
QEMU = "qemu-x86_64"
# A count under QEMU may take max(COUNT_LIMIT_FLOOR_S, COUNT_LIMIT_FACTOR x
# estimate): counting costs 3-16x the command's wall time (README,
# count_slowdown), -c a few times its -E, and counts share the cores.
# Under perf, which runs at native speed, a count has a timed run's limit.
COUNT_LIMIT_FLOOR_S = 1800
COUNT_LIMIT_FACTOR = 60
PROBE_TIMEOUT_S = 120       # perf stat true, --version, clang -###


def parse_perf(text):
    """The count from `perf stat -x, -e instructions:u` output, or None when
    perf says the event is not supported/counted."""
    for line in text.splitlines():
        f = line.split(",")
        if len(f) >= 3 and f[2].startswith("instructions"):
            return int(f[0]) if f[0].strip().isdigit() else None
    return None


@lru_cache(maxsize=1)
def source():
    """("perf" | "qemu-tcg" | None, why): the counter this machine has."""
    why = []
    if shutil.which("perf"):
        p = run(["perf", "stat", "-x,", "-e", "instructions:u", "true"], check=False,
                timeout=PROBE_TIMEOUT_S)
        if p.returncode == 0 and parse_perf(p.stdout):
            return "perf", "perf stat -e instructions:u counts on this machine"
        why.append("perf stat -e instructions:u: not supported here (no usable PMU)")
    else:
        why.append("perf is not installed")
    if shutil.which(QEMU) and PLUGIN.exists():
        return "qemu-tcg", "; ".join(why + ["counting under QEMU user mode "
                                            "with bench/tools/kx-icount.so"])
    why.append(f"{QEMU} or {PLUGIN.name} missing (make bench installs qemu-user "
               "and builds the plugin)")
    return None, "; ".join(why)


@lru_cache(maxsize=2)
def identity(src):
    """What a cached count depends on besides the command: the counter's
    version and, under QEMU, the plugin's and wrapper's sources (a changed
    plugin must not be taken for the same counter), after its name."""
    if src == "perf":
        ver = run(["perf", "--version"], check=False, timeout=PROBE_TIMEOUT_S)
        return f"perf {ver.stdout.strip()}"
    ver = run([QEMU, "--version"], check=False,
              timeout=PROBE_TIMEOUT_S).stdout.splitlines()[:1]
    h = hashlib.sha256()
    for f in (HERE / "kx-icount.c", WRAP):
        h.update(f.read_bytes() if f.exists() else b"-")
    return f"{src} {' '.join(ver)} {h.hexdigest()[:16]}"


def parse_counts(text):
    """Lines "<pid> <instructions>" written by the plugin -> (sum, lines)."""
    rows = [l.split() for l in text.splitlines() if l.strip()]
    if not rows or any(len(r) != 2 or not all(x.isdigit() for x in r) for r in rows):
        raise KexpandError(f"kx-icount wrote an unreadable count file: {text[:200]!r}",
                           "infra")
    return sum(int(r[1]) for r in rows), len(rows)


def clang_in_process(argv, cwd):
    """clang runs every job of this command in its own process (so one
    QEMU counts them all). A command clang rejects passes here and fails
    when it is counted, with clang's own message."""
    p = run(sandbox.wrap([*argv, "-###"], cwd), cwd=cwd, check=False,
            timeout=PROBE_TIMEOUT_S)
    lines = p.stdout.splitlines()
    jobs = [i for i, l in enumerate(lines) if l.startswith(' "')]
    return p.returncode != 0 or \
        all(i > 0 and lines[i - 1].strip() == "(in-process)" for i in jobs)


def count_limit(estimate_s=None, src=None):
    """The time limit of one count (a timing.Limit), from the estimate (CPU
    seconds of the file's -E in the expansion run; None: unknown) and the
    counter (`src`; default: this machine's)."""
    if (src or source()[0]) == "perf":
        return run_limit(estimate_s)
    est = max(0.0, estimate_s or 0.0)
    return Limit(max(COUNT_LIMIT_FLOOR_S, COUNT_LIMIT_FACTOR * est),
                 f"max({COUNT_LIMIT_FLOOR_S} s, {COUNT_LIMIT_FACTOR} x {est:.1f} s "
                 "of the file's -E CPU time in the expansion run), under QEMU")


HERMETIC_PATH = "/usr/local/bin:/usr/bin:/bin"


def _staged_tools():
    """The plugin and the wrapper at a path of one length, named by their
    content (/tmp/kx-icount-tools-<16 hex>/): the counted programs see
    their paths, and must not see where this checkout is."""
    h = hashlib.sha256(PLUGIN.read_bytes() + WRAP.read_bytes()).hexdigest()[:16]
    d = Path("/tmp") / f"kx-icount-tools-{h}"
    if not (d / WRAP.name).is_file():
        tmp = Path(tempfile.mkdtemp(prefix=f".{d.name}-", dir="/tmp"))
        for f in (PLUGIN, WRAP):
            shutil.copy2(f, tmp / f.name)
        try:
            tmp.rename(d)
        except OSError:                 # another count staged it meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    return d / PLUGIN.name, d / WRAP.name


@contextlib.contextmanager
def _count_dir(argv):
    """The scratch dir of one count, named by the command: its name reaches
    the compiler (the object's path), and a random name moved the count by
    tens of instructions. Held under a lock, so two counts of one command
    take turns; emptied after."""
    same = repr(hermetic(argv, "-"))      # the command, wherever its object was to go
    name = Path("/tmp") / f"kx-icount-{hashlib.sha256(same.encode()).hexdigest()[:16]}"
    with open(f"{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            shutil.rmtree(name, ignore_errors=True)
            name.mkdir()
            yield str(name)
        finally:
            shutil.rmtree(name, ignore_errors=True)
            fcntl.flock(lock, fcntl.LOCK_UN)


def hermetic(argv, tmp):
    """argv with its object written into `tmp` (a path of one length),
    so that where the work directory is does not reach the count."""
    out = list(argv)
    for i, a in enumerate(out[:-1]):
        if a == "-o" and out[i + 1] not in ("-", "/dev/null"):
            out[i + 1] = str(Path(tmp) / "out.o")
    return out


def count(argv, cwd, cc, timeout=None, rw=(), view=None):
    """Count the instructions of argv (run from cwd). Returns
    {"instructions", "instructions_source", "count_s", "processes"}; the
    command must succeed. timeout: a timing.Limit, or seconds; None:
    count_limit() of an unknown estimate. A count that reaches it is
    killed with its process group: TimedOut. It runs in the sandbox of
    build dir cwd (rw: where the command writes besides; view: the
    tree's files it reads, frozen: sandbox.wrap)."""
    src, why = source()
    if src is None:
        raise KexpandError(f"no instruction counter: {why}", "infra")
    if timeout is None:
        timeout = count_limit(None, src)
    elif not isinstance(timeout, Limit):
        timeout = Limit(timeout, "given by the caller")
    prog = shutil.which(argv[0])
    if not prog:
        raise KexpandError(f"{argv[0]} not found on PATH", "infra")
    # counted hermetically: a fixed environment, the tools and the object at
    # paths of one length, so that the same command counts the same
    # instructions on any machine and in any work directory
    with _count_dir(argv) as tmp:
        out = Path(tmp) / "counts"
        argv = hermetic(argv, tmp)
        # gcc asks for its working directory (libiberty's getpwd), and the
        # length of that path shows in its count; getpwd takes $PWD when
        # it names the same directory, so PWD is a link of one length
        link = Path(tmp) / "cwd"
        link.symlink_to(Path(cwd).resolve())
        env = {"PATH": HERMETIC_PATH, "LC_ALL": "C", "PWD": str(link)}
        # (no KEXPAND_RUN either: a count is bounded by its time limit).
        # What is left: gcc draws a random seed per run (its -frandom-seed
        # default), which moves a count by a few tens of instructions in
        # tens of millions now and then
        if src == "perf":
            cmd = ["perf", "stat", "-x,", "-e", "instructions:u", "-o",
                   str(out), "--", *argv]
        else:
            if cc == "clang" and not clang_in_process(argv, cwd):
                raise KexpandError("clang runs a job of this command in a "
                                   "subprocess, which QEMU would not count: "
                                   f"{' '.join(argv[:3])} ...", "infra")
            plugin, wrap = _staged_tools()
            cmd = [QEMU, "-plugin", str(plugin), prog, *argv[1:]]
            if cc == "gcc":
                cmd += ["-wrapper", str(wrap)]
            env.update(KX_ICOUNT_OUT=str(out), KX_QEMU=shutil.which(QEMU),
                       KX_ICOUNT_PLUGIN=str(plugin))
        t0 = time.monotonic()
        try:
            box = sandbox.wrap(cmd, cwd, env=env, rw=[tmp, *rw], view=view,
                               ro=[Path(cmd[2]).parent] if src != "perf" else ())
            p = run(box, cwd=cwd, check=False, env=env, timeout=timeout.seconds,
                    what="instruction count")
        except KexpandError:
            # with check=False, run() raises only for a missing program (at
            # once) and for the timeout, after killing the process group
            if time.monotonic() - t0 < timeout.seconds:
                raise
            raise TimedOut(f"not counted: the count was killed after "
                           f"{timeout.seconds:g} s, its limit ({timeout.rule}); a "
                           "hang is not a verdict on the code: not cached, "
                           f"counted again on the next run: {shlex.join(argv)}") \
                from None
        secs = time.monotonic() - t0
        if p.returncode != 0:
            tail = "\n".join(p.stdout.splitlines()[-10:])
            raise KexpandError(f"counting instructions failed (exit {p.returncode}): "
                               f"{' '.join(argv[:3])} ...\n{tail}", "build")
        text = out.read_text() if out.exists() else ""
        if src == "perf":
            n, procs = parse_perf(text), None
            if n is None:
                raise KexpandError(f"perf counted nothing: {text[-300:]}", "infra")
        else:
            n, procs = parse_counts(text)
            if cc == "gcc" and procs < 2:
                raise KexpandError("gcc's subprocesses were not counted (one "
                                   "count line): is -wrapper honoured?", "infra")
    return {"instructions": n, "instructions_source": src,
            "count_s": round(secs, 3), "processes": procs}
