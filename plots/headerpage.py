"""headers.html of a scan report (results/scan/<A>..<B>/, beside
headers.md; #31): the build's bytes by header as sorted bar charts (the
top 30 headers by own bytes at B, and by change of own bytes from A to B;
plots/headerbars.py), each bar linked to a section of the same page with
the header's figures, the files that include it (its own bytes in each,
the top 20 and the count of the rest: headers-files.json, which make scan
writes from the cache's per-file records, measure/headerfiles.py) and the
include entries that bring it in (the top 10 by bytes_sole, from the
aggregates). Without per-file records (a scan cached before they were
kept) the page says so and draws the rest. Every name is escaped and cut
to 160 bytes of HTML, so the page stays under CAP_BYTES whatever the
names (README, "make scan")."""
from bench.measure import headerfiles
from bench.results import read_json

from . import headerbars as hb
from .htmlkit import esc, file_links, page, write
from .sections import section_path

CAP_BYTES = 600_000     # the page at most (tests/test_headerpage.py: the worst names)
NO_RECORDS = ("The per-file header records of {what} are not in the cache (a scan "
              "cached before kexpand kept them), so the files that include each header "
              "are not listed; the charts and include entries come from the build's "
              "aggregate.")


def _num(v):
    return "-" if v is None else f"{v:,}"


def _signed(v):
    return "-" if v is None else f"{v:+,}"


def edges_by_header(agg, wanted):
    """{header: [(includer:line, stats)]} of the wanted headers, from an
    aggregate's include entries ("includer:line -> header"; a header's own
    name may hold " -> ")."""
    out = {}
    for key, st in ((agg or {}).get("edges") or {}).items():
        parts = key.split(" -> ")
        for i in range(1, len(parts)):
            h = " -> ".join(parts[i:])
            if h in wanted:
                out.setdefault(h, []).append((" -> ".join(parts[:i]), st))
                break
    return out


def _files_html(h, got, two, records):
    """The files of one header (got: its headers-files.json entry)."""
    side = "B" if not got or got.get("by") != "a" else "A"
    if not records.get(side.lower()):
        return "<p class=li>Files: not listed (no per-file records of this build).</p>"
    if not got or not got.get("top"):
        return "<p class=li>No file of the build includes it.</p>"
    n = got.get("files", len(got["top"]))
    head = ("<tr><th>file</th><th>own bytes at A</th><th>own bytes at B</th><th>change"
            "</th></tr>" if two else "<tr><th>file</th><th>own bytes</th></tr>")
    rows = []
    for r in got["top"]:
        a, b = r.get("a"), r.get("b")
        cells = [hb.clip(r["file"])] + ([_num(a), _num(b), _signed(
            b - a if isinstance(a, int) and isinstance(b, int) else None)] if two
            else [_num(b if side == "B" else a)])
        rows.append("<tr><td class=l>" + "</td><td>".join(cells) + "</td></tr>")
    rest = (f"<p class=li>and {got['rest']:,} more files with {got['rest_bytes']:,} "
            "bytes of it</p>" if got.get("rest") else "")
    return (f"<p class=li>Files that include it, by its own bytes in each at {side} "
            f"(the top {len(got['top'])} of {n:,}; -: the file is not in that build):</p>"
            f"<table>{head}{''.join(rows)}</table>{rest}")


def _edges_html(h, edges_b, edges_a, two):
    side, main, other = ("B", edges_b.get(h), edges_a) if edges_b.get(h) else \
        ("A", edges_a.get(h), edges_b)
    if not main:
        return "<p class=li>No include entry brings it in.</p>"
    main = sorted(main, key=lambda e: (-e[1]["bytes_sole"], e[0]))
    at_other = {src: st for src, st in other.get(h) or []}
    o = "A" if side == "B" else "B"
    head = ("<tr><th>includer:line</th><th>files</th><th>files sole</th><th>bytes sole"
            + (f"</th><th>bytes sole at {o}" if two else "") + "</th></tr>")
    rows = []
    for src, st in main[:headerfiles.N_EDGES]:
        cells = [hb.clip(src), _num(st["files"]), _num(st["files_sole"]),
                 _num(st["bytes_sole"])]
        if two:
            cells.append(_num((at_other.get(src) or {}).get("bytes_sole")))
        rows.append("<tr><td class=l>" + "</td><td>".join(cells) + "</td></tr>")
    return (f"<p class=li>Include entries that bring it in at {side}, by the bytes of "
            f"the files that get it only through them (bytes sole; the top "
            f"{min(len(main), headerfiles.N_EDGES)} of {len(main):,}):</p>"
            f"<table>{head}{''.join(rows)}</table>")


