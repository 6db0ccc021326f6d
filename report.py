#!/usr/bin/python3
"""kexpand reporting: reads results/ only (never builds or measures) and
writes plots, tables and the results/index.html page. The Makefile runs it
after every measuring command.

  report.py [--case minmax] [--results DIR]   series plots + tables + page
  report.py --pair results/compare/A..B        one A-vs-B report + page
  report.py --scan results/scan/A..B           a scan ranking report + page
  report.py --check | --track | --index         checks, tracks, only the pages

Series output, per compiler CC in the records:
  results/plots/{expansion,longest-line,e-time,c-time,peak-rss}-CC.{png,svg}
  results/expansion.md, boot.{md,csv}, conformance.{md,csv}, macros.{md,csv},
  results/plots/flame-FILE-N-POINT.svg (each focus file's hottest line, clang)
Pair output (results/compare/A..B/): report.md, compare.csv, bytes-CC.*,
c-time-CC.*. Scan output (results/scan/A..B/): ranking.md, growth.*,
headers.md, headers.*, headers.html (plots/headerpage.py).
Tracks (results/track/NAME/): index.html, graphs/*.svg, c/COMMIT.html. Every
mode ends with results/index.html, results/pages/, each report's index.html.
Imports: bench.results (the results/ contract), bench.stats, plots/."""
import argparse
import csv
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent
sys.path[:0] = [str(REPO), str(REPO / "kernel-build")]

import bench.results                                   # noqa: E402
from bench import verdict                              # noqa: E402
from kbuild import settings                            # noqa: E402
from kbuild.util import (KexpandError, log,  # noqa: E402
                         main_wrapper, read_json)
from plots import headerpage, headers, macros, page, regression, tables  # noqa: E402
from plots.reports import write_check_reports          # noqa: E402
from plots import sweep as sweep_report                # noqa: E402
from bench.measure import headerbuild as hdr           # noqa: E402
from plots import trackpage                            # noqa: E402
from plots.tables import ok                            # noqa: E402

COMPARE_COLUMNS = ["file", "compiler", "bytes_a", "bytes_b", "bytes_ratio",
                   "c_time_a_s", "c_time_b_s", "c_time_ratio", "significant",
                   "c_time_p_value", "noise_rel", "peak_rss_a_kb",
                   "peak_rss_b_kb", "longest_line_a", "longest_line_b",
                   "c_instructions_a", "c_instructions_b", "c_instructions_ratio",
                   "decided_by", "threshold", "c_cpu_a_s", "c_cpu_b_s",
                   "c_cpu_time_ratio", "e_instructions_ratio", "e_cpu_time_ratio",
                   "e_time_ratio", "e_significant", "e_decided_by"]


NOISE_FILE = verdict.NOISE_FILE     # what the bench's A/A check measured

SERIES_METRICS = [
    # stem, title, y label, getter(entry) -> (value, err), formatter name, log
    ("expansion", "preprocessed bytes (-E output)", "bytes (log scale)",
     lambda e: (e.get("expanded_bytes"), None), "human_bytes", True),
    ("longest-line", "longest output line", "bytes (log scale)",
     lambda e: (e.get("longest_line_bytes"), None), "human_bytes", True),
    ("e-time", "-E wall time, median ± stddev (hyperfine)", "seconds (log scale)",
     lambda e: ((e.get("time_E") or {}).get("median_s"),
                (e.get("time_E") or {}).get("stddev_s")), "human_seconds", True),
    ("c-time", "-c wall time, median ± stddev (hyperfine)", "seconds (log scale)",
     lambda e: ((e.get("time_c") or {}).get("median_s"),
                (e.get("time_c") or {}).get("stddev_s")), "human_seconds", True),
    ("peak-rss", "peak RSS of the -c compile (GNU time)", "kB (log scale)",
     lambda e: ((e.get("time_c") or {}).get("peak_rss_kb"), None), "human_kb", True),
]


