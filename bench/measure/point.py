"""Measuring commits: each file's exact Kbuild command at one (commit,
compiler) through the analyzer (bytes), the macro attribution and the
instruction counter, every measurement through the cache; then the
compile cost of a group of commits, timed together; then one record per
(commit, compiler), written once. Everything a command measures about its
focus files comes through measure_commits() (or measure_point() for one
side)."""
from kbuild import build, builddir, kcmd, series
from kbuild.proc import run_jobs
from kbuild.util import EXIT_BUILD

from .. import results
from . import cost, macros
from .cache import At, Cache
from .expansion import measure_file

KINDS = ("expand", "macros")
VALID = {"expand": results.entry_ok, "macros": results.macros_ok}


class PointMeasurement:
    """One (commit, compiler): what each file lacks (expansion, macros,
    instruction counts) is found in the cache first; the objects that are
    needed are built once; then the exact work runs JOBS at a time, each
    file's expansion handing its -E count and its attribution to the front
    of the queue (both read the expansion: the count's cap its CPU time,
    the attribution its hottest line)."""

    def __init__(self, req, case, tree, name, commit, cc, files, attribute, count,
                 count_kinds=cost.KINDS, move_from=None):
        self.req, self.case, self.tree = req, case, tree
        self.name, self.commit, self.cc, self.files = name, commit, cc, files
        self.count = count
        self.count_kinds = tuple(count_kinds) if count else ()
        self.move_from = move_from
        self.cache = Cache(req.work)
        self.bdir = build.build_dir(tree, commit, cc)
        self.config = build.case_config(req, case)
        self.at = At.of(commit, cc, self.config)
        self.kinds = KINDS if attribute else KINDS[:1]
        self.got = {}                                 # (file, kind) -> entry
        self.counts = {f: {} for f in files}          # file -> {time_E: count}
        self.to_count = {f: [] for f in files}        # file -> [(kind, key)]
        self.failed = {}                              # file -> failure entry
        self.build_info = None

    def key(self, f, kind):
        if kind == "expand":
            return self.cache.expand_key(self.at, f)
        return self.cache.macros_key(self.at, f)

    def load(self):
        """What the cache has; a value of the wrong shape is measured again."""
        for f in self.files:
            for k in self.kinds:
                v = self.cache.get(self.key(f, k))
                self.got[(f, k)] = v if v is None or VALID[k](v) else None

    def missing(self, f):
        return any(self.got[(f, k)] is None for k in self.kinds)

    def plan(self, f, kinds):
        """The instruction counts of f to take from the cache or to make."""
        for kind in kinds:
            e = self.got[(f, "expand")]
            est = e.get("cpp_cpu_s", e["analyze_seconds"]) if kind == "time_E" else 0
            what, v = cost.count_plan(self.req, self.cache, self.at, f, kind, est)
            if what == "have":
                self.counts[f][kind] = v
            else:
                self.to_count[f].append((kind, v))

    def take_counts(self, f):
        jobs = [(self.count_now, (f, kind, k)) for kind, k in self.to_count[f]]
        self.to_count[f] = []
        return jobs

    # --- the jobs (run_jobs: a job's first argument is its file) ----------

    def count_now(self, f, kind, key):
        self.req.progress.say(f"  counting instructions of {f} "
                              f"({'-E' if kind == 'time_E' else '-c'}, {self.name}, {self.cc})")
        e = self.got.get((f, "expand"))
        est = e.get("cpp_cpu_s", e.get("analyze_seconds")) if e else None
        self.counts[f][kind] = cost.count_one(self.cache, key, self.bdir, f, self.cc,
                                              kind, estimate_s=est)

    def attribute(self, f):
        self.req.progress.say(f"  attributing {f} to macros ({self.name}, {self.cc})")
        m = macros.measure(self.bdir, f, self.cc, self.got[(f, "expand")])
        self.got[(f, "macros")] = m
        if m["status"] != "error":      # tool failures are retried
            self.cache.put(self.key(f, "macros"), m)

    def expand(self, f):
        """f's expansion; then, ahead of everything queued, what needs it."""
        if self.got[(f, "expand")] is None:
            self.req.progress.say(f"  preprocessing {f} ({self.name}, {self.cc})")
            self.got[(f, "expand")] = measure_file(self.bdir, f)
            self.cache.put(self.key(f, "expand"), self.got[(f, "expand")])
        nxt = []
        if "time_E" in self.count_kinds:
            self.plan(f, ["time_E"])
            nxt += self.take_counts(f)
        if "macros" in self.kinds and self.got[(f, "macros")] is None:
            nxt.append((self.attribute, (f,)))
        return nxt

    # --- the whole point -------------------------------------------------

    def build_needed(self, need):
        """Build the objects of `need` unless this dir built them at this
        commit and config already (builddir.built); returns the files that
        can be measured."""
        series.checkout(self.tree, self.commit)
        if builddir.built(self.bdir, self.at.chash, need):
            return list(need)
        targets = [kcmd.obj_of(f) for f in need]
        with self.req.split.timed("builds"):
            b = builddir.build_objects(self.tree, self.bdir, self.cc, self.config,
                                       targets, self.req.jobs, move_from=self.move_from)
        self.build_info = {"ok": b.ok, "seconds": round(b.seconds, 1),
                           "targets": targets, "failed": b.failed}
        ok = [f for f in need if kcmd.obj_of(f) not in b.failed]
        for f in need:
            if f not in ok:
                self.failed[f] = {"status": "build-failure", "log_tail": b.log_tail}
        return ok

    def run(self):
        self.load()
        if self.count:
            for f in self.files:
                if not self.missing(f) and self.got[(f, "expand")].get("status") == "ok":
                    self.plan(f, self.count_kinds)
        need = [f for f in self.files if self.missing(f) or self.to_count[f]]
        if need:
            work = []
            for f in self.build_needed(need):
                # -c needs no estimate: its count starts beside the
                # expansions, so that the heaviest file's two long counts overlap
                if self.missing(f):
                    if "time_c" in self.count_kinds:
                        self.plan(f, ["time_c"])
                    work.append((self.expand, (f,)))
                work += self.take_counts(f)
            if work:
                with self.req.split.timed("expansion, macros, counts"):
                    run_jobs(work, self.req.jobs, self.failed)
        return self.record()

    def record(self):
        entries = {}
        for f in self.files:
            entries[f] = self.failed.get(f) or dict(
                self.got[(f, "expand")], **{k: self.got[(f, k)] for k in self.kinds[1:]})
            if self.count and f not in self.failed:
                entries[f]["counts"] = self.counts[f]
        rec = results.header("kexpand.expansion", self.case.name, self.name, self.at)
        rec.update({"arch": build.ARCH, "build_dir": self.bdir.name,
                    "build": self.build_info, "files": entries})
        return rec


