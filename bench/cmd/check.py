"""make check PATCHES=<mbox | dir | patch files> [BASE=] [KERNEL=] [CC=]
[THRESHOLD=]: does a posted series blow up any file the build compiles,
which patch did it, on which line, through which macro? Also
`make check KERNEL=<tree> A=<ref> B=<ref>` for a series already committed.

Steps (each cached: checking the next version of a series pays for its
tip only): the series is applied with `git am` in kexpand's own tree
(the user's is only read); every C file of the build is scanned at the
base and at the tip, Kbuild driving both (measure/kbuildscan.py: the
tip's scan dir starts as a copy of the base's, and Kbuild measures again
what the series changed, Makefiles and Kconfig included); files that grew past THRESHOLD are followed through every
patch of the series, with their hottest lines, macros and the
instruction count of -c. Writes results/check/<series>/check.json and
check.csv; report.py draws report.txt and report.md from them. Exit 1
when a file regressed (README, "Exit codes")."""
import shlex
import sys
import time

from kbuild import build, mbox, trees, workdir
from kbuild.gitops import git
from kbuild.util import EXIT_REGRESSION, KexpandError, atomic_write, atomic_write_json, log

from .. import results
from ..measure import scanfiles, seriescheck as sc
from ..measure.cache import At, Cache
from ..measure.scanpoint import scan_point
from .inputs import make_command, open_tree
from .checkdetail import explain

CHECK_COLUMNS = ["file", "compiler", "verdict", "bytes_base", "bytes_tip", "growth_bytes",
                 "change", "longest_line_base", "longest_line_tip", "hot_tip"]


def plan(req, case):
    """Everything checked before any work: the series (or A..B), the
    threshold, the compilers and where the report goes."""
    if req.patches and (req.a or req.b):
        raise KexpandError("give PATCHES= (with BASE=) or A= and B= (a series already "
                           "committed in KERNEL=), not both")
    if not req.patches and not (req.a and req.b):
        raise KexpandError("give the series: make check PATCHES=<mbox, directory or "
                           "patch files> [BASE=<ref>], or make check KERNEL=<tree> "
                           "A=<base ref> B=<tip ref>")
    if req.a and req.base:
        raise KexpandError("BASE= goes with PATCHES=; with A= and B=, A is the base")
    posted = mbox.read_series(req.patches) if req.patches else None
    say_skipped(posted)
    ratio = req.growth_ratio or sc.DEFAULT_RATIO
    total = req.total_ratio or sc.DEFAULT_TOTAL_RATIO
    base_ref = req.a or req.base or ("HEAD" if req.kernel else "packaged")
    name = req.name or (posted.slug if posted else
                        f"{results.safe_name(req.a)}..{results.safe_name(req.b)}")
    # a check is its series, its base (without BASE=, the series' declared
    # base, used when the tree has it), its tree, config and compilers
    declared = posted.base_commit if posted and not req.a and not req.base else None
    ident = dict(results.identity(req, files=False), series=name, base=declared or base_ref,
                 compilers=list(req.compilers) if req.compilers_given else ["gcc"])
    out = req.results / "check" / (results.safe_name(name) + results.identity_tag(
        req, files=False))
    results.claim_dir(out, ident)
    return posted, (ratio, total), base_ref, name, out, ident


def say_skipped(posted):
    """Log the mails of the input that are not applied, and why."""
    for m, why in posted.skipped if posted else ():
        log(f'skipped {m.where}: "{" ".join(filter(None, (m.prefix.text, m.subject)))}" '
            f"({why})")


def declared_base(repo, declared, base_ref, base):
    """(ref, commit) of the base without BASE=: the series' base-commit:
    when the tree has it, else base_ref (a failure to apply then names
    the declared base)."""
    try:
        commit = trees.resolve(repo, declared)
    except KexpandError:
        log(f"the series declares base-commit: {declared}, which {repo} does not have: "
            f"it is applied on {base_ref} (give BASE= to choose the base)")
        return base_ref, base
    log(f"BASE= not given: the series' base-commit: {declared} is the base")
    return declared, commit


