"""Compile cost: the verdict rule (bench/verdict.py), interleaved runs
(bench/measure/timing.py, each run timed by hyperfine; more in
test_timing.py) and the instruction counter (bench/measure/icount.py, with
QEMU's plugin or perf) on real compilers and tiny inputs."""
import os
import shlex
import shutil

import pytest

from bench import verdict as stats
from bench.measure import icount, timing


def t_entry(times, cpu=None, instructions=None):
    return {"median_s": sorted(times)[len(times) // 2], "stddev_s": 0.0,
            "runs": len(times), "instructions": instructions,
            "samples": {"times": times, "cpu": cpu or times}}


# --- the rule ---------------------------------------------------------------------

def test_instructions_decide_where_counted():
    a = t_entry([1.0, 1.3, 0.8], instructions=4_464_095_277)
    b = t_entry([0.6, 0.61, 0.62], instructions=4_464_095_300)   # +5e-9
    v = stats.verdict(a, b)
    assert v["decided_by"] == "instructions" and not v["significant"]
    assert v["threshold_from"] == "floor"
    assert v["threshold"] == stats.FLOORS["instructions"] == 0.002
    b["instructions"] = 4_500_000_000                           # +0.8%
    assert stats.verdict(a, b)["significant"]


def test_cpu_time_decides_without_counts_and_noise_raises_the_bar():
    a = t_entry([1.00, 1.01, 0.99, 1.00, 1.02])
    b = t_entry([1.10, 1.11, 1.09, 1.10, 1.12])                 # +10%, tight
    v = stats.verdict(a, b)
    assert v["decided_by"] == "cpu_time" and v["significant"]
    assert v["cpu_time_p"] < stats.ALPHA
    # an A/A check that saw 5% of CPU-time noise puts the bar at 15%
    v = stats.verdict(a, b, {"cpu_time": 0.05, "instructions": 1e-7})
    assert not v["significant"] and v["threshold"] == 0.15
    assert v["threshold_from"] == "A/A noise"
    # and 1e-7 of instruction noise leaves the 0.2% floor
    assert stats.threshold("instructions", {"instructions": 1e-7}) == (0.002, "floor")


def test_wall_time_of_old_records_and_too_few_runs():
    a = {"median_s": 1.0, "stddev_s": 0, "runs": 1, "hyperfine": {"times": [1.0]}}
    b = {"median_s": 2.0, "stddev_s": 0, "runs": 1, "hyperfine": {"times": [2.0]}}
    v = stats.verdict(a, b)
    assert v["decided_by"] == "wall_time" and not v["significant"]  # p unknown
    assert stats.welch([1.0], [2.0, 3.0]) == (None, None)
    # SciPy's Welch test: the reference value of ttest_ind(equal_var=False)
    t, p = stats.welch([1, 2, 3, 4], [2, 3, 4, 5])
    assert abs(t - 1.0954451) < 1e-6 and abs(p - 0.3153336) < 1e-6


def test_aa_noise_is_the_largest_deviation_per_metric():
    rows = [{"c_instructions_ratio": 1.000001, "e_instructions_ratio": 0.99999,
             "c_cpu_time_ratio": 1.02, "e_cpu_time_ratio": 0.97,
             "c_wall_time_ratio": 1.04},
            {"c_instructions_ratio": None, "c_cpu_time_ratio": 1.01}]
    n = stats.aa_noise(rows)
    assert n == {"instructions": 0.00001, "cpu_time": 0.03, "wall_time": 0.04}


# --- interleaved runs -------------------------------------------------------------

def test_interleaved_runs_alternate_and_drop_warmups(tmp_path):
    seen = []
    log = tmp_path / "log"

    def cmd(side, key):
        # (timed commands run in the sandbox: they write only where told)
        return (["sh", "-c", f"echo {side}{key} >> {log}"], tmp_path, None, [tmp_path])
    jobs = {"x": (3, 1, lambda s: cmd(s, "x")), "y": (2, 0, lambda s: cmd(s, "y"))}
    got, failed = timing.interleaved(["A", "B"], jobs, seen.append)
    assert not failed
    # 4 rounds (x: 1 warmup + 3 runs); sides rotate: AB BA AB BA
    assert seen == ["A", "B", "B", "A", "A", "B", "B", "A"]
    assert log.read_text().split() == ["Ax", "Ay", "Bx", "By", "Bx", "By", "Ax",
                                       "Ay", "Ax", "Bx", "Bx", "Ax"]
    assert got[("A", "x")]["runs"] == 3 and got[("A", "x")]["warmup"] == 1
    assert got[("B", "y")]["runs"] == 2
    s = got[("A", "x")]
    assert len(s["samples"]["cpu"]) == 3 and s["cpu_median_s"] >= 0
    assert s["peak_rss_kb"] > 0 and s["interleaved"][1] == ["B", "A"]
    # the warmup's export is dropped with its sample
    assert [h["command"] for h in s["hyperfine"]] == [shlex.join(cmd("A", "x")[0])] * 3


def test_a_failing_command_is_reported_not_raised(tmp_path):
    jobs = {"ok": (2, 0, lambda s: (["true"], tmp_path)),
            "bad": (2, 0, lambda s: (["sh", "-c", "echo broken >&2; exit 3"], tmp_path))}
    got, failed = timing.interleaved(["A"], jobs, lambda s: None)
    assert ("A", "ok") in got and ("A", "bad") not in got
    assert "exit 3" in failed[("A", "bad")] and "broken" in failed[("A", "bad")]
    assert "Ignoring" not in failed[("A", "bad")]           # hyperfine's own note


# --- the instruction counter -------------------------------------------------------

def test_perf_output_parsing():
    assert icount.parse_perf("1234567,,instructions:u,1000,100.00,,\n") == 1234567
    assert icount.parse_perf("<not supported>,,instructions:u,0,100.00,,\n") is None
    assert icount.parse_counts("10 5\n11 7\n") == (12, 2)
    with pytest.raises(Exception, match="unreadable"):
        icount.parse_counts("10 5 x\n")


C_SOURCE = """#define TWICE(x) ((x) + (x))
int f(int a) { return TWICE(TWICE(a)); }
"""


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_counts_repeat_and_grow_with_the_work(tmp_path, cc):
    """The counter this machine has (perf, else QEMU with kx-icount.so):
    the same compile counted twice agrees within 0.1% (under QEMU exactly
    for the compiler proper); a bigger input counts more; gcc's cc1 and as
    are counted (one line per process under QEMU)."""
    src, why = icount.source()
    assert src in ("perf", "qemu-tcg"), why
    # a missing compiler fails the suite (make test installs clang)
    assert shutil.which(cc), f"{cc} is not installed: make test installs it"
    (tmp_path / "a.c").write_text(C_SOURCE)
    (tmp_path / "b.c").write_text(C_SOURCE + "".join(
        f"int g{i}(int a) {{ return TWICE(TWICE(TWICE(a + {i}))); }}\n" for i in range(400)))
    argv = [cc, "-O2", "-c", "-o", "out.o", "a.c"]
    one, two = (icount.count(argv, tmp_path, cc) for _ in range(2))
    assert one["instructions"] > 1_000_000
    assert abs(one["instructions"] - two["instructions"]) <= 0.001 * one["instructions"]
    big = icount.count([cc, "-O2", "-c", "-o", "out.o", "b.c"], tmp_path, cc)
    assert big["instructions"] > 1.2 * one["instructions"]
    if src == "qemu-tcg":
        assert one["processes"] == (3 if cc == "gcc" else 1)   # driver, cc1, as
    with pytest.raises(Exception, match="failed"):
        icount.count([cc, "-c", "missing.c"], tmp_path, cc)


# --- where the work goes ------------------------------------------------------------

def test_runs_go_where_time_decides():
    # time decides (some side not counted): enough runs for Welch's test
    assert [timing.choose_runs(s) for s in (0.5, 5, 40)] == [5, 3, 2]
    # instructions decide at every side: the times are context
    assert [timing.choose_runs(s, counted=True) for s in (0.5, 5, 40)] == [2, 1, 1]
    assert [timing.choose_warmup(s) for s in (0.5, 40)] == [1, 0]
    assert timing.choose_warmup(0.5, counted=True) == 0
    assert timing.choose_runs(40, override=7, counted=True) == 7


class _Req:
    def __init__(self, cap):
        self.icount_cap = cap


def test_count_plan_caps_only_the_preprocessor(tmp_path, monkeypatch):
    from bench.measure import cost
    from bench.measure.cache import At, Cache
    monkeypatch.setattr(icount, "source", lambda: ("qemu-tcg", "test"))
    cache = Cache(tmp_path)
    args = (At("c0ffee", "gcc", "gcc 12", "h"), "mm/x.c")
    what, v = cost.count_plan(_Req(60), cache, *args, "time_E", 61.0)
    assert what == "have" and v["instructions"] is None
    assert "61.0 s of CPU, over the 60 s cap (ICOUNT_CAP)" in v["instructions_note"]
    # -c is counted whatever the estimate; a cached count is reused
    what, key = cost.count_plan(_Req(60), cache, *args, "time_c", 0)
    assert what == "count"
    cache.put(key, {"instructions": 5, "instructions_source": "qemu-tcg",
                    "count_s": 1.0, "processes": 2})
    assert cost.count_plan(_Req(60), cache, *args, "time_c", 0)[0] == "have"
    # ... by the same counter only: a changed plugin counts again
    plugin = tmp_path / "kx-icount.c"
    plugin.write_text("/* v1 */")
    monkeypatch.setattr(icount, "HERE", tmp_path)
    monkeypatch.setattr(icount, "identity", icount.identity.__wrapped__)
    assert cost.count_plan(_Req(60), cache, *args, "time_c", 0)[0] == "count"
    _, key1 = cost.count_plan(_Req(60), cache, *args, "time_c", 0)
    plugin.write_text("/* v2 */")
    assert cost.count_plan(_Req(60), cache, *args, "time_c", 0)[1] != key1
    what, v = cost.count_plan(_Req(0), cache, *args, "time_c", 0)
    assert what == "have" and v["instructions_note"] == "ICOUNT_CAP=0"
    # the counts join the timed entries with their slowdown
    e = {"time_c": {"median_s": 0.5}, "time_E": {"median_s": 0.1}}
    cost.add_counts(e, {"time_c": {"instructions": 5, "count_s": 2.0},
                        "time_E": {"instructions": None, "instructions_note": "x"}})
    assert e["time_c"]["count_slowdown"] == 4.0 and e["time_E"]["instructions_note"] == "x"


def test_a_whole_kernel_build_marks_every_object_built(tmp_path):
    from kbuild import builddir as engine
    from kbuild import kcmd
    bdir = tmp_path / "kb-0123456789ab-gcc"
    (bdir / "mm").mkdir(parents=True)
    (bdir / ".kexpand-config").write_text("h1\n")
    assert not engine.built(bdir, "h1", ["mm/x.c"])
    engine.note_full_build(bdir)
    # an object counts only where Kbuild left its command file
    assert not engine.built(bdir, "h1", ["mm/x.c"])
    kcmd.cmd_file(bdir, "mm/x.c").write_text("cmd_mm/x.o := gcc\n")
    assert engine.built(bdir, "h1", ["mm/x.c"])
    assert not engine.built(bdir, "h2", ["mm/x.c"])        # another config
    # a copy of the dir (a seeded build dir) does not inherit the mark
    copy = tmp_path / "kb-ba9876543210-gcc"
    import shutil as sh
    sh.copytree(bdir, copy)
    assert not engine.built(copy, "h1", ["mm/x.c"])


def test_an_error_in_the_pool_kills_the_running_children(tmp_path):
    """The exact work runs in threads whose children have sessions of their
    own: an infra error (or Ctrl-C) must end them, not wait for them. The
    error is raised once the child is known to be running (it has opened
    the fifo), never after a sleep."""
    import time
    from kbuild.proc import run, run_jobs
    from kbuild.util import KexpandError
    got, fifo = {}, tmp_path / "fifo"
    os.mkfifo(fifo)

    def slow():
        got["rc"] = run(["sh", "-c", 'echo started > "$0"; exec sleep 120', str(fifo)],
                        check=False).returncode

    def bad():
        assert fifo.read_text() == "started\n"     # blocks until the child writes
        raise KexpandError("the counter broke", "infra")
    t0 = time.monotonic()
    with pytest.raises(KexpandError, match="the counter broke"):
        run_jobs([(slow, ()), (bad, ())], 2, {})
    assert time.monotonic() - t0 < 60 and got["rc"] == -9


def test_kill_all_finds_a_child_that_runs_before_popen_returns(tmp_path, monkeypatch):
    """A child can run (and be seen running) before Popen returns in the
    thread that starts it; a kill_all() from another thread then must
    still find it (spawn lists it under the lock kill_all takes). Here
    Popen returns late on purpose: it waits for kill_all to have returned,
    which it never may before the child is listed."""
    import subprocess
    import threading
    from kbuild import proc
    real, started, killed = subprocess.Popen, threading.Event(), threading.Event()

    def late(*a, **kw):
        p = real(*a, **kw)
        started.set()
        killed.wait(2)      # kill_all must not get past spawn's lock meanwhile
        return p
    monkeypatch.setattr(proc.subprocess, "Popen", late)
    box = {}
    t = threading.Thread(target=lambda: box.update(p=proc.spawn(["sleep", "120"])))
    t.start()
    assert started.wait(60)
    proc.kill_all()
    killed.set()
    t.join()
    assert box["p"].wait(timeout=60) == -9


def test_the_pool_runs_what_a_job_returns_first_and_fails_only_its_file():
    """A file's expansion hands its -E count and attribution to the front of
    the queue; a job's (non-infra) error fails its file, not the point."""
    from kbuild.proc import run_jobs
    from kbuild.util import KexpandError
    order, failed = [], {}

    def expand(f):
        order.append(("expand", f))
        return [(count, (f,)), (count, (f + "'",))]

    def count(f):
        order.append(("count", f))

    def broken(f):
        raise KexpandError(f"{f}: no such command")
    run_jobs([(expand, ("a",)), (broken, ("b",)), (expand, ("c",))], 1, failed)
    assert order == [("expand", "a"), ("count", "a"), ("count", "a'"),
                     ("expand", "c"), ("count", "c"), ("count", "c'")]
    assert failed == {"b": {"status": "error", "error": "b: no such command"}}


def test_a_core_given_back_by_a_beside_joins_the_pool():
    """make check's tip runs its long count beside the other jobs on
    JOBS - 1 workers; when the count ends, its core joins the pool
    (run_jobs' `more`). Two jobs that can only end together (a barrier of
    two) end with one worker once `more` is set, and the Beside's join()
    gives what its function raised."""
    import threading
    from kbuild.proc import Beside, run_jobs
    from kbuild.util import KexpandError
    both = threading.Barrier(2, timeout=60)

    def meet():
        both.wait()

    def count():
        raise KexpandError("the count broke", "infra")
    beside = Beside(count, ())
    run_jobs([(meet, ()), (meet, ())], 1, {}, more=beside.done)
    assert not both.broken
    with pytest.raises(KexpandError, match="the count broke"):
        beside.join()


def test_the_count_beside_is_the_largest_files_and_leaves_the_rest(tmp_path, monkeypatch):
    """make check's tip: of its counts, the one of the file largest at the
    tip goes beside (a whole build's witness, explained first, is small);
    the other jobs stay in the pool's list; the tree may move on once its
    copy is made; the row gets its count."""
    from types import SimpleNamespace
    from bench.cmd import checkdetail as cd
    made = []
    monkeypatch.setattr(cd.sandbox, "enabled", lambda: True)
    monkeypatch.setattr(cd.sc, "count_cached", lambda *a: False)
    monkeypatch.setattr(cd.cost, "freeze", lambda bdir, f, view: made.append(f))
    monkeypatch.setattr(cd.sc, "count_c", lambda req, cache, at, bdir, f, view:
                        {"instructions": 7, "instructions_source": "t"})
    req = SimpleNamespace(jobs=2, progress=SimpleNamespace(say=lambda m: None))
    at = SimpleNamespace(commit="c" * 40, cc="gcc")
    cache = SimpleNamespace(work=tmp_path)
    rows = {f: {"file": f, "bytes_tip": n} for f, n in
            (("witness.c", 10), ("setup.c", 1000), ("other.c", 100))}
    ranked = [(1, (cd._count, (f"{f} (gcc)", rows[f], "tip", req, cache, at, "b")))
              for f in rows] + [(2, (cd._macros, ("witness.c (gcc)",)))]
    beside, frozen = cd._count_beside(req, ranked)
    beside.join()
    assert frozen.is_set() and made == ["setup.c"]
    assert [j[1][1][0] for j in ranked] == ["witness.c (gcc)", "other.c (gcc)",
                                            "witness.c (gcc)"]
    assert rows["setup.c"]["instructions"]["tip"]["instructions"] == 7


def test_counts_do_not_see_the_environment_or_where_the_object_goes(tmp_path, monkeypatch):
    """A count is hermetic: a fixed environment, the object and the tools at
    paths of one length named by the command, PWD a link of one length. The
    same command from two trees whose paths have one length, with another
    environment and another scratch object, counts the same instructions
    (to within gcc's own random seed: a few tens in tens of millions)."""
    counts = []
    for i, extra in enumerate(({"KX_NOISE": "x" * 10}, {"KX_NOISE": "y" * 3000})):
        d = tmp_path / f"tree{i}" / "kb-x"
        d.mkdir(parents=True)
        (d.parent / "a.c").write_text(C_SOURCE)
        monkeypatch.setenv("KX_NOISE", extra["KX_NOISE"])
        scratch = tmp_path / ("s" * (1 + 40 * i)) / "a.o"     # another length each
        argv = ["gcc", "-O2", "-c", "-o", str(scratch), "../a.c"]
        counts.append(icount.count(argv, d, "gcc")["instructions"])
    assert abs(counts[0] - counts[1]) <= 1e-5 * counts[0], counts
