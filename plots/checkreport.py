"""The report of a make check, from its check.json: report.txt (plain
text, 72 columns, shaped like the kernel test robot's regression mails:
a subject, what was tested, a base | %change | tip table, the details of
each file, a reproduce block) and report.md (the same in Markdown, for
the page). Pure functions from the record to text."""
import re
import shlex
import textwrap

from .headers import check_lines as header_lines

WIDTH = 72


def pct(change):
    return "n/a" if change is None else f"{change:+.1%}"


def n(v):
    return "-" if v is None else f"{v:,}"


def ratio(a, b):
    return f"x{b / a:.2f}" if a and b is not None else ""


def short(s, width):
    s = " ".join((s or "").split())
    return s if len(s) <= width else s[:width - 3] + "..."


def chain(stack, width):
    """A folded stack ('file:line;outer;...;inner') as its outer frames, an
    ellipsis and its innermost frame, within `width`."""
    frames = stack.split(";")[1:] or stack.split(";")
    if len(";".join(frames)) <= width:
        return ";".join(frames)
    head, tail = [], frames[-1]
    for f in frames[:-1]:
        if len(";".join(head + [f, "...", tail])) > width:
            break
        head.append(f)
    return short(";".join(head + ["...", tail]), width)


def regressions(rec):
    """[(compiler, row)] of every regression, the worst growth first."""
    out = [(cc, r) for cc, d in rec["results"].items() for r in d["regressions"]]
    return sorted(out, key=lambda x: -(x[1]["growth_bytes"] or 0))


def failures(rec):
    """[(compiler, row)] of every file that preprocesses at the base and
    fails at the tip (an error, the time limit or the memory limit)."""
    return [(cc, r) for cc, d in rec["results"].items() for r in d.get("failures", [])]


def failure_lines(rows):
    out = ["files that preprocess at the base and fail at the tip:"]
    for cc, r in rows:
        out.append("    " + short(f"{r['file']} ({cc}): {r.get('reason_tip') or 'error'}",
                                  WIDTH - 4))
        if r.get("error_tip"):
            out += textwrap.wrap(r["error_tip"], WIDTH - 6, initial_indent="      ",
                                 subsequent_indent="      ", break_on_hyphens=False)[:3]
    return out


def whole_builds(rec):
    """[(compiler, whole-build entry)] of the record (older records: none)."""
    return [(cc, d["whole_build"]) for cc, d in rec["results"].items() if d.get("whole_build")]


def build_regressions(rec):
    return [(cc, w) for cc, w in whole_builds(rec) if w["verdict"] == "regression"]


def whole_line(w):
    """'+2.45% (1,534,064,918 -> 1,571,646,248 B, 671 of 734 files grew)'."""
    return (f"{pct2(w['change'])} ({n(w['bytes_base'])} -> {n(w['bytes_tip'])} B, "
            f"{w['files_grown']} of {n(w.get('files_tip'))} files grew)")


def pct2(change):
    return "n/a" if change is None else f"{change:+.2%}"


def leads_whole(rec):
    """The report leads with the whole build (its growth is spread: no
    single file made half of it), not with a file."""
    return any(w.get("leads") == "whole build" for _, w in build_regressions(rec))


def improvements(rec):
    out = [(cc, r) for cc, d in rec["results"].items() for r in d["improvements"]]
    return sorted(out, key=lambda x: x[1]["growth_bytes"] or 0)


def subject(rec):
    regs, failed = regressions(rec), failures(rec)
    what = f'"{short(rec["series"]["subject"], 48)}"'
    if rec["series"].get("version") and rec["series"]["version"] > 1:
        what += f" v{rec['series']['version']}"
    if not regs and failed:
        cc, r = failed[0]
        more = f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
        return (f"[kexpand] {r['file']}: -E fails at the tip ({r.get('reason_tip')})"
                f"{more} with {what}")
    if leads_whole(rec) or (build_regressions(rec) and not regs):
        cc, w = build_regressions(rec)[0]
        more = f", {len(regs)} file(s) over the threshold" if regs else ""
        return (f"[kexpand] whole build: -E {pct2(w['change'])} in {w['files_grown']} "
                f"files{more} with {what}")
    if not regs:
        return f"[kexpand] no expansion regression in {what}"
    cc, r = regs[0]
    more = f" (+{len(regs) - 1} more)" if len(regs) > 1 else ""
    return (f"[kexpand] {r['file']}: -E {pct(r['change'])}{more} with {what}")


