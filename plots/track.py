"""The graphs of a `make track` (results/track/<name>/track.json, written
by bench/cmd/track.py): one SVG per (file, metric, compiler), the commits
on the x axis in order, the values on y. Written by hand, not with
matplotlib, to stay light at 1,000 commits: one path for the line and one
<a><circle><title> per commit (about 200 bytes and 3 elements each). A
point's title says the commit, its subject, the value and the change
against its parent; its link (target _top: the graph is embedded as a
document) opens that commit against its parent. Interesting points
(track.json's `interesting`) are red and larger; a commit where the setup
changed (compiler version, config, host, counter) is a dashed vertical
line labelled with what changed, the line is broken there, and it is
never marked as a regression."""
import math

from bench.results import log, read_json

from .htmlkit import esc

W, H = 960, 280                      # the viewBox; pages scale it to their width
LEFT, RIGHT, TOP, BOTTOM = 78, 14, 44, 34
TOTAL = "<whole build>"              # the pseudo-file of total_bytes (SCAN=1)


def shape_problem(t):
    """Why t is not a track record we can draw, or None."""
    if not isinstance(t, dict) or t.get("kind") != "kexpand.track":
        return "not a make track record (kind kexpand.track)"
    for k, typ in (("commits", list), ("files", list), ("compilers", list), ("metrics", dict)):
        if not isinstance(t.get(k), typ):
            return f"its {k} is missing or of another shape"
    for c in t["commits"]:
        if not isinstance(c, dict) or not isinstance(c.get("commit"), str) or \
                not isinstance(c.get("values") or {}, dict):
            return "a commit of another shape"
    if not all(isinstance(i, dict) for i in t.get("interesting") or []):
        return "an interesting entry of another shape"
    return None


def load(d):
    """track.json of the track dir d, checked; None (with a warning) if bad."""
    p = d / "track.json"
    t = read_json(p) if p.exists() else None
    why = shape_problem(t) if t is not None else None
    if why:
        log(f"warning: skipping {p}: {why}")
        return None
    return t


def files_of(t):
    """The graphs' files: the track's, and the whole build when it was
    scanned (SCAN=1: metric total_bytes)."""
    has_total = "total_bytes" in t["metrics"] or any(
        isinstance(c.get("total_bytes"), dict) and
        any(isinstance(v, (int, float)) for v in c["total_bytes"].values())
        for c in t["commits"])
    return [str(f) for f in t["files"] if f != TOTAL] + ([TOTAL] if has_total else [])


def metrics_of(t, f):
    return ["total_bytes"] if f == TOTAL else [m for m in t["metrics"] if m != "total_bytes"]


def metric_label(t, m):
    return str(t["metrics"].get(m) or ("whole build, total -E bytes" if m == "total_bytes"
                                       else m))


def value(c, cc, f, m):
    """(value or None, status) of commit c for one graph."""
    if f == TOTAL:
        v = (c.get("total_bytes") or {}).get(cc)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        return (v, "ok") if ok else (None, "not measured")
    e = ((c.get("values") or {}).get(cc) or {}).get(f)
    if not isinstance(e, dict):
        return None, "not measured"
    v = e.get(m)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None, str(e.get("status") or "not measured")
    return v, str(e.get("status") or "ok")


SHOWN_ONLY = ("host",)     # a host change is shown, not a boundary (bench/history.py)


def setup_changes(t):
    """{commit: {"diff": [(key, old, new)], "what": text, "boundary": bool}}:
    where a commit's setup differs from the one before it, and track.json's
    own list (its `what` and `boundary` win). A boundary (a compiler
    version, the config, the counter) breaks the line, and no change across
    it is marked; a host change is only shown."""
    out, prev = {}, None
    for c in t["commits"]:
        s = c.get("setup") if isinstance(c.get("setup"), dict) else None
        if prev is not None and s is not None:
            diff = [(k, prev.get(k), s.get(k)) for k in sorted(set(prev) | set(s))
                    if prev.get(k) != s.get(k)]
            if diff:
                out[c["commit"]] = {"diff": diff, "what": "; ".join(
                    f"{k}: {a} -> {b}" for k, a, b in diff),
                    "boundary": any(k not in SHOWN_ONLY for k, _, _ in diff)}
        prev = s if s is not None else prev
    for sc in t.get("setup_changes") or []:
        if isinstance(sc, dict) and isinstance(sc.get("commit"), str):
            e = out.setdefault(sc["commit"], {"diff": [], "what": "", "boundary": True})
            e["what"] = str(sc.get("what") or e["what"] or "setup changed")
            if isinstance(sc.get("boundary"), bool):
                e["boundary"] = sc["boundary"]
    return out