def plot_all(index, records, outdir):
    by = {(r["commit"], r["compiler"]): r for r in records}
    names = [p["name"] for p in index["points"]]
    written = []
    for cc in sorted({r["compiler"] for r in records}):
        recs = [by.get((p["commit"], cc)) for p in index["points"]]
        ver = next(r for r in recs if r)["compiler_version"] if any(recs) else cc
        for stem, what, ylabel, get, fmt, logy in SERIES_METRICS:
            lines, errs = {}, {}
            for f in index["files"]:
                vals = [get(r["files"][f]) if r and ok(r["files"].get(f))
                        else (None, None) for r in recs]
                lines[f] = [v for v, _ in vals]
                errs[f] = [er or 0 for _, er in vals]
            if not any(v is not None for ys in lines.values() for v in ys):
                continue
            base = outdir / f"{stem}-{cc}"
            regression.series_plot(
                names, lines, base,
                f"{what} per focus file across the {index.get('case')} series\n"
                f"{index.get('package')}, {ver}, "
                f"{index.get('config') or 'x86_64 tinyconfig + fragment'}",
                ylabel, log=logy, formatter=getattr(regression, fmt),
                errs=errs if stem.endswith("time") else None)
            written += [base.with_suffix(".png"), base.with_suffix(".svg")]
    return written


# --- A versus B ---------------------------------------------------------------

def write_pair_report(results, outdir, records=None):
    outdir = Path(outdir)
    pair = read_json(outdir / "pair.json")
    if not pair:
        raise KexpandError(f"{outdir}/pair.json missing or unreadable: run "
                           "'make compare A=... B=...'")
    if records is None:
        records = bench.results.load_records(results)
    # the bench's A/A pair is judged on the floors and measured the noise
    # every other pair's thresholds come from (results/noise.json, written
    # by make bench): the verdicts do not depend on the order of reports
    noise = None if pair.get("aa_check") or not (results / NOISE_FILE).exists() \
        else read_json(results / NOISE_FILE)
    rows = verdict.pair_rows(pair, records, noise if isinstance(noise, dict) else None)
    aa = ""
    if pair.get("aa_check"):
        ok_rows = [r for r in rows if r["status"] == "ok"]
        n = dict(verdict.aa_noise(ok_rows), rows=len(ok_rows),
                 flagged=sum(bool(r.get("significant") or r.get("e_significant"))
                             for r in ok_rows))
        pct = lambda x: "not measured" if x is None else f"{x:.3%}"   # noqa: E731
        aa = ("\n## The built-in A/A check\n\nB expands byte for byte like A, so "
              "every difference below is noise. Largest |B/A - 1| over the "
              f"{n['rows']} (file, compiler) rows, -E and -c: instructions "
              f"{pct(n['instructions'])}, CPU time {pct(n['cpu_time'])}, wall time "
              f"{pct(n['wall_time'])}. Flagged as significant (-c or -E): "
              f"{n['flagged']} of {n['rows']}. Every other compare takes its "
              "thresholds from these figures (`results/noise.json`).\n")
    bench.results.write_report(outdir / "compare.csv", tables.csv_text(
        COMPARE_COLUMNS, [r for r in rows if r["status"] == "ok"]))
    changes = read_json(outdir / "lines.json") if (outdir / "lines.json").exists() else None
    bench.results.write_report(outdir / "report.md", tables.pair_markdown(
        pair, rows, changes if isinstance(changes, dict) else None)
        + aa + macros.pair_markdown(pair, records))
    plots = set()
    for cc in pair["compilers"]:
        cr = [r for r in rows if r["compiler"] == cc and r["status"] == "ok"]
        if not cr:
            continue
        plots |= {f"bytes-{cc}", f"c-time-{cc}"}
        files = [r["file"] for r in cr]
        la, lb = pair["a"]["ref"], pair["b"]["ref"]
        regression.pair_bars(files, [r["bytes_a"] for r in cr],
                             [r["bytes_b"] for r in cr], la, lb,
                             outdir / f"bytes-{cc}",
                             f"preprocessed bytes (-E), {la} vs {lb}, {cc}\n"
                             f"{pair['package']}", "bytes (log scale)")
        if all("c_time_a_s" in r for r in cr):
            regression.pair_bars(
                files, [r["c_time_a_s"] for r in cr], [r["c_time_b_s"] for r in cr],
                la, lb, outdir / f"c-time-{cc}",
                f"-c wall time (hyperfine), median ± stddev, {la} vs {lb}, {cc}\n"
                f"{pair['package']}", "seconds (log scale)",
                formatter=regression.human_seconds,
                a_err=[r["c_sd_a"] for r in cr], b_err=[r["c_sd_b"] for r in cr])
    # a report drawn again keeps none of its old plots (a compiler or file
    # set that changed would leave them on the page)
    for old in list(outdir.glob("*.png")) + list(outdir.glob("*.svg")):
        if old.stem not in plots or (old.stem.startswith("c-time-") and not all(
                "c_time_a_s" in r for r in rows if r["status"] == "ok")):
            old.unlink()
    return rows