def section(h, agg_a, agg_b, got, edges, records, two):
    sa, sb = (agg_a or {}).get("headers", {}).get(h), agg_b["headers"].get(h)
    figs = []
    for lab, s in (("at A", sa), ("at B", sb)) if two else (("", sb),):
        if s:
            figs.append(f"{lab + ': ' if lab else ''}own bytes {s['own']:,} in "
                        f"{s['occurrences']:,} files, expanded {s['expanded']:,}, "
                        f"added {s['added']:,}")
        else:
            figs.append(f"not in the build {lab}")
    if two:
        delta = (sb or {}).get("own", 0) - (sa or {}).get("own", 0)
        figs.append(f"change of own bytes {_signed(delta)}")
    return (f'<h3 id="{hb.anchor(h)}">{hb.clip(h)}</h3>'
            f"<p class=li>{esc(hb.group_of(h))} · " + "; ".join(figs)
            + ' · <a href="#charts">back to the charts</a></p>'
            + _files_html(h, got, two, records) + _edges_html(h, *edges, two))


def body(pair, agg_a, agg_b, files):
    """The page's HTML body: charts, then a section per header drawn."""
    two = bool(agg_a)
    a, b = pair["a"]["ref"], pair["b"]["ref"]
    by_own, by_change = headerfiles.selection(agg_a, agg_b)
    wanted = headerfiles.names(agg_a, agg_b)
    weights = {}
    for h in wanted:
        s = agg_b["headers"].get(h) or (agg_a or {}).get("headers", {}).get(h) or {}
        weights[hb.group_of(h)] = weights.get(hb.group_of(h), 0) + s.get("own", 0)
    cols = hb.colours(weights)
    share = agg_b["bytes"] - agg_b["root_own"] - agg_b["unattributed"]
    out = [f"<p>{'Between ' + esc(str(a)) + ' (A) and ' if two else 'At '}{esc(str(b))} "
           f"(B, {esc(str(pair.get('compiler')))}): {len(agg_b['headers']):,} headers at B, "
           f"{share:,} of its {agg_b['bytes']:,} bytes of <code>-E</code> output come "
           "from headers. A bar opens its header's section: its figures, the files that "
           "include it and the include entries that bring it in.</p>", hb.legend(cols)]
    ok = headerfiles.shape_ok(files) and \
        (files.get("a"), files.get("b")) == (pair["a"].get("commit"), pair["b"].get("commit"))
    records = files["records"] if ok else {}
    missing = [s for s in ("a", "b") if (s == "b" or two) and not records.get(s)]
    if missing:
        out.append('<p class="bad">' + NO_RECORDS.format(what=" and ".join(
            f"{s.upper()}'s build" for s in missing)) + "</p>")
    rows = [(h, s["own"], cols[hb.group_of(h)],
             f"{hb.clip(h)}\n{s['own']:,} own bytes in {s['occurrences']:,} files; "
             f"expanded {s['expanded']:,}, added {s['added']:,}") for h, s in by_own]
    out.append(f'<h2 id="charts">Top {len(rows)} headers by own bytes at {esc(str(b))}</h2>'
               + hb.chart(rows, f"own bytes by header at {b}"))
    if two:
        rows = [(r["name"], r["delta"]["own"], cols[hb.group_of(r["name"])],
                 f"{hb.clip(r['name'])}{' (' + esc(r['status']) + ')' if r['status'] else ''}"
                 f"\nown bytes {(r['a'] or {}).get('own', 0):,} -> "
                 f"{(r['b'] or {}).get('own', 0):,} ({r['delta']['own']:+,})")
                for r in by_change]
        out.append(f'<h2 id="by-change">Top {len(rows)} headers by change of own bytes, '
                   f"{esc(str(a))} -> {esc(str(b))}</h2>"
                   + (hb.chart(rows, f"change of own bytes by header, {a} -> {b}", signed=True)
                      if rows else "<p>No header's own bytes changed.</p>"))
    edges = (edges_by_header(agg_b, set(wanted)), edges_by_header(agg_a, set(wanted)))
    got = files["headers"] if ok else {}
    out.append("<h2>Each header</h2>")
    out += [section(h, agg_a, agg_b, got.get(h) if isinstance(got.get(h), dict) else None,
                    edges, records, two) for h in wanted]
    return "\n".join(out)


def write_page(results, d, pair, agg_a, agg_b):
    """d/headers.html of the scan pair in d (agg_a None: B's build only)."""
    p = d / "headers.html"
    files = read_json(d / "headers-files.json") if (d / "headers-files.json").exists() \
        else None
    html = f"<style>{hb.STYLE}</style>" + body(pair, agg_a, agg_b, files) + file_links(
        p, [d / n for n in ("headers.md", "headers-files.json", "pair.json")])
    title = (f"Bytes by header, {pair['a']['ref']} .. {pair['b']['ref']} "
             f"({pair.get('compiler')})")
    trail = [("scans", section_path(results, "scans")), (d.name, d / "index.html")]
    return write(p, page(results, p, title, html, trail))
