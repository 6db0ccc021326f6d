"""make scan: every C file a point's full build compiled, its exact command,
-E through the analyzer, on Dask workers (bench/dist.py: a local cluster on
all cores, or DASK_SCHEDULER's; bytes, not timings, so files run in
parallel). With A and B: results/scan/<A>..<B>/ranking.csv and pair.json;
compare.py draws ranking.md and the growth plot from them."""
import hashlib
import os
import json
import shlex
import statistics
import sys
import time
from pathlib import Path

from kbuild import build, kcmd, series, trees
from kbuild.util import KexpandError, atomic_write, atomic_write_json, log, run, work_lock

from . import dist, engine, results
from .points import open_tree, pair_dir, select


def compile_commands(tree, bdir):
    """compile_commands.json from the tree's own generator, C files only."""
    out = bdir / "compile_commands.json"
    gen = tree / "scripts/clang-tools/gen_compile_commands.py"
    if gen.exists():
        run(["/usr/bin/python3", str(gen), "-d", str(bdir), "-o", str(out),
             "--log_level", "ERROR"], cwd=bdir, what="gen_compile_commands.py")
        entries = json.loads(out.read_text())
    else:   # a tree without the generator: read the .cmd files ourselves
        entries = []
        for cmd in bdir.rglob(".*.o.cmd"):
            obj = cmd.relative_to(bdir).with_name(cmd.name[1:-4])
            src = str(obj)[:-2] + ".c"
            try:
                argv = kcmd.compile_command(bdir, src)
            except KexpandError:
                continue
            entries.append({"directory": str(bdir), "file": str(tree / src),
                            "arguments": argv})
    out_entries = []
    for e in entries:
        f = Path(e["file"])
        if f.suffix != ".c":
            continue
        try:
            rel = f.resolve().relative_to(Path(tree).resolve())
        except ValueError:
            continue
        if str(rel).startswith(bdir.name + "/"):
            continue          # generated sources inside the build dir
        argv = e.get("arguments") or shlex.split(e["command"])
        out_entries.append((str(rel), argv))
    return one_per_file(out_entries)


def one_per_file(entries):
    """A C file Kbuild compiles into more than one object (6.1's defconfig
    builds lib/ctype.c and lib/cmdline.c a second time for the EFI stub,
    with other flags) is measured once, with the command of the object
    beside it (lib/ctype.o), else of the first object in sorted order:
    the records are per C file, and two results under one name would
    leave whichever came last."""
    chosen = {}
    for rel, argv in sorted(entries):
        own = kcmd.output_file(argv) == rel[:-2] + ".o"
        if rel not in chosen or (own and not chosen[rel][0]):
            chosen[rel] = (own, argv)
    return sorted((rel, argv) for rel, (_own, argv) in chosen.items())


def measure_one(bdir, rel, argv):
    """One file through the analyzer (the engine's pipe); a file that does
    not preprocess is recorded as an error, not a failed scan."""
    t0 = time.monotonic()
    try:
        a, _ = engine.analyze(kcmd.preprocess_command(argv), bdir, top=1)
    except KexpandError as e:
        if e.klass == "infra":
            raise
        return rel, {"status": "error", "seconds": round(time.monotonic() - t0, 4)}
    secs = time.monotonic() - t0
    hot = a["top"][0] if a["top"] else None
    return rel, {"status": "ok", "bytes": a["bytes"], "lines": a["lines"],
                 "longest_line_bytes": a["longest_line_bytes"],
                 "hot": {"at": f"{engine.tree_path(hot['file'])}:{hot['line']}",
                         "bytes": hot["bytes"]} if hot else None,
                 "seconds": round(secs, 4)}


def _digest(path, memo):
    k = os.path.normpath(path)
    if k not in memo:
        try:
            with open(k, "rb") as f:
                memo[k] = hashlib.sha256(f.read()).digest()
        except OSError:
            memo[k] = b"-"
    return memo[k]


# headers fixdep leaves out of the lists (scripts/basic/fixdep.c)
UNLISTED = ["include/generated/autoconf.h", "include/generated/autoksyms.h"]