# --- scans, boots and conformance -------------------------------------------------

def write_scan_report(results, outdir):
    """ranking.md and the growth histogram of one scan pair."""
    outdir = Path(outdir)
    pair = read_json(outdir / "pair.json")
    if not pair or not (outdir / "ranking.csv").exists():
        raise KexpandError(f"{outdir}: no pair.json or ranking.csv: run "
                           "'make scan A=... B=...'")
    rows = [dict(r, bytes_a=int(r["bytes_a"]), bytes_b=int(r["bytes_b"]),
                 growth_bytes=int(r["growth_bytes"]),
                 growth_ratio=float(r["growth_ratio"]) if r["growth_ratio"] else None)
            for r in csv.DictReader(open(outdir / "ranking.csv"))]
    scans = bench.results.load_kind(results, "kexpand.scan",
                                    pair.get("record", f"scan-{pair['compiler']}"))
    sa, sb = scans.get(pair["a"]["commit"]), scans.get(pair["b"]["commit"])
    if not sa or not sb:
        raise KexpandError(f"{outdir}: the scan records of A and B are missing "
                           f"under {results}: run 'make scan A=... B=...' again")
    bench.results.write_report(outdir / "ranking.md", tables.ranking_markdown(pair, rows, sa, sb))
    if sa.get("headers") and sb.get("headers"):     # bytes by header
        d = hdr.diff(sa["headers"], sb["headers"], top=30)
        bench.results.write_report(outdir / "headers.md", headers.markdown(pair, d, sb["headers"]))
        regression.header_bars(headers.by_directory(sb["headers"]), headers.grew_most(d),
                               outdir / "headers", headers.title(pair))
    if sb.get("headers"):       # the page: both builds, or B's alone
        headerpage.write_page(results, outdir, pair, sa.get("headers"), sb["headers"])
    else:
        (outdir / "headers.html").unlink(missing_ok=True)
    ratios = [r["growth_ratio"] for r in rows if r["growth_ratio"]]
    if ratios:
        regression.growth_histogram(
            ratios, outdir / "growth",
            f"per-file growth of -E bytes, {pair['a']['ref']} -> {pair['b']['ref']}, "
            f"{len(ratios)} C files, {pair.get('compiler')}\n{pair.get('package')}")
    return rows


def redraw_sweeps(results):
    """make plots: every sweep report drawn again from its sweep.json (a
    scan's ranking is not: an older pair.json may lack what it shows)."""
    for d in sorted(j.parent for j in results.glob("sweep/*/*/sweep.json")):
        try:
            write_sweep_report(results, None, None, d)
        except (KexpandError, KeyError, TypeError, ValueError) as err:
            log(f"warning: {d}: not drawn again: {err}")


def write_tracks(results):
    """Every track's graphs and pages, after the compare reports they name
    for their interesting points that were measured but not drawn yet."""
    for d in trackpage.undrawn_compares(results):
        try:
            write_pair_report(results, d)
        except KexpandError as err:
            log(f"warning: {d}: no report drawn for a track: {err}")
    for p in trackpage.write_all(results):
        log(f"wrote {p}")


