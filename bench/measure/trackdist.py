"""make track on Dask (DASK_SCHEDULER=): each commit is one task, measured
on whichever worker takes it, in that worker's own work directory: the
worker makes its own clone of KERNEL= (a path it can read) or prepares
the packaged tree, checks out the commit, builds the focus objects and
measures them (expansion, longest line, -c instructions) as a local run
does (point.measure_point, one build dir per worker rolling through the
commits it gets). A worker whose compiler version or instruction counter
differs from the client's is refused (never mixed); bytes are exact and
counts under one counter count the same compiler binary, so the values
are the same as a local run's. Task keys carry the commit, compiler
version, config hash and files, so a duplicate submission merges."""
import hashlib
import os
import platform
from pathlib import Path

from kbuild import build, proc, sandbox, settings, workdir
from kbuild.util import KexpandError, log, read_json, atomic_write_json

from . import dist, icount
from .point import measure_point

# per worker process: the build dir each compiler last built in
_ROLLING = {}


def _tag(*parts):
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:12]


def commit_task(spec, commit):
    """One commit on a worker; errors come back as values (a pickled
    KexpandError would lose its exit class)."""
    try:
        proc.set_limits(**spec["limits"])
        return dict(_commit(spec, commit), host=platform.node())
    except KexpandError as e:
        return {"error": f"worker {platform.node()}: {e}", "klass": e.klass}


def _commit(spec, commit):
    sandbox.check()             # a worker builds in its sandbox or not at all
    work = settings.work_dir(os.environ)
    with workdir.lock(work):
        case, tree = dist.worker_tree(spec, work, commit)
        req = settings.Request(
            "track", case=spec["case"], work=work, results=work / "results-unused",
            jobs=os.cpu_count() or 1, icount_cap=spec["icount_cap"],
            config_base=spec["config_base"], strict_config=spec["strict"],
            kconfig=dist.config_of(spec, case, work).kconfig
            if spec["kconfig_text"] is not None else None)
        config = build.case_config(req, case)
        if config.hash() != spec["config_hash"]:
            raise KexpandError("refused: its cases/ give another config than the "
                               "client's", "infra")
        out = {"values": {}, "setup": {"config_hash": config.hash(), "host": platform.node()}}
        src, why = icount.source()
        counter = icount.identity(src) if src else None
        if counter != spec["counter"]:
            raise KexpandError(f"refused: it counts instructions with {counter or why}, "
                               f"the track with {spec['counter']}", "infra")
        out["setup"]["counter"] = counter
        state_file = workdir.track_state(work, "worker")
        state = read_json(state_file) if state_file.exists() else None
        state = state if isinstance(state, dict) else {}
        for cc, ccver in spec["compilers"].items():
            mine = build.compiler_version(cc)
            if mine != ccver:
                raise KexpandError(f"refused: it has {mine}, the track measures with "
                                   f"{ccver}", "infra")
            prev = state.get(cc)
            rec = measure_point(req, case, tree, commit[:12], commit, cc, spec["files"],
                                count=True, count_kinds=("time_c",),
                                move_from=tree / prev if prev else None)
            if rec.get("build"):
                state[cc] = build.build_dir(tree, commit, cc).name
                atomic_write_json(state_file, state)
            out["setup"][cc] = ccver
            out["values"][cc] = {f: values_of(rec["files"][f]) for f in spec["files"]}
        return out


def values_of(e):
    """A file entry of a record -> the track's values."""
    if e.get("status") != "ok":
        return {"bytes": None, "longest_line": None, "instructions_c": None,
                "status": e.get("status") or "error"}
    cnt = (e.get("counts") or {}).get("time_c") or {}
    return {"bytes": e["expanded_bytes"], "longest_line": e["longest_line_bytes"],
            "instructions_c": cnt.get("instructions"), "status": "ok",
            **({"instructions_note": cnt["instructions_note"]}
               if cnt.get("instructions_note") else {})}


def measure(req, case, commits, files, ccs):
    """{commit: {"setup", "values"}} measured on DASK_SCHEDULER's workers."""
    config = build.case_config(req, case)
    src, why = icount.source()
    spec = {"case": case.name, "cases_dir": str(req.cases_dir), "tarball": str(req.tarball),
            "kernel": req.kernel and str(Path(req.kernel).expanduser().resolve()),
            "compilers": {cc: build.compiler_version(cc) for cc in ccs}, "files": files,
            "config_base": req.config_base, "config_hash": config.hash(),
            "kconfig_text": req.kconfig.read_text() if req.kconfig else None,
            "strict": req.strict_config, "icount_cap": req.icount_cap,
            "counter": icount.identity(src) if src else None,
            "limits": dict(proc.LIMITS)}
    out = {}
    if not commits:
        return out
    with dist.client(req) as c:
        dist.wait_workers(c)
        key = _tag(spec["compilers"], spec["config_hash"], *files)
        futs = {c.submit(commit_task, spec, x["commit"], pure=False,
                         key=f"kx-track-{key}-{x['commit'][:16]}"): x["commit"]
                for x in commits}
        req.progress.say(f"  measuring {len(commits)} commits on {dist.n_workers(c)} Dask "
                         f"workers ({c.scheduler.address})")
        hosts = {}
        for i, (fut, res) in enumerate(dist.results_of(c, futs)):
            if "error" in res:
                raise KexpandError(res["error"], res["klass"])
            out[futs[fut]] = {"setup": res["setup"], "values": res["values"]}
            hosts[res["host"]] = hosts.get(res["host"], 0) + 1
            req.progress.say(f"  [{i + 1}/{len(commits)}] {futs[fut][:12]} on {res['host']}")
        log(f"commits measured per host: {hosts}")
    return out
