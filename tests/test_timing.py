"""Timed runs under hyperfine (bench/measure/timing.py): each run is one
hyperfine invocation with the exact command, from the command's directory;
its wall, user and system time come from hyperfine's export, its peak RSS
from wait4 on hyperfine; a run past its limit is killed with its process
group. hyperfine must be installed: a missing one fails these tests (and
`make bench` installs it). No test looks at wall-time values: the machine
is shared."""
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

import pytest

from bench import results
from bench.measure import cost, icount, timing
from bench.measure.cache import COST_VERSION, TIMING_VERSION, At, Cache
from kbuild import sandbox
from kbuild.util import KexpandError

HYPERFINE = shutil.which("hyperfine")



@pytest.fixture(autouse=True)
def _bare(monkeypatch):
    """These tests drive hyperfine, the counters and the scan's plumbing
    with stand-ins and fixtures outside a tree (a fake hyperfine on PATH,
    programs in the test's dir): they run without the sandbox, which
    tests/test_sandbox.py and the integration tests cover."""
    monkeypatch.setenv(sandbox.ENV, "0")

def test_hyperfine_is_installed():
    assert HYPERFINE, ("hyperfine is not on PATH: it times every run "
                       "(apt-get install hyperfine)")


def fake_hyperfine(tmp_path, monkeypatch):
    """A `hyperfine` first on PATH that logs its pid, cwd and argv (one
    file per call, NUL-separated) and execs the real one."""
    assert HYPERFINE, "hyperfine is not installed"
    bin_, calls = tmp_path / "bin", tmp_path / "calls"
    bin_.mkdir()
    calls.mkdir()
    (bin_ / "hyperfine").write_text(
        "#!/bin/sh\n"
        f"f=$(mktemp {shlex.quote(str(calls))}/call.XXXXXX)\n"
        'printf "%s\\0%s\\0" "$$" "$PWD" > "$f"\n'
        'for a in "$@"; do printf "%s\\0" "$a" >> "$f"; done\n'
        f"exec {shlex.quote(HYPERFINE)} \"$@\"\n")
    (bin_ / "hyperfine").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")

    def read():
        out = []
        for f in sorted(calls.iterdir(), key=lambda p: p.stat().st_mtime_ns):
            pid, cwd, *argv = f.read_bytes().decode().split("\0")[:-1]
            out.append((int(pid), cwd, argv))
        return out
    return read


ODD_ARGS = ["a b", "it's", "$HOME", 'x"y', "", "back\\slash", "*", "-", "two\nlines"]


def spaced_program(tmp_path):
    """A program in a directory whose name has a space; it writes its
    arguments, NUL-separated, to args in its working directory."""
    d = tmp_path / "dir with space"
    d.mkdir()
    prog = d / "show args"
    prog.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done >> args\n')
    prog.chmod(0o755)
    return d, prog


def test_each_run_is_one_hyperfine_of_the_exact_command(tmp_path, monkeypatch):
    """Warmups and runs, interleaved, are one `hyperfine -N --runs 1` each,
    of the command line shlex.join(argv), started in the command's
    directory; the record keeps each run's export, the command included."""
    calls = fake_hyperfine(tmp_path, monkeypatch)
    d, prog = spaced_program(tmp_path)
    argv = [str(prog), *ODD_ARGS]
    jobs = {"x": (2, 1, lambda side: (argv, d))}
    got, failed = timing.interleaved(["A", "B"], jobs, lambda side: None)
    assert not failed
    line = shlex.join(argv)
    log = calls()
    assert len(log) == 6                         # 2 sides x (1 warmup + 2 runs)
    for _pid, cwd, hf_argv in log:
        assert cwd == str(d)
        assert hf_argv[:9] == ["-N", "--runs", "1", "--warmup", "0",
                               "--style", "none", "--ignore-failure", "--output"]
        assert hf_argv[-2:] == ["--", line] and "--export-json" in hf_argv
    # hyperfine split the line back into exactly these arguments, six times
    words = (d / "args").read_bytes().decode().split("\0")[:-1]
    assert words == ODD_ARGS * 6
    for side in "AB":
        s = got[(side, "x")]
        assert s["runs"] == 2 and s["warmup"] == 1
        assert [h["command"] for h in s["hyperfine"]] == [line, line]
        assert [h["exit_codes"] for h in s["hyperfine"]] == [[0], [0]]
        assert s["samples"]["times"] == [round(h["times"][0], 6) for h in s["hyperfine"]]


