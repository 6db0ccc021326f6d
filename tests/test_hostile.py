"""Hostile input (issue 11): every bad input gets a clear error before any
work, and no failure leaves a wrong result behind.

Everything runs on the fake kernel tree (tests/fakelinux, through the
`fake` fixture of test_faults.py) in temporary directories.

Through `make`, every failing recipe makes make itself exit 2; the code
kexpand exited with is the N of make's "[Makefile:L: target] Error N"
line. `code()` reads it, so the assertions below are about kexpand's
documented exit codes (README, "Exit codes") whichever way it is run."""
import json
import os
import random
import re
import stat
import subprocess
import time
from pathlib import Path

import pytest

from test_faults import FAKE, PY, REPO, fake, kx, mk  # noqa: F401

SETUP = "arch/x86/xen/setup.c"
IGNORED = {"__pycache__", ".pytest_cache"}


def code(p):
    """kexpand's exit code behind make (0, or N of make's 'Error N')."""
    if p.returncode == 0:
        return 0
    found = re.findall(r"\] Error (\d+)$", p.stderr, re.M)
    return int(found[-1]) if found else f"make exit {p.returncode}, no 'Error N'"


def out(p):
    return f"exit {p.returncode}\n--- stdout\n{p.stdout[-3000:]}\n--- stderr\n{p.stderr[-4000:]}"


def errors(p):
    """kexpand's error lines (the message the user reads)."""
    return "\n".join(l for l in p.stderr.splitlines() if l.startswith("kexpand: error:"))


def listing(d):
    d = Path(d)
    return sorted(n for n in os.listdir(d) if n not in IGNORED) if d.is_dir() else []


def files_under(d):
    d = Path(d)
    return {p: p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()} \
        if d.is_dir() else {}


def no_work_done(base):
    """Nothing built, measured or cached: no build or scan dir (kb-*,
    ks-*) anywhere in the work dir, no cache entry, no results file."""
    work = base / "work"
    if work.is_dir():
        assert list(work.rglob("kb-*")) == list(work.rglob("ks-*")) == []
        assert not (work / "cache").is_dir() or list((work / "cache").iterdir()) == []
    assert files_under(base / "results") == {}


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                           "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def user_tree(path):
    """A user's kernel git tree: a copy of the fake tree, one commit."""
    subprocess.run(["cp", "-a", str(FAKE), str(path)], check=True)
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "one")
    return path


def edit(path, old, new):
    text = path.read_text()
    assert old in text, (old, text)
    path.write_text(text.replace(old, new, 1))


# --- 1. a bisect over a commit that does not build ------------------------------

def test_bisect_over_unbuildable_commit_keeps_reports_working(fake, tmp_path):
    base, env = fake
    user = user_tree(tmp_path / "user")
    src = user / SETUP
    edit(src, "2 * min", "min3(min3(1, 2, 3), 2, 3) * min")
    git(user, "commit", "-qam", "grow")
    src.write_text('#error "does not build"\n' + src.read_text())
    git(user, "commit", "-qam", "break")
    src.write_text(src.read_text().split("\n", 1)[1])
    edit(src, "min3(min3(1, 2, 3), 2, 3)", "min3(min3(1, 2, 3), min(2, 3), 3)")
    git(user, "commit", "-qam", "grow more")
    grow, broken = git(user, "rev-parse", "HEAD~2"), git(user, "rev-parse", "HEAD~1")

    p = mk(env, "bisect", CASE="fake", KERNEL=user, FILE=SETUP, GOOD="HEAD~3",
           BAD="HEAD")
    assert code(p) in (0, 3), out(p)
    assert "Traceback" not in p.stdout + p.stderr
    [j] = (base / "results/bisect").glob("*/*.json")
    b = json.loads(j.read_text())
    assert len(b["per_commit"]) == 4
    by = {c["commit"]: c for c in b["per_commit"]}
    assert by[broken]["bytes"] is None and by[broken]["status"] == "not measured"
    assert all(isinstance(c["bytes"], int) and c["status"] == "ok"
               for c in b["per_commit"] if c["commit"] != broken)
    assert b["first_bad"] == grow

    index = base / "results/index.html"
    before = index.read_text() if index.exists() else None
    p = mk(env, "compare", CASE="fake", KERNEL=user, A="HEAD~3", B="HEAD",
           CC="gcc", NO_TIME=1)
    assert p.returncode == 0, out(p)
    assert "Traceback" not in p.stdout + p.stderr
    page = index.read_text()
    assert page != before                       # rewritten, with the compare
    assert 'href="compare/HEAD_3-' in page
    # and the bisect table kept, on its page
    assert "not measured" in (base / "results/pages/bisects.html").read_text()


