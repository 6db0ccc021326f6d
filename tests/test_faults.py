"""Fault injection: every way a run can go wrong has a defined behaviour.
Each test asserts the message, the exit code, and that nothing was lost or
left behind. The fake kernel tree (tests/fakelinux) stands in for the real
one wherever it can; QEMU faults run against the real tree in
test_integration.py."""
import csv
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FAKE = Path(__file__).parent / "fakelinux"
PY = "/usr/bin/python3"

COMMENT = '''From: A Developer <a@example.org>
Date: Sun, 17 Sep 2023 08:00:00 +0000
Subject: [PATCH] kernel.h: a comment

---
diff --git a/include/linux/kernel.h b/include/linux/kernel.h
--- a/include/linux/kernel.h
+++ b/include/linux/kernel.h
@@ -1,2 +1,3 @@
 /* fakelinux */
+/* kernel */
 #include <linux/minmax.h>
'''

COMMENT2 = '''From: A Developer <a@example.org>
Date: Mon, 18 Sep 2023 09:00:00 +0000
Subject: [PATCH] kconfig.h: a comment

---
diff --git a/include/linux/kconfig.h b/include/linux/kconfig.h
--- a/include/linux/kconfig.h
+++ b/include/linux/kconfig.h
@@ -1,2 +1,3 @@
 /* fakelinux */
+/* a comment */
 #define IS_ENABLED(x) 0
'''

BIGGER = '''From: A Developer <a@example.org>
Date: Mon, 18 Sep 2023 08:16:30 +0000
Subject: [PATCH] minmax: evaluate once

Statement expressions, so arguments are evaluated once.
---
diff --git a/include/linux/minmax.h b/include/linux/minmax.h
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
 #define min3(x, y, z)	min((typeof(x))min(x, y), z)
'''

BREAK = '''From: A Developer <a@example.org>
Date: Tue, 19 Sep 2023 08:00:00 +0000
Subject: [PATCH] mm: a change that does not compile

---
diff --git a/mm/compaction.c b/mm/compaction.c
--- a/mm/compaction.c
+++ b/mm/compaction.c
@@ -1,3 +1,4 @@
+#error "injected build failure"
 #include <linux/minmax.h>
 
 unsigned long fast_find(unsigned long pfn, unsigned long start)
'''

STALE = '''From: A Developer <a@example.org>
Date: Wed, 20 Sep 2023 08:00:00 +0000
Subject: [PATCH] minmax: against another tree

---
diff --git a/include/linux/minmax.h b/include/linux/minmax.h
--- a/include/linux/minmax.h
+++ b/include/linux/minmax.h
@@ -5,3 +5,3 @@
 #define NOT_IN_THIS_TREE 1
-#define min(x, y)	__cmp(x, y, <)
+#define min(x, y)	__cmp(x, y, <=)
 #define max(x, y)	__cmp(x, y, >)
'''

MANIFEST = '''series = "fake"
[[point]]
name = "before"
patches = []
[[point]]
name = "after"
patches = ["0000-comment.patch", "0001-bigger.patch", "0000-comment2.patch"]
[[point]]
name = "broken-build"
parent = "after"
control = true
patches = ["0002-break.patch"]
[[point]]
name = "stale"
parent = "after"
control = true
patches = ["0003-stale.patch"]
[[point]]
name = "packaged"
base = true
'''


@pytest.fixture
def fake(tmp_path):
    tarball = tmp_path / "linux-source-6.1.tar.xz"
    with tarfile.open(tarball, "w:xz") as t:
        t.add(FAKE, arcname="linux-source-6.1")
    case = tmp_path / "cases" / "fake"
    (case / "patches").mkdir(parents=True)
    for name, text in (("0000-comment.patch", COMMENT), ("0000-comment2.patch", COMMENT2),
                       ("0001-bigger.patch", BIGGER), ("0002-break.patch", BREAK),
                       ("0003-stale.patch", STALE)):
        (case / "patches" / name).write_text(text)
    (case / "series.toml").write_text(MANIFEST)
    (case / "config.fragment").write_text("CONFIG_FAKE=y\n")
    (case / "focus-files").write_text(
        "arch/x86/xen/setup.c  # nested min3\nmm/compaction.c  # max\n")
    env = dict(os.environ, KEXPAND_TARBALL=str(tarball),
               KEXPAND_CASES=str(tmp_path / "cases"),
               KEXPAND_WORK=str(tmp_path / "work"),
               KEXPAND_RESULTS=str(tmp_path / "results"), RUNS="1")
    return tmp_path, env


