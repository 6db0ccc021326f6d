"""Which macro: the expansion of one file attributed to macros.

gcc: `-E -fdebug-cpp` streamed through kx-macros (C): every byte of the
plain -E output in exactly one row, a macro's own bytes (tokens spelled in
its #define) or a class (<source>, <stringified>, <pasted>, <command-line>,
<markers>); the rows add up to expanded_bytes, and that is checked.
clang: kx-macrostack (C++, clang's preprocessor): inclusive bytes and
calls per macro, and the expansion stacks of the hottest line, kept in the
folded format with stacks narrower than STACK_MIN of the line merged into
their caller (the sum is unchanged)."""
import json
import os
import re
import tempfile
import time
from pathlib import Path

from kbuild import build, kcmd, sandbox
from kbuild.proc import pipe, run_limited
from kbuild.util import KexpandError, atomic_write

TOOLS = Path(__file__).resolve().parent.parent / "tools"
OWN_TOOL = TOOLS / "kx-macros"
STACK_TOOL = TOOLS / "kx-macrostack"
# (what this module measures is versioned by cache.MACROS_VERSION)
TOP = 100            # macros kept per file and per hot line
OPAQUE_MIN_LINE = 100_000   # hottest lines this big get the counterfactual
OPAQUE_TOP = 3              # for their top macros by inclusive bytes
STACK_MIN = 0.005    # stacks narrower than this share of the line are merged (6 px of 1200)


def _need(tool):
    if not tool.exists():
        raise KexpandError(f"{tool} missing: run 'make -C {TOOLS.parent.parent} "
                           f"bench/tools/{tool.name}'", "infra")


def _json(tool, out):
    """A tool's JSON output; anything else is the tool's failure (exit 5)."""
    try:
        return json.loads(out)
    except ValueError as e:
        raise KexpandError(f"{tool} wrote output that is not JSON ({e}): rebuild the "
                           f"tools with 'make -C {TOOLS.parent.parent} all'", "infra")


def _fail(what, cmd, rc, err):
    tail = "\n".join(err.decode(errors="replace").splitlines()[-10:])
    return KexpandError(f"{what} failed (exit {rc}): {' '.join(map(str, cmd))[:300]}"
                        f"\n{tail}", "build")


def own_bytes(bdir, argv, hot_at, extra=()):
    """gcc: own bytes per macro and the byte classes, for the file and for
    its hottest line `hot_at` ('path:line', relative to the tree); `extra`
    flags go before -E (build.scan_e_flags: the scan's -E)."""
    _need(OWN_TOOL)
    flags, src = kcmd.strip_output(argv)
    cmd = flags + list(extra) + ["-E", "-fdebug-cpp", "-o", "-", src]
    tool = [str(OWN_TOOL), "-n", str(TOP)] + (["-l", hot_at] if hot_at else [])
    out, aerr, prc, perr, arc, _ = pipe(sandbox.wrap(cmd, bdir), tool, bdir)
    if prc != 0:
        raise _fail("gcc -E -fdebug-cpp", cmd, prc, perr)
    if arc != 0:
        raise _fail("kx-macros", tool, arc, aerr)
    return _json("kx-macros", out)


def prune(stacks, total, frac=STACK_MIN):
    """Merge stacks narrower than frac*total into their callers: a frame
    whose whole subtree is narrow is cut and its bytes go to its parent
    frame. Returns [[stack, bytes]] sorted; the byte sum is unchanged."""
    tree = {}
    for stack, b in stacks:
        node = tree
        for fr in stack.split(";"):
            node = node.setdefault(fr, [0, {}])
            node_self = node
            node = node[1]
        node_self[0] += b

    def size(n):
        return n[0] + sum(size(k) for k in n[1].values())

    out = []

    def walk(prefix, n):
        keep = n[0]
        for fr, k in sorted(n[1].items()):
            if size(k) >= frac * total:
                walk(prefix + [fr], k)
            else:
                keep += size(k)
        if keep:
            out.append([";".join(prefix), keep])

    for fr, n in sorted(tree.items()):
        walk([fr], n)
    return sorted(out)


def run_stack_tool(bdir, flags, src, hot_at, folded=None, top=TOP, ro=()):
    tool = [str(STACK_TOOL), "-n", str(top)] + (["-l", hot_at] if hot_at else []) + (
        ["-f", str(folded)] if folded else []) + ["--"] + flags + [src]
    out, err, rc = run_limited(
        sandbox.wrap(tool, bdir, rw=[Path(folded).parent] if folded else (), ro=ro), bdir)
    if rc != 0:
        raise _fail("kx-macrostack", tool, rc, err)
    return _json("kx-macrostack", out)


