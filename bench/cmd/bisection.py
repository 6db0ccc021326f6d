"""make bisect: `git bisect run` on one file's expansion bytes, in a bare
clone of its own, then the answer checked against every commit's
measurement. Writes results/bisect/<GOOD>..<BAD>/<file>.json."""
import os
import shlex
import shutil
import sys
from pathlib import Path

from kbuild import series, trees, workdir
from kbuild.proc import run
from kbuild.util import EXIT_BUILD, KexpandError, atomic_write_json, log

from .. import results
from ..measure import macros
from ..measure.point import measure_point
from .inputs import (check_file_names, file_slug, make_command,
                     open_tree)

# what `git bisect run` reads from a step's exit code
BISECT_GOOD, BISECT_BAD, BISECT_SKIP, BISECT_ABORT = 0, 1, 125, 255


def measure_one(req, case, tree, name, commit, file):
    """The gcc expansion entry of one file at one commit (cached)."""
    rec = measure_point(req, case, tree, name, commit, "gcc", [file])
    return rec["files"][file]


def macro_changes(req, case, tree, first, file):
    """The macros whose own bytes (gcc) changed most at the first bad
    commit, against its parent."""
    parent = series.git(tree, "rev-parse", f"{first}^").stdout.strip()
    e = {}
    for c in (parent, first):
        rec = measure_point(req, case, tree, c[:12], c, "gcc", [file],
                                   attribute=True)
        e[c] = (rec["files"][file].get("macros") or {})
    if any(m.get("status") not in ("ok", "mismatch") for m in e.values()):
        return None
    return [{"macro": n, "own_bytes_before": a, "own_bytes_after": b}
            for n, a, b in macros.changes(e[parent]["macros"], e[first]["macros"],
                                          "own_bytes")]


def threshold_bytes(spec, good, bad):
    """THRESHOLD (settings.parse_threshold's ('bytes', n) or ('ratio', r))
    as bytes; None: the geometric mean of GOOD and BAD."""
    if spec is None:
        return int((good * bad) ** 0.5)
    kind, v = spec
    return int(v * good) if kind == "ratio" else v


def cmd_bisect(req, case):
    if not (req.file and req.good and req.bad):
        raise KexpandError("give FILE=<path> GOOD=<ref> BAD=<ref>, for example "
                           "make bisect FILE=arch/x86/xen/setup.c GOOD=pre-6.7 "
                           "BAD=laight-v4")
    focus = [f for f, _ in case.focus]
    check_file_names([req.file], focus)
    with workdir.lock(req.work):
        tree, repo, package, (good, bad) = open_tree(req, case, [req.good, req.bad],
                                                     [req.file], focus)
        eg = measure_one(req, case, tree, req.good, good, req.file)
        eb = measure_one(req, case, tree, req.bad, bad, req.file)
        if eg["status"] != "ok" or eb["status"] != "ok":
            raise KexpandError(f"{req.file} does not build at GOOD or BAD: "
                               f"{eg.get('status')}/{eb.get('status')}", "build")
        gb, bb = eg["expanded_bytes"], eb["expanded_bytes"]
        thr = threshold_bytes(req.bisect_threshold, gb, bb)
        if not gb <= thr < bb:
            raise KexpandError(f"threshold {thr:,} bytes does not separate "
                               f"GOOD ({gb:,}) from BAD ({bb:,}) for {req.file}")
        first, log_text = git_bisect(req, case, tree, good, bad, thr, gb, bb)
        table = per_commit(req, case, tree, good, bad)
        linear_first = next((c for c, b, _ in table if b is not None and b > thr), None)
        changed = None
        if not req.no_macros:
            req.progress.say(f"attributing {req.file} to macros at {first[:12]} "
                             "and its parent")
            changed = macro_changes(req, case, tree, first, req.file)
        out = {"file": req.file,
               "good": {"ref": req.good, "commit": good, "bytes": gb},
               "bad": {"ref": req.bad, "commit": bad, "bytes": bb},
               "threshold_bytes": thr, "first_bad": first,
               "first_bad_subject": trees.subject(tree, first),
               "first_bad_macros": changed,
               "agrees_with_per_commit_measurements": linear_first == first,
               "per_commit": [{"commit": c, "bytes": b, "subject": s,
                               "status": "ok" if b is not None else "not measured"}
                              for c, b, s in table],
               "bisect_log": log_text, "tree": str(repo), "package": package,
               "command": shlex.join(sys.argv), "make_command": make_command(req)}
        d = results.report_dir(req, "bisect", req.good, req.bad)
        atomic_write_json(d / f"{file_slug(req.file)}.json", out)
    print_bisect(out, thr, table)
    # a bisect that disagrees with the per-commit table is a failed build
    # of the answer (README, "Exit codes")
    return 0 if out["agrees_with_per_commit_measurements"] else EXIT_BUILD


