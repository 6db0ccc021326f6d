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
       "--files", "arch/x86/xen/setup.c", "--cc", "gcc", "--no-time", "--no-boot")
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
           "--files", "arch/x86/xen/setup.c", "--cc", "gcc", "--no-time", "--no-boot")
    assert "building" not in p.stderr and "preprocessing" not in p.stderr
    assert (base / "results/summary.csv").read_text() == before


def test_timing_gcc_and_clang(env):
    """hyperfine -E and -c times and peak RSS, with both compilers, on a
    small file (the heavy ones would take minutes)."""
    base, e = env
    kx(dict(e, RUNS="2"), "bench", "--points", "packaged",
       "--files", "mm/percpu.c", "--no-boot")
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


def test_compare_series_points(env):
    base, e = env
    kx(e, "compare", "--a", "laight-v4", "--b", "torvalds-fixes",
       "--files", "arch/x86/xen/setup.c", "--cc", "gcc", "--no-time")
    out = base / "results/compare/laight-v4..torvalds-fixes"
    row = next(csv.DictReader(open(out / "compare.csv")))
    assert row["file"] == "arch/x86/xen/setup.c"
    assert float(row["bytes_ratio"]) <= 0.1          # the fix: >= 10x smaller
    md = (out / "report.md").read_text()
    assert "x smaller" in md and "extra_pages = min3(" in md
    assert (out / "bytes-gcc.png").exists()
    assert (base / "results/index.html").exists()


def test_bisect_names_a_laight_patch(env):
    base, e = env
    tree = base / "work/tree"
    head = subprocess.run(["git", "-C", tree, "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout
    p = kx(e, "bisect", "--file", "arch/x86/xen/setup.c", "--good", "pre-6.7",
           "--bad", "laight-v4")
    res = json.load(open(next((base / "results/bisect").glob("*/*.json"))))
    laight = subprocess.run(["git", "-C", tree, "rev-list", "pre-6.7..laight-v4"],
                            capture_output=True, text=True).stdout.split()
    assert res["first_bad"] in laight
    assert res["agrees_with_per_commit_measurements"]
    assert "first commit past" in p.stdout
    # the measured tree has no bisect state left behind
    assert not (tree / ".git/BISECT_LOG").exists()
    assert subprocess.run(["git", "-C", tree, "bisect", "log"],
                          capture_output=True).returncode != 0
    del head


def test_compare_user_tree_is_left_alone(env):
    """A second git tree made from the packaged tarball, with two commits of
    our own; compare must leave it byte for byte as it was."""
    base, e = env
    user = base / "user-linux"
    user.mkdir()
    subprocess.run(["tar", "-xf", "/usr/src/linux-source-6.1.tar.xz", "-C",
                    user, "--strip-components=1"], check=True)
    g = lambda *a: subprocess.run(["git", "-C", user, *a], check=True,  # noqa: E731
                                  capture_output=True, text=True).stdout
    g("init", "-q")
    g("add", "-A", "-f", ".")
    g("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    pb = user / "include/linux/pageblock-flags.h"
    pb.write_text(pb.read_text().replace("MIN_T(unsigned int, HUGETLB_PAGE_ORDER",
                                         "min_t(unsigned int, HUGETLB_PAGE_ORDER"))
    g("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am",
      "pageblock_order through min_t() again")
    (user / "mm/compaction.c").write_text("/* uncommitted */\n" +
                                          (user / "mm/compaction.c").read_text())
    from kbuild import trees
    before = trees.snapshot(user)
    p = kx(e, "compare", "--kernel", str(user), "--a", "HEAD~1", "--b", "HEAD",
           "--files", "mm/compaction.c", "--cc", "gcc", "--no-time")
    assert "uncommitted changes" in p.stderr
    assert trees.snapshot(user) == before
    assert (user / "mm/compaction.c").read_text().startswith("/* uncommitted */")
    row = next(csv.DictReader(open(base / "results/compare/HEAD_1..HEAD/compare.csv")))
    assert int(row["bytes_b"]) > int(row["bytes_a"])   # min_t() expands more
    subprocess.run(["rm", "-rf", str(user)])


def test_boot_packaged_point_in_qemu(env):
    """Build the packaged point's bzImage, boot it in QEMU with the KUnit
    module, and check the suite passes; then the fault paths with the same
    kernel: a hang ends at the timeout, a panic is named; no QEMU is left."""
    base, e = env
    p = kx(e, "boot", "--points", "packaged")
    rows = list(csv.DictReader(open(base / "results/boot.csv")))
    row = next(r for r in rows if r["point"] == "packaged")
    assert row["status"] == "booted", p.stderr[-3000:]
    assert int(row["tests_passed"]) > 0 and row["tests_failed"] == "0"
    assert float(row["boot_s"]) > 0
    rec = next(b for b in (json.load(open(p)) for p in
                           (base / "results").glob("*/boot.json"))
               if b["point"] == "packaged")
    assert "-nic none" in rec["qemu_command"] and "-no-reboot" in rec["qemu_command"]
    conf = next(c for c in (json.load(open(p)) for p in
                            (base / "results").glob("*/conformance.json"))
                if c["point"] == "packaged")
    assert conf["results"]["05-min-int-4u"]["verdict"] == "rejected"
    assert conf["results"]["04-min-uint-4"]["verdict"] == "accepted"

    from kbuild import boot
    bz = next((base / "work/tree").glob("kb-*-gcc/arch/x86/boot/bzImage"))
    init = base / "hang-init"
    subprocess.run(["gcc", "-static", "-Os", "-o", init,
                    REPO / "tests/data/boot/hang-init.c"], check=True)
    rd = boot.make_initramfs(base / "hang.cpio", {"init": init.read_bytes()})
    r = boot.classify(boot.run_qemu(boot.qemu_command(bz, rd), timeout=20))
    assert r["status"] == "timeout" and r["reached_init"]
    cmd = boot.qemu_command(bz, rd)
    i = cmd.index("-initrd")
    del cmd[i:i + 2]
    r = boot.classify(boot.run_qemu(cmd, timeout=120))
    assert r["status"] == "kernel-panic" and "No working init" in r["panic"]
    left = subprocess.run(["pgrep", "-f", f"qemu-system-x86_64.*{bz}"],
                          capture_output=True, text=True).stdout
    assert left == ""