def series_commits(req, tree, repo, posted, base, name):
    """[(n, subject, commit)] of the series, applied (PATCHES=) or read
    (A..B) in kexpand's own tree; the tip is the last."""
    if posted:
        with req.split.timed("builds"):
            done = mbox.apply_series(tree, base, posted)
        git(tree, "update-ref", f"refs/kexpand/check/{results.safe_name(name)}",
            done[-1][1])
        return [(i + 1, p.subject, c) for i, (p, c) in enumerate(done)]
    _a, tip = trees.require_ancestor(repo, req.a, req.b, f"A={req.a} B={req.b}")
    revs = git(tree, "rev-list", "--first-parent", "--reverse", f"{base}..{tip}").stdout.split()
    if not revs:
        raise KexpandError(f"B={req.b} has no commits on top of A={req.a}: nothing to check")
    return [(i + 1, trees.subject(repo, c), c) for i, c in enumerate(revs)]


def cmd_check(req, case):
    posted, (ratio, total), base_ref, name, out, ident = plan(req, case)
    cc_list = req.compilers if req.compilers_given else ["gcc"]
    t0 = time.monotonic()
    with workdir.lock(req.work):
        tree, repo, package, (base,) = open_tree(req, case, [base_ref])
        if posted and posted.base_commit and not req.base:
            base_ref, base = declared_base(repo, posted.base_commit, base_ref, base)
        commits = series_commits(req, tree, repo, posted, base, name)
        reason = "FULL_BUILD=1" if req.full_build else None
        log(f"series {name}: {len(commits)} patch(es) on {base_ref} ({base[:12]}); "
            + ("the tip is measured from nothing: FULL_BUILD=1" if reason else
               "Kbuild measures at the tip what the series changed, in a copy of "
               "the base's scan dir"))
        req.progress.total = 2 * len(cc_list)
        config = build.case_config(req, case)
        # both sides Kbuild-driven here (a remote scan's files would not
        # be the tip's): DASK_SCHEDULER is make scan's and make track's
        per_cc = {cc: check_compiler(req, case, tree, config, base, commits, cc,
                                     (ratio, total), base_ref) for cc in cc_list}
        rec = record(req, name, posted, base_ref, base, commits, repo, package, config,
                     per_cc, (ratio, total), reason, ident, time.monotonic() - t0)
        atomic_write_json(out / "check.json", rec)
        atomic_write(out / "check.csv", results.csv_text(CHECK_COLUMNS, [
            dict(r, compiler=cc) for cc, d in per_cc.items() for r in d["rows"]]))
    flagged = [(cc, r) for cc, d in per_cc.items() for r in d["regressions"]]
    failed = [(cc, r) for cc, d in per_cc.items() for r in d["failures"]]
    builds = [(cc, d["whole_build"]) for cc, d in per_cc.items()
              if d["whole_build"]["verdict"] == "regression"]
    for cc, w in builds:
        print(f"REGRESSION whole build ({cc}): {w['bytes_base']:,} -> {w['bytes_tip']:,} "
              f"bytes ({pct(w['change'])}; {w['files_grown']} file(s) grew)")
    for cc, r in flagged:
        print(f"REGRESSION {r['file']} ({cc}): {r['bytes_base']:,} -> {r['bytes_tip']:,} "
              f"bytes ({r['change']:+.1%})")
    for cc, r in failed:
        print(f"REGRESSION {r['file']} ({cc}): preprocesses at the base, fails at the "
              f"tip ({r['reason_tip']}): {r['error_tip']}")
    print(f"{len(flagged)} file regression(s) over {ratio - 1:.0%}"
          + (f", {len(failed)} file(s) failing at the tip" if failed else "")
          + "; whole build " + "; ".join(
              pct(d['whole_build']['change']) + (f" ({cc})" if len(per_cc) > 1 else "")
              for cc, d in per_cc.items())
          + (" (over " if builds else " (threshold ") + f"{total - 1:.1%})"
          + f"; report: {out}")
    return EXIT_REGRESSION if flagged or failed or builds else 0


