"""make check on the fake kernel tree (tests/fakelinux): a posted series
(an mbox with a cover letter, as git format-patch writes it) against
every C file the fake build compiles; the report, the exit codes, the
threshold, a patch that does not apply, a series already committed in a
user's tree, the full-build path and the cache. Real make, git and gcc."""
import json
import subprocess

import pytest

from test_faults import FAKE, fake  # noqa: F401
from test_hostile import code, errors, mk, out

SETUP = "arch/x86/xen/setup.c"
CALLS = 300     # min3() calls patch 2/3 adds: setup.c grows past 16 KiB


def mail(n, total, subject, body, diff, day=18):
    return (f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            f"From: A Developer <a@example.org>\nDate: Mon, {day} Sep 2023 08:16:30 +0000\n"
            f"Subject: [PATCH v2 {n}/{total}] {subject}\n\n{body}\n---\n{diff}\n-- \n2.39.5\n\n")


COVER = ("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
         "From: A Developer <a@example.org>\nDate: Mon, 18 Sep 2023 08:00:00 +0000\n"
         "Subject: [PATCH v2 0/3] minmax: make min3() safer\n\nThe series.\n\n")

COMMENT_DIFF = """diff --git a/include/linux/kernel.h b/include/linux/kernel.h
--- a/include/linux/kernel.h
+++ b/include/linux/kernel.h
@@ -1,2 +1,3 @@
 /* fakelinux */
+/* kernel */
 #include <linux/minmax.h>"""

ONCE_DIFF = """diff --git a/include/linux/minmax.h b/include/linux/minmax.h
--- a/include/linux/minmax.h
+++ b/include/linux/minmax.h
@@ -2,7 +2,8 @@
 #ifndef _LINUX_MINMAX_H
 #define _LINUX_MINMAX_H
 
-#define __cmp(x, y, op)	((x) op (y) ? (x) : (y))
+#define __cmp(x, y, op)	({ typeof(x) __a = (x); typeof(y) __b = (y); \\
+	(void)(&__a == &__b); __a op __b ? __a : __b; })
 #define min(x, y)	__cmp(x, y, <)
 #define max(x, y)	__cmp(x, y, >)
 #define min3(x, y, z)	min((typeof(x))min(x, y), z)"""


def calls_diff():
    lines = "".join(f"+\textra_pages += min3(max_pfn, {i}UL, max_pages);\n" for i in range(CALLS))
    return (f"diff --git a/{SETUP} b/{SETUP}\n--- a/{SETUP}\n+++ b/{SETUP}\n"
            f"@@ -6,4 +6,{4 + CALLS} @@\n"
            " \textra_pages = min3(2 * min(max_pfn, 1UL << 40),\n"
            " \t\t\t   extra_pages, max_pages - max_pfn);\n"
            + lines + " \treturn extra_pages;\n }")


def series_mbox(path, patches, cover=True):
    text = (COVER if cover else "") + "".join(mail(i + 1, len(patches), s, "Why.", d, 18 + i)
                           for i, (s, d) in enumerate(patches))
    path.write_text(text.replace("0/3", f"0/{len(patches)}"))
    return path


BAD_SERIES = [("kernel.h: a comment", COMMENT_DIFF),
              ("xen: more min3() calls", calls_diff()),
              ("minmax: evaluate once", ONCE_DIFF)]


def check(env, **kw):
    return mk(env, "check", CASE="fake", **kw)


