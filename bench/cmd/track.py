"""make track KERNEL=<tree> RANGE=<rev-range> [EVERY=N] [FILES=] [CC=]
[CONFIG=|KCONFIG=] [SCAN=1] [NAME=]: a tree's history, every commit
measured once, as llvm-compile-time-tracker does for LLVM.

Which commits: the first-parent commits of the range (A..B: A and every
commit after it up to B; one ref: the last MAX_COMMITS up to it), every
EVERY-th, always both ends. What: each focus file's -E bytes and longest
line and the instruction count of its -c (per compiler), and with SCAN=1
the whole build's total -E bytes and the own bytes of a few headers
(measure/trackheaders.py). Every measurement is cached by commit,
so a nightly run pays only for the new commits, and an interrupted one
resumes. One build dir per compiler rolls through the history (renamed
from commit to commit, never copied: builddir.seed's move_from). With
DASK_SCHEDULER=, commits are measured on the cluster's workers
(measure/trackdist.py). The noise model is bench/history.py's. Writes
results/track/<name>/track.json and one CSV per metric and compiler;
report.py --track draws the graphs and pages."""
import dataclasses
import datetime
import re
import shlex
import sys

from kbuild import build, trees, workdir
from kbuild.gitops import git
from kbuild.util import KexpandError, atomic_write_json, log, read_json

from .. import history, results
from ..measure import icount, trackdist, trackheaders, trackvalues
from ..measure.changed_lines import write_changed_lines
from ..measure.point import measure_commits, measure_point, pair_timings
from ..measure.scanpoint import scan_points
from .inputs import check_file_names, make_command, open_tree, require_tools

METRICS = {"bytes": "-E bytes", "longest_line": "longest -E line, bytes",
           "instructions_c": "instructions of -c"}


def select(revs, every, limit):
    """Every `every`-th of revs (oldest first), always both ends; at most
    `limit` (the newest)."""
    if not revs:
        return []
    picked = [c for i, c in enumerate(revs) if i % every == 0]
    if picked[-1] != revs[-1]:
        picked.append(revs[-1])
    return picked[-limit:]


def commits_of(repo, rng, limit):
    """The first-parent commits of RANGE (read in the user's repository)."""
    a, b = rng
    tip = trees.resolve(repo, b)
    if a:
        start, tip = trees.require_ancestor(repo, a, b, f"RANGE={a}..{b}")
        revs = git(repo, "rev-list", "--first-parent", "--reverse", f"{start}..{tip}").stdout.split()
        if start not in revs:
            revs.insert(0, start)
    else:
        revs = git(repo, "rev-list", "--first-parent", "--reverse", f"--max-count={limit}",
                   tip).stdout.split()
    return revs


def info(repo, commit):
    p = git(repo, "log", "-1", "--format=%cI%x00%s%x00%P", commit).stdout.rstrip("\n")
    date, subject, parents = (p.split("\0") + ["", "", ""])[:3]
    return {"commit": commit, "short": commit[:12], "date": date, "subject": subject,
            "parent": parents.split()[0] if parents.split() else None}


