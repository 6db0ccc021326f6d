#!/usr/bin/python3
"""kexpand reporting: reads results/ only (never builds or measures) and
writes plots, tables and the results/index.html page.

  compare.py [--case minmax] [--results DIR]     series plots + tables + page
  compare.py --pair results/compare/A..B          one A-vs-B report + page

Series output, per compiler CC in the records:
  results/plots/{expansion,longest-line,e-time,c-time,peak-rss}-CC.{png,svg}
  results/expansion.md
Pair output (results/compare/A..B/): report.md, compare.csv, bytes-CC.*,
c-time-CC.*. Page: results/index.html.
"""
import argparse
import csv
import html
import io
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "bench"), str(HERE / "plots"),
                str(HERE / "kernel-build")]

import results as res                               # noqa: E402
import stats                                         # noqa: E402
from kxutil import (KexpandError, atomic_write, log, main_wrapper,  # noqa: E402
                    read_json, results_dir)

COMPARE_COLUMNS = ["file", "compiler", "bytes_a", "bytes_b", "bytes_ratio",
                   "c_time_a_s", "c_time_b_s", "c_time_ratio", "significant",
                   "c_time_p_value", "noise_rel", "peak_rss_a_kb",
                   "peak_rss_b_kb", "longest_line_a", "longest_line_b"]


def fmt_bytes(n):
    if n in (None, ""):
        return "-"
    return f"{n:,}"


def ok(e):
    return bool(e) and e.get("status") == "ok"


def fmt_time(t):
    if not t:
        return "-"
    return f"{t['median_s']:.3f} ± {t['stddev_s']:.3f}"


def tables(index, records):
    """Markdown: per compiler, bytes and longest lines per (file, point),
    times with spread, and the hottest source line of each point."""
    by = {(r["commit"], r["compiler"]): r for r in records}
    points = index["points"]
    out = [f"# Expansion per series point ({index.get('case')}, "
           f"{index.get('package')})", "",
           "Bytes of preprocessor output (`-E`) of each focus file, measured "
           "with the file's exact Kbuild command: exact and deterministic. "
           "Times: hyperfine median ± standard deviation in seconds, noisy "
           "(a shared 2-core machine).", ""]
    header = "| file | " + " | ".join(p["name"] for p in points) + " |"
    rule = "|---|" + "---:|" * len(points)
    for cc in sorted({r["compiler"] for r in records}):
        recs = [by.get((p["commit"], cc)) for p in points]
        if not any(recs):
            continue
        ver = next(r for r in recs if r)["compiler_version"]
        cols = [
            ("Expanded bytes", lambda e: fmt_bytes(e.get("expanded_bytes"))),
            ("Longest line, bytes", lambda e: fmt_bytes(e.get("longest_line_bytes"))),
            ("-E time, s", lambda e: fmt_time(e.get("time_E"))),
            ("-c time, s", lambda e: fmt_time(e.get("time_c"))),
            ("Peak RSS of -c, kB", lambda e: fmt_bytes((e.get("time_c") or {}).get("peak_rss_kb"))),
        ]
        for title, cell in cols:
            out += [f"## {title}, {cc} ({ver})", "", header, rule]
            for f in index["files"]:
                cells = []
                for r in recs:
                    e = r["files"].get(f) if r else None
                    cells.append(cell(e) if ok(e) else (e or {}).get("status", "-"))
                out.append(f"| {f} | " + " | ".join(cells) + " |")
            out.append("")
        out += [f"## Hottest source line per point, {cc}", "",
                "Counts on that line: `__builtin_choose_expr`, statement "
                "expressions `({`, and `__UNIQUE_ID_` names.", "",
                "| file | point | line | bytes | choose_expr | `({` | unique_id | source |",
                "|---|---|---|---:|---:|---:|---:|---|"]
        for f in index["files"]:
            for p, r in zip(points, recs):
                e = r["files"].get(f) if r else None
                if not ok(e) or not e.get("hot_lines"):
                    continue
                h = e["hot_lines"][0]
                src = h["source"].replace("|", "\\|")[:120]
                out.append(f"| {f} | {p['name']} | {h['at']} | {h['bytes']:,} | "
                           f"{h['choose_expr']} | {h['stmt_expr']} | {h['unique_id']} | `{src}` |")
        out.append("")
    return "\n".join(out) + "\n"


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
    import regression
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
                f"{index.get('package')}, {ver}, x86_64 tinyconfig + fragment",
                ylabel, log=logy, formatter=getattr(regression, fmt),
                errs=errs if stem.endswith("time") else None)
            written += [base.with_suffix(".png"), base.with_suffix(".svg")]
    return written


