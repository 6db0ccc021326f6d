#!/usr/bin/python3
"""kexpand: prepare the series points and measure preprocessor expansion.

  kexpand.py prepare [--case minmax]
  kexpand.py bench   [--case minmax] [--points a,b] [--files f,g] [--cc gcc]
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "kernel-build")]

import boot                                       # noqa: E402
import conformance                                # noqa: E402
import kbuild                                     # noqa: E402
import timing                                     # noqa: E402
import trees                                      # noqa: E402
import results as res                             # noqa: E402
import series                                     # noqa: E402
from kxutil import (KexpandError, Progress, REPO, SPLIT, atomic_write_json,  # noqa: E402
                    jobs,
                    log, main_wrapper, missing_tool, read_json, results_dir, run,
                    work_dir, work_lock)

ANALYZER = HERE / "kx-analyze"
ANALYZER_VERSION = "2"
TOP_LINES = 5


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def analyze(cmd, cwd, top=TOP_LINES):
    """Run a preprocess command into the C analyzer through a pipe."""
    if not ANALYZER.exists():
        raise KexpandError(f"{ANALYZER} missing: run 'make -C {REPO} "
                           "bench/kx-analyze'", "infra")
    t0 = time.monotonic()
    try:
        pre = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise missing_tool(cmd[0])
    ana = subprocess.Popen([str(ANALYZER), "-n", str(top)], stdin=pre.stdout,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pre.stdout.close()
    try:
        out, aerr = ana.communicate()
        perr = pre.stderr.read()
        pre.wait()
    except BaseException:
        for proc in (pre, ana):
            proc.kill()
            proc.wait()
        raise
    secs = time.monotonic() - t0
    if pre.returncode != 0:
        tail = "\n".join(perr.decode(errors="replace").splitlines()[-15:])
        raise KexpandError(f"preprocessing failed (exit {pre.returncode}): "
                           f"{shlex.join(cmd)}\n{tail}", "build")
    if ana.returncode != 0:
        raise KexpandError(f"kx-analyze failed: {aerr.decode(errors='replace')}",
                           "infra")
    return json.loads(out), secs


def tree_path(p):
    """A line-marker path relative to the build dir -> relative to the tree."""
    return p[3:] if p.startswith("../") else p


def source_text(tree, bdir, relpath, line, maxlines=6):
    """The source statement at relpath:line: that line plus continuation
    lines while parentheses are open."""
    path = (bdir / relpath) if not relpath.startswith("<") else None
    try:
        lines = path.read_text(errors="replace").splitlines()
    except (OSError, AttributeError):
        return ""
    out, depth = [], 0
    for l in lines[line - 1:line - 1 + maxlines]:
        out.append(l.strip())
        depth += l.count("(") - l.count(")")
        if depth <= 0:
            break
    return " ".join(out)


def measure_file(tree, bdir, src):
    argv = kbuild.compile_command(bdir, src)
    pcmd = kbuild.preprocess_command(argv)
    a, secs = analyze(pcmd, bdir)
    hot = []
    for t in a["top"]:
        hot.append({"at": f"{tree_path(t['file'])}:{t['line']}",
                    "bytes": t["bytes"],
                    "source": source_text(tree, bdir, t["file"], t["line"]),
                    "choose_expr": t["choose_expr"],
                    "stmt_expr": t["stmt_expr"],
                    "unique_id": t["unique_id"]})
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
        "command": f"cd {shlex.quote(bdir.name)} && {shlex.join(pcmd)} | "
                   f"{ANALYZER.relative_to(REPO)} -n {TOP_LINES}",
    }


class Cache:
    """Measurements keyed by (commit, compiler + version, config hash,
    file, kind); one small JSON file each."""

    def __init__(self, work):
        self.dir = work / "cache"

    def key(self, *parts):
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]

    def get(self, key):
        p = self.dir / f"{key}.json"
        return read_json(p) if p.exists() else None

    def put(self, key, value):
        atomic_write_json(self.dir / f"{key}.json", value)


def select(names, valid, what):
    if not names:
        return list(valid)
    bad = [n for n in names if n not in valid]
    if bad:
        raise KexpandError(f"unknown {what} {', '.join(bad)}; valid: "
                           f"{', '.join(valid)}")
    return names


def split_list(s):
    return [x for x in (s or "").replace(",", " ").split() if x]


def cmd_prepare(args):
    case = series.load_case(args.case)
    work = work_dir()
    with work_lock(work):
        commits, failures, version = series.prepare(case, work, Progress(1))
    for p in case.points:
        c = commits.get(p.name)
        print(f"{p.name:24} {c[:12] if c else 'FAILED: ' + failures[p.name]}")
    return 2 if failures else 0


def check_files(tree, files, focus, commit=None):
    for f in files:
        ok = (tree / f).is_file() if commit is None else series.git(
            tree, "cat-file", "-e", f"{commit}:{f}", check=False).returncode == 0
        if not ok or not f.endswith(".c"):
            raise KexpandError(f"unknown file {f}: not a .c file of the kernel "
                               f"tree {tree}; focus files are: {', '.join(focus)}")


def measure_commits(case, tree, todo, compilers, files, results, prog,
                    package, timed=True):
    """Measure [(name, commit)] x compilers x files through the cache and
    write one record per (commit, compiler). Returns the worst exit code."""
    cache = Cache(work_dir())
    chash = kbuild.config_hash(case.config)
    cpu = cpu_model()
    worst = 0
    for cc in compilers:
        ccver = kbuild.compiler_version(cc)
        for name, commit in todo:
            prog.step(f"{name} / {cc}")
            rec = measure_point(case, tree, name, commit, cc, ccver, chash,
                                files, cache, prog, timed=timed)
            rec.update({"package": package, "cpu": cpu,
                        "host": platform.node(), "case": case.name})
            if any(e["status"] != "ok" for e in rec["files"].values()):
                worst = max(worst, 3)
            res.write_record(results, res.merge_record(results, rec))
    return worst


def boot_points(case, tree, todo, results, prog):
    """Boot-check each (name, commit) with gcc; results/<commit12>/boot.json.
    Returns the worst exit code (4 for a boot failure, 3 for a build one)."""
    cache = Cache(work_dir())
    chash = kbuild.config_hash(case.config)
    ccver = kbuild.compiler_version("gcc")
    qver = boot.qemu_version()
    worst = 0
    for name, commit in todo:
        pt = case.point(name)
        params = pt.module_params()
        key = cache.key(commit, "gcc", ccver, chash, "boot", boot.inputs_hash(),
                        qver, params, boot.BOOT_TIMEOUT)
        r = cache.get(key)
        prog.step(f"boot {name}" + (" (cached)" if r else ""))
        if r is None:
            series.checkout(tree, commit)
            bdir = kbuild.build_dir(tree, commit, "gcc")
            kbuild.configure(tree, bdir, "gcc", case.config)
            t0 = time.monotonic()
            r = boot.boot_point(tree, bdir, params, work_dir() / "boot" / commit[:12])
            SPLIT.add("builds", r.get("kernel_build_s", 0.0))
            SPLIT.add("boots", time.monotonic() - t0 - r.get("kernel_build_s", 0.0))
            if r["status"] != "infra-error":
                cache.put(key, r)
        prog.say(f"  {name}: {r['status']}, {r.get('tests_passed', 0)} passed, "
                 f"{r.get('tests_failed', 0)} failed, {r.get('tests_skipped', 0)} "
                 f"skipped" + (f", /init after {r['boot_s']}s" if r.get("boot_s") else ""))
        rec = dict(r, kind="kexpand.boot", schema=res.SCHEMA, point=name,
                   commit=commit, compiler="gcc", compiler_version=ccver,
                   config_hash=chash, case=case.name)
        atomic_write_json(res.record_path(results, commit, "gcc").with_name("boot.json"), rec)
        if r["status"] != "booted":
            worst = max(worst, {"build": 3, "infra": 5}.get(r.get("class"), 4))
    return worst


def conformance_points(case, tree, todo, results, prog):
    """Compile every conformance snippet at each point (gcc)."""
    snippets = conformance.load_snippets(case.dir)
    if not snippets:
        return
    cache = Cache(work_dir())
    chash = kbuild.config_hash(case.config)
    ccver = kbuild.compiler_version("gcc")
    focus = [f for f, _ in case.focus]
    for name, commit in todo:
        got = {s["name"]: cache.get(cache.key(commit, "gcc", ccver, chash,
                                              "conformance", s["hash"]))
               for s in snippets}
        missing = [s for s in snippets if got[s["name"]] is None]
        if missing:
            bdir = kbuild.build_dir(tree, commit, "gcc")
            template = conformance.template_command(bdir, focus)
            if template is None:
                log(f"conformance at {name}: no compiled focus file to take "
                    "flags from; skipped")
                continue
            series.checkout(tree, commit)
            prog.say(f"  conformance: {len(missing)} snippets at {name}")
            for s in missing:
                got[s["name"]] = conformance.compile_snippet(bdir, template, s["path"])
                cache.put(cache.key(commit, "gcc", ccver, chash, "conformance",
                                    s["hash"]), got[s["name"]])
        atomic_write_json(res.record_path(results, commit, "gcc").with_name(
            "conformance.json"), {"kind": "kexpand.conformance", "schema": res.SCHEMA,
                                  "point": name, "commit": commit,
                                  "compiler_version": ccver, "results": got,
                                  "snippets": [{k: sn[k] for k in ("name", "title", "expect")}
                                               for sn in snippets]})


def compilers_arg(s):
    s = split_list(s)
    if s == ["both"]:
        s = []
    return select(s or list(kbuild.COMPILERS), list(kbuild.COMPILERS),
                  "compiler")


def require_tools(compilers, timed, booting):
    """Fail before the long work starts when a tool is missing."""
    need = ["git", "make", "tar"]
    for cc in compilers:
        need += ["clang", "ld.lld"] if cc == "clang" else ["gcc"]
    if timed:
        need += ["hyperfine", "/usr/bin/time"]
    if booting:
        need += ["qemu-system-x86_64", "gcc"]
    for tool in need:
        if not shutil.which(tool):
            raise missing_tool(tool)


def write_series_index(case, commits, package, files, results):
    """results/series-<case>.json: the points in order, the files."""
    focus = [f for f, _ in case.focus]
    index = {"case": case.name, "package": package,
             "files": focus + [f for f in files if f not in focus],
             "focus": dict(case.focus), "points": []}
    for p in case.points:
        if p.name in commits:
            index["points"].append({
                "name": p.name, "commit": commits[p.name],
                "description": p.description, "parent": p.parent,
                "control": p.control})
    atomic_write_json(results / f"series-{case.name}.json", index)
    return index


def cmd_bench(args):
    case = series.load_case(args.case)
    names = select(split_list(args.points), case.names(), "point")
    focus = [f for f, _ in case.focus]
    files = split_list(args.files) or focus
    compilers = compilers_arg(args.cc)
    require_tools(compilers, not args.no_time, not args.no_boot)
    work, results = work_dir(), results_dir()
    with work_lock(work):
        prog = Progress(len(names) * (len(compilers) + (not args.no_boot)))
        commits, failures, version = series.prepare(case, work, prog)
        tree = work / "tree"
        check_files(tree, files, focus)
        package = f"{series.SOURCE_PACKAGE} {version}"
        todo = []
        worst = 0
        for name in names:
            if name in commits:
                todo.append((name, commits[name]))
            else:
                log(f"point {name}: not measured: {failures.get(name)}")
                worst = 2
        if not args.no_boot:
            # first, so that each point's full build starts from a clean
            # build directory and its time is a clean-build time
            worst = max(worst, boot_points(case, tree, todo, results, prog))
        worst = max(worst, measure_commits(case, tree, todo, compilers, files,
                                           results, prog, package,
                                           timed=not args.no_time))
        conformance_points(case, tree, todo, results, prog)
        index = write_series_index(case, commits, package, files, results)
        records = res.load_records(results)
        rows = res.write_summary(results, index, records)
        res.write_boot_csv(results, index)
        if check_controls(index, records):
            worst = max(worst, 3)
        total, parts = SPLIT.report()
        atomic_write_json(results / "last-bench.json", {
            "command": shlex.join(sys.argv), "total_s": round(total, 1),
            "split_s": {k: round(v, 1) for k, v in parts.items()},
            "compilers": compilers, "points": names, "files": files,
            "exit_code": worst})
    print_table(rows)
    prog.say(f"done in {total:.0f}s; records in {results}")
    print("wall time: " + ", ".join(
        f"{k} {v:.0f}s ({v / total:.0%})" for k, v in parts.items()),
        file=sys.stderr)
    return worst


def cmd_boot(args):
    """Boot checks and the conformance matrix only."""
    case = series.load_case(args.case)
    names = select(split_list(args.points), case.names(), "point")
    work, results = work_dir(), results_dir()
    with work_lock(work):
        prog = Progress(len(names))
        commits, failures, version = series.prepare(case, work, prog)
        tree = work / "tree"
        todo = [(n, commits[n]) for n in names if n in commits]
        worst = 2 if len(todo) < len(names) else 0
        worst = max(worst, boot_points(case, tree, todo, results, prog))
        conformance_points(case, tree, todo, results, prog)
        old = res.load_series(results, case.name)
        index = write_series_index(
            case, commits, f"{series.SOURCE_PACKAGE} {version}",
            (old or {}).get("files", []), results)
        res.write_boot_csv(results, index)
    return worst


def full_build(tree, bdir, cc):
    """bzImage (and modules_prepare for gcc), timed; from_clean says whether
    the build dir had no objects before, i.e. the time is a clean build."""
    from_clean = not any(bdir.glob("*/*.o")) and not (bdir / "vmlinux").exists()
    t0 = time.monotonic()
    with SPLIT.timed("builds"):
        targets = ["bzImage", "modules_prepare"] if cc == "gcc" else ["bzImage"]
        b = kbuild.build(tree, bdir, cc, targets, keep_going=False)
    return b, {"full_build_s": round(time.monotonic() - t0, 1),
               "from_clean": from_clean, "jobs": jobs(), "ok": b.ok}


def scan_points(case, tree, todo, cc, results, prog):
    """Scan every C file of each point's full build; cached per commit."""
    import scan
    cache = Cache(work_dir())
    chash = kbuild.config_hash(case.config)
    ccver = kbuild.compiler_version(cc)
    out = {}
    for name, commit in todo:
        key = cache.key(commit, cc, ccver, chash, "scan", ANALYZER_VERSION)
        sc = cache.get(key)
        prog.step(f"scan {name} / {cc}" + (" (cached)" if sc else ""))
        if sc is None:
            series.checkout(tree, commit)
            bdir = kbuild.build_dir(tree, commit, cc)
            kbuild.configure(tree, bdir, cc, case.config)
            b, info = full_build(tree, bdir, cc)
            if not b.ok:
                raise KexpandError(f"full build of {name} ({cc}) failed:\n"
                                   f"{b.log_tail}", "build")
            known = {}
            for f, _ in case.focus:
                e = cache.get(cache.key(commit, cc, ccver, chash, f, "expand",
                                        ANALYZER_VERSION))
                if e:
                    known[f] = e["analyze_seconds"]
            with SPLIT.timed("expansion"):
                sc = scan.scan_build(tree, bdir, prog, known)
            sc["build"] = info
            cache.put(key, sc)
        scan.log_summary(sc, name)
        rec = dict(sc, kind="kexpand.scan", schema=res.SCHEMA, point=name,
                   commit=commit, compiler=cc, compiler_version=ccver,
                   config_hash=chash, case=case.name)
        atomic_write_json(res.record_path(results, commit, cc).with_name(
            f"scan-{cc}.json"), rec)
        out[name] = rec
    return out


