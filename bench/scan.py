"""Scan every C file a point's build compiled: its exact command, -E through
the analyzer, all cores. Bytes, not timings, so running files in parallel
is fine."""
import json
import shlex
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import kbuild
from kxutil import KexpandError, jobs, log, run

ANALYZER = Path(__file__).resolve().parent / "kx-analyze"


def compile_commands(tree, bdir):
    """compile_commands.json from the tree's own generator, C files only."""
    out = bdir / "compile_commands.json"
    gen = tree / "scripts/clang-tools/gen_compile_commands.py"
    if gen.exists():
        run(["/usr/bin/python3", str(gen), "-d", str(bdir), "-o", str(out),
             "--log_level", "ERROR"], cwd=bdir, what="gen_compile_commands.py")
        entries = json.loads(out.read_text())
    else:   # a tree without the generator: read the .cmd files ourselves
        entries = []
        for cmd in bdir.rglob(".*.o.cmd"):
            obj = cmd.relative_to(bdir).with_name(cmd.name[1:-4])
            src = str(obj)[:-2] + ".c"
            try:
                argv = kbuild.compile_command(bdir, src)
            except KexpandError:
                continue
            entries.append({"directory": str(bdir), "file": str(tree / src),
                            "arguments": argv})
    out_entries = []
    for e in entries:
        f = Path(e["file"])
        if f.suffix != ".c":
            continue
        try:
            rel = f.resolve().relative_to(Path(tree).resolve())
        except ValueError:
            continue
        if str(rel).startswith(bdir.name + "/"):
            continue          # generated sources inside the build dir
        argv = e.get("arguments") or shlex.split(e["command"])
        out_entries.append((str(rel), argv))
    return sorted(out_entries)


def _one(bdir, rel, argv):
    cmd = kbuild.preprocess_command(argv)
    t0 = time.monotonic()
    pre = subprocess.Popen(cmd, cwd=bdir, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
    ana = subprocess.run([str(ANALYZER), "-n", "1"], stdin=pre.stdout,
                         capture_output=True)
    pre.stdout.close()
    pre.wait()
    secs = time.monotonic() - t0
    if pre.returncode != 0 or ana.returncode != 0:
        return rel, {"status": "error", "seconds": round(secs, 4)}
    a = json.loads(ana.stdout)
    hot = a["top"][0] if a["top"] else None
    return rel, {"status": "ok", "bytes": a["bytes"], "lines": a["lines"],
                 "longest_line_bytes": a["longest_line_bytes"],
                 "hot": {"at": f"{hot['file'].removeprefix('../')}:{hot['line']}",
                         "bytes": hot["bytes"]} if hot else None,
                 "seconds": round(secs, 4)}


def scan_build(tree, bdir, progress=None, known_seconds=None):
    """known_seconds: {file: seconds} from earlier measurements of this
    commit; those files start first, longest first, so that one slow file
    (setup.c's 30 s at laight-v4) does not run alone at the end."""
    entries = compile_commands(tree, bdir)
    known = known_seconds or {}
    entries.sort(key=lambda e: -known.get(e[0], 0.0))
    if not entries:
        raise KexpandError(f"no compiled C files found in {bdir}: build the "
                           "point first", "build")
    n = len(entries)
    workers = jobs()
    if progress:
        progress.say(f"  scanning {n} C files with {workers} workers")
    t0 = time.monotonic()
    files = {}
    with ThreadPoolExecutor(max_workers=workers) as ex:
        for i, (rel, res) in enumerate(ex.map(lambda e: _one(bdir, *e), entries)):
            files[rel] = res
            if progress and (i + 1) % 200 == 0:
                progress.say(f"  scanned {i + 1}/{n}")
    wall = time.monotonic() - t0
    ok = [v for v in files.values() if v["status"] == "ok"]
    med = statistics.median(v["seconds"] for v in files.values())
    ideal = n * med / workers
    return {"files": files, "n_files": n, "n_ok": len(ok),
            "total_bytes": sum(v["bytes"] for v in ok),
            "scan_seconds": round(wall, 2), "workers": workers,
            "median_file_seconds": round(med, 4),
            "ideal_seconds": round(ideal, 2),
            "overhead_ratio": round(wall / ideal, 3) if ideal else None}


def ranking(scan_a, scan_b):
    """Rows file, bytes_a, bytes_b, growth_bytes, growth_ratio, sorted by
    growth_bytes (largest growth first); files in both scans only."""
    rows = []
    for f, b in scan_b["files"].items():
        a = scan_a["files"].get(f)
        if not a or a["status"] != "ok" or b["status"] != "ok":
            continue
        rows.append({"file": f, "bytes_a": a["bytes"], "bytes_b": b["bytes"],
                     "growth_bytes": b["bytes"] - a["bytes"],
                     "growth_ratio": round(b["bytes"] / a["bytes"], 4) if a["bytes"] else None,
                     "hot_b": b.get("hot"), "hot_a": a.get("hot")})
    rows.sort(key=lambda r: (-r["growth_bytes"], r["file"]))
    return rows


def log_summary(scan, name):
    log(f"scan {name}: {scan['n_files']} files, {scan['total_bytes']:,} bytes, "
        f"{scan['scan_seconds']}s (ideal {scan['ideal_seconds']}s, ratio "
        f"{scan['overhead_ratio']})")