def _listing(dirs, memo):
    """The names of every file under `dirs` ([(name as the command gives
    it, path)]; recursively, the last one only at its top): a header added
    where the include path would find it first, or one that a
    __has_include() looked for, changes it. Only relative names go into
    the hash: the build dir's own name must not."""
    k = ("listing",) + tuple(dirs)
    if k not in memo:
        h = hashlib.sha256()
        for i, (label, d) in enumerate(dirs):
            h.update(f"{label}\0".encode())
            for root, subdirs, names in os.walk(d):
                subdirs.sort()
                if i == len(dirs) - 1:
                    subdirs[:] = []
                for n in sorted(names):
                    h.update(os.path.relpath(os.path.join(root, n), d).encode() + b"\0")
        memo[k] = h.digest()
    return memo[k]


def input_key(bdir, rel, argv, memo):
    """What a file's -E output is a function of: its command, the length of
    the build dir's path (line markers name the working directory when -g
    is on), the config (autoconf.h and autoksyms.h, which fixdep leaves
    out), the content of every file its Kbuild dependency list names, and
    the names of the files in its -I directories and its own directory
    (a new header that would be found first, or that a __has_include()
    looks for). Equal keys, equal bytes: a file whose key was measured
    before (at another commit) is not measured again. None when the .cmd
    has no dependency list."""
    try:
        deps = kcmd.dependencies(kcmd.cmd_file(bdir, rel))
    except OSError:
        return None
    if deps is None:
        return None
    h = hashlib.sha256(json.dumps([argv, len(str(bdir))]).encode())
    for d in UNLISTED + sorted(set(deps)):
        h.update(d.encode() + b"\0" + _digest(Path(bdir) / d, memo) + b"\0")
    dirs = [(d, os.path.normpath(os.path.join(bdir, d))) for d in kcmd.include_dirs(argv)]
    src = "../" + os.path.dirname(rel)
    h.update(_listing(dirs + [(src, os.path.normpath(os.path.join(bdir, src)))], memo))
    return h.hexdigest()


def scan_build(tree, bdir, client, progress=None, known_seconds=None, reuse=None):
    """client: a Dask client (bench/dist.py) whose workers share this
    machine's work directory. known_seconds: {file: seconds} from earlier measurements of this
    commit; those files start first, longest first, so that one slow file
    (setup.c's 30 s at laight-v4) does not run alone at the end.
    reuse: (cache, compiler, compiler version): files whose inputs were
    measured before take that measurement (input_key)."""
    entries = compile_commands(tree, bdir)
    known = known_seconds or {}
    entries.sort(key=lambda e: -known.get(e[0], 0.0))
    if not entries:
        raise KexpandError(f"no compiled C files found in {bdir}: build the "
                           "point first", "build")
    n = len(entries)
    t0 = time.monotonic()
    files, keys, memo = {}, {}, {}
    if reuse:
        cache, cc, ccver = reuse
        for rel, argv in entries:
            keys[rel] = input_key(bdir, rel, argv, memo)
            hit = cache.get(cache.scanfile_key(cc, ccver, keys[rel])) if keys[rel] else None
            if hit and hit.get("status") == "ok":
                files[rel] = hit
    todo = [e for e in entries if e[0] not in files]
    workers = dist.n_workers(client)
    if progress:
        progress.say(f"  scanning {len(todo)} C files with {workers} Dask workers"
                     + (f" ({len(files)} of {n} unchanged since measured: reused)"
                        if files else ""))
    for rel, res in dist.local_map(client, bdir, todo, progress).items():
        files[rel] = res
        if reuse and keys.get(rel) and res["status"] == "ok":
            cache.put(cache.scanfile_key(cc, ccver, keys[rel]), res)
    return summary(files, [rel for rel, _ in todo], time.monotonic() - t0, workers)


