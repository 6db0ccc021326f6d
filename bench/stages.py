"""The commands that measure: prepare, bench (boots, expansion, times,
conformance), boot, compare and analyzer-bench. Each takes the Request
and returns an exit code; reports are drawn afterwards by compare.py
(the Makefile runs it), never from here."""
import shlex
import subprocess
import sys
import time

from kbuild import boot, build, conformance, kcmd, series, trees
from kbuild.util import KexpandError, atomic_write_json, log, read_json, work_lock

from . import engine, lines, results, timing
from .points import (check_file_names, check_files_exist, make_command, measure_commits, open_tree,
                     pair_dir, require_tools, select, write_series_index)


def cmd_prepare(req, case):
    with work_lock(req.work):
        commits, failures, version = series.prepare(case, req.work, req.tarball,
                                                    req.progress)
    for p in case.points:
        c = commits.get(p.name)
        print(f"{p.name:24} {c[:12] if c else 'FAILED: ' + failures[p.name]}")
    return 2 if failures else 0


def prepared_points(req, case, names):
    """Prepare the tree; [(name, commit)] of the points that applied, the
    package label, commits, and 2 if some did not apply."""
    commits, failures, version = series.prepare(case, req.work, req.tarball,
                                                req.progress)
    todo, worst = [], 0
    for name in names:
        if name in commits:
            todo.append((name, commits[name]))
        else:
            log(f"point {name}: not measured: {failures.get(name)}")
            worst = 2
    return todo, f"{series.SOURCE_PACKAGE} {version}", commits, worst


def boot_points(req, case, tree, todo):
    """Boot-check each (name, commit) with gcc; results/<commit12>/boot.json.
    Returns the worst exit code (4 boot, 3 build, 5 infra). Only results
    of the code under test are cached; an infra error is retried next run."""
    cache = engine.Cache(req.work)
    config = engine.case_config(req, case)
    chash, ccver, qver = config.hash(), build.compiler_version("gcc"), boot.qemu_version()
    worst = 0
    for name, commit in todo:
        promises = case.point(name).promises_text() if name in case.names() else ""
        key = cache.boot_key(commit, ccver, chash, boot.inputs_hash(), qver,
                             promises, req.boot_timeout)
        r = cache.get(key)
        req.progress.step(f"boot {name}" + (" (cached)" if r else ""))
        if r is None:
            series.checkout(tree, commit)
            bdir = build.build_dir(tree, commit, "gcc")
            # the kernel starts from a copy of the previous point's build
            # dir (Kbuild rebuilds what the checkout changed: about 650 of
            # 770 objects after a minmax.h change); kernel_build_from says so
            build.configure(tree, bdir, "gcc", config, seed=True, full=True)
            t0 = time.monotonic()
            r = boot.boot_point(tree, bdir, promises, req.work / "boot" / commit[:12],
                                req.boot_timeout, req.jobs)
            if r["status"] != "build-failure":
                engine.note_full_build(bdir)
            req.split.add("builds", r.get("kernel_build_s", 0.0))
            req.split.add("boots", time.monotonic() - t0 - r.get("kernel_build_s", 0.0))
            if r["status"] != "infra-error":
                cache.put(key, r)
        req.progress.say(
            f"  {name}: {r['status']}, {r.get('tests_passed', 0)} passed, "
            f"{r.get('tests_failed', 0)} failed, {r.get('tests_skipped', 0)} skipped"
            + (f", /init after {r['boot_s']}s" if r.get("boot_s") else ""))
        rec = dict(r, **results.header("kexpand.boot", case.name, name, commit,
                                       "gcc", ccver, chash))
        atomic_write_json(results.record_path(req.results, commit, "gcc")
                          .with_name("boot.json"), rec)
        if r["status"] != "booted":
            worst = max(worst, {"build": 3, "infra": 5}.get(r.get("class"), 4))
    return worst


def conformance_points(req, case, tree, todo):
    """Compile every conformance snippet at each point (gcc)."""
    snippets = conformance.load_snippets(case.dir)
    if not snippets:
        return
    cache = engine.Cache(req.work)
    chash, ccver = engine.case_config(req, case).hash(), build.compiler_version("gcc")
    focus = [f for f, _ in case.focus]
    for name, commit in todo:
        key = {s["name"]: cache.conformance_key(commit, ccver, chash, s["hash"])
               for s in snippets}
        got = {n: cache.get(k) for n, k in key.items()}
        missing = [s for s in snippets if got[s["name"]] is None]
        if missing:
            bdir = build.build_dir(tree, commit, "gcc")
            template = conformance.template_command(bdir, focus)
            if template is None:
                log(f"conformance at {name}: no compiled focus file to take "
                    "flags from; skipped")
                continue
            series.checkout(tree, commit)
            req.progress.say(f"  conformance: {len(missing)} snippets at {name}")
            for s in missing:
                got[s["name"]] = conformance.compile_snippet(bdir, template, s["path"])
                cache.put(key[s["name"]], got[s["name"]])
        rec = results.header("kexpand.conformance", case.name, name, commit,
                             "gcc", ccver, chash)
        rec.update({"results": got, "snippets": [
            {k: sn[k] for k in ("name", "title", "expect")} for sn in snippets]})
        atomic_write_json(results.record_path(req.results, commit, "gcc")
                          .with_name("conformance.json"), rec)


