"""make check PATCHES=<mbox | dir | patch files> [BASE=] [KERNEL=] [CC=]
[THRESHOLD=]: does a posted series blow up any file the build compiles,
which patch did it, on which line, through which macro? Also
`make check KERNEL=<tree> A=<ref> B=<ref>` for a series already committed.

Steps (each cached: checking the next version of a series pays for its
tip only): the series is applied with `git am` in kexpand's own tree
(the user's is only read); every C file of the build is scanned at the
base and at the tip, Kbuild driving both (measure/kbuildscan.py: the
tip's scan dir starts as a copy of the base's, and Kbuild measures again
what the series changed, Makefiles and Kconfig included); files that
grew past THRESHOLD are followed through every patch of the series,
with their hottest lines, macros and the instruction count of -c.
Every compiler's work at a commit is done in one visit (check_series).
Writes results/check/<series>/check.json and
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
        per_cc = check_series(req, case, tree, config, base, commits, cc_list,
                              (ratio, total), base_ref)
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


class Side:
    """One compiler's side of a check: its base and tip scans, the rows
    judged, and what of them the details explain."""

    def __init__(self, req, tree, cache, config, base, commits, cc):
        self.req, self.tree, self.cache, self.cc = req, tree, cache, cc
        self.at = At.of(base, cc, config)
        self.tip = commits[-1][2]
        self.tipdir = sc.TipDir(req, tree, base, self.tip, cc, config)
        self.fresh = {"base": cache.get(cache.scan_key(self.at)) is None}
        self.scan_base = self.scan_tip = self.inc_tip = None

    def measure_base(self, case, base_ref):
        self.scan_base = scan_point(self.req, case, self.tree, None, self.cache,
                                    self.tipdir.config, base_ref, self.at.commit, self.cc)

    def measure_tip(self):
        req, cache = self.req, self.cache
        req.progress.step(f"tip {self.tip[:12]} / {self.cc}")
        # FULL_BUILD=1 trusts nothing: every file measured again, from nothing
        self.key = cache.scan_key(self.at.moved(self.tip)) + ("-fresh" if req.full_build else "")
        self.scan_tip = cache.get(self.key)
        self.fresh["tip"] = self.scan_tip is None
        if self.scan_tip is None:
            with req.split.timed("expansion"):
                self.scan_tip = self.tipdir.scan(fresh=req.full_build)
            self.inc_tip = scanfiles.keep(cache, self.key, self.scan_tip)

    def judge(self, ratios):
        """The rows, the whole build, the rows the details explain."""
        ratio, total = ratios
        cache, cc = self.cache, self.cc
        rows = self.rows = sc.compare(self.scan_base, self.scan_tip, ratio)
        whole = self.whole = sc.whole_build(self.scan_base, self.scan_tip, rows, total)
        whole["headers"] = sc.header_changes(
            self.scan_base, self.scan_tip,
            lambda: scanfiles.file_headers(cache, cache.scan_key(self.at)),
            lambda: self.inc_tip if self.inc_tip is not None else
            scanfiles.file_headers(cache, self.key))
        regs = self.regs = [r for r in rows if r["verdict"] == "regression"]
        whole["leads"] = sc.leads(whole, regs)
        self.better = [r for r in rows if r["verdict"] == "improvement"]
        # built and preprocessed at the base, fails at the tip (an #error, the
        # time or memory limit): as much a regression as growth
        self.failures = [r for r in rows if r["verdict"] == "error at tip"]
        log(f"{cc}: {len(rows)} files, {sum(r['verdict'] != 'same' for r in rows)} changed, "
            f"{len(regs)} over the threshold, {len(self.failures)} failing at the tip, "
            f"{len(self.better)} improved "
            f"({self.scan_tip['n_reused']} unchanged since measured); whole build "
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
        self.witness = witness
        explained = regs
        if witness is not None and witness not in regs:
            explained = [witness] + regs if whole["leads"] == "whole build" else regs + [witness]
        self.explained = explained
        # clang's stacks for a blown-up file first, not for a spread's witness
        self.stacks = bool(explained) and (explained[0] is not witness or witness in regs)

    def details_cached(self, commits):
        """The details of the same rows at the same commits, from the cache
        (True: taken), else False and the key they will be kept under."""
        names = [r["file"] for r in self.explained]
        self.dkey = self.cache.check_key(self.at, [c for _, _, c in commits], "kbuild",
                                         names + ([] if self.stacks else ["(no stacks)"]))
        got = self.cache.get(self.dkey)
        if got and isinstance(got.get("explained"), list) and \
                [r["file"] for r in got["explained"]] == names:
            self.explained = got["explained"]
            return True
        return False

    def result(self):
        by = {r["file"]: r for r in self.explained}
        self.whole["witness"] = self.witness and by[self.witness["file"]]
        return {"rows": self.rows, "regressions": [by[r["file"]] for r in self.regs],
                "improvements": self.better, "failures": self.failures,
                "whole_build": self.whole,
                "scan_base": _scan_meta(self.scan_base, self.fresh["base"]),
                "scan_tip": _scan_meta(self.scan_tip, self.fresh["tip"]),
                "compiler_version": self.at.ccver}


def check_series(req, case, tree, config, base, commits, cc_list, ratios, base_ref):
    """{compiler: what it found} (Side.result). Each commit is visited
    once, every compiler's work done there: the base (only when a scan of
    it is missing: the tip's scan dir starts as a copy of the base's), the
    tip (scans, then the details of what regressed), the series' commits
    from the last to the first (which patch grew each file), the base
    (the details' other side)."""
    cache = Cache(req.work)
    sides = [Side(req, tree, cache, config, base, commits, cc) for cc in cc_list]
    for s in sides:
        s.measure_base(case, base_ref)
    for s in sides:
        s.measure_tip()
        s.judge(ratios)
    todo = [s for s in sides if s.explained and not s.details_cached(commits)]
    if todo:        # the details, cached: the same series again costs nothing
        explain(req, case, tree, commits, todo)
        for s in todo:
            cache.put(s.dkey, {"explained": s.explained})
    return {s.cc: s.result() for s in sides}


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
        "base": {"ref": base_ref, "commit": base, "subject": trees.subject(repo, base)},
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