def cmd_scan(args):
    """make scan [A= B=]: scan points; with A and B, rank files by growth."""
    import scan
    case = series.load_case(args.case)
    cc = compilers_arg(args.cc)[0] if args.cc else "gcc"
    work, results = work_dir(), results_dir()
    with work_lock(work):
        prog = Progress(2 if args.a else len(case.points))
        tree, repo, package = open_tree(case, args.kernel, prog)
        if args.a or args.b:
            if not (args.a and args.b):
                raise KexpandError("give both refs: make scan A=<ref> B=<ref>")
            todo = [(args.a, trees.resolve(repo, args.a)),
                    (args.b, trees.resolve(repo, args.b))]
        else:
            names = select(split_list(args.points), case.names(), "point")
            todo = [(n, trees.resolve(repo, n)) for n in names]
        scans = scan_points(case, tree, todo, cc, results, prog)
        if not args.a:
            return 0
        rows = scan.ranking(scans[args.a], scans[args.b])
        out = results / "scan" / f"{safe_name(args.a)}..{safe_name(args.b)}"
        atomic_write_json(out / "pair.json", {
            "a": {"ref": args.a, "commit": todo[0][1]},
            "b": {"ref": args.b, "commit": todo[1][1]}, "compiler": cc,
            "package": package, "command": shlex.join(sys.argv)})
        focus = {f for f, _ in case.focus}
        write_ranking(out, rows, args, scans, focus)
        if args.write_focus:
            lines = [f"# Top {args.top} files by expansion growth, "
                     f"{args.a} -> {args.b} ({cc}), written by make scan"]
            for r in rows[:args.top]:
                lines.append(f"{r['file']:40} # +{r['growth_bytes']:,} bytes "
                             f"({r['growth_ratio']}x)")
            Path(args.write_focus).write_text("\n".join(lines) + "\n")
            log(f"wrote focus list {args.write_focus}")
    sys.path.insert(0, str(REPO))
    import compare
    compare.write_scan_plots(results, out)
    compare.write_index(results)
    print((out / "ranking.md").read_text())
    return 0