def git_bisect(req, case, tree, good, bad, thr, gb, bb):
    """`git bisect run` in a bare clone of our own (--no-checkout:
    BISECT_HEAD is the commit to test): the tree measured, and the
    user's, keep their HEAD and have no bisect state."""
    bis = workdir.bisect(req.work)
    shutil.rmtree(bis, ignore_errors=True)
    run(["git", "clone", "-q", "--bare", "--shared", str(tree), str(bis)],
        what="git clone --bare --shared")
    step = [sys.executable, str(Path(__file__).resolve().parent.parent / "kexpand.py"),
            "bisect-step", "--case", case.name, "--tree", str(tree),
            "--file", req.file, "--threshold", str(thr),
            "--strict-config", "1" if req.strict_config else "0"]
    series.git(bis, "bisect", "start", "--no-checkout", bad, good)
    req.progress.say(f"git bisect run on {req.file}: good {req.good} ({gb:,} B), "
                     f"bad {req.bad} ({bb:,} B), threshold {thr:,} B")
    p = run(["git", "-C", str(bis), "bisect", "run", *step], check=False)
    first = series.git(bis, "rev-parse", "-q", "--verify", "refs/bisect/bad",
                       check=False).stdout.strip()
    log_text = series.git(bis, "bisect", "log").stdout
    series.git(bis, "bisect", "reset")
    if p.returncode != 0 or not first:
        raise KexpandError(f"git bisect run failed:\n{p.stdout[-2000:]}", "build")
    return first, log_text


def per_commit(req, case, tree, good, bad):
    """[(commit, bytes or None, subject)] for GOOD and every commit up to BAD."""
    revs = series.git(tree, "rev-list", "--reverse", f"{good}..{bad}").stdout.split()
    table = []
    for c in [good] + revs:
        e = measure_one(req, case, tree, c[:12], c, req.file)
        table.append((c, e.get("expanded_bytes"), trees.subject(tree, c)))
    return table


def print_bisect(out, thr, table):
    first = out["first_bad"]
    print(f"first commit past {thr:,} bytes for {out['file']}:")
    print(f"  {first[:12]} {out['first_bad_subject']}")
    print("per-commit measurements (gcc -E bytes):")
    for c, b, subj in table:
        mark = "  <- first bad" if c == first else ""
        print(f"  {c[:12]} {b if b is not None else 'n/a':>12}  {subj[:60]}{mark}")
    if out.get("first_bad_macros"):
        print(f"macros whose own bytes changed most at {first[:12]} (gcc):")
        for m in out["first_bad_macros"][:5]:
            a, b = m["own_bytes_before"], m["own_bytes_after"]
            print(f"  {m['macro']:28} {a if a is not None else '-':>12} -> "
                  f"{b if b is not None else '-':>12}")
    print("bisect agrees with the per-commit measurements" if
          out["agrees_with_per_commit_measurements"] else
          "WARNING: bisect disagrees with the per-commit measurements")


def cmd_bisect_step(req, case, tree, threshold):
    """`git bisect run` helper: exit 0 below the threshold, 1 above,
    125 when the file cannot be measured at this commit, 255 (abort) when
    the machine failed."""
    commit = run(["git", "rev-parse", "BISECT_HEAD"]).stdout.strip()
    # git bisect run exports GIT_DIR (of the bisect clone) to its command;
    # the measuring happens in another repository
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX",
                "GIT_COMMON_DIR"):
        os.environ.pop(var, None)
    try:
        e = measure_one(req, case, Path(tree), commit[:12], commit, req.file)
    except KexpandError as err:
        log(f"bisect step {commit[:12]}: {err}")
        # the machine failed, not the commit: abort the bisect (> 127)
        return BISECT_ABORT if err.klass == "infra" else BISECT_SKIP
    if e.get("status") != "ok":
        return BISECT_SKIP
    b = e["expanded_bytes"]
    log(f"bisect step {commit[:12]}: {b:,} bytes "
        f"({'bad' if b > threshold else 'good'})")
    return BISECT_BAD if b > threshold else BISECT_GOOD