def header(rec):
    s = rec["series"]
    p = s["patches"]
    lines = [
        f"series:   {short(s['subject'], WIDTH - 10)}",
        f"          {len(p)} patch(es) on {rec['base']['ref']}"
        + (" (git am)" if s.get("key") else " (committed)"),
        f"base:     {rec['base']['commit'][:12]} (\"{short(rec['base']['subject'], 44)}\")",
        f"tip:      {rec['tip']['commit'][:12]} (\"{short(p[-1]['subject'], 44)}\")",
        f"tree:     {short(rec['package'], WIDTH - 10)}",
        f"config:   {short(rec['config'], WIDTH - 10)}",
    ]
    for cc, ver in rec["compilers"].items():
        lines.append(f"compiler: {short(ver, WIDTH - 10)}")
    t = rec["threshold"]
    for cc, d in rec["results"].items():
        lines.append(measured(d["scan_base"], d["scan_tip"])
                     + (f" ({cc})" if len(rec["results"]) > 1 else ""))
    lines.append(f"          threshold +{t['ratio'] - 1:.0%} and "
                 f"{t['min_growth_bytes'] // 1024} KiB per file"
                 + ("," if t.get("total_ratio") else ""))
    if t.get("total_ratio"):
        lines.append(f"          +{t['total_ratio'] - 1:.1%} and "
                     f"{t['total_min_growth_bytes'] // 1024} KiB for the whole build")
    for cc, w in whole_builds(rec):
        lines += textwrap.wrap(f"whole build{f' ({cc})' if len(rec['results']) > 1 else ''}: "
                               f"{whole_line(w)}", WIDTH, subsequent_indent=" " * 10)
    lines.append(f"tip path: {TIP_PATHS.get(rec['path'], rec['path'])}"
                 + (f" ({short(rec['path_reason'], 40)})" if rec.get("path_reason") else ""))
    return lines


# check.json's path, and those of records made before the Kbuild-driven scan
TIP_PATHS = {"seeded": "the base scan, Kbuild redoing what changed",
             "fresh": "measured from nothing", "fast": "make prepare and the base commands",
             "full": "a full build of the tip"}


def measured(base, tip):
    """The files measured (preprocessed) at each side, and the ones that
    failed: a file that did not preprocess is not measured."""
    def side(scan):
        ok = scan.get("n_ok", scan.get("n_files"))
        bad = (scan.get("n_files") or 0) - (ok or 0)
        return n(ok) + (f" ({bad} failed)" if bad else "")
    return f"measured: {side(base)} C files at base, {side(tip)} at tip"


def table(rows, builds=()):
    """The base | %change | tip table; `builds`: whole-build rows first."""
    out = ["            base         %change             tip",
           "---------------- --------------- ----------------"]
    for cc, w in builds:
        nums = f"{w['bytes_base']:>16,} {pct2(w['change']):>15} {w['bytes_tip']:>16,}  "
        out.append(nums + "whole build" + (f" ({cc})" if cc != "gcc" else ""))
    for cc, r in rows:
        nums = f"{r['bytes_base']:>16,} {pct(r['change']):>15} {r['bytes_tip']:>16,}  "
        out += under(nums, r["file"] + (f" ({cc})" if cc != "gcc" else ""))
    return out


def under(head, path):
    """`head` then `path`; a path that would go past WIDTH is broken after
    a '/' and goes on in the same column on the next lines, or further
    left where its last part would not fit there (ending at WIDTH); only
    a part longer than a line goes over, on a line of its own."""
    col, out, cur = len(head), [], head
    while len(cur) + len(path) > WIDTH and "/" in path[:-1] and col < WIDTH - 16:
        room = max(1, WIDTH - len(cur))
        cut = path.rfind("/", 0, room) + 1 or path.find("/") + 1
        if cut >= len(path):
            break
        out.append(cur + path[:cut])
        path = path[cut:]
        last = "/" not in path[:-1]             # nothing more to break at
        cur = " " * (max(0, min(col, WIDTH - len(path))) if last else col)
    return out + [cur + path]


