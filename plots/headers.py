"""Bytes by header in the reports: the tables of a scan's headers and
include entries (bench/measure/headers.py's aggregate, in each scan
record's "headers"), for one build and between two. Pure functions from
the aggregates to Markdown."""
import os
import textwrap

WIDTH = 72      # a check report's columns (plots/checkreport.py)


def _stats_table(items, title):
    md = [f"## {title}", "",
          "| # | header | files | own bytes | expanded bytes | added bytes |",
          "|---:|---|---:|---:|---:|---:|"]
    for i, (name, s) in enumerate(items, 1):
        md.append(f"| {i} | `{name}` | {s['occurrences']:,} | {s['own']:,} | "
                  f"{s['expanded']:,} | {s['added']:,} |")
    return md + [""]


def top(agg, by, n):
    return sorted(agg["headers"].items(), key=lambda kv: (-kv[1][by], kv[0]))[:n]


def build_markdown(agg, label, n=30):
    """One build's headers: top n by own bytes and by added bytes."""
    if not agg:
        return []
    share = agg["bytes"] - agg["root_own"] - agg["unattributed"]
    md = [f"Headers at {label}: {len(agg['headers']):,} headers, {share:,} of the "
          f"build's {agg['bytes']:,} bytes ({share / agg['bytes']:.1%}) come from "
          "headers, the rest from the C files themselves." if agg["bytes"] else "", ""]
    md += _stats_table(top(agg, "own", n), f"Top {n} headers by own bytes at {label}")
    md += _stats_table(top(agg, "added", n),
                       f"Top {n} headers by added bytes at {label} (what the build "
                       "would lose without them)")
    return md


def growth_markdown(diff_rows, label, n=30):
    """Headers and include entries whose bytes changed most between two builds
    (headers.diff rows)."""
    md = [f"## Top {n} headers by change of own bytes, {label}", "",
          "| # | header | files A | files B | own bytes A | own bytes B | change | "
          "added change |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for i, r in enumerate(diff_rows["headers"][:n], 1):
        a, b = r["a"] or {}, r["b"] or {}
        md.append(f"| {i} | `{r['name']}`{status(r)} | "
                  f"{a.get('occurrences', 0):,} | {b.get('occurrences', 0):,} | "
                  f"{a.get('own', 0):,} | {b.get('own', 0):,} | {r['delta']['own']:+,} | "
                  f"{r['delta']['added']:+,} |")
    md += ["", f"## Top {n} include entries by change, {label}", "",
           "Bytes: what the files that get the header only through this entry get "
           "from it.", "",
           "| # | includer:line -> header | files A | files B | bytes A | bytes B | change |",
           "|---:|---|---:|---:|---:|---:|---:|"]
    for i, r in enumerate(diff_rows["edges"][:n], 1):
        a, b = r["a"] or {}, r["b"] or {}
        md.append(f"| {i} | `{r['name']}`{status(r)} | "
                  f"{a.get('files', 0):,} | {b.get('files', 0):,} | "
                  f"{a.get('bytes_sole', 0):,} | {b.get('bytes_sole', 0):,} | "
                  f"{r['delta']['bytes_sole']:+,} |")
    return md + [""]


def by_directory(agg, n=15):
    """[(directory, own bytes)] of a build, the n largest: each header's
    own bytes under its directory, the C files' own under "(C files)"."""
    dirs = {"(C files)": agg["root_own"]}
    for name, st in agg["headers"].items():
        d = os.path.dirname(name) or "."
        dirs[d] = dirs.get(d, 0) + st["own"]
    return sorted(dirs.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def grew_most(diff_rows, n=20):
    """[(header, change of own bytes)] of the n largest changes."""
    return [(r["name"], r["delta"]["own"]) for r in diff_rows["headers"][:n]
            if r["delta"]["own"]]


def title(pair):
    return (f"bytes by header, {pair['a']['ref']} -> {pair['b']['ref']} "
            f"({pair.get('compiler')}), {pair.get('package')}")


def markdown(pair, diff_rows, agg_b):
    """headers.md of a scan pair: what changed, then B's build."""
    a, b = pair["a"]["ref"], pair["b"]["ref"]
    md = [f"# Bytes by header, {a} .. {b} ({pair.get('compiler')})", "",
          "![bytes by header](headers.svg)", ""]
    md += growth_markdown(diff_rows, f"{a} -> {b}")
    md += build_markdown(agg_b, b)
    return "\n".join(md) + "\n"


def signed(v):
    return "-" if v is None else f"{v:+,}"


def status(r):
    return f" ({r['status']})" if r["status"] else ""


def check_lines(cc, w, multi):
    """The whole build's change by header: the top header's growth spread
    over the files, the headers and include entries that changed most."""
    h = w.get("headers")
    if not h:
        return []
    out, t = [], h.get("top")
    tag = f" ({cc})" if multi else ""
    if t:
        out += textwrap.wrap(
            f"{t['header']} own bytes {signed(t['per_file_median'])} B per file (median) "
            f"in {t['files']:,} files = {signed(t['own_growth'])} B over the build{tag}; "
            f"most in {t['file_most']} ({signed(t['file_most_bytes'])} B)", WIDTH)
        out.append("")
    rows = [r for r in h["headers"] if r["delta"]["own"]][:6]
    if rows:
        out.append(f"headers whose own bytes changed most over the build{tag}:")
        for r in rows:
            occ = (r["b"] or r["a"])["occurrences"]
            out += [f"  {r['name']}{status(r)}",
                    f"      {signed(r['delta']['own'])} B, in {occ:,} files"]
    rows = [r for r in h["edges"] if r["delta"]["bytes_sole"] or r["status"]][:6]
    if rows:
        out.append("include entries that changed most (bytes of the files that get")
        out.append(f"the header only through them){tag}:")
        for r in rows:
            files = (r["b"] or r["a"])["files"]
            line = f"  {r['name']}{status(r)}"
            if len(line) > WIDTH and " -> " in line:      # the header on a line of its own
                src, dst = line.split(" -> ", 1)
                line = f"{src} ->\n    {dst}"
            out += line.split("\n") + [f"      {signed(r['delta']['bytes_sole'])} B, in "
                                        f"{files:,} files"]
    return out + [""] if out else []