def test_a_series_that_blows_up_a_file_is_exit_1_with_a_report(fake, tmp_path):
    base, env = fake
    mbox = series_mbox(tmp_path / "v2.mbox", BAD_SERIES)
    p = check(env, PATCHES=mbox, BASE="before")
    assert code(p) == 1, out(p)
    assert f"REGRESSION {SETUP} (gcc)" in p.stdout
    [d] = (base / "results/check").iterdir()
    assert d.name == "minmax-make-min3-safer-v2"
    rec = json.loads((d / "check.json").read_text())
    assert rec["verdict"] == "regression" and rec["path"] == "seeded"
    [r] = rec["results"]["gcc"]["regressions"]
    assert r["file"] == SETUP and r["bytes_tip"] > r["bytes_base"] + 16 * 1024
    # the patch that grew it most, and its bytes after every patch
    assert r["grew_most"]["patch"] == 2 and r["grew_most"]["subject"] == "xen: more min3() calls"
    steps = [s["bytes"] for s in r["per_patch"]]
    assert steps[0] == r["bytes_base"] and steps[-1] == r["bytes_tip"] and steps[1] > steps[0]
    assert r["hot_lines_tip"][0]["at"].startswith(SETUP + ":")
    assert "min3" in r["hot_lines_tip"][0]["source"]
    assert r["macros_tip"]["status"] == "ok" and r["macros_grew"]
    # the macros' rows add up to the bytes the scan measured, at both sides
    assert r["macros_tip"]["bytes"] == r["bytes_tip"]
    assert r["macros_base"]["status"] == "ok" and r["macros_base"]["bytes"] == r["bytes_base"]
    assert r["macros_tip"]["hot_line"]["at"] == r["hot_lines_tip"][0]["at"]
    assert r["instructions"]["tip"]["instructions"] > r["instructions"]["base"]["instructions"]
    # the report: a robot-style mail, 72 columns, a reproduce block
    txt = (d / "report.txt").read_text()
    assert txt.startswith(f"Subject: [kexpand] {SETUP}: -E +")
    assert txt.splitlines()[1].startswith(" ")           # a folded header
    # within 72 columns, but for an argument of the reproduce block that
    # is itself longer (a path: a shell line cannot break inside it)
    assert all(len(line) <= 72 or " " not in line.strip().rstrip(" \\")
               for line in txt.splitlines()), txt
    assert "            base         %change             tip" in txt
    assert "grew most at patch 2" in txt and "reproduce:" in txt
    assert "make check CASE=fake \\\n" in txt and f"PATCHES={mbox}" in txt
    assert (d / "report.md").exists()
    csv = (d / "check.csv").read_text().splitlines()
    assert csv[0].startswith("file,compiler,verdict,bytes_base,bytes_tip")
    assert csv[1].startswith(f"{SETUP},gcc,regression,")
    # the same series again: nothing is built or measured again
    again = check(env, PATCHES=mbox, BASE="before")
    assert code(again) == 1
    assert "building" not in again.stderr and "PREPARE" not in again.stderr, again.stderr


def test_a_comment_only_series_is_exit_0(fake, tmp_path):
    base, env = fake
    mbox = series_mbox(tmp_path / "c.mbox", [("kernel.h: a comment", COMMENT_DIFF)])
    p = check(env, PATCHES=mbox, BASE="before")
    assert code(p) == 0, out(p)
    txt = next((base / "results/check").glob("*/report.txt")).read_text()
    assert "no expansion regression" in txt.splitlines()[0]


def test_threshold_decides(fake, tmp_path):
    base, env = fake
    mbox = series_mbox(tmp_path / "v2.mbox", BAD_SERIES)
    p = check(env, PATCHES=mbox, BASE="before", THRESHOLD="100000%",
              TOTAL_THRESHOLD="100000%")
    assert code(p) == 0, out(p)
    # the file rule off, the whole build's still fires: setup.c's growth
    # is the build's
    p = check(env, PATCHES=mbox, BASE="before", THRESHOLD="100000%", NAME="total")
    assert code(p) == 1 and "REGRESSION whole build (gcc)" in p.stdout, out(p)
    rec = json.loads((base / "results/check/total/check.json").read_text())
    assert rec["rules"] == ["whole build"] and not rec["results"]["gcc"]["regressions"]
    p = check(env, PATCHES=mbox, BASE="before", THRESHOLD="ten")
    assert code(p) == 2 and "THRESHOLD=" in errors(p), out(p)
    p = check(env, PATCHES=mbox, BASE="before", TOTAL_THRESHOLD="-1%")
    assert code(p) == 2 and "TOTAL_THRESHOLD=" in errors(p), out(p)


