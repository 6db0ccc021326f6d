"""make boot: each point's kernel booted in QEMU with the KUnit module,
and the conformance snippets compiled (measure/bootpoints.py)."""
from kbuild import workdir

from .. import results
from ..measure.bootpoints import boot_points, conformance_points
from .inputs import prepared_points, require_tools, select, write_series_index


def cmd_boot(req, case):
    """Boot checks and the conformance matrix only."""
    names = select(req.points, case.names(), "point")
    require_tools(["gcc"], False, True)
    with workdir.lock(req.work):
        req.progress.total = len(names)
        todo, package, commits, worst = prepared_points(req, case, names)
        tree = workdir.tree(req.work)
        worst = max(worst, boot_points(req, case, tree, todo))
        conformance_points(req, case, tree, todo)
        old = results.load_series(req.results, case.name)
        index = write_series_index(req, case, commits, package,
                                   (old or {}).get("files", []))
        results.write_boot_csv(req.results, index)
    return worst
