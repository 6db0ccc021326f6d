"""make compare A=<ref> B=<ref>: both refs through the same engine into
records and results/compare/<A>..<B>/pair.json (with the changed lines);
the report is drawn by report.py --pair afterwards."""
import shlex
import sys

from kbuild import build, trees, workdir
from kbuild.util import KexpandError, atomic_write_json

from .. import results
from ..measure.changed_lines import write_changed_lines
from ..measure.point import measure_commits, pair_timings
from .inputs import check_file_names, make_command, open_tree, require_tools


def cmd_compare(req, case):
    """Measure A and B (any two commits) into records and pair.json; the
    report is drawn by `report.py --pair` (the Makefile runs it)."""
    if not req.a or not req.b:
        raise KexpandError("give both refs: make compare A=<ref> B=<ref> "
                           f"(series points: {', '.join(case.names())})")
    focus = [f for f, _ in case.focus]
    files = req.files or focus
    check_file_names(files, focus)
    require_tools(req.compilers, not req.no_time, False)
    # where the report goes, and that it is this run's to write, before
    # any measuring: a report of another identity is never overwritten
    out = results.report_dir(req, "compare", req.a, req.b)
    results.claim_dir(out, results.identity(req))
    with workdir.lock(req.work):
        req.progress.total = 2 * len(req.compilers)
        tree, repo, package, (ca, cb) = open_tree(req, case, [req.a, req.b],
                                                  files, focus)
        worst, recs, by_side = measure_commits(
            req, case, tree, [(req.a, ca), (req.b, cb)], files, package,
            timed=not req.no_time, attribute=not req.no_macros)
        write_changed_lines(req, case, tree, recs, ca, cb, files, out)
        atomic_write_json(out / "pair.json", {
            "a": {"ref": req.a, "commit": ca, "subject": trees.subject(repo, ca)},
            "b": {"ref": req.b, "commit": cb, "subject": trees.subject(repo, cb)},
            "tree": str(repo), "package": package, "files": files,
            "compilers": req.compilers, "config": build.case_config(req, case).describe(),
            "command": shlex.join(sys.argv), "make_command": make_command(req),
            "timings": pair_timings(by_side, files), "identity": results.identity(req)})
    print(out)
    return worst
