"""Integration: the real packaged tree, real gcc. Prepares every point in a
fresh work directory (every patch must apply), then measures
arch/x86/xen/setup.c at pre-6.7, laight-v4 and the control point through
the same CLI that `make bench` uses."""
import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PY = "/usr/bin/python3"
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    if not Path("/usr/src/linux-source-6.1.tar.xz").exists():
        pytest.fail("linux-source-6.1 is not installed: run 'make test', "
                    "which installs it")
    base = tmp_path_factory.mktemp("kexpand-it")
    e = dict(os.environ, KEXPAND_WORK=str(base / "work"),
             KEXPAND_RESULTS=str(base / "results"))
    yield base, e
    subprocess.run(["rm", "-rf", str(base / "work")])


def kx(env, *args, check=True):
    p = subprocess.run([PY, str(REPO / "bench/kexpand.py"), *args], env=env,
                       capture_output=True, text=True, timeout=3000)
    if check and p.returncode != 0:
        pytest.fail(f"kexpand {args} exit {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def mk(env, target, **variables):
    """`make TARGET VAR=value ...` as a user types it."""
    p = subprocess.run(["make", "-s", "-C", str(REPO), target,
                        *(f"{k}={v}" for k, v in variables.items())],
                       env=env, capture_output=True, text=True, timeout=3000)
    if p.returncode != 0:
        pytest.fail(f"make {target} exit {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def test_every_patch_applies(env):
    base, e = env
    p = kx(e, "prepare")
    lines = dict(l.split(None, 1) for l in p.stdout.splitlines())
    assert set(lines) == {"pre-6.7", "laight-v4", "laight-v4-clamp-move",
                          "torvalds-fixes", "packaged"}
    assert not any("FAILED" in v for v in lines.values()), p.stdout
    tree = base / "work" / "tree"
    st = subprocess.run(["git", "-C", tree, "status", "--porcelain", "-uno"],
                        capture_output=True, text=True, check=True).stdout
    assert st == ""
    log = subprocess.run(["git", "-C", tree, "log", "--format=%s",
                          "packaged..torvalds-fixes"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert len(log) == 9       # pre-6.7 + 5 Laight + 3 Torvalds
    assert log[0] == "minmax: simplify and clarify min_t()/max_t() implementation"


def test_setup_c_expansion(env):
    base, e = env
    kx(e, "bench", "--points", "pre-6.7,laight-v4,laight-v4-clamp-move",
       "--files", "arch/x86/xen/setup.c", "--cc", "gcc", "--no-time", "--no-boot",
       "--no-macros")
    rows = list(csv.DictReader(open(base / "results/summary.csv")))
    by = {r["point"]: r for r in rows}
    assert set(by) == {"pre-6.7", "laight-v4", "laight-v4-clamp-move"}
    v4 = int(by["laight-v4"]["expanded_bytes"])
    pre = int(by["pre-6.7"]["expanded_bytes"])
    # the published record: 47 MB for one line (LWN), over 50 MB (e8432ac802a0)
    assert v4 >= 40_000_000
    assert int(by["laight-v4"]["longest_line_bytes"]) >= 40_000_000
    assert by["laight-v4"]["hot_line"] == "arch/x86/xen/setup.c:796"
    assert v4 >= 5 * pre
    # the control point: a pure code move expands byte for byte the same
    assert by["laight-v4-clamp-move"]["expanded_bytes"] == by["laight-v4"]["expanded_bytes"]
    rec = json.load(open(next((base / "results").glob("*/gcc.json"))))
    assert rec["package"].startswith("linux-source-6.1 6.1.")
    e0 = rec["files"]["arch/x86/xen/setup.c"]
    assert e0["command"].startswith("cd kb-") and "-E -o -" in e0["command"]
    assert e0["hot_lines"][0]["source"].startswith("extra_pages = min3(")


def test_second_run_uses_cache(env):
    """The same bench again measures nothing: nothing built, preprocessed,
    checked out or cached anew (summary.csv alone would be the same either
    way: the bytes are exact)."""
    base, e = env
    before = (base / "results/summary.csv").read_text()
    cache = {p.name: p.stat().st_mtime_ns for p in (base / "work/cache").iterdir()}
    head = subprocess.run(["git", "-C", base / "work/tree", "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout
    p = kx(e, "bench", "--points", "pre-6.7,laight-v4,laight-v4-clamp-move",
           "--files", "arch/x86/xen/setup.c", "--cc", "gcc", "--no-time", "--no-boot",
           "--no-macros")
    assert "building" not in p.stderr and "preprocessing" not in p.stderr
    assert {p.name: p.stat().st_mtime_ns for p in (base / "work/cache").iterdir()} == cache
    assert subprocess.run(["git", "-C", base / "work/tree", "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout == head
    assert (base / "results/summary.csv").read_text() == before


def test_unknown_point_is_user_error(env):
    base, e = env
    p = kx(e, "bench", "--points", "v6.6", check=False)
    assert p.returncode == 2
    assert "unknown point v6.6" in p.stderr and "laight-v4" in p.stderr
    assert "Traceback" not in p.stderr


def test_macros_of_setup_c(env):
    """gcc at laight-v4: every byte of setup.c's 50 MB in one row, the
    rows adding up exactly. clang at the packaged point: the outermost macro of the hottest line holds that
    line's bytes within 1%, and the stacks nest min3 > ... > min >
    __careful_cmp (laight-v4's 47 MB line, with clang: the reference run)."""
    base, e = env
    kx(e, "bench", "--points", "laight-v4", "--files", "arch/x86/xen/setup.c",
       "--cc", "gcc", "--no-time", "--no-boot")
    kx(e, "bench", "--points", "packaged", "--files", "arch/x86/xen/setup.c",
       "--cc", "clang", "--no-time", "--no-boot")
    tree = base / "work/tree"
    rev = lambda t: subprocess.run(["git", "-C", tree, "rev-parse", t],  # noqa: E731
                                   capture_output=True, text=True).stdout.strip()
    g = json.load(open(base / f"results/{rev('laight-v4')[:12]}/gcc.json"))
    e0 = g["files"]["arch/x86/xen/setup.c"]
    m = e0["macros"]
    assert m["status"] == "ok" and m["bytes"] == e0["expanded_bytes"] > 40_000_000
    assert sum(m["classes"].values()) + m["macro_bytes"] == m["bytes"]
    assert sum(x["own_bytes"] for x in m["macros"]) + m["other_macros_bytes"] == \
        m["macro_bytes"]
    line = m["hot_line"]
    assert line["at"] == "arch/x86/xen/setup.c:796"
    assert line["bytes"] == e0["hot_lines"][0]["bytes"]
    # the leaves that CONFIG_X86_5LEVEL's MAXMEM brings, copied by every
    # nested min(); static_assert's #expr strings are over a tenth of it
    assert {"CHECK_BIT_IN_MASK_WORD", "X86_FEATURE_LA57"} <= \
        {x["name"] for x in line["macros"][:3]}
    assert line["classes"]["<stringified>"] > 0.1 * line["bytes"]
    c = json.load(open(base / f"results/{rev('packaged')[:12]}/clang.json"))
    e1 = c["files"]["arch/x86/xen/setup.c"]
    line = e1["macros"]["hot_line"]
    assert line["at"] == e1["hot_lines"][0]["at"] == "arch/x86/xen/setup.c:796"
    outer = {x["name"]: x for x in line["macros"]}["min3"]
    assert abs(outer["inclusive_bytes"] - e1["hot_lines"][0]["bytes"]) <= \
        0.01 * e1["hot_lines"][0]["bytes"]
    # 6.1.192's min3() is __careful_op3(), which nests min() and __careful_cmp()
    assert any(s.startswith("arch/x86/xen/setup.c:796;min3;__careful_op3;min;"
                            "__careful_cmp") for s, _ in line["stacks"])
    assert all(s == "arch/x86/xen/setup.c:796" or
               s.startswith("arch/x86/xen/setup.c:796;min3") for s, _ in line["stacks"])
    assert sum(b for _, b in line["stacks"]) == line["bytes_est"]
    subprocess.run([PY, str(REPO / "report.py"), "--results", str(base / "results")],
                   env=e, check=True, capture_output=True)
    # named by the point's place in the series (packaged is the case's last)
    assert len(list((base / "results/plots").glob(
        "flame-arch_x86_xen_setup.c-*-packaged.svg"))) == 1
    rows = [r for r in csv.DictReader(open(base / "results/macros.csv"))
            if r["point"] == "laight-v4" and r["compiler"] == "gcc"
            and r["file"] == "arch/x86/xen/setup.c"]
    assert sum(int(r["own_bytes"]) for r in rows) == e0["expanded_bytes"]


def test_compare_series_points(env):
    base, e = env
    mk(e, "compare", A="laight-v4", B="torvalds-fixes",
       FILES="arch/x86/xen/setup.c", CC="gcc", NO_TIME=1)
    [out] = (base / "results/compare").glob("laight-v4..torvalds-fixes@gcc@files-*")
    row = next(csv.DictReader(open(out / "compare.csv")))
    assert row["file"] == "arch/x86/xen/setup.c"
    assert float(row["bytes_ratio"]) <= 0.1          # the fix: >= 10x smaller
    md = (out / "report.md").read_text()
    assert "x smaller" in md and "extra_pages = min3(" in md
    assert (out / "bytes-gcc.png").exists()
    assert (base / "results/index.html").exists()
    # what changed: Torvalds split setup.c's line 796 in two; the line is
    # named at A and where it went in B (797), with its bytes
    top = json.load(open(out / "lines.json"))["lines"][0]
    assert (top["at_a"], top["at_b"]) == ("arch/x86/xen/setup.c:796",
                                          "arch/x86/xen/setup.c:797")
    assert top["bytes_a"] >= 40_000_000 > top["bytes_b"] > 0


def test_bisect_names_a_laight_patch(env):
    """Over Laight's 3/5..5/5: per-commit bytes as published in the
    reference run, and 5/5 is the first past the geometric mean."""
    base, e = env
    tree = base / "work/tree"
    p = kx(e, "bisect", "--file", "arch/x86/xen/setup.c", "--good", "laight-v4~2",
           "--bad", "laight-v4")
    res = json.load(open(next((base / "results/bisect").glob("*/*.json"))))
    v4 = subprocess.run(["git", "-C", tree, "rev-parse", "laight-v4"],
                        capture_output=True, text=True).stdout.strip()
    assert res["first_bad"] == v4
    assert res["first_bad_subject"].startswith("minmax: Relax check to allow comparison")
    assert [c["bytes"] for c in res["per_commit"]] == [9_074_505, 19_569_217, 50_695_801]
    assert res["agrees_with_per_commit_measurements"]
    assert "first commit past" in p.stdout
    # the measured tree has no bisect state and no local change left behind
    for args in (["for-each-ref", "refs/bisect"], ["status", "--porcelain", "-uno"]):
        assert subprocess.run(["git", "-C", tree, *args], capture_output=True,
                              text=True, check=True).stdout == ""
    assert not (tree / ".git/BISECT_LOG").exists()


LAIGHT_V4 = ["0002", "0003", "0004", "0005", "0006"]      # seeds 002-006, as-is


def check_rows(d):
    return {r["file"]: r for r in csv.DictReader(open(d / "check.csv"))}


def test_check_catches_laight_v4(env):
    """make check of Laight's v4 (seeds 002-006) on pre-6.7, tinyconfig:
    exit 1; setup.c first, its line 796, the growth at patches 2, 4 and 5;
    compaction.c flagged too. (Macros and counts are left to the by-hand
    run in the README: they add minutes, not a new path.)"""
    base, e = env
    patches = " ".join(str(p) for p in sorted((REPO / "cases/minmax/patches").iterdir())
                       if p.name[:4] in LAIGHT_V4)
    p = subprocess.run(["make", "-s", "-C", str(REPO), "check", f"PATCHES={patches}",
                        "BASE=pre-6.7", "CC=gcc", "NO_MACROS=1", "ICOUNT_CAP=0"],
                       env=e, capture_output=True, text=True, timeout=3000)
    assert "Error 1" in p.stderr and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert "Kbuild measures at the tip what the series changed" in p.stderr
    [d] = (base / "results/check").iterdir()
    rec = json.load(open(d / "check.json"))
    regs = rec["results"]["gcc"]["regressions"]
    assert regs[0]["file"] == "arch/x86/xen/setup.c"
    assert regs[0]["bytes_base"] == 4_238_027 and regs[0]["bytes_tip"] == 50_695_801
    assert regs[0]["hot_lines_tip"][0]["at"] == "arch/x86/xen/setup.c:796"
    grew = [s["patch"] for s in regs[0]["per_patch"] if s["ratio"] and s["ratio"] > 1.5]
    assert grew == [2, 4, 5]
    assert "mm/compaction.c" in [r["file"] for r in regs]
    txt = (d / "report.txt").read_text()
    assert txt.startswith("Subject: [kexpand] arch/x86/xen/setup.c: -E +1096.2%")
    assert "arch/x86/xen/setup.c:796" in txt and "reproduce:" in txt
    # the whole build grew too (both rules), and setup.c alone made most of it
    w = rec["results"]["gcc"]["whole_build"]
    rows = check_rows(d)
    assert w["bytes_base"] == sum(int(r["bytes_base"]) for r in rows.values() if r["bytes_base"])
    assert w["bytes_tip"] == sum(int(r["bytes_tip"]) for r in rows.values() if r["bytes_tip"])
    assert rec["rules"] == ["file", "whole build"] and w["leads"] == "file"
    # (v4's bytes land where min() is used: setup.c's own line 796, and the
    # headers whose inline functions call it, not minmax.h's own lines)
    assert w["change"] > 0.04 and w["headers"]["top"]["own_growth"] > 0
    assert "whole build:" in txt


def test_a_scan_runs_no_step_that_reads_its_empty_objects(env):
    """A scan's objects are empty (kx-cc), so a scan dir's make leaves out
    the steps that would only read them (build.SCAN_SKIP): objtool, which
    6.1 chains to the compile and records, and check-local-export (nm,
    awk). No C object of the v4 check's scans runs objtool in its command;
    one object made again with V=1 runs the wrapper and neither step."""
    from kbuild import build, builddir, series
    base, _ = env
    tree = base / "work" / "tree"
    assert "cmd_check_local_export" in (tree / "scripts/Makefile.build").read_text()
    assert "cmd_objtool = " in (tree / "scripts/Makefile.lib").read_text()
    sdirs = sorted(tree.glob("ks-*-gcc"))
    cmds = [p for d in sdirs for p in d.glob("mm/.*.o.cmd")]
    assert sdirs and len(cmds) > 20
    # a config whose build runs objtool on each object (not delayed to
    # the link, as IBT or clang's LTO would)
    config = (sdirs[0] / ".config").read_text().splitlines()
    assert "CONFIG_OBJTOOL=y" in config
    assert "CONFIG_X86_KERNEL_IBT=y" not in config and "CONFIG_LTO_CLANG=y" not in config
    run = "tools/objtool/objtool"           # (a header linux/objtool.h is no run)
    assert [p for p in cmds if run in p.read_text()] == []
    sdir = sdirs[0]
    series.checkout(tree, builddir.made_at(sdir))
    (sdir / "mm/.page_alloc.o.cmd").unlink()
    b = build.build(tree, sdir, "gcc", ["mm/page_alloc.o"], 2, keep_going=False,
                    seeded=True, variables=("V=1",))
    ours = [line for line in b.log_tail.splitlines() if "page_alloc.o" in line]
    assert b.ok and any("kx-cc gcc" in line for line in ours), b.log_tail
    assert [line for line in ours if run in line or "check-local-export" in line] == []


def spread_patch(tree):
    """minmax.h at pre-6.7 gains a macro that defines typed min/max/clamp
    helpers for eight integer types: every file that includes it grows a
    little (the shape issue 31 describes on 6.12), as a mail."""
    old = subprocess.run(["git", "-C", tree, "show", "pre-6.7:include/linux/minmax.h"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    end = old.index("#endif\t/* _LINUX_MINMAX_H */")
    new = (["#define __DEFINE_MINMAX_HELPERS(type) \\",
            "static inline type min_##type##_of(type a, type b) { return min(a, b); } \\",
            "static inline type max_##type##_of(type a, type b) { return max(a, b); } \\",
            "static inline type clamp_##type##_of(type v, type lo, type hi) "
            "{ return clamp(v, lo, hi); }"]
           + [f"__DEFINE_MINMAX_HELPERS({t})" for t in
              ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")] + [""])
    hunk = [f" {line}" for line in old[end - 3:end]] + [f"+{line}" for line in new] + \
        [f" {old[end]}"]
    return ("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            "From: A Developer <a@example.org>\nDate: Mon, 18 Sep 2023 08:16:30 +0000\n"
            "Subject: [PATCH] minmax: typed helpers for eight integer types\n\nWhy.\n---\n"
            "diff --git a/include/linux/minmax.h b/include/linux/minmax.h\n"
            "--- a/include/linux/minmax.h\n+++ b/include/linux/minmax.h\n"
            f"@@ -{end - 2},4 +{end - 2},{4 + len(new)} @@\n" + "\n".join(hunk) +
            "\n-- \n2.39.5\n\n")


def test_check_a_spread_patch_is_the_whole_build_rule(env):
    """The spread patch on pre-6.7 (its base scan is the v4 check's): exit
    1 on the whole-build rule; the subject and first table row lead with
    the whole build, minmax.h is the top header, and the file where it
    grew most is explained with its macros (gcc's own bytes)."""
    base, e = env
    mbox = base / "spread.mbox"
    mbox.write_text(spread_patch(base / "work" / "tree"))
    p = subprocess.run(["make", "-s", "-C", str(REPO), "check", f"PATCHES={mbox}",
                        "BASE=pre-6.7", "CC=gcc", "ICOUNT_CAP=0", "NAME=spread"],
                       env=e, capture_output=True, text=True, timeout=3000)
    assert "Error 1" in p.stderr and "Traceback" not in p.stderr, p.stderr[-3000:]
    [d] = (base / "results/check").glob("spread@*")       # NAME= and its identity
    rec = json.load(open(d / "check.json"))
    w = rec["results"]["gcc"]["whole_build"]
    assert "whole build" in rec["rules"] and w["leads"] == "whole build", w
    assert w["files_grown"] > 500 and w["change"] > 0.005
    top = w["headers"]["top"]
    assert top["header"] == "include/linux/minmax.h" and top["files"] > 500
    assert top["per_file_median"] < 64 * 1024
    assert w["witness"]["file"] == top["file_most"]
    # the witness's hottest line of minmax.h is a line the patch added
    fl = w["witness"]["macros_tip"]["focus_line"]
    assert fl["at"].startswith("include/linux/minmax.h:"), fl
    assert fl["source"].startswith("__DEFINE_MINMAX_HELPERS("), fl
    assert w["witness"]["macros_tip"]["hot_line"]["at"] == fl["at"]
    txt = (d / "report.txt").read_text()
    assert txt.startswith("Subject: [kexpand] whole build: -E +"), txt[:500]
    lines = txt.splitlines()
    first = lines[lines.index("---------------- --------------- ----------------") + 1]
    assert first.endswith("whole build"), txt[:3000]
    assert "include/linux/minmax.h own bytes +" in txt
    assert "macros of include/linux/minmax.h:" in txt and "__DEFINE_MINMAX_HELPERS(" in txt, \
        txt[:6000]


def test_track_of_the_case_history_points_at_the_bisected_patches(env):
    """make track over the case's own history, pre-6.7..laight-v4 (every
    commit: pre-6.7 and Laight's five patches), setup.c: the interesting
    changes are exactly Laight's 2/5, 4/5 and 5/5, the commits make bisect
    finds between the sizes before and after each (the bytes come from the
    cache the tests above filled; counts are left out here: ICOUNT_CAP=0)."""
    base, e = env
    mk(e, "track", RANGE="pre-6.7..laight-v4", FILES="arch/x86/xen/setup.c", CC="gcc",
       ICOUNT_CAP="0", NO_MACROS="1", NAME="laight")
    [d] = (base / "results/track").glob("laight*")
    rec = json.load(open(d / "track.json"))
    subj = [c["subject"] for c in rec["commits"]]
    assert len(subj) == 6 and subj[1].startswith("minmax: Add umin")
    flagged = [subj.index(i["subject"]) for i in rec["interesting"]
               if i["metric"] == "bytes"]
    assert sorted(flagged) == [2, 4, 5]
    assert (d / "bytes-gcc.csv").exists() and (d / "interesting.md").exists()
