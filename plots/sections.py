"""The pages of the bench's own results, one per section of the index:
results/pages/{series,boots,conformance,macros,bisects}.html, and
results/pages/macros/<file>.html (a focus file's macros and its flame
graphs). Each writer returns what the index says about its section:
{"key", "title", "path", "summary" (HTML), "items": [(text, path, note)]}."""
import csv
import re
from collections import Counter
from pathlib import Path

from bench.results import log, read_json

from .htmlkit import esc, figures, file_links, link, md_to_html, page, split_h1, text_of, write

PLOT_TITLES = {"expansion": "Preprocessed bytes (-E output)",
               "every-commit": "Every commit of the series, not only the points",
               "longest-line": "Longest output line", "e-time": "-E wall time",
               "c-time": "-c wall time", "peak-rss": "Peak RSS of the -c compile",
               "scan-totals": "Whole build: total -E bytes and build time"}


def pages_dir(results):
    return Path(results) / "pages"


def section_path(results, key):
    return pages_dir(results) / f"{key}.html"


def md_page(results, path, title, md_file, before="", after="", trail=()):
    """A page whose body is a Markdown file; its first heading is the page's <h1>."""
    body = md_to_html(Path(md_file).read_text()) if Path(md_file).exists() else ""
    h1, body = split_h1(body)
    return write(path, page(results, path, text_of(h1) if h1 else title,
                            before + body + after, trail, h1=h1))


def series_of(results, case=None):
    """The series index (results/series-<case>.json): the case given, or
    the only one, or minmax."""
    found = sorted(Path(results).glob("series-*.json"))
    want = [p for p in found if case and p.name == f"series-{case}.json"] or \
        (found if len(found) == 1 else [p for p in found if p.name == "series-minmax.json"]) \
        or found[:1]
    data = read_json(want[0]) if want else None
    return (data, want[0]) if isinstance(data, dict) and isinstance(data.get("points"), list) \
        else (None, None)


def last_bench_html(last):
    """The last bench's wall-time split; when it measured nothing (all
    cached), the last cold run's split beside it."""
    def one(run):
        return (f"<code>{esc(run['command'])}</code>, {run['total_s']:.0f} s ("
                + ", ".join(f"{esc(k)} {v:.0f} s" for k, v in run["split_s"].items()) + ")")
    out = "<p>Last bench: " + one(last) + "</p>"
    cold = last.get("last_cold")
    if isinstance(cold, dict) and cold.get("total_s") != last["total_s"]:
        out += "<p>Last cold bench (everything measured): " + one(cold) + "</p>"
    return out


def plot_groups(results, plot_order, skip=("scan-totals",)):
    """[(stem, [png])] of results/plots in plot_order; others last."""
    d = Path(results) / "plots"
    pngs = sorted(d.glob("*.png")) if d.is_dir() else []
    groups, seen = [], set()
    for stem in list(plot_order) + [None]:
        got = [p for p in pngs if p not in seen and
               (stem is None or p.stem.startswith(stem + "-"))]
        if stem in skip:
            seen |= set(got)
            continue
        seen |= set(got)
        if got:
            groups.append((stem, got))
    return groups


