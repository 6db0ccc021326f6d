"""The finding the index opens with: per focus file, the series point
where its -E output is largest, the factor against the point where it is
smallest, and the one source line that makes most of it. From the
records (bench.results), one compiler: gcc where it was measured."""
from .htmlkit import esc
from .tables import ok


def shorten(src, width=48):
    """A statement as a reader recognises it: the arguments of its first
    call folded to '...' when it is long (`x = min3(...);`)."""
    s = " ".join((src or "").split())
    if len(s) <= width:
        return s
    i = s.find("(")
    if i > 0:
        depth = 0
        for j in range(i, len(s)):
            depth += {"(": 1, ")": -1}.get(s[j], 0)
            if depth == 0:
                s = s[:i + 1] + "..." + s[j:]
                break
        else:                     # cut before its end: the call stays open
            s = s[:i + 1] + "...)"
    return s if len(s) <= width + 12 else s[:width + 9] + "..."


def compiler(records):
    ccs = sorted({r["compiler"] for r in records})
    return "gcc" if "gcc" in ccs else (ccs[0] if ccs else None)


def rows(series, records):
    """One row per focus file measured at a point: worst and best point,
    their bytes, the factor, the worst point's hottest line. Sorted by
    factor, largest first."""
    cc = compiler(records)
    by = {(r["commit"], r["compiler"]): r for r in records}
    out = []
    for f in series.get("files") or []:
        pts, control = [], {p["name"] for p in series.get("points") or [] if p.get("control")}
        for p in series.get("points") or []:
            e = (by.get((p["commit"], cc)) or {}).get("files", {}).get(f)
            if ok(e):
                pts.append((p["name"], e))
        if not pts:
            continue
        worst = max(pts, key=lambda pe: pe[1]["expanded_bytes"])
        best = min(pts, key=lambda pe: pe[1]["expanded_bytes"])
        wb, bb = worst[1]["expanded_bytes"], best[1]["expanded_bytes"]
        hot = (worst[1].get("hot_lines") or [{}])[0]
        out.append({"file": f, "compiler": cc, "worst": worst[0], "worst_bytes": wb,
                    "also": [n for n, e in pts if e["expanded_bytes"] == wb and n != worst[0]
                             and n not in control],      # a control is meant to be equal
                    "best": best[0], "best_bytes": bb, "points": len(pts),
                    "factor": wb / bb if bb else None,
                    "hot_at": hot.get("at"), "hot_bytes": hot.get("bytes"),
                    "hot_source": hot.get("source") or ""})
    return sorted(out, key=lambda r: -(r["factor"] or 0))


def line_html(r):
    f = esc(r["file"])
    worst = esc(r["worst"]) + (f" (and {esc(', '.join(r['also']))})" if r["also"] else "")
    if r["points"] == 1:
        head = f"<b>{f}</b>: only {worst} measured: {r['worst_bytes']:,} bytes"
    else:
        head = (f"<b>{f}</b>: {worst} expands to <b>{r['worst_bytes']:,}</b> bytes, "
                f"<b>x{r['factor']:.{1 if r['factor'] >= 10 else 2}f}</b> {esc(r['best'])}"
                f"{chr(39) if r['best'].endswith('s') else chr(39) + 's'} {r['best_bytes']:,}")
    if not r["hot_at"] or not isinstance(r["hot_bytes"], int):
        return head
    at = r["hot_at"]
    where = f"line {at.rsplit(':', 1)[1]}" if at.rsplit(":", 1)[0] == r["file"] else esc(at)
    src = (f' <code title="{esc(" ".join(r["hot_source"].split()))}">'
           f"{esc(shorten(r['hot_source']))}</code>") if r["hot_source"] else ""
    x = r["hot_bytes"] / r["worst_bytes"] if r["worst_bytes"] else None
    share = "" if x is None else f" ({x:.0%})" if x >= 0.095 else f" ({x:.1%})"
    return f"{head}; {where}{src} makes {r['hot_bytes']:,} of them{share}"


def finding_html(series, records):
    """The opening paragraph and list, or a line saying what to run."""
    rs = rows(series, records) if series else []
    if not rs:
        return ("<p>No expansion records yet: <code>make bench</code> measures the "
                "series, <code>make compare</code> any two commits.</p>")
    cc = rs[0]["compiler"]
    ver = next((r.get("compiler_version") for r in records if r["compiler"] == cc), cc)
    n = len(series.get("points") or [])
    return (f"<p>The finding, {esc(ver)}: per focus file, the point of the "
            f"{esc(series.get('case') or '')} series ({n} points) where its <code>-E</code> "
            "output is largest, the factor "
            "against the point where it is smallest, and the source line that makes "
            "most of it at the largest.</p>\n<ul class=finding>"
            + "".join(f"<li>{line_html(r)}</li>" for r in rs) + "</ul>")