HELPERS = 80    # static inline helpers a macro of minmax.h defines: ~14 kB per file


def spread_diff():
    """minmax.h gains a macro that defines typed helpers, used HELPERS
    times: every file that includes it grows by less than 16 KiB."""
    uses = "".join(f"+__DEFINE_CLAMP(unsigned long, ul{i})\n" for i in range(HELPERS))
    return ("diff --git a/include/linux/minmax.h b/include/linux/minmax.h\n"
            "--- a/include/linux/minmax.h\n+++ b/include/linux/minmax.h\n"
            f"@@ -7,4 +7,{6 + HELPERS} @@\n"
            " #define max(x, y)\t__cmp(x, y, >)\n"
            " #define min3(x, y, z)\tmin((typeof(x))min(x, y), z)\n"
            "+#define __DEFINE_CLAMP(t, n) static inline t clamp_##n(t v, t lo, t hi) "
            "{ return min(max(v, lo), hi); }\n"
            f"+\n{uses}"
            " \n"
            " #endif")


def test_a_spread_under_16_kib_per_file_is_the_whole_build_rule(fake, tmp_path):
    """No file grows by 16 KiB, so no per-file rule can flag the series;
    the whole build grows past TOTAL_THRESHOLD and its floor: exit 1, and
    the report leads with the whole build."""
    base, env = fake
    mbox = series_mbox(tmp_path / "s.mbox", [("minmax: typed clamp helpers", spread_diff())])
    p = check(env, PATCHES=mbox, BASE="before")
    assert code(p) == 1, out(p)
    [d] = (base / "results/check").iterdir()
    rec = json.loads((d / "check.json").read_text())
    g = rec["results"]["gcc"]
    assert rec["rules"] == ["whole build"] and g["rules"] == ["whole build"]
    assert g["regressions"] == []
    w = g["whole_build"]
    assert w["verdict"] == "regression" and w["files_grown"] == 2 and w["leads"] == "whole build"
    assert 16 * 1024 < w["growth_bytes"] < 2 * 16 * 1024, w
    assert w["bytes_tip"] - w["bytes_base"] == w["growth_bytes"] == w["grown_bytes"]
    # the header it comes from: minmax.h's own bytes grew in both files,
    # by the same amount; the file where it grew most is explained
    h = w["headers"]
    assert h["top"]["header"] == "include/linux/minmax.h" and h["top"]["files"] == 2
    assert h["headers"][0]["name"] == "include/linux/minmax.h"
    assert h["headers"][0]["delta"]["own"] == w["growth_bytes"] == 2 * h["top"]["per_file_median"]
    assert w["witness"]["file"] == h["top"]["file_most"]
    assert any(m[0] == "__DEFINE_CLAMP" for m in w["witness"]["macros_grew"]), w["witness"]
    txt = (d / "report.txt").read_text()
    assert txt.startswith("Subject: [kexpand] whole build: -E +"), txt
    lines = txt.splitlines()
    first_row = lines[lines.index("---------------- --------------- ----------------") + 1]
    assert first_row.endswith("whole build"), txt
    assert "whole build:" in txt
    assert "include/linux/minmax.h own bytes +" in txt, txt
    # the macros of the line of minmax.h that grew, in the witness
    assert "macros of include/linux/minmax.h:" in txt and "__DEFINE_CLAMP" in txt, txt
    # above the whole-build threshold it is not a regression
    p = check(env, PATCHES=mbox, BASE="before", TOTAL_THRESHOLD="1000000%", NAME="hi")
    assert code(p) == 0, out(p)