def summary(files, measured, wall, workers):
    """The scan record's figures: files {rel: result}, `measured` the ones
    measured now (the rest reused), wall seconds, and the ideal time
    (measured files x their median time / workers) it is compared with."""
    ok = [v for v in files.values() if v["status"] == "ok"]
    secs = [files[rel]["seconds"] for rel in measured]
    med = statistics.median(secs) if secs else 0.0
    ideal = len(measured) * med / workers
    return {"files": files, "n_files": len(files), "n_ok": len(ok),
            "n_measured": len(measured), "n_reused": len(files) - len(measured),
            "total_bytes": sum(v["bytes"] for v in ok),
            "scan_seconds": round(wall, 2), "workers": workers,
            "median_file_seconds": round(med, 4),
            "ideal_seconds": round(ideal, 2),
            "overhead_ratio": round(wall / ideal, 3) if ideal else None}


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
            "strict": req.strict_config}
    t0 = time.monotonic()
    files, hosts = dist.remote_scan(c, spec, req.progress)
    files = dict(sorted(files.items()))
    return dict(summary(files, list(files), time.monotonic() - t0, dist.n_workers(c)),
                dask_scheduler=req.dask_scheduler, hosts=hosts,
                build={"remote": True, "full_build_s": None, "from_clean": None})


def scan_points(req, case, tree, todo, cc):
    """Scan every C file of each point's full build; cached per commit."""
    cache = engine.Cache(req.work)
    config = engine.case_config(req, case)
    out = {}
    with dist.client(req) as c:
        for name, commit in todo:
            out[name] = _scan_point(req, case, tree, c, cache, config, name, commit, cc)
    return out


def _scan_point(req, case, tree, c, cache, config, name, commit, cc):
    chash, ccver = config.hash(), build.compiler_version(cc)
    key = cache.scan_key(commit, cc, ccver, chash)
    sc = cache.get(key)
    req.progress.step(f"scan {name} / {cc}" + (" (cached)" if sc else ""))
    if sc is None and req.dask_scheduler:
        sc = remote_scan(req, case, c, commit, cc, ccver, config)
        cache.put(key, sc)
    elif sc is None:
        series.checkout(tree, commit)
        bdir = build.build_dir(tree, commit, cc)
        build.configure(tree, bdir, cc, config, seed=True, full=True)
        with req.split.timed("builds"):
            b = build.build_kernel(tree, bdir, cc, req.jobs)
        if not b.ok:
            raise KexpandError(f"full build of {name} ({cc}) failed:\n"
                               f"{b.log_tail}", "build")
        known = {}
        for f, _ in case.focus:
            e = cache.get(cache.expand_key(commit, cc, ccver, chash, f))
            if e and isinstance(e.get("analyze_seconds"), (int, float)):
                known[f] = e["analyze_seconds"]
        with req.split.timed("expansion"):
            sc = scan_build(tree, bdir, c, req.progress, known,
                            reuse=(cache, cc, ccver))
        sc["build"] = b.info
        cache.put(key, sc)
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
    if req.kconfig and req.dask_scheduler:
        raise KexpandError("KCONFIG= with DASK_SCHEDULER= is not supported yet (the "
                           "workers would need the file): scan it locally, or use CONFIG=")
    cc = req.compilers[0] if req.compilers_given else "gcc"
    with work_lock(req.work):
        tree, repo, package = open_tree(req, case)
        if req.a:
            todo = [(req.a, trees.resolve(repo, req.a)),
                    (req.b, trees.resolve(repo, req.b))]
        else:
            todo = [(n, trees.resolve(repo, n))
                    for n in select(req.points, case.names(), "point")]
        req.progress.total = len(todo)
        scans = scan_points(req, case, tree, todo, cc)
        if not req.a:
            return 0
        rows = ranking(scans[req.a], scans[req.b])
        tag = results.config_tag(req.config_base, req.kconfig)
        out = pair_dir(req, "scan", req.a, req.b).with_name(
            pair_dir(req, "scan", req.a, req.b).name + tag)
        atomic_write(out / "ranking.csv", results.csv_text(RANKING_COLUMNS, rows))
        atomic_write_json(out / "pair.json", {
            "a": {"ref": req.a, "commit": todo[0][1]},
            "b": {"ref": req.b, "commit": todo[1][1]}, "compiler": cc,
            "config": str(req.kconfig or req.config_base), "record": f"scan-{cc}{tag}",
            "package": package, "top": req.top, "focus": [f for f, _ in case.focus],
            "command": shlex.join(sys.argv)})
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
