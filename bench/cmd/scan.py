"""make scan: every C file a point's build compiles, its exact command,
-E through the analyzer (measure/scanpoint.py). With A and B:
results/scan/<A>..<B>/ranking.csv, pair.json and headers-files.json (the
files of the headers its headers page shows, from the cache's per-file
records); report.py draws ranking.md, the plots and the pages from them."""
import shlex
import sys
from pathlib import Path

from kbuild import workdir
from kbuild.util import KexpandError, atomic_write, atomic_write_json, log

from .. import results
from ..measure import headerfiles
from ..measure.cache import At, Cache
from ..measure.scanpoint import scan_points
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
        write_header_files(req, out, scans[req.a], scans[req.b], cc)
        if req.write_focus:
            write_focus_list(req, rows, cc)
    print(out)
    return 0


def write_header_files(req, out, scan_a, scan_b, cc):
    """headers-files.json: for the headers the report's headers page draws,
    the files that include them, from the per-file records in the cache
    (measure/headerfiles.py); none when B's scan has no bytes by header."""
    if not scan_b.get("headers"):
        (out / "headers-files.json").unlink(missing_ok=True)
        return
    cache = Cache(req.work)
    key_a, key_b = (cache.scan_key(At.of_record(s)) if s.get("headers") else None
                    for s in (scan_a, scan_b))
    atomic_write_json(out / "headers-files.json", headerfiles.extract(
        cache, key_a, key_b, scan_a.get("headers"), scan_b["headers"],
        (scan_a["commit"], scan_b["commit"])))


def write_focus_list(req, rows, cc):
    lines = [f"# Top {req.top} files by expansion growth, {req.a} -> {req.b} "
             f"({cc}), written by make scan"]
    for r in rows[:req.top]:
        lines.append(f"{r['file']:40} # +{r['growth_bytes']:,} bytes "
                     f"({r['growth_ratio']}x)")
    atomic_write(Path(req.write_focus).expanduser(), "\n".join(lines) + "\n")
    log(f"wrote focus list {req.write_focus}")