# --- A versus B ---------------------------------------------------------------

def pair_rows(pair, records):
    by = {(r["commit"], r["compiler"]): r for r in records}
    rows = []
    for cc in pair["compilers"]:
        ra = by.get((pair["a"]["commit"], cc))
        rb = by.get((pair["b"]["commit"], cc))
        if not ra or not rb:
            continue
        for f in pair["files"]:
            ea, eb = ra["files"].get(f), rb["files"].get(f)
            if not ok(ea) or not ok(eb):
                rows.append({"file": f, "compiler": cc, "status":
                             f"A {(ea or {}).get('status')}, B {(eb or {}).get('status')}"})
                continue
            row = {"file": f, "compiler": cc, "status": "ok",
                   "bytes_a": ea["expanded_bytes"], "bytes_b": eb["expanded_bytes"],
                   "bytes_ratio": round(eb["expanded_bytes"] / ea["expanded_bytes"], 4),
                   "longest_line_a": ea["longest_line_bytes"],
                   "longest_line_b": eb["longest_line_bytes"],
                   "hot_a": ea.get("hot_lines", []), "hot_b": eb.get("hot_lines", [])}
            ta, tb = ea.get("time_c"), eb.get("time_c")
            if ta and tb:
                sa, sb = ta["hyperfine"]["times"], tb["hyperfine"]["times"]
                sig = stats.significant(sa, sb)
                row.update({"c_time_a_s": ta["median_s"], "c_time_b_s": tb["median_s"],
                            "c_sd_a": ta["stddev_s"], "c_sd_b": tb["stddev_s"],
                            "c_time_ratio": round(tb["median_s"] / ta["median_s"], 4),
                            "significant": sig["significant"],
                            "c_time_p_value": sig["p_value"],
                            "noise_rel": sig["noise_rel"],
                            "peak_rss_a_kb": ta.get("peak_rss_kb"),
                            "peak_rss_b_kb": tb.get("peak_rss_kb")})
            rows.append(row)
    return rows


def direction(ratio):
    if ratio is None:
        return ""
    if ratio >= 1:
        return f"{ratio:.2f}x ({ratio:.1f}x larger)" if ratio >= 1.005 else "1.00x (same)"
    return f"{ratio:.4g}x ({1 / ratio:.1f}x smaller)"


def pair_markdown(pair, rows):
    a, b = pair["a"], pair["b"]
    out = [f"# {a['ref']} .. {b['ref']}", "",
           f"- A: `{a['commit'][:12]}` {a['subject']}",
           f"- B: `{b['commit'][:12]}` {b['subject']}",
           f"- tree: {pair['package']}",
           f"- reproduce: `{pair['command']}`", "",
           "Bytes: exact size of the `-E` output. Compile time: hyperfine "
           "median ± stddev of the file's exact `-c` command; *significant* "
           "means Welch's t-test on the raw samples gives p < 0.05 and the "
           "medians differ by more than the measured noise (the larger "
           "relative standard deviation of A and B). A and B are timed at "
           "different moments: on a shared machine a change of load between "
           "them is not in the within-run noise, so treat a *significant* "
           "time change with unchanged bytes with suspicion.", ""]
    for cc in pair["compilers"]:
        cr = [r for r in rows if r["compiler"] == cc]
        if not cr:
            continue
        out += [f"## {cc}", "",
                "| file | bytes A | bytes B | B/A | -c A, s | -c B, s | B/A | significant (p, noise) | RSS A kB | RSS B kB |",
                "|---|---:|---:|---|---:|---:|---:|---|---:|---:|"]
        for r in cr:
            if r["status"] != "ok":
                out.append(f"| {r['file']} | {r['status']} |||||||||")
                continue
            t = "c_time_a_s" in r
            out.append(
                f"| {r['file']} | {r['bytes_a']:,} | {r['bytes_b']:,} | "
                f"{direction(r['bytes_ratio'])} | "
                + (f"{r['c_time_a_s']:.3f} ± {r['c_sd_a']:.3f} | "
                   f"{r['c_time_b_s']:.3f} ± {r['c_sd_b']:.3f} | "
                   f"{r['c_time_ratio']:.3g} | "
                   f"{'yes' if r['significant'] else 'no'} (p={r['c_time_p_value']}, "
                   f"noise {r['noise_rel']:.1%}) | "
                   f"{fmt_bytes(r['peak_rss_a_kb'])} | {fmt_bytes(r['peak_rss_b_kb'])} |"
                   if t else "- | - | - | not timed | - | - |"))
        out.append("")
        for r in cr:
            if r["status"] != "ok" or r["bytes_a"] == r["bytes_b"]:
                continue
            grew = r["bytes_b"] > r["bytes_a"]
            out += [f"### {r['file']} ({cc}): hottest lines, "
                    f"{'B grew' if grew else 'B shrank'} by "
                    f"{abs(r['bytes_b'] - r['bytes_a']):,} bytes", "",
                    "| side | line | bytes | choose_expr | `({` | unique_id | source |",
                    "|---|---|---:|---:|---:|---:|---|"]
            for side, hot in (("A", r["hot_a"]), ("B", r["hot_b"])):
                for h in hot[:3]:
                    src = h["source"].replace("|", "\\|")[:140]
                    out.append(f"| {side} | {h['at']} | {h['bytes']:,} | "
                               f"{h['choose_expr']} | {h['stmt_expr']} | "
                               f"{h['unique_id']} | `{src}` |")
            out.append("")
    return "\n".join(out) + "\n"


