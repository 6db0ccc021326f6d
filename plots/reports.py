"""A page of its own for every report: results/compare/<A..B>/index.html,
results/scan/<A..B>/index.html, results/sweep/<point>/<file>/index.html
and results/check/<name>/index.html, each beside the files it renders
(the Markdown report, its plots, its CSV and JSON, linked), and the list
pages results/pages/{compares,scans,sweeps,checks}.html."""
import csv
import math
from pathlib import Path

from bench.results import atomic_write, log, read_json, write_report

from . import checkreport as check_report
from . import ci
from .htmlkit import (draws, esc, stale, figures, file_links, link, md_to_html, page, split_h1,
                      text_of, write)
from .sections import scan_totals, section_path

PAGE = "index.html"


def report_page(d, md_name="report.md"):
    """The page of the report in d, when there is a report to show."""
    return Path(d) / PAGE if (Path(d) / md_name).exists() else None


def compare_page(d):
    return report_page(d, "report.md")


def _csv(p):
    try:
        with open(p, newline="") as f:
            return list(csv.DictReader(f))
    except (OSError, csv.Error, UnicodeDecodeError):
        return []


def _num(v, kind=float):
    try:
        return kind(v)
    except (TypeError, ValueError):
        return None


def report_html(results, d, md_name, title, plots, data, trail, extra=""):
    """Write d/index.html: the report's Markdown (its heading is the page's),
    its plots and `extra` (HTML) above it, its data files below."""
    path = d / PAGE
    h1, body = split_h1(md_to_html((d / md_name).read_text()))
    body = figures(path, plots, row=len(plots) > 1) + extra + body + \
        file_links(path, [d / n for n in data])
    write(path, page(results, path, text_of(h1) if h1 else title, body, trail, h1=h1))
    return path


def list_page(results, key, title, intro, head, rows, empty, extra="", draw="all"):
    path = section_path(results, key)
    if not draw:
        return path
    table = ("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"
             + "".join("<tr>" + "".join(f"<td class=l>{c}</td>" for c in r) + "</tr>"
                       for r in rows) + "</table>") if rows else f"<p>{empty}</p>"
    write(path, page(results, path, title, f"<p>{intro}</p>{table}{extra}"))
    return path


def compares(results, draw="all"):
    """The compares section (draw: see htmlkit.draws)."""
    key, items, rows = "compares", [], []
    lst = section_path(results, key)
    for d in sorted(p for p in (results / "compare").glob("*") if p.is_dir()):
        if not compare_page(d):
            continue
        pair = read_json(d / "pair.json") if (d / "pair.json").exists() else None
        pair = pair if isinstance(pair, dict) else {}
        plots = sorted(d.glob("bytes-*.png")) + sorted(d.glob("c-time-*.png"))
        p = d / PAGE
        if draws(draw, p, d / "report.md", d / "pair.json"):
            report_html(results, d, "report.md", d.name, plots,
                        ["compare.csv", "report.md", "pair.json", "lines.json"],
                        [("compares", lst)])
        rs = [r for r in _csv(d / "compare.csv") if _num(r.get("bytes_ratio"))]
        big = max(rs, key=lambda r: abs(math.log(_num(r["bytes_ratio"]) or 1)), default=None)
        sig = sum(r.get("significant") == "True" for r in rs)
        note = (f"bytes B/A x{_num(big['bytes_ratio']):.3g} at {big['file']} "
                f"({big['compiler']}); -c significant in {sig} of {len(rs)} rows") if big else ""
        kind = "A/A check (noise)" if pair.get("aa_check") else ""
        a, b = (pair.get("a") or {}), (pair.get("b") or {})
        rows.append([link(lst, p, d.name),
                     esc(f"{a.get('ref', '?')} ({(a.get('commit') or '')[:12]}) -> "
                         f"{b.get('ref', '?')} ({(b.get('commit') or '')[:12]})"),
                     esc(kind), esc(note)])
        items.append((d.name, p, kind or note))
    list_page(results, key, "Compares", "Two commits through the same engine: bytes, "
              "hottest lines, macros and compile cost, B against A. "
              "<code>make compare A= B=</code> adds one.",
              ["report", "A -> B", "", "headline"], rows, "No compare reports yet.",
              draw=draw)
    return {"key": key, "title": "Compares", "path": lst, "items": items,
            "summary": f"{len(items)} report(s)" if items else "none yet"}


def scans(results, draw="all"):
    """The scans section (draw: see htmlkit.draws)."""
    key, items, rows = "scans", [], []
    lst = section_path(results, key)
    for d in sorted(p for p in (results / "scan").glob("*") if p.is_dir()):
        if not report_page(d, "ranking.md"):
            continue
        hp = d / "headers.html"
        p = d / PAGE
        if draws(draw, p, d / "ranking.md", d / "pair.json"):
            report_html(results, d, "ranking.md", d.name, sorted(d.glob("*.png")),
                        ["ranking.csv", "ranking.md", "pair.json"]
                        + [n for n in ("headers.md", "headers-files.json")
                           if (d / n).exists()], [("scans", lst)],
                        f"<p>Bytes by header, header by header: "
                        f"{link(d / PAGE, hp, 'headers.html')} (charts linked to each "
                        "header's files and include entries).</p>" if hp.exists() else "")
        rk = _csv(d / "ranking.csv")
        top = rk[0] if rk else None
        note = (f"{len(rk):,} files; most growth: {top['file']} "
                f"+{int(top['growth_bytes']):,} bytes") if top and \
            _num(top.get("growth_bytes"), int) is not None else f"{len(rk):,} files"
        rows.append([link(lst, p, d.name), esc(note)])
        items.append((d.name, p, note))
    list_page(results, key, "Scans", "Every C file the build compiled, at two points. "
              "<code>make scan A= B=</code> adds one.", ["scan", "what"], rows,
              "No scans yet.", scan_totals(results, lst) if draw else "", draw=draw)
    return {"key": key, "title": "Scans", "path": lst, "items": items,
            "summary": f"{len(items)} scan(s)" if items else "none yet"}