def test_user_and_system_time_of_each_run_come_from_hyperfine(tmp_path):
    burn = [sys.executable, "-c", "sum(i * i for i in range(2_000_000))"]
    got, failed = timing.interleaved(["A"], {"b": (3, 0, lambda s: (burn, tmp_path))},
                                     lambda s: None)
    assert not failed
    s = got[("A", "b")]
    hf = s["hyperfine"]
    assert len(hf) == 3 and all(len(h["times"]) == 1 for h in hf)
    assert s["samples"]["user"] == [round(h["user"], 6) for h in hf]
    assert s["samples"]["system"] == [round(h["system"], 6) for h in hf]
    assert s["samples"]["cpu"] == [round(h["user"] + h["system"], 6) for h in hf]
    assert all(u > 0 for u in s["samples"]["user"])        # a CPU-bound command
    assert s["cpu_median_s"] == sorted(s["samples"]["cpu"])[1]
    assert results.timing_ok(s)


def test_peak_rss_is_the_commands(tmp_path):
    """wait4 on hyperfine reports the largest RSS of hyperfine and the
    processes it waited for: a command that fills 200 MB reports them."""
    fill = [sys.executable, "-c", "x = b'\\x01' * (200 << 20)"]
    got, failed = timing.interleaved(["A"], {"m": (2, 0, lambda s: (fill, tmp_path))},
                                     lambda s: None)
    assert not failed
    s = got[("A", "m")]
    assert all(kb >= 200 * 1024 for kb in s["samples"]["rss_kb"])
    assert s["peak_rss_kb"] == max(s["samples"]["rss_kb"])
    assert len(s["hyperfine"]) == 2


