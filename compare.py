#!/usr/bin/python3
"""kexpand reporting: reads results/ only (never builds or measures) and
writes the regression plots and tables.

  compare.py [--case minmax] [--results DIR]

Writes, per compiler CC in the records:
  results/plots/expansion-CC.{png,svg}     bytes per focus file per point
  results/plots/longest-line-CC.{png,svg}  longest line per focus file
  results/expansion.md                     the tables, Markdown
"""
import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "bench"), str(HERE / "plots")]

import results as res                               # noqa: E402
from kxutil import (KexpandError, atomic_write, log, main_wrapper,  # noqa: E402
                    results_dir)


def fmt_bytes(n):
    if n in (None, ""):
        return "-"
    return f"{n:,}"


def ratio(a, b):
    if not a or not b:
        return "-"
    return f"{a / b:.1f}x"


def tables(index, records):
    """Markdown: per compiler, bytes per (file, point) and longest lines,
    with the hottest source line of the largest point."""
    by = {(r["commit"], r["compiler"]): r for r in records}
    points = index["points"]
    out = [f"# Expansion per series point ({index.get('case')}, "
           f"{index.get('package')})", "",
           "Bytes of preprocessor output (`-E`) of each focus file, measured "
           "with the file's exact Kbuild command. Exact and deterministic.", ""]
    for cc in sorted({r["compiler"] for r in records}):
        recs = [by.get((p["commit"], cc)) for p in points]
        if not any(recs):
            continue
        ver = next(r for r in recs if r)["compiler_version"]
        for field, title in (("expanded_bytes", "Expanded bytes"),
                             ("longest_line_bytes", "Longest line, bytes")):
            out += [f"## {title}, {cc} ({ver})", "",
                    "| file | " + " | ".join(p["name"] for p in points) + " |",
                    "|---|" + "---:|" * len(points)]
            for f in index["files"]:
                cells = []
                for r in recs:
                    e = (r or {}).get("files", {}).get(f) if r else None
                    cells.append(fmt_bytes(e.get(field)) if e and e.get("status") == "ok"
                                 else (e or {}).get("status", "-") if e else "-")
                out.append(f"| {f} | " + " | ".join(cells) + " |")
            out.append("")
        out += [f"## Hottest source line per point, {cc}", "",
                "| file | point | line | bytes | `__builtin_choose_expr` | `({` | `__UNIQUE_ID_` | source |",
                "|---|---|---|---:|---:|---:|---:|---|"]
        for f in index["files"]:
            for p, r in zip(points, recs):
                e = (r or {}).get("files", {}).get(f) if r else None
                if not e or e.get("status") != "ok" or not e.get("hot_lines"):
                    continue
                h = e["hot_lines"][0]
                src = h["source"].replace("|", "\\|")[:120]
                out.append(f"| {f} | {p['name']} | {h['at']} | {h['bytes']:,} | "
                           f"{h['choose_expr']} | {h['stmt_expr']} | {h['unique_id']} | `{src}` |")
        out.append("")
    return "\n".join(out) + "\n"


def plot_all(index, records, outdir):
    import regression
    by = {(r["commit"], r["compiler"]): r for r in records}
    names = [p["name"] for p in index["points"]]
    written = []
    for cc in sorted({r["compiler"] for r in records}):
        recs = [by.get((p["commit"], cc)) for p in index["points"]]
        for field, stem, what in (
                ("expanded_bytes", "expansion", "preprocessed bytes (-E output)"),
                ("longest_line_bytes", "longest-line", "longest output line, bytes")):
            lines = {}
            for f in index["files"]:
                ys = []
                for r in recs:
                    e = r["files"].get(f) if r else None
                    ys.append(e.get(field) if e and e.get("status") == "ok" else None)
                lines[f] = ys
            base = outdir / f"{stem}-{cc}"
            regression.series_plot(
                names, lines, base,
                f"{what} per focus file across the {index.get('case')} series\n"
                f"{index.get('package')}, {cc}, x86_64 tinyconfig + fragment",
                f"{what} (log scale)")
            written += [base.with_suffix(".png"), base.with_suffix(".svg")]
    return written


def main():
    ap = argparse.ArgumentParser(prog="compare.py")
    ap.add_argument("--case", default="minmax")
    ap.add_argument("--results", default=None)
    args = ap.parse_args()
    results = Path(args.results) if args.results else results_dir()
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
    log(f"wrote {md} and {len(written)} plot files in {outdir}")
    return 0


if __name__ == "__main__":
    main_wrapper(main)
