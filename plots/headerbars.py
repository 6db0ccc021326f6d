"""The bar charts of a scan's headers page (plots/headerpage.py): a
build's headers as sorted horizontal bars, inline SVG written by hand
(nothing fetched: the page opens offline), each bar coloured by
the header's top directory and linked to the header's section of the same
page. Names come from line markers, i.e. from whatever a patch names its
files: every one is HTML-escaped and cut (`clip`)."""
import hashlib

from bench.results import printable

from .htmlkit import esc
from .track import nice_step, tick_labels

W = 960
LABEL = 340                 # names end here, right-aligned
VALUE = 96                  # room for the value after the longest bar
ROW, BAR, HEAD = 17, 12, 26
NAME_BYTES = 160            # a name's HTML, at most (titles, headings, tables)
LABEL_BYTES = 56            # a name's HTML beside its bar
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
           "#e377c2", "#17becf", "#bcbd22"]
OTHER = "#999999"
STYLE = ("svg.hb text{font:11px sans-serif;fill:#333}svg.hb text.v{fill:#555}"
         "svg.hb line.g{stroke:#e6e6e6}svg.hb line.z{stroke:#888}"
         "svg.hb a:hover rect{stroke:#000;stroke-width:1.5}"
         "span.sw{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 .8em;"
         "vertical-align:-.1em}")


def _nbytes(s):
    """Bytes of s as written (htmlkit.write escapes control characters)."""
    return len(printable(s).encode("utf-8", "surrogatepass"))


def clip(name, limit=NAME_BYTES):
    """name HTML-escaped, at most `limit` bytes: a longer one keeps its
    start and its end (the file's own name) around an ellipsis."""
    e = esc(name)
    if _nbytes(e) <= limit:
        return e
    for k in range(min(len(name) // 2, limit // 2), 0, -1):
        out = esc(name[:k]) + "\u2026" + esc(name[-k:])
        if _nbytes(out) <= limit:
            return out
    return "\u2026"


def anchor(name):
    """The id of a header's section: stable for a name, safe in any page."""
    return "h-" + hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def group_of(name):
    """A header's top directory: include/<dir>, arch/<arch>, else its first
    component; "(outside the tree)" for an absolute path."""
    if name.startswith("/"):
        return "(outside the tree)"
    parts = name.split("/")
    if len(parts) == 1:
        return "(top of the tree)"
    if parts[0] in ("include", "arch") and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def colours(weights):
    """{group: colour}: the groups of the most weight (bytes) get the
    palette's colours, in that order; the rest share grey."""
    order = sorted(weights, key=lambda g: (-weights[g], g))
    return {g: PALETTE[i] if i < len(PALETTE) else OTHER for i, g in enumerate(order)}


def legend(cols):
    """The colours' key, as HTML; groups past the palette as one "other"."""
    shown = [(g, c) for g, c in cols.items() if c != OTHER]
    rest = len(cols) - len(shown)
    items = [f'<span class="sw" style="background:{c}"></span>{clip(g, 60)}' for g, c in shown]
    if rest:
        items.append(f'<span class="sw" style="background:{OTHER}"></span>'
                     f'{rest} other director{"y" if rest == 1 else "ies"}')
    return '<p class="li">Colour: the top directory.' + "".join(items) + "</p>"


def _axis(lo, hi):
    """(x of a value, ticks [(value, x, label)]) over the bar area."""
    lo, hi = min(lo, 0), max(hi, 0)
    if hi == lo:
        hi = lo + 1
    step = nice_step(hi - lo)
    a = (lo // step) * step
    b = -((-hi) // step) * step
    x0, x1 = LABEL, W - VALUE

    def x(v):
        return x0 + (v - a) / (b - a) * (x1 - x0)
    vals = [a + i * step for i in range(round((b - a) / step) + 1)]
    return x, [(v, x(v), t) for v, t in zip(vals, tick_labels(vals, "B"))]


def chart(rows, label, signed=False):
    """A sorted horizontal bar chart. rows: [(name, value, colour, title)],
    in the order drawn (top first); each bar links to #anchor(name)."""
    if not rows:
        return ""
    vals = [v for _, v, _, _ in rows]
    x, ticks = _axis(min(vals), max(vals))
    h = HEAD + ROW * len(rows) + 8
    out = [f'<svg class="hb" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {h}" '
           f'width="100%" role="img" aria-label="{esc(label)}">']
    for v, tx, t in ticks:
        out.append(f'<line class="g" x1="{tx:.1f}" x2="{tx:.1f}" y1="{HEAD - 6}" '
                   f'y2="{h - 6}"/><text x="{tx:.1f}" y="{HEAD - 10}" '
                   f'text-anchor="middle">{"+" if signed and v > 0 else ""}{t}</text>')
    zero = x(0)
    out.append(f'<line class="z" x1="{zero:.1f}" x2="{zero:.1f}" y1="{HEAD - 6}" '
               f'y2="{h - 6}"/>')
    for i, (name, v, col, title) in enumerate(rows):
        y = HEAD + i * ROW
        left, right = sorted((zero, x(v)))
        text = f"{v:+,}" if signed else f"{v:,}"
        tx, anchor_ = (right + 4, "start") if v >= 0 or not signed else (left - 4, "end")
        if anchor_ == "end" and tx < LABEL + 60:     # no room left of the bar
            tx, anchor_ = right + 4, "start"
        out.append(f'<a href="#{anchor(name)}"><title>{title}</title>'
                   f'<text x="{LABEL - 6}" y="{y + BAR - 2}" text-anchor="end">'
                   f'{clip(name, LABEL_BYTES)}</text><rect x="{left:.1f}" y="{y}" '
                   f'width="{max(right - left, 1):.1f}" height="{BAR}" fill="{col}"/>'
                   f'<text class="v" x="{tx:.1f}" y="{y + BAR - 2}" '
                   f'text-anchor="{anchor_}">{text}</text></a>')
    out.append("</svg>")
    return "\n".join(out)
