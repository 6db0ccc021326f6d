"""The files of a scan: every C file a build compiled (from its Kbuild
commands) and what one file's measurement holds (measure_one runs the
analyzer on a file, as a remote Dask worker does; result_of makes the
record of the analyzer's output, as kbuildscan does for kx-cc's), then
the scan's figures (summary) and where the cache keeps it (keep)."""
import json
import statistics
import time
from pathlib import Path

from kbuild import build, kcmd, sandbox
from kbuild import proc
from kbuild.proc import run
from kbuild.util import KexpandError, log

from . import headerbuild, headers
from .expansion import analyze, tree_path

HOT_LINES = build.SCAN_TOP   # the hottest source lines kept per file (make check reports them)


def compile_commands(tree, bdir):
    """compile_commands.json from the tree's own generator, C files only."""
    out = bdir / "compile_commands.json"
    gen = tree / "scripts/clang-tools/gen_compile_commands.py"
    if gen.exists():
        run(sandbox.wrap(["/usr/bin/python3", str(gen), "-d", str(bdir), "-o", str(out),
                          "--log_level", "ERROR"], bdir),
            cwd=bdir, what="gen_compile_commands.py")
        try:
            entries = json.loads(out.read_text())
        except ValueError as e:
            raise KexpandError(f"{gen} wrote a {out.name} that is not JSON ({e})",
                               "infra")
    else:   # a tree without the generator: read the .cmd files ourselves
        entries = []
        for cmd in bdir.rglob(".*.o.cmd"):
            obj = cmd.relative_to(bdir).with_name(cmd.name[1:-4])
            src = str(obj)[:-2] + ".c"
            try:
                argv = kcmd.compile_command(bdir, src)
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
        argv = kcmd.unwrapped(e.get("arguments") or kcmd.split(e["command"]))
        out_entries.append((str(rel), argv))
    return one_per_file(out_entries)


def one_per_file(entries):
    """A C file Kbuild compiles into more than one object (6.1's defconfig
    builds lib/ctype.c and lib/cmdline.c a second time for the EFI stub,
    with other flags) is measured once, with the command of the object
    beside it (lib/ctype.o), else of the first object in sorted order:
    the records are per C file, and two results under one name would
    leave whichever came last."""
    chosen = {}
    for rel, argv in sorted(entries):
        own = kcmd.output_file(argv) == rel[:-2] + ".o"
        if rel not in chosen or (own and not chosen[rel][0]):
            chosen[rel] = (own, argv)
    return sorted((rel, argv) for rel, (_own, argv) in chosen.items())


def measure_one(bdir, rel, argv):
    """One file through the analyzer (the engine's pipe), its -E as a
    Kbuild-driven scan's kx-cc runs it (build.scan_preprocess_command), so
    that a Dask worker's result is a local scan's; a file that does not
    preprocess is recorded as an error, not a failed scan. "inc": its
    bytes by header and include entries (headers.record), which the scan
    keeps beside its record (keep()), not in it."""
    t0 = time.monotonic()
    try:
        a, _ = analyze(build.scan_preprocess_command(argv), bdir, top=HOT_LINES,
                       headers=True)
    except KexpandError as e:
        if e.klass == "infra":
            raise
        # reason: error, or the limit it hit (proc.pipe: time or memory)
        return rel, {"status": "error", "error": str(e)[-2000:],
                     "reason": getattr(e, "limit", "error"),
                     "seconds": round(time.monotonic() - t0, 4)}
    return rel, result_of(a, time.monotonic() - t0)


def result_of(a, secs):
    """A file's scan result from the analyzer's output `a` and the
    seconds its pipe took (measure_one; a Kbuild-driven scan's kx-cc)."""
    hot = [{"at": f"{tree_path(t['file'])}:{t['line']}", "bytes": t["bytes"]}
           for t in a["top"]]
    return {"status": "ok", "bytes": a["bytes"], "lines": a["lines"],
            "longest_line_bytes": a["longest_line_bytes"],
            "hot": hot[0] if hot else None, "hot_lines": hot,
            "seconds": round(secs, 4), "inc": headers.record(a)}


def keep(cache, key, scan):
    """Cache a scan under `key`: its per-file header records (large: every
    header of every file) beside it under key-headers, the record itself
    small. Takes them out of `scan` (which goes to results/) either way;
    a scan that hit a limit is not cached (cacheable)."""
    inc = scan.pop("file_headers", None)
    if cacheable(scan):
        if inc is not None:
            cache.put_packed(f"{key}-headers", inc)
        cache.put(key, scan)
    return inc


def file_headers(cache, key):
    """{file: headers.record} of the scan cached under `key` ({} if none).
    A scan whose records are gone (a damaged entry) is forgotten too, so
    that the next run makes it again, records and all."""
    inc = cache.get_packed(f"{key}-headers")
    if inc is None and cache.get(key) is not None:
        log(f"the scan cached as {key} has no per-file header records: it will be made again")
        cache.drop(key)
    return inc or {}




def cacheable(scan):
    """A scan in which no file hit a limit: one that did may pass with
    higher limits (E_TIME_LIMIT=, E_MEM_LIMIT=) or on a quieter machine,
    so that scan is measured again next time, not read from the cache."""
    return not any(v.get("reason") in proc.LIMITS_HIT for v in scan["files"].values())


def summary(files, measured, wall, workers):
    """The scan record's figures: files {rel: result}, `measured` the ones
    measured now (the rest reused), wall seconds, and the ideal time
    (measured files x their median time / workers) it is compared with."""
    inc = {rel: v.pop("inc") for rel, v in files.items() if "inc" in v}
    ok = [v for v in files.values() if v["status"] == "ok"]
    secs = [files[rel]["seconds"] for rel in measured]
    med = statistics.median(secs) if secs else 0.0
    ideal = len(measured) * med / workers
    return {"files": files, "n_files": len(files), "n_ok": len(ok),
            "n_measured": len(measured), "n_reused": len(files) - len(measured),
            "total_bytes": sum(v["bytes"] for v in ok),
            "measured_seconds": round(sum(secs), 2),
            "scan_seconds": round(wall, 2), "workers": workers,
            "median_file_seconds": round(med, 4),
            "ideal_seconds": round(ideal, 2),
            "overhead_ratio": round(wall / ideal, 3) if ideal else None,
            # bytes by header and include entry over the build (headers.py)
            "headers": headerbuild.aggregate(inc[rel] for rel in sorted(inc)),
            "file_headers": inc}


