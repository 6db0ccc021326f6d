"""The pages of a `make track`, beside its track.json and CSVs:
results/track/<name>/index.html (the graphs, lazily embedded as documents
so their links work, each with its interesting points listed under it),
graphs/<metric>-<cc>-<file>.svg (plots/track.py) and c/<commit>.html, one
small page per commit: that commit against its parent, its values, and
the `make compare` command that draws the full report, or the link to
that report where it exists. Also the list, results/pages/tracks.html."""
import re
from pathlib import Path

from bench.results import read_json

from . import headergraph, track
from .htmlkit import esc, file_links, href, link, page, write
from .reports import compare_page
from .sections import section_path

HEX = re.compile(r"[0-9a-f]{7,64}")
TINY_STYLE = ("body{font-family:sans-serif;margin:1.5em;max-width:1000px}table{border-collapse:"
              "collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:"
              "right}td:first-child,th:first-child,.l{text-align:left}pre{background:#f6f6f6;"
              "padding:.5em;white-space:pre-wrap}.bad{color:#b00}")


def page_names(t):
    """{commit: file name stem of its page}: 12 hex digits, all of them
    where two commits share the first 12 (or the id is not plain hex)."""
    ids = [c["commit"] for c in t["commits"]]
    short = {}
    for c in ids:
        short.setdefault(c[:12], []).append(c)
    return {c: c[:12] if len(short[c[:12]]) == 1 and HEX.fullmatch(c) else
            re.sub(r"[^0-9A-Za-z]", "_", c)[:96] for c in ids}


def compare_pairs(results):
    """{(A commit, B commit): the compare page} of every drawn compare."""
    out = {}
    for j in sorted((Path(results) / "compare").glob("*/pair.json")):
        p = compare_page(j.parent)
        pair = read_json(j) if p else None
        if isinstance(pair, dict):
            a, b = (pair.get("a") or {}).get("commit"), (pair.get("b") or {}).get("commit")
            if a and b:
                out.setdefault((a, b), p)
    return out


def slug(cc, f, m):
    """<metric>-<compiler>-<file with / as _>: a graph's file name and anchor."""
    return "-".join(re.sub(r"[^A-Za-z0-9.+-]+", "_", x).strip("_") or "_" for x in (m, cc, f))


def zed(z, prefix=""):
    return prefix + track.z_text(z)


def make_compare(t, c, inter):
    """The make compare line for commit c against its parent."""
    for e in inter:
        if e.get("make_compare"):
            return str(e["make_compare"])
    tpl = t.get("make_compare_template")
    if not c.get("parent") or not isinstance(tpl, str):
        return None
    return tpl.replace("{parent}", c["parent"]).replace("{commit}", c["commit"])