def write_pair_report(results, outdir):
    outdir = Path(outdir)
    pair = read_json(outdir / "pair.json")
    if not pair:
        raise KexpandError(f"{outdir}/pair.json missing or unreadable: run "
                           "'make compare A=... B=...'")
    records = res.load_records(results)
    rows = pair_rows(pair, records)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COMPARE_COLUMNS, lineterminator="\n",
                       extrasaction="ignore")
    w.writeheader()
    w.writerows([r for r in rows if r["status"] == "ok"])
    atomic_write(outdir / "compare.csv", buf.getvalue())
    atomic_write(outdir / "report.md", pair_markdown(pair, rows))
    import regression
    for cc in pair["compilers"]:
        cr = [r for r in rows if r["compiler"] == cc and r["status"] == "ok"]
        if not cr:
            continue
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
                f"-c compile time, median ± stddev, {la} vs {lb}, {cc}\n"
                f"{pair['package']}", "seconds (log scale)",
                formatter=regression.human_seconds,
                a_err=[r["c_sd_a"] for r in cr], b_err=[r["c_sd_b"] for r in cr])
    return rows


# --- scans ----------------------------------------------------------------------

def write_scan_plots(results, outdir):
    """Distribution of per-file growth between the two scanned points."""
    import regression
    outdir = Path(outdir)
    rows = list(csv.DictReader(open(outdir / "ranking.csv")))
    pair = read_json(outdir / "pair.json") or {}
    ratios = [float(r["growth_ratio"]) for r in rows if r["growth_ratio"]]
    if ratios:
        regression.growth_histogram(
            ratios, outdir / "growth",
            f"per-file growth of -E bytes, {pair.get('a', {}).get('ref')} -> "
            f"{pair.get('b', {}).get('ref')}, {len(ratios)} C files, "
            f"{pair.get('compiler')}\n{pair.get('package')}")


def scan_totals_plot(results, index, outdir):
    """Total -E bytes of the whole build and full-build time per point."""
    import regression
    pts, totals, builds, clean = [], [], [], []
    for cc in ("gcc", "clang"):
        recs = res.load_kind(results, "kexpand.scan", f"scan-{cc}")
        got = [(p["name"], recs[p["commit"]]) for p in index["points"]
               if p["commit"] in recs]
        if not got:
            continue
        pts = [n for n, _ in got]
        totals = [r["total_bytes"] for _, r in got]
        builds = [r["build"]["full_build_s"] for _, r in got]
        clean = [r["build"]["from_clean"] for _, r in got]
        regression.totals_plot(
            pts, totals, builds, clean, outdir / f"scan-totals-{cc}",
            f"whole build: total -E bytes of every compiled C file and full "
            f"build time (make -j{got[0][1]['build']['jobs']} bzImage)\n"
            f"{index.get('package')}, {cc}")
    return pts


# --- boots and conformance ------------------------------------------------------

