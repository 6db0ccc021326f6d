"""Which macro: results/macros.csv, results/macros.md, the flame graphs of
each focus file's hottest line, and the macro changes of a compare pair,
all from the `macros` entries of the records (bench/macros.py)."""
from bench.measure.macros import changes
from bench.results import write_report as atomic_write

from . import flame

CSV_COLUMNS = ["point", "commit", "compiler", "file", "macro", "own_bytes",
               "inclusive_bytes", "calls", "defined_at"]
CLASSES = ["<source>", "<stringified>", "<pasted>", "<command-line>", "<markers>",
           "<unread>"]


def _entry(rec, f):
    e = (rec.get("files") or {}).get(f) or {}
    m = e.get("macros")
    return m if isinstance(m, dict) and m.get("status") in ("ok", "mismatch") else None


def csv_rows(index, records):
    """Per (point, compiler, file): gcc's rows (classes, macros, the rest
    of the macros as one row) add up to expanded_bytes; clang's give
    inclusive bytes and calls."""
    rows = []
    by = {(r["commit"], r["compiler"]): r for r in records}
    for p in index["points"]:
        for cc in ("gcc", "clang"):
            rec = by.get((p["commit"], cc))
            if not rec:
                continue
            for f in index["files"]:
                m = _entry(rec, f)
                if not m or m["status"] != "ok":    # rows that add up, only
                    continue
                base = {"point": p["name"], "commit": p["commit"], "compiler": cc,
                        "file": f}
                if cc == "gcc":
                    for c in CLASSES:
                        rows.append(dict(base, macro=c, own_bytes=m["classes"].get(c, 0)))
                    for x in m["macros"]:
                        rows.append(dict(base, macro=x["name"], own_bytes=x["own_bytes"],
                                         defined_at=x.get("at")))
                    rows.append(dict(base, macro="<other macros>",
                                     own_bytes=m["other_macros_bytes"]))
                else:
                    for x in m["macros"]:
                        rows.append(dict(base, macro=x["name"],
                                         inclusive_bytes=x["inclusive_bytes"],
                                         calls=x["calls"], defined_at=x.get("at")))
    return rows


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def _n(v):
    return f"{v:,}" if isinstance(v, int) else ""


def series_markdown(index, records, top=10):
    """results/macros.md: per focus file and point, the top macros by own
    bytes (gcc) and by inclusive bytes on the hottest line (clang)."""
    by = {(r["commit"], r["compiler"]): r for r in records}
    out = ["# Which macro", "",
           "Own bytes (gcc `-fdebug-cpp`): the bytes of tokens spelled in the "
           "macro's `#define`; the classes and all macros add up to the file's "
           "`-E` bytes. Inclusive bytes (clang): everything produced inside the "
           "macro's expansions, nested macros included, on the file's hottest "
           "line. Every row of every file: `macros.csv`.", ""]
    for f in list(index.get("focus") or index["files"]):
        out += [f"## {f}", ""]
        for p in index["points"]:
            g = _entry(by.get((p["commit"], "gcc"), {}), f)
            c = _entry(by.get((p["commit"], "clang"), {}), f)
            if not g and not c:
                continue
            out.append(f"**{p['name']}**" + (f", hottest line `{g['hot_line']['at']}`"
                                             if g and g.get("hot_line") else ""))
            out.append("")
            rows = []
            gm = (g or {}).get("macros", [])[:top]
            cm = ((c or {}).get("hot_line") or {}).get("macros", [])[:top]
            for i in range(max(len(gm), len(cm))):
                a = gm[i] if i < len(gm) else {}
                b = cm[i] if i < len(cm) else {}
                rows.append([f"`{a['name']}`" if a else "", _n(a.get("own_bytes")),
                             f"`{b['name']}`" if b else "", _n(b.get("inclusive_bytes")),
                             _n(b.get("calls"))])
            out.append(md_table(
                ["macro (gcc, file)", "own bytes", "macro (clang, hottest line)",
                 "inclusive bytes", "calls"], rows))
            op = ((c or {}).get("hot_line") or {}).get("opaque")
            if op:
                out.append("Counterfactual (clang, hottest line): each macro made "
                           "opaque, i.e. its `#define` replaced by a call of a "
                           "function of the same arity; what remains of the line, "
                           "and how many bytes that removed. The call keeps its "
                           "arguments, expanded, so removed bytes fall short of "
                           "the inclusive ones by the arguments' expansion and the "
                           "call itself.")
                out.append("")
                out.append(md_table(
                    ["macro", "inclusive bytes", "line bytes when opaque",
                     "bytes removed"],
                    [[f"`{r['name']}`", _n(r["inclusive_bytes"]),
                      _n(r.get("line_bytes_opaque")),
                      _n(r.get("removed_bytes")) if r["applied"]
                      else f"not applied: {r.get('why_not')}"] for r in op]))
            if g:
                out.append("classes (gcc, file): " + ", ".join(
                    f"{k} {v:,}" for k, v in g["classes"].items())
                    + f"; macros {g['macro_bytes']:,}; total {g['bytes']:,}"
                    + ("" if g["status"] == "ok" else f" — {g['status']}: {g.get('error')}"))
                out.append("")
    return "\n".join(out) + "\n" + ("\n" + line_markdown(index, records)
                                     if index.get("line") else "")