def check_compiler(req, case, tree, config, base, commits, cc, ratios, base_ref):
    """Base and tip of one compiler, then the details of what regressed."""
    cache = Cache(req.work)
    at = At.of(base, cc, config)
    fresh = {"base": cache.get(cache.scan_key(at)) is None}
    scan_base = scan_point(req, case, tree, None, cache, config, base_ref, base, cc)
    tip = commits[-1][2]
    tipdir = sc.TipDir(req, tree, base, tip, cc, config)
    req.progress.step(f"tip {tip[:12]} / {cc}")
    # FULL_BUILD=1 trusts nothing: every file measured again, from nothing
    key = cache.scan_key(at.moved(tip)) + ("-fresh" if req.full_build else "")
    scan_tip = cache.get(key)
    fresh["tip"] = scan_tip is None
    inc_tip = None
    if scan_tip is None:
        with req.split.timed("expansion"):
            scan_tip = tipdir.scan(fresh=req.full_build)
        inc_tip = scanfiles.keep(cache, key, scan_tip)
    ratio, total = ratios
    rows = sc.compare(scan_base, scan_tip, ratio)
    whole = sc.whole_build(scan_base, scan_tip, rows, total)
    whole["headers"] = sc.header_changes(
        scan_base, scan_tip, scanfiles.file_headers(cache, cache.scan_key(at)),
        inc_tip if inc_tip is not None else scanfiles.file_headers(cache, key))
    whole["leads"] = sc.leads(whole, [r for r in rows if r["verdict"] == "regression"])
    regs = [r for r in rows if r["verdict"] == "regression"]
    better = [r for r in rows if r["verdict"] == "improvement"]
    # built and preprocessed at the base, fails at the tip (an #error, the
    # time or memory limit): as much a regression as growth
    failures = [r for r in rows if r["verdict"] == "error at tip"]
    log(f"{cc}: {len(rows)} files, {sum(r['verdict'] != 'same' for r in rows)} changed, "
        f"{len(regs)} over the threshold, {len(failures)} failing at the tip, "
        f"{len(better)} improved "
        f"({scan_tip['n_reused']} unchanged since measured); whole build "
        f"{whole['bytes_base']:,} -> {whole['bytes_tip']:,} bytes "
        f"({pct(whole['change'])}, {whole['verdict']})")
    # a whole build that grew past its threshold is explained on the file
    # where its top header grew most (the witness), as a file is
    witness = None
    top = (whole["headers"] or {}).get("top")
    if whole["verdict"] == "regression" and top:
        witness = next((r for r in rows if r["file"] == top["file_most"]), None)
        if witness is not None:
            witness["focus"] = top["header"]
    explained = regs
    if witness is not None and witness not in regs:
        explained = [witness] + regs if whole["leads"] == "whole build" else regs + [witness]
    if explained:    # the details, cached: the same series again costs nothing
        # clang's stacks for a blown-up file first, not for a spread's witness
        stacks = explained[0] is not witness or witness in regs
        dkey = cache.check_key(at, [c for _, _, c in commits], "kbuild",
                               [r["file"] for r in explained]
                               + ([] if stacks else ["(no stacks)"]))
        got = cache.get(dkey)
        if got and isinstance(got.get("explained"), list) and \
                [r["file"] for r in got["explained"]] == [r["file"] for r in explained]:
            explained = got["explained"]
        else:
            explain(req, case, tree, tipdir, at, commits, explained, cache, stacks=stacks)
            cache.put(dkey, {"explained": explained})
        by = {r["file"]: r for r in explained}
        regs = [by[r["file"]] for r in regs]
        if witness is not None:
            witness = by[witness["file"]]
    whole["witness"] = witness
    return {"rows": rows, "regressions": regs, "improvements": better, "failures": failures,
            "whole_build": whole,
            "scan_base": _scan_meta(scan_base, fresh["base"]),
            "scan_tip": _scan_meta(scan_tip, fresh["tip"]),
            "compiler_version": at.ccver}


