"""make check, the files that regressed: which patch grew each one (its
bytes at every commit of the series), its hottest lines at the base and
the tip (from the scans, with the statements' text), and for the worst
file the macros (gcc: own bytes at base and tip; clang: inclusive bytes
and the top expansion stack at the tip) and the instruction count of -c
at base and tip for the worst few. Every compiler's work at a commit is
done in one visit (tip, the series' commits from the last to the first,
base), JOBS jobs at a time; the tip's longest job, the worst file's count,
goes on beside the later visits on a frozen copy of what it reads."""
import shutil
import threading

from kbuild import build, builddir, kcmd, sandbox, series, workdir
from kbuild.gitops import git
from kbuild.proc import Beside, run_jobs
from kbuild.util import KexpandError, log

from ..measure import cost, macros
from ..measure import seriescheck as sc
from ..measure.cache import At
from ..measure.expansion import measure_file, statement


def text_at(tree, commit, at):
    """The statement at 'path:line' in `commit` ('' where unknown)."""
    path, _, line = (at or "").rpartition(":")
    if not path or path.startswith(("<", "./")) or not line.isdigit():
        return ""
    p = git(tree, "show", f"{commit}:{path}", check=False)
    return statement(p.stdout, int(line)) if p.returncode == 0 else ""


def _add_text(tree, commit, rows, side):
    """The statement of each of the rows' hottest lines at one side."""
    for r in rows:
        r[f"hot_lines_{side}"] = [dict(h, source=text_at(tree, commit, h["at"]))
                                  for h in r[f"hot_lines_{side}"]]


def explain(req, case, tree, commits, sides):
    """Fill the rows each compiler's side explains, in place (see README,
    "make check results"). The tree is at the tip (its scans just ran);
    then the series' commits, last to first; then the base: each once,
    with every compiler's work there run JOBS at a time. stacks (a side's):
    clang's expansion stacks of its first row at the tip (a clang build of
    its object), for a file that blew up; not for a whole build's witness,
    whose growth is spread over many lines."""
    base, tip = sides[0].at.commit, commits[-1][2]
    subjects = [s for _, s, _ in commits]
    jobs = []
    for side in sides:      # the scan kept each side's hottest lines: add their text
        regs, worst = side.explained, side.explained[0]
        _add_text(tree, tip, regs, "tip")
        req.progress.say(f"  the tip ({side.cc}): macros of {worst['file']}, -c counts of "
                         f"{len(regs[:sc.COUNT_TOP])} file(s)")
        side.tipdir.ready_at(tip)
        jobs += _jobs(req, worst, regs[:sc.COUNT_TOP], "tip",
                      (req, side.cache, side.at.moved(tip), side.tipdir.dir),
                      (worst["file"], worst, req, case, tree, tip, side.cache)
                      if side.stacks and side.cc == "gcc" else None)
    beside, frozen = _count_beside(req, jobs) or (None, None)
    _run(req, jobs, req.jobs - bool(beside), beside and beside.done)
    while frozen and not frozen.wait(0.5):     # the tree stays at the tip until then
        pass

    # every commit of the series: which patch grew each file
    steps = sc.per_patch(req, [(s.tipdir, [r["file"] for r in s.explained]) for s in sides],
                         [c for _, _, c in commits])
    for side, got in zip(sides, steps):
        for r in side.explained:
            best, seq = sc.grew_most(r["bytes_base"], got[r["file"]], r["bytes_tip"],
                                     subjects)
            r["per_patch"] = seq
            r["grew_most"] = best

    # the base
    jobs = []
    series.checkout(tree, base)
    for side in sides:
        regs, worst = side.explained, side.explained[0]
        req.progress.say(f"  the base ({side.cc}): macros of {worst['file']}, -c counts "
                         f"of {len(regs[:sc.COUNT_TOP])} file(s)")
        jobs += _jobs(req, worst, regs[:sc.COUNT_TOP], "base",
                      (req, side.cache, side.at, side.tipdir.base_dir))
        _add_text(tree, base, regs, "base")
    if beside:
        if beside.done.is_set():
            beside.join()       # its error, if any, before the base's work
        # the base's count of the same file runs the same command, which
        # takes turns with the tip's (icount's lock): last, not holding a
        # worker the other jobs could use
        held = beside.args[2]
        jobs = [(9 if fn is _count and args[0] == held else r, (fn, args))
                for r, (fn, args) in jobs]
    _run(req, jobs, req.jobs - bool(beside), beside and beside.done)
    if beside:
        beside.join()
    for side in sides:
        worst = side.explained[0]
        if side.cc == "gcc" and not req.no_macros and \
                worst.get("macros_tip", {}).get("status") == "ok":
            worst["macros_grew"] = macros.changes(
                (worst.get("macros_base") or {}).get("macros", []),
                worst["macros_tip"]["macros"], "own_bytes")