def test_a_patch_that_does_not_apply_is_exit_3_naming_it(fake, tmp_path):
    base, env = fake
    stale = ONCE_DIFF.replace("#define _LINUX_MINMAX_H\n", "#define NOT_THERE\n")
    mbox = series_mbox(tmp_path / "s.mbox", [("kernel.h: a comment", COMMENT_DIFF),
                                            ("minmax: stale", stale)])
    p = check(env, PATCHES=mbox, BASE="before")
    assert code(p) == 3, out(p)
    assert "patch 2/2" in errors(p) and "include/linux/minmax.h" in errors(p), out(p)
    assert not (base / "results/check").exists() or \
        not list((base / "results/check").glob("*/check.json"))


def test_bad_input_is_refused_before_any_work(fake, tmp_path):
    base, env = fake
    p = check(env, PATCHES=tmp_path / "nope.mbox")
    assert code(p) == 2 and "nope.mbox" in errors(p), out(p)
    p = check(env)
    assert code(p) == 2 and "PATCHES=" in errors(p), out(p)
    assert not (base / "work").exists()


def user_tree(path):
    subprocess.run(["cp", "-a", FAKE, path], check=True)
    g = lambda *a: subprocess.run(["git", "-C", path, "-c", "user.name=t", "-c",  # noqa: E731
                                   "user.email=t@t", *a], check=True, capture_output=True)
    g("init", "-q")
    g("add", "-A")
    g("commit", "-qm", "base")
    return g


def test_a_committed_series_in_a_users_tree_and_its_improvement(fake, tmp_path):
    """A=..B= in KERNEL=: the commits between are the series. Reverting
    the growth is an improvement, listed, and exit 0; the tree is only read."""
    base, env = fake
    user = tmp_path / "user"
    g = user_tree(user)
    mbox = series_mbox(tmp_path / "v2.mbox", BAD_SERIES, cover=False)
    g("am", "-q", str(mbox))
    g("revert", "--no-edit", "HEAD~1")
    from kbuild import trees
    snap = trees.snapshot(user)
    p = check(env, KERNEL=user, A="HEAD~1", B="HEAD")
    assert code(p) == 0, out(p)
    assert trees.snapshot(user) == snap
    [d] = (base / "results/check").iterdir()
    rec = json.loads((d / "check.json").read_text())
    assert [r["file"] for r in rec["results"]["gcc"]["improvements"]] == [SETUP]
    assert "improvements (not regressions):" in (d / "report.txt").read_text()
    p = check(env, KERNEL=user, A="HEAD~3", B="HEAD~1")
    assert code(p) == 1, out(p)


def test_a_seeded_tip_gives_the_bytes_of_a_fresh_one(fake, tmp_path):
    """The tip's scan dir is a copy of the base's in which Kbuild measures
    again what the series changed; FULL_BUILD=1 makes it from nothing:
    every file's bytes are the same both ways. A series that changes a
    Makefile goes the same way (Kbuild's rules decide what it redoes)."""
    base, env = fake
    mk_diff = ("diff --git a/mm/compaction.c b/mm/compaction.c\n--- a/mm/compaction.c\n"
               "+++ b/mm/compaction.c\n@@ -1,3 +1,4 @@\n+/* a comment */\n"
               " #include <linux/minmax.h>\n \n"
               " unsigned long fast_find(unsigned long pfn, unsigned long start)")
    mbox = series_mbox(tmp_path / "v2.mbox", BAD_SERIES + [("mm: a comment", mk_diff)])
    seeded = check(env, PATCHES=mbox, BASE="before")
    assert code(seeded) == 1, out(seeded)
    full = check(env, PATCHES=mbox, BASE="before", FULL_BUILD=1, NAME="full")
    assert code(full) == 1, out(full)
    assert "the tip is measured from nothing: FULL_BUILD=1" in full.stderr
    rows = {}
    for name in ("minmax-make-min3-safer-v2", "full"):
        csv = (base / "results/check" / name / "check.csv").read_text().splitlines()
        rows[name] = sorted(l.split(",")[:5] for l in csv[1:])
    assert rows["full"] == rows["minmax-make-min3-safer-v2"]
    rec = json.loads((base / "results/check/full/check.json").read_text())
    assert rec["path"] == "fresh" and rec["results"]["gcc"]["scan_tip"]["n_reused"] == 0
    make_diff = ("diff --git a/Makefile b/Makefile\n--- a/Makefile\n+++ b/Makefile\n"
                 "@@ -1,3 +1,4 @@\n+# a comment\n"
                 + "".join(" " + l + "\n" for l in
                           (FAKE / "Makefile").read_text().splitlines()[:3]))
    mbox2 = series_mbox(tmp_path / "m.mbox", [("kbuild: a comment", make_diff.rstrip())])
    p = check(env, PATCHES=mbox2, BASE="before")
    assert code(p) == 0, out(p)
    assert "Kbuild measures at the tip what the series changed" in p.stderr


