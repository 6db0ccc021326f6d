"""What every page under results/ shares: the shell (one <h1>, a trail
back to the index), Markdown through Debian's python3-markdown with
compact tables, relative links, lazy images with their sizes. Pages work
offline from file://: relative links only, nothing fetched from outside."""
import html
import os
import re
import struct
from pathlib import Path
from urllib.parse import quote

import markdown

from bench.results import printable, write_report

esc = html.escape

STYLE = """body{font-family:sans-serif;margin:1.5em;max-width:1200px;line-height:1.35}
table{border-collapse:collapse;font-size:12px;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
td:first-child,th:first-child{text-align:left}.l{text-align:left}.r{text-align:right}
.c{text-align:center}code{font-size:11px}pre{font-size:12px;background:#f6f6f6;padding:.5em;
overflow-x:auto}img{max-width:100%;height:auto;border:1px solid #eee}nav.trail{font-size:13px}
figure{margin:.5em 0}figcaption{font-size:12px;color:#555}.row{display:flex;flex-wrap:wrap;
gap:8px}.row figure{flex:1 1 560px;max-width:100%}ul.finding li{margin:.3em 0}
ul.finding code{font-size:13px}
iframe.graph{width:100%;aspect-ratio:960/280;border:1px solid #eee}.bad{color:#b00}
.good{color:#070}p.li{margin:.1em 0}"""

# Marks each image and embedded graph as it loads (data-loaded: 1 or 0 for
# an image; the circles counted, or -1 when the browser does not let the
# page look inside, for a graph), and the page with the totals: what a
# person sees as a broken image, a test reads from the DOM.
SCRIPT = """(function(){var b=document.body;
function upd(){var ok=0,bad=0,g=0;document.querySelectorAll('img').forEach(function(i){
var s=i.getAttribute('data-loaded');if(s==='1')ok++;if(s==='0')bad++;});
document.querySelectorAll('iframe').forEach(function(f){if(f.hasAttribute('data-loaded'))g++;});
b.setAttribute('data-images-loaded',ok);b.setAttribute('data-images-broken',bad);
b.setAttribute('data-graphs-loaded',g);}
document.querySelectorAll('img').forEach(function(i){function m(){
i.setAttribute('data-loaded',i.naturalWidth>0?'1':'0');upd();}
i.addEventListener('load',m);i.addEventListener('error',m);
if(i.complete&&i.naturalWidth>0)m();});
document.querySelectorAll('iframe').forEach(function(f){f.addEventListener('load',function(){
var n=-1;try{n=f.contentDocument.querySelectorAll('circle').length;}catch(e){}
f.setAttribute('data-loaded',n);upd();});});upd();})();"""


def href(page, target):
    """The relative link from the file `page` to the path `target`."""
    rel = os.path.relpath(Path(target), Path(page).parent)
    return quote(Path(rel).as_posix(), safe="/@+~-._")


def link(page, target, text):
    return f'<a href="{href(page, target)}">{esc(text)}</a>'


def file_links(page, paths):
    """'data: a.csv, b.json' for the files that exist."""
    got = [p for p in paths if Path(p).is_file()]
    if not got:
        return ""
    return "<p>Data: " + ", ".join(link(page, p, Path(p).name) for p in got) + "</p>"


CODE_SPAN = re.compile(r"<code>(.*?)</code>", re.S)
ALIGN = re.compile(r' style="text-align: (left|right|center);"')
TABLE_GAP = re.compile(r">\n+<(/?)(tr|td|th|thead|tbody)\b")
H1 = re.compile(r"<h1>(.*?)</h1>", re.S)


def md_to_html(md):
    """Markdown with tables and fenced code blocks; a pipe escaped inside a table cell's code span
    (`a\\|b`) shows as a plain pipe, as on GitHub. Alignment as classes and
    no line breaks between table cells: the same table in half the bytes."""
    out = markdown.markdown(md, extensions=["tables", "fenced_code"])
    out = CODE_SPAN.sub(lambda m: "<code>" + m.group(1).replace("\\|", "|") + "</code>", out)
    out = ALIGN.sub(lambda m: f' class="{m.group(1)[0]}"', out)
    return TABLE_GAP.sub(r"><\1\2", out)


