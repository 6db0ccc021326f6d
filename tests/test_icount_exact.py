"""kx-icount (the QEMU TCG plugin) pinned to exact counts.

tests/data/icount/loop.S, built static without libc for N iterations,
executes 2 instructions before its loop, 5 per iteration and 3 to exit:
5*N + 5, counted by hand from its disassembly (QEMU translates it as one
block of 7 (the setup and the first iteration), then a block of 5 run
N - 1 times, then the exit block of 3). The counts below must be exactly
that: through QEMU with the plugin as bench/measure/icount.py runs it,
through icount.count() itself, and through the gcc -wrapper script."""
import os
import subprocess
from pathlib import Path

import pytest

from bench.measure import icount

FIXTURE = icount.HERE.parent.parent / "tests" / "data" / "icount" / "loop.S"
NS = (1, 1000, 2000, 1_000_000)
PER_ITERATION, OUTSIDE = 5, 2 + 3
NOISE = 1000        # instructions a compile's count moves by between runs (tens, seen)


def hand_count(n):
    return OUTSIDE + PER_ITERATION * n


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    d = tmp_path_factory.mktemp("icount")
    out = {}
    for n in NS:
        out[n] = d / f"loop{n}"
        subprocess.run(["gcc", "-nostdlib", "-static", f"-DN={n}", "-o", str(out[n]),
                        str(FIXTURE)], check=True)
    return out


def qemu_count(prog, tmp_path, runs=1):
    """The command of icount.count() under QEMU, run directly: (sum, lines)."""
    assert icount.PLUGIN.exists(), f"{icount.PLUGIN} missing: make all"
    out = tmp_path / "counts"
    out.unlink(missing_ok=True)
    for _ in range(runs):
        p = subprocess.run([icount.QEMU, "-plugin", str(icount.PLUGIN), str(prog)],
                           env=dict(os.environ, KX_ICOUNT_OUT=str(out)), capture_output=True)
        assert p.returncode == 0, p.stderr
    return icount.parse_counts(out.read_text())


def test_counts_are_the_hand_counts(programs, tmp_path):
    for n in NS:
        assert qemu_count(programs[n], tmp_path) == (hand_count(n), 1), n


def test_doubling_the_iterations_adds_exactly_their_instructions(programs, tmp_path):
    one, _ = qemu_count(programs[1000], tmp_path)
    two, _ = qemu_count(programs[2000], tmp_path)
    assert two - one == 1000 * PER_ITERATION
    assert one == 5005 and two == 10005


def test_each_process_appends_its_line(programs, tmp_path):
    """Two processes with one count file (a compiler driver and its
    subprocesses): two lines, and the sum."""
    assert qemu_count(programs[1000], tmp_path, runs=2) == (2 * 5005, 2)


def test_icount_count_gives_the_hand_count(programs, tmp_path, monkeypatch):
    """icount.count() itself on the QEMU path (the one this machine takes;
    pinned so that a machine with a PMU still tests the plugin)."""
    monkeypatch.setattr(icount, "source", lambda: ("qemu-tcg", "pinned by the test"))
    # (a count runs in the sandbox of its build dir: the program is shown to it)
    r = icount.count([str(programs[1_000_000])], tmp_path, cc="loop",
                     rw=[Path(programs[1_000_000]).parent])
    assert (r["instructions"], r["instructions_source"], r["processes"]) == \
        (5_000_005, "qemu-tcg", 1)


def test_the_gcc_wrapper_counts_the_same(programs, tmp_path):
    """kx-icount-wrap (what gcc -wrapper runs for cc1 and as) gives the
    program the same plugin: the same exact count."""
    out = tmp_path / "counts"
    env = dict(os.environ, KX_ICOUNT_OUT=str(out), KX_QEMU=icount.QEMU,
               KX_ICOUNT_PLUGIN=str(icount.PLUGIN))
    subprocess.run([str(icount.WRAP), str(programs[2000])], env=env, check=True)
    assert icount.parse_counts(out.read_text()) == (10005, 1)


