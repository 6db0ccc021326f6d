"""What bytes by header add to a scan (issue 31's cost bound): on a sample
of a Kbuild-driven scan's files (every `every`-th in name order), each
file's exact `-E` output is analyzed with and without `-H`, and its
per-file header record (headers.record, what the scan keeps) is made from
the `-H` analysis. Against a scan without headers, a scan with them pays
the difference of the two analyzer runs and the record; the rest of a
scan (the preprocessor, make, fixdep, objtool, the empty objects) is the
same either way, so (cpp + analyzer -H + record) / (cpp + analyzer) over
the sample bounds from above what headers add to the whole scan. CPU
seconds (the processes' own, best of `runs`), not wall time: the machine
is shared."""
import json
import resource
import subprocess
import time

from kbuild import kcmd, sandbox
from kbuild.proc import run
from kbuild.util import KexpandError

from . import headers, kbuildscan, scanfiles
from .expansion import ANALYZER


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _analyzer(sample, extra, runs):
    """(best CPU seconds of `runs`, the output of the last) of kx-analyze
    on the file `sample`."""
    best, out = None, b""
    for _ in range(runs):
        c0 = _children_cpu()
        with open(sample, "rb") as f:
            p = subprocess.run([str(ANALYZER), "-n", str(scanfiles.HOT_LINES), *extra],
                               stdin=f, capture_output=True)
        c = _children_cpu() - c0
        if p.returncode:
            raise KexpandError(f"kx-analyze {' '.join(extra)} failed on {sample}: "
                               f"{p.stderr.decode(errors='replace')[-500:]}", "infra")
        best, out = (c if best is None else min(best, c)), p.stdout
    return best, out


def measure(tree, sdir, scratch, every=10, runs=3):
    """The sums over the sample and the bound; `scratch` holds one file's
    -E output at a time."""
    files = scanfiles.compile_commands(tree, sdir)
    sample = files[::every]
    sums = dict.fromkeys(("cpp_cpu_s", "analyze_cpu_s", "analyze_headers_cpu_s",
                          "record_cpu_s"), 0.0)
    out_bytes = record_bytes = 0
    scratch.mkdir(parents=True, exist_ok=True)
    i_file = scratch / "headercost-sample.i"
    try:
        for rel, argv in sample:
            rec = kbuildscan.record_path(sdir, kcmd.output_file(argv))
            try:            # (kx-cc's record; a file that failed is left out)
                rec = json.loads(rec.read_text()) if rec.is_file() else {}
            except (OSError, ValueError):
                rec = {}
            if rec.get("status") != "ok":
                continue
            with open(i_file, "wb") as f:
                run(sandbox.wrap(kcmd.preprocess_command(argv), sdir), cwd=sdir, stdout=f,
                    what=f"preprocessing {rel}", klass="build")
            sums["cpp_cpu_s"] += rec.get("cpp_cpu_s") or 0.0
            out_bytes += i_file.stat().st_size
            plain, _ = _analyzer(i_file, [], runs)
            with_h, out = _analyzer(i_file, ["-H"], runs)
            a = json.loads(out)
            t0 = time.process_time()
            inc = headers.record(a)
            sums["record_cpu_s"] += time.process_time() - t0
            sums["analyze_cpu_s"] += plain
            sums["analyze_headers_cpu_s"] += with_h
            record_bytes += len(json.dumps(inc, separators=(",", ":")))
    finally:
        i_file.unlink(missing_ok=True)
    sums = {k: round(v, 3) for k, v in sums.items()}     # (the bound: from these)
    without = sums["cpp_cpu_s"] + sums["analyze_cpu_s"]
    with_headers = sums["cpp_cpu_s"] + sums["analyze_headers_cpu_s"] + sums["record_cpu_s"]
    return {"files_in_scan": len(files), "files_sampled": len(sample), "every": every,
            "runs": runs, "output_bytes": out_bytes, **sums,
            "bound": round(with_headers / without, 4) if without else None,
            "record_bytes_per_file": round(record_bytes / len(sample)) if sample else 0}
