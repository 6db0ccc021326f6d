"""Integration on the real packaged tree, in a work directory of its own:
times and instruction counts with real gcc and clang, and the boot check
(laight-v4's bzImage built with gcc, booted in QEMU, TCG, no network,
with the KUnit module, then the fault paths with the same kernel). Apart
from test_integration.py so that `make test` runs it in the other lane,
after the 6.12 module (tests/lanes.py)."""
import csv
import json
import subprocess

import pytest

from test_integration import REPO, env, kx  # noqa: F401

pytestmark = pytest.mark.integration


def test_timing_gcc_and_clang(env):
    """-E and -c wall and CPU times, peak RSS and instruction counts, with
    both compilers, on a small file (the heavy ones would take minutes)."""
    base, e = env
    kx(dict(e, RUNS="2"), "bench", "--points", "packaged",
       "--files", "mm/percpu.c", "--no-boot", "--no-macros")
    rows = [r for r in csv.DictReader(open(base / "results/summary.csv"))
            if r["point"] == "packaged"]
    assert {r["compiler"] for r in rows} == {"gcc", "clang"}
    for r in rows:
        assert r["file"] == "mm/percpu.c" and int(r["expanded_bytes"]) > 1_000_000
        assert float(r["e_time_median_s"]) > 0 and float(r["c_time_median_s"]) > 0
        assert r["e_runs"] == r["c_runs"] == "2"
        assert int(r["peak_rss_kb"]) > 10_000
        assert float(r["c_cpu_median_s"]) > 0 and float(r["e_cpu_median_s"]) > 0
        # a kernel compile is billions of instructions; -c does all of -E's work
        assert int(r["c_instructions"]) > int(r["e_instructions"]) > 10 ** 8
        assert r["instructions_source"] in ("perf", "qemu-tcg")
    rec = json.load(open(next(p for p in (base / "results").glob("*/clang.json"))))
    t = rec["files"]["mm/percpu.c"]["time_c"]
    assert len(t["samples"]["times"]) == len(t["samples"]["cpu"]) == 2
    # instructions were counted for -E and -c, so they decide and the times
    # are context: no warmup (timing.choose_warmup)
    assert t["instructions"] > 10 ** 8 and t["warmup"] == 0
    assert t["count_slowdown"] > 1
    assert t["command"].startswith("cd kb-") and " -c -o " in t["command"]
    assert rec["compiler_version"].startswith(("Debian clang", "clang"))


def test_boot_laight_v4_in_qemu(env):
    """Build laight-v4's bzImage, boot it in QEMU with the KUnit module, and
    check the suite passes; then the fault paths with the same kernel: a
    hang ends at the timeout, a panic is named; no QEMU is left."""
    base, e = env
    p = kx(e, "boot", "--points", "laight-v4")
    rows = list(csv.DictReader(open(base / "results/boot.csv")))
    row = next(r for r in rows if r["point"] == "laight-v4")
    assert row["status"] == "booted", p.stderr[-3000:]
    assert int(row["tests_passed"]) > 0 and row["tests_failed"] == "0"
    assert float(row["boot_s"]) > 0
    rec = next(b for b in (json.load(open(p)) for p in
                           (base / "results").glob("*/boot.json"))
               if b["point"] == "laight-v4")
    assert "-nic none" in rec["qemu_command"] and "-no-reboot" in rec["qemu_command"]
    conf = next(c for c in (json.load(open(p)) for p in
                            (base / "results").glob("*/conformance.json"))
                if c["point"] == "laight-v4")
    assert conf["results"]["05-min-int-4u"]["verdict"] == "rejected"
    assert conf["results"]["04-min-uint-4"]["verdict"] == "accepted"

    from kbuild import boot
    from test_boot import cpio_entries
    # the initramfs the boot used, written by the tree's gen_init_cpio
    rd0 = next((base / "work/boot").glob("*/initramfs.cpio"))
    assert [(n, t) for n, t, _ in cpio_entries(rd0.read_bytes())] == [
        ("dev", 0o4), ("dev/console", 0o2), ("init", 0o10),
        ("minmax_kunit.ko", 0o10), ("TRAILER!!!", 0)]
    bdir = next((base / "work/tree").glob("kb-*-gcc/arch/x86/boot/bzImage")).parents[3]
    bz = bdir / "arch/x86/boot/bzImage"
    init = base / "hang-init"
    subprocess.run(["gcc", "-static", "-Os", "-o", init,
                    REPO / "tests/data/boot/hang-init.c"], check=True)
    rd = boot.make_initramfs(boot.gen_init_cpio(base / "work/tree", bdir, base),
                             base / "hang.cpio", {"init": init}, bdir)
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
