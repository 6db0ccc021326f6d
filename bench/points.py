"""What a command measures: the tree (packaged or a user's), the points or
refs, the files and the compilers, checked before any work starts; and
the loop that measures them into records."""
import re
import shlex
import shutil
from pathlib import PurePosixPath

from kbuild import series, trees
from kbuild.util import KexpandError, atomic_write_json, missing_tool

from . import engine, results

# Characters Kbuild cannot take in a source path (make and shell syntax).
BAD_PATH_CHARS = re.compile(r"[\s:#$%;'\"\\`*?\[\]{}()<>|&=!~^]")


def select(names, valid, what):
    """`names` if all are valid (all of `valid` when empty), else a user
    error listing the valid ones."""
    if not names:
        return list(valid)
    bad = [n for n in names if n not in valid]
    if bad:
        raise KexpandError(f"unknown {what} {', '.join(bad)}; valid: "
                           f"{', '.join(valid)}")
    return names


def check_file_names(files, focus):
    """FILES/FILE: C files given relative to the top of the kernel tree,
    inside it, with no characters Kbuild refuses. Checked before work."""
    for f in files:
        p = PurePosixPath(f)
        why = None
        if p.is_absolute():
            why = "an absolute path; give it relative to the top of the kernel tree"
        elif ".." in p.parts or str(p) != f.rstrip("/") or f.startswith("./"):
            why = "not a plain path inside the kernel tree (no '..', './' or '//')"
        elif BAD_PATH_CHARS.search(f) or not f.isascii():
            why = "a name with characters Kbuild cannot take"
        elif not f.endswith(".c"):
            why = "not a .c file"
        if why:
            raise KexpandError(f"FILES: {f!r} is {why}; for example "
                               f"FILES=\"{' '.join(focus[:2])}\"")


def check_files_exist(tree, files, focus, commit=None):
    """Each file exists in the tree (at `commit` when given)."""
    check_file_names(files, focus)
    for f in files:
        ok = (tree / f).is_file() if commit is None else series.git(
            tree, "cat-file", "-e", f"{commit}:{f}", check=False).returncode == 0
        if not ok:
            at = f" at {commit[:12]}" if commit else ""
            raise KexpandError(f"unknown file {f}: not a .c file of the kernel "
                               f"tree {tree}{at}; focus files are: {', '.join(focus)}")


def require_tools(compilers, timed, booting):
    """Fail before the long work starts when a tool is missing."""
    need = ["git", "make", "tar"]
    for cc in compilers:
        need += ["clang", "ld.lld"] if cc == "clang" else ["gcc"]
    if timed:
        need += ["hyperfine", "/usr/bin/time"]
    if booting:
        need += ["qemu-system-x86_64", "gcc"]
    for tool in need:
        if not shutil.which(tool):
            raise missing_tool(tool)


def open_tree(req, case):
    """(tree to build in, repo to resolve refs in, package label). A user's
    tree (KERNEL=) is measured through a shared clone, with the fragment's
    options checked but not required."""
    if req.kernel:
        top = trees.check_user_tree(req.kernel)
        req.strict_config = False
        return trees.user_clone(top, req.work), top, f"git tree {top}"
    commits, failures, version = series.prepare(case, req.work, req.tarball,
                                                req.progress)
    tree = req.work / "tree"
    return tree, tree, f"{series.SOURCE_PACKAGE} {version}"


def file_slug(f):
    """A checked source path as one file name (slashes as '_')."""
    return f.replace("/", "_")


def pair_dir(req, kind, a, b):
    return results.pair_dir(req.results, kind, a, b)


def measure_commits(req, case, tree, todo, files, package, timed=True,
                    attribute=True, compilers=None):
    """Measure [(name, commit)] x compilers x files through the cache (and,
    if `timed`, count instructions) and write one record per (commit,
    compiler); then (if `timed`) time all commits of `todo` together,
    interleaved, and write the records again. Returns the worst exit code, the records written by
    (commit, compiler), and the records by compiler in the order of
    `todo` (an A/A compare has the same commit twice)."""
    worst, written, by_side = 0, {}, {}
    for cc in compilers or req.compilers:
        recs = []
        for name, commit in todo:
            req.progress.step(f"{name} / {cc}")
            rec = engine.measure_point(req, case, tree, name, commit, cc, files,
                                       attribute=attribute, count=timed)
            rec["package"] = package
            if any(e["status"] != "ok" for e in rec["files"].values()):
                worst = max(worst, 3)
            # written before the timed runs: nothing measured is lost if they
            # fail (the counts join the timed entries afterwards)
            early = dict(rec, files={f: {k: v for k, v in e.items() if k != "counts"}
                                     for f, e in rec["files"].items()})
            results.write_record(req.results, results.merge_record(req.results, early))
            recs.append(rec)
        if timed:
            engine.measure_cost(req, case, tree, todo, cc, recs)
            if any(e["status"] != "ok" for r in recs for e in r["files"].values()):
                worst = max(worst, 3)
        by_side[cc] = recs
        for rec in recs:
            rec = results.merge_record(req.results, rec)
            results.write_record(req.results, rec)
            written[(rec["commit"], cc)] = rec
    return worst, written, by_side


def write_series_index(req, case, commits, package, files, line=()):
    """results/series-<case>.json: the points in order, the files, and
    `line`: every commit from the first point to the last (gcc)."""
    focus = [f for f, _ in case.focus]
    index = {"case": case.name, "package": package,
             "config": engine.case_config(req, case).describe(),
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


def make_command(req):
    """The `make` line a user can paste to reproduce this run."""
    parts = ["make", req.command]
    for var, val in (("CASE", None if req.case == "minmax" else req.case),
                     ("KERNEL", req.kernel), ("A", req.a), ("B", req.b),
                     ("FILE", req.file), ("GOOD", req.good), ("BAD", req.bad),
                     ("THRESHOLD", req.threshold),
                     ("FILES", " ".join(req.files) or None),
                     ("CC", "both" if req.compilers_given and len(req.compilers) > 1
                      else (req.compilers[0] if req.compilers_given else None)),
                     ("CONFIG", None if req.config_base == "tinyconfig" else req.config_base),
                     ("KCONFIG", req.kconfig), ("RUNS", req.runs),
                     ("NO_TIME", "1" if req.no_time else None),
                     ("NO_MACROS", "1" if req.no_macros else None)):
        if val is not None:
            parts.append(f"{var}={val}")
    return shlex.join(parts)