def applies(change, cc, compilers):
    """A setup change matters to cc's graphs unless all it changed is the
    version of another compiler."""
    keys = {k for k, _, _ in change["diff"]}
    return not keys or not keys <= set(compilers) - {cc}


def exact(v):
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e18:
        v = int(v)
    return f"{v:,}" if isinstance(v, int) else f"{v:,.6g}"


def change_text(v, pv, against="parent"):
    if v is None or pv is None:
        return ""
    d = v - pv
    r = f", x{v / pv:.4g}" if pv and f"{v / pv:.4g}" != "1" else ""
    return f"{'+' if d >= 0 else ''}{exact(d)}{r} vs {against}"


def z_text(z):
    """z, the change over the noise; None is a change where there was no
    noise at all (sigma 0)."""
    return f"{z:,.1f}" if isinstance(z, (int, float)) else "inf (no noise)"


def si(v, unit=""):
    for s, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= div:
            return f"{v / div:.4g}{s}{unit}"
    return f"{v:.4g}{unit}"


def tick_labels(values, unit=""):
    """The axis labels of tick values: one SI prefix (the largest value's)
    and as many decimals as it takes for every label to differ (3.5130 MB,
    3.5133 MB, ... where four significant digits would print 3.513 MB
    four times) and to be its value (0.25 kB, not 0.2 kB)."""
    top = max((abs(v) for v in values), default=0)
    s, div = next(((s, d) for s, d in (("G", 1e9), ("M", 1e6), ("k", 1e3)) if top >= d),
                  ("", 1))
    for decimals in range(0, 10):
        labels = [f"{v / div:.{decimals}f}{s}{unit}" for v in values]
        exact = all(abs(round(v / div, decimals) * div - v) <= 1e-9 * max(top, 1)
                    for v in values)
        if len(set(labels)) == len(labels) and exact:
            return labels
    return labels


def nice_step(span, n=4):
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if raw <= m * mag * 1.0000001)


def y_scale(vals):
    """(value -> y, [(tick value, y)]): linear with round ticks, or log
    when the values span 20x or more."""
    lo, hi = min(vals), max(vals)
    y0, y1 = H - BOTTOM, TOP
    if lo > 0 and hi / lo >= 20:
        a, b = math.log10(lo), math.log10(hi)
        pad = (b - a) * 0.05
        a, b = a - pad, b + pad
        f = lambda v: y0 - (math.log10(v) - a) / (b - a) * (y0 - y1) if v > 0 else y0  # noqa: E731
        ticks = [m * 10 ** k for k in range(math.floor(a), math.ceil(b) + 1) for m in (1, 2, 5)
                 if a <= math.log10(m * 10 ** k) <= b]
        return f, [(v, f(v)) for v in ticks]
    if hi == lo:
        pad = abs(hi) * 0.05 or 1
        lo, hi = lo - pad, hi + pad
    step = nice_step(hi - lo)
    a, b = math.floor(lo / step) * step, math.ceil(hi / step) * step
    f = lambda v: y0 - (v - a) / (b - a) * (y0 - y1)  # noqa: E731
    n = round((b - a) / step)
    return f, [(a + i * step, f(a + i * step)) for i in range(n + 1)]


STYLE = ("text{font:11px sans-serif;fill:#333}.h{font-size:13px}.g{stroke:#e6e6e6}"
         ".ax{stroke:#888}.v{fill:none;stroke:#1f77b4;stroke-width:1.2}circle{fill:#1f77b4}"
         "circle.i{fill:#d62728}circle.f{fill:#aaa}.s{stroke:#e08000;stroke-dasharray:4 3}"
         "text.s{fill:#a05a00;font-size:10px;stroke:none}"
         "a:hover circle{stroke:#000;stroke-width:2}")