def details(cc, r):
    what = (f"{n(r['bytes_base'])} -> {n(r['bytes_tip'])} bytes "
            f"({ratio(r['bytes_base'], r['bytes_tip'])})")
    first = f"{r['file']} ({cc}): {what}"
    out = [first] if len(first) <= WIDTH else [f"{r['file']} ({cc}):", f"  {what}"]
    out.append(f"  longest line: {n(r['longest_line_base'])} -> {n(r['longest_line_tip'])} bytes")
    if r.get("grew_most"):
        g = r["grew_most"]
        out.append(f"  grew most at patch {g['patch']} ({'x%.2f' % g['ratio']}): "
                   f"{short(g['subject'], WIDTH - 34)}")
    if r.get("per_patch"):
        out.append("  bytes after each patch:")
        for s in r["per_patch"]:
            tag = f"x{s['ratio']:.2f}" if s.get("ratio") else ""
            out.append(f"    {s['patch']:>2} {n(s['bytes']):>14} {tag:>7}  "
                       f"{short(s['subject'], WIDTH - 32)}")
    for side in ("tip", "base"):
        hot = r.get(f"hot_lines_{side}") or []
        if hot:
            out.append(f"  hottest lines at the {side}:")
            for h in hot[:3]:
                at = f"    {h['at']}  {n(h['bytes'])} bytes"
                out += [at] if len(at) <= WIDTH else [f"    {h['at']}", f"      {n(h['bytes'])} bytes"]
                if h.get("source"):
                    out += textwrap.wrap(h["source"], WIDTH - 6, initial_indent="      ",
                                         subsequent_indent="      ",
                                         break_on_hyphens=False)[:3]
    grew = r.get("macros_grew")
    if grew:
        out.append("  macros whose own bytes (gcc) changed most, base -> tip:")
        for label, a, b in grew[:6]:
            out.append(f"    {short(label, 30):30} {n(a):>14} -> {n(b):>14}")
    hl = (r.get("macros_tip") or {}).get("hot_line") or {}
    fl = (r.get("macros_tip") or {}).get("focus_line") or {}
    if r.get("focus") and fl:                   # a whole build's witness
        out.append(f"  its hottest line of {r['focus']} at the tip, {n(fl.get('bytes'))} B:")
        out += textwrap.wrap(f"{fl['at']}: {fl.get('source') or ''}", WIDTH,
                             initial_indent="    ", subsequent_indent="      ")[:3]
    if r.get("focus") and hl.get("macros"):
        out += textwrap.wrap(f"macros of {hl['at']} at the tip (own bytes): " + ", ".join(
            f"{m['name']} {n(m.get('own_bytes'))}" for m in hl["macros"][:5]), WIDTH,
            initial_indent="  ", subsequent_indent="    ")
    clang = r.get("clang") or {}
    hl = clang.get("hot_line") or {}
    if hl.get("stacks"):
        out.append(f"  clang, widest expansion stacks of {short(hl.get('at'), 34)} (tip):")
        for stack, b in sorted(hl["stacks"], key=lambda sb: -sb[1])[:3]:
            out.append(f"    {chain(stack, 50):50} {n(b):>14}")
    ins = r.get("instructions") or {}
    a, b = (ins.get("base") or {}).get("instructions"), (ins.get("tip") or {}).get("instructions")
    if a and b:
        out.append(f"  instructions of -c ({(ins['tip'].get('instructions_source') or '')}): "
                   f"{a / 1e9:.2f} G -> {b / 1e9:.2f} G ({ratio(a, b)})")
    return out


def report_txt(rec):
    regs, better, failed = regressions(rec), improvements(rec), failures(rec)
    # the subject folded as a mail header is (RFC 5322: a line that
    # goes on starts with a blank), so the text stays within 72 columns
    out = textwrap.wrap(f"Subject: {subject(rec)}", WIDTH, subsequent_indent=" ",
                        break_on_hyphens=False, break_long_words=False)
    out += ["", "Hello,", ""]
    builds = build_regressions(rec)
    if builds and (leads_whole(rec) or not regs):
        cc, w = builds[0]
        out += textwrap.wrap(
            f"kexpand noticed a {pct2(w['change'])} regression of the preprocessed size "
            f"(-E bytes) of the whole build, spread over {w['files_grown']} files"
            + (f" ({len(regs)} of them over the per-file threshold)" if regs else
               " (none over the per-file threshold)")
            + " with this series:", WIDTH)
    elif regs:
        cc, r = regs[0]
        out += textwrap.wrap(
            f"kexpand noticed a {pct(r['change'])} regression of the preprocessed "
            f"size (-E bytes) of {r['file']}"
            + (f" and {len(regs) - 1} more file(s)" if len(regs) > 1 else "")
            + " with this series:", WIDTH)
    elif failed:
        cc, r = failed[0]
        out += textwrap.wrap(
            f"kexpand noticed that {r['file']}"
            + (f" and {len(failed) - 1} more file(s) preprocess at the base and fail"
               if len(failed) > 1 else " preprocesses at the base and fails")
            + f" at the tip ({r.get('reason_tip')}) with this series:", WIDTH)
    else:
        out += textwrap.wrap("kexpand found no file whose preprocessed size grew past "
                             "the threshold with this series:", WIDTH)
    out += [""] + header(rec) + [""]
    if failed:
        out += failure_lines(failed) + [""]
    if regs or builds:
        out += table(regs, builds) + [""]
    for cc, w in builds:
        out += header_lines(cc, w, len(rec["results"]) > 1)
    if better:
        out.append("improvements (not regressions):")
        out += table(better[:10]) + [""]
    witnesses = [(cc, w["witness"]) for cc, w in builds if w.get("witness")
                 and w["witness"]["file"] not in {r["file"] for c, r in regs if c == cc}]
    if regs or witnesses:
        out += ["Details are as below:", "-" * WIDTH, ""]
        for cc, r in witnesses:
            out += textwrap.wrap(f"where the whole build's top header grew most ({cc}):",
                                 WIDTH)
            out += details(cc, r) + [""]
        for cc, r in regs:
            out += details(cc, r) + [""]
    out += ["reproduce:"] + reproduce(rec["make_command"]) + [""]
    return "\n".join(line.rstrip() for line in out) + "\n"


