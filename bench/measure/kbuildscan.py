"""A scan that Kbuild drives: `make compile_commands.json` in a scan dir
(build.scan_dir, <tree>/ks-<commit12>-<compiler>) with kexpand's
compiler wrapper as CC (bench/tools/kx-cc.c). Kbuild runs one command per
object with the exact flags, in parallel (-j), writes each object's
command and dependencies (fixdep); for each C file, kx-cc runs that
command with -E through the analyzer instead of compiling it, keeps the
measurement beside the object (.<name>.o.kx.json) and leaves an empty
object, except where a later step reads the object (build.SCAN_REAL:
the vDSO, whose image becomes a generated C file; real-mode code; host
programs), which it compiles for real too. Kbuild's steps that only read
an object (objtool, check-local-export) are left out (build.SCAN_SKIP).
So a scan costs about what preprocessing costs, not a full build and
then a scan.

The target is Kbuild's own list of what it compiles: vmlinux.a, the
libraries and the modules' objects (compile_commands.json). vmlinux is
not linked, so the decompressor and setup code under arch/x86/boot/,
built from a linked vmlinux, are not part of the scan (a full build's
scan has them, and init/version-timestamp.c, built at the link).

A later commit's scan starts as a copy of the nearest scan dir of the
same config and compiler (builddir.seed); Kbuild's rebuild rules then
measure again exactly the objects whose command or files changed, and
the others keep their measurement. A file that does not preprocess is
measured again by every run (kx-cc names a file that never exists in
its dependencies). A scan dir may be walked through other commits
(make check's per-patch bytes: `make <objects>` at each commit); it
remembers the commit it was last made at (builddir.made_at), and the files that differ
from it are stamped new first (mtimes.mark_changed), so that a checkout
that gives files back an older time (kbuild.mtimes) cannot hide them.

Reading a record back costs more than the analyzer's JSON: its bytes by
header become the per-file record (headers.record, about 5 ms a file).
So collect keeps each file's result beside its record (.<name>.o.kx-result.json,
stamped with a hash of the record, its command and the code that made
it), and a copy of the dir carries them: a later commit's scan reads
back only the results of what Kbuild measured again."""
import concurrent.futures
import contextlib
import ctypes
import gc
import hashlib
import json
import multiprocessing
import os
import platform
import shlex
import shutil
import signal
import threading
import time
from pathlib import Path

from kbuild import build, builddir, kcmd, mtimes, proc
from kbuild.util import KexpandError, atomic_write, log, read_regular

from . import scanfiles

TARGET = "compile_commands.json"
HOST = platform.node()
RECORD = ".kx.json"
RESULT = ".kx-result.json"
# what makes a result out of a record: a kept result made by other code
# is made again
CODE = hashlib.sha256(b"".join(
    p.read_bytes() for p in [Path(__file__).parent / m for m in (
        "kbuildscan.py", "scanfiles.py", "headers.py", "expansion.py")]
    + [Path(proc.__file__)])).hexdigest()[:16]


def record_path(bdir, obj):
    obj = Path(obj)
    return Path(bdir) / obj.parent / f".{obj.name}{RECORD}"


def make_at(tree, commit, compiler, config, jobs, targets, fresh=False, sdir=None):
    """Kbuild's `targets` in the scan dir of `commit` (or `sdir`), the tree
    checked out at `commit`: a new dir starts as a copy of the nearest of
    the same config (fresh: from nothing). Returns (dir, BuildResult); a
    failed run raises a 'build' error with Kbuild's last lines."""
    if not build.KX_CC.exists() or not build.KX_ANALYZE.exists():
        raise KexpandError(f"{build.KX_CC} or {build.KX_ANALYZE} missing: run "
                           f"'make -C {build.KX_CC.parents[2]} all'", "infra")
    sdir = Path(sdir or build.scan_dir(tree, commit, compiler))
    if fresh and sdir.exists():
        shutil.rmtree(sdir)
    builddir.configure(tree, sdir, compiler, config, seed_from_others=not fresh)
    at = builddir.made_at(sdir)
    if at and at != commit and mtimes.kept(tree):
        mtimes.mark_changed(tree, at, commit)
    builddir.unmade_at(sdir)                    # (a run that stops half way)
    b = build.build(tree, sdir, compiler, list(targets), jobs, keep_going=False,
                    seeded=builddir.seeded_from(sdir) is not None,
                    config_hash=config.hash())
    if not b.ok:
        raise KexpandError(f"Kbuild in {sdir.name} failed at {commit[:12]}:\n"
                           f"{b.log_tail}", "build")
    builddir.note_made_at(sdir, commit)
    return sdir, b