# --- 2. settings errors are not cached --------------------------------------------

@pytest.mark.parametrize("var,value", [("JOBS", "0"), ("BOOT_TIMEOUT", "0")])
def test_bad_boot_setting_rejected_before_any_build(fake, var, value):
    base, env = fake
    p = mk(env, "boot", CASE="fake", POINTS="before", **{var: value})
    assert code(p) == 2, out(p)
    assert f"{var}=" in errors(p), out(p)
    assert "Traceback" not in p.stdout + p.stderr
    no_work_done(base)
    assert not (base / "work/cache").exists()


# --- 3. a user tree whose history was rewritten and pruned -------------------------

def test_rewritten_and_pruned_user_history_clones_again(fake, tmp_path):
    base, env = fake
    user = user_tree(tmp_path / "user")
    edit(user / SETUP, "2 * min", "min3(1, 2, 3) * min")
    git(user, "commit", "-qam", "two")
    p = mk(env, "compare", CASE="fake", KERNEL=user, A="HEAD~1", B="HEAD",
           CC="gcc", NO_TIME=1)
    assert p.returncode == 0, out(p)
    old = git(user, "rev-parse", "HEAD")

    edit(user / SETUP, "min3(1, 2, 3) * min", "min3(1, 2, 4) * min")
    git(user, "commit", "-qa", "--amend", "-m", "two, amended")
    git(user, "reflog", "expire", "--expire=now", "--all")
    git(user, "gc", "-q", "--prune=now")
    assert subprocess.run(["git", "-C", str(user), "cat-file", "-e", old],
                          capture_output=True).returncode != 0   # really gone
    new = git(user, "rev-parse", "HEAD")

    p = mk(env, "compare", CASE="fake", KERNEL=user, A="HEAD~1", B="HEAD",
           CC="gcc", NO_TIME=1)
    assert p.returncode == 0, out(p)
    assert "Traceback" not in p.stdout + p.stderr
    assert "making it again" in p.stderr, out(p)
    [pair] = (base / "results/compare").glob("HEAD_1-*..HEAD@*/pair.json")
    assert json.loads(pair.read_text())["b"]["commit"] == new


# --- 4. numeric settings checked before work ----------------------------------------

BISECT = dict(FILE=SETUP, GOOD="before", BAD="after")


@pytest.mark.parametrize("target,var,value", [
    ("bench", "RUNS", "abc"), ("bench", "RUNS", "0"), ("bench", "JOBS", "-1"),
    ("bench", "JOBS", "abc"), ("bench", "BOOT_TIMEOUT", "abc"),
    ("bisect", "THRESHOLD", "abc"), ("bisect", "THRESHOLD", "infx"),
    ("bench", "ICOUNT_CAP", "-5"), ("bench", "ICOUNT_CAP", "1e3"),
    ("scan", "DASK_SCHEDULER", "tcp://x;touch y:1"), ("scan", "DASK_SCHEDULER", "localhost"),
    ("sweep", "N", "1"), ("sweep", "N", "x"),
])
def test_bad_number_rejected_before_work(fake, target, var, value):
    base, env = fake
    extra = {"bisect": BISECT, "scan": dict(A="before", B="after"),
             "sweep": dict(FILE=SETUP, POINT="after")}.get(target, dict(NO_BOOT=1, NO_TIME=1))
    t0 = time.monotonic()
    p = mk(env, target, CASE="fake", **extra, **{var: value})
    assert time.monotonic() - t0 < 20, out(p)      # sanity bound only
    assert code(p) == 2, out(p)
    assert f"{var}=" in errors(p), out(p)
    assert "Traceback" not in p.stdout + p.stderr
    no_work_done(base)


def test_bad_runs_after_good_run_keeps_results(fake):
    base, env = fake
    # timed runs (RUNS=1 from the fixture), so that RUNS is used
    p = mk(env, "bench", CASE="fake", CC="gcc", POINTS="before", NO_BOOT=1)
    assert p.returncode == 0, out(p)
    summary = (base / "results/summary.csv").read_bytes()
    assert b"\nbefore," in summary
    everything = files_under(base / "results")
    p = mk(env, "bench", CASE="fake", CC="gcc", POINTS="before", NO_BOOT=1,
           RUNS="abc")
    assert code(p) == 2 and "RUNS=" in errors(p), out(p)
    assert (base / "results/summary.csv").read_bytes() == summary
    assert files_under(base / "results") == everything


# --- 5. interrupts: tests/test_interrupts.py (each signal at each stage, the
# child known to be blocked before the signal is sent: no race)