def commit_page(d, t, c, name, target, inter, changes, back, byid, graphs):
    """c/<name>.html: that commit against its parent. byid: {commit: its
    entry}; graphs: [(compiler, file, metric)]."""
    p = d / "c" / f"{name}.html"
    parent = c.get("parent")
    pc = byid.get(parent)
    out = [f"<p>{esc(str(c.get('subject') or ''))}<br>commit <code>{esc(c['commit'])}</code>, "
           f"{esc(str(c.get('date') or ''))}<br>parent <code>{esc(str(parent))}</code>"
           + ("" if pc else " (not in the track)") + "</p>"]
    spans = max([e.get("spans") for e in inter if isinstance(e.get("spans"), int)]
                or [1])
    if target and spans > 1:      # EVERY=N: against the point before, N commits back
        out.append(f"<p>The report of this commit against the point before it, "
                   f"<code>{esc(str(inter[0].get('from'))[:12])}</code>: it spans {spans} "
                   f"commits: {link(p, target, target.parent.name)}.</p>")
    elif target:
        out.append(f"<p>The report of this commit against its parent: "
                   f"{link(p, target, target.parent.name)}.</p>")
    cmd = make_compare(t, c, inter)
    if cmd:
        out.append(("<p>Draw it again, or for other files:" if target else
                    "<p>No compare report of this commit against its parent yet. This "
                    "command makes one (under results/compare/), and this point then "
                    "links to it:")
                   + f"</p><pre>{esc(cmd)}</pre>")
    elif not parent:
        out.append("<p>No parent: the first commit of its history.</p>")
    ch = changes.get(c["commit"])
    if ch:
        out.append(f'<p class="bad">The setup changed at this commit: {esc(ch["what"])}. '
                   + ("Differences against the parent are not the commit's doing.</p>"
                      if ch["boundary"] else "Shown only: bytes and counts do not depend "
                      "on it.</p>"))
    rows = []
    for cc, f, m in graphs:
        v, st = track.value(c, cc, f, m)
        pv = track.value(pc, cc, f, m)[0] if pc else None
        e = next((e for e in inter if (e.get("cc"), e.get("file"), e.get("metric"))
                  == (cc, f, m)), None)
        rows.append(f"<tr><td>{esc(cc)}</td><td class=l>{esc(f)}</td><td class=l>"
                    f"{esc(track.metric_label(t, m))}</td><td>"
                    f"{track.exact(pv) if pv is not None else '-'}</td><td>"
                    f"{track.exact(v) if v is not None else esc(st)}</td><td>"
                    f"{esc(track.change_text(v, pv).replace(' vs parent', ''))}</td>"
                    f"<td>{zed(e.get('z'), 'z=') if e else ''}</td></tr>")
    out.append("<table><tr><th>compiler</th><th>file</th><th>metric</th><th>parent</th>"
               "<th>this commit</th><th>change</th><th>interesting</th></tr>"
               + "".join(rows) + "</table>")
    setup = c.get("setup") if isinstance(c.get("setup"), dict) else {}
    if setup:
        out.append("<p>Setup: " + "; ".join(f"{esc(str(k))} <code>{esc(str(v))}</code>"
                                           for k, v in setup.items()) + "</p>")
    out.append(f"<p>{link(p, back, 'back to the track')}</p>")
    text = ("<!doctype html><html lang=en><head><meta charset=utf-8><title>"
            f"{esc(c['commit'][:12])} against its parent</title><style>{TINY_STYLE}</style>"
            f"</head><body><h1><code>{esc(c['commit'][:12])}</code> against its parent</h1>\n"
            + "\n".join(out) + "\n</body></html>\n")
    write(p, text)
    return p


def write_track(results, d):
    """Every graph and page of the track in d; its index.html (None when
    track.json is missing or of another shape)."""
    results, d = Path(results), Path(d)
    t = track.load(d)
    if t is None:
        return None
    index = d / "index.html"
    names = page_names(t)
    pairs = compare_pairs(results)
    changes = track.setup_changes(t)
    inter = {}
    for e in t.get("interesting") or []:
        inter.setdefault(e.get("commit"), []).append(e)
    targets = {}
    for c in t["commits"]:
        pre = [compare_page(results / e["compare"]) for e in inter.get(c["commit"], [])
               if isinstance(e.get("compare"), str) and e["compare"] and
               (results / e["compare"]).resolve().is_relative_to(results.resolve())]
        targets[c["commit"]] = next((p for p in pre if p), None) or \
            pairs.get((c.get("parent"), c["commit"]))
    byid = {c["commit"]: c for c in t["commits"]}
    graphs = [(cc, f, m) for cc in t["compilers"] for f in track.files_of(t)
              for m in track.metrics_of(t, f)]
    pages = {c["commit"]: commit_page(d, t, c, names[c["commit"]], targets[c["commit"]],
                                      inter.get(c["commit"], []), changes, index, byid, graphs)
             for c in t["commits"]}
    gdir = d / "graphs"
    hrefs = {c: href(gdir / "x.svg", targets[c] or pages[c]) for c in pages}
    parts, written, toc = [], set(), []
    for cc, f, m in graphs:
        ch = {k: v for k, v in changes.items() if track.applies(v, cc, t["compilers"])}
        s = slug(cc, f, m)
        g = write(gdir / f"{s}.svg", track.svg(t, cc, f, m, hrefs, ch, {
            e["commit"]: e for e in t.get("interesting") or []
            if (e.get("cc"), e.get("file"), e.get("metric")) == (cc, f, m)
            and not (ch.get(e.get("commit")) or {}).get("boundary")}))
        written.add(g)
        toc.append(f'<a href="#{s}">{esc(f)}: {esc(m)} ({esc(cc)})</a>')
        parts.append(graph_html(index, t, cc, f, m, s, g, ch, targets, pages))
    for cc in t["compilers"]:        # SCAN=1: a few headers' own bytes
        ser = headergraph.series(t, cc)
        if not ser:
            continue
        s = headergraph.name(cc)
        g = write(gdir / f"{s}.svg", headergraph.svg(t, cc, ser, {
            k: v for k, v in changes.items() if track.applies(v, cc, t["compilers"])}))
        written.add(g)
        toc.append(f'<a href="#{s}">headers: own bytes ({esc(cc)})</a>')
        parts.append(headers_html(index, t, cc, s, g, len(ser)))
    for old in list(gdir.glob("*.svg")) + list((d / "c").glob("*.html")):
        if old not in written and old not in pages.values():
            old.unlink()
    head = track_head(index, d, t, changes)
    write(index, page(results, index, f"Track: {t.get('name') or d.name}",
                      head + "<p>" + " · ".join(toc) + "</p>" + "\n".join(parts),
                      [("tracks", section_path(results, "tracks"))]))
    return index