def write_sweep_report(results, point, file, d=None):
    d = d or results / "sweep" / bench.results.safe_name(point) / file.replace("/", "_")
    data = read_json(d / "sweep.json")
    if not isinstance(data, dict):
        raise KexpandError(f"no {d}/sweep.json: run 'make sweep FILE=... POINT=...'")
    sweep_report.effect_plot(data, d / "effects")
    md = sweep_report.markdown(data)
    bench.results.write_report(d / "sweep.md", md)
    return md


def scan_totals_plot(results, index, outdir):
    """Total -E bytes of the whole build and full-build time per point."""
    pts, totals, builds, clean = [], [], [], []
    for cc in ("gcc", "clang"):
        recs = bench.results.load_kind(results, "kexpand.scan", f"scan-{cc}")
        got = [(p["name"], recs[p["commit"]]) for p in index["points"]
               if p["commit"] in recs]
        if not got:
            continue
        # a Kbuild-driven scan's time (scan_s), or an older full build's
        got = [(n, r) for n, r in got
               if r["build"].get("scan_s", r["build"].get("full_build_s")) is not None]
        if not got:
            continue
        pts = [n for n, _ in got]
        totals = [r["total_bytes"] for _, r in got]
        builds = [r["build"].get("scan_s", r["build"].get("full_build_s")) for _, r in got]
        clean = [r["build"].get("from") == "clean" if "scan_s" in r["build"]
                 else r["build"]["from_clean"] for _, r in got]
        regression.totals_plot(
            pts, totals, builds, clean, outdir / f"scan-totals-{cc}",
            f"whole build: total -E bytes of every compiled C file and the scan's "
            f"time (Kbuild-driven, make -j{got[0][1]['build']['jobs']})\n"
            f"{index.get('package')}, {cc}")
    return pts


def write_conformance(results, index):
    """results/conformance.{csv,md} from the per-point conformance records."""
    recs = bench.results.load_kind(results, "kexpand.conformance", "conformance")
    pts = [p for p in index["points"] if p["commit"] in recs]
    if not pts:
        return None
    points = [p["name"] for p in pts]
    by_point = {p["name"]: recs[p["commit"]]["results"] for p in pts}
    snippets = recs[pts[0]["commit"]]["snippets"]
    rows = tables.matrix_rows(snippets, by_point, points)
    cols = tables.CONFORMANCE_FIXED[:2] + points + tables.CONFORMANCE_FIXED[2:]
    bench.results.write_report(results / "conformance.csv", tables.csv_text(cols, rows))
    bench.results.write_report(results / "conformance.md",
                 tables.conformance_markdown(snippets, by_point, points, rows))
    return rows


def write_boot_report(results, index):
    boots = bench.results.load_kind(results, "kexpand.boot", "boot")
    rows = [(p, boots[p["commit"]]) for p in index["points"] if p["commit"] in boots]
    if rows:
        bench.results.write_report(results / "boot.md", tables.boot_markdown(rows))


PLOT_ORDER = [m[0] for m in SERIES_METRICS[:1]] + ["every-commit"] + \
    [m[0] for m in SERIES_METRICS[1:]] + ["scan-totals"]


def every_commit_plot(index, records, outdir):
    """-E bytes of the focus files at every commit of the series line (gcc):
    each patch, not only the named points."""
    line = index.get("line") or []
    by = {r["commit"]: r for r in records if r["compiler"] == "gcc"}
    if len(line) < 3 or not all(c["commit"] in by for c in line):
        return []
    lines = {f: [(by[c["commit"]]["files"].get(f) or {}).get("expanded_bytes")
                 for c in line] for f in index["files"]}
    base = outdir / "every-commit-gcc"
    regression.series_plot(
        [c["name"] for c in line], lines, base,
        f"preprocessed bytes (-E output) at every commit of the series, gcc\n"
        f"{index.get('package', '')}", "bytes (log scale)",
        xlabel="every commit, first parent (named points and the patches between)")
    return [base.with_suffix(".png"), base.with_suffix(".svg")]