def sweeps(results, draw="all"):
    """The sweeps section (draw: see htmlkit.draws)."""
    key, items, rows = "sweeps", [], []
    lst = section_path(results, key)
    for md in sorted(results.glob("sweep/*/*/sweep.md")):
        d = md.parent
        name = f"{d.parent.name}, {d.name}"
        p = d / PAGE
        if draws(draw, p, md, d / "sweep.json"):
            report_html(results, d, "sweep.md", name, sorted(d.glob("*.png")),
                        ["options.csv", "sweep.md", "sweep.json"], [("sweeps", lst)])
        opts = _csv(d / "options.csv")
        note = (f"top option {opts[0]['option']}: x{opts[0]['effect_ratio']}" if opts and
                opts[0].get("option") else "")
        rows.append([link(lst, p, name), esc(note)])
        items.append((name, p, note))
    list_page(results, key, "Sweeps", "Which config options multiply a file's expansion. "
              "<code>make sweep FILE= POINT=</code> adds one.", ["sweep", "finding"], rows,
              "No sweeps yet.", draw=draw)
    return {"key": key, "title": "Sweeps", "path": lst, "items": items,
            "summary": f"{len(items)} sweep(s)" if items else "none yet"}


def check_summary(rec):
    """(verdict, subject of the series, the headline) of a check record."""
    regs = check_report.regressions(rec)
    head = check_report.subject(rec).replace("[kexpand] ", "", 1)
    return rec.get("verdict") or ("regression" if regs else "ok"), \
        rec["series"]["subject"], head


def checks(results, draw="all"):
    """The checks section (draw: see htmlkit.draws)."""
    key, items, rows = "checks", [], []
    lst = section_path(results, key)
    for j in sorted((results / "check").glob("*/check.json")):
        d, rec = j.parent, read_json(j)
        try:
            verdict, subject, head = check_summary(rec)
            md = (d / "report.md").read_text() if (d / "report.md").exists() else \
                check_report.report_md(rec)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            log(f"warning: skipping {j}: not a make check record ({type(e).__name__}: {e})")
            continue
        p = d / PAGE
        cls = "bad" if verdict == "regression" else "good"
        if draws(draw, p, j, d / "report.md"):
            h1, body = split_h1(md_to_html(md))
            body = (f'<p>Verdict: <b class="{cls}">{esc(verdict)}</b> '
                    f"(base {esc(str((rec.get('base') or {}).get('ref')))}).</p>" + body
                    + file_links(p, [d / "report.txt", d / "report.md", d / "check.csv", j]))
            write(p, page(results, p, text_of(h1) if h1 else d.name, body, [("checks", lst)],
                          h1=h1))
        rows.append([link(lst, p, d.name), f'<b class="{cls}">{esc(verdict)}</b>',
                     esc(subject), esc(head), esc(str(rec.get("date") or ""))])
        items.append((d.name, p, f"{verdict}: {subject}"))
    list_page(results, key, "Checks", "Posted series against every C file the base "
              "build compiles (<code>make check PATCHES=</code>): a regression is a file "
              "whose <code>-E</code> output grew past the threshold.",
              ["check", "verdict", "series", "headline", "date"], rows, "No checks yet.",
              draw=draw)
    regs = sum(1 for _, _, n in items if n.startswith("regression"))
    return {"key": key, "title": "Checks", "path": lst, "items": items,
            "summary": f"{len(items)} check(s), {regs} with a regression" if items
            else "none yet"}


def write_check_reports(results, req=None, new_only=False):
    """report.txt and report.md of every make check (new_only: of those
    whose record is newer than its report.txt, the run's), and beside them
    the CI files (plots/ci.py, ci/README.md)."""
    done = []
    for j in sorted((results / "check").glob("*/check.json")):
        if new_only and not stale(j.parent / "report.txt", j):
            continue
        rec = read_json(j)
        if not isinstance(rec, dict) or rec.get("kind") != "kexpand.check":
            log(f"warning: skipping {j}: not a make check record")
            continue
        try:
            txt, md = check_report.report_txt(rec), check_report.report_md(rec)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            log(f"warning: skipping {j}: a record of another shape ({type(e).__name__}: {e})")
            continue
        write_report(j.parent / "report.txt", txt)
        write_report(j.parent / "report.md", md)
        who = (req.report_from, req.reported_by, req.report_url) if req else (ci.SENDER,)
        try:
            files = ci.files(rec, txt, j.parent.name, *who)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            # a mail's header kexpand cannot reply to: the report stands
            log(f"warning: {j.parent}: no CI files or reply mail ({type(e).__name__}: {e})")
            files = {}
        for name, data in files.items():
            atomic_write(j.parent / name, data)
        done.append(j.parent)
    return done