def test_a_count_on_a_frozen_view_reads_the_tree_as_it_was(tmp_path, monkeypatch):
    """cost.freeze copies what a compile reads (its -I dirs whole, its own
    directory, the files its .cmd names), and a count run on that view
    (sandbox.wrap's view) gives the count of the tree as it was, exactly,
    after the tree changed: what lets the tip's long count go on while
    make check visits the series' commits."""
    from kbuild import kcmd
    from bench.measure import cost
    from bench.measure.cache import Cache
    monkeypatch.setattr(icount, "source", lambda: ("qemu-tcg", "pinned by the test"))
    tree, scratch = tmp_path / "tree", tmp_path / "scratch"
    for p, text in {"include/linux/f.h": "static inline int f(int x) { return x * 3; }\n",
                    "include/pre.h": "#define PRE 1\n",
                    "include/unused/u.h": "#error never included\n",
                    "kernel/local.h": "#define LOCAL 2\n",
                    "kernel/a.c": '#include <linux/f.h>\n#include "local.h"\n'
                                  "int g(int y) { return f(y) + PRE + LOCAL; }\n",
                    "Documentation/x.rst": "not read\n",
                    "ks-test/include/generated/autoconf.h": "#define CONFIG_X 1\n"}.items():
        (tree / p).parent.mkdir(parents=True, exist_ok=True)
        (tree / p).write_text(text)
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret/key.h").write_text("#define KEY 1\n")
    (tree / "evil").symlink_to(tmp_path / "secret")      # a series' link out of the tree
    bdir = tree / "ks-test"
    (bdir / "kernel").mkdir()
    (bdir / "kernel/.a.o.cmd").write_text(
        "cmd_kernel/a.o := gcc -Wp,-MMD,kernel/.a.o.d -frandom-seed=1 -nostdinc "
        "-I../include -I./include -I../evil -include ../include/pre.h -O2 -c -o kernel/a.o "
        "../kernel/a.c\n\nsource_kernel/a.o := ../kernel/a.c\n\n"
        "deps_kernel/a.o := \\\n  ../include/pre.h \\\n  ../include/linux/f.h \\\n"
        "  ../kernel/local.h \\\n\nkernel/a.o: $(deps_kernel/a.o)\n")
    scratch.mkdir()
    argv = kcmd.object_command(kcmd.compile_command(bdir, "kernel/a.c"), str(scratch / "a.o"))

    def counted(view=None):
        return icount.count(argv, bdir, "gcc", rw=[scratch], view=view)["instructions"]

    before = counted()
    view = cost.freeze(bdir, "kernel/a.c", tmp_path / "view")
    assert sorted(str(p.relative_to(view)) for p in view.rglob("*") if p.is_file()) == [
        "include/linux/f.h", "include/pre.h", "include/unused/u.h", "kernel/a.c",
        "kernel/local.h", "ks-test/include/generated/autoconf.h", "ks-test/kernel/.a.o.cmd"]
    assert not (view / "evil").exists() and not list(view.rglob("key.h"))
    assert (view / "ks-test").is_dir()        # the count runs there
    # the tree moves on: a heavier f(), another LOCAL
    (tree / "include/linux/f.h").write_text(
        "static inline int f(int x) { int s = 0; for (int i = 0; i < x; i++) "
        "s += i * x ^ (s >> 3); return s * 3 + x; }\n" * 1)
    (tree / "kernel/local.h").write_text("#define LOCAL (PRE + 40)\n")
    (bdir / "kernel/.a.o.cmd").write_text("cmd_kernel/a.o := gcc -O0 -c -o kernel/a.o x.c\n")
    after = counted()           # the command as it was, on the tree as it is
    # gcc's temporary files have random names: counts of one command move
    # by a few tens of instructions now and then; the tree's change moves
    # this one by far more
    assert abs(after - before) > 100 * NOISE
    assert abs(counted(view) - before) < NOISE
    # count_one reads the command from the view too (the build dir moved on)
    c = cost.count_one(Cache(tmp_path / "work"), "k", bdir, "kernel/a.c", "gcc", "time_c",
                       view=view)
    assert abs(c["instructions"] - before) < NOISE, c