@pytest.mark.parametrize("bad", ["A=x", "B=x"])
def test_half_a_range_is_refused(fake, bad):
    base, env = fake
    k, v = bad.split("=")
    p = check(env, **{k: v})
    assert code(p) == 2, out(p)


HEAVY = 600     # declarations in a new header: ~25 kB of -E output per file


def heavy_diff():
    """minmax.h gains an #include of a new, heavy header."""
    decls = "".join(f"+extern unsigned long heavy_table_{i}[64];\n" for i in range(HEAVY))
    return ("diff --git a/include/linux/minmax.h b/include/linux/minmax.h\n"
            "--- a/include/linux/minmax.h\n+++ b/include/linux/minmax.h\n"
            "@@ -3,2 +3,3 @@\n"
            " #define _LINUX_MINMAX_H\n"
            "+#include <linux/heavy.h>\n"
            " \n"
            "diff --git a/include/linux/heavy.h b/include/linux/heavy.h\n"
            "new file mode 100644\n"
            "--- /dev/null\n+++ b/include/linux/heavy.h\n"
            f"@@ -0,0 +1,{HEAVY} @@\n{decls}")


def test_a_new_include_of_a_heavy_header_is_named_with_its_bytes(fake, tmp_path):
    base, env = fake
    mbox = series_mbox(tmp_path / "h.mbox", [("minmax: include heavy.h", heavy_diff())])
    p = check(env, PATCHES=mbox, BASE="before", THRESHOLD="100000%")
    assert code(p) == 1, out(p)
    [d] = (base / "results/check").iterdir()
    rec = json.loads((d / "check.json").read_text())
    w = rec["results"]["gcc"]["whole_build"]
    edges = {r["name"]: r for r in w["headers"]["edges"]}
    e = edges["include/linux/minmax.h:4 -> include/linux/heavy.h"]
    assert e["status"] == "new" and e["b"]["files_sole"] == 2
    heavy = next(r for r in w["headers"]["headers"] if r["name"] == "include/linux/heavy.h")
    assert heavy["status"] == "new" and heavy["b"]["occurrences"] == 2
    # the bytes the entry brings are the header's; the rest of the growth
    # is minmax.h's own: the line marker that returns to it after heavy.h
    assert e["delta"]["bytes_sole"] == heavy["delta"]["added"] == heavy["delta"]["own"] > 0
    mm = next(r for r in w["headers"]["headers"] if r["name"] == "include/linux/minmax.h")
    assert mm["delta"]["own"] == w["growth_bytes"] - heavy["delta"]["own"]
    assert 0 < mm["delta"]["own"] <= 2 * 64
    txt = (d / "report.txt").read_text()
    assert "include/linux/minmax.h:4 -> include/linux/heavy.h" in txt, txt


