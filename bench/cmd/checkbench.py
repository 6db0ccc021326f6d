"""make bench-check: how long make check takes here, next to its floor.
Not a test (nothing is asserted on time): three runs of make check on the
packaged tree, each a process of its own as make runs it (the measuring
command, then report.py drawing the report), timed whole, written to
results/check-bench-<config>.json.

  cold         Laight's v4 (cases/minmax/patches 0002-0006, seeds 002-006)
               on pre-6.7 in a fresh work directory: unpack, the base's
               Kbuild-driven scan, the tip's, the details
  base cached  another tip on the same base: v4 without its 5/5, posted
               again as v5 1/4..4/4 (next_version), as the next version
               of a series would be: only the tip and its details are new
  one .c file  a one-line patch to arch/x86/xen/setup.c, base cached

The floor of a run is the sum of the per-file -E seconds it measured (the
scans' own figures) divided by the cores: what the preprocessing alone
costs on this machine. The fresh work directory is made next to
KEXPAND_WORK (kexpand-check-bench-<time>) and kept; so are the three
checks' reports, in kexpand-check-bench-<time>-results (not in results/:
they are timings' by-products, and a scan's record there would be
rewritten from another work dir)."""
import datetime
import json
import os
import re
import sys
import time
from pathlib import Path

from kbuild import proc, workdir
from kbuild.util import KexpandError, atomic_write, atomic_write_json, log

REPO = Path(__file__).resolve().parents[2]

PATCHES = ["0002", "0003", "0004", "0005", "0006"]
# issue 33's targets: seconds, or "<r>x": r times the run's floor
TARGETS = {"tinyconfig": {"cold": 3 * 60, "base cached": 2 * 60, "one .c file": 20},
           "defconfig": {"cold": "1.3x", "base cached": "1.2x", "one .c file": 20}}


def target_s(spec, floor):
    """A target in seconds: `spec` seconds, or r times `floor` for "<r>x"."""
    if isinstance(spec, str):
        return round(float(spec[:-1]) * floor, 1)
    return spec


ONE_C = """From: kexpand bench-check <kexpand@localhost>
Date: Mon, 1 Jan 2024 00:00:00 +0000
Subject: [PATCH] xen: a comment in setup.c

---
diff --git a/arch/x86/xen/setup.c b/arch/x86/xen/setup.c
--- a/arch/x86/xen/setup.c
+++ b/arch/x86/xen/setup.c
@@ -1,3 +1,4 @@
+/* kexpand bench-check: a one-line change to one C file */
"""


def one_c_patch(tree, out):
    """A patch adding a comment before setup.c's first line."""
    head = (Path(tree) / "arch/x86/xen/setup.c").read_text().splitlines()[:3]
    path = out / "one-c.patch"
    atomic_write(path, ONE_C + "".join(f" {line}\n" for line in head))
    return path


SUBJECT = re.compile(r"^(Subject: \[[^\]\n]*?)\bv(\d+) (\d+)/(\d+)\]", re.M)


def next_version(patches, out):
    """`patches`, posted again as the next version: the subjects' `vN n/m`
    become `vN+1 n/len(patches)`, the files written to `out` (the series
    reader refuses a 1/5..4/5 series as incomplete, rightly)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for p in map(Path, patches):
        text, n = SUBJECT.subn(lambda m: f"{m[1]}v{int(m[2]) + 1} {m[3]}/{len(patches)}]",
                               p.read_text(), count=1)
        if n != 1:
            raise ValueError(f"{p}: no 'Subject: [PATCH ... vN n/m]' line to renumber")
        paths.append(out / p.name)
        atomic_write(paths[-1], text)
    return [str(x) for x in paths]


def floor_s(req, reports, name):
    """The sum of per-file -E seconds the run's scans measured / cores."""
    total = 0.0
    for j in (reports / "check").glob(f"{name}*/check.json"):
        rec = json.loads(j.read_text())
        for d in rec["results"].values():
            for side in ("scan_base", "scan_tip"):
                total += (d[side].get("sum_file_seconds") or 0.0)
    return round(total / max(1, req.jobs), 1)


def cmd_check_bench(req, case):
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    work = req.work.parent / f"kexpand-check-bench-{stamp}"
    patches = sorted(str(p) for p in (case.dir / "patches").iterdir()
                     if p.name[:4] in PATCHES)
    runs, config = [], req.config_base if not req.kconfig else "kconfig"
    scratch = work.parent / f"kexpand-check-bench-{stamp}-patches"
    scratch.mkdir(parents=True)
    reports = work.parent / f"kexpand-check-bench-{stamp}-results"
    for label, pats, name in (("cold", patches, "bench-cold"),
                              ("base cached", next_version(patches[:-1], scratch / "v5"),
                               "bench-next"),
                              ("one .c file", None, "bench-one-c")):
        pats = pats or [str(one_c_patch(workdir.tree(work), scratch))]
        name = f"{name}-{stamp}"
        env = {k: v for k, v in os.environ.items()
               if k not in ("A", "B", "KX_GIVEN", "CONFIG", "KCONFIG")}
        env.update(KEXPAND_WORK=str(work), KEXPAND_RESULTS=str(reports), BASE="pre-6.7",
                   NAME=name, PATCHES=" ".join(pats), CASE=req.case,
                   **({"KCONFIG": str(req.kconfig)} if req.kconfig else
                      {"CONFIG": req.config_base}))
        log(f"bench-check: {label} ({len(pats)} patch(es))")
        t0 = time.monotonic()
        code = make_check(env)
        secs = round(time.monotonic() - t0, 1)
        spec, floor = TARGETS.get(config, {}).get(label), floor_s(req, reports, name)
        target = None if spec is None else target_s(spec, floor)
        runs.append({"run": label, "seconds": secs, "exit_code": code,
                     "floor_s": floor, "target": spec if isinstance(spec, str) else None,
                     "target_s": target,
                     "within_target": None if target is None else secs <= target})
        log(f"bench-check: {label}: {secs} s (floor {floor} s"
            + (f", target {target} s" + (f" = {spec} floor" if isinstance(spec, str) else "")
               if target else "") + ")")
    out = {"config": config, "jobs": req.jobs, "cpus": os.cpu_count(), "work": str(work),
           "reports": str(reports),
           "runs": runs, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
               timespec="seconds")}
    atomic_write_json(req.results / f"check-bench-{config}.json", out)
    for x in runs:
        print(f"{x['run']:12} {x['seconds']:8.1f} s   floor {x['floor_s']:7.1f} s   "
              f"target {x['target_s'] or '-'} s")
    return 0


def make_check(env):
    """What `make check` runs, with `env` as its variables: the measuring
    command, then (exit 0 or 1) report.py drawing the report. Returns
    the measuring command's exit code; one over 1 stops the benchmark."""
    code = _child([sys.executable, str(REPO / "bench/kexpand.py"), "check"], env)
    if code == 130:
        raise KeyboardInterrupt     # (the child was signalled: it said so)
    if code not in (0, 1):
        raise KexpandError(f"bench-check: make check exited {code}; its log is above",
                           "build" if code == 3 else "infra")
    if _child([sys.executable, str(REPO / "report.py"), "--check"], env) != 0:
        raise KexpandError("bench-check: report.py --check failed; its log is above",
                           "infra")
    return code


def _child(cmd, env):
    """Run cmd with the terminal's output; on an interrupt, pass SIGTERM
    on (kexpand ends its own children and exits 130) and wait for it."""
    return proc.run(cmd, env=env, check=False, capture=False,
                    on_interrupt="term").returncode