# --- 6. files outside the tree -----------------------------------------------------

@pytest.mark.parametrize("target,var,value", [
    ("bench", "FILES", "../../outside.c"), ("bench", "FILES", "/etc/passwd.c"),
    ("bench", "FILES", "mm/../../x.c"), ("bench", "FILES", "mm/a b.c"),
    ("compare", "FILES", "../../outside.c"), ("bisect", "FILE", "../../outside.c"),
    ("bisect", "FILE", "/etc/passwd.c"),
])
def test_files_outside_the_tree_rejected(fake, target, var, value):
    base, env = fake
    extra = {"bench": dict(NO_BOOT=1, NO_TIME=1), "compare": dict(A="before", B="after"),
             "bisect": dict(GOOD="before", BAD="after")}[target]
    here, parent, repo = listing(base), listing(base.parent), listing(REPO)
    p = mk(env, target, CASE="fake", **extra, **{var: value})
    assert code(p) == 2, out(p)
    assert f"{var}" in errors(p), out(p)
    assert "Traceback" not in p.stdout + p.stderr
    no_work_done(base)
    assert set(listing(base)) <= set(here) | {"work", "results"}
    assert listing(base.parent) == parent and listing(REPO) == repo
    for name in ("outside.c", "x.c", "passwd.c"):
        assert not list(base.rglob(name)), name
        assert not (base.parent / name).exists() and not (REPO / name).exists()


# --- 7. no traceback and a documented exit code -------------------------------------

def test_work_dir_is_a_regular_file(fake):
    base, env = fake
    f = base / "plain-file"
    f.write_text("not a directory\n")
    p = kx(dict(env, KEXPAND_WORK=str(f)), "bench", "--case", "fake", "--no-boot",
           "--no-time")
    assert p.returncode == 5, out(p)
    assert "KEXPAND_WORK=" in p.stderr and "Traceback" not in p.stderr
    assert f.read_text() == "not a directory\n"
    assert files_under(base / "results") == {}


def test_results_dir_not_writable(fake):
    base, env = fake
    f = base / "plain-file"
    f.write_text("x\n")
    p = kx(dict(env, KEXPAND_RESULTS=str(f / "sub")), "bench", "--case", "fake",
           "--no-boot", "--no-time")
    assert p.returncode == 5, out(p)
    assert "KEXPAND_RESULTS=" in p.stderr and "Traceback" not in p.stderr
    assert not (base / "work/cache").exists()


def test_results_inside_work(fake):
    base, env = fake
    p = kx(dict(env, KEXPAND_RESULTS=str(base / "work/results")), "bench", "--case",
           "fake", "--no-boot", "--no-time")
    assert p.returncode == 2, out(p)
    assert "KEXPAND_RESULTS=" in p.stderr and "Traceback" not in p.stderr
    assert not (base / "work/results").exists()


def test_work_inside_results(fake):
    """The converse: the work dir (kernel tree, build dirs, cache) inside the
    results dir puts the tree into results/ (with the default results, into
    this repository) and makes the record loader read work files."""
    base, env = fake
    p = kx(dict(env, KEXPAND_WORK=str(base / "results/work")), "bench", "--case",
           "fake", "--cc", "gcc", "--no-boot", "--no-time", "--points", "before")
    assert p.returncode == 2, out(p)
    assert "KEXPAND_WORK=" in p.stderr and "Traceback" not in p.stderr
    assert not (base / "results/work/tree").exists()


@pytest.mark.parametrize("junk", ["{}", "[]"])
def test_cache_entries_of_wrong_shape_are_measured_again(fake, junk):
    base, env = fake
    args = ("bench", "--case", "fake", "--cc", "gcc", "--no-boot", "--points", "before")
    p = kx(env, *args)
    assert p.returncode == 0, out(p)
    first = (base / "results/summary.csv").read_text().splitlines()
    entries = list((base / "work/cache").glob("*.json"))
    assert entries
    for e in entries:
        e.write_text(junk)
    p = kx(env, *args)
    assert p.returncode == 0, out(p)
    assert "Traceback" not in p.stderr
    assert f"preprocessing {SETUP} (before, gcc)" in p.stderr
    assert "timing 2 files x 1 commits (gcc), interleaved" in p.stderr
    assert p.stderr.count("  counting instructions of ") == 4, out(p)
    assert f"counting instructions of {SETUP} (-c, before, gcc)" in p.stderr
    assert "skipping" not in p.stderr, out(p)
    for e in entries:
        v = json.loads(e.read_text())
        assert isinstance(v, dict) and v, e
    again = (base / "results/summary.csv").read_text().splitlines()
    assert len(again) == len(first) == 5            # header, 2 files x 2 points
    cut = lambda rows: [r.split(",")[:11] for r in rows]  # noqa: E731 (not the times)
    assert cut(again) == cut(first)
    assert all(r.split(",")[4] == "ok" and r.split(",")[11] != "" for r in again[1:])