def cmd_track(req, case):
    if not req.range:
        raise KexpandError("give the history: make track RANGE=<from>..<to> (or RANGE=<to> "
                           "for its last MAX_COMMITS first-parent commits), for example "
                           "make track KERNEL=~/linux RANGE=v6.6..master")
    focus = [f for f, _ in case.focus]
    files = req.files or focus
    check_file_names(files, focus)
    ccs = req.compilers if req.compilers_given else ["gcc"]
    require_tools(ccs, False, False)
    a, b = req.range
    name = req.name or results.safe_name(f"{a}..{b}" if a else b)
    # a track is its tree, files and compilers; its config may change from
    # one night to the next, and is then shown as a setup change
    ident = {k: v for k, v in results.identity(req).items()
             if k not in ("config", "kconfig_sha256")}
    ident["track"] = name
    out = req.results / "track" / (results.safe_name(name) + _tag(req))
    results.claim_dir(out, ident)
    # what earlier runs measured, as the cache holds it (track.json is output)
    known = trackvalues.known(req.work, out / "track.json", files, ccs, req.scan)
    with workdir.lock(req.work):
        tree, repo, package, _ = open_tree(req, case, [r for r in (a, b) if r])
        revs = commits_of(repo, req.range, req.max_commits)
        picked = select(revs, req.every, req.max_commits)
        log(f"track {name}: {len(picked)} commit(s) of {'..'.join(r for r in (a, b) if r)}"
            + (f", every {req.every}th" if req.every > 1 else ""))
        commits = [info(repo, c) for c in picked]
        at = {c: i for i, c in enumerate(revs)}
        for prev, c in zip(commits, commits[1:]):      # EVERY=N: a point spans N commits
            c["spans"] = at[c["commit"]] - at[prev["commit"]]
        todo = [c for c in commits if c["commit"] not in known]
        log(f"{len(commits) - len(todo)} measured before (kept as they were measured), "
            f"{len(todo)} to measure")
        if req.dask_scheduler:
            values = trackdist.measure(req, case, todo, files, ccs)
            trackvalues.keep_remote(req.work, values)
        else:
            values = measure_local(req, case, tree, todo, files, ccs, name)
        for c in commits:
            k = known.get(c["commit"])
            c.update({x: k[x] for x in ("setup", "values", "total_bytes") if x in k}
                     if k else values[c["commit"]])
        # the own bytes of a few headers per commit, from the cached scans
        heads = trackheaders.attach(req.work, commits, ccs, out / "track.json") \
            if req.scan else None
        rec = record(req, case, name, repo, package, commits, files, ccs, ident)
        if heads is not None:
            rec["headers"] = heads
        predraw_compares(req, case, tree, repo, package, rec)
        write(out, rec, files, ccs)
    n = len(rec["interesting"])
    print(f"{len(commits)} commits, {n} interesting change(s); {out}")
    for i in rec["interesting"][:20]:
        print(f"  {i['commit'][:12]} {i['file']} {i['metric']} ({i['cc']}): "
              f"{i['before']:,} -> {i['after']:,} ({i['ratio']:.4f}x)  {i['subject'][:50]}")
    return 0


def _tag(req):
    """The directory-name suffix of a track: its tree, files, compilers."""
    return results.identity_tag(dataclasses.replace(req, config_base="tinyconfig",
                                                    kconfig=None))


def measure_local(req, case, tree, commits, files, ccs, name):
    """{commit: {"setup", "values", "total_bytes"}} on this machine; one
    build dir per compiler rolls through the history."""
    state_file = workdir.track_state(req.work, results.safe_name(name))
    state = read_json(state_file) if state_file.exists() else None
    state = state if isinstance(state, dict) else {}
    config = build.case_config(req, case)
    src, _why = icount.source()
    counter = icount.identity(src) if src else None
    req.progress.total = len(commits) * len(ccs)
    out = {}
    for c in commits:
        vals, setup = {}, {"config_hash": config.hash(), "host": results.stamp()["host"],
                           "counter": counter}
        for cc in ccs:
            req.progress.step(f"{c['short']} / {cc}  {c['subject'][:50]}")
            prev = state.get(cc)
            rec = measure_point(req, case, tree, c["short"], c["commit"], cc, files,
                                count=True, count_kinds=("time_c",),
                                move_from=tree / prev if prev else None)
            if rec.get("build"):        # this commit's dir now holds the rolling build
                state[cc] = build.build_dir(tree, c["commit"], cc).name
                atomic_write_json(state_file, state)
            setup[cc] = rec["compiler_version"]
            vals[cc] = {f: trackdist.values_of(rec["files"][f]) for f in files}
        out[c["commit"]] = {"setup": setup, "values": vals}
    if req.scan:
        for cc in ccs:
            scans = scan_points(req, case, tree, [(c["short"], c["commit"]) for c in commits], cc)
            for c in commits:
                out[c["commit"]].setdefault("total_bytes", {})[cc] = \
                    scans[c["short"]]["total_bytes"]
    return out