def gone(pid):
    """The process has ended: no longer in /proc, or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_a_hung_run_is_killed_with_its_process_group(tmp_path, monkeypatch):
    """A run past its limit ends hyperfine, the command and the command's
    own children; it is an error of that job at that side, and the other
    jobs go on."""
    calls = fake_hyperfine(tmp_path, monkeypatch)
    pids = tmp_path / "pids"
    hang = ["sh", "-c", f'echo $$ > {shlex.quote(str(pids))}; sleep 1000 & '
            f'echo $! >> {shlex.quote(str(pids))}; wait']
    limit = timing.Limit(2, "a test's limit")
    jobs = {"hang": (2, 0, lambda s: (hang, tmp_path, limit)),
            "ok": (2, 0, lambda s: (["true"], tmp_path))}
    t0 = time.monotonic()
    got, failed = timing.interleaved(["A"], jobs, lambda s: None)
    assert time.monotonic() - t0 < 60
    err = failed[("A", "hang")]
    assert "killed after 2 s" in err and "a test's limit" in err
    assert "not cached" in err and shlex.join(hang) in err
    assert ("A", "hang") not in got and got[("A", "ok")]["runs"] == 2
    # one hyperfine for the hung job (its second run is not attempted)
    hung = [pid for pid, _, argv in calls() if argv[-1] == shlex.join(hang)]
    assert len(hung) == 1
    procs = [int(p) for p in pids.read_text().split()]
    assert len(procs) == 2
    for pid in hung + procs:
        for _ in range(50):
            if gone(pid):
                break
            time.sleep(0.1)
        assert gone(pid), f"process {pid} survived the timeout"


def test_run_once_timeout_is_not_a_build_failure(tmp_path):
    with pytest.raises(timing.TimedOut) as e:
        timing.run_once(["sleep", "1000"], tmp_path, timing.Limit(1, "one second"))
    assert e.value.klass == "infra"            # never a verdict on the code
    assert "killed after 1 s, its limit (one second)" in str(e.value)


@pytest.mark.parametrize("pidfd", [True, False])
def test_waiting_with_a_limit_keeps_the_rusage(monkeypatch, pidfd):
    """wait4_within waits on a pidfd, or polls where pidfd_open is refused
    (old kernels, seccomp): either way the rusage of a finished child, or
    None while it runs."""
    from kbuild.proc import kill_group, spawn
    if not pidfd:
        def refused(pid):
            raise OSError(38, "Function not implemented")
        monkeypatch.setattr(os, "pidfd_open", refused)
    fill = spawn([sys.executable, "-c", "x = b'\\x01' * (50 << 20)"])
    status, ru = timing.wait4_within(fill, 60)
    fill.returncode = os.waitstatus_to_exitcode(status)
    assert fill.returncode == 0 and ru.ru_maxrss >= 50 * 1024
    hang = spawn(["sleep", "1000"])
    try:
        assert timing.wait4_within(hang, 0.3) is None and hang.poll() is None
    finally:
        kill_group(hang)
    assert hang.returncode == -9


def test_a_failing_command_reports_its_exit_code_and_stderr(tmp_path):
    bad = ["sh", "-c", "echo first >&2; echo broken >&2; exit 3"]
    with pytest.raises(KexpandError) as e:
        timing.run_once(bad, tmp_path)
    msg = str(e.value)
    assert e.value.klass == "build"
    assert "(exit 3)" in msg and msg.endswith("first\nbroken")   # no hyperfine note
    assert shlex.join(bad) in msg


def test_a_program_hyperfine_cannot_start_is_infra(tmp_path):
    jobs = {"x": (1, 0, lambda s: (["/nonexistent/cc", "-c"], tmp_path))}
    with pytest.raises(KexpandError, match="hyperfine could not time") as e:
        timing.interleaved(["A"], jobs, lambda s: None)
    assert e.value.klass == "infra" and "No such file" in str(e.value)


def test_a_missing_hyperfine_is_an_infra_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KexpandError, match="hyperfine: command not found.*apt-get "
                       "install hyperfine") as e:
        timing.run_once(["/bin/true"], tmp_path)
    assert e.value.klass == "infra"


def test_an_unreadable_hyperfine_export_is_an_infra_error(tmp_path, monkeypatch):
    """A hyperfine that exits 0 but writes an export that is not its JSON
    (another version, a full disk): exit 5 naming the command, not a
    traceback, for both timers."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "hyperfine").write_text(
        '#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = --export-json ] && '
        'printf \'{"results": [\' > "$2"; shift; done\nexit 0\n')
    (bin_ / "hyperfine").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    for call in (lambda: timing.hyperfine(["/bin/true"], tmp_path, runs=1),
                 lambda: timing.run_once(["/bin/true"], tmp_path)):
        with pytest.raises(KexpandError, match="hyperfine wrote no readable export.*"
                           "/bin/true") as e:
            call()
        assert e.value.klass == "infra"


# --- limits --------------------------------------------------------------------

def test_limits_grow_with_the_estimate_above_a_floor():
    assert timing.run_limit(None).seconds == 600 == timing.run_limit(0).seconds
    assert timing.run_limit(45).seconds == 900
    assert "20 x 45.0 s" in timing.run_limit(45).rule
    assert icount.count_limit(None, "qemu-tcg").seconds == 1800
    assert icount.count_limit(78.4, "qemu-tcg").seconds == pytest.approx(4704)
    assert "under QEMU" in icount.count_limit(1, "qemu-tcg").rule
    assert icount.count_limit(45, "perf") == timing.run_limit(45)


def test_time_group_gives_each_run_its_limit(tmp_path, monkeypatch):
    """cost.time_group passes run_limit(the file's estimate) with every
    command it hands to interleaved()."""
    seen = []

    def fake_interleaved(labels, jobs, prepare, say):
        for (f, kind), (_n, _w, command) in jobs.items():
            seen.append((f, kind, command(labels[0])[2]))
        return {}, {}
    monkeypatch.setattr(timing, "interleaved", fake_interleaved)
    monkeypatch.setattr(cost.kcmd, "compile_command", lambda bdir, f: ["gcc", "-c", f])

    class Split:
        def timed(self, what):
            import contextlib
            return contextlib.nullcontext()

    class Req:
        runs = None
        work = tmp_path
        progress = type("P", (), {"say": staticmethod(lambda s: None)})()
        split = Split()
    cost.time_group(Req(), Cache(tmp_path), tmp_path / "tree", [("a", "c0ffee")],
                    At("c0ffee", "gcc", "gcc 12", "h"), {"mm/x.c": [0]}, {"mm/x.c": 50.0},
                    {("mm/x.c", "time_E"): True, ("mm/x.c", "time_c"): True})
    assert sorted(k for _, k, _ in seen) == ["time_E", "time_c"]
    assert all(lim == timing.run_limit(50.0) and lim.seconds == 1000
               for *_, lim in seen)


