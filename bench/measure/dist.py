"""Scans and tracks on Dask distributed (Debian python3-distributed), an
existing engine: kexpand only says what to run. On this machine a scan
needs no cluster (Kbuild drives it, kbuildscan.py); with DASK_SCHEDULER:

- Remote (DASK_SCHEDULER=tls://host:8786, with DASK_TLS_CA/CERT/KEY
  through distributed's Security; plain tcp:// only to this machine or
  with DASK_INSECURE=1, settings.py): workers a user started with
  `dask worker`, each with its own work directory (KEXPAND_WORK in the
  worker's environment). The unit of work is a chunk of files at one
  (commit, config, compiler). The task prepares that tree in the worker's
  own work directory if it has not (the tarball and cases/, whose commit
  ids are deterministic, or a clone of the user's tree), checks the commit
  id it reached and the compiler version against the client's, builds it,
  and measures the files. Tasks are not pinned: when a worker dies, the
  scheduler runs its chunks on the others, which prepare the tree
  themselves; the bytes are the same wherever a file is measured.
Task keys carry (commit, config hash, compiler version, chunk), so a
duplicate submission merges with the first. Every file result names the
host that measured it."""
import hashlib
import logging
import os
import platform
from contextlib import contextmanager
from pathlib import Path

from kbuild import build, builddir, proc, sandbox, series, settings, trees, workdir
from kbuild.util import KexpandError, atomic_write, log

from . import scanfiles

CHUNKS_PER_WORKER = 4
# this worker process's compile commands per built (build dir, config):
# a commit's chunks that land on one worker read them once
_ENTRIES = {}


def _tag(*parts):
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:12]


def _distributed():
    try:
        import dask
        import distributed
    except ImportError:
        raise KexpandError("python3-distributed is not installed: make scan "
                           "installs it (apt-get install python3-distributed)", "infra")
    return dask, distributed


@contextmanager
def client(req):
    """A Dask client to DASK_SCHEDULER (a run on this machine needs none:
    Kbuild is its parallelism). An unreachable scheduler is exit 5, naming
    its address. Nothing distributed logs reaches the terminal."""
    _dask, distributed = _distributed()
    quiet = _quiet_logs()
    try:
        with _remote(req, distributed) as c:
            yield c
    finally:
        _restore_logs(quiet)


@contextmanager
def _remote(req, distributed):
    security = None
    if req.dask_tls:
        security = distributed.Security(
            tls_ca_file=req.dask_tls["ca"], tls_client_cert=req.dask_tls["cert"],
            tls_client_key=req.dask_tls["key"], require_encryption=True)
    try:
        c = distributed.Client(req.dask_scheduler, timeout="10s", security=security)
    except TypeError:       # distributed's word for a tls:// without certificates
        raise KexpandError(
            f"DASK_SCHEDULER={req.dask_scheduler}: a tls:// scheduler needs this "
            "client's certificates: give DASK_TLS_CA=, DASK_TLS_CERT= and "
            "DASK_TLS_KEY= (or distributed's distributed.comm.tls settings; README, "
            "\"Scans on Dask\")")
    except (OSError, TimeoutError, ValueError) as e:
        raise KexpandError(
            f"DASK_SCHEDULER={req.dask_scheduler}: no Dask scheduler answers there "
            f"({type(e).__name__}{': ' + str(e)[:200] if str(e) else ''}). Start one "
            "with `dask scheduler`, workers with `dask worker <address>`, with TLS "
            "for another machine (README, \"Scans on Dask\"), or unset DASK_SCHEDULER to "
            "scan on this machine", "infra")
    try:
        yield c
    finally:
        c.close()


QUIET_LOGGERS = ("distributed", "tornado", "asyncio", "bokeh")


def _quiet_logs():
    """distributed's, tornado's and asyncio's loggers (a worker closing
    twice logs an AssertionError) no longer reach the terminal; returns
    the levels to restore."""
    old = {n: logging.getLogger(n).level for n in QUIET_LOGGERS}
    for n in QUIET_LOGGERS:
        logging.getLogger(n).setLevel(logging.CRITICAL + 1)
    return old


def _restore_logs(old):
    for n, level in old.items():
        logging.getLogger(n).setLevel(level)


def n_workers(c):
    return max(1, len(c.scheduler_info().get("workers", {})))


WAIT_WORKERS_S = 120


def wait_workers(c):
    """At least one worker, within WAIT_WORKERS_S; else exit 5."""
    try:
        c.wait_for_workers(1, timeout=WAIT_WORKERS_S)
    except (TimeoutError, OSError) as e:
        raise KexpandError(f"the Dask scheduler {c.scheduler.address} has had no "
                           f"worker for {WAIT_WORKERS_S} s ({type(e).__name__}): start "
                           "workers with `dask worker <address>` (README)", "infra")


def results_of(c, futs):
    """(future, result) as they finish. Fails with exit 5, never hangs, when
    the cluster loses every worker or the scheduler for WAIT_WORKERS_S."""
    from distributed import wait
    pending = set(futs)
    while pending:
        try:
            done, pending = wait(pending, timeout=30, return_when="FIRST_COMPLETED")
        except TimeoutError:
            done = set()
        except OSError as e:
            raise KexpandError(f"lost the Dask scheduler {c.scheduler.address}: "
                               f"{type(e).__name__}: {e}", "infra")
        for fut in done:
            try:
                yield fut, fut.result()
            except KexpandError:
                raise
            except Exception as e:       # KilledWorker, CommClosedError, ...
                raise KexpandError(f"a Dask task failed: {type(e).__name__}: {e}",
                                   "infra")
        if not done:
            wait_workers(c)


# --- tasks (run on the workers; module-level, so they pickle by name) ----------