def track_head(index, d, t, changes):
    n = len(t["commits"])
    out = [f"<p>{n:,} commits of <code>{esc(str(t.get('tree') or ''))}</code>, "
           f"{esc(str(t.get('range') or ''))} (every {esc(str(t.get('every') or 1))}), "
           f"{esc(str(t.get('config') or ''))}; {esc(', '.join(t['compilers']))}. "
           f"Made by <code>{esc(str(t.get('make_command') or 'make track'))}</code>"
           f"{', ' + esc(str(t['generated'])) if t.get('generated') else ''}.</p>",
           "<p>A point is a commit; hover for its value and the change against its "
           "parent, click for that commit against its parent (the compare report where "
           "one was made, else the <code>make compare</code> command that makes it). "
           "Red: interesting (the change is many times the noise; z is the change over "
           "the noise). Dashed: the setup changed: a compiler version, the config or the "
           "counter (the line breaks there and no change across it is marked), or the host "
           "(shown only).</p>",
           file_links(index, [d / "track.json", d / "interesting.md"] + sorted(d.glob("*.csv")))]
    if changes:
        out.append("<p>Setup changes: " + "; ".join(
            f"<code>{esc(k[:12])}</code> {esc(v['what'])}" for k, v in changes.items()) + "</p>")
    return "\n".join(out)


def graph_html(index, t, cc, f, m, s, g, ch, targets, pages):
    """One graph, embedded as a document (an <img> would not follow its
    links), loaded when scrolled near; and its interesting points."""
    out = [f'<h2 id="{s}">{esc(f)}: {esc(track.metric_label(t, m))} ({esc(cc)})</h2>',
           f'<iframe class="graph" loading="lazy" src="{href(index, g)}" '
           f'title="{esc(f)} {esc(m)} {esc(cc)}"></iframe>',
           f'<p class="li">{link(index, g, "open the graph")}</p>']
    rows = []
    for e in t.get("interesting") or []:
        if (e.get("cc"), e.get("file"), e.get("metric")) != (cc, f, m):
            continue
        c = str(e.get("commit"))
        what = "setup change, not a regression" if (ch.get(c) or {}).get("boundary") else ""
        if targets.get(c):
            what += (", " if what else "") + link(index, targets[c], "compare report")
        num = lambda v, f=track.exact: f(v) if isinstance(v, (int, float)) else "-"  # noqa: E731
        rows.append(f"<tr><td>{link(index, pages[c], c[:12]) if c in pages else esc(c[:12])}"
                    f"</td><td class=l>{esc(' '.join(str(e.get('subject') or '').split())[:80])}"
                    f"</td><td>{num(e.get('before'))}</td><td>{num(e.get('after'))}</td>"
                    f"<td>{num(e.get('ratio'), lambda r: f'x{r:.4g}')}</td>"
                    f"<td>{zed(e.get('z'))}</td><td class=l>{what}</td></tr>")
    sigma = (((t.get("noise") or {}).get(cc) or {}).get(f) or {}).get(m)
    if isinstance(sigma, (int, float)):
        out.append(f'<p class="li">noise (sigma, commit to commit): {track.exact(sigma)}</p>')
    if rows:
        out.append(f"<p>{len(rows)} interesting:</p><table><tr><th>commit</th><th>subject</th>"
                   "<th>before</th><th>after</th><th>ratio</th><th>z</th><th></th></tr>"
                   + "".join(rows) + "</table>")
    return "\n".join(out)


