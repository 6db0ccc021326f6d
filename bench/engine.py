"""The measuring engine: one (commit, compiler) at a time, each file's exact
Kbuild command through the C analyzer (bytes) and hyperfine (times), every
measurement through the cache. Everything a stage measures comes through
measure_point()."""
import hashlib
import json
import shlex
import time
from pathlib import Path

from kbuild import build, kcmd, series
from kbuild.util import (REPO, KexpandError, atomic_write, atomic_write_json,
                         log, pipe, read_json, run_jobs)

from . import cost, macros, results

ANALYZER = Path(__file__).resolve().parent / "kx-analyze"
ANALYZER_VERSION = "2"
# Scans of version 1 could keep the wrong one of a C file built into two
# objects (scan.one_per_file); their cached results are not reused.
SCAN_VERSION = "2"
TOP_LINES = 5


class Cache:
    """Measurements keyed by (commit, compiler + version, config hash, file,
    kind, setting); one small JSON file each. One key function per kind, so
    every stage that reuses a measurement builds the same key."""

    def __init__(self, work):
        self.dir = Path(work) / "cache"

    @staticmethod
    def _key(*parts):
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]

    def expand_key(self, commit, cc, ccver, chash, f):
        return self._key(commit, cc, ccver, chash, f, "expand", ANALYZER_VERSION)

    def group_time_key(self, commits, cc, ccver, chash, f, runs):
        """One file's interleaved runs at a group of commits (bench/cost.py)."""
        return self._key(commits, cc, ccver, chash, f, "interleaved",
                         cost.VERSION, f"runs={runs}")

    def icount_key(self, commit, cc, ccver, chash, f, kind, source):
        return self._key(commit, cc, ccver, chash, f, kind, "icount", source,
                         cost.VERSION)

    def boot_key(self, commit, ccver, chash, inputs, qver, promises, timeout):
        return self._key(commit, "gcc", ccver, chash, "boot", inputs, qver,
                         promises, timeout)

    def conformance_key(self, commit, ccver, chash, snippet_hash):
        return self._key(commit, "gcc", ccver, chash, "conformance", snippet_hash)

    def lines_key(self, commit, cc, ccver, chash, f):
        return self._key(commit, cc, ccver, chash, f, "lines", ANALYZER_VERSION)

    def macros_key(self, commit, cc, ccver, chash, f):
        return self._key(commit, cc, ccver, chash, f, "macros", macros.VERSION)

    def sweep_key(self, commit, ccver, config_sha, f):
        """One file under one .config of a sweep (bench/sweep.py), gcc."""
        return self._key(commit, "gcc", ccver, config_sha, f, "sweep", ANALYZER_VERSION)

    def scanfile_key(self, cc, ccver, inputs):
        """One file of a scan, by the hash of everything its -E output
        depends on (bench/scan.py input_key), whatever the commit."""
        return self._key(cc, ccver, inputs, "scanfile", ANALYZER_VERSION, SCAN_VERSION)

    def scan_key(self, commit, cc, ccver, chash):
        return self._key(commit, cc, ccver, chash, "scan", ANALYZER_VERSION, SCAN_VERSION)

    def get(self, key, shape=dict):
        """The cached value, or None. A value of the wrong shape is
        reported once and treated as missing (it is measured again)."""
        p = self.dir / f"{key}.json"
        if not p.exists():
            return None
        v = read_json(p)
        if v is not None and not isinstance(v, shape):
            log(f"warning: cache entry {p} has the wrong shape; measuring again")
            return None
        return v

    def put(self, key, value):
        atomic_write_json(self.dir / f"{key}.json", value)