def reproduce(command):
    """The make line, one argument per line (shell continuations) where it
    does not fit: only an argument longer than a line (a path) goes over."""
    line = f"        {command}"
    if len(line) <= WIDTH:
        return [line]
    words = shlex.split(command)
    out, cur = [], "        " + shlex.join(words[:2])
    for w in words[2:]:
        q = shlex.quote(w)
        if len(cur) + 1 + len(q) + 2 > WIDTH:
            out.append(cur + " \\")
            cur = "          " + q
        else:
            cur += " " + q
        if (len(cur) > WIDTH and w.split("=", 1)[0] in LISTS and "!" not in w
                and len(w.split("=", 1)[1].split()) > 1):
            out += listed(w)
            cur = out.pop()
    return out + [cur]


LISTS = ("PATCHES", "FILES", "POINTS")     # settings kexpand splits at blanks


def listed(word):
    """NAME="v1 v2 ..." (a setting of LISTS) one value per line: within
    double quotes the shell drops a backslash-newline, and the blanks left
    between the values only separate them. Not for a value with a '!',
    which an interactive bash expands between double quotes."""
    name, values = word.split("=", 1)
    esc = [re.sub(r'([\\"$`])', r"\\\1", v) for v in values.split()]
    lines = [f'          {name}="{esc[0]} \\'] + [f"            {v} \\" for v in esc[1:-1]]
    return lines + [f'            {esc[-1]}"']


def report_md(rec):
    regs, better, failed = regressions(rec), improvements(rec), failures(rec)
    out = [f"# make check: {rec['series']['subject']}", "",
           f"**{subject(rec)[10:]}**", "", "```", *header(rec), "```", ""]
    if failed:
        out += ["```", *failure_lines(failed), "```", ""]
    builds = build_regressions(rec)
    if regs or builds:
        out += ["| file | compiler | base bytes | change | tip bytes | grew most at |",
                "|---|---|---:|---:|---:|---|"]
        for cc, w in builds:
            out.append(f"| **whole build** ({w['files_grown']} files grew) | {cc} | "
                       f"{n(w['bytes_base'])} | {pct2(w['change'])} | {n(w['bytes_tip'])} | |")
        for cc, r in regs:
            g = r.get("grew_most") or {}
            out.append(f"| `{r['file']}` | {cc} | {n(r['bytes_base'])} | {pct(r['change'])} "
                       f"| {n(r['bytes_tip'])} | "
                       + (f"patch {g['patch']} (x{g['ratio']:.2f})" if g else "") + " |")
        out.append("")
    if better:
        out += ["Improvements:", "", "| file | compiler | base bytes | change | tip bytes |",
                "|---|---|---:|---:|---:|"]
        out += [f"| `{r['file']}` | {cc} | {n(r['bytes_base'])} | {pct(r['change'])} "
                f"| {n(r['bytes_tip'])} |" for cc, r in better[:20]]
        out.append("")
    for cc, r in regs:
        out += [f"## {r['file']} ({cc})", "", "```", *details(cc, r)[1:], "```", ""]
    out += ["reproduce:", "", f"    {rec['make_command']}", ""]
    return "\n".join(out)
