"""make prepare: unpack the packaged tree and apply the case's series,
one commit per patch and a tag per point."""
from kbuild import build, series, workdir
from kbuild.util import atomic_write_json
from kbuild.util import EXIT_USER, log


def cmd_prepare(req, case):
    with workdir.lock(req.work):
        commits, failures, version = series.prepare(case, req.work, req.tarball,
                                                    req.progress)
    for p in case.points:
        c = commits.get(p.name)
        print(f"{p.name:24} {c[:12] if c else 'FAILED: ' + failures[p.name]}")
    return EXIT_USER if failures else 0


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


def write_series_index(req, case, commits, package, files, line=()):
    """results/series-<case>.json: the points in order, the files, and
    `line`: every commit from the first point to the last (gcc)."""
    focus = [f for f, _ in case.focus]
    index = {"case": case.name, "package": package,
             "config": build.case_config(req, case).describe(),
             "files": focus + [f for f in files if f not in focus],
             "focus": dict(case.focus), "points": [], "line": list(line)}
    for p in case.points:
        if p.name in commits:
            index["points"].append({
                "name": p.name, "commit": commits[p.name],
                "description": p.description, "parent": p.parent,
                "control": p.control})
    atomic_write_json(req.results / f"series-{case.name}.json", index)
    return index