def test_a_count_past_its_limit_is_killed_and_not_counted(tmp_path):
    """A hung count (QEMU or perf running `sleep 1000`) ends at its limit:
    TimedOut, infra but not a verdict; cost.count_one then records the
    file as not counted, and caches nothing."""
    src, why = icount.source()
    assert src in ("perf", "qemu-tcg"), why
    t0 = time.monotonic()
    with pytest.raises(timing.TimedOut, match=r"killed after 3 s, its limit \(a test"):
        icount.count(["sleep", "1000"], tmp_path, "clang",
                     timeout=timing.Limit(3, "a test's limit"))
    assert time.monotonic() - t0 < 60


def test_count_one_reports_a_timeout_and_caches_nothing(tmp_path, monkeypatch):
    seen = {}

    def hung(argv, cwd, cc, timeout=None, rw=(), view=None):
        seen["limit"] = timeout
        raise timing.TimedOut(f"not counted: the count was killed after "
                              f"{timeout.seconds:g} s, its limit ({timeout.rule})")
    monkeypatch.setattr(icount, "count", hung)
    monkeypatch.setattr(icount, "source", lambda: ("qemu-tcg", "test"))
    monkeypatch.setattr(cost.kcmd, "compile_command", lambda bdir, f: ["gcc", "-c", f])
    cache = Cache(tmp_path / "work")
    bdir = tmp_path / "tree" / "kb-c0ffee-gcc"
    bdir.mkdir(parents=True)
    c = cost.count_one(cache, "k1", bdir, "mm/x.c", "gcc", "time_E", estimate_s=40.0)
    assert seen["limit"] == icount.count_limit(40.0, "qemu-tcg")
    assert seen["limit"].seconds == 2400
    assert c["instructions"] is None and "killed after 2400 s" in c["instructions_note"]
    assert cache.get("k1") is None
    # no estimate (a -c counted beside its expansion): the floor
    cost.count_one(cache, "k2", bdir, "mm/x.c", "gcc", "time_c")
    assert seen["limit"].seconds == 1800


# --- the cache and the record -----------------------------------------------------

def test_new_timings_do_not_mix_with_old_and_counts_stay_valid(tmp_path):
    cache = Cache(tmp_path)
    at = At("c0ffee", "gcc", "gcc 12", "h")
    args = (["c0ffee", "deadbeef"], "gcc", "gcc 12", "h", "mm/x.c")
    # the keys are what they were before cache.At: no measurement is lost
    # timings and counts are versioned apart: timings by TIMING_VERSION...
    assert cache.group_time_key(at, args[0], "mm/x.c", "2/2") == \
        Cache._key(*args, "interleaved", TIMING_VERSION, "runs=2/2")
    assert cache.group_time_key(at, args[0], "mm/x.c", "2/2") != \
        Cache._key(*args, "interleaved", "1", "runs=2/2")       # the wait4 loop's
    # ... counts by COST_VERSION alone
    assert cache.icount_key(at, "mm/x.c", "time_c", "q") == \
        Cache._key("c0ffee", "gcc", "gcc 12", "h", "mm/x.c", "time_c", "icount", "q",
                   COST_VERSION)


def test_records_of_every_timer_are_well_formed():
    base = {"median_s": 1.0, "stddev_s": 0.0, "runs": 2}
    new = dict(base, samples={"times": [1.0, 1.0], "cpu": [0.9, 0.9]},
               hyperfine=[{"command": "gcc", "times": [1.0]}] * 2)
    assert results.timing_ok(new)
    assert results.timing_ok(dict(base, samples={"times": [1.0]}))   # wait4 loop
    assert results.timing_ok(dict(base, hyperfine={"times": [1.0]}))  # before
    assert not results.timing_ok(dict(base, hyperfine=[{"times": [1.0]}]))  # no samples
    assert not results.timing_ok(dict(new, hyperfine=[1.0]))