def opaque_text(text, name, line):
    """`text` (a header) with the #define of `name` at `line` replaced by a
    plain call of __kx_opaque_<name> with the same parameters (line
    numbers kept), or None when that line does not define `name`."""
    lines = text.split("\n")
    i = j = line - 1
    if i >= len(lines):
        return None
    while lines[j].endswith("\\") and j + 1 < len(lines):
        j += 1
    logical = " ".join(ln.rstrip("\\") for ln in lines[i:j + 1])
    m = re.match(r"\s*#\s*define\s+(\w+)(\([^)]*\))?", logical)
    if not m or m.group(1) != name:
        return None
    if m.group(2):
        ps = [p.strip() for p in m.group(2)[1:-1].split(",") if p.strip()]
        args = ["__VA_ARGS__" if p == "..." else p[:-3] if p.endswith("...") else p
                for p in ps]
        new = f"#define {name}({', '.join(ps)}) __kx_opaque_{name}({', '.join(args)})"
    else:
        new = f"#define {name} __kx_opaque_{name}"
    lines[i:j + 1] = [new] + [""] * (j - i)
    return "\n".join(lines)


def with_overlay(flags, header, overlay):
    """flags with `-I overlay` first, where overlay holds `header` (a path
    relative to the tree) at its path under the -I directory that finds it;
    None when no -I directory does (the main file, a -include'd header)."""
    target = os.path.normpath("../" + header)
    dirs = [d for d in map(os.path.normpath, kcmd.include_dirs(flags))
            if target.startswith(d + "/")]
    if not dirs:
        return None
    # the longest: include/uapi/linux/x.h is <linux/x.h> through include/uapi
    d = max(dirs, key=len)
    return [flags[0], "-I", str(overlay)] + flags[1:], target[len(d) + 1:]


def counterfactual(bdir, flags, src, hot_at, line_macros, line_bytes):
    """For the top macros by inclusive bytes on the hottest line: the line's
    bytes with that macro made opaque (its #define replaced by a call of a
    function of the same arity), and how many bytes that removed."""
    out = []
    for m in line_macros[:OPAQUE_TOP]:
        row = {"name": m["name"], "at": m.get("at"),
               "inclusive_bytes": m["inclusive_bytes"], "applied": False}
        out.append(row)
        header, _, ln = (m.get("at") or "").rpartition(":")
        if not header or header.startswith("<") or not ln.isdigit():
            row["why_not"] = "no #define location"
            continue
        hpath = sandbox.tree_file(bdir, str(Path("..") / header))
        try:
            text = hpath.read_text() if hpath else None
        except OSError:
            text = None
        if text is None:
            row["why_not"] = f"{header} not readable in the tree"
            continue
        new = opaque_text(text, m["name"], int(ln))
        if new is None:
            row["why_not"] = f"{header}:{ln} does not define {m['name']}"
            continue
        with tempfile.TemporaryDirectory(prefix="kx-opaque-") as tmp:
            ov = with_overlay(flags, header, tmp)
            if not ov:
                row["why_not"] = f"{header} is not found through an -I directory"
                continue
            oflags, rel = ov
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            atomic_write(Path(tmp) / rel, new)
            try:
                d = run_stack_tool(bdir, oflags, src, hot_at, top=100_000, ro=[tmp])
            except KexpandError as e:       # e.g. the macro is also used in #if
                row["why_not"] = f"preprocessing failed with it opaque: {str(e)[-300:]}"
                continue
        mine = {x["name"]: x for x in d["lines"][0]["macros"]} if d["lines"] else {}
        row["applied"] = "kx-opaque-" in (mine.get(m["name"], {}).get("at") or "")
        row["line_bytes_opaque"] = d["lines"][0]["bytes_est"] if d["lines"] else None
        if row["applied"] and row["line_bytes_opaque"] is not None:
            row["removed_bytes"] = line_bytes - row["line_bytes_opaque"]
        elif not row["applied"]:
            row["why_not"] = "the opaque definition was not the one used"
    return out