def _jobs(req, worst, top, side, at, clang=None):
    """One side's jobs, each with its rank (longest first, so that JOBS
    workers end together, whatever the compiler): clang's build of the
    worst file and its stacks, the file's -c count (under QEMU, several
    times its compile), its macros (one -E -fdebug-cpp, several times its
    -E), then the other counts."""
    cc = at[2].cc           # a job's first argument names it in a warning
    jobs = [(0, (_clang_stack, clang))] if clang and not req.no_macros else []
    jobs += [(1, (_count, (f"{r['file']} ({cc})", r, side, *at))) for r in top[:1]]
    if not req.no_macros:
        jobs.append((2, (_macros, (f"{worst['file']} ({cc})", worst, side, *at))))
    return jobs + [(3, (_count, (f"{r['file']} ({cc})", r, side, *at))) for r in top[1:]]


def expansion(row, side, bdir):
    """What the macros of `row`'s file at one side are checked against and
    look into: its bytes and hottest lines, as the scan measured them in
    this build dir (no second -E). A whole build's witness looks into its
    top header's hottest line, which takes an -E of its own."""
    focus = row.get("focus")
    if focus:
        e = measure_file(bdir, row["file"])
        inside = measure_file(bdir, row["file"], top=100000, within=focus)["hot_lines"]
        return dict(e, hot_lines=inside + e["hot_lines"]), inside
    if row.get(f"bytes_{side}") is None:
        raise KexpandError(f"{row['file']} was not measured at the {side}", "build")
    return {"expanded_bytes": row[f"bytes_{side}"],
            "hot_lines": row.get(f"hot_lines_{side}") or []}, None


def _run(req, ranked, jobs, more=None):
    """Run (rank, job)s, the lowest rank first, `jobs` at a time, one more
    once `more` is set."""
    failed = {}
    with req.split.timed("expansion, macros, counts"):
        run_jobs([j for _, j in sorted(ranked, key=lambda x: x[0])], jobs, failed, more)
    for f, e in failed.items():        # recorded where the job keeps its result
        log(f"warning: {f}: {e['error']}")


def _count_beside(req, ranked):
    """The longest job of the tip, the -c count under QEMU of the largest
    file (a minute, where the other jobs take seconds), taken out of `ranked`
    and run in a thread of its own on a frozen copy of what it reads
    (cost.freeze), so that the series' commits and the base are visited
    while it counts: (the Beside, an event set once the tree may move
    on). None (the job left in `ranked`) with one job at a time, without
    the sandbox, or when the count is cached."""
    counts = [k for k, (_r, (fn, _a)) in enumerate(ranked) if fn is _count]
    # the longest: the file that is largest at the tip (a whole build's
    # witness, explained first, is seldom it)
    i = max(counts, key=lambda k: ranked[k][1][1][1].get("bytes_tip") or 0, default=None)
    if req.jobs < 2 or i is None or not sandbox.enabled():
        return None
    f, row, side, _req, cache, at, bdir = ranked[i][1][1]
    if sc.count_cached(req, cache, at, row["file"]):
        return None
    del ranked[i]
    view = workdir.scratch(cache.work) / f"view-{at.commit[:12]}-{at.cc}"
    shutil.rmtree(view, ignore_errors=True)
    req.progress.say(f"  {row['file']}'s count goes on beside the rest, on a copy of "
                     "what it reads")
    frozen = threading.Event()
    return Beside(_count_frozen, (frozen, view, f, row, side, req, cache, at, bdir)), frozen