def kx(env, *args, timeout=300):
    return subprocess.run([PY, str(REPO / "bench/kexpand.py"), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def mk(env, target, timeout=300, **variables):
    """`make TARGET VAR=value ...` in the repository, as a user types it
    (the Makefile passes the variables on as environment)."""
    return subprocess.run(["make", "-s", "-C", str(REPO), target,
                           *(f"{k}={v}" for k, v in variables.items())],
                          env=env, capture_output=True, text=True, timeout=timeout)


def descendants(pid):
    """Every live process below `pid` (children, grandchildren, ...)."""
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def no_temp_files(results):
    return [p for p in Path(results).rglob(".*") if p.is_file()]


def all_json_valid(results):
    for p in Path(results).rglob("*.json"):
        json.loads(p.read_text())


def test_bad_patch_and_build_failure_do_not_stop_the_run(fake):
    base, env = fake
    p = kx(env, "bench", "--case", "fake", "--cc", "gcc", "--no-boot")
    # a patch that does not apply: named with its hunk; the worst class wins
    assert "0003-stale.patch does not apply at include/linux/minmax.h hunk #1" in p.stderr
    assert "Traceback" not in p.stderr
    assert p.returncode == 3, p.stderr        # build failure outranks user error
    # every step line's count within its total, the commits between the
    # points ("after"'s first two patches) counted in it
    steps = [tuple(map(int, m)) for m in re.findall(r"\[(\d+)/(\d+)\]", p.stderr)]
    assert steps and all(n <= total for n, total in steps), steps
    rows = {(r.split(",")[0], r.split(",")[3]): r.split(",")
            for r in (base / "results/summary.csv").read_text().splitlines()[1:]}
    # the other points are measured
    assert rows[("before", "mm/compaction.c")][4] == "ok"
    assert rows[("after", "arch/x86/xen/setup.c")][4] == "ok"
    assert int(rows[("after", "arch/x86/xen/setup.c")][5]) > \
        int(rows[("before", "arch/x86/xen/setup.c")][5])
    # the failing object is recorded with its log tail, its sibling measured
    assert rows[("broken-build", "mm/compaction.c")][4] == "build-failure"
    assert rows[("broken-build", "arch/x86/xen/setup.c")][4] == "ok"
    rec = next(json.loads(p.read_text()) for p in (base / "results").glob("*/gcc.json")
               if json.loads(p.read_text())["point"] == "broken-build")
    assert "injected build failure" in rec["files"]["mm/compaction.c"]["log_tail"]
    assert not any(r[0] == "stale" for r in rows)
    # the work tree is clean after the failed patch
    st = subprocess.run(["git", "-C", base / "work/tree", "status", "--porcelain",
                         "-uno"], capture_output=True, text=True).stdout
    assert st == ""
    assert no_temp_files(base / "results") == []
    # the built-in A/A check: the control against its parent, drawn by
    # report.py with the compare rule; identical bytes for the file that built
    pair = json.loads((base / "results/compare/after..broken-build/pair.json").read_text())
    assert pair["a"]["ref"] == "after" and pair["b"]["ref"] == "broken-build"
    # the noise it measured is written by the bench, where it is measured;
    # drawing reports (in any order) never writes it
    noise = json.loads((base / "results/noise.json").read_text())
    assert noise["pair"] == "after..broken-build" and noise["rows"] == 1
    assert noise["flagged"] == 0 and noise["instructions"] is not None
    subprocess.run([PY, str(REPO / "report.py"), "--case", "fake"], env=env,
                   check=True, capture_output=True)
    assert json.loads((base / "results/noise.json").read_text()) == noise
    report = (base / "results/compare/after..broken-build/report.md").read_text()
    assert "| arch/x86/xen/setup.c | " in report and "1x (same)" in report


@pytest.mark.parametrize("args,needle", [
    (["bench", "--points", "v6.6"], "unknown point v6.6; valid: before, after"),
    (["bench", "--files", "mm/nonexistent.c"], "unknown file mm/nonexistent.c"),
    (["bench", "--cc", "icc"], "CC=icc: unknown compiler icc; give CC=gcc"),
    (["compare", "--a", "before", "--b", "no-such-ref"], "unknown ref 'no-such-ref'"),
    (["compare", "--a", "before"], "give both refs"),
])
def test_user_errors_are_clear(fake, args, needle):
    base, env = fake
    p = kx(env, *args[:1], "--case", "fake", *args[1:])
    assert p.returncode == 2, p.stderr
    assert needle in p.stderr and "Traceback" not in p.stderr


def test_unknown_case(fake):
    base, env = fake
    p = kx(env, "bench", "--case", "nope")
    assert p.returncode == 2 and "unknown case 'nope'; cases: fake" in p.stderr


def test_interrupted_run_keeps_results_and_resumes(fake, tmp_path):
    """SIGTERM while the second point's object build is known to be blocked
    (the fake Kbuild waits on a fifo at the commit that has the second
    point's kernel.h comment): the first point's results are kept, no
    child outlives the run, the next run resumes."""
    base, env = fake
    block = tmp_path / "block"
    block.mkdir()
    os.mkfifo(block / "fifo")
    env = dict(env, FAKE_BLOCK=str(block), FAKE_BLOCK_IF="/* kernel */",
               KEXPAND_SANDBOX_RW=str(block))
    proc = subprocess.Popen([PY, str(REPO / "bench/kexpand.py"), "bench", "--case",
                             "fake", "--cc", "gcc", "--no-boot", "--no-time",
                             "--points", "before,after"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while not (block / "blocked-make").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < 120, "the second point's build never blocked"
        time.sleep(0.02)
    started = descendants(proc.pid)
    assert started, "no child processes to check"
    proc.send_signal(signal.SIGTERM)
    seen, rest = proc.communicate(timeout=60)
    assert proc.returncode == 130, seen + rest
    assert "[2/2]" in rest and "preprocessing arch/x86/xen/setup.c (before" in rest
    assert "interrupted; finished results are kept" in rest
    assert no_temp_files(base / "results") == []
    all_json_valid(base / "results")
    # every process the run had started (make, its shells, the fake
    # compiler's sleep) ended with it: none keeps building after the exit
    def alive():
        out = []
        for pid in started:
            try:
                if "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:1]:
                    out.append(pid)
            except OSError:
                pass
        return out
    t0 = time.monotonic()                  # a killed group is gone within moments
    while alive() and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    assert alive() == [], [Path(f"/proc/{p}/cmdline").read_bytes() for p in alive()]
    # the next run resumes: the first point comes from the cache
    p = kx(dict(env, FAKE_SLOW=""), "bench", "--case", "fake", "--cc", "gcc",
           "--no-boot", "--no-time", "--points", "before,after")
    assert p.returncode == 0, p.stderr
    assert "preprocessing arch/x86/xen/setup.c (before" not in p.stderr
    assert "preprocessing arch/x86/xen/setup.c (after" in p.stderr


def test_corrupt_and_foreign_results_are_skipped(fake):
    base, env = fake
    res = base / "results"
    (res / "0123456789ab").mkdir(parents=True)
    (res / "0123456789ab" / "gcc.json").write_text('{"kind": "kexpand.expansion", "fi')
    (res / "0123456789ab" / "clang.json").write_text('{"some": "other tool"}')
    p = kx(env, "bench", "--case", "fake", "--cc", "gcc", "--no-boot",
           "--no-time", "--points", "before")
    assert p.returncode == 0, p.stderr
    assert "skipping" in p.stderr and "0123456789ab/gcc.json" in p.stderr
    assert "0123456789ab/clang.json" in p.stderr
    assert (res / "summary.csv").read_text().count("\nbefore,") == 2
    c = subprocess.run([PY, str(REPO / "report.py"), "--case", "fake"], env=env,
                       capture_output=True, text=True)
    assert c.returncode == 0, c.stderr


def test_second_run_waits_for_nobody_it_refuses(fake):
    base, env = fake
    import fcntl
    work = base / "work"
    work.mkdir()
    with open(work / "lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        p = kx(env, "bench", "--case", "fake", "--no-boot")
    assert p.returncode == 5
    assert "another kexpand run holds" in p.stderr and "lock" in p.stderr
    assert not (base / "results").exists()


# (a full disk: tests/test_trust.py, with ENOSPC injected, no mount needed)


def test_kernel_that_is_not_a_kernel_tree(fake, tmp_path):
    base, env = fake
    p = kx(env, "compare", "--case", "fake", "--kernel", str(tmp_path / "nope"),
           "--a", "x", "--b", "y")
    assert p.returncode == 2 and "no such directory" in p.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    p = kx(env, "compare", "--case", "fake", "--kernel", str(plain), "--a", "x", "--b", "y")
    assert p.returncode == 2 and "is not a git tree" in p.stderr


def test_user_tree_with_local_changes_measured_committed_only(fake, tmp_path):
    base, env = fake
    user = tmp_path / "user"
    subprocess.run(["cp", "-a", FAKE, user], check=True)
    g = lambda *a: subprocess.run(["git", "-C", user, "-c", "user.name=t", "-c",  # noqa: E731
                                   "user.email=t@t", *a], check=True,
                                  capture_output=True, text=True).stdout
    g("init", "-q")
    g("add", "-A")
    g("commit", "-qm", "one")
    (user / "arch/x86/xen/setup.c").write_text(
        (user / "arch/x86/xen/setup.c").read_text().replace("2 * min", "min3(1, 2, 3) * min"))
    g("commit", "-qam", "two")
    (user / "mm/compaction.c").write_text("#error uncommitted\n")
    from kbuild import trees
    snap = trees.snapshot(user)
    p = mk(env, "compare", CASE="fake", KERNEL=user, A="HEAD~1", B="HEAD",
           CC="gcc", NO_TIME=1)
    assert p.returncode == 0, p.stderr
    assert "uncommitted changes" in p.stderr
    assert trees.snapshot(user) == snap
    assert (user / "mm/compaction.c").read_text() == "#error uncommitted\n"
    # 'HEAD~1' is not a plain name: its directory carries a hash of it
    out = next((base / "results/compare").glob("HEAD_1-*..HEAD@*"))
    rows = (out / "compare.csv").read_text().splitlines()
    setup = next(r for r in rows if r.startswith("arch/x86/xen/setup.c"))
    a, b = map(int, setup.split(",")[2:4])
    assert b > a
    # the one changed line is named, with its bytes on both sides
    ch = json.loads((out / "lines.json").read_text())
    top = ch["lines"][0]
    assert top["at_a"] == top["at_b"] == "arch/x86/xen/setup.c:6"
    assert 0 < top["bytes_a"] < top["bytes_b"] and top["files"] == 1
    assert top["source"].startswith("extra_pages = min3(min3(1, 2, 3) * min(")
    md = (out / "report.md").read_text()
    assert (f"| arch/x86/xen/setup.c:6 | arch/x86/xen/setup.c:6 | {top['bytes_a']:,} | "
            f"{top['bytes_b']:,} |") in md
    assert "reproduce: `make compare CASE=fake KERNEL=" in md and "'A=HEAD~1' B=HEAD" in md


def test_missing_tool_names_the_package(fake):
    base, env = fake
    bindir = base / "bin"
    bindir.mkdir()
    for tool in ("git", "make", "gcc", "tar", "xz", "cc1", "as", "ld", "sh",
                 "dpkg-query", "cat", "mkdir", "printf", "sleep", "test", "rm",
                 "bwrap", "timeout", "prlimit"):
        src = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True,
                             text=True).stdout.strip()
        if src.startswith("/"):
            (bindir / tool).symlink_to(src)
    env = dict(env, PATH=str(bindir))
    p = kx(env, "bench", "--case", "fake", "--cc", "gcc", "--no-boot",
           "--points", "before")
    assert p.returncode == 5, p.stderr
    assert "hyperfine: command not found; install it with 'apt-get install hyperfine'" \
        in p.stderr


def test_scan_ranks_growth_and_writes_focus_list(fake):
    base, env = fake
    focus = base / "new-focus"
    p = mk(env, "scan", CASE="fake", A="before", B="after", WRITE_FOCUS=focus)
    assert p.returncode == 0, p.stderr
    out = base / "results/scan/before..after"
    lines = (out / "ranking.csv").read_text().splitlines()
    assert lines[0] == "file,bytes_a,bytes_b,growth_bytes,growth_ratio"
    top = lines[1].split(",")
    assert top[0] == "arch/x86/xen/setup.c" and int(top[3]) > 0
    growth = [int(l.split(",")[3]) for l in lines[1:]]
    assert growth == sorted(growth, reverse=True)
    assert (out / "growth.png").exists() and (out / "ranking.md").exists()
    # both fake files grew, and both are focus files of the fake case
    assert "2 of the top 20 by absolute growth are focus files" in \
        (out / "ranking.md").read_text()
    assert focus.read_text().splitlines()[1].startswith("arch/x86/xen/setup.c")
    # the written list is a focus-file list the bench accepts
    from kbuild import series
    assert series.read_focus(focus)[0][0] == "arch/x86/xen/setup.c"
    recs = list((base / "results").glob("*/scan-gcc.json"))
    assert len(recs) == 2
    rec = json.loads(recs[0].read_text())
    assert rec["n_files"] == 2 and rec["total_bytes"] > 0
    assert rec["overhead_ratio"] is not None and rec["build"]["engine"] == "kbuild"
    # Kbuild drove both: A's scan dir from nothing, B's a copy of A's
    froms = sorted(json.loads(r.read_text())["build"]["from"] for r in recs)
    assert froms[0] == "clean" and froms[1].startswith("ks-"), froms
    # another base config is kept apart, records and ranking alike
    before = (out / "ranking.csv").read_text()
    p = mk(env, "scan", CASE="fake", A="before", B="after", CONFIG="defconfig")
    assert p.returncode == 0, p.stderr
    other = base / "results/scan/before..after@defconfig"
    assert json.loads((other / "pair.json").read_text())["record"] == "scan-gcc@defconfig"
    assert (other / "ranking.md").exists() and (out / "ranking.csv").read_text() == before
    assert len(list((base / "results").glob("*/scan-gcc@defconfig.json"))) == 2
    assert len(list((base / "results").glob("*/scan-gcc.json"))) == 2


def test_bisect_on_fake_tree(fake):
    base, env = fake
    p = kx(env, "bisect", "--case", "fake", "--file", "arch/x86/xen/setup.c",
           "--good", "before", "--bad", "after")
    assert p.returncode == 0, p.stderr
    assert "first commit past" in p.stdout and "minmax: evaluate once" in p.stdout
    assert "agrees with the per-commit measurements" in p.stdout
    tree = base / "work/tree"
    assert subprocess.run(["git", "-C", tree, "bisect", "log"],
                          capture_output=True).returncode != 0
    p = kx(env, "bisect", "--case", "fake", "--file", "arch/x86/xen/setup.c",
           "--good", "before", "--bad", "after", "--threshold", "1")
    assert p.returncode == 2 and "does not separate" in p.stderr


def test_compare_a_commit_with_itself_reports_no_change(fake):
    base, env = fake
    p = mk(env, "compare", CASE="fake", A="after", B="after", CC="gcc", RUNS=2)
    assert p.returncode == 0, p.stderr
    out = base / "results/compare/after..after@gcc"
    rows = list(csv.DictReader(open(out / "compare.csv")))
    assert {r["file"] for r in rows} == {"arch/x86/xen/setup.c", "mm/compaction.c"}
    for r in rows:
        assert r["bytes_a"] == r["bytes_b"] and r["significant"] == "False"
        assert r["e_significant"] == "False"
        # two sets of runs of one command, interleaved (A B, B A, ...)
        assert r["decided_by"] == "instructions"
        assert float(r["c_instructions_ratio"]) == 1.0
    pair = json.load(open(out / "pair.json"))
    t = pair["timings"]["gcc"]["mm/compaction.c"]
    assert t["a"]["time_c"]["samples"]["times"] != t["b"]["time_c"]["samples"]["times"]
    assert t["a"]["time_c"]["interleaved"][:2] == [["after (A)", "after (B)"],
                                                  ["after (B)", "after (A)"]]
    assert "No source line's bytes changed." in (out / "report.md").read_text()


def test_changed_lines_when_a_came_from_the_cache_of_another_tree(fake, tmp_path):
    """Measurements are keyed by commit: A measured in one clone is served
    from the cache for another tree with the same commit, whose build dir
    never compiled the file; the changed-lines step must build it."""
    base, env = fake
    one = tmp_path / "one"
    subprocess.run(["cp", "-a", FAKE, one], check=True)
    g = lambda t, *a: subprocess.run(["git", "-C", t, "-c", "user.name=t", "-c",  # noqa: E731
                                      "user.email=t@t", *a], check=True,
                                     capture_output=True, text=True).stdout
    g(one, "init", "-q")
    g(one, "add", "-A")
    g(one, "commit", "-qm", "one")
    two = tmp_path / "two"
    subprocess.run(["git", "clone", "-q", str(one), str(two)], check=True)
    (two / "mm/compaction.c").write_text((two / "mm/compaction.c").read_text() + "\n/* x */\n")
    g(two, "commit", "-qam", "a comment")
    p = mk(env, "compare", CASE="fake", KERNEL=one, A="HEAD", B="HEAD", CC="gcc", NO_TIME=1)
    assert p.returncode == 0, p.stderr
    p = mk(env, "compare", CASE="fake", KERNEL=two, A="HEAD~1", B="HEAD", CC="gcc", NO_TIME=1)
    assert p.returncode == 0, p.stderr
    out = next((base / "results/compare").glob("HEAD_1-*..HEAD@*"))
    assert json.loads((out / "lines.json").read_text())["lines"] == []