def stacks(bdir, argv, hot_at):
    """clang: inclusive bytes and calls per macro; the hottest line's
    expansion stacks (folded), pruned."""
    _need(STACK_TOOL)
    flags, src = kcmd.strip_output(argv)
    with tempfile.TemporaryDirectory(prefix="kx-stacks-") as tmp:
        folded = Path(tmp) / "line.folded"
        d = run_stack_tool(bdir, flags, src, hot_at, folded if hot_at else None)
        if hot_at and d["lines"]:
            raw = []
            for line in folded.read_text().splitlines():
                stack, _, b = line.rpartition(" ")
                raw.append((stack, int(b)))
            line = d["lines"][0]
            line["stacks"] = prune(raw, line["bytes_est"] or 1)
            line["stacks_raw"] = len(raw)
            if line["bytes_est"] >= OPAQUE_MIN_LINE:
                t0 = time.monotonic()
                line["opaque"] = counterfactual(bdir, flags, src, hot_at,
                                                line["macros"], line["bytes_est"])
                line["opaque_seconds"] = round(time.monotonic() - t0, 3)
    return d


def _line(d, hot_at):
    if not d.get("lines"):
        return None
    ln = d["lines"][0]
    out = {"at": hot_at, "macros": ln["macros"][:TOP], "n_macros": ln["n_macros"]}
    for k in ("bytes", "bytes_est", "classes", "stacks", "stacks_raw", "opaque",
              "opaque_seconds"):
        if k in ln:
            out[k] = ln[k]
    return out


def measure(bdir, src, cc, expand, like_scan=False):
    """The macros entry of one (commit, compiler, file); `expand` is the
    file's expansion entry (its bytes are the check, its hottest line the
    line to look into): Kbuild's -E (expansion.measure_file), or with
    `like_scan` the scan's (what kx-cc adds: gcc's -E without macro
    tracking for a kernel object, same bytes but for __LINE__ in a macro
    call spanning lines; several times faster on deep macros). Tool
    failures are an entry with status 'error'."""
    argv = kcmd.compile_command(bdir, src)
    hot = (expand.get("hot_lines") or [{}])[0].get("at")
    t0 = time.monotonic()
    try:
        if cc == "gcc":
            d = own_bytes(bdir, argv, hot, build.scan_e_flags(argv) if like_scan else ())
        else:
            d = stacks(bdir, argv, hot)
    except KexpandError as e:
        if e.klass == "infra":
            raise
        return {"status": "error", "error": str(e)}
    secs = round(time.monotonic() - t0, 3)
    if cc == "gcc":
        top_sum = sum(m["own_bytes"] for m in d["macros"])
        entry = {"status": "ok", "source": "gcc -E -fdebug-cpp | kx-macros",
                 "bytes": d["bytes"], "classes": d["classes"],
                 "macro_bytes": d["macro_bytes"], "n_macros": d["n_macros"],
                 "other_macros_bytes": d["macro_bytes"] - top_sum,
                 "macros": [{"name": m["name"],
                             "at": f"{_tree(m['file'])}:{m['line']}",
                             "own_bytes": m["own_bytes"], "tokens": m["tokens"]}
                            for m in d["macros"]]}
        if d["bytes"] != expand.get("expanded_bytes"):
            entry["status"] = "mismatch"
            entry["error"] = (f"the rows add up to {d['bytes']:,} bytes, -E gave "
                              f"{expand.get('expanded_bytes')}")
    else:
        entry = {"status": "ok", "source": "clang PPCallbacks | kx-macrostack",
                 "bytes_est": d["bytes_est"], "n_macros": d["n_macros"],
                 "macros": d["macros"]}
    entry["hot_line"] = _line(d, hot)
    entry["seconds"] = secs
    return entry


def _tree(p):
    while p.startswith(("./", "../")):
        p = p[2:] if p.startswith("./") else p[3:]
    return p



def changes(ma, mb, key, top=8):
    """[(label, a, b)] of the macros whose `key` bytes changed most between
    two lists of macros (of two commits). A macro is matched by name; a
    name with two definitions on one side (a #define, an #undef, another
    #define) is matched by name and place, and labelled with its place.
    Only the top of each side is kept, so a macro missing from one side is
    None there (ranked as if at that side's smallest kept figure)."""
    multi = {n for ms in (ma, mb) for n in
             {m["name"] for m in ms if sum(x["name"] == m["name"] for x in ms) > 1}}

    def keyed(ms):
        return {(m["name"], m.get("at") if m["name"] in multi else None): m[key]
                for m in ms}
    a, b = keyed(ma), keyed(mb)
    floor_a, floor_b = min(a.values(), default=0), min(b.values(), default=0)
    delta = lambda k: b.get(k, floor_b) - a.get(k, floor_a)  # noqa: E731
    label = lambda k: f"{k[0]} ({k[1]})" if k[1] else k[0]  # noqa: E731
    return [(label(k), a.get(k), b.get(k)) for k in
            sorted(set(a) | set(b), key=lambda k: (-abs(delta(k)), k[0], k[1] or ""))[:top]]
