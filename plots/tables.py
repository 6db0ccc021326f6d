"""Markdown and CSV tables that report.py writes: the series tables, an
A-vs-B report, the scan ranking, boots and the conformance matrix. Pure
functions from records (dicts) to text; report.py reads and writes."""
from bench.results import csv_text  # noqa: F401  (one CSV writer for every table)


def fmt_bytes(n):
    if n in (None, ""):
        return "-"
    return f"{n:,}"


def ok(e):
    return bool(e) and e.get("status") == "ok"


def fmt_time(t):
    if not t:
        return "-"
    return f"{t['median_s']:.3f} ± {t['stddev_s']:.3f}"


def tables(index, records):
    """Markdown: per compiler, bytes and longest lines per (file, point),
    times with spread, and the hottest source line of each point."""
    by = {(r["commit"], r["compiler"]): r for r in records}
    points = index["points"]
    out = [f"# Expansion per series point ({index.get('case')}, "
           f"{index.get('package')})", "",
           "Bytes of preprocessor output (`-E`) of each focus file, measured "
           "with the file's exact Kbuild command: exact and deterministic. "
           "Times: hyperfine median ± standard deviation in seconds, noisy "
           "(a shared 2-core machine).", ""]
    header = "| file | " + " | ".join(p["name"] for p in points) + " |"
    rule = "|---|" + "---:|" * len(points)
    for cc in sorted({r["compiler"] for r in records}):
        recs = [by.get((p["commit"], cc)) for p in points]
        if not any(recs):
            continue
        ver = next(r for r in recs if r)["compiler_version"]
        cols = [
            ("Expanded bytes", lambda e: fmt_bytes(e.get("expanded_bytes"))),
            ("Longest line, bytes", lambda e: fmt_bytes(e.get("longest_line_bytes"))),
            ("-E time, s", lambda e: fmt_time(e.get("time_E"))),
            ("-c time, s", lambda e: fmt_time(e.get("time_c"))),
            ("Peak RSS of -c, kB", lambda e: fmt_bytes((e.get("time_c") or {}).get("peak_rss_kb"))),
        ]
        for title, cell in cols:
            out += [f"## {title}, {cc} ({ver})", "", header, rule]
            for f in index["files"]:
                cells = []
                for r in recs:
                    e = r["files"].get(f) if r else None
                    cells.append(cell(e) if ok(e) else (e or {}).get("status", "-"))
                out.append(f"| {f} | " + " | ".join(cells) + " |")
            out.append("")
        out += [f"## Hottest source line per point, {cc}", "",
                "Counts on that line: `__builtin_choose_expr`, statement "
                "expressions `({`, and `__UNIQUE_ID_` names.", "",
                "| file | point | line | bytes | choose_expr | `({` | unique_id | source |",
                "|---|---|---|---:|---:|---:|---:|---|"]
        for f in index["files"]:
            for p, r in zip(points, recs):
                e = r["files"].get(f) if r else None
                if not ok(e) or not e.get("hot_lines"):
                    continue
                h = e["hot_lines"][0]
                src = h["source"].replace("|", "\\|")[:120]
                out.append(f"| {f} | {p['name']} | {h['at']} | {h['bytes']:,} | "
                           f"{h['choose_expr']} | {h['stmt_expr']} | {h['unique_id']} | `{src}` |")
        out.append("")
    return "\n".join(out) + "\n"


def direction(ratio, a=None, b=None):
    """B/A as text. "same" only when the bytes are equal (a, b given);
    otherwise enough digits that a real difference never reads as 1.00x,
    and the difference in bytes."""
    if ratio is None:
        return ""
    if a is not None and b is not None:
        if a == b:
            return "1x (same)"
        delta = f", {b - a:+,} bytes"
    else:
        delta = ""
    if ratio >= 1:
        digits = 2 if ratio >= 1.01 else 6
        word = f"{ratio:.1f}x larger" if ratio >= 1.05 else "larger"
        return f"{ratio:.{digits}f}x ({word}{delta})"
    digits = 4 if ratio <= 0.99 else 6
    word = f"{1 / ratio:.1f}x smaller" if ratio <= 0.95 else "smaller"
    return f"{ratio:.{digits}g}x ({word}{delta})"