def _scan_meta(s, fresh):
    """A scan's figures; sum_file_seconds: the -E seconds of the files
    this run measured (0 when the whole scan came from the cache)."""
    return dict({k: s.get(k) for k in ("n_files", "n_ok", "n_measured", "n_reused",
                                       "total_bytes", "scan_seconds", "workers", "build")},
                from_cache=not fresh,
                sum_file_seconds=s.get("measured_seconds", 0.0) if fresh else 0.0)


def pct(change):
    return "n/a" if change is None else f"{change:+.2%}"


def rules(d):
    """The rules that fired for one compiler: 'file' (a file grew past
    THRESHOLD), 'whole build' (TOTAL_THRESHOLD), 'tip failure'."""
    return [name for name, fired in (("file", d["regressions"]),
                                     ("whole build", d["whole_build"]["verdict"] == "regression"),
                                     ("tip failure", d["failures"])) if fired]


def mail_of(posted):
    """What a reply needs of the mail that names the series (the cover
    letter, else the first patch): None for a series read from commits."""
    m = posted and (posted.cover or posted.patches[0])
    return m and {"message_id": m.message_id or None, "from": m.author,
                  "to": list(m.to), "cc": list(m.cc),
                  "subject": " ".join(filter(None, (m.prefix.text, m.subject)))}


def record(req, name, posted, base_ref, base, commits, repo, package, config, per_cc,
           ratios, reason, ident, seconds):
    """check.json (README, "make check results")."""
    ratio, total = ratios
    pre = {p.subject: p.prefix.text for p in posted.patches} if posted else {}
    n = len(commits)
    return {
        "schema": 1, "kind": "kexpand.check", "name": name,
        "series": {"subject": posted.name if posted else f"{req.a}..{req.b}",
                   "version": posted.version if posted else None,
                   "key": mbox.series_key(posted) if posted else None,
                   "sources": [str(s) for s in posted.sources] if posted else [],
                   "mail": mail_of(posted),
                   "patches": [{"n": i, "of": n, "subject": s, "commit": c,
                                "prefix": pre.get(s, "")} for i, s, c in commits]},
        "base": {"ref": base_ref, "commit": base, "subject": trees.subject(repo, base)
                 if not posted or req.kernel else trees.subject(repo, base)},
        "tip": {"commit": commits[-1][2]}, "tree": str(repo), "package": package,
        "config": config.describe(),
        "compilers": {cc: d["compiler_version"] for cc, d in per_cc.items()},
        "threshold": {"ratio": ratio, "given": req.threshold,
                      "min_growth_bytes": sc.MIN_GROWTH,
                      "total_ratio": total, "total_given": req.total_threshold,
                      "total_min_growth_bytes": sc.TOTAL_MIN_GROWTH},
        "path": "fresh" if reason else "seeded", "path_reason": reason,
        "verdict": "regression" if any(rules(d) for d in per_cc.values()) else "ok",
        "rules": sorted({r for d in per_cc.values() for r in rules(d)}),
        "results": {cc: dict({k: d[k] for k in ("regressions", "improvements", "failures",
                                                "whole_build", "scan_base", "scan_tip")},
                             rules=rules(d))
                    for cc, d in per_cc.items()},
        "seconds": round(seconds, 1), "split_s": {k: round(v, 1) for k, v in
                                                  req.split.report()[1].items()},
        "identity": ident, "command": shlex.join(sys.argv),
        "make_command": make_command(req), **results.stamp()}
