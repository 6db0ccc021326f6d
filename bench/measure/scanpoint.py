"""One commit's scan, as make scan, make check and make track SCAN=1 take
it: every C file the build compiles through the analyzer, cached by
commit, compiler and config, the record written to results/. Here
Kbuild drives it (kbuildscan.py: one make with kexpand's compiler
wrapper, -j JOBS); on DASK_SCHEDULER's workers each builds the point and
measures its share of the files (dist.py)."""
import contextlib
import time
from pathlib import Path

from kbuild import build, series
from kbuild.util import atomic_write_json, log

from .. import results
from . import dist, kbuildscan, scanfiles
from .cache import At, Cache


def log_summary(scan, name):
    log(f"scan {name}: {scan['n_files']} files, {scan['total_bytes']:,} bytes, "
        f"{scan['scan_seconds']}s (ideal {scan['ideal_seconds']}s, ratio "
        f"{scan['overhead_ratio']})")


def remote_scan(req, case, c, at):
    """One commit on DASK_SCHEDULER's workers, in the record's shape."""
    spec = {"case": case.name, "cases_dir": str(req.cases_dir),
            "tarball": str(req.tarball), "kernel": req.kernel and str(Path(req.kernel).resolve()),
            "commit": at.commit, "compiler": at.cc, "compiler_version": at.ccver,
            "config_base": req.config_base, "config_hash": at.chash,
            "strict": req.strict_config,
            "kconfig_text": req.kconfig.read_text() if req.kconfig else None}
    t0 = time.monotonic()
    files, hosts = dist.remote_scan(c, spec, req.progress)
    files = dict(sorted(files.items()))
    return dict(scanfiles.summary(files, list(files), time.monotonic() - t0, dist.n_workers(c)),
                dask_scheduler=req.dask_scheduler, hosts=hosts,
                build={"remote": True, "full_build_s": None, "from_clean": None})


def scan_points(req, case, tree, todo, cc):
    """Scan every C file of each point's full build; cached per commit."""
    cache = Cache(req.work)
    config = build.case_config(req, case)
    out = {}
    with (dist.client(req) if req.dask_scheduler else contextlib.nullcontext()) as c:
        for name, commit in todo:
            out[name] = scan_point(req, case, tree, c, cache, config, name, commit, cc)
    return out


def scan_point(req, case, tree, c, cache, config, name, commit, cc):
    """One commit's scan (cached by commit, compiler and config): every C
    file through the analyzer, the record in results/. On DASK_SCHEDULER's
    workers when `c` is its client, else Kbuild-driven here."""
    at = At.of(commit, cc, config)
    key = cache.scan_key(at)
    sc = cache.get(key)
    req.progress.step(f"scan {name} / {cc}" + (" (cached)" if sc else ""))
    if sc is None and c is not None:
        sc = remote_scan(req, case, c, at)
        scanfiles.keep(cache, key, sc)
    elif sc is None:
        series.checkout(tree, commit)
        with req.split.timed("expansion"):
            sc = kbuildscan.scan(tree, commit, cc, config, req.jobs, req.progress)
        scanfiles.keep(cache, key, sc)
    log_summary(sc, name)
    rec = dict(sc, **results.header("kexpand.scan", case.name, name, at))
    tag = results.config_tag(req.config_base, req.kconfig)
    atomic_write_json(results.record_path(req.results, commit, cc).with_name(
        f"scan-{cc}{tag}.json"), rec)
    return rec