def record(req, case, name, repo, package, commits, files, ccs, ident):
    """track.json (README, "make track results"): the commits with their
    values, the noise of every (compiler, file, metric) and the changes
    beyond it."""
    changes = history.setup_changes(commits, ccs)
    noise, interesting = {}, []
    metrics = list(METRICS) + (["total_bytes"] if req.scan else [])
    for cc in ccs:
        for f in files + (["<whole build>"] if req.scan else []):
            for m in metrics:
                if (m == "total_bytes") != (f == "<whole build>"):
                    continue
                pts = [(_value(c, cc, f, m), history.setup_key(c["setup"], cc)) for c in commits]
                sigma = history.series_sigma(pts)
                noise.setdefault(cc, {}).setdefault(f, {})[m] = round(sigma, 3)
                for i, before, after, d, z, thr in history.changes(pts, m, sigma):
                    c, prev = commits[i], commits[i - 1]
                    # parent: c's own; from: the point before, which it is
                    # compared with (EVERY=N: N commits back, "spans")
                    interesting.append({
                        "commit": c["commit"], "parent": c["parent"], "from": prev["commit"],
                        "spans": c.get("spans", 1),
                        "subject": c["subject"], "cc": cc, "file": f, "metric": m,
                        "before": before, "after": after, "delta": d,
                        "ratio": round(after / before, 6) if before else None,
                        "sigma": round(sigma, 3), "z": z, "threshold": round(thr, 1),
                        "compare": None,
                        "make_compare": compare_line(req, prev["commit"],
                                                     c["commit"], files, cc)})
    interesting.sort(key=lambda x: (-abs(x["ratio"] - 1) if x["ratio"] else 0))
    return {"schema": 1, "kind": "kexpand.track", "name": name, "tree": str(repo),
            "package": package, "range": "..".join(r for r in req.range if r),
            "every": req.every, "config": build.case_config(req, case).describe(),
            "files": files, "compilers": ccs,
            "metrics": {m: METRICS.get(m, "whole build, total -E bytes") for m in metrics},
            "commits": commits,
            "setup_changes": [{"commit": commits[i]["commit"], "what": w, "boundary": bd}
                              for i, w, bd in changes],
            "noise": noise, "interesting": interesting,
            "noise_model": {"z": history.Z, "rel_jump": history.REL_JUMP,
                            "floor": history.FLOOR},
            "make_compare_template": compare_line(req, "{parent}", "{commit}", files, None),
            "identity": ident, "command": shlex.join(sys.argv),
            "make_command": make_command(req),
            "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds")}


def _value(c, cc, f, m):
    if m == "total_bytes":
        return (c.get("total_bytes") or {}).get(cc)
    return ((c.get("values") or {}).get(cc) or {}).get(f, {}).get(m)


def compare_line(req, parent, commit, files, cc):
    parts = ["make", "compare"]
    if req.kernel:
        parts.append(f"KERNEL={req.kernel}")
    parts += [f"A={parent}", f"B={commit}", f"FILES={' '.join(files)}"]
    if cc:
        parts.append(f"CC={cc}")
    if req.config_base != "tinyconfig":
        parts.append(f"CONFIG={req.config_base}")
    if req.kconfig:
        parts.append(f"KCONFIG={req.kconfig}")
    return shlex.join(parts).replace("'{parent}'", "{parent}").replace("'{commit}'", "{commit}")


