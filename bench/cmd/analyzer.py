"""make bench-analyzer: the throughput of kx-analyze, and its cost next to
the `gcc -E` it reads, as a scan runs it (setup.c at laight-v4); then
what bytes by header (-H and the per-file records) add to a scan
(measure/headercost.py, on the Kbuild-driven scan of the same point)."""
import shlex
import sys

from kbuild import build, builddir, kcmd, sandbox, series, workdir
from kbuild.proc import run
from kbuild.util import KexpandError, atomic_write_json

from .. import results
from ..measure import headercost, kbuildscan, timing
from ..measure.expansion import ANALYZER
from .inputs import prepared_points


def cmd_analyzer_bench(req, case, point="laight-v4", file="arch/x86/xen/setup.c"):
    """Throughput of kx-analyze on a file in the page cache, and its cost
    relative to the -E it analyzes: setup.c at laight-v4 (gcc)."""
    with workdir.lock(req.work):
        todo, _pkg, commits, _w = prepared_points(req, case, [point])
        tree, commit = workdir.tree(req.work), commits[point]
        bdir = build.build_dir(tree, commit, "gcc")
        series.checkout(tree, commit)
        b = builddir.build_objects(tree, bdir, "gcc", build.case_config(req, case),
                                   [kcmd.obj_of(file)], req.jobs)
        if not b.ok:
            raise KexpandError(f"building {file} failed:\n{b.log_tail}", "build")
        argv = kcmd.compile_command(bdir, file)
        # the -E a scan runs (kx-cc's flags: no macro tracking for gcc)
        pcmd = build.scan_preprocess_command(argv)
        sample = workdir.scratch(req.work) / "analyzer-sample.i"
        sample.parent.mkdir(parents=True, exist_ok=True)
        with open(sample, "wb") as out:
            run(sandbox.wrap(pcmd, bdir), cwd=bdir, stdout=out,
                what=f"preprocessing {file}", klass="build")
        size = sample.stat().st_size
        # the paths reach the shell as arguments, never as shell text
        # (none of these takes a minute here; the limits end a hang)
        ana = timing.hyperfine(["sh", "-c", 'exec "$0" -n 5 < "$1"', str(ANALYZER),
                                str(sample)], req.work, runs=req.repeat, warmup=2,
                               timeout=1800)
        cat = timing.hyperfine(["sh", "-c", 'exec cat < "$0" > /dev/null', str(sample)],
                               req.work, runs=req.repeat, warmup=2, timeout=1800)
        pre = timing.hyperfine(build.scan_preprocess_command(argv, "/dev/null"), bdir,
                               runs=2, warmup=0, timeout=3600, box=bdir)
        sample.unlink()
        sdir, _ = kbuildscan.make_at(tree, commit, "gcc", build.case_config(req, case),
                                     req.jobs, [kbuildscan.TARGET])
        req.progress.say(f"headers' cost on every 10th file of {sdir.name}")
        hcost = headercost.measure(tree, sdir, workdir.scratch(req.work))
    out = {"file": file, "point": point, "commit": commit,
           "bytes": size, "analyzer_median_s": ana["median_s"],
           "analyzer_mb_per_s": round(size / ana["median_s"] / 1e6, 1),
           "cat_median_s": cat["median_s"],
           "preprocess_median_s": pre["median_s"],
           "analysis_over_preprocess": round(ana["median_s"] / pre["median_s"], 5),
           "analyzer": ana, "cat": cat, "preprocess": pre, "headers_cost": hcost,
           "cpu": results.cpu_model(), "command": shlex.join(sys.argv)}
    atomic_write_json(req.results / "analyzer.json", out)
    print(f"kx-analyze: {size:,} bytes in {ana['median_s']:.3f} s (median of "
          f"{ana['runs']}, ± {ana['stddev_s']:.3f}) = {out['analyzer_mb_per_s']} MB/s; "
          f"cat: {cat['median_s']:.3f} s; gcc -E of the same file: "
          f"{pre['median_s']:.1f} s; analysis adds "
          f"{out['analysis_over_preprocess']:.2%} to -E")
    print(f"bytes by header: {hcost['files_sampled']} of {hcost['files_in_scan']} files of "
          f"the scan: -E {hcost['cpp_cpu_s']:.1f} CPU s, kx-analyze "
          f"{hcost['analyze_cpu_s']:.2f} s, with -H {hcost['analyze_headers_cpu_s']:.2f} s, "
          f"records {hcost['record_cpu_s']:.2f} s: a scan costs at most "
          + (f"{hcost['bound'] - 1:+.2%}" if hcost["bound"] else "(no CPU measured)")
          + f" for them; {hcost['record_bytes_per_file']:,} B of header record per file")
    return 0