def line_markdown(index, records, top=3):
    """Every commit of the series line (gcc): the focus file that changed
    most from the commit before, by how much, and the macros whose own
    bytes changed most there."""
    line = index.get("line") or []
    by = {r["commit"]: r for r in records if r["compiler"] == "gcc"}
    rows = []
    for prev, cur in zip(line, line[1:]):
        ra, rb = by.get(prev["commit"]), by.get(cur["commit"])
        if not ra or not rb:
            continue
        best = None
        for f in index["files"]:
            a = (ra["files"].get(f) or {}).get("expanded_bytes")
            b = (rb["files"].get(f) or {}).get("expanded_bytes")
            if a and b and (best is None or abs(b / a - 1) > abs(best[1] - 1)):
                best = (f, b / a, a, b)
        if not best:
            continue
        f, ratio, a, b = best
        ma, mb = _entry(ra, f), _entry(rb, f)
        grew = ""
        if ma and mb and a != b:
            grew = ", ".join(
                f"`{n}` {((y or 0) - (x or 0)):+,}" for n, x, y in
                changes(ma["macros"], mb["macros"], "own_bytes", top))
        rows.append([f"`{cur['name']}`", cur["subject"][:70].replace("|", "\\|"),
                     f"`{f}`", f"x{ratio:.2f}" if a != b else "unchanged",
                     f"{a:,} -> {b:,}", grew])
    if not rows:
        return ""
    return ("## Every commit of the series (gcc)\n\nEach commit against the one "
            "before it: the focus file whose `-E` bytes changed most, and the "
            "macros whose own bytes changed most in that file.\n\n" + md_table(
                ["commit", "subject", "file", "change", "bytes", "macros (own bytes)"],
                rows) + "\n")


def flame_graphs(index, records, outdir):
    """flame-<file>-<n>-<point>.svg (n: the point's place in the series) for each focus file's hottest line (clang
    stacks). Returns the paths written, in (file, point) order."""
    by = {(r["commit"], r["compiler"]): r for r in records}
    written = []
    for f in list(index.get("focus") or index["files"]):
        for i, p in enumerate(index["points"]):
            c = _entry(by.get((p["commit"], "clang"), {}), f)
            line = (c or {}).get("hot_line") or {}
            if not line.get("stacks"):
                continue
            path = outdir / f"flame-{f.replace('/', '_')}-{i}-{p['name']}.svg"
            atomic_write(path, flame.flame_svg(
                line["stacks"], f"{line['at']} at {p['name']} (clang): "
                f"{line['bytes_est']:,} bytes by macro expansion stack"))
            written.append(path)
    return written


def pair_markdown(pair, records, top=8):
    """The compare report's section: per compiler and file whose bytes
    changed, the macros whose bytes changed most."""
    by = {(r["commit"], r["compiler"]): r for r in records}
    out = []
    for cc in pair["compilers"]:
        ra, rb = by.get((pair["a"]["commit"], cc)), by.get((pair["b"]["commit"], cc))
        if not ra or not rb:
            continue
        for f in pair["files"]:
            ea, eb = _entry(ra, f), _entry(rb, f)
            if not ea or not eb:
                continue
            if cc == "gcc":
                if ea["bytes"] == eb["bytes"]:
                    continue
                what, key = "own bytes, whole file", "own_bytes"
                la, lb = ea["macros"], eb["macros"]
            else:
                if ea["bytes_est"] == eb["bytes_est"]:
                    continue
                what, key = "inclusive bytes, whole file", "inclusive_bytes"
                la, lb = ea["macros"], eb["macros"]
            rows = []
            for n, a, b in changes(la, lb, key, top):
                d = (b or 0) - (a or 0)
                rows.append([f"`{n}`", _n(a) if a is not None else "(not in top)",
                             _n(b) if b is not None else "(not in top)",
                             f"{d:+,}" if a is not None and b is not None else ""])
            out += [f"### {f}, {cc}: macros whose {what} changed most", "",
                    md_table(["macro", "A", "B", "B - A"], rows)]
    if not out:
        return ""
    return "\n## Which macro changed\n\n" + "\n".join(out) + "\n"