def svg(t, cc, f, m, hrefs, changes, marks):
    """The SVG text of one graph. hrefs: {commit: link from the graph's
    directory}; changes: {commit: setup change} (this graph's);
    marks: {commit: interesting entry} (never at a boundary)."""
    cs = t["commits"]
    n = len(cs)
    pts = [value(c, cc, f, m) for c in cs]
    vals = [v for v, _ in pts if v is not None]
    unit = "B" if "bytes" in m or "bytes" in metric_label(t, m) else ""
    span = (W - LEFT - RIGHT) / max(n - 1, 1)
    x = (lambda i: LEFT + i * span) if n > 1 else (lambda i: (LEFT + W - RIGHT) / 2)
    title = f"{f}: {metric_label(t, m)} ({cc}), {n:,} commits"
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="100%" height="100%" '
           f'viewBox="0 0 {W} {H}"><style>{STYLE}</style>',
           f"<title>{esc(title)}</title>",
           f'<rect width="{W}" height="{H}" fill="#fff"/>',
           f'<text class="h" x="{LEFT}" y="15">{esc(title)}</text>']
    if not vals:
        out.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle">nothing measured</text>')
    yf, ticks = y_scale(vals) if vals else (lambda v: H - BOTTOM, [])
    for (v, y), label in zip(ticks, tick_labels([v for v, _ in ticks], unit)):
        out.append(f'<line class="g" x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text x="{LEFT - 5}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    out.append(f'<line class="ax" x1="{LEFT}" x2="{W - RIGHT}" y1="{H - BOTTOM}" '
               f'y2="{H - BOTTOM}"/><line class="ax" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" '
               f'y2="{H - BOTTOM}"/>')
    k = min(8, n)
    for i in sorted({round(j * (n - 1) / max(k - 1, 1)) for j in range(k)}):
        c = cs[i]
        anchor = "start" if i == 0 and n > 1 else "end" if i == n - 1 and n > 1 else "middle"
        out.append(f'<text x="{x(i):.1f}" y="{H - BOTTOM + 13}" text-anchor="{anchor}">'
                   f'{esc(str(c.get("date") or "")[:10])}</text><text x="{x(i):.1f}" '
                   f'y="{H - BOTTOM + 26}" text-anchor="{anchor}">{esc(c["commit"][:8])}</text>')
    for j, (i, c) in enumerate((i, c) for i, c in enumerate(cs) if c["commit"] in changes):
        what = changes[c["commit"]]["what"]
        label = what if len(what) <= 44 else what[:41] + "..."
        ty = TOP - 16 + 9 * (j % 2)
        note = "not a regression" if changes[c["commit"]]["boundary"] else "shown only"
        out.append(f'<g><title>setup changed at {esc(c["commit"][:12])}: {esc(what)} '
                   f'({note})</title><line class="s" x1="{x(i):.1f}" '
                   f'x2="{x(i):.1f}" y1="{TOP - 6}" y2="{H - BOTTOM}"/><text class="s" '
                   f'x="{x(i) + 2:.1f}" y="{ty}">{esc(label)}</text></g>')
    d, pen = [], False
    for i, (v, _) in enumerate(pts):
        if v is None or (changes.get(cs[i]["commit"]) or {}).get("boundary"):
            pen = False
        if v is not None:
            d.append(f"{'L' if pen else 'M'}{x(i):.1f} {yf(v):.1f}")
            pen = True
    if d:
        out.append(f'<path class="v" d="{"".join(d)}"/>')
    byid = {c["commit"]: i for i, c in enumerate(cs)}
    late, prev = [], None           # prev: the last point with a value
    for i, (c, (v, status)) in enumerate(zip(cs, pts)):
        pi = byid.get(c.get("parent"))
        if pi is not None:
            pv, against = pts[pi][0], "parent"
        else:               # every=N: the parent was not measured
            pv = pts[prev][0] if prev is not None else None
            against = f"{cs[prev]['commit'][:12]} (the point before)" if prev is not None else ""
        prev = i if v is not None else prev
        lines = [f"{c['commit'][:12]} {str(c.get('date') or '')[:10]} "
                 f"{' '.join(str(c.get('subject') or '').split())[:64]}",
                 f"{exact(v)} {change_text(v, pv, against)}".rstrip() if v is not None
                 else f"no value: {status}"]
        if c["commit"] in changes:
            lines.append(f"setup changed: {changes[c['commit']]['what']}")
        mark = marks.get(c["commit"])
        if mark:
            lines.append(f"interesting: z={z_text(mark.get('z'))}")
        cls, r, y = ("i", 4, yf(v)) if mark and v is not None else \
            ("", 2, yf(v)) if v is not None else ("f", 2, H - BOTTOM - 3)
        dot = (f'<a href="{esc(hrefs[c["commit"]])}" target="_top"><circle'
               + (f' class="{cls}"' if cls else "") + f' cx="{x(i):.1f}" cy="{y:.1f}" r="{r}">'
               f'<title>{esc(chr(10).join(lines))}</title></circle></a>')
        (late if cls == "i" else out).append(dot)
    out += late + ["</svg>"]
    return "\n".join(out) + "\n"