def analyze(cmd, cwd, top=TOP_LINES):
    """Run a preprocess command into the C analyzer through a pipe (never
    a temporary file). Returns (analysis, seconds); analysis["cpp_cpu_s"]
    is the preprocessor's CPU time (wait4). The preprocessor failing
    is a 'build' error (the code under test); the analyzer, 'infra'."""
    if not ANALYZER.exists():
        raise KexpandError(f"{ANALYZER} missing: run 'make -C {REPO} "
                           "bench/kx-analyze'", "infra")
    t0 = time.monotonic()
    out, aerr, prc, perr, arc, cpu = pipe(cmd, [str(ANALYZER), "-n", str(top)], cwd)
    secs = time.monotonic() - t0
    if prc != 0:
        tail = "\n".join(perr.decode(errors="replace").splitlines()[-15:])
        raise KexpandError(f"preprocessing failed (exit {prc}): "
                           f"{shlex.join(cmd)}\n{tail}", "build")
    if arc != 0:
        raise KexpandError(f"kx-analyze failed: {aerr.decode(errors='replace')}",
                           "infra")
    a = json.loads(out)
    a["cpp_cpu_s"] = round(cpu, 3)
    return a, secs


def tree_path(p):
    """A line-marker path relative to the build dir -> relative to the tree."""
    return p[3:] if p.startswith("../") else p


def statement(text, line, maxlines=6):
    """The source statement at `line` of `text`: that line plus
    continuation lines while parentheses are open."""
    out, depth = [], 0
    for s in text.splitlines()[line - 1:line - 1 + maxlines]:
        out.append(s.strip())
        depth += s.count("(") - s.count(")")
        if depth <= 0:
            break
    return " ".join(out)


def source_text(bdir, relpath, line):
    """The statement at relpath:line (relative to the build dir)."""
    if relpath.startswith("<"):
        return ""
    try:
        return statement((bdir / relpath).read_text(errors="replace"), line)
    except OSError:
        return ""


def measure_file(bdir, src):
    """The expansion entry of one file: bytes, lines, hottest lines."""
    argv = kcmd.compile_command(bdir, src)
    pcmd = kcmd.preprocess_command(argv)
    a, secs = analyze(pcmd, bdir)
    hot = [{"at": f"{tree_path(t['file'])}:{t['line']}", "bytes": t["bytes"],
            "source": source_text(bdir, t["file"], t["line"]),
            "choose_expr": t["choose_expr"], "stmt_expr": t["stmt_expr"],
            "unique_id": t["unique_id"]} for t in a["top"]]
    la = a.get("longest_line_at")
    return {
        "status": "ok",
        "expanded_bytes": a["bytes"], "lines": a["lines"],
        "longest_line_bytes": a["longest_line_bytes"],
        "longest_line_at": f"{tree_path(la['file'])}:{la['line']}" if la else None,
        "code_bytes": a["code_bytes"], "marker_lines": a["marker_lines"],
        "macro_totals": a["totals"],
        "hot_lines": hot,
        "analyze_seconds": round(secs, 3),
        "cpp_cpu_s": a["cpp_cpu_s"],
        "command": f"cd {shlex.quote(bdir.name)} && {shlex.join(pcmd)} | "
                   f"{ANALYZER.relative_to(REPO)} -n {TOP_LINES}",
    }


def _build_objects(req, case, tree, bdir, name, cc, todo):
    """Configure and build the objects of `todo`; a config that fails is a
    build failure of every object (the code under test)."""
    objs = [kcmd.obj_of(f) for f in todo]
    with req.split.timed("builds"):
        try:
            build.configure(tree, bdir, cc, case_config(req, case), seed=True)
        except KexpandError as e:
            if e.klass != "build":
                raise
            log(f"point {name}: {e}")
            return build.BuildResult(False, 0.0, str(e), objs)
        return build.build(tree, bdir, cc, objs, req.jobs)


BUILT = ".kexpand-built"     # objects a measuring build made in this dir


def _owner(bdir, chash):
    """The list's first line: the dir (so a seeded copy, another commit's
    dir, does not take its source's list) and the config it was made with."""
    return f"for={Path(bdir).name}:{chash}"