def test_a_check_draws_its_own_report_and_the_index_not_the_others(fake, tmp_path):
    """A report is drawn once, for the run that made it: a second check
    writes its own report, page and CI files and the index, and leaves the
    first check's files as they were (report.py --check)."""
    base, env = fake
    mbox = series_mbox(tmp_path / "v2.mbox", BAD_SERIES)
    assert code(check(env, PATCHES=mbox, BASE="before", NAME="first")) == 1
    first = base / "results/check/first"
    mine = sorted(p for p in first.iterdir() if p.name != "check.json")
    assert {"report.txt", "report.md", "index.html", "report.eml"} <= {p.name for p in mine}
    before = {p: p.stat().st_mtime_ns for p in mine}
    index = base / "results/index.html"
    t_index = index.stat().st_mtime_ns
    p = check(env, PATCHES=mbox, BASE="before", NAME="second")
    assert code(p) == 1, out(p)
    assert f"wrote {base / 'results/check/second/report.txt'}" in p.stderr
    assert "check/first/report.txt" not in p.stderr
    assert {q: q.stat().st_mtime_ns for q in mine} == before
    second = base / "results/check/second"
    assert (second / "index.html").stat().st_mtime_ns > (second / "check.json").stat().st_mtime_ns
    assert index.stat().st_mtime_ns > t_index
    assert "check/second/index.html" in index.read_text()
    assert "check/first/index.html" in index.read_text()
    lst = (base / "results/pages/checks.html").read_text()
    assert "first" in lst and "second" in lst
    # a page the index links to is drawn when missing, also by a command
    # that draws another section (here a scan's)
    import report
    (first / "index.html").unlink()
    report.page.write_index(base / "results", report.PLOT_ORDER, "fake", {"scans"})
    assert (first / "index.html").exists()
    assert "check/first/index.html" in index.read_text()


def visits(tree):
    """The commits the tree was checked out at after git am last applied a
    series (git's reflog of HEAD), in order, the first being where am left
    it (the series' tip)."""
    log = subprocess.run(["git", "-C", str(tree), "reflog", "--format=%H %gs", "HEAD"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    log.reverse()
    last_am = max(i for i, line in enumerate(log) if " am: " in line)
    return [log[last_am].split()[0]] + [line.split()[0] for line in log[last_am + 1:]
                                        if " checkout: " in line]


def test_a_check_visits_each_commit_once_for_every_compiler(fake, tmp_path):
    """With both compilers and a series of three patches, once git am has
    applied it (which leaves the tree at the tip): the tip, each commit of
    the series and the base are visited once, every compiler's work done
    there. In a cold check the base comes first, for its scan (the tip's
    scan dir starts as a copy of the base's), and again last, for its
    details, which wait on what the tip's scan flags."""
    base, env = fake
    mbox = series_mbox(tmp_path / "v2.mbox", BAD_SERIES)
    assert code(check(env, PATCHES=mbox, BASE="before", CC="both", NAME="cold")) == 1
    tree = base / "work" / "tree"
    rec = json.loads((base / "results/check/cold/check.json").read_text())
    start, tip = rec["base"]["commit"], rec["tip"]["commit"]
    p1, p2, _ = [p["commit"] for p in rec["series"]["patches"]]
    assert visits(tree) == [tip, start, tip, p2, p1, start]
    for cc in ("gcc", "clang"):
        [r] = rec["results"][cc]["regressions"]
        assert [s["bytes"] is not None for s in r["per_patch"]] == [True] * 3, r["per_patch"]
    # another series on the same base: the base's scan is cached
    two = series_mbox(tmp_path / "v3.mbox", [BAD_SERIES[1], BAD_SERIES[0]])
    assert code(check(env, PATCHES=two, BASE="before", CC="both", NAME="cached")) == 1
    rec = json.loads((base / "results/check/cached/check.json").read_text())
    tip, p1 = rec["tip"]["commit"], rec["series"]["patches"][0]["commit"]
    assert visits(tree) == [tip, p1, start]