def check_controls(index, records):
    """A control point must expand byte-for-byte like its parent. Returns
    the mismatches (empty: every control agrees)."""
    by = {(r["commit"], r["compiler"]): r for r in records}
    commit = {p["name"]: p["commit"] for p in index["points"]}
    bad = []
    for p in (p for p in index["points"] if p["control"]):
        for cc in sorted({cc for c, cc in by if c == p["commit"]}):
            rec, par = by[(p["commit"], cc)], by.get((commit.get(p["parent"]), cc))
            if not par:
                continue
            mine = [f"{p['name']} vs {p['parent']} ({cc}) {f}: "
                    f"{e.get('expanded_bytes')} != "
                    f"{par['files'].get(f, {}).get('expanded_bytes')}"
                    for f, e in rec["files"].items()
                    if e.get("expanded_bytes") != par["files"].get(f, {}).get("expanded_bytes")]
            if not mine:
                log(f"control {p['name']}: expansion equals {p['parent']} "
                    f"({cc}, {len(rec['files'])} files)")
            bad += mine
    for b in bad:
        log(f"CONTROL MISMATCH: {b}")
    return bad


def write_control_pairs(req, case, commits, files, package, names, by_side):
    """The built-in A/A check: each control point against its parent as a
    compare pair (results/compare/<parent>..<control>/pair.json), drawn by
    compare.py with the same rule as `make compare`. Byte-identical code:
    every time difference it reports is noise. The pair keeps the two
    points' timings from this bench's interleaved runs (a later compare
    that times one of them again does not mix into it)."""
    for p in case.points:
        if not (p.control and p.name in commits and p.parent in commits):
            continue
        a, b = commits[p.parent], commits[p.name]
        timings = {}
        if p.parent in names and p.name in names and not req.no_time:
            ia, ib = names.index(p.parent), names.index(p.name)
            timings = pair_timings({cc: (recs[ia], recs[ib])
                                    for cc, recs in by_side.items()}, files)
        atomic_write_json(pair_dir(req, "compare", p.parent, p.name) / "pair.json", {
            "a": {"ref": p.parent, "commit": a, "subject": f"series point {p.parent}"},
            "b": {"ref": p.name, "commit": b, "subject": f"control point {p.name}: "
                  "expands byte for byte like its parent (an A/A check)"},
            "tree": str(req.work / "tree"), "package": package, "files": files,
            "compilers": req.compilers, "config": engine.case_config(req, case).describe(),
            "command": shlex.join(sys.argv), "aa_check": True, "timings": timings,
            "make_command": f"make compare A={p.parent} B={p.name}"})


def series_line(tree, case, todo):
    """Every commit on the first-parent line from the first to the last
    measured point that is not a control: [(label, commit, subject, is_point)].
    A commit between points is labelled from the next point ("laight-v4~2")."""
    at = dict(todo)
    depth = lambda n: int(series.git(tree, "rev-list", "--count", at[n]).stdout)  # noqa: E731
    line = sorted((n for n in case.names() if n in at and not case.point(n).control),
                  key=depth)
    if len(line) < 2:
        return []
    revs = series.git(tree, "rev-list", "--first-parent", "--reverse",
                      f"{at[line[0]]}..{at[line[-1]]}").stdout.split()
    names = {at[n]: n for n in line}
    out, pending = [(line[0], at[line[0]], trees.subject(tree, at[line[0]]), True)], []
    for c in revs:
        if c in names:
            n = len(pending)
            out += [(f"{names[c]}~{n - k}", pc, trees.subject(tree, pc), False)
                    for k, pc in enumerate(pending)]
            out.append((names[c], c, trees.subject(tree, c), True))
            pending = []
        else:
            pending.append(c)
    return out


def measure_series_line(req, case, tree, todo, files, package):
    """gcc expansion (and attribution) at every commit between the points,
    so the series plots show each patch, not only the named points."""
    line = series_line(tree, case, todo)
    steps = [(n, c) for n, c, _, point in line if not point]
    if steps:
        req.progress.say(f"every commit between the points: {len(steps)} more (gcc)")
        measure_commits(req, case, tree, steps, files, package, timed=False,
                        attribute=not req.no_macros, compilers=["gcc"])
    return [{"name": n, "commit": c, "subject": s, "point": point}
            for n, c, s, point in line]