def built(bdir, chash, files):
    """Every file's object was built in bdir, at its commit, with this
    config (or the whole kernel was: "*"): measuring them again (a new
    kind, a new analyzer) needs no build. Building again would not be
    free: checkouts of other commits leave newer files behind, so make
    would recompile objects that are already this commit's."""
    stamp, done = bdir / ".kexpand-config", bdir / BUILT
    if not (stamp.exists() and done.exists()) or stamp.read_text().strip() != chash:
        return False
    have = set(done.read_text().split())
    return _owner(bdir, chash) in have and all(
        (kcmd.obj_of(f) in have or "*" in have) and kcmd.cmd_file(bdir, f).exists()
        for f in files)


def note_full_build(bdir):
    """The whole kernel was built in bdir at its commit: every object with
    a command file is this commit's."""
    note_built(bdir, build.BuildResult(True, 0.0, "", []), ["*"])


def note_built(bdir, b, targets):
    """Add the objects just built to the list; a list of another dir or
    config starts again."""
    done, owner = bdir / BUILT, _owner(bdir, (bdir / ".kexpand-config").read_text().strip())
    have = set(done.read_text().split()) if done.exists() else set()
    if owner not in have:
        have = {owner}
    have |= {t for t in targets if t not in b.failed}
    atomic_write(done, "".join(f"{t}\n" for t in sorted(have)))


def case_config(req, case):
    """The build.Config of this request: the case's fragment on the base
    the user chose (tinyconfig by default)."""
    return build.Config(case.config, base=req.config_base, kconfig=req.kconfig,
                        strict=req.strict_config)


def measure_point(req, case, tree, name, commit, cc, files, attribute=False,
                  count=False):
    """Expansion, (if `attribute`) the macros and (if `count`) the
    instruction counts of each file at one (commit, compiler); builds only
    what is not in the cache. These measurements are exact (bytes, counts),
    so they run JOBS at a time; the timed runs come afterwards, alone, for
    the whole group of commits (measure_cost). Returns the record; with
    `count`, each ok entry carries "counts" {time_E, time_c} until
    measure_cost moves them into its timed entries."""
    cache = Cache(req.work)
    bdir = build.build_dir(tree, commit, cc)
    ccver = build.compiler_version(cc)
    chash = case_config(req, case).hash()
    kinds = ["expand"] + (["macros"] if attribute else [])

    def key(f, kind):
        if kind == "expand":
            return cache.expand_key(commit, cc, ccver, chash, f)
        return cache.macros_key(commit, cc, ccver, chash, f)

    # a cached value of the wrong shape is measured again, never copied on
    valid = {"expand": results.entry_ok, "macros": results.macros_ok}
    got = {}
    for f in files:
        for k in kinds:
            v = cache.get(key(f, k))
            got[(f, k)] = v if v is None or valid[k](v) else None
    todo = [f for f in files if any(got[(f, k)] is None for k in kinds)]
    counts, to_count = {f: {} for f in files}, {f: [] for f in files}

    def plan(f, kinds_):
        for kind in kinds_:
            e = got[(f, "expand")]
            est = e.get("cpp_cpu_s", e["analyze_seconds"]) if kind == "time_E" else 0
            what, v = cost.count_plan(req, cache, commit, cc, ccver, chash, f, kind, est)
            if what == "have":
                counts[f][kind] = v
            else:
                to_count[f].append((kind, v))
    if count:
        for f in files:
            if f not in todo and got[(f, "expand")].get("status") == "ok":
                plan(f, cost.KINDS)
    need = [f for f in files if f in todo or to_count[f]]
    build_info, failed = None, {}
    if need:
        series.checkout(tree, commit)
        if built(bdir, chash, need):
            # a build dir is only ever built at its one commit: its objects,
            # .cmd files and generated headers are still this commit's
            b = build.BuildResult(True, 0.0, "", [])
        else:
            b = _build_objects(req, case, tree, bdir, name, cc, need)
            build_info = {"ok": b.ok, "seconds": round(b.seconds, 1),
                          "targets": [kcmd.obj_of(f) for f in need], "failed": b.failed}
            note_built(bdir, b, build_info["targets"])

        def count_now(f, kind, k):
            req.progress.say(f"  counting instructions of {f} "
                             f"({'-E' if kind == 'time_E' else '-c'}, {name}, {cc})")
            counts[f][kind] = cost.count_one(cache, k, bdir, f, cc, kind)

        def attribute(f):
            req.progress.say(f"  attributing {f} to macros ({name}, {cc})")
            m = macros.measure(bdir, f, cc, got[(f, "expand")])
            got[(f, "macros")] = m
            if m["status"] != "error":      # tool failures are retried
                cache.put(key(f, "macros"), m)

        def expand(f):
            """f's expansion; then, ahead of everything queued, what needs
            it: its -E count (the cap reads the expansion's CPU time) and
            its macros (the attribution looks into its hottest line)."""
            if got[(f, "expand")] is None:
                req.progress.say(f"  preprocessing {f} ({name}, {cc})")
                got[(f, "expand")] = measure_file(bdir, f)
                cache.put(key(f, "expand"), got[(f, "expand")])
            nxt = []
            if count:
                plan(f, ["time_E"])
                nxt += [(count_now, (f, kind, k)) for kind, k in to_count[f]]
            if "macros" in kinds and got[(f, "macros")] is None:
                nxt.append((attribute, (f,)))
            return nxt

        ok = [f for f in need if kcmd.obj_of(f) not in b.failed]
        for f in need:
            if f not in ok:
                failed[f] = {"status": "build-failure", "log_tail": b.log_tail}
        work = []
        for f in ok:
            # -c needs no estimate: its count starts beside the expansions,
            # so that the heaviest file's two long counts overlap
            if count and f in todo:
                plan(f, ["time_c"])
            if f in todo:
                work.append((expand, (f,)))
            work += [(count_now, (f, kind, k)) for kind, k in to_count[f]]
            to_count[f] = []
        if work:
            with req.split.timed("expansion, macros, counts"):
                run_jobs(work, req.jobs, failed)
    entries = {}
    for f in files:
        entries[f] = failed.get(f) or dict(
            got[(f, "expand")], **{k: got[(f, k)] for k in kinds[1:]})
        if count and f not in failed:
            entries[f]["counts"] = counts[f]
    rec = results.header("kexpand.expansion", case.name, name, commit, cc,
                         ccver, chash)
    rec.update({"arch": build.ARCH, "build_dir": bdir.name,
                "build": build_info, "files": entries})
    return rec