def _count_frozen(frozen, view, f, row, side, req, cache, at, bdir):
    """_count on a copy of what the count reads, made first (`frozen` is
    set once it is made, or failed), removed after."""
    try:
        try:
            cost.freeze(bdir, row["file"], view)
        finally:
            frozen.set()
        _count(f, row, side, req, cache, at, bdir, view)
    except KexpandError as e:
        if e.klass == "infra":
            raise
        _counted(row, side, {"instructions": None, "instructions_note": str(e)[:300]})
    finally:
        shutil.rmtree(view, ignore_errors=True)


def _count(f, row, side, req, cache, at, bdir, view=None):
    """-c instructions of a file at one side (cached; view: count_one's)."""
    req.progress.say(f"  counting instructions of {row['file']} (-c, {side}, {at.cc})")
    try:
        c = sc.count_c(req, cache, at, bdir, row["file"], view)
    except KexpandError as e:
        if e.klass == "infra":
            raise
        c = {"instructions": None, "instructions_note": str(e)[:300]}
    _counted(row, side, c)


def _counted(row, side, c):
    row.setdefault("instructions", {})[side] = {
        k: c.get(k) for k in ("instructions", "instructions_source", "count_s",
                              "instructions_note") if k in c}


def _macros(f, row, side, req, cache, at, bdir):
    """gcc's own bytes per macro (or clang's inclusive bytes) of a file."""
    req.progress.say(f"  attributing {row['file']} to macros ({side}, {at.cc})")
    focus = row.get("focus")        # a whole build's witness: its top header's line
    # checked against the scan's bytes (a witness: Kbuild's -E of its own)
    key = cache.macros_key(at, row["file"] + (f"|{focus}" if focus else "|scan"))
    m = cache.get(key)
    if m is None:
        e, inside = expansion(row, side, bdir)
        m = macros.measure(bdir, row["file"], at.cc, e, like_scan=not focus)
        if focus and inside:
            m["focus_line"] = inside[0]       # at, bytes, the statement's text
        if m.get("status") != "error":
            cache.put(key, m)
    row[f"macros_{side}"] = m


def _clang_stack(f, row, req, case, tree, tip, cache):
    """clang's inclusive bytes and the top expansion stack of the worst
    file at the tip: its object built in a clang dir of the tip (only that
    object: Kbuild prepares what it needs), then kx-macrostack."""
    config = build.case_config(req, case)
    f = row["file"]
    bdir = build.build_dir(tree, tip, "clang")
    # keyed by the line looked into: gcc's hottest (a clang compare or
    # check looks into clang's own, under the file's plain key)
    gcc_hot = row["hot_lines_tip"][:1]
    key = cache.macros_key(At.of(tip, "clang", config),
                           f"{f}|gcc-hot:{(gcc_hot or [{}])[0].get('at')}")
    m = cache.get(key)
    if m is None:
        req.progress.say(f"  clang: building {f} at the tip for its expansion stacks")
        if not builddir.built(bdir, config.hash(), [f]):
            b = builddir.build_objects(tree, bdir, "clang", config, [kcmd.obj_of(f)],
                                       req.jobs)
            if not b.ok:
                row["clang"] = {"status": "error", "error": b.log_tail[-1000:]}
                return
        # gcc's hottest line at the tip (the scan's): clang looks into the
        # same line, without an -E of its own
        m = macros.measure(bdir, f, "clang", {"hot_lines": gcc_hot})
        if m.get("status") != "error":
            cache.put(key, m)
    hot = m.get("hot_line") or {}
    row["clang"] = {"status": m.get("status"), "macros": (m.get("macros") or [])[:10],
                    "hot_line": {k: hot.get(k) for k in ("at", "bytes_est", "macros",
                                                         "stacks") if k in hot}}