def print_table(rows):
    if not rows:
        return
    print(f"{'point':22} {'cc':5} {'file':22} {'bytes':>10} {'longest':>10} "
          f"{'-E median':>10} {'-c median':>10} {'RSS kB':>8}")
    for r in rows:
        b = r["expanded_bytes"]
        t = lambda k: f"{r[k]:.3f}s" if r[k] != "" else "-"  # noqa: E731
        print(f"{r['point']:22} {r['compiler']:5} {r['file'][-22:]:22} "
              f"{b if b != '' else r['status']:>10} {r['longest_line_bytes']:>10} "
              f"{t('e_time_median_s'):>10} {t('c_time_median_s'):>10} "
              f"{r['peak_rss_kb']:>8}")


def cmd_bench(req, case):
    names = select(req.points, case.names(), "point")
    focus = [f for f, _ in case.focus]
    files = req.files or focus
    check_file_names(files, focus)
    require_tools(req.compilers, not req.no_time, not req.no_boot)
    with work_lock(req.work):
        req.progress.total = len(names) * (len(req.compilers) + (not req.no_boot))
        todo, package, commits, worst = prepared_points(req, case, names)
        tree = req.work / "tree"
        check_files_exist(tree, files, focus)
        if not req.no_boot:
            # first, so that each point's full build starts from a clean
            # build directory and its time is a clean-build time
            worst = max(worst, boot_points(req, case, tree, todo))
        w, _, by_side = measure_commits(req, case, tree, todo, files, package,
                                        timed=not req.no_time,
                                        attribute=not req.no_macros)
        worst = max(worst, w)
        # the whole series (no POINTS=): every commit between the points too
        line = [] if req.points else measure_series_line(req, case, tree, todo,
                                                         files, package)
        conformance_points(req, case, tree, todo)
        index = write_series_index(req, case, commits, package, files, line)
        records = results.load_records(req.results)
        rows = results.write_summary(req.results, index, records)
        results.write_boot_csv(req.results, index)
        if check_controls(index, records):
            worst = max(worst, 3)
        write_control_pairs(req, case, commits, files, package,
                            [n for n, _ in todo], by_side)
        write_last_bench(req, names, files, worst)
    print_table(rows)
    return worst


def write_last_bench(req, names, files, worst):
    """results/last-bench.json: this run's wall-time split; the split of
    the last run that measured something (cold) is kept beside it."""
    total, parts = req.split.report()
    path = req.results / "last-bench.json"
    old = read_json(path) if path.exists() else None
    run = {"command": shlex.join(sys.argv), "total_s": round(total, 1),
           "split_s": {k: round(v, 1) for k, v in parts.items()},
           "compilers": req.compilers, "points": names, "files": files,
           "exit_code": worst}
    measured = sum(v for k, v in parts.items() if k != "everything else") > 1.0
    last_cold = run if measured else (old or {}).get("last_cold") or \
        ((old or {}) if (old or {}).get("total_s", 0) > 60 else None)
    atomic_write_json(path, dict(run, last_cold=last_cold))
    req.progress.say(f"done in {total:.0f}s; records in {req.results}")
    print("wall time: " + ", ".join(f"{k} {v:.0f}s ({v / total:.0%})"
                                    for k, v in parts.items()), file=sys.stderr)


def cmd_boot(req, case):
    """Boot checks and the conformance matrix only."""
    names = select(req.points, case.names(), "point")
    require_tools(["gcc"], False, True)
    with work_lock(req.work):
        req.progress.total = len(names)
        todo, package, commits, worst = prepared_points(req, case, names)
        tree = req.work / "tree"
        worst = max(worst, boot_points(req, case, tree, todo))
        conformance_points(req, case, tree, todo)
        old = results.load_series(req.results, case.name)
        index = write_series_index(req, case, commits, package,
                                   (old or {}).get("files", []))
        results.write_boot_csv(req.results, index)
    return worst


def cmd_compare(req, case):
    """Measure A and B (any two commits) into records and pair.json; the
    report is drawn by `compare.py --pair` (the Makefile runs it)."""
    if not req.a or not req.b:
        raise KexpandError("give both refs: make compare A=<ref> B=<ref> "
                           f"(series points: {', '.join(case.names())})")
    focus = [f for f, _ in case.focus]
    files = req.files or focus
    check_file_names(files, focus)
    require_tools(req.compilers, not req.no_time, False)
    with work_lock(req.work):
        req.progress.total = 2 * len(req.compilers)
        tree, repo, package = open_tree(req, case)
        ca, cb = trees.resolve(repo, req.a), trees.resolve(repo, req.b)
        for c in (ca, cb):
            check_files_exist(tree, files, focus, commit=c)
        worst, recs, by_side = measure_commits(
            req, case, tree, [(req.a, ca), (req.b, cb)], files, package,
            timed=not req.no_time, attribute=not req.no_macros)
        out = pair_dir(req, "compare", req.a, req.b)
        write_changed_lines(req, case, tree, recs, ca, cb, files, out)
        atomic_write_json(out / "pair.json", {
            "a": {"ref": req.a, "commit": ca, "subject": trees.subject(repo, ca)},
            "b": {"ref": req.b, "commit": cb, "subject": trees.subject(repo, cb)},
            "tree": str(repo), "package": package, "files": files,
            "compilers": req.compilers, "config": engine.case_config(req, case).describe(),
            "command": shlex.join(sys.argv), "make_command": make_command(req),
            "timings": pair_timings(by_side, files)})
    print(out)
    return worst