def changed_lines_markdown(changes):
    """The lines.json of a compare: the source lines whose bytes changed
    most, matched across A and B through their diff."""
    rows = changes.get("lines") or []
    n = len(changes.get("files") or [])
    out = [f"## Source lines whose expansion changed most ({changes.get('compiler')}, "
           f"summed over {n} file{'s' if n != 1 else ''})", ""]
    if not rows:
        return out + ["No source line's bytes changed.", ""]
    out += ["Lines of A and B are matched through `git diff A B` (line numbers "
            "shift); *files* is how many of the measured files that line's "
            "bytes changed in (a header line reaching several files shows once).",
            "", "| line at A | line at B | bytes A | bytes B | change | files | source |",
            "|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        src = (r.get("source") or "").replace("|", "\\|")[:140]
        out.append(f"| {r['at_a'] or '(new)'} | {r['at_b'] or '(removed)'} | "
                   f"{r['bytes_a']:,} | {r['bytes_b']:,} | {r['delta']:+,} | "
                   f"{r['files']} of {n} | `{src}` |")
    return out + [""]


def ratio(x, digits=3):
    """A B/A ratio for a table; '-' where not measured."""
    return "-" if x is None else f"{x:.{digits}f}"


def pair_markdown(pair, rows, changes=None):
    a, b = pair["a"], pair["b"]
    out = [f"# {a['ref']} .. {b['ref']}", "",
           f"- A: `{a['commit'][:12]}` {a['subject']}",
           f"- B: `{b['commit'][:12]}` {b['subject']}",
           f"- tree: {pair['package']}" + (f", config: {pair['config']}"
                                            if pair.get("config") else ""),
           f"- reproduce: `{pair.get('make_command') or pair['command']}`"
           + (f" (internally: `{pair['command']}`)" if pair.get("make_command") else ""),
           "",
           "Bytes: exact size of the `-E` output. Compile cost of the file's "
           "exact `-c` command: instructions (counted, deterministic), CPU "
           "time (user + system) and wall time (median ± stddev), A's and "
           "B's runs interleaved. *significant* is decided by instructions "
           "where both sides were counted, by CPU time otherwise (*by*); "
           "the threshold (*thr*) is the larger of a floor and 3x the noise "
           "the built-in A/A check measured (README, \"Is it significant?\"). "
           "Ratios are B/A.", ""]
    for cc in pair["compilers"]:
        cr = [r for r in rows if r["compiler"] == cc]
        if not cr:
            continue
        out += [f"## {cc}", "",
                "| file | bytes A | bytes B | B/A | instructions B/A | CPU B/A | "
                "-c A, s | -c B, s | wall B/A | significant (by, thr) | -E: instr., CPU, wall B/A, significant | RSS A kB | RSS B kB |",
                "|---|---:|---:|---|---:|---:|---:|---:|---:|---|---|---:|---:|"]
        for r in cr:
            if r["status"] != "ok":
                out.append(f"| {r['file']} | {r['status']} ||||||||||||")
                continue
            t = "c_time_a_s" in r
            out.append(
                f"| {r['file']} | {r['bytes_a']:,} | {r['bytes_b']:,} | "
                f"{direction(r['bytes_ratio'], r['bytes_a'], r['bytes_b'])} | "
                + (f"{ratio(r.get('c_instructions_ratio'), 6)} | "
                   f"{ratio(r.get('c_cpu_time_ratio'))} | "
                   f"{r['c_time_a_s']:.3f} ± {r['c_sd_a']:.3f} | "
                   f"{r['c_time_b_s']:.3f} ± {r['c_sd_b']:.3f} | "
                   f"{r['c_time_ratio']:.3g} | "
                   f"{'**yes**' if r['significant'] else 'no'} "
                   f"({r['decided_by'].replace('_', ' ')}, {r['threshold']:.2%}) | "
                   f"{ratio(r.get('e_instructions_ratio'), 6)}, "
                   f"{ratio(r.get('e_cpu_time_ratio'))}, {ratio(r.get('e_time_ratio'))}, "
                   f"{'**yes**' if r.get('e_significant') else 'no'} | "
                   f"{fmt_bytes(r['peak_rss_a_kb'])} | {fmt_bytes(r['peak_rss_b_kb'])} |"
                   if t else "- | - | - | - | - | not timed | - | - | - |"))
        out.append("")
        for r in cr:
            if r["status"] != "ok" or r["bytes_a"] == r["bytes_b"]:
                continue
            grew = r["bytes_b"] > r["bytes_a"]
            out += [f"### {r['file']} ({cc}): hottest lines, "
                    f"{'B grew' if grew else 'B shrank'} by "
                    f"{abs(r['bytes_b'] - r['bytes_a']):,} bytes", "",
                    "| side | line | bytes | choose_expr | `({` | unique_id | source |",
                    "|---|---|---:|---:|---:|---:|---|"]
            for side, hot in (("A", r["hot_a"]), ("B", r["hot_b"])):
                for h in hot[:3]:
                    src = h["source"].replace("|", "\\|")[:140]
                    out.append(f"| {side} | {h['at']} | {h['bytes']:,} | "
                               f"{h['choose_expr']} | {h['stmt_expr']} | "
                               f"{h['unique_id']} | `{src}` |")
            out.append("")
    if changes is not None:
        out += changed_lines_markdown(changes)
    return "\n".join(out) + "\n"


CONFORMANCE_FIXED = ["snippet", "question", "expected", "claim", "differs_from_claim"]


def matrix_rows(snippets, results_by_point, points):
    """Conformance rows: one per snippet, a cell per point, the seeds'
    expectation, and the points where the result differs from it."""
    rows = []
    for s in snippets:
        row = {"snippet": s["name"], "question": s["title"]}
        for pt in points:
            r = results_by_point.get(pt, {}).get(s["name"])
            row[pt] = r["verdict"] if r else ""
        row["expected"] = "; ".join(f"{p}: {e['verdict']}" for p, e in s["expect"].items())
        row["claim"] = "; ".join(e["claim"] for e in s["expect"].values() if e["claim"])
        row["differs_from_claim"] = "; ".join(
            p for p, e in s["expect"].items()
            if row.get(p) and row[p] != e["verdict"])
        rows.append(row)
    return rows


def conformance_markdown(snippets, by_point, points, rows):
    md = ["# Conformance: compile-time behaviour of each point's minmax.h", "",
          "Each snippet compiled with the point's exact Kbuild flags (gcc): "
          "accepted, warned (compiles with a warning) or rejected (error). "
          "*expected* is what the seeds claim, where they make a claim. "
          "Bold: the points differ on this snippet.", "",
          "| snippet | " + " | ".join(points) + " | expected (seeds) | differs |",
          "|---|" + "---|" * (len(points) + 2)]
    for r in rows:
        varies = len({r[p] for p in points if r[p]}) > 1
        cells = [f"**{r[p]}**" if varies and r[p] else r[p] for p in points]
        md.append(f"| {r['question'].replace('|', '/')} | " + " | ".join(cells) +
                  f" | {r['expected']} | {r['differs_from_claim'] or ''} |")
    md += ["", "Messages (first diagnostic per snippet and point):", ""]
    for s_ in snippets:
        for p in points:
            m = by_point[p].get(s_["name"], {}).get("message")
            if m:
                md.append(f"- {s_['name']} at {p}: `{m[:160]}`")
    md += ["", "Claims:", ""] + [f"- {r['snippet']}: {r['claim']}" for r in rows if r["claim"]]
    return "\n".join(md) + "\n"


def boot_markdown(rows):
    """rows: [(point entry of the series index, boot record)]."""
    md = ["# Boot checks (QEMU, TCG, no network)", "",
          "| point | commit | status | seconds to /init | passed | failed | skipped | failures |",
          "|---|---|---|---:|---:|---:|---:|---|"]
    for p, b in rows:
        md.append(f"| {p['name']} | `{p['commit'][:12]}` | {b['status']} | "
                  f"{b.get('boot_s') or '-'} | {b.get('tests_passed', 0)} | "
                  f"{b.get('tests_failed', 0)} | {b.get('tests_skipped', 0)} | "
                  f"{' '.join(b.get('failures') or [])} |")
    return "\n".join(md) + "\n"


def scan_build_line(sa, sb):
    if sa["build"].get("remote") or sb["build"].get("remote"):
        return (f"- measured on the Dask cluster {sb.get('dask_scheduler')}, each "
                "worker building in its own work directory; files per host: "
                f"{sa.get('hosts')} (A), {sb.get('hosts')} (B).")
    if "scan_s" in sb["build"]:         # Kbuild-driven (kbuildscan)
        return (f"- Kbuild-driven scans: {sa['build'].get('scan_s')} s and "
                f"{sb['build']['scan_s']} s (-j{sb['build']['jobs']}; A from "
                f"{sa['build'].get('from')}, B from {sb['build']['from']}).")
    return (f"- full build: {sa['build'].get('full_build_s')} s and "
            f"{sb['build']['full_build_s']} s (-j{sb['build']['jobs']}; "
            f"from clean: {sa['build']['from_clean']}, {sb['build']['from_clean']}).")


def ranking_markdown(pair, rows, sa, sb):
    """The scan ranking of A..B: rows from ranking.csv, sa/sb the scans."""
    a, b, top, focus = pair["a"]["ref"], pair["b"]["ref"], pair.get("top", 20), \
        set(pair.get("focus") or [])
    md = [f"# Files by expansion growth, {a} .. {b}", "",
          f"- {sa['n_files']} C files at {a}: {sa['total_bytes']:,} bytes of -E "
          f"output; {sb['n_files']} at {b}: {sb['total_bytes']:,} bytes "
          f"({sb['total_bytes'] / sa['total_bytes']:.3f}x).",
          scan_build_line(sa, sb),
          f"- scan wall time {sb['scan_seconds']} s for {sb['n_files']} files; "
          f"files x median -E time / workers = {sb['ideal_seconds']} s; ratio "
          f"{sb['overhead_ratio']}.", "",
          f"## Top {top} by absolute growth", "",
          "| # | file | bytes A | bytes B | growth | ratio | focus file | hottest line at B |",
          "|---:|---|---:|---:|---:|---:|---|---|"]
    for i, r in enumerate(rows[:top], 1):
        hot = (sb["files"].get(r["file"]) or {}).get("hot") or {}
        md.append(f"| {i} | {r['file']} | {r['bytes_a']:,} | {r['bytes_b']:,} | "
                  f"{r['growth_bytes']:+,} | {r['growth_ratio']} | "
                  f"{'yes' if r['file'] in focus else ''} | "
                  f"{hot.get('at', '')} ({hot.get('bytes', 0):,} B) |")
    by_ratio = sorted((r for r in rows if r["growth_ratio"]),
                      key=lambda r: -r["growth_ratio"])[:top]
    md += ["", f"## Top {top} by growth ratio", "",
           "| # | file | bytes A | bytes B | ratio |", "|---:|---|---:|---:|---:|"]
    for i, r in enumerate(by_ratio, 1):
        md.append(f"| {i} | {r['file']} | {r['bytes_a']:,} | {r['bytes_b']:,} | "
                  f"{r['growth_ratio']} |")
    n_focus = sum(1 for r in rows[:top] if r["file"] in focus)
    md += ["", f"{n_focus} of the top {top} by absolute growth are focus files."]
    return "\n".join(md) + "\n"