def conformance_tables(results, index):
    """results/conformance.{csv,md} from the per-point conformance records."""
    import conformance
    recs = res.load_kind(results, "kexpand.conformance", "conformance")
    points = [p["name"] for p in index["points"] if p["commit"] in recs]
    if not points:
        return None
    by_point = {p["name"]: recs[p["commit"]]["results"] for p in index["points"]
                if p["commit"] in recs}
    snippets = recs[next(p["commit"] for p in index["points"]
                         if p["commit"] in recs)]["snippets"]
    rows = conformance.matrix_rows(snippets, by_point, points)
    cols = ["snippet", "question", *points, "expected", "claim", "differs_from_claim"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    atomic_write(results / "conformance.csv", buf.getvalue())
    md = ["# Conformance: compile-time behaviour of each point's minmax.h", "",
          "Each snippet compiled with the point's exact Kbuild flags (gcc): "
          "accepted, warned (compiles with a warning) or rejected (error). "
          "*expected* is what the seeds claim, where they make a claim. "
          "Bold: the points differ on this snippet.", "",
          "| snippet | " + " | ".join(points) + " | expected (seeds) | differs |",
          "|---|" + "---|" * (len(points) + 2)]
    for r in rows:
        varies = len({r[p] for p in points if r[p]}) > 1
        cells = [f"**{r[p]}**" if varies and r[p] else r[p] for p in points]
        md.append(f"| {r['question'].replace('|', '/')} | " + " | ".join(cells) +
                  f" | {r['expected']} | {r['differs_from_claim'] or ''} |")
    md += ["", "Messages (first diagnostic per snippet and point):", ""]
    for s_ in snippets:
        for p in points:
            m = by_point[p].get(s_["name"], {}).get("message")
            if m:
                md.append(f"- {s_['name']} at {p}: `{m[:160]}`")
    md += ["", "Claims:", ""] + [f"- {r['snippet']}: {r['claim']}" for r in rows if r["claim"]]
    atomic_write(results / "conformance.md", "\n".join(md) + "\n")
    return rows


def boot_markdown(results, index):
    boots = res.load_kind(results, "kexpand.boot", "boot")
    rows = [(p, boots[p["commit"]]) for p in index["points"] if p["commit"] in boots]
    if not rows:
        return None
    md = ["# Boot checks (QEMU, TCG, no network)", "",
          "| point | commit | status | seconds to /init | passed | failed | skipped | failures |",
          "|---|---|---|---:|---:|---:|---:|---|"]
    for p, b in rows:
        md.append(f"| {p['name']} | `{p['commit'][:12]}` | {b['status']} | "
                  f"{b.get('boot_s') or '-'} | {b.get('tests_passed', 0)} | "
                  f"{b.get('tests_failed', 0)} | {b.get('tests_skipped', 0)} | "
                  f"{' '.join(b.get('failures') or [])} |")
    text = "\n".join(md) + "\n"
    atomic_write(results / "boot.md", text)
    return text


# --- the page -----------------------------------------------------------------

def md_to_html(md):
    """The Markdown this module writes (headings, lists, tables, code) to
    HTML; not a general Markdown converter."""
    out, table = [], None

    def inline(t):
        t = html.escape(t)
        t = re.sub(r"`([^`]*)`", r"<code>\1</code>", t)
        return re.sub(r"\*([^*]+)\*", r"<em>\1</em>", t)

    def flush():
        nonlocal table
        if table:
            out.append("<table>" + "".join(table) + "</table>")
        table = None

    for line in md.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
            if all(re.fullmatch(r":?-+:?", c) for c in cells if c):
                continue
            tag = "th" if table is None else "td"
            table = table or []
            table.append("<tr>" + "".join(f"<{tag}>{inline(c.replace(chr(92) + '|', '|'))}</{tag}>"
                                          for c in cells) + "</tr>")
            continue
        flush()
        m = re.match(r"(#+) (.*)", line)
        if m:
            n = min(len(m.group(1)) + 1, 6)
            out.append(f"<h{n}>{inline(m.group(2))}</h{n}>")
        elif line.startswith("- "):
            out.append(f"<p class=li>• {inline(line[2:])}</p>")
        elif line.strip():
            out.append(f"<p>{inline(line)}</p>")
    flush()
    return "\n".join(out)


PAGE_STYLE = """body{font-family:sans-serif;margin:1.5em;max-width:1200px}
table{border-collapse:collapse;font-size:12px;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
td:first-child,th:first-child{text-align:left}
code{font-size:11px}img{max-width:100%;border:1px solid #eee}
p.li{margin:.1em 0}"""

PAGE_SCRIPT = """window.addEventListener('load',function(){
var bad=0;document.querySelectorAll('img').forEach(function(i){
var ok=i.complete&&i.naturalWidth>0;i.setAttribute('data-loaded',ok?'1':'0');
if(!ok)bad++;});document.body.setAttribute('data-images-broken',bad);});"""


def write_index(results):
    """results/index.html: every plot and table of the latest bench and of
    each compare, bisect and scan run; relative links, viewable offline."""
    results = Path(results)
    parts = ["<h1>kexpand results</h1>"]
    md = results / "expansion.md"
    last = read_json(results / "last-bench.json") if (results / "last-bench.json").exists() else None
    if last:
        parts.append("<p>Last bench: <code>" + html.escape(last["command"]) +
                     f"</code>, {last['total_s']:.0f} s (" + ", ".join(
                         f"{html.escape(k)} {v:.0f} s" for k, v in last["split_s"].items())
                     + ")</p>")
    order = [m[0] for m in SERIES_METRICS] + ["scan-totals"]
    rank = lambda p: (next((i for i, st in enumerate(order)  # noqa: E731
                            if p.stem.startswith(st + "-")), len(order)), p.stem)
    plots = sorted((results / "plots").glob("*.png"), key=rank) \
        if (results / "plots").is_dir() else []
    if plots:
        parts.append("<h2>Series plots</h2>")
        for p in plots:
            rel = p.relative_to(results).as_posix()
            parts.append(f'<p><a href="{rel[:-4]}.svg"><img src="{rel}" '
                         f'alt="{html.escape(p.stem)}"></a></p>')
    if md.exists():
        parts.append(md_to_html(md.read_text()))
    for extra in ("boot.md", "conformance.md"):
        if (results / extra).exists():
            parts.append("<hr>" + md_to_html((results / extra).read_text()))
    for kind in ("compare", "scan"):
        d = results / kind
        if not d.is_dir():
            continue
        for sub in sorted(p for p in d.iterdir() if p.is_dir()):
            rep = next((sub / n for n in ("report.md", "ranking.md")
                        if (sub / n).exists()), None)
            if not rep:
                continue
            parts.append(f"<hr><h2>{kind}: {html.escape(sub.name)}</h2>")
            for p in sorted(sub.glob("*.png")):
                rel = p.relative_to(results).as_posix()
                parts.append(f'<p><img src="{rel}" alt="{html.escape(p.stem)}"></p>')
            parts.append(md_to_html(rep.read_text()))
    bis = results / "bisect"
    if bis.is_dir():
        for j in sorted(bis.glob("*/*.json")):
            b = read_json(j)
            if not b:
                continue
            parts.append(f"<hr><h2>bisect: {html.escape(b['file'])} "
                         f"{html.escape(b['good']['ref'])}..{html.escape(b['bad']['ref'])}</h2>")
            rows = "".join(
                f"<tr><td><code>{c['commit'][:12]}</code></td><td>{c['bytes'] or '-':,}</td>"
                f"<td>{html.escape(c['subject'])}{' ← first bad' if c['commit'] == b['first_bad'] else ''}</td></tr>"
                for c in b["per_commit"])
            parts.append(f"<p>threshold {b['threshold_bytes']:,} bytes; first bad: "
                         f"<code>{b['first_bad'][:12]}</code> "
                         f"{html.escape(b['first_bad_subject'])}</p>"
                         f"<table><tr><th>commit</th><th>bytes</th><th>subject</th></tr>{rows}</table>")
    page = ("<!doctype html><html><head><meta charset=utf-8><title>kexpand "
            f"results</title><style>{PAGE_STYLE}</style><script>{PAGE_SCRIPT}"
            "</script></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")
    atomic_write(results / "index.html", page)
    return results / "index.html"


def main():
    ap = argparse.ArgumentParser(prog="compare.py")
    ap.add_argument("--case", default="minmax")
    ap.add_argument("--results", default=None)
    ap.add_argument("--pair", default=None,
                    help="a results/compare/A..B directory to (re)write")
    args = ap.parse_args()
    results = Path(args.results) if args.results else results_dir()
    if args.pair:
        write_pair_report(results, args.pair)
        write_index(results)
        return 0
    index = res.load_series(results, args.case)
    if not index:
        raise KexpandError(f"no {results}/series-{args.case}.json: run "
                           "'make bench' first")
    records = [r for r in res.load_records(results)
               if r.get("case", args.case) == args.case]
    if not records:
        raise KexpandError(f"no expansion records under {results}: run "
                           "'make bench' first")
    outdir = results / "plots"
    outdir.mkdir(parents=True, exist_ok=True)
    written = plot_all(index, records, outdir)
    md = results / "expansion.md"
    atomic_write(md, tables(index, records))
    boot_markdown(results, index)
    conformance_tables(results, index)
    scan_totals_plot(results, index, outdir)
    page = write_index(results)
    log(f"wrote {md}, {page} and {len(written)} plot files in {outdir}")
    return 0


if __name__ == "__main__":
    main_wrapper(main)
