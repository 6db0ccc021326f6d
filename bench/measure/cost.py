"""Compile cost of the focus files: wall and CPU time from interleaved runs
(bench/measure/timing.py) and instruction counts (bench/measure/icount.py),
for a group of commits measured together (all points of `make bench`; A
and B of `make compare`). Called after engine.measure_point() has built
and expanded every side, so every build dir holds its commit's objects,
and has counted the instructions (count_plan, count_one: exact, so they
run beside the expansion, JOBS at a time; the timed runs come last, alone).

What measures what: hyperfine times each run (wall, user and system time,
one hyperfine invocation per run, its JSON export kept in the record);
wait4(2) on hyperfine gives each run's peak RSS; the instructions come
from perf stat or QEMU with kx-icount. Every timed run and every count has
a time limit (timing.run_limit, icount.count_limit) from the file's
estimate, the CPU seconds of its -E in the expansion run; a run or count
that reaches it is killed and reported (an error of the file at that
side; a count not made), never cached.

Each file's time_E / time_c entry: the timing summary (median_s, ...,
cpu_median_s, samples, hyperfine, interleaved) plus `instructions`,
`instructions_source`, `count_s`, `count_slowdown` or, when not counted,
`instructions` None and `instructions_note` saying why."""
import os
import shlex
import shutil
from pathlib import Path

from kbuild import build, kcmd, sandbox, series, workdir
from kbuild.util import KexpandError, log

from . import icount, timing

KINDS = ("time_E", "time_c")


def commands(bdir, f, cc, scratch):
    """The timed (and counted) -E and -c commands of f; the scratch object
    is named by the file's whole path, so two files that share a stem never
    write the same object when their counts run at the same time."""
    argv = kcmd.compile_command(bdir, f)
    obj = f.replace("/", "_")[:-2]
    return {"time_E": kcmd.preprocess_command(argv, "/dev/null"),
            "time_c": kcmd.object_command(argv, str(scratch / f"{cc}-{obj}.o"))}


def side_labels(sides):
    """Labels of the sides for the run order; the same ref twice (an A/A
    compare) becomes 'X (A)' and 'X (B)'."""
    names = [n for n, _ in sides]
    if len(set(names)) < len(names):
        return [f"{n} ({'AB'[i] if len(names) == 2 else i + 1})" for i, n in enumerate(names)]
    return names


def time_group(req, cache, tree, sides, at, ok_sides, estimates, counted):
    """Interleaved runs of every file's -E and -c at the sides where it was
    measured ok. sides: [(name, commit)]; at: their compiler and config
    (cache.At, of the first side); ok_sides: {file: [side index]};
    estimates: {file: seconds of one -E} and counted: {(file, kind): True
    where instructions were counted at every side} choose the run counts
    (timing.choose_runs) and the time limit of each run (timing.run_limit).
    Returns
    ({(side index, file): {"time_E": ..., "time_c": ...}}, {(side index,
    file): error}); cached per file and group of commits."""
    commits, cc = [c for _, c in sides], at.cc
    labels = side_labels(sides)
    out, todo = {}, []
    for f, idx in ok_sides.items():
        runs = {k: timing.choose_runs(estimates[f], req.runs, counted[(f, k)])
                for k in KINDS}
        key = cache.group_time_key(at, [commits[i] for i in idx], f,
                                   req.runs or "/".join(str(runs[k]) for k in KINDS))
        got = cache.get(key)
        if isinstance(got, dict) and isinstance(got.get("sides"), list) and \
                len(got["sides"]) == len(idx):
            for i, t in zip(idx, got["sides"]):
                out[(i, f)] = t
        else:
            todo.append((f, runs, timing.choose_warmup(
                estimates[f], all(counted[(f, k)] for k in KINDS)), key))
    if not todo:
        return out, {}
    scratch = workdir.scratch(req.work)
    scratch.mkdir(parents=True, exist_ok=True)
    bdirs = [build.build_dir(tree, c, cc) for c in commits]
    cmds = {i: {f: commands(bdirs[i], f, cc, scratch)
                for f, *_ in todo if i in ok_sides[f]} for i in range(len(sides))}

    def command(lab, f, kind):
        i = labels.index(lab)
        return (cmds[i][f][kind], bdirs[i], timing.run_limit(estimates[f]), [scratch]) \
            if f in cmds[i] else None
    jobs = {(f, kind): (runs[kind], warm, lambda lab, f=f, kind=kind: command(lab, f, kind))
            for f, runs, warm, _ in todo for kind in KINDS}
    req.progress.say(f"  timing {len(todo)} files x {len(sides)} commits ({cc}), "
                     "interleaved")
    with req.split.timed("timed runs"):
        got, failed = timing.interleaved(
            labels, jobs, lambda lab: series.checkout(tree, commits[labels.index(lab)]),
            req.progress.say)
    errors = {}
    for (lab, (f, kind)), err in failed.items():
        log(f"timing failed at {lab}: {err}")
        errors[(labels.index(lab), f)] = err
    for f, runs, warm, key in todo:
        per = []
        for i in ok_sides[f]:
            entry = {}
            for kind in KINDS:
                t = got.get((labels[i], (f, kind)))
                if t is None:
                    break
                t["command"] = (f"cd {shlex.quote(bdirs[i].name)} && "
                                f"{shlex.join(cmds[i][f][kind])}")
                entry[kind] = t
            per.append(entry if len(entry) == len(KINDS) else None)
        for i, e in zip(ok_sides[f], per):
            if e:
                out[(i, f)] = e
        if all(per):
            cache.put(key, {"sides": per})
    return out, errors


