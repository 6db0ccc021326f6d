"""Which source lines changed their expansion between two commits.

Every output byte of `-E` belongs to the source line its line marker names
(the line that was being expanded). For A and B, each measured file's
bytes per source line come from the analyzer (all lines, cached); B's
lines are matched to A's through `git diff -U0 A B` (line numbers shift
where lines were added or removed; a changed line is paired with the line
it replaced). Per matched line, the bytes of every measured file are
summed, and the files where that line's bytes changed are counted: a
header line reached by several files shows once, with that count."""
import re

from kbuild import build, builddir, kcmd, series
from kbuild.util import KexpandError, atomic_write_json

from .cache import At, Cache
from .expansion import analyze, statement, tree_path

ALL_LINES = 10_000_000
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)


def per_line_bytes(req, config, at, tree, f):
    """{(path, line): bytes} of one file's -E output at `at` (a cache.At of
    `config`; cached in the work directory; the object was built by the
    measurement)."""
    cache = Cache(req.work)
    key = cache.lines_key(at, f)
    got = cache.get(key, shape=list)
    commit, cc = at.commit, at.cc
    if got is None:
        series.checkout(tree, commit)
        bdir = build.build_dir(tree, commit, cc)
        if not kcmd.cmd_file(bdir, f).exists():
            # the measurement came from the cache (keyed by commit): this
            # tree's build dir may never have compiled the file
            b = builddir.build_objects(tree, bdir, cc, config, [kcmd.obj_of(f)], req.jobs)
            if not b.ok:
                raise KexpandError(f"building {f} at {commit[:12]} failed:\n"
                                   f"{b.log_tail}", "build")
        argv = kcmd.compile_command(bdir, f)
        a, _ = analyze(kcmd.preprocess_command(argv), bdir, top=ALL_LINES)
        got = [[tree_path(t["file"]), t["line"], t["bytes"]] for t in a["top"]]
        cache.put(key, got)
    return {(p, ln): b for p, ln, b in got}


def diff_hunks(tree, a, b):
    """{path: [(a_start, a_len, b_start, b_len)]} of `git diff -U0 A B`."""
    out = series.git(tree, "diff", "-U0", "--no-color", "--no-renames", a, b).stdout
    hunks, path = {}, None
    for line in out.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("@@") and path:
            m = HUNK.match(line)
            al = int(m.group(2)) if m.group(2) is not None else 1
            bl = int(m.group(4)) if m.group(4) is not None else 1
            hunks.setdefault(path, []).append(
                (int(m.group(1)), al, int(m.group(3)), bl))
    return hunks


def b_to_a(hunks, line):
    """A's line number for B's `line` (None: B added it). A changed line is
    paired with the A line at the same position of its hunk."""
    shift = 0
    for a, al, b, bl in hunks:
        if bl and b <= line < b + bl:
            i = line - b
            return a + i if i < al else None
        next_b = b + bl if bl else b + 1
        if line < next_b:
            break
        shift = (a + al if al else a + 1) - next_b
    return line + shift


def changed_lines(req, case, tree, a, b, cc, files, top=15):
    """The source lines whose -E bytes changed most from A to B, over all
    `files`: [{at_a, at_b, bytes_a, bytes_b, delta, files, source}]."""
    hunks = diff_hunks(tree, a, b)
    # once, not per file and side: `cc --version` is a process each time
    config = build.case_config(req, case)
    side_a = At.of(a, cc, config)
    total = {}                      # key -> [bytes_a, bytes_b, files changed]
    # every file at A, then every file at B: one checkout per side, not two
    # per file (500 files took 1,000 checkouts, about 1 s each on the tree)
    at_a = {f: per_line_bytes(req, config, side_a, tree, f) for f in files}
    at_b = {f: per_line_bytes(req, config, side_a.moved(b), tree, f) for f in files}
    for f in files:
        la, lb = at_a[f], at_b[f]
        mine = {}
        for (p, ln), n in la.items():
            mine.setdefault((p, ln, None), [0, 0])[0] += n
        for (p, ln), n in lb.items():
            al = b_to_a(hunks.get(p, []), ln)
            k = (p, al, None) if al is not None else (p, None, ln)
            mine.setdefault(k, [0, 0])[1] += n
        for k, (x, y) in mine.items():
            t = total.setdefault(k, [0, 0, 0])
            t[0] += x
            t[1] += y
            t[2] += x != y
    rows = sorted(((k, v) for k, v in total.items() if v[0] != v[1]),
                  key=lambda kv: (-abs(kv[1][1] - kv[1][0]), kv[0][0], kv[0][1] or 0))
    out = []
    for (p, al, bl), (x, y, n) in rows[:top]:
        at_b = bl or (_a_to_b(hunks.get(p, []), al) if al else None)
        out.append({"at_a": f"{p}:{al}" if al and x else None,
                    "at_b": f"{p}:{at_b}" if at_b and y else None,
                    "bytes_a": x, "bytes_b": y, "delta": y - x, "files": n,
                    "source": _source(tree, b if y else a, p, at_b if y else al)})
    return out


def _a_to_b(hunks, line):
    """B's line number for an A line: b_to_a with the sides swapped."""
    return b_to_a([(b, bl, a, al) for a, al, b, bl in hunks], line)


def _source(tree, commit, path, line):
    """The statement at path:line in `commit` (as engine.source_text)."""
    if not line or path.startswith("<") or path.startswith("./"):
        return ""
    p = series.git(tree, "show", f"{commit}:{path}", check=False)
    return statement(p.stdout, line) if p.returncode == 0 else ""


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
            rows = changed_lines(req, case, tree, ca, cb, cc, ok)
    atomic_write_json(out / "lines.json", {"compiler": cc, "files": ok, "lines": rows})