def series_page(results, plot_order, case=None, draw="all"):
    """The series section (draw: see htmlkit.draws; None: only summarised)."""
    path = section_path(results, "series")
    series, spath = series_of(results, case)
    parts = []
    groups = plot_groups(results, plot_order)
    n = sum(len(p) for _, p in groups)
    summary = (f"{len(series['points'])} points, {len(series.get('files') or [])} focus "
               f"files: {n} plots, the tables" if series else "no series measured yet")
    out = {"key": "series", "title": "Series", "path": path, "summary": summary, "items": []}
    if not draw:
        return out
    if series:
        parts.append(f"<p>{esc(series.get('package') or '')}, "
                     f"{esc(series.get('config') or 'x86_64 tinyconfig + fragment')}; "
                     f"{len(series.get('files') or [])} focus files.</p>")
        rows = "".join(
            f"<tr><td>{esc(p['name'])}</td><td><code>{esc(p['commit'][:12])}</code></td>"
            f"<td class=l>{esc(p.get('description') or '')}"
            f"{' (control: must expand like its parent)' if p.get('control') else ''}</td></tr>"
            for p in series["points"])
        parts.append("<table><tr><th>point</th><th>commit</th><th>what</th></tr>"
                     f"{rows}</table>")
    last = read_json(results / "last-bench.json") if (results / "last-bench.json").exists() \
        else None
    if isinstance(last, dict) and "split_s" in last:
        try:
            parts.append(last_bench_html(last))
        except (KeyError, TypeError, ValueError, AttributeError):
            log(f"warning: {results / 'last-bench.json'} is of another shape; left out")
    for stem, pngs in groups:
        parts.append(f"<h2>{esc(PLOT_TITLES.get(stem, stem or 'Other plots'))}</h2>"
                     + figures(path, pngs, row=len(pngs) > 1))
    tables = md_to_html((results / "expansion.md").read_text()) \
        if (results / "expansion.md").exists() else ""
    parts.append(split_h1(tables)[1].replace("<h2>", "<h2>Table: ", 1) if tables else
                 "<p>No expansion tables yet: <code>make bench</code>.</p>")
    parts.append(file_links(path, [results / "summary.csv", results / "expansion.md", spath]
                            if spath else [results / "summary.csv"]))
    title = f"Series: {series.get('case', '')}" if series else "Series"
    write(path, page(results, path, title, "\n".join(parts)))
    return out


def csv_rows(p):
    try:
        with open(p, newline="") as f:
            return list(csv.DictReader(f))
    except (OSError, csv.Error, UnicodeDecodeError):
        return []


def simple_page(results, key, title, md_name, csv_name, missing, summarise, draw="all"):
    path = section_path(results, key)
    md = results / md_name
    if md.exists():
        if draw:
            md_page(results, path, title, md, after=file_links(path, [results / csv_name, md]))
        summary = summarise(csv_rows(results / csv_name))
    else:
        if draw:
            write(path, page(results, path, title, f"<p>{missing}</p>"))
        summary = "none yet"
    return {"key": key, "title": title, "path": path, "summary": summary, "items": []}


def boots_page(results, draw="all"):
    def summarise(rows):
        st = Counter(r.get("status") or "?" for r in rows)
        return f"{len(rows)} points: " + ", ".join(f"{n} {s}" for s, n in st.most_common())
    return simple_page(results, "boots", "Boots", "boot.md", "boot.csv",
                       "No boot checks yet: <code>make boot</code> or <code>make bench</code>.",
                       summarise, draw)


def conformance_page(results, draw="all"):
    def summarise(rows):
        differ = sum((r.get("differs_from_claim") or "").strip().lower() not in
                     ("", "false", "no", "0", "-") for r in rows)
        return f"{len(rows)} snippets, {differ} not as the seeds claim"
    return simple_page(results, "conformance", "Conformance", "conformance.md",
                       "conformance.csv", "No conformance matrix yet: <code>make boot</code>.",
                       summarise, draw)


def slug(text):
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", text).strip("_") or "section"


def md_sections(md):
    """(intro, [(heading, markdown of that section)]) split at '## '."""
    parts = re.split(r"(?m)^## ", md)
    return parts[0], [(p.split("\n", 1)[0].strip(), "## " + p) for p in parts[1:]]


