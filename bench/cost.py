"""Compile cost of the focus files: wall and CPU time from interleaved runs
(bench/timing.py) and instruction counts (bench/icount.py), for a group
of commits measured together (all points of `make bench`; A and B of
`make compare`). Called after engine.measure_point() has built and
expanded every side, so every build dir holds its commit's objects.

Each file's time_E / time_c entry: the timing summary (median_s, ...,
cpu_median_s, samples, interleaved) plus `instructions`,
`instructions_source`, `count_s`, `count_slowdown` or, when not counted,
`instructions` None and `instructions_note` saying why."""
import shlex
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kbuild import build, series
from kbuild.util import KexpandError, log

from . import icount, timing

VERSION = "1"
KINDS = ("time_E", "time_c")


def commands(bdir, f, cc, scratch, long_name=False):
    """The timed -E and -c commands of f; the scratch object is named by
    the file's stem, or by its whole path where two files share a stem
    (their counts may run at the same time)."""
    argv = build.compile_command(bdir, f)
    obj = f.replace("/", "_")[:-2] if long_name else Path(f).stem
    return {"time_E": build.preprocess_command(argv, "/dev/null"),
            "time_c": build.object_command(argv, str(scratch / f"{cc}-{obj}.o"))}


def side_labels(sides):
    """Labels of the sides for the run order; the same ref twice (an A/A
    compare) becomes 'X (A)' and 'X (B)'."""
    names = [n for n, _ in sides]
    if len(set(names)) < len(names):
        return [f"{n} ({'AB'[i] if len(names) == 2 else i + 1})" for i, n in enumerate(names)]
    return names


def time_group(req, cache, tree, sides, cc, ccver, chash, ok_sides, estimates):
    """Interleaved runs of every file's -E and -c at the sides where it was
    measured ok. sides: [(name, commit)]; ok_sides: {file: [side index]};
    estimates: {file: seconds of one -E} for the run counts. Returns
    ({(side index, file): {"time_E": ..., "time_c": ...}}, {(side index,
    file): error}); cached per file and group of commits."""
    commits = [c for _, c in sides]
    labels = side_labels(sides)
    out, todo = {}, []
    for f, idx in ok_sides.items():
        runs = timing.choose_runs(estimates[f], req.runs)
        key = cache.group_time_key([commits[i] for i in idx], cc, ccver, chash, f, req.runs)
        got = cache.get(key)
        if isinstance(got, dict) and isinstance(got.get("sides"), list) and \
                len(got["sides"]) == len(idx):
            for i, t in zip(idx, got["sides"]):
                out[(i, f)] = t
        else:
            todo.append((f, runs, timing.choose_warmup(estimates[f]), key))
    if not todo:
        return out, {}
    scratch = Path(tree).parent / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    bdirs = [build.build_dir(tree, c, cc) for c in commits]
    stems = [Path(f).stem for f, *_ in todo]
    cmds = {i: {f: commands(bdirs[i], f, cc, scratch, stems.count(Path(f).stem) > 1)
                for f, *_ in todo if i in ok_sides[f]} for i in range(len(sides))}

    def command(lab, f, kind):
        i = labels.index(lab)
        return (cmds[i][f][kind], bdirs[i]) if f in cmds[i] else None
    jobs = {(f, kind): (runs, warm, lambda lab, f=f, kind=kind: command(lab, f, kind))
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


def count_group(req, cache, tree, sides, cc, ccver, chash, timed):
    """Add instruction counts to the timed entries {(side, file): entry}:
    each (commit, file, kind) once (counts are deterministic), cached;
    commands whose native CPU median is over ICOUNT_CAP seconds are not
    counted and say so. A commit's commands are counted JOBS at a time:
    other work on the machine does not change a count (the timed runs are
    over by now)."""
    src, why = icount.source()
    todo = {}
    for (i, f), entry in sorted(timed.items()):
        commit = sides[i][1]
        for kind in KINDS:
            t = entry[kind]
            cpu = t.get("cpu_median_s") or t["median_s"]
            if src is None or req.icount_cap == 0:
                t.update(instructions=None, instructions_source="",
                         instructions_note=why if src is None else "ICOUNT_CAP=0")
            elif cpu > req.icount_cap:
                t.update(instructions=None, instructions_source="",
                         instructions_note=f"not counted: native CPU median {cpu:.1f} s "
                         f"is over the {req.icount_cap} s cap (ICOUNT_CAP)")
            else:
                key = cache.icount_key(commit, cc, ccver, chash, f, kind, src)
                c = cache.get(key)
                if isinstance(c, dict) and isinstance(c.get("instructions"), int):
                    _note(t, c)
                else:
                    todo.setdefault(i, []).append((f, kind, t, key))
    for i, jobs in todo.items():
        name, commit = sides[i]
        series.checkout(tree, commit)
        bdir = build.build_dir(tree, commit, cc)
        req.progress.say(f"  counting instructions of {len(jobs)} commands "
                         f"({name}, {cc}, {src}, {req.jobs} at a time)")

        def one(job):
            f, kind, t, key = job
            argv = shlex.split(t["command"].split(" && ", 1)[1])
            try:
                return job, icount.count(argv, bdir, cc)
            except KexpandError as e:
                if e.klass == "infra":
                    raise
                return job, {"error": str(e)[:300]}
        with req.split.timed("instruction counts"), \
                ThreadPoolExecutor(max_workers=req.jobs) as ex:
            for (f, kind, t, key), c in ex.map(one, jobs):
                if "error" in c:
                    t.update(instructions=None, instructions_source="",
                             instructions_note=c["error"])
                    continue
                cache.put(key, c)
                _note(t, c)
    return timed


def _note(t, c):
    t.update(c, count_slowdown=round(c["count_s"] / t["median_s"], 2))
    t.pop("instructions_note", None)