def measure_point(req, case, tree, name, commit, cc, files, attribute=False,
                  count=False, count_kinds=cost.KINDS, move_from=None):
    """Expansion, (if `attribute`) the macros and (if `count`) the
    instruction counts of each file at one (commit, compiler); builds only
    what is not in the cache. Returns the record; with `count`, each ok
    entry carries "counts" {time_E, time_c} until measure_cost moves them
    into its timed entries."""
    return PointMeasurement(req, case, tree, name, commit, cc, files,
                            attribute, count, count_kinds, move_from).run()


def measure_cost(req, case, tree, sides, cc, recs):
    """Times (interleaved across the sides where each file was measured
    ok), added to the records `recs` (one per side, in order) as time_E /
    time_c with the instruction counts measure_point took; a timed command
    that fails makes its file an error at that side. sides: [(name, commit)]."""
    cache = Cache(req.work)
    at = At.of(sides[0][1], cc, build.case_config(req, case))
    ok_sides = {f: [i for i, r in enumerate(recs) if r["files"][f].get("status") == "ok"]
                for f in recs[0]["files"]}
    ok_sides = {f: idx for f, idx in ok_sides.items() if idx}
    entry = lambda i, f: recs[i]["files"][f]        # noqa: E731
    est = {f: max(entry(i, f).get("cpp_cpu_s", entry(i, f)["analyze_seconds"])
                  for i in idx) for f, idx in ok_sides.items()}
    counted = {(f, k): all((entry(i, f).get("counts") or {}).get(k, {})
                           .get("instructions") is not None for i in idx)
               for f, idx in ok_sides.items() for k in cost.KINDS}
    timed, errors = cost.time_group(req, cache, tree, sides, at, ok_sides, est, counted)
    for (i, f), t in timed.items():
        e = dict(entry(i, f), **t)
        cost.add_counts(e, e.pop("counts", None))
        recs[i]["files"][f] = e
    for (i, f), err in errors.items():
        recs[i]["files"][f] = {"status": "error", "error": err}
    return recs


def measure_commits(req, case, tree, todo, files, package, timed=True,
                    attribute=True, compilers=None):
    """Measure [(name, commit)] x compilers x files through the cache (and,
    if `timed`, count instructions and time all commits of `todo`
    together, interleaved), then write one record per (commit, compiler),
    merged with the other files of an earlier record. Nothing measured is
    lost when the timed runs fail or are interrupted: every measurement is
    in the cache, and the next run takes it from there. Returns the worst
    exit code, the records written by (commit, compiler), and the records
    by compiler in the order of `todo` (an A/A compare has the same commit
    twice)."""
    worst, written, by_side = 0, {}, {}
    for cc in compilers or req.compilers:
        recs = []
        for name, commit in todo:
            req.progress.step(f"{name} / {cc}")
            rec = measure_point(req, case, tree, name, commit, cc, files,
                                attribute=attribute, count=timed)
            rec["package"] = package
            recs.append(rec)
        if timed:
            measure_cost(req, case, tree, todo, cc, recs)
        for rec in recs:
            for e in rec["files"].values():
                e.pop("counts", None)
        if any(e["status"] != "ok" for r in recs for e in r["files"].values()):
            worst = max(worst, EXIT_BUILD)
        by_side[cc] = recs
        for rec in recs:
            if (rec["commit"], cc) in written:      # A=B: one record
                continue
            rec = results.merge_record(req.results, rec)
            results.write_record(req.results, rec)
            written[(rec["commit"], cc)] = rec
    return worst, written, by_side


def pair_timings(by_side, files):
    """The compile cost of A and B as measured together (interleaved) for
    this compare: {compiler: {file: {"a": {time_E, time_c}, "b": ...}}}.
    Kept in pair.json, because with A=B both sides are one commit (one
    record) and still two sets of runs."""
    out = {}
    for cc, (ra, rb) in by_side.items():
        out[cc] = {f: {side: {k: r["files"][f][k] for k in ("time_E", "time_c")}
                       for side, r in (("a", ra), ("b", rb))}
                   for f in files
                   if all(r["files"].get(f, {}).get("time_c") for r in (ra, rb))}
    return out