def scan(tree, commit, compiler, config, jobs, progress=None, fresh=False):
    """Scan `commit` (checked out in `tree`) with Kbuild: the scan record
    (scanfiles.summary) with "build" (how the run went). A file that does
    not preprocess is in the record as an error."""
    t0 = time.time()
    sdir, b = make_at(tree, commit, compiler, config, jobs, [TARGET], fresh)
    files, measured = collect(tree, sdir, t0, jobs)
    sc = scanfiles.summary(files, measured, time.time() - t0, jobs)
    sc["build"] = {"engine": "kbuild", "scan_s": round(b.seconds, 1), "jobs": jobs,
                   "from": builddir.seeded_from(sdir) or "clean", "steps": b.steps}
    if progress:
        progress.say(f"  Kbuild measured {len(measured)} of {len(files)} C files "
                     f"in {b.seconds:.0f} s ({sdir.name})")
    return sc


def measure(tree, sdir, commit, compiler, config, jobs, files):
    """{file: scan result} of `files` at `commit` in scan dir `sdir`
    (Kbuild makes their objects: those whose inputs changed are measured
    again)."""
    sdir, _ = make_at(tree, commit, compiler, config, jobs,
                      [kcmd.obj_of(f) for f in files], sdir=sdir)
    out = {}
    for f in files:
        argv = kcmd.compile_command(sdir, f)
        out[f] = dict(result(_read(sdir, f, argv)), host=HOST)
    return out


def collect(tree, bdir, since, jobs=1):
    """{file: scan result} of every C file the build compiled (the .cmd
    files, as scanfiles.compile_commands reads them), from kx-cc's
    records (or the result kept beside one), and the files measured by
    this run (records newer than `since`). Results are made from records
    in `jobs` processes when there are many (about 3 ms a file: 9 s of
    one core for a defconfig scan, while Kbuild's cores are idle)."""
    files, measured, todo = {}, [], []
    inside = _Inside(bdir)
    with _no_cycle_collector():
        for rel, argv in scanfiles.compile_commands(tree, bdir):
            path = record_path(bdir, kcmd.output_file(argv))
            data = read_regular(path) if inside(path) else None
            stamp = data is not None and _stamp(data, argv)
            r = stamp and kept_result(path, stamp)
            files[rel] = dict(r, host=HOST) if r else None     # (the order kept)
            if not r:
                todo.append((rel, argv, path, data, stamp))
            if data is not None and path.stat().st_mtime >= since:
                measured.append(rel)
        for (rel, _argv, path, _data, stamp), (r, err) in zip(todo, _made_all(todo, jobs)):
            if err is not None:
                raise KexpandError(err, "infra")
            if stamp:
                _keep(path, {"stamp": stamp, "result": r})
            files[rel] = dict(r, host=HOST)
    return files, measured


# fewer results than this are made in this process (a pool forks a
# process per job and sends every result back through a pipe)
POOL_MIN = 200
_ITEMS = []     # what a pool's forked workers read (not sent through pipes)