def headers_html(index, t, cc, s, g, n):
    """The headers graph, embedded like the others (its own height)."""
    rule = ((t.get("headers") or {}).get(cc) or {}).get("rule")
    csv = index.parent / f"headers-{cc}.csv"
    return "\n".join([
        f'<h2 id="{s}">Headers: own bytes over the build ({esc(cc)})</h2>',
        f"<p>The own bytes over the whole build of {n} headers at every commit "
        f"(<code>SCAN=1</code>): {esc(str(rule or ''))}. The legend gives each one's "
        "bytes at the first and the last commit"
        + (f", {link(index, csv, csv.name)} every value" if csv.exists() else "") + ".</p>",
        f'<iframe class="graph" loading="lazy" src="{href(index, g)}" style="aspect-ratio:'
        f'{track.W}/{headergraph.height(n)}" title="headers {esc(cc)}"></iframe>',
        f'<p class="li">{link(index, g, "open the graph")}</p>'])


def undrawn_compares(results):
    """The compare dirs (inside results/) the tracks name for interesting
    points (`interesting[].compare`) that have a pair.json but no report."""
    out, root = [], Path(results).resolve()
    for j in sorted(Path(results).glob("track/*/track.json")):
        t = read_json(j)
        for e in (t.get("interesting") or []) if isinstance(t, dict) else []:
            c = e.get("compare") if isinstance(e, dict) else None
            d = (root / c).resolve() if isinstance(c, str) and c else None
            if d and d.is_relative_to(root) and (d / "pair.json").exists() and \
                    not (d / "report.md").exists() and d not in out:
                out.append(d)
    return out


def write_all(results):
    """Every results/track/*/ drawn; their index pages."""
    return [p for d in sorted(Path(results).glob("track/*")) if d.is_dir()
            and (p := write_track(results, d))]


def tracks_section(results, draw="all"):
    """pages/tracks.html: every track, linked to its page (or to its
    track.json until report.py --track has drawn it); draw None: only
    summarised."""
    results = Path(results)
    lst = section_path(results, "tracks")
    rows, items = [], []
    for j in sorted(results.glob("track/*/track.json")):
        d = j.parent
        t = track.load(d)
        if t is None:
            continue
        target = d / "index.html" if (d / "index.html").exists() else j
        n, k = len(t["commits"]), len(t.get("interesting") or [])
        note = (f"{esc(str(t.get('range') or ''))}: {n:,} commits, "
                f"{len(t['files'])} files, {k} interesting")
        rows.append(f"<tr><td class=l>{link(lst, target, d.name)}</td><td class=l>{note}</td>"
                    f"<td class=l>{esc(', '.join(t['compilers']))}</td><td class=l>"
                    f"{esc(str(t.get('generated') or ''))}</td></tr>")
        items.append((d.name, target, f"{t.get('range') or ''}: {n:,} commits, {k} interesting"))
    body = ("<p>Files and metrics over a range of commits (<code>make track</code>): "
            "a graph per file and metric, a point per commit.</p>"
            + ("<table><tr><th>track</th><th>what</th><th>compilers</th><th>generated</th>"
               "</tr>" + "".join(rows) + "</table>" if rows else "<p>No tracks yet.</p>"))
    if draw:
        write(lst, page(results, lst, "Tracks", body))
    return {"key": "tracks", "title": "Tracks", "path": lst, "items": items,
            "summary": f"{len(items)} track(s)" if items else "none yet"}