def chunk_task(spec, files):
    """Remote mode: `files` at spec's (commit, config, compiler), in this
    worker's own work directory. Errors come back as values (a pickled
    KexpandError would lose its exit class)."""
    try:
        from distributed import get_worker
        proc.set_limits(**spec["limits"])
        return {"files": _chunk(spec, files)[0], "host": platform.node(),
                "worker": str(get_worker().name)}
    except KexpandError as e:
        return {"error": f"worker {platform.node()}: {e}", "klass": e.klass}


def config_of(spec, case, work):
    """The client's config, rebuilt here: its base, or its KCONFIG= file,
    whose text the spec carries (the worker may not see the client's path)."""
    kconfig = None
    if spec.get("kconfig_text") is not None:
        text = spec["kconfig_text"]
        kconfig = workdir.kconfigs(work) / (build.config_id(text.encode()) + ".config")
        if not kconfig.is_file():
            atomic_write(kconfig, text)
    return build.Config(case.config, base=spec["config_base"], kconfig=kconfig,
                        strict=spec["strict"])


def worker_tree(spec, work, commit):
    """(case, tree) of a worker, in its work dir (locked): the user's tree
    cloned, or the packaged tree prepared. A tree without `commit` is
    refused."""
    case = series.load_case(spec["case"], Path(spec["cases_dir"]))
    if spec["kernel"]:
        tree = trees.user_clone(Path(spec["kernel"]), work)
    else:
        series.prepare(case, work, Path(spec["tarball"]))
        tree = workdir.tree(work)
    if series.git(tree, "rev-parse", "-q", "--verify", f"{commit}^{{commit}}",
                  check=False).returncode != 0:
        why = ("its KERNEL= tree is not the client's" if spec["kernel"] else
               "the tarball or cases/ differ from the client's")
        raise KexpandError(f"its tree {tree} has no commit {commit[:12]}: {why}", "infra")
    return case, tree


def _chunk(spec, files):
    """Prepare and build spec's commit in this worker's work directory (if
    it has not: builddir.ensure_kernel, as a local scan), then measure
    `files`. Returns (results, every C file the build compiled)."""
    sandbox.check()             # a worker builds in its sandbox or not at all
    work = settings.work_dir(os.environ)
    with workdir.lock(work):
        commit, cc = spec["commit"], spec["compiler"]
        case, tree = worker_tree(spec, work, commit)
        ccver = build.compiler_version(cc)
        if ccver != spec["compiler_version"]:
            raise KexpandError(f"refused: it has {ccver}, the scan measures with "
                               f"{spec['compiler_version']}", "infra")
        config = config_of(spec, case, work)
        if config.hash() != spec["config_hash"]:
            raise KexpandError("refused: its cases/ give another config (fragment "
                               f"{case.config}) than the client's", "infra")
        series.checkout(tree, commit)
        bdir = build.build_dir(tree, commit, cc)
        if not builddir.has_kernel(bdir, config.hash()):
            _ENTRIES.pop(str(bdir), None)
        b = builddir.ensure_kernel(tree, bdir, cc, config, os.cpu_count() or 1)
        if not b.ok:
            raise KexpandError(f"full build of {commit[:12]} failed:\n{b.log_tail}",
                               "build")
        if str(bdir) not in _ENTRIES:
            _ENTRIES[str(bdir)] = dict(scanfiles.compile_commands(tree, bdir))
        entries = _ENTRIES[str(bdir)]
        missing = [f for f in files if f not in entries]
        if missing:
            raise KexpandError(f"its build compiled no {missing[0]}", "infra")
        return ({f: scanfiles.measure_one(bdir, f, entries[f])[1] for f in files},
                sorted(entries))


def list_task(spec):
    """Remote mode: the C files a commit's full build compiles (the worker
    prepares and builds it first)."""
    try:
        return {"files": _chunk(spec, [])[1], "host": platform.node()}
    except KexpandError as e:
        return {"error": f"worker {platform.node()}: {e}", "klass": e.klass}


# --- the client side -------------------------------------------------------------

def _raise(res):
    if "error" in res:
        raise KexpandError(res["error"], res["klass"])
    return res


def _gather(c, futs, progress):
    out = {}
    for i, (fut, res) in enumerate(results_of(c, futs)):
        out[futs[fut]] = res
        if progress and (i + 1) % 200 == 0:
            progress.say(f"  scanned {i + 1}/{len(futs)}")
    return out


def remote_scan(c, spec, progress=None):
    """Remote mode: every file of spec's commit, in chunks over the
    cluster's workers. Returns ({rel: result}, the hosts that measured)."""
    key = _tag(spec["commit"], spec["config_hash"], spec["compiler_version"])
    spec = dict(spec, limits=dict(proc.LIMITS))
    wait_workers(c)
    lst = c.submit(list_task, spec, key=f"kx-files-{key}", pure=False)
    files = _raise(next(results_of(c, [lst]))[1])["files"]
    n = min(len(files), n_workers(c) * CHUNKS_PER_WORKER) or 1
    chunks = [files[i::n] for i in range(n)]
    if progress:
        progress.say(f"  scanning {len(files)} C files on {n_workers(c)} Dask "
                     f"workers ({c.scheduler.address}), {n} chunks")
    futs = {c.submit(chunk_task, spec, ch, pure=False,
                     key=f"kx-chunk-{key}-{_tag(*ch)}"): i for i, ch in enumerate(chunks)}
    out, hosts = {}, {}
    for fut, res in results_of(c, futs):
        res = _raise(res)
        for rel, r in res["files"].items():
            out[rel] = dict(r, host=res["host"], worker=res["worker"])
        hosts[res["host"]] = hosts.get(res["host"], 0) + len(res["files"])
    log(f"scan of {spec['commit'][:12]}: files measured per host: {hosts}")
    return out, hosts
