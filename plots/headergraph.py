"""The headers graph of a `make track SCAN=1` (#31): the own bytes over
the build of the headers track.json names (`headers.<cc>.names`, chosen
by bench/measure/trackheaders.py) at every commit (`header_own.<cc>`),
one line per header, with a legend naming each header and its bytes at
the first and the last commit. Written by hand like plots/track.py's
graphs and on the same axes (tick_labels, y_scale), but without a point
per commit: a path per header (about 13 bytes a commit each), its
<title> the header's name. A setup boundary breaks the lines and is a
dashed line. A track.json without these fields (before #31, or without
SCAN=1) has no headers graph."""
import re

from .headerbars import PALETTE, clip
from .htmlkit import esc
from .track import BOTTOM, LEFT, RIGHT, TOP, W, exact, tick_labels, y_scale

PLOT_H = 280                 # the plot, as plots/track.py's graphs
ROW = 15                     # a legend line


def name(cc):
    """The graph's file name stem and anchor."""
    return "headers-" + (re.sub(r"[^A-Za-z0-9.+-]+", "_", str(cc)).strip("_") or "_")


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def series(t, cc):
    """[(header, [own bytes or None per commit])] of cc, or [] when the
    track has no header fields of the documented shape."""
    h = t.get("headers")
    e = h.get(cc) if isinstance(h, dict) else None
    names = e.get("names") if isinstance(e, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return []
    out = []
    for n in names:
        vals = []
        for c in t["commits"]:
            per = c.get("header_own") if isinstance(c.get("header_own"), dict) else {}
            per = per.get(cc) if isinstance(per.get(cc), dict) else {}
            vals.append(per.get(n) if _num(per.get(n)) else None)
        out.append((n, vals))
    return out


def height(n_series):
    return PLOT_H + 24 + ROW * n_series


def svg(t, cc, ser, changes):
    """The SVG text of the headers graph of cc. ser: series(t, cc);
    changes: {commit: setup change} that apply to cc (plots/track.py)."""
    cs = t["commits"]
    n = len(cs)
    h = height(len(ser))
    y0 = PLOT_H - BOTTOM
    vals = [v for _, vs in ser for v in vs if v is not None]
    span = (W - LEFT - RIGHT) / max(n - 1, 1)
    x = (lambda i: LEFT + i * span) if n > 1 else (lambda i: (LEFT + W - RIGHT) / 2)
    title = f"own bytes of {len(ser)} headers over the build ({cc}), {n:,} commits"
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="100%" height="100%" '
           f'viewBox="0 0 {W} {h}"><style>text{{font:11px sans-serif;fill:#333}}'
           ".h{font-size:13px}.g{stroke:#e6e6e6}.ax{stroke:#888}path{fill:none;"
           "stroke-width:1.6;stroke-linecap:round}path:hover{stroke-width:3.5}.s{stroke:#e08000;"
           "stroke-dasharray:4 3}</style>",
           f"<title>{esc(title)}</title>", f'<rect width="{W}" height="{h}" fill="#fff"/>',
           f'<text class="h" x="{LEFT}" y="15">{esc(title)}</text>']
    if not vals:
        out.append(f'<text x="{W / 2}" y="{PLOT_H / 2}" text-anchor="middle">no scan with '
                   "bytes by header in the cache</text>")
    yf, ticks = y_scale(vals) if vals else (lambda v: y0, [])
    for (v, y), label in zip(ticks, tick_labels([v for v, _ in ticks], "B")):
        out.append(f'<line class="g" x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text x="{LEFT - 5}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    out.append(f'<line class="ax" x1="{LEFT}" x2="{W - RIGHT}" y1="{y0}" y2="{y0}"/>'
               f'<line class="ax" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{y0}"/>')
    k = min(8, n)
    for i in sorted({round(j * (n - 1) / max(k - 1, 1)) for j in range(k)}):
        anchor = "start" if i == 0 and n > 1 else "end" if i == n - 1 and n > 1 else "middle"
        out.append(f'<text x="{x(i):.1f}" y="{y0 + 13}" text-anchor="{anchor}">'
                   f'{esc(str(cs[i].get("date") or "")[:10])}</text><text x="{x(i):.1f}" '
                   f'y="{y0 + 26}" text-anchor="{anchor}">{esc(cs[i]["commit"][:8])}</text>')
    cut = set()
    for i, c in enumerate(cs):
        ch = changes.get(c["commit"])
        if ch and ch.get("boundary"):
            cut.add(i)
            out.append(f'<line class="s" x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{TOP - 6}" '
                       f'y2="{y0}"><title>setup changed at {esc(c["commit"][:12])}: '
                       f'{esc(str(ch.get("what") or ""))}</title></line>')
    for j, (hname, vs) in enumerate(ser):
        col = PALETTE[j % len(PALETTE)]
        d, pen = [], False
        for i, v in enumerate(vs):
            if v is None or i in cut:
                pen = False
            if v is not None:
                alone = i + 1 == n or vs[i + 1] is None or i + 1 in cut
                d.append(f"{'L' if pen else 'M'}{x(i):.1f} {yf(v):.1f}"
                         + ("h0" if alone and not pen else ""))   # a dot (round caps)
                pen = True
        if d:
            out.append(f'<path stroke="{col}" d="{"".join(d)}"><title>{clip(hname)}'
                       "</title></path>")
        got = [v for v in vs if v is not None]
        ly = PLOT_H + 14 + ROW * j
        figs = (f"{exact(got[0])} -> {exact(got[-1])} ({got[-1] - got[0]:+,})" if got
                else "not measured")
        out.append(f'<line x1="{LEFT}" x2="{LEFT + 22}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{col}" stroke-width="3"/><text x="{LEFT + 28}" y="{ly}">'
                   f"{clip(hname, 110)}  <tspan fill=\"#666\">{figs}</tspan></text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