def predraw_compares(req, case, tree, repo, package, rec):
    """The compare of each interesting commit against its parent, drawn
    now (results/compare/<parent>..<commit>...; report.py --track draws
    its report): the bytes are in the cache already, only the macros of
    the files that changed are new."""
    done = {}
    for i in rec["interesting"]:
        if i["metric"] == "total_bytes":
            continue
        key = (i["from"], i["commit"], i["cc"])
        if key in done:
            i["compare"] = done[key]
            continue
        files = sorted({x["file"] for x in rec["interesting"] if (x["from"], x["commit"],
                        x["cc"]) == key and x["file"] != "<whole build>"})
        sub = _sub_request(req, files, [i["cc"]])
        a, b = i["from"][:12], i["commit"][:12]
        d = results.report_dir(sub, "compare", a, b)
        req.progress.say(f"  compare {a}..{b} ({', '.join(files)}, {i['cc']})")
        _w, recs, by_side = measure_commits(sub, case, tree, [(a, i["from"]), (b, i["commit"])],
                                            files, package, timed=False,
                                            attribute=not req.no_macros)
        write_changed_lines(sub, case, tree, recs, i["from"], i["commit"], files, d)
        atomic_write_json(d / "pair.json", {
            "a": {"ref": a, "commit": i["from"], "subject": trees.subject(repo, i["from"])},
            "b": {"ref": b, "commit": i["commit"], "subject": i["subject"]},
            "tree": str(repo), "package": package, "files": files, "compilers": [i["cc"]],
            "config": rec["config"], "command": shlex.join(sys.argv),
            "make_command": i["make_compare"], "timings": pair_timings(by_side, files),
            "identity": results.identity(sub), "from_track": rec["name"],
            "spans": i["spans"]})
        done[key] = i["compare"] = d.relative_to(req.results).as_posix()


def _sub_request(req, files, ccs):
    return dataclasses.replace(req, files=files, compilers=ccs, compilers_given=True,
                               command="compare", no_time=True)


def write(out, rec, files, ccs):
    """track.json, a CSV per metric and compiler, interesting.md; the CSV
    of a metric or compiler no longer tracked is removed."""
    atomic_write_json(out / "track.json", rec)
    now = {f"{m}-{cc}.csv" for m in list(rec["metrics"]) + ["headers"] * ("headers" in rec)
           for cc in ccs}
    for p in out.glob("*.csv"):
        if p.name not in now and re.fullmatch(r"[a-z_]+-[a-z]+\.csv", p.name):
            log(f"removed {p.name}: a metric or compiler no longer tracked")
            p.unlink()
    for m in rec["metrics"]:
        for cc in ccs:
            cols = ["commit", "date", "subject"] + (files if m != "total_bytes"
                                                    else ["<whole build>"])
            rows = [dict({"commit": c["commit"], "date": c["date"], "subject": c["subject"]},
                         **{f: _value(c, cc, f, m) for f in cols[3:]}) for c in rec["commits"]]
            results.write_report(out / f"{m}-{cc}.csv", results.csv_text(cols, rows))
    for cc, h in (rec.get("headers") or {}).items():
        rows = [dict({"commit": c["commit"], "date": c["date"], "subject": c["subject"]},
                     **((c.get("header_own") or {}).get(cc) or {})) for c in rec["commits"]]
        results.write_report(out / f"headers-{cc}.csv", results.csv_text(
            ["commit", "date", "subject"] + h["names"], rows))
    lines = [f"# Interesting changes: {rec['name']} ({rec['range']})", ""]
    if not rec["interesting"]:
        lines.append("None: every change stayed within its noise and floor.")
    for i in rec["interesting"]:
        lines.append(f"- `{i['commit'][:12]}` {i['subject']}: {i['file']} {i['metric']} "
                     f"({i['cc']}) {i['before']:,} -> {i['after']:,} (x{i['ratio']}, "
                     f"z {i['z'] if i['z'] is not None else 'inf'}); `{i['make_compare']}`"
                     + (f" (spans {i['spans']} commits, from {i['from'][:12]})"
                        if i["spans"] > 1 else ""))
    results.write_report(out / "interesting.md", "\n".join(lines) + "\n")