def test_record_timing_without_stddev_is_reported_and_skipped(fake):
    base, env = fake
    p = kx(env, "bench", "--case", "fake", "--cc", "gcc", "--no-boot", "--points",
           "before,after")
    assert p.returncode == 0, out(p)
    series = json.loads((base / "results/series-fake.json").read_text())
    after = next(pt["commit"] for pt in series["points"] if pt["name"] == "after")
    rec_path = base / "results" / after[:12] / "gcc.json"
    rec = json.loads(rec_path.read_text())
    del rec["files"][SETUP]["time_c"]["stddev_s"]
    rec_path.write_text(json.dumps(rec))
    c = subprocess.run([PY, str(REPO / "report.py"), "--case", "fake"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert c.returncode == 0, out(c)
    assert "Traceback" not in c.stderr
    assert f"skipping {rec_path}" in c.stderr, out(c)
    assert (base / "results/index.html").exists()


# --- 8. make variables are not shell text -------------------------------------------

def pwned_anywhere(base, name):
    places = [REPO, REPO / "bench", Path.cwd(), base, base.parent, base / "work",
              base / "work/tree", Path("/tmp")]
    return [p / name for p in places if (p / name).exists()] + list(base.rglob(name))


def test_make_variable_is_not_shell_text(fake):
    base, env = fake
    here = listing(REPO)
    p = mk(env, "compare", CASE="fake", A='x";touch pwned;"', B="after")
    assert code(p) == 2, out(p)
    # refused as a ref git would refuse, before anything is unpacked
    assert "not a git revision" in errors(p), out(p)
    assert not (base / "work/tree").exists()
    assert pwned_anywhere(base, "pwned") == []
    assert listing(REPO) == here


def test_make_variable_is_not_make_text(fake):
    """A `$(shell ...)` in a variable is make syntax that runs a command
    when make expands the variable (it does when exporting it to the
    recipe's environment): kexpand must see the text, not run it."""
    base, env = fake
    mark = base / "pwned-make"
    here = listing(REPO)
    p = mk(env, "compare", CASE="fake", A=f"$(shell touch {mark})", B="after")
    assert not mark.exists(), "make ran $(shell ...) from a command-line variable"
    assert code(p) == 2 and "not a git revision" in errors(p), out(p)
    assert listing(REPO) == here


# --- 9. results are mode 0644 ------------------------------------------------------------

def modes(d):
    return {str(p.relative_to(d)): oct(stat.S_IMODE(p.stat().st_mode))
            for p in Path(d).rglob("*") if p.is_file()}


def test_results_are_mode_0644(fake):
    base, env = fake
    p = kx(env, "bench", "--case", "fake", "--cc", "gcc", "--no-boot", "--no-time")
    assert p.returncode in (0, 2, 3), out(p)     # the fake case's stale patch: 2
    m = modes(base / "results")
    assert m and all(v == "0o644" for v in m.values()), m


def test_results_are_mode_0644_under_a_strict_umask(fake):
    """Whoever runs kexpand (umask 077 here), the records, tables and plots
    that make writes are mode 0644."""
    base, env = fake
    old = os.umask(0o077)
    try:
        p = mk(env, "bench", CASE="fake", CC="gcc", POINTS="before,after",
               NO_BOOT=1, NO_TIME=1)
    finally:
        os.umask(old)
    assert p.returncode == 0, out(p)
    m = modes(base / "results")
    assert any(k.endswith(".png") for k in m) and any(k.endswith(".json") for k in m)
    assert {k: v for k, v in m.items() if v != "0o644"} == {}


# --- 10. output directory names cannot collide ---------------------------------------

def test_directory_names_do_not_collide(tmp_path):
    from bench.results import pair_dir, safe_name
    assert safe_name("HEAD~1") != safe_name("HEAD^1")
    assert pair_dir(tmp_path, "compare", "HEAD~1", "HEAD") != \
        pair_dir(tmp_path, "compare", "HEAD^1", "HEAD")
    refs = ["HEAD~1", "HEAD^1", "HEAD_1", "HEAD:1", "a/b", "a_b", "a b", "..",
            ".", ".x", "x", "v6.7", "v6.7-rc1", "ünï", "un_", "✓", "-", "_",
            "HEAD_1-" + safe_name("HEAD~1").rsplit("-", 1)[1]]
    names = [safe_name(r) for r in refs]
    assert len(set(names)) == len(refs), dict(zip(refs, names))
    for n in names:
        assert "/" not in n and not n.startswith(".") and n not in ("", ".", "..")
    dirs = {pair_dir(tmp_path, "compare", a, b) for a in refs[:6] for b in refs[:6]}
    assert len(dirs) == 36


# --- settings checked before work (found while fuzzing) --------------------------

def test_write_focus_to_a_directory_rejected_before_the_scan(fake):
    base, env = fake
    target = base / "a-directory"
    target.mkdir()
    p = mk(env, "scan", CASE="fake", A="before", B="after", WRITE_FOCUS=target)
    assert code(p) == 2, out(p)
    assert "WRITE_FOCUS=" in errors(p), out(p)
    no_work_done(base)


# --- randomized: every target, every variable, hostile values ------------------------

TARGETS = ["bench", "compare", "bisect", "scan", "boot", "prepare"]
FUZZED = ["RUNS", "JOBS", "BOOT_TIMEOUT", "THRESHOLD", "POINTS", "FILES", "CC", "A",
          "B", "FILE", "GOOD", "BAD", "KERNEL", "NO_TIME", "NO_BOOT", "CASE"]
VALUES = ["", "-1", "0", "99999999999999999999", "abc", "1e309", "nan", "inf",
          "a;b", "x;touch {pwn}", "$(touch {pwn})", "`touch {pwn}`", "'", '"',
          "a'b\"c", "a|touch {pwn}", "a && touch {pwn}", "a & b", "x y", " ",
          "ünï", "✓", "../../x.c", "/abs.c", "mm/../../x.c", "$(id)", "--help", "-"]
# a cheap valid run of each target on the fake tree, which the fuzzed
# variables then override
VALID = {"bench": dict(POINTS="before"), "compare": dict(A="before", B="after"),
         "bisect": dict(FILE=SETUP, GOOD="before", BAD="after"),
         "scan": dict(A="before", B="after"), "boot": dict(POINTS="before"),
         "prepare": {}}
DEFAULTS = dict(CASE="fake", NO_BOOT="1", NO_TIME="1", CC="gcc")
SEED = 11


def fuzz_cases(n=32, seed=SEED):
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        names = [FUZZED[i % len(FUZZED)]]
        if rng.random() < 0.35:
            names.append(rng.choice([v for v in FUZZED if v != names[0]]))
        cases.append((TARGETS[rng.randrange(len(TARGETS))],
                      {v: rng.choice(VALUES) for v in names}))
    return cases


def test_randomized_hostile_make_variables(fake):
    base, env = fake
    cases = fuzz_cases()
    assert {t for t, _ in cases} == set(TARGETS)
    assert {v for _, vs in cases for v in vs} == set(FUZZED)
    problems, codes = [], []
    for i, (target, fuzzed) in enumerate(cases):
        pwn = base / f"pwned-{i}"
        fuzzed = {k: v.replace("{pwn}", str(pwn)) for k, v in fuzzed.items()}
        variables = {**DEFAULTS, **VALID[target], **fuzzed}
        here, parent, repo = listing(base), listing(base.parent), listing(REPO)
        try:
            p = mk(env, target, timeout=120, **variables)
        except subprocess.TimeoutExpired:
            problems.append(f"#{i} make {target} {fuzzed}: hung > 120 s")
            continue
        c, text = code(p), p.stdout + p.stderr
        codes.append(c)
        what = f"#{i} make {target} {fuzzed} -> {c}"
        if c not in (0, 2, 3, 4, 5):
            problems.append(f"{what}: undocumented exit code\n{out(p)}")
        if "Traceback" in text:
            problems.append(f"{what}: traceback\n{out(p)}")
        if c == 2:
            msg = errors(p) or text
            needles = list(fuzzed) + ["unknown", "give", "does not apply"]
            if not any(n in msg for n in needles):
                problems.append(f"{what}: unclear message\n{out(p)}")
        if pwn.exists():
            problems.append(f"{what}: a shell ran the value (created {pwn})")
        new = set(listing(base)) - set(here) - {"work", "results"}
        if new or listing(base.parent) != parent or listing(REPO) != repo:
            problems.append(f"{what}: left something outside work/ and results/: "
                            f"{sorted(new)} {sorted(set(listing(base.parent)) ^ set(parent))} "
                            f"{sorted(set(listing(REPO)) ^ set(repo))}")
    assert problems == [], "\n\n".join(problems)
    # the fuzz reached valid runs too, not only rejections
    assert {0, 2} <= set(codes), codes