def split_h1(body):
    """(the text of the first <h1>, the body without it and with every
    later <h1> made an <h2>): a page has one <h1>."""
    m = H1.search(body)
    if not m:
        return None, body
    rest = body[:m.start()] + body[m.end():]
    return m.group(1), H1.sub(r"<h2>\1</h2>", rest)


def text_of(fragment):
    """The plain text of an HTML fragment (a heading, for <title>)."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def page(results, path, title, body, trail=(), h1=None):
    """A whole page at `path`. h1: its heading as HTML (default: the
    escaped title); trail: [(text, path)] between the index and the page."""
    results = Path(results)
    crumbs = [link(path, results / "index.html", "kexpand results")] if \
        Path(path) != results / "index.html" else []
    crumbs += [link(path, p, t) for t, p in trail]
    nav = f'<nav class="trail">{" › ".join(crumbs)}</nav>\n' if crumbs else ""
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            '<meta name=viewport content="width=device-width,initial-scale=1">'
            f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>\n"
            f"{nav}<h1>{h1 if h1 is not None else esc(title)}</h1>\n{body}\n"
            f"<script>{SCRIPT}</script></body></html>\n")


def stale(path, *sources):
    """True when `path` (a page) is missing or older than one of `sources`
    (its record and report): a report's page is drawn once, after the run
    that made the record, and left alone when another command draws."""
    try:
        t = Path(path).stat().st_mtime_ns
    except OSError:
        return True
    return any(Path(s).exists() and Path(s).stat().st_mtime_ns > t for s in sources)


def draws(mode, page, *sources):
    """Whether a section in `mode` draws one report's page: "all" (make
    plots), "new" (only a page older than its record), None (only a page
    that is missing: the section is otherwise only summarised for the
    index, whose links must lead somewhere)."""
    return mode == "all" or not Path(page).exists() or \
        (mode == "new" and stale(page, *sources))


def write(path, text):
    """atomic_write, skipped when the file already holds exactly this text
    (a track's thousand commit pages are written once, not every time)."""
    path, text = Path(path), printable(text)
    try:
        if path.read_text() == text:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    write_report(path, text)
    return path


def png_size(p):
    """(width, height) from a PNG's header, or None."""
    try:
        with open(p, "rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


SVG_SIZE = re.compile(rb'<svg[^>]*?\swidth="([\d.]+)(?:pt|px)?"[^>]*?\sheight="([\d.]+)(?:pt|px)?"')


def svg_size(p):
    try:
        with open(p, "rb") as f:
            m = SVG_SIZE.search(f.read(4096))
    except OSError:
        return None
    return (round(float(m.group(1))), round(float(m.group(2)))) if m else None


def figure(page_path, img, caption=None):
    """A lazy image (its size given, so the page does not jump), linked to
    the SVG beside a PNG (or to itself): the SVG shows values on hover."""
    img = Path(img)
    svg = img.with_suffix(".svg")
    size = png_size(img) if img.suffix == ".png" else svg_size(img)
    dims = f' width="{size[0]}" height="{size[1]}"' if size else ""
    tag = (f'<img src="{href(page_path, img)}" loading="lazy" alt="{esc(img.stem)}"{dims}>')
    target = svg if svg.exists() else img
    cap = caption if caption is not None else (
        "open the SVG: values on hover" if svg.exists() and img.suffix == ".png" else "")
    return (f'<figure><a href="{href(page_path, target)}" title="{esc(cap or img.stem)}">'
            f"{tag}</a>" + (f"<figcaption>{esc(cap)}</figcaption>" if cap else "")
            + "</figure>")


def figures(page_path, imgs, row=False):
    out = "".join(figure(page_path, p) for p in imgs)
    return f'<div class="row">{out}</div>' if row and out else out
