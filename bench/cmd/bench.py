"""make bench: the whole story on the packaged tree. Prepare the points,
boot each, measure every point and focus file (expansion, macros,
instruction counts, interleaved times) and every commit between the
points, compile the conformance snippets, write results/ and the built-in
A/A check with the noise it measured (results/noise.json)."""
import shlex
import sys

from kbuild import build, series, trees, workdir
from kbuild.util import EXIT_BUILD, atomic_write_json, log, read_json

from .. import results, verdict
from ..measure.bootpoints import boot_points, conformance_points
from ..measure.point import measure_commits, pair_timings
from .inputs import (check_file_names, check_files_exist, prepared_points, require_tools,
                     select, write_series_index)


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
    report.py with the same rule as `make compare`. Byte-identical code:
    every time difference it reports is noise. The pair keeps the two
    points' timings from this bench's interleaved runs (a later compare
    that times one of them again does not mix into it). Returns the pairs
    whose two points this bench timed: what the A/A check measured."""
    timed = []
    for p in case.points:
        if not (p.control and p.name in commits and p.parent in commits):
            continue
        a, b = commits[p.parent], commits[p.name]
        timings = {}
        if p.parent in names and p.name in names and not req.no_time:
            ia, ib = names.index(p.parent), names.index(p.name)
            timings = pair_timings({cc: (recs[ia], recs[ib])
                                    for cc, recs in by_side.items()}, files)
        out = results.pair_dir(req.results, "compare", p.parent, p.name)
        pair = {
            "a": {"ref": p.parent, "commit": a, "subject": f"series point {p.parent}"},
            "b": {"ref": p.name, "commit": b, "subject": f"control point {p.name}: "
                  "expands byte for byte like its parent (an A/A check)"},
            "tree": str(workdir.tree(req.work)), "package": package, "files": files,
            "compilers": req.compilers, "config": build.case_config(req, case).describe(),
            "command": shlex.join(sys.argv), "aa_check": True, "timings": timings,
            "make_command": f"make compare A={p.parent} B={p.name}",
            "identity": {"aa_check": True}}
        atomic_write_json(out / "pair.json", pair)
        if timings:
            timed.append((out, pair))
    return timed


def write_noise(req, timed):
    """results/noise.json from the A/A check this bench measured (judged on
    the floors): every later verdict takes its thresholds from it, whatever
    order the reports are drawn in. Kept when this bench timed no A/A pair."""
    records = results.load_records(req.results)
    for out, pair in timed:
        n = verdict.write_noise(req.results, out.name,
                                verdict.pair_rows(pair, records))
        log(f"A/A check {out.name}: {n['flagged']} of {n['rows']} rows flagged; "
            f"largest |B/A - 1|: instructions {n['instructions']}, CPU time "
            f"{n['cpu_time']}, wall time {n['wall_time']} (results/noise.json)")


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
        req.progress.total += len(steps)        # (a step each: [n/total] stays true)
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
    with workdir.lock(req.work):
        req.progress.total = len(names) * (len(req.compilers) + (not req.no_boot))
        todo, package, commits, worst = prepared_points(req, case, names)
        tree = workdir.tree(req.work)
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
            worst = max(worst, EXIT_BUILD)
        write_noise(req, write_control_pairs(req, case, commits, files, package,
                                             [n for n, _ in todo], by_side))
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