def pair_timings(by_side, files):
    """The compile cost of A and B as measured together (interleaved) for
    this compare: {compiler: {file: {"a": {time_E, time_c}, "b": ...}}}.
    Kept in pair.json, because with A=B both sides are one commit (one
    record) and still two sets of runs."""
    out = {}
    for cc, (ra, rb) in by_side.items():
        out[cc] = {f: {side: {k: r["files"][f][k] for k in ("time_E", "time_c")}
                       for side, r in (("a", ra), ("b", rb))}
                   for f in files
                   if all(r["files"].get(f, {}).get("time_c") for r in (ra, rb))}
    return out


def write_changed_lines(req, case, tree, recs, ca, cb, files, out):
    """lines.json: the source lines whose bytes changed most from A to B
    (first compiler, the files measured ok at both)."""
    cc = req.compilers[0]
    ok = [f for f in files if all(recs[(c, cc)]["files"][f]["status"] == "ok"
                                  for c in (ca, cb))]
    if ca == cb or not ok:
        rows = []
    else:
        req.progress.say(f"  matching source lines of {len(ok)} files across A and B ({cc})")
        with req.split.timed("expansion"):
            rows = lines.changed_lines(req, case, tree, ca, cb, cc, ok)
    atomic_write_json(out / "lines.json", {"compiler": cc, "files": ok, "lines": rows})


def cmd_analyzer_bench(req, case, point="laight-v4", file="arch/x86/xen/setup.c"):
    """Throughput of kx-analyze on a file in the page cache, and its cost
    relative to the -E it analyzes: setup.c at laight-v4 (gcc)."""
    with work_lock(req.work):
        todo, _pkg, commits, _w = prepared_points(req, case, [point])
        tree, commit = req.work / "tree", commits[point]
        bdir = build.build_dir(tree, commit, "gcc")
        series.checkout(tree, commit)
        build.configure(tree, bdir, "gcc", engine.case_config(req, case))
        b = build.build(tree, bdir, "gcc", [kcmd.obj_of(file)], req.jobs)
        if not b.ok:
            raise KexpandError(f"building {file} failed:\n{b.log_tail}", "build")
        argv = kcmd.compile_command(bdir, file)
        sample = req.work / "scratch" / "analyzer-sample.i"
        sample.parent.mkdir(parents=True, exist_ok=True)
        with open(sample, "wb") as out:
            subprocess.run(kcmd.preprocess_command(argv), cwd=bdir, stdout=out,
                           check=True)
        size = sample.stat().st_size
        q = shlex.quote(str(sample))
        ana = timing.hyperfine(["sh", "-c", f"{engine.ANALYZER} -n 5 < {q}"],
                               req.work, runs=req.repeat, warmup=2)
        cat = timing.hyperfine(["sh", "-c", f"cat {q} > /dev/null"],
                               req.work, runs=req.repeat, warmup=2)
        pre = timing.hyperfine(kcmd.preprocess_command(argv, "/dev/null"), bdir,
                               runs=2, warmup=0)
        sample.unlink()
    out = {"file": file, "point": point, "commit": commit,
           "bytes": size, "analyzer_median_s": ana["median_s"],
           "analyzer_mb_per_s": round(size / ana["median_s"] / 1e6, 1),
           "cat_median_s": cat["median_s"],
           "preprocess_median_s": pre["median_s"],
           "analysis_over_preprocess": round(ana["median_s"] / pre["median_s"], 5),
           "analyzer": ana, "cat": cat, "preprocess": pre,
           "cpu": results.cpu_model(), "command": shlex.join(sys.argv)}
    atomic_write_json(req.results / "analyzer.json", out)
    print(f"kx-analyze: {size:,} bytes in {ana['median_s']:.3f} s (median of "
          f"{ana['runs']}, ± {ana['stddev_s']:.3f}) = {out['analyzer_mb_per_s']} MB/s; "
          f"cat: {cat['median_s']:.3f} s; gcc -E of the same file: "
          f"{pre['median_s']:.1f} s; analysis adds "
          f"{out['analysis_over_preprocess']:.2%} to -E")
    return 0