def write_series(results, case):
    index = bench.results.load_series(results, case)
    if not index:
        raise KexpandError(f"no {results}/series-{case}.json: run 'make bench' first")
    everything = bench.results.load_records(results)
    records = [r for r in everything if r.get("case", case) == case]
    write_boot_report(results, index)
    write_conformance(results, index)
    if not records:         # make boot alone: boots and conformance only
        log(f"no expansion records under {results} yet: the series plots and "
            "tables come with 'make bench'")
        return
    outdir = results / "plots"
    written = plot_all(index, records, outdir)
    bench.results.write_report(results / "expansion.md", tables.tables(index, records))
    bench.results.write_report(results / "macros.csv", tables.csv_text(
        macros.CSV_COLUMNS, macros.csv_rows(index, records)))
    bench.results.write_report(results / "macros.md", macros.series_markdown(index, records))
    written += macros.flame_graphs(index, records, outdir)
    written += every_commit_plot(index, everything, outdir)
    # every compare pair, the bench's A/A check among them, from these records
    pairs = sorted((results / "compare").glob("*/pair.json"),
                   key=lambda p: (not (read_json(p) or {}).get("aa_check"), str(p)))
    for pair in pairs:
        write_pair_report(results, pair.parent, everything)
    scan_totals_plot(results, index, outdir)
    log(f"wrote {results / 'expansion.md'} and {len(written)} plot files in {outdir}")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="report.py")
    ap.add_argument("--case", default=None)
    ap.add_argument("--results", default=None)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--pair", default=None,
                      help="a results/compare/A..B directory to (re)write")
    mode.add_argument("--compare", action="store_true",
                      help="the compare report of A and B (from the environment)")
    mode.add_argument("--scan", action="store_true",
                      help="the scan report of A and B (from the environment)")
    mode.add_argument("--sweep", action="store_true",
                      help="the sweep report of FILE at POINT (from the environment)")
    mode.add_argument("--check", action="store_true",
                      help="the reports of every make check under results/check/")
    mode.add_argument("--track", action="store_true",
                      help="the graphs and pages of every make track under results/track/")
    mode.add_argument("--index", action="store_true",
                      help="only the pages: results/index.html, results/pages/, each "
                      "report's index.html")
    args = ap.parse_args(argv)
    # the same Request as the measuring side (kbuild.settings), so that a
    # setting means the same here (KEXPAND_RESULTS='~/x', CONFIG=, KERNEL=)
    command = "compare" if args.compare else "scan" if args.scan else \
        "sweep" if args.sweep else "check" if args.check else "report"
    req = settings.from_env(command, {"results": args.results, "case": args.case})
    results = req.results
    if args.compare or args.scan:
        args.pair = bench.results.report_dir(req, command, req.a or "", req.b or "")
    if args.check:      # the run's check: its record is newer than its report
        for d in write_check_reports(results, req, new_only=True):
            log(f"wrote {d / 'report.txt'}")
    elif args.sweep:
        print(write_sweep_report(results, req.point or "", req.file or ""))
    elif args.scan:
        write_scan_report(results, args.pair)
        print((Path(args.pair) / "ranking.md").read_text())
    elif args.pair:
        write_pair_report(results, args.pair)
        print((Path(args.pair) / "report.md").read_text())
    elif not (args.index or args.track):    # make plots: everything
        write_series(results, req.case)
        write_check_reports(results, req)
        redraw_sweeps(results)
    if not (args.index or args.check or args.scan or args.sweep):
        write_tracks(results)   # a compare may be a track's commit against its parent
    # the index, and the pages of what this run made (make plots: every page)
    made = "compare" if command == "report" and (args.track or args.pair) else command
    out = page.write_index(results, PLOT_ORDER, req.case,
                           page.DRAWS.get(made, set(page.SECTIONS) if args.index else None))
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    main_wrapper(main)
