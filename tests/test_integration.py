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
       "--files", "arch/x86/xen/setup.c", "--cc", "gcc", "--no-time")
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
    base, e = env
    before = (base / "results/summary.csv").read_text()
    p = kx(e, "bench", "--points", "pre-6.7,laight-v4,laight-v4-clamp-move",
           "--files", "arch/x86/xen/setup.c", "--cc", "gcc", "--no-time")
    assert "building" not in p.stderr and "preprocessing" not in p.stderr
    assert (base / "results/summary.csv").read_text() == before


def test_timing_gcc_and_clang(env):
    """hyperfine -E and -c times and peak RSS, with both compilers, on a
    small file (the heavy ones would take minutes)."""
    base, e = env
    kx(dict(e, RUNS="2"), "bench", "--points", "packaged",
       "--files", "mm/percpu.c")
    rows = [r for r in csv.DictReader(open(base / "results/summary.csv"))
            if r["point"] == "packaged"]
    assert {r["compiler"] for r in rows} == {"gcc", "clang"}
    for r in rows:
        assert r["file"] == "mm/percpu.c" and int(r["expanded_bytes"]) > 1_000_000
        assert float(r["e_time_median_s"]) > 0 and float(r["c_time_median_s"]) > 0
        assert r["e_runs"] == r["c_runs"] == "2"
        assert int(r["peak_rss_kb"]) > 10_000
    rec = json.load(open(next(p for p in (base / "results").glob("*/clang.json"))))
    t = rec["files"]["mm/percpu.c"]["time_c"]
    assert len(t["hyperfine"]["times"]) == 2 and t["warmup"] == 1
    assert t["command"].startswith("cd kb-") and " -c -o " in t["command"]
    assert rec["compiler_version"].startswith(("Debian clang", "clang"))


def test_unknown_point_is_user_error(env):
    base, e = env
    p = kx(e, "bench", "--points", "v6.6", check=False)
    assert p.returncode == 2
    assert "unknown point v6.6" in p.stderr and "laight-v4" in p.stderr
    assert "Traceback" not in p.stderr
