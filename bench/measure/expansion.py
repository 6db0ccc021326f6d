"""A file's expansion: its exact Kbuild command as `-E`, piped into the C
analyzer (bench/tools/kx-analyze), never through a temporary file; the
bytes, lines, longest line and hottest source lines of the output."""
import json
import shlex
import tempfile
import time
from pathlib import Path

from kbuild import kcmd, sandbox
from kbuild.proc import pipe
from kbuild.util import REPO, KexpandError, read_regular

TOOLS = Path(__file__).resolve().parent.parent / "tools"
ANALYZER = TOOLS / "kx-analyze"
TOP_LINES = 5


def analyze(cmd, cwd, top=TOP_LINES, headers=False):
    """Run a preprocess command into the C analyzer through a pipe (never
    a temporary file). Returns (analysis, seconds); analysis["cpp_cpu_s"]
    is the preprocessor's CPU time. headers: the analyzer's -H
    (every byte by the file it came from, and the include entries). The
    preprocessor failing is a 'build' error (the code under test); the
    analyzer, 'infra'. cpp_cpu_s is /usr/bin/time's (user + system, to
    10 ms), measured where the command runs."""
    if not ANALYZER.exists():
        raise KexpandError(f"{ANALYZER} missing: run 'make -C {REPO} "
                           "bench/tools/kx-analyze'", "infra")
    # The preprocessor's CPU, taken inside the sandbox: bwrap's own reaper
    # waits for the command, so wait4() of bwrap sees none of its CPU. Only
    # the one file is bound into the box (it can write the file, never add
    # or swap entries), in a private dir of kexpand's, never the build dir.
    with tempfile.TemporaryDirectory(prefix="kx-cpu-") as tmp:
        cpu_file = Path(tmp) / "cpu"
        cpu_file.touch()
        timed = ["/usr/bin/time", "-q", "-f", "%U %S", "-o", str(cpu_file), *cmd]
        t0 = time.monotonic()
        out, aerr, prc, perr, arc, cpu = pipe(sandbox.wrap(timed, cwd, rw=[cpu_file]),
                                              [str(ANALYZER), "-n", str(top)]
                                              + (["-H"] if headers else []), cwd)
        secs = time.monotonic() - t0
        cpu = _time_cpu(cpu_file, cpu)
    if prc != 0:
        tail = "\n".join(perr.decode(errors="replace").splitlines()[-15:])
        raise KexpandError(f"preprocessing failed (exit {prc}): "
                           f"{shlex.join(cmd)}\n{tail}", "build")
    if arc != 0:
        raise KexpandError(f"kx-analyze failed: {aerr.decode(errors='replace')}",
                           "infra")
    try:
        a = json.loads(out)
    except ValueError as e:
        raise KexpandError(f"kx-analyze wrote output that is not JSON ({e}); "
                           f"rebuild it: make -C {REPO} bench/tools/kx-analyze", "infra")
    a["cpp_cpu_s"] = round(cpu, 3)
    return a, secs


def _time_cpu(path, default):
    """User + system seconds from /usr/bin/time's "%U %S" in `path` (read
    as a regular file, 256 bytes at most: the box wrote it); `default`
    where it holds no such line (a command killed before time wrote it)."""
    data = read_regular(path, 256)
    if data is None:
        return default
    words = data.decode(errors="replace").split()
    try:
        return sum(float(w) for w in words[-2:]) if len(words) >= 2 else default
    except ValueError:
        return default


def tree_path(p):
    """A line-marker path relative to the build dir -> relative to the tree."""
    return p[3:] if p.startswith("../") else p


def statement(text, line, maxlines=6):
    """The source statement at `line` of `text`: that line plus
    continuation lines while parentheses are open."""
    out, depth = [], 0
    for s in text.splitlines()[line - 1:line - 1 + maxlines]:
        out.append(s.strip())
        depth += s.count("(") - s.count(")")
        if depth <= 0:
            break
    return " ".join(out)


def source_text(bdir, relpath, line):
    """The statement at relpath:line (relative to the build dir), read
    only from the tree (sandbox.tree_file: a #line marker can name any
    host file)."""
    p = sandbox.tree_file(bdir, relpath)
    try:
        return statement(p.read_text(errors="replace"), line) if p else ""
    except OSError:
        return ""


def measure_file(bdir, src, top=TOP_LINES, within=None):
    """The expansion entry of one file: bytes, lines, hottest lines (the
    `top` hottest; within: only those of that file, e.g. a header)."""
    argv = kcmd.compile_command(bdir, src)
    pcmd = kcmd.preprocess_command(argv)
    a, secs = analyze(pcmd, bdir, top=top)
    if within:
        a["top"] = [t for t in a["top"] if tree_path(t["file"]) == within][:TOP_LINES]
    hot = [{"at": f"{tree_path(t['file'])}:{t['line']}", "bytes": t["bytes"],
            "source": source_text(bdir, t["file"], t["line"]),
            "choose_expr": t["choose_expr"], "stmt_expr": t["stmt_expr"],
            "unique_id": t["unique_id"]} for t in a["top"]]
    la = a.get("longest_line_at")
    return {
        "status": "ok",
        "expanded_bytes": a["bytes"], "lines": a["lines"],
        "longest_line_bytes": a["longest_line_bytes"],
        "longest_line_at": f"{tree_path(la['file'])}:{la['line']}" if la else None,
        "code_bytes": a["code_bytes"], "marker_lines": a["marker_lines"],
        "macro_totals": a["totals"],
        "hot_lines": hot,
        "analyze_seconds": round(secs, 3),
        "cpp_cpu_s": a["cpp_cpu_s"],
        "command": f"cd {shlex.quote(bdir.name)} && {shlex.join(pcmd)} | "
                   f"{ANALYZER.relative_to(REPO)} -n {top}",
    }