def _made_all(todo, jobs):
    """[(result, None) or (None, error)] of `todo`'s records, in order.
    In a pool of forked processes only where this process has no other
    thread (a fork copies no thread, and a lock one held stays held). A
    worker reads its records again (kept in memory, a build's would all be
    at once)."""
    def here():
        return [_made(rel, argv, path, data) for rel, argv, path, data, _stamp in todo]
    if jobs <= 1 or len(todo) < POOL_MIN or threading.active_count() > 1:
        return here()
    _ITEMS[:] = [(rel, argv, path, data is not None) for rel, argv, path, data, _ in todo]
    try:
        with concurrent.futures.ProcessPoolExecutor(
                jobs, mp_context=multiprocessing.get_context("fork"),
                initializer=_worker_start, initargs=(os.getpid(),)) as ex:
            return list(ex.map(_made_at, range(len(todo)),
                               chunksize=max(1, len(todo) // (jobs * 8))))
    except concurrent.futures.process.BrokenProcessPool as e:     # (the OOM killer)
        log(f"warning: a process making scan results died ({e}); making them here")
        return here()
    finally:
        _ITEMS.clear()


PR_SET_PDEATHSIG = 1


def _worker_start(parent):
    """Signals are kexpand's main process's to handle (it ends the pool);
    a worker ends with it even when kill -9 leaves nobody to say so (it
    would wait on the pool's pipes for good, holding the work dir's lock
    it shares with its parent since the fork)."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:          # (it died before prctl)
        os.kill(os.getpid(), signal.SIGKILL)


def _made_at(i):
    rel, argv, path, had = _ITEMS[i]
    return _made(rel, argv, path, read_regular(path) if had else None)


def _made(rel, argv, path, data):
    try:
        return result(_parse(path, rel, argv, data)), None
    except KexpandError as e:
        return None, str(e)


@contextlib.contextmanager
def _no_cycle_collector():
    """Python's cycle collector off: making results allocates millions of
    small objects (bytes by header), none in a cycle, and with the
    collector on a defconfig scan's collect took 16.9 s instead of 7.8 s,
    walking again and again the results already made."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _Inside:
    """Whether a record's directory is a real one inside the scan dir: a
    build (untrusted) may have left a link there, and kexpand, outside
    the sandbox, reads and writes nothing through it."""

    def __init__(self, bdir):
        self.top, self.seen = Path(bdir).resolve(), {}

    def __call__(self, path):
        d = path.parent
        if d not in self.seen:
            real = d.resolve()
            self.seen[d] = real == self.top or self.top in real.parents
        return self.seen[d]


def _stamp(data, argv):
    """What a kept result is valid for: its record (a hash of its bytes),
    the command, the code that makes results."""
    return [hashlib.sha256(data).hexdigest()[:32],
            hashlib.sha256(json.dumps(argv).encode()).hexdigest()[:32], CODE]


def _kept_path(path):
    return path.with_name(path.name[:-len(RECORD)] + RESULT)


def kept_result(path, stamp):
    """The result kept beside record `path`, if it was made from this
    record, for this command, by this code; else None."""
    data = read_regular(_kept_path(path))
    try:
        kept = json.loads(data) if data is not None else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(kept, dict) or kept.get("stamp") != stamp or \
            not isinstance(kept.get("result"), dict) or \
            kept["result"].get("status") not in ("ok", "error"):
        return None
    return kept["result"]


def _keep(path, value):
    """Keep a result beside its record (a cache: not synced; a dir it
    cannot write to is read again next time)."""
    with contextlib.suppress(KexpandError):
        atomic_write(_kept_path(path), json.dumps(value, separators=(",", ":")), sync=False)


def _read(bdir, rel, argv):
    """kx-cc's record of `rel`, compiled by `argv` (the wrapper left out)."""
    path = record_path(bdir, kcmd.output_file(argv))
    return _parse(path, rel, argv,
                  read_regular(path) if _Inside(bdir)(path) else None)


def _parse(path, rel, argv, data):
    """The record at `path` from its bytes `data` (None: no regular file
    there). A record that is missing, or of another command than Kbuild's
    last one, is an error of kexpand's, never a measurement."""
    try:
        if data is None:
            raise OSError("not a regular file in the scan dir")
        rec = json.loads(data)
    except (OSError, ValueError, RecursionError) as e:
        raise KexpandError(f"{rel}: no measurement from kx-cc in {path} ({e}); "
                           "was the scan dir built by hand?", "infra")
    if not isinstance(rec, dict) or rec.get("argv") != argv:
        raise KexpandError(f"{rel}: the measurement in {path} is of another "
                           "command than Kbuild's last one", "infra")
    return rec


def result(rec):
    """A kx-cc record as scanfiles.measure_one gives a file's result
    (collect adds the host that measured it, as a Dask worker's result
    names it)."""
    if rec["status"] != "ok":
        reason = rec.get("reason") or "error"
        error = rec.get("error", "")[-2000:]
        if reason in proc.LIMITS_HIT:
            error = f"{proc.limit_text(reason)}: {shlex.join(rec['argv'])[:300]}\n{error}"
        return {"status": "error", "error": error, "reason": reason,
                "seconds": rec["seconds"]}
    a = dict(rec["analysis"], cpp_cpu_s=rec["cpp_cpu_s"])
    return scanfiles.result_of(a, rec["seconds"])