def measure_cost(req, case, tree, sides, cc, recs):
    """Times (interleaved across the sides where each file was measured
    ok), added to the records `recs` (one per side, in order) as time_E /
    time_c with the instruction counts measure_point took; a timed command
    that fails makes its file an error at that side. sides: [(name, commit)]."""
    cache = Cache(req.work)
    ccver = build.compiler_version(cc)
    chash = case_config(req, case).hash()
    ok_sides = {f: [i for i, r in enumerate(recs) if r["files"][f].get("status") == "ok"]
                for f in recs[0]["files"]}
    ok_sides = {f: idx for f, idx in ok_sides.items() if idx}
    entry = lambda i, f: recs[i]["files"][f]        # noqa: E731
    est = {f: max(entry(i, f).get("cpp_cpu_s", entry(i, f)["analyze_seconds"])
                  for i in idx) for f, idx in ok_sides.items()}
    counted = {(f, k): all((entry(i, f).get("counts") or {}).get(k, {})
                           .get("instructions") is not None for i in idx)
               for f, idx in ok_sides.items() for k in cost.KINDS}
    timed, errors = cost.time_group(req, cache, tree, sides, cc, ccver, chash,
                                    ok_sides, est, counted)
    for (i, f), t in timed.items():
        e = dict(entry(i, f), **t)
        cost.add_counts(e, e.pop("counts", None))
        recs[i]["files"][f] = e
    for (i, f), err in errors.items():
        recs[i]["files"][f] = {"status": "error", "error": err}
    for r in recs:
        for e in r["files"].values():
            e.pop("counts", None)
    return recs
