"""What a command measures: the tree (packaged or a user's), the points or
refs, the files and the compilers, checked before any work starts; where
its report goes, and the make line that reproduces it."""
import re
import shlex
import shutil
from pathlib import Path, PurePosixPath

from kbuild.commands import COMMON, TARGETS
from kbuild import build, series, trees, workdir
from kbuild.proc import missing_tool
from kbuild.util import KexpandError, atomic_write_json, log



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


def check_files_exist(tree, files, focus, commit=None, ref=None):
    """Each file exists in the tree (at `commit` when given, read-only:
    `tree` may be a user's repository)."""
    check_file_names(files, focus)
    for f in files:
        ok = (tree / f).is_file() if commit is None else trees.has_file(tree, commit, f)
        if not ok:
            at = f" at {ref or commit[:12]}" if commit else ""
            raise KexpandError(f"unknown file {f}: not a .c file of the kernel "
                               f"tree {tree}{at}; focus files are: {', '.join(focus)}")


def require_tools(compilers, timed, booting):
    """Fail before the long work starts when a tool is missing."""
    need = ["git", "make"]
    for cc in compilers:
        need += ["clang", "ld.lld"] if cc == "clang" else ["gcc"]
    if timed:
        need += ["hyperfine", "/usr/bin/time"]
    if booting:
        need += ["qemu-system-x86_64", "gcc"]
    for tool in need:
        if not shutil.which(tool):
            raise missing_tool(tool)


def open_tree(req, case, refs=(), files=(), focus=()):
    """(tree to build in, repo the refs were resolved in, package label,
    [commit of each ref]). Every ref is resolved and every file checked at
    each of them before any work: on a user's tree (KERNEL=), in the
    user's repository, before kexpand's clone of it is made (errors name
    the user's paths), and the fragment's options are checked but not
    required there."""
    if req.kernel:
        top = trees.check_user_tree(req.kernel)
        commits = _resolve_all(top, refs, files, focus)
        return trees.user_clone(top, req.work), top, f"git tree {top}", commits
    _c, _f, version = series.prepare(case, req.work, req.tarball, req.progress)
    tree = workdir.tree(req.work)
    return tree, tree, f"{series.SOURCE_PACKAGE} {version}", \
        _resolve_all(tree, refs, files, focus)


def _resolve_all(repo, refs, files, focus):
    commits = [trees.resolve(repo, r) for r in refs]
    for r, c in zip(refs, commits):
        check_files_exist(repo, files, focus, commit=c, ref=r)
    return commits


def file_slug(f):
    """A checked source path as one file name (slashes as '_')."""
    return f.replace("/", "_")


def make_command(req):
    """The `make` line a user can paste to reproduce this run: the
    variables this target takes (kbuild.commands.TARGETS) that were set."""
    target = {"bisect-step": "bisect"}.get(req.command, req.command)
    takes = COMMON | TARGETS.get(target, set())
    parts = ["make", target]
    for var, val in (("CASE", None if req.case == "minmax" else req.case),
                     ("KERNEL", req.kernel), ("A", req.a), ("B", req.b),
                     ("PATCHES", " ".join(str(Path(p).expanduser().resolve())
                                          for p in req.patches) or None),
                     ("BASE", req.base), ("NAME", req.name),
                     ("FILE", req.file), ("GOOD", req.good), ("BAD", req.bad),
                     ("THRESHOLD", req.threshold),
                     ("TOTAL_THRESHOLD", req.total_threshold),
                     ("FILES", " ".join(req.files) or None),
                     ("CC", "both" if req.compilers_given and len(req.compilers) > 1
                      else (req.compilers[0] if req.compilers_given else None)),
                     ("CONFIG", None if req.config_base == "tinyconfig" else req.config_base),
                     ("KCONFIG", req.kconfig), ("RUNS", req.runs),
                     ("NO_TIME", "1" if req.no_time else None),
                     ("NO_MACROS", "1" if req.no_macros else None),
                     ("FULL_BUILD", "1" if req.full_build else None),
                     ("RANGE", _range_text(req.range)),
                     ("EVERY", req.every if req.every != 1 else None),
                     ("SCAN", "1" if req.scan else None)):
        if val is not None and var in takes:
            parts.append(f"{var}={val}")
    return shlex.join(parts)


def _range_text(rng):
    if not rng:
        return None
    a, b = rng
    return f"{a}..{b}" if a else b


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
