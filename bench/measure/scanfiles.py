"""The files of a scan: every C file a build compiled (from its Kbuild
commands), each measured once through the analyzer, and each keyed by
its inputs, so that a file whose inputs were measured before (at any
commit) is not measured again. The per-file work is handed to a mapper
(dist.py runs it on Dask); this module knows nothing of Dask."""
import hashlib
import json
import os
import shlex
import statistics
import time
from pathlib import Path

from kbuild import kcmd, sandbox
from kbuild.proc import run
from kbuild.util import KexpandError

from . import headerbuild, headers
from .expansion import analyze, tree_path

HOT_LINES = 5       # the hottest source lines kept per file (make check reports them)


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
        argv = e.get("arguments") or shlex.split(e["command"])
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
    """One file through the analyzer (the engine's pipe); a file that does
    not preprocess is recorded as an error, not a failed scan. "inc": its
    bytes by header and include entries (headers.record), which the scan
    keeps beside its record (keep()), not in it."""
    t0 = time.monotonic()
    try:
        a, _ = analyze(kcmd.preprocess_command(argv), bdir, top=HOT_LINES, headers=True)
    except KexpandError as e:
        if e.klass == "infra":
            raise
        # reason: error, or the limit it hit (proc.pipe: time or memory)
        return rel, {"status": "error", "error": str(e)[-2000:],
                     "reason": getattr(e, "limit", "error"),
                     "seconds": round(time.monotonic() - t0, 4)}
    secs = time.monotonic() - t0
    hot = [{"at": f"{tree_path(t['file'])}:{t['line']}", "bytes": t["bytes"]}
           for t in a["top"]]
    return rel, {"status": "ok", "bytes": a["bytes"], "lines": a["lines"],
                 "longest_line_bytes": a["longest_line_bytes"],
                 "hot": hot[0] if hot else None, "hot_lines": hot,
                 "seconds": round(secs, 4), "inc": headers.record(a)}


def _digest(path, memo):
    k = os.path.normpath(path)
    if k not in memo:
        try:
            with open(k, "rb") as f:
                memo[k] = hashlib.sha256(f.read()).digest()
        except OSError:
            memo[k] = b"-"
    return memo[k]


# headers fixdep leaves out of the lists (scripts/basic/fixdep.c)
UNLISTED = ["include/generated/autoconf.h", "include/generated/autoksyms.h"]


# what a build leaves in a directory and no source includes: objects,
# archives, Kbuild's dot files (.x.o.cmd, .x.o.d), lists. Left out of the
# listings, so that a dir with objects (a full build) and one without
# (make check's prepared copy) list the same headers.
BUILD_PRODUCT = (".o", ".a", ".ko", ".mod", ".order", ".symvers", ".lto")


def _listed(name):
    return not name.startswith(".") and not name.endswith(BUILD_PRODUCT)


def _listing(dirs, memo):
    """The names of every file under `dirs` ([(name as the command gives
    it, path)]; recursively, the last one only at its top) but the build's
    products (BUILD_PRODUCT): a header added where the include path would
    find it first, or one that a __has_include() looked for, changes it.
    Only relative names go into the hash: the build dir's own name must
    not."""
    k = ("listing",) + tuple(dirs)
    if k not in memo:
        h = hashlib.sha256()
        for i, (label, d) in enumerate(dirs):
            h.update(f"{label}\0".encode())
            for root, subdirs, names in os.walk(d):
                subdirs.sort()
                if i == len(dirs) - 1:
                    subdirs[:] = []
                for n in sorted(filter(_listed, names)):
                    h.update(os.path.relpath(os.path.join(root, n), d).encode() + b"\0")
        memo[k] = h.digest()
    return memo[k]