def macros_page(results, plot_order, draw="all"):
    """pages/macros.html: what the tables say and a page per focus file
    (its macros, then its flame graphs) and for every commit of the series
    (draw None: only summarised)."""
    path = section_path(results, "macros")
    sub = pages_dir(results) / "macros"
    md = results / "macros.md"
    flames = sorted((results / "plots").glob("flame-*.svg")) \
        if (results / "plots").is_dir() else []
    intro, sections = md_sections(md.read_text()) if md.exists() else ("", [])
    items, used, written = [], set(), set()
    for head, text in sections:
        p = sub / f"{slug(head)}.html"
        mine = [f for f in flames if f.name.startswith(f"flame-{head.replace('/', '_')}-")]
        used |= set(mine)
        extra = ""
        if mine:
            extra = ("<h2>Flame graphs (clang)</h2><p>The hottest line at each point, by "
                     "macro expansion stack: width is bytes made inside a macro's "
                     "expansions; bottom the line, above it the outermost macro. Open "
                     "one for its tooltips.</p>" + figures(p, mine))
        items.append((head, p, f"{len(mine)} flame graphs" if mine else ""))
        if not draw:
            continue
        if head.startswith("Every commit"):
            extra += figures(p, sorted((results / "plots").glob("every-commit-*.png")))
        body = split_h1(md_to_html(text))[1]
        h2 = re.match(r"<h2>(.*?)</h2>", body, re.S)
        body = body[h2.end():] if h2 else body
        write(p, page(results, p, f"Macros: {head}", body + extra,
                      [("macros", path)]))
        written.add(p)
    out = {"key": "macros", "title": "Macros", "path": path, "items": [],
           "summary": f"{len(items)} pages, {len(flames)} flame graphs" if items or flames
           else "none yet"}
    if not draw:
        return out
    rest = [f for f in flames if f not in used]
    body = split_h1(md_to_html(intro))[1] if intro.strip() else \
        "<p>No macro attribution yet: <code>make bench</code> (without NO_MACROS=1).</p>"
    body += ("<ul>" + "".join(f"<li>{link(path, p, t)}{f': {esc(n)}' if n else ''}</li>"
                              for t, p, n in items) + "</ul>") if items else ""
    if rest:
        body += "<h2>Flame graphs (clang)</h2>" + figures(path, rest)
    body += file_links(path, [results / "macros.csv", md])
    write(path, page(results, path, "Which macro", body))
    for old in sub.glob("*.html") if sub.is_dir() else []:
        if old not in written:
            old.unlink()
    return out


def bisect_html(page_path, j, b):
    def cell(n):
        return f"{n:,}" if isinstance(n, int) else "not measured"
    rows = "".join(
        f"<tr><td><code>{c['commit'][:12]}</code></td><td>{cell(c.get('bytes'))}</td>"
        f"<td class=l>{esc(c['subject'])}"
        f"{' ← first bad' if c['commit'] == b['first_bad'] else ''}</td></tr>"
        for c in b["per_commit"])
    mac = ""
    if b.get("first_bad_macros"):
        num = lambda v: f"{v:,}" if isinstance(v, int) else "(not in top)"  # noqa: E731
        mac = ("<p>macros whose own bytes (gcc) changed most at the first bad "
               "commit:</p><table><tr><th>macro</th><th>before</th><th>after</th></tr>"
               + "".join(f"<tr><td><code>{esc(m['macro'])}</code></td>"
                         f"<td>{num(m['own_bytes_before'])}</td>"
                         f"<td>{num(m['own_bytes_after'])}</td></tr>"
                         for m in b["first_bad_macros"]) + "</table>")
    return (f"<h2>{esc(b['file'])} {esc(b['good']['ref'])}..{esc(b['bad']['ref'])}</h2>"
            f"<p>threshold {b['threshold_bytes']:,} bytes; first bad: "
            f"<code>{b['first_bad'][:12]}</code> {esc(b['first_bad_subject'])}</p>"
            f"<table><tr><th>commit</th><th>bytes</th><th>subject</th></tr>{rows}</table>"
            + mac + file_links(page_path, [j]))


def bisects_page(results, draw="all"):
    path = section_path(results, "bisects")
    parts, n = [], 0
    for j in sorted((results / "bisect").glob("*/*.json")):
        try:
            parts.append(bisect_html(path, j, read_json(j)))
            n += 1
        except (KeyError, TypeError, ValueError, AttributeError):
            log(f"warning: skipping {j}: not a well-formed bisect record")
    if draw:
        write(path, page(results, path, "Bisects", "\n".join(parts) or
                         "<p>No bisects yet: <code>make bisect FILE= GOOD= BAD=</code>.</p>"))
    return {"key": "bisects", "title": "Bisects", "path": path, "items": [],
            "summary": f"{n} bisect(s)" if n else "none yet"}


def scan_totals(results, page_path, plot_order=("scan-totals",)):
    """The whole-build totals plots (one per compiler), for the scans page."""
    d = Path(results) / "plots"
    pngs = sorted(d.glob("scan-totals-*.png")) if d.is_dir() else []
    return (f"<h2>{PLOT_TITLES['scan-totals']}</h2>" + figures(page_path, pngs, row=True)) \
        if pngs else ""

