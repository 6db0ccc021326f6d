"""results/index.html: every plot and table of the latest bench and of each
compare, bisect and scan run, with relative links, viewable offline.
Markdown goes through Debian's python3-markdown (tables extension)."""
import html
import re
from pathlib import Path

import markdown

from bench.results import atomic_write, log, read_json


CODE_SPAN = re.compile(r"<code>(.*?)</code>", re.S)


def md_to_html(md):
    """Markdown with tables; a pipe escaped inside a table cell's code span
    (`a\\|b`) shows as a plain pipe, as on GitHub."""
    out = markdown.markdown(md, extensions=["tables"])
    return CODE_SPAN.sub(lambda m: "<code>" + m.group(1).replace("\\|", "|") + "</code>", out)


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


def last_bench_html(last):
    """The last bench's wall-time split; when it measured nothing (all
    cached), the last cold run's split beside it."""
    def one(run):
        return (f"<code>{html.escape(run['command'])}</code>, {run['total_s']:.0f} s ("
                + ", ".join(f"{html.escape(k)} {v:.0f} s" for k, v in run["split_s"].items())
                + ")")
    out = "<p>Last bench: " + one(last) + "</p>"
    cold = last.get("last_cold")
    if isinstance(cold, dict) and cold.get("total_s") != last["total_s"]:
        out += "<p>Last cold bench (everything measured): " + one(cold) + "</p>"
    return out


def bisect_html(b):
    def cell(n):
        return f"{n:,}" if isinstance(n, int) else "not measured"
    rows = "".join(
        f"<tr><td><code>{c['commit'][:12]}</code></td><td>{cell(c.get('bytes'))}</td>"
        f"<td>{html.escape(c['subject'])}"
        f"{' ← first bad' if c['commit'] == b['first_bad'] else ''}</td></tr>"
        for c in b["per_commit"])
    mac = ""
    if b.get("first_bad_macros"):
        num = lambda v: f"{v:,}" if isinstance(v, int) else "(not in top)"  # noqa: E731
        mac = ("<p>macros whose own bytes (gcc) changed most at the first bad "
               "commit:</p><table><tr><th>macro</th><th>before</th><th>after</th></tr>"
               + "".join(f"<tr><td><code>{html.escape(m['macro'])}</code></td>"
                         f"<td>{num(m['own_bytes_before'])}</td>"
                         f"<td>{num(m['own_bytes_after'])}</td></tr>"
                         for m in b["first_bad_macros"]) + "</table>")
    return (f"<hr><h2>bisect: {html.escape(b['file'])} "
            f"{html.escape(b['good']['ref'])}..{html.escape(b['bad']['ref'])}</h2>"
            f"<p>threshold {b['threshold_bytes']:,} bytes; first bad: "
            f"<code>{b['first_bad'][:12]}</code> {html.escape(b['first_bad_subject'])}</p>"
            f"<table><tr><th>commit</th><th>bytes</th><th>subject</th></tr>{rows}</table>"
            + mac)


def image(results, p, link_svg=False):
    rel = p.relative_to(results).as_posix()
    img = f'<img src="{rel}" alt="{html.escape(p.stem)}">'
    return f'<p><a href="{rel[:-4]}.svg">{img}</a></p>' if link_svg else f"<p>{img}</p>"


def write_index(results, plot_order):
    """results/index.html: every plot and table of the latest bench and of
    each compare, bisect and scan run; relative links, viewable offline.
    plot_order: the stems of the series plots, in the order to show them."""
    results = Path(results)
    parts = ["<h1>kexpand results</h1>"]
    last = read_json(results / "last-bench.json") if (results / "last-bench.json").exists() else None
    if isinstance(last, dict) and "split_s" in last:
        parts.append(last_bench_html(last))
    rank = lambda p: (next((i for i, st in enumerate(plot_order)  # noqa: E731
                            if p.stem.startswith(st + "-")), len(plot_order)), p.stem)
    plots = sorted((results / "plots").glob("*.png"), key=rank) \
        if (results / "plots").is_dir() else []
    if plots:
        parts.append("<h2>Series plots</h2>")
        parts += [image(results, p, link_svg=True) for p in plots]
    for i, name in enumerate(("expansion.md", "boot.md", "conformance.md")):
        if (results / name).exists():
            parts.append(("<hr>" if i else "") + md_to_html((results / name).read_text()))
    flames = sorted((results / "plots").glob("flame-*.svg")) \
        if (results / "plots").is_dir() else []
    if flames:
        parts.append("<hr><h2>Flame graphs: the hottest line of each focus file, "
                     "by macro expansion stack (clang)</h2><p>Width: bytes produced "
                     "inside a macro's expansions; bottom: the line, above it the "
                     "outermost macro. Open one for its tooltips.</p>")
        parts += [f'<p><a href="{p.relative_to(results).as_posix()}"><img '
                  f'src="{p.relative_to(results).as_posix()}" alt="{html.escape(p.stem)}">'
                  "</a></p>" for p in flames]
    if (results / "macros.md").exists():
        parts.append("<hr>" + md_to_html((results / "macros.md").read_text()))
    for kind in ("compare", "scan"):
        d = results / kind
        for sub in sorted(p for p in d.iterdir() if p.is_dir()) if d.is_dir() else []:
            rep = next((sub / n for n in ("report.md", "ranking.md")
                        if (sub / n).exists()), None)
            if rep:
                parts.append(f"<hr><h2>{kind}: {html.escape(sub.name)}</h2>")
                parts += [image(results, p) for p in sorted(sub.glob("*.png"))]
                parts.append(md_to_html(rep.read_text()))
    for rep in sorted(results.glob("sweep/*/*/sweep.md")):
        parts.append(f"<hr><h2>sweep: {html.escape(rep.parent.parent.name)}, "
                     f"{html.escape(rep.parent.name)}</h2>")
        parts += [image(results, p) for p in sorted(rep.parent.glob("*.png"))]
        parts.append(md_to_html(rep.read_text()))
    for j in sorted((results / "bisect").glob("*/*.json")):
        b = read_json(j)
        try:
            parts.append(bisect_html(b))
        except (KeyError, TypeError, ValueError, AttributeError):
            log(f"warning: skipping {j}: not a well-formed bisect record")
    page = ("<!doctype html><html><head><meta charset=utf-8><title>kexpand "
            f"results</title><style>{PAGE_STYLE}</style><script>{PAGE_SCRIPT}"
            "</script></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")
    atomic_write(results / "index.html", page)
    return results / "index.html"
