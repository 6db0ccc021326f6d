"""results/index.html: a short page a person reads: the finding (per
focus file, the worst point, its factor against the best and the line
responsible), then the sections, each a page of its own under
results/pages/ and each report a page beside its files (plots/sections.py,
plots/reports.py, plots/trackpage.py). Relative links only, offline."""
from pathlib import Path

from bench.results import load_records

from . import reports, sections, trackpage
from .finding import finding_html
from .htmlkit import esc, link, md_to_html, page, write  # noqa: F401  (md_to_html: the API)

NAV_ITEMS = 12      # reports listed on the index per section; all on its page


def nav_html(index, secs):
    out = ["<h2>Sections</h2><ul>"]
    for s in secs:
        out.append(f"<li>{link(index, s['path'], s['title'])}: {esc(s['summary'])}")
        items = s["items"]
        if items:
            out.append("<ul>" + "".join(
                f"<li>{link(index, p, t)}{f': {esc(n)}' if n else ''}</li>"
                for t, p, n in items[:NAV_ITEMS]) +
                (f"<li>{len(items) - NAV_ITEMS} more on "
                 f"{link(index, s['path'], s['title'].lower())}</li>"
                 if len(items) > NAV_ITEMS else "") + "</ul>")
        out.append("</li>")
    out.append("</ul>")
    return "".join(out)


SECTIONS = ("series", "boots", "conformance", "macros", "compares", "scans", "sweeps",
            "checks", "tracks", "bisects")
# the sections a command's run draws pages in (report.py; a command not
# here: every section's new pages, or with make plots every page)
DRAWS = {"check": {"checks"}, "scan": {"scans"}, "sweep": {"sweeps"},
         "compare": {"compares", "tracks"}}


def write_index(results, plot_order, case=None, draw=None):
    """results/index.html and the pages of the sections in `draw` (None:
    every page of the site but the tracks' own, which report.py --track
    draws): a section named there, or whose page is missing, draws its list
    page and the pages of the reports newer than their page (htmlkit.draws);
    the others are only summarised on the index. plot_order: the stems of
    the series plots, in the order to show them."""
    results = Path(results)
    mode = {k: "all" if draw is None else "new" if k in draw or
            not sections.section_path(results, k).exists() else None for k in SECTIONS}
    series, _ = sections.series_of(results, case)
    secs = [sections.series_page(results, plot_order, case, mode["series"]),
            sections.boots_page(results, mode["boots"]),
            sections.conformance_page(results, mode["conformance"]),
            sections.macros_page(results, plot_order, mode["macros"]),
            reports.compares(results, mode["compares"]), reports.scans(results, mode["scans"]),
            reports.sweeps(results, mode["sweeps"]), reports.checks(results, mode["checks"]),
            trackpage.tracks_section(results, mode["tracks"]),
            sections.bisects_page(results, mode["bisects"])]
    records = []
    if series:
        records = [r for r in load_records(results)
                   if r.get("case", series.get("case")) == series.get("case")]
    index = results / "index.html"
    head = ""
    if series:
        head = (f"<p>How much the C preprocessor expands each focus file of "
                f"{esc(series.get('package') or 'the tree')} at each point of the "
                f"{esc(series.get('case') or '')} series "
                f"({esc(series.get('config') or 'x86_64 tinyconfig + fragment')}).</p>")
    body = head + finding_html(series, records) + nav_html(index, secs)
    write(index, page(results, index, "kexpand results", body))
    return index