def write_ranking(out, rows, args, scans, focus):
    import csv as csvmod
    import io
    buf = io.StringIO()
    w = csvmod.DictWriter(buf, fieldnames=["file", "bytes_a", "bytes_b",
                                           "growth_bytes", "growth_ratio"],
                          lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    from kxutil import atomic_write
    atomic_write(out / "ranking.csv", buf.getvalue())
    sa, sb = scans[args.a], scans[args.b]
    md = [f"# Files by expansion growth, {args.a} .. {args.b}", "",
          f"- {sa['n_files']} C files at {args.a}: {sa['total_bytes']:,} bytes of -E "
          f"output; {sb['n_files']} at {args.b}: {sb['total_bytes']:,} bytes "
          f"({sb['total_bytes'] / sa['total_bytes']:.3f}x).",
          f"- full build: {sa['build']['full_build_s']} s and "
          f"{sb['build']['full_build_s']} s (-j{sb['build']['jobs']}; "
          f"from clean: {sa['build']['from_clean']}, {sb['build']['from_clean']}).",
          f"- scan wall time {sb['scan_seconds']} s for {sb['n_files']} files; "
          f"files x median -E time / workers = {sb['ideal_seconds']} s; ratio "
          f"{sb['overhead_ratio']}.", "",
          f"## Top {args.top} by absolute growth", "",
          "| # | file | bytes A | bytes B | growth | ratio | focus file | hottest line at B |",
          "|---:|---|---:|---:|---:|---:|---|---|"]
    for i, r in enumerate(rows[:args.top], 1):
        hot = r["hot_b"] or {}
        md.append(f"| {i} | {r['file']} | {r['bytes_a']:,} | {r['bytes_b']:,} | "
                  f"{r['growth_bytes']:+,} | {r['growth_ratio']} | "
                  f"{'yes' if r['file'] in focus else ''} | "
                  f"{hot.get('at', '')} ({hot.get('bytes', 0):,} B) |")
    by_ratio = sorted((r for r in rows if r["growth_ratio"]),
                      key=lambda r: -r["growth_ratio"])[:args.top]
    md += ["", f"## Top {args.top} by growth ratio", "",
           "| # | file | bytes A | bytes B | ratio |", "|---:|---|---:|---:|---:|"]
    for i, r in enumerate(by_ratio, 1):
        md.append(f"| {i} | {r['file']} | {r['bytes_a']:,} | {r['bytes_b']:,} | "
                  f"{r['growth_ratio']} |")
    n_focus = sum(1 for r in rows[:args.top] if r["file"] in focus)
    md += ["", f"{n_focus} of the top {args.top} by absolute growth are focus files."]
    atomic_write(out / "ranking.md", "\n".join(md) + "\n")


def cmd_analyzer_bench(args):
    """Throughput of kx-analyze on a file in the page cache, and its cost
    relative to the -E it analyzes: setup.c at laight-v4 (gcc)."""
    case = series.load_case(args.case)
    work, results = work_dir(), results_dir()
    with work_lock(work):
        prog = Progress(1)
        commits, failures, version = series.prepare(case, work, prog)
        tree = work / "tree"
        commit = commits[args.point]
        bdir = kbuild.build_dir(tree, commit, "gcc")
        series.checkout(tree, commit)
        kbuild.configure(tree, bdir, "gcc", case.config)
        b = kbuild.build(tree, bdir, "gcc", [kbuild.obj_of(args.file)])
        if not b.ok:
            raise KexpandError(f"building {args.file} failed:\n{b.log_tail}", "build")
        argv = kbuild.compile_command(bdir, args.file)
        sample = work / "scratch" / "analyzer-sample.i"
        sample.parent.mkdir(parents=True, exist_ok=True)
        with open(sample, "wb") as out:
            subprocess.run(kbuild.preprocess_command(argv), cwd=bdir, stdout=out,
                           check=True)
        size = sample.stat().st_size
        ana = timing.hyperfine(["sh", "-c", f"{ANALYZER} -n 5 < {shlex.quote(str(sample))}"],
                               work, runs=args.runs, warmup=2)
        cat = timing.hyperfine(["sh", "-c", f"cat {shlex.quote(str(sample))} > /dev/null"],
                               work, runs=args.runs, warmup=2)
        pre = timing.hyperfine(kbuild.preprocess_command(argv, "/dev/null"), bdir,
                               runs=2, warmup=0)
        sample.unlink()
    out = {"file": args.file, "point": args.point, "commit": commit,
           "bytes": size, "analyzer_median_s": ana["median_s"],
           "analyzer_mb_per_s": round(size / ana["median_s"] / 1e6, 1),
           "cat_median_s": cat["median_s"],
           "preprocess_median_s": pre["median_s"],
           "analysis_over_preprocess": round(ana["median_s"] / pre["median_s"], 5),
           "analyzer": ana, "cat": cat, "preprocess": pre,
           "cpu": cpu_model(), "command": shlex.join(sys.argv)}
    atomic_write_json(results / "analyzer.json", out)
    print(f"kx-analyze: {size:,} bytes in {ana['median_s']:.3f} s (median of "
          f"{ana['runs']}, ± {ana['stddev_s']:.3f}) = {out['analyzer_mb_per_s']} MB/s; "
          f"cat: {cat['median_s']:.3f} s; gcc -E of the same file: "
          f"{pre['median_s']:.1f} s; analysis adds "
          f"{out['analysis_over_preprocess']:.2%} to -E")
    return 0


def open_tree(case, kernel, prog):
    """(tree to build in, repo to resolve refs in, package label)."""
    work = work_dir()
    if kernel:
        top = trees.check_user_tree(kernel)
        kbuild.STRICT_CONFIG = False
        return trees.user_clone(top, work), top, f"git tree {top}"
    commits, failures, version = series.prepare(case, work, prog)
    tree = work / "tree"
    return tree, tree, f"{series.SOURCE_PACKAGE} {version}"


def safe_name(ref):
    return "".join(c if c.isalnum() or c in "-_.+" else "_" for c in ref)


def cmd_compare(args):
    case = series.load_case(args.case)
    if not args.a or not args.b:
        raise KexpandError("give both refs: make compare A=<ref> B=<ref> "
                           f"(series points: {', '.join(case.names())})")
    focus = [f for f, _ in case.focus]
    files = split_list(args.files) or focus
    compilers = compilers_arg(args.cc)
    require_tools(compilers, not args.no_time, False)
    work, results = work_dir(), results_dir()
    with work_lock(work):
        prog = Progress(2 * len(compilers))
        tree, repo, package = open_tree(case, args.kernel, prog)
        ca, cb = trees.resolve(repo, args.a), trees.resolve(repo, args.b)
        for c in (ca, cb):
            check_files(tree, files, focus, commit=c)
        worst = measure_commits(case, tree, [(args.a, ca), (args.b, cb)],
                                compilers, files, results, prog, package,
                                timed=not args.no_time)
        out = results / "compare" / f"{safe_name(args.a)}..{safe_name(args.b)}"
        atomic_write_json(out / "pair.json", {
            "a": {"ref": args.a, "commit": ca, "subject": trees.subject(repo, ca)},
            "b": {"ref": args.b, "commit": cb, "subject": trees.subject(repo, cb)},
            "tree": str(repo), "package": package, "files": files,
            "compilers": compilers, "command": shlex.join(sys.argv)})
    sys.path.insert(0, str(REPO))
    import compare
    compare.write_pair_report(results, out)
    compare.write_index(results)
    print((out / "report.md").read_text())
    prog.say(f"report in {out}")
    return worst


def parse_threshold(s, good_bytes):
    """THRESHOLD: bytes ('20000000', '20MB', '20M') or a ratio of GOOD's
    bytes ('2x'); default: the geometric mean of GOOD and BAD."""
    s = s.strip()
    try:
        if s.lower().endswith("x"):
            return int(float(s[:-1]) * good_bytes)
        mult = {"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9}
        low = s.lower()
        for suf in sorted(mult, key=len, reverse=True):
            if low.endswith(suf):
                return int(float(low[:-len(suf)]) * mult[suf])
        return int(s)
    except ValueError:
        raise KexpandError(f"THRESHOLD={s}: give bytes (20000000, 20MB) or a "
                           "ratio of GOOD's bytes (2x)")


def measure_one(case, tree, name, commit, file, prog):
    """Expansion bytes of one file at one commit (gcc, cached)."""
    cache = Cache(work_dir())
    rec = measure_point(case, tree, name, commit, "gcc",
                        kbuild.compiler_version("gcc"),
                        kbuild.config_hash(case.config), [file], cache, prog,
                        timed=False)
    return rec["files"][file]


def cmd_bisect(args):
    case = series.load_case(args.case)
    if not (args.file and args.good and args.bad):
        raise KexpandError("give FILE=<path> GOOD=<ref> BAD=<ref>")
    work, results = work_dir(), results_dir()
    focus = [f for f, _ in case.focus]
    with work_lock(work):
        prog = Progress(1)
        tree, repo, package = open_tree(case, args.kernel, prog)
        good, bad = trees.resolve(repo, args.good), trees.resolve(repo, args.bad)
        check_files(tree, [args.file], focus, commit=bad)
        eg = measure_one(case, tree, args.good, good, args.file, prog)
        eb = measure_one(case, tree, args.bad, bad, args.file, prog)
        if eg["status"] != "ok" or eb["status"] != "ok":
            raise KexpandError(f"{args.file} does not build at GOOD or BAD: "
                               f"{eg.get('status')}/{eb.get('status')}", "build")
        gb, bb = eg["expanded_bytes"], eb["expanded_bytes"]
        thr = parse_threshold(args.threshold, gb) if args.threshold else \
            int((gb * bb) ** 0.5)
        if not gb <= thr < bb:
            raise KexpandError(f"threshold {thr:,} bytes does not separate "
                               f"GOOD ({gb:,}) from BAD ({bb:,}) for {args.file}")
        # bisect in a bare clone of our own (--no-checkout: BISECT_HEAD is
        # the commit to test): the tree measured, and the user's, keep
        # their HEAD and have no bisect state
        bis = work / "bisect"
        shutil.rmtree(bis, ignore_errors=True)
        series.run(["git", "clone", "-q", "--bare", "--shared", str(tree),
                    str(bis)], what="git clone --bare --shared")
        step = [sys.executable, str(Path(__file__).resolve()), "bisect-step",
                "--case", case.name, "--tree", str(tree), "--file", args.file,
                "--threshold", str(thr)]
        g = lambda *a: series.git(bis, *a)  # noqa: E731
        g("bisect", "start", "--no-checkout", bad, good)
        prog.say(f"git bisect run on {args.file}: good {args.good} "
                 f"({gb:,} B), bad {args.bad} ({bb:,} B), threshold {thr:,} B")
        p = series.run(["git", "-C", str(bis), "bisect", "run", *step],
                       check=False)
        first = series.git(bis, "rev-parse", "-q", "--verify", "refs/bisect/bad",
                           check=False).stdout.strip()
        log_text = g("bisect", "log").stdout
        g("bisect", "reset")
        if p.returncode != 0 or not first:
            raise KexpandError(f"git bisect run failed:\n{p.stdout[-2000:]}",
                               "build")
        # check the answer against every commit's measurement
        revs = series.git(tree, "rev-list", "--reverse", f"{good}..{bad}"
                          ).stdout.split()
        table = []
        for c in [good] + revs:
            e = measure_one(case, tree, c[:12], c, args.file, prog)
            table.append((c, e.get("expanded_bytes"), trees.subject(tree, c)))
        linear_first = next((c for c, b, _ in table if b is not None and b > thr), None)
        out = {"file": args.file, "good": {"ref": args.good, "commit": good, "bytes": gb},
               "bad": {"ref": args.bad, "commit": bad, "bytes": bb},
               "threshold_bytes": thr, "first_bad": first,
               "first_bad_subject": trees.subject(tree, first),
               "agrees_with_per_commit_measurements": linear_first == first,
               "per_commit": [{"commit": c, "bytes": b, "subject": s}
                              for c, b, s in table],
               "bisect_log": log_text, "tree": str(repo),
               "command": shlex.join(sys.argv)}
        d = results / "bisect" / f"{safe_name(args.good)}..{safe_name(args.bad)}"
        atomic_write_json(d / f"{safe_name(args.file)}.json", out)
    print(f"first commit past {thr:,} bytes for {args.file}:")
    print(f"  {first[:12]} {out['first_bad_subject']}")
    print("per-commit measurements (gcc -E bytes):")
    for c, b, subj in table:
        mark = "  <- first bad" if c == first else ""
        print(f"  {c[:12]} {b if b is not None else 'n/a':>12}  {subj[:60]}{mark}")
    print("bisect agrees with the per-commit measurements" if
          out["agrees_with_per_commit_measurements"] else
          "WARNING: bisect disagrees with the per-commit measurements")
    return 0 if out["agrees_with_per_commit_measurements"] else 3


def cmd_bisect_step(args):
    """`git bisect run` helper: exit 0 below the threshold, 1 above,
    125 when the file cannot be measured at this commit."""
    case = series.load_case(args.case)
    commit = run(["git", "rev-parse", "BISECT_HEAD"]).stdout.strip()
    # git bisect run exports GIT_DIR (of the bisect clone) to its command;
    # the measuring happens in another repository
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX",
                "GIT_COMMON_DIR"):
        os.environ.pop(var, None)
    tree = Path(args.tree)
    try:
        e = measure_one(case, tree, commit[:12], commit, args.file, Progress(1))
    except KexpandError as err:
        log(f"bisect step {commit[:12]}: {err}")
        return 125
    if e.get("status") != "ok":
        return 125
    b = e["expanded_bytes"]
    log(f"bisect step {commit[:12]}: {b:,} bytes "
        f"({'bad' if b > args.threshold else 'good'})")
    return 1 if b > args.threshold else 0


KINDS = ("expand", "time-E", "time-c")


def measure_point(case, tree, name, commit, cc, ccver, chash, files, cache,
                  prog, timed=True):
    """Expansion and (if `timed`) times of each file at one (commit,
    compiler); builds only when something is not in the cache."""
    bdir = kbuild.build_dir(tree, commit, cc)
    runs_opt = os.environ.get("RUNS") or None
    kinds = KINDS if timed else KINDS[:1]

    def key(f, kind):
        extra = ANALYZER_VERSION if kind == "expand" else f"runs={runs_opt or 'auto'}"
        return cache.key(commit, cc, ccver, chash, f, kind, extra)

    got = {(f, k): cache.get(key(f, k)) for f in files for k in kinds}
    todo = [f for f in files if any(got[(f, k)] is None for k in kinds)]
    build_info = None
    failed = {}
    if todo:
        series.checkout(tree, commit)
        objs = [kbuild.obj_of(f) for f in todo]
        with SPLIT.timed("builds"):
            try:
                kbuild.configure(tree, bdir, cc, case.config)
            except KexpandError as e:
                if e.klass != "build":
                    raise
                log(f"point {name}: {e}")
                b = kbuild.BuildResult(False, 0.0, str(e), objs)
            else:
                b = kbuild.build(tree, bdir, cc, objs)
        build_info = {"ok": b.ok, "seconds": round(b.seconds, 1),
                      "targets": objs, "failed": b.failed}
        scratch = timing.scratch_object_dir(tree.parent)
        for f in todo:
            if kbuild.obj_of(f) in b.failed:
                failed[f] = {"status": "build-failed", "log_tail": b.log_tail}
                continue
            try:
                if got[(f, "expand")] is None:
                    prog.say(f"  preprocessing {f} ({name}, {cc})")
                    with SPLIT.timed("expansion"):
                        got[(f, "expand")] = measure_file(tree, bdir, f)
                    cache.put(key(f, "expand"), got[(f, "expand")])
                est = got[(f, "expand")]["analyze_seconds"]
                runs = timing.choose_runs(est, runs_opt)
                argv = kbuild.compile_command(bdir, f)
                for kind, cmd in (
                        ("time-E", kbuild.preprocess_command(argv, "/dev/null")),
                        ("time-c", kbuild.object_command(
                            argv, str(scratch / f"{cc}-{Path(f).stem}.o")))):
                    if kind not in kinds or got[(f, kind)] is not None:
                        continue
                    warm = timing.choose_warmup(est)
                    prog.say(f"  timing {kind[-1]} {f} ({name}, {cc}, "
                             f"{warm} warmup + {runs} runs)")
                    with SPLIT.timed("timed runs"):
                        t = timing.hyperfine(cmd, bdir, runs, warmup=warm)
                    t["command"] = (f"cd {shlex.quote(bdir.name)} && "
                                    f"{shlex.join(cmd)}")
                    got[(f, kind)] = t
                    cache.put(key(f, kind), t)
            except KexpandError as e:
                if e.klass == "infra":
                    raise
                failed[f] = {"status": "error", "error": str(e)}
    entries = {}
    for f in files:
        if f in failed:
            entries[f] = failed[f]
            continue
        e = dict(got[(f, "expand")])
        if timed:
            e["time_E"] = got[(f, "time-E")]
            e["time_c"] = got[(f, "time-c")]
        entries[f] = e
    return {
        "schema": res.SCHEMA, "kind": "kexpand.expansion",
        "point": name, "commit": commit, "compiler": cc,
        "compiler_version": ccver, "config_hash": chash, "arch": kbuild.ARCH,
        "build_dir": bdir.name,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "build": build_info, "files": entries,
    }


def check_controls(index, records):
    """A control point must expand byte-for-byte like its parent."""
    by = {(r["commit"], r["compiler"]): r for r in records}
    commit = {p["name"]: p["commit"] for p in index["points"]}
    bad = []
    for p in index["points"]:
        if not p["control"]:
            continue
        for (c, cc), rec in by.items():
            if c != p["commit"]:
                continue
            par = by.get((commit.get(p["parent"]), cc))
            if not par:
                continue
            for f, e in rec["files"].items():
                pe = par["files"].get(f, {})
                if e.get("expanded_bytes") != pe.get("expanded_bytes"):
                    bad.append(f"{p['name']} vs {p['parent']} ({cc}) {f}: "
                               f"{e.get('expanded_bytes')} != "
                               f"{pe.get('expanded_bytes')}")
            if not any(b.startswith(p["name"]) for b in bad):
                log(f"control {p['name']}: expansion equals {p['parent']} "
                    f"({cc}, {len(rec['files'])} files)")
    for b in bad:
        log(f"CONTROL MISMATCH: {b}")
    return bad


def print_table(rows):
    if not rows:
        return
    print(f"{'point':22} {'cc':5} {'file':22} {'bytes':>10} {'longest':>10} "
          f"{'-E median':>10} {'-c median':>10} {'RSS kB':>8}")
    for r in rows:
        b = r["expanded_bytes"]
        t = lambda k: f"{r[k]:.3f}s" if r[k] != "" else "-"  # noqa: E731
        print(f"{r['point']:22} {r['compiler']:5} {r['file'][-22:]:22} "
              f"{b if b != '' else r['status']:>10} {r['longest_line_bytes']:>10} "
              f"{t('e_time_median_s'):>10} {t('c_time_median_s'):>10} "
              f"{r['peak_rss_kb']:>8}")


def main():
    ap = argparse.ArgumentParser(prog="kexpand")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="unpack the tree and apply the series")
    p.add_argument("--case", default="minmax")
    p = sub.add_parser("bench", help="measure every point")
    p.add_argument("--case", default="minmax")
    p.add_argument("--points", default=os.environ.get("POINTS"))
    p.add_argument("--files", default=os.environ.get("FILES"))
    p.add_argument("--cc", default=os.environ.get("CC_LIST"))
    p.add_argument("--no-time", action="store_true",
                   default=os.environ.get("NO_TIME") == "1",
                   help="expansion only: no hyperfine timings")
    p.add_argument("--no-boot", action="store_true",
                   default=os.environ.get("NO_BOOT") == "1",
                   help="no bzImage builds and QEMU boots")
    p = sub.add_parser("boot", help="boot-check points in QEMU")
    p.add_argument("--case", default="minmax")
    p.add_argument("--points", default=os.environ.get("POINTS"))
    p = sub.add_parser("analyzer-bench", help="kx-analyze throughput")
    p.add_argument("--case", default="minmax")
    p.add_argument("--point", default="laight-v4")
    p.add_argument("--file", default="arch/x86/xen/setup.c")
    p.add_argument("--runs", type=int, default=10)
    p = sub.add_parser("scan", help="scan every C file of the build")
    p.add_argument("--case", default="minmax")
    p.add_argument("--a", default=os.environ.get("A") or None)
    p.add_argument("--b", default=os.environ.get("B") or None)
    p.add_argument("--points", default=os.environ.get("POINTS"))
    p.add_argument("--kernel", default=os.environ.get("KERNEL") or None)
    p.add_argument("--cc", default=None)
    p.add_argument("--top", type=int, default=20)
    p.add_argument("--write-focus", default=os.environ.get("WRITE_FOCUS") or None)
    p = sub.add_parser("compare", help="compare two commits")
    p.add_argument("--case", default="minmax")
    p.add_argument("--a", default=os.environ.get("A"))
    p.add_argument("--b", default=os.environ.get("B"))
    p.add_argument("--kernel", default=os.environ.get("KERNEL") or None)
    p.add_argument("--files", default=os.environ.get("FILES"))
    p.add_argument("--cc", default=os.environ.get("CC_LIST"))
    p.add_argument("--no-time", action="store_true",
                   default=os.environ.get("NO_TIME") == "1")
    p = sub.add_parser("bisect", help="first commit past a byte threshold")
    p.add_argument("--case", default="minmax")
    p.add_argument("--file", default=os.environ.get("FILE"))
    p.add_argument("--good", default=os.environ.get("GOOD"))
    p.add_argument("--bad", default=os.environ.get("BAD"))
    p.add_argument("--kernel", default=os.environ.get("KERNEL") or None)
    p.add_argument("--threshold", default=os.environ.get("THRESHOLD") or None)
    p = sub.add_parser("bisect-step")
    p.add_argument("--case", default="minmax")
    p.add_argument("--tree", required=True)
    p.add_argument("--file", required=True)
    p.add_argument("--threshold", type=int, required=True)
    args = ap.parse_args()
    return {"prepare": cmd_prepare, "bench": cmd_bench, "boot": cmd_boot, "scan": cmd_scan,
            "analyzer-bench": cmd_analyzer_bench,
            "compare": cmd_compare,
            "bisect": cmd_bisect, "bisect-step": cmd_bisect_step}[args.cmd](args)


if __name__ == "__main__":
    main_wrapper(main)