def input_key(bdir, rel, argv, memo):
    """What a file's -E output is a function of: its command, the length of
    the build dir's path (line markers name the working directory when -g
    is on), the config (autoconf.h and autoksyms.h, which fixdep leaves
    out), the content of every file its Kbuild dependency list names, and
    the names of the files in its -I directories and its own directory
    (a new header that would be found first, or that a __has_include()
    looks for). Equal keys, equal bytes: a file whose key was measured
    before (at another commit) is not measured again. None when the .cmd
    has no dependency list."""
    try:
        deps = kcmd.dependencies(kcmd.cmd_file(bdir, rel))
    except OSError:
        return None
    if deps is None:
        return None
    h = hashlib.sha256(json.dumps([argv, len(str(bdir))]).encode())
    for d in UNLISTED + sorted(set(deps)):
        h.update(d.encode() + b"\0" + _digest(Path(bdir) / d, memo) + b"\0")
    # the file's own object dir (6.12: -I mm, Makefile.lib) is left out: it
    # comes last on the include path, after every dir that holds a header,
    # and holds only what the build made for that dir (objects, lists,
    # images, generated .c and .h files, a full build more than make
    # check's prepared copy); a header there that the file reads is in its
    # dependency list, content and all
    obj = os.path.normpath(os.path.join(bdir, os.path.dirname(rel)))
    dirs = [(d, p) for d in kcmd.include_dirs(argv)
            for p in [os.path.normpath(os.path.join(bdir, d))] if p != obj]
    src = "../" + os.path.dirname(rel)
    h.update(_listing(dirs + [(src, os.path.normpath(os.path.join(bdir, src)))], memo))
    return h.hexdigest()


def scan_build(tree, bdir, mapper, workers, progress=None, known_seconds=None,
               reuse=None, entries=None):
    """Every C file the build in bdir compiled, through the analyzer.
    mapper([(rel, argv)]) -> {rel: result} runs measure_one on `workers`
    workers (dist.local_map on a Dask cluster whose workers share this
    machine's work directory). known_seconds: {file: seconds} from earlier measurements of this
    commit; those files start first, longest first, so that one slow file
    (setup.c's 30 s at laight-v4) does not run alone at the end.
    reuse: (cache, compiler, compiler version): files whose inputs were
    measured before take that measurement (input_key). entries: the
    [(rel, argv)] to measure in bdir instead of bdir's own (make check's
    fast path: a prepared copy measured with its full build's commands)."""
    entries = list(entries) if entries is not None else compile_commands(tree, bdir)
    known = known_seconds or {}
    entries.sort(key=lambda e: -known.get(e[0], 0.0))
    if not entries:
        raise KexpandError(f"no compiled C files found in {bdir}: build the "
                           "point first", "build")
    n = len(entries)
    t0 = time.monotonic()
    files, keys, memo = {}, {}, {}
    if reuse:
        cache, cc, ccver = reuse
        for rel, argv in entries:
            keys[rel] = input_key(bdir, rel, argv, memo)
            hit = cache.get(cache.scanfile_key(cc, ccver, keys[rel])) if keys[rel] else None
            if hit and hit.get("status") == "ok":
                files[rel] = hit
    todo = [e for e in entries if e[0] not in files]
    if progress:
        progress.say(f"  scanning {len(todo)} C files with {workers} Dask workers"
                     + (f" ({len(files)} of {n} unchanged since measured: reused)"
                        if files else ""))
    for rel, res in mapper(todo).items():
        files[rel] = res
        if reuse and keys.get(rel) and res["status"] == "ok":
            cache.put(cache.scanfile_key(cc, ccver, keys[rel]), res)
    return summary(files, [rel for rel, _ in todo], time.monotonic() - t0, workers)


def keep(cache, key, scan):
    """Cache a scan under `key`: its per-file header records (large: every
    header of every file) beside it under key-headers, the record itself
    small. Takes them out of `scan` (which goes to results/) either way;
    a scan that hit a limit is not cached (cacheable)."""
    inc = scan.pop("file_headers", None)
    if cacheable(scan):
        if inc is not None:
            cache.put(f"{key}-headers", inc)
        cache.put(key, scan)
    return inc


def file_headers(cache, key):
    """{file: headers.record} of the scan cached under `key` ({} if none)."""
    return cache.get(f"{key}-headers") or {}


LIMITS_HIT = ("time limit", "memory limit")


def cacheable(scan):
    """A scan in which no file hit a limit: one that did may pass with
    higher limits (E_TIME_LIMIT=, E_MEM_LIMIT=) or on a quieter machine,
    so that scan is measured again next time, not read from the cache."""
    return not any(v.get("reason") in LIMITS_HIT for v in scan["files"].values())


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


