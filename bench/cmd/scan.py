"""make scan: every C file a point's build compiles, its exact command,
-E through the analyzer: here, Kbuild drives it (measure/kbuildscan.py:
one make with kexpand's compiler wrapper, -j JOBS); on DASK_SCHEDULER's
workers, each builds the point and measures its share of the files
(measure/dist.py). With A and B:
results/scan/<A>..<B>/ranking.csv and pair.json; compare.py draws
ranking.md and the growth plot from them."""
import contextlib
import shlex
import sys
import time
from pathlib import Path

from kbuild import build, series, workdir
from kbuild.util import KexpandError, atomic_write, atomic_write_json, log

from .. import results
from ..measure import dist, kbuildscan, scanfiles
from ..measure.cache import Cache
from .inputs import open_tree, select


def ranking(scan_a, scan_b):
    """Rows file, bytes_a, bytes_b, growth_bytes, growth_ratio, sorted by
    growth_bytes (largest growth first); files in both scans only."""
    rows = []
    for f, b in scan_b["files"].items():
        a = scan_a["files"].get(f)
        if not a or a["status"] != "ok" or b["status"] != "ok":
            continue
        rows.append({"file": f, "bytes_a": a["bytes"], "bytes_b": b["bytes"],
                     "growth_bytes": b["bytes"] - a["bytes"],
                     "growth_ratio": round(b["bytes"] / a["bytes"], 4) if a["bytes"] else None,
                     "hot_b": b.get("hot"), "hot_a": a.get("hot")})
    rows.sort(key=lambda r: (-r["growth_bytes"], r["file"]))
    return rows


def log_summary(scan, name):
    log(f"scan {name}: {scan['n_files']} files, {scan['total_bytes']:,} bytes, "
        f"{scan['scan_seconds']}s (ideal {scan['ideal_seconds']}s, ratio "
        f"{scan['overhead_ratio']})")


def remote_scan(req, case, c, commit, cc, ccver, config):
    """One commit on DASK_SCHEDULER's workers, in the record's shape."""
    spec = {"case": case.name, "cases_dir": str(req.cases_dir),
            "tarball": str(req.tarball), "kernel": req.kernel and str(Path(req.kernel).resolve()),
            "commit": commit, "compiler": cc, "compiler_version": ccver,
            "config_base": req.config_base, "config_hash": config.hash(),
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
    chash, ccver = config.hash(), build.compiler_version(cc)
    key = cache.scan_key(commit, cc, ccver, chash)
    sc = cache.get(key)
    req.progress.step(f"scan {name} / {cc}" + (" (cached)" if sc else ""))
    if sc is None and c is not None:
        sc = remote_scan(req, case, c, commit, cc, ccver, config)
        scanfiles.keep(cache, key, sc)
    elif sc is None:
        series.checkout(tree, commit)
        with req.split.timed("expansion"):
            sc = kbuildscan.scan(tree, commit, cc, config, req.jobs, req.progress)
        scanfiles.keep(cache, key, sc)
    log_summary(sc, name)
    rec = dict(sc, **results.header("kexpand.scan", case.name, name, commit,
                                    cc, ccver, chash))
    tag = results.config_tag(req.config_base, req.kconfig)
    atomic_write_json(results.record_path(req.results, commit, cc).with_name(
        f"scan-{cc}{tag}.json"), rec)
    return rec


RANKING_COLUMNS = ["file", "bytes_a", "bytes_b", "growth_bytes", "growth_ratio"]


def cmd_scan(req, case):
    """make scan [A= B=]: scan points; with A and B, rank files by growth."""
    if bool(req.a) != bool(req.b):
        raise KexpandError("give both refs: make scan A=<ref> B=<ref> (or "
                           "neither, to scan every point)")
    cc = req.compilers[0] if req.compilers_given else "gcc"
    with workdir.lock(req.work):
        if req.a:
            results.claim_dir(results.report_dir(req, "scan", req.a, req.b),
                              results.identity(req, files=False))
        names = [req.a, req.b] if req.a else select(req.points, case.names(), "point")
        tree, repo, package, commits = open_tree(req, case, names)
        todo = list(zip(names, commits))
        req.progress.total = len(todo)
        scans = scan_points(req, case, tree, todo, cc)
        if not req.a:
            return 0
        rows = ranking(scans[req.a], scans[req.b])
        out = results.report_dir(req, "scan", req.a, req.b)
        atomic_write(out / "ranking.csv", results.csv_text(RANKING_COLUMNS, rows))
        atomic_write_json(out / "pair.json", {
            "a": {"ref": req.a, "commit": todo[0][1]},
            "b": {"ref": req.b, "commit": todo[1][1]}, "compiler": cc,
            "config": str(req.kconfig or req.config_base),
            "record": f"scan-{cc}{results.config_tag(req.config_base, req.kconfig)}",
            "package": package, "top": req.top, "focus": [f for f, _ in case.focus],
            "command": shlex.join(sys.argv), "identity": results.identity(req, files=False)})
        if req.write_focus:
            write_focus_list(req, rows, cc)
    print(out)
    return 0


def write_focus_list(req, rows, cc):
    lines = [f"# Top {req.top} files by expansion growth, {req.a} -> {req.b} "
             f"({cc}), written by make scan"]
    for r in rows[:req.top]:
        lines.append(f"{r['file']:40} # +{r['growth_bytes']:,} bytes "
                     f"({r['growth_ratio']}x)")
    atomic_write(Path(req.write_focus).expanduser(), "\n".join(lines) + "\n")
    log(f"wrote focus list {req.write_focus}")
