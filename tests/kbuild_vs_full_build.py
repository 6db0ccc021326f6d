#!/usr/bin/python3
"""By hand (too long for make test): a Kbuild-driven scan of one commit
against the full-build engine's, file for file. The Kbuild-driven scan is
kexpand's (scanpoint.scan_point: one make with kx-cc, cached like any
scan); the full build is what a Dask worker does (builddir.ensure_kernel,
the tree's compile_commands.json, every C file through the analyzer).

  KEXPAND_WORK=<work> tests/kbuild_vs_full_build.py OUT REF [KERNEL=dir] [CONFIG=defconfig]

REF is a series point or any commit-ish (of KERNEL= when given). Writes
OUT/equality.json: both file sets, the files only in one, and every file
in both whose bytes differ (the expected difference: the full build
also compiles arch/x86/boot/ and init/version-timestamp.c, built from a
linked vmlinux; Kbuild's scan also has modules bzImage leaves out).
Exit 0 when every file in both has the same bytes."""
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "kernel-build")]

from bench.cmd.inputs import open_tree                 # noqa: E402
from bench.measure import scanfiles                    # noqa: E402
from bench.measure.cache import Cache                  # noqa: E402
from bench.measure.scanpoint import scan_point         # noqa: E402
from kbuild import build, builddir, series, settings, workdir  # noqa: E402
from kbuild.util import log                            # noqa: E402


def main():
    out, ref = Path(sys.argv[1]), sys.argv[2]
    args = dict(a.split("=", 1) for a in sys.argv[3:])
    out.mkdir(parents=True, exist_ok=True)
    req = settings.from_env("scan", {"kernel": args.get("KERNEL"),
                                     "config": args.get("CONFIG"), "results": str(out)})
    case = series.load_case(req.case, req.cases_dir)
    with workdir.lock(req.work):
        tree, _, label, [commit] = open_tree(req, case, [ref])
        config = build.case_config(req, case)
        t0 = time.monotonic()
        kb = scan_point(req, case, tree, None, Cache(req.work), config, ref, commit, "gcc")
        t_kb = time.monotonic() - t0
        series.checkout(tree, commit)
        bdir = build.build_dir(tree, commit, "gcc")
        t0 = time.monotonic()
        b = builddir.ensure_kernel(tree, bdir, "gcc", config, req.jobs)
        if not b.ok:
            sys.exit(f"full build failed: {b.log_tail}")
        entries = scanfiles.compile_commands(tree, bdir)
        log(f"full build {time.monotonic() - t0:.0f} s; measuring {len(entries)} files")
        with ThreadPoolExecutor(req.jobs) as pool:
            full = dict(pool.map(lambda e: scanfiles.measure_one(bdir, *e), entries))
        t_full = time.monotonic() - t0
    a = {f: e.get("bytes") for f, e in kb["files"].items()}
    f_ = {f: e.get("bytes") for f, e in full.items()}
    both = sorted(set(a) & set(f_))
    differ = [{"file": f, "kbuild": a[f], "full": f_[f]} for f in both if a[f] != f_[f]]
    res = {"tree": label, "ref": ref, "commit": commit, "config": config.describe(),
           "kbuild_files": len(a), "full_files": len(f_), "in_both": len(both),
           "only_kbuild": sorted(set(a) - set(f_)), "only_full": sorted(set(f_) - set(a)),
           "bytes_only_full": sum(f_[f] or 0 for f in set(f_) - set(a)),
           "differ": differ, "kbuild_scan_s": round(t_kb, 1),
           "full_build_and_scan_s": round(t_full, 1),
           "kbuild_total_bytes": sum(a[f] or 0 for f in both),
           "full_total_bytes": sum(f_[f] or 0 for f in both)}
    (out / "equality.json").write_text(json.dumps(res, indent=1) + "\n")
    print(f"{label} {ref} ({commit[:12]}), {config.describe()}: Kbuild {len(a)} files, "
          f"full build {len(f_)}; {len(both)} in both, {len(differ)} with other bytes; "
          f"only Kbuild {len(res['only_kbuild'])}, only full {len(res['only_full'])}; "
          f"{res['kbuild_total_bytes']:,} B in both (Kbuild scan {t_kb:.0f} s, "
          f"full build + scan {t_full:.0f} s)")
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