def count_plan(req, cache, at, f, kind, estimate):
    """What to do about the instruction count of f's `kind` command at one
    commit, compiler and config (`at`: cache.At): ("have", result) when
    cached or not to be counted (the result then says why), ("count",
    cache key) otherwise. Only -E is capped:
    a -E whose preprocessor took more than ICOUNT_CAP CPU seconds in the
    expansion run (`estimate`) is not counted; -c is always counted, since
    it decides the verdict of a compare."""
    src, why = icount.source()
    if src is None or req.icount_cap == 0:
        return "have", {"instructions": None, "instructions_source": "",
                        "instructions_note": why if src is None else "ICOUNT_CAP=0"}
    if kind == "time_E" and estimate > req.icount_cap:
        return "have", {"instructions": None, "instructions_source": "",
                        "instructions_note": f"not counted: the preprocessor took "
                        f"{estimate:.1f} s of CPU, over the {req.icount_cap} s cap "
                        "(ICOUNT_CAP)"}
    key = cache.icount_key(at, f, kind, icount.identity(src))
    c = cache.get(key)
    if isinstance(c, dict) and isinstance(c.get("instructions"), int):
        return "have", c
    return "count", key


def count_one(cache, key, bdir, f, cc, kind, estimate_s=None, view=None):
    """Count f's `kind` command in bdir (its commit checked out); cached.
    A command that fails, or a count that reaches its time limit
    (icount.count_limit of `estimate_s`, the CPU seconds of f's -E in the
    expansion run; None, as for a -c counted beside its expansion: the
    floor), is recorded as not counted and not cached; a counter that does
    not work is an infra error. view: a frozen copy of what the command
    reads (freeze), for a count while the tree moves on."""
    scratch = workdir.scratch(cache.work)
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        argv = commands(bdir if view is None else in_view(bdir, view), f, cc, scratch)[kind]
        c = icount.count(argv, bdir, cc,
                         timeout=icount.count_limit(estimate_s), rw=[scratch], view=view)
    except KexpandError as e:
        if e.klass == "infra" and not isinstance(e, timing.TimedOut):
            raise
        return {"instructions": None, "instructions_source": "",
                "instructions_note": str(e)[:300]}
    cache.put(key, c)
    return c


INCLUDE_DIRS = ("-I", "-isystem", "-iquote", "-idirafter")
INCLUDE_FILES = ("-include", "-imacros")


def freeze(bdir, f, dest):
    """A copy, in `dest`, of what f's compile in bdir can read of its tree,
    laid out as in the tree (sandbox.wrap's view): the directories the
    command searches, whole (a header is found, missed or probed with
    __has_include as in the tree), f's own directory, every file its .cmd
    names, and the .cmd itself (count_one reads the command there: the
    build dir moves on too). Nothing whose real path leaves the tree is
    copied: a link out of it stays a link, dangling in the sandbox as it
    does in the tree. The count of that command then reads, instruction
    for instruction, what it would read in the tree."""
    bdir = Path(bdir).resolve()
    tree = sandbox.tree_of(bdir)
    cmd = kcmd.cmd_file(bdir, f)
    argv = kcmd.compile_command(bdir, f)
    dirs, files = set(), {str(cmd), *(kcmd.dependencies(cmd) or ())}
    for i, a in enumerate(argv[:-1]):
        for opt in INCLUDE_DIRS + INCLUDE_FILES:
            if a == opt or (a.startswith(opt) and opt in INCLUDE_DIRS and len(a) > len(opt)):
                v = argv[i + 1] if a == opt else a[len(opt):]
                (dirs if opt in INCLUDE_DIRS else files).add(v)

    def inside(p):
        return p.is_relative_to(tree) and Path(os.path.realpath(p)).is_relative_to(tree)
    source = Path(os.path.normpath(bdir / argv[-1]))
    dirs = {Path(os.path.normpath(bdir / d)) for d in dirs}
    dirs = {d for d in dirs if inside(d) and d.is_dir()}
    for d in sorted(dirs):
        if not any(d != o and d.is_relative_to(o) for o in dirs):
            shutil.copytree(d, dest / d.relative_to(tree), symlinks=True, dirs_exist_ok=True)
    near = list(source.parent.iterdir()) if inside(source.parent) else []
    for p in [*near, *(Path(os.path.normpath(bdir / x)) for x in files)]:
        if p.is_relative_to(tree) and (p.is_symlink() or inside(p) and p.is_file()) \
                and not any(p.is_relative_to(d) for d in dirs):
            (dest / p.relative_to(tree)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dest / p.relative_to(tree), follow_symlinks=False)
    (dest / bdir.relative_to(tree)).mkdir(parents=True, exist_ok=True)
    return dest


def in_view(bdir, view):
    """Where build dir `bdir` is in `view` (cost.freeze's copy)."""
    bdir = Path(bdir).resolve()
    return Path(view) / bdir.relative_to(sandbox.tree_of(bdir))


def add_counts(entry, counts):
    """Move the counts measured with the expansion into the timed entries
    (time_E, time_c) of a file entry, with the count's slowdown."""
    for kind, c in (counts or {}).items():
        t = entry.get(kind)
        if t is None:
            continue
        t.update(c)
        if c.get("instructions") is not None:
            t["count_slowdown"] = round(c["count_s"] / t["median_s"], 2)
            t.pop("instructions_note", None)
