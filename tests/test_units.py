"""Direct tests of pieces that were only reached through subprocesses:
the noise judgement, the control check, record merging and loading,
Markdown to HTML, directory names for refs, settings validation and the
Kbuild .cmd reader (both formats, also end to end on the fake tree)."""
import json
import os
import sys
from pathlib import Path

import pytest

from bench import results
from bench.cmd import bench as stages
from bench.measure import timing
from kbuild import build, kcmd, sandbox, settings
from kbuild.util import KexpandError
from plots import page
from test_faults import fake, kx  # noqa: F401  (the fake tree and CLI runner)

# --------------------------------------------------------------- noise


def test_noise_quiet_samples_are_ok():
    n = timing.noise([0.95, 1.0, 1.05])
    assert n == {"outliers": 0, "rel_stddev": 0.05, "note": "ok"}


def test_noise_single_sample():
    assert timing.noise([2.5]) == {"outliers": 0, "rel_stddev": 0.0, "note": "ok"}


def test_noise_outlier_threshold_is_hyperfines_14():
    # median 1.00, MAD 0.01: the modified Z-score of a sample t is
    # 0.6745 * |t - 1.00| / 0.01; 1.20 scores 13.5 (kept), 1.21 scores
    # 14.2 (an outlier). The textbook threshold of 3.5 would flag both.
    base = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00]
    kept = timing.noise(base + [1.20])
    assert kept["outliers"] == 0
    assert kept["note"] == "ok"
    out = timing.noise(base + [1.21])
    assert out["outliers"] == 1
    assert out["note"].startswith("1 statistical outlier(s)")
    assert "spread" not in out["note"]
    many = timing.noise(base + [5.0, 6.0])
    assert many["outliers"] == 2


def test_noise_identical_samples_have_no_outliers():
    # MAD 0: no Z-score, nothing flagged (not a division by zero)
    assert timing.noise([1.0, 1.0, 1.0, 1.0, 9.0])["outliers"] == 0


def test_noise_spread_note():
    n = timing.noise([1.0, 2.0, 3.0])          # stdev 1, median 2
    assert n["rel_stddev"] == 0.5
    assert n["outliers"] == 0
    assert n["note"] == ("spread 50% of the median: treat differences below "
                         "that as noise")
    # just under and just over 10%
    assert timing.noise([0.91, 1.0, 1.09])["note"] == "ok"          # 9%
    assert timing.noise([0.89, 1.0, 1.11])["note"].startswith("spread 11%")


def test_noise_outlier_and_spread_notes_are_joined():
    n = timing.noise([1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 3.0])
    assert n["outliers"] == 1 and n["rel_stddev"] > 0.10
    first, second = n["note"].split("; ")
    assert first.startswith("1 statistical outlier(s)")
    assert second.startswith("spread ")


# ------------------------------------------------------ check_controls

INDEX = {"points": [
    {"name": "after", "commit": "a" * 40, "parent": None, "control": False},
    {"name": "ctl", "commit": "c" * 40, "parent": "after", "control": True},
]}


def rec(commit, compiler="gcc", **sizes):
    return {"commit": commit, "compiler": compiler,
            "files": {f.replace("_", "/") + ".c": {"status": "ok", "expanded_bytes": b}
                      for f, b in sizes.items()}}


def test_control_equal_to_parent(capsys):
    recs = [rec("a" * 40, mm_compaction=100, xen_setup=200),
            rec("c" * 40, mm_compaction=100, xen_setup=200)]
    assert stages.check_controls(INDEX, recs) == []
    assert "control ctl: expansion equals after (gcc, 2 files)" in capsys.readouterr().err


def test_control_differing_file_is_one_mismatch(capsys):
    recs = [rec("a" * 40, mm_compaction=100, xen_setup=200),
            rec("c" * 40, mm_compaction=100, xen_setup=201),
            rec("a" * 40, "clang", mm_compaction=90),
            rec("c" * 40, "clang", mm_compaction=90)]
    bad = stages.check_controls(INDEX, recs)
    assert len(bad) == 1
    m = bad[0]
    for part in ("ctl", "after", "gcc", "xen/setup.c", "201", "200"):
        assert part in m, (part, m)
    assert "clang" not in m and "mm/compaction.c" not in m
    assert f"CONTROL MISMATCH: {m}" in capsys.readouterr().err


def test_control_file_missing_at_parent_is_a_mismatch():
    recs = [rec("a" * 40, mm_compaction=100),
            rec("c" * 40, mm_compaction=100, xen_setup=200)]
    bad = stages.check_controls(INDEX, recs)
    assert len(bad) == 1 and "xen/setup.c" in bad[0] and "None" in bad[0]


def test_control_without_parent_record():
    recs = [rec("c" * 40, mm_compaction=100)]
    assert stages.check_controls(INDEX, recs) == []
    # a parent measured with another compiler only does not count either
    recs.append(rec("a" * 40, "clang", mm_compaction=5))
    assert stages.check_controls(INDEX, recs) == []


# -------------------------------------------------------- merge_record

def entry(b):
    return {"status": "ok", "expanded_bytes": b, "lines": b // 10,
            "longest_line_bytes": b // 2}


def record(files, version="gcc 12.2", chash="h1"):
    return {"schema": 1, "kind": "kexpand.expansion", "case": "minmax",
            "point": "p", "commit": "d" * 40, "compiler": "gcc",
            "compiler_version": version, "config_hash": chash, "files": files}


def test_merge_keeps_earlier_files_of_same_setup(tmp_path):
    results.write_record(tmp_path, record({"a.c": entry(100), "b.c": entry(200)}))
    merged = results.merge_record(tmp_path, record({"b.c": entry(300), "c.c": entry(400)}))
    assert merged["files"] == {"a.c": entry(100), "b.c": entry(300), "c.c": entry(400)}


@pytest.mark.parametrize("change", [{"version": "gcc 13.1"}, {"chash": "h2"}])
def test_merge_drops_files_of_another_setup(tmp_path, change):
    results.write_record(tmp_path, record({"a.c": entry(100)}))
    new = record({"b.c": entry(300)}, **change)
    assert results.merge_record(tmp_path, new)["files"] == {"b.c": entry(300)}


@pytest.mark.parametrize("old", [
    {},
    record({"a.c": {"status": "ok", "lines": 1, "longest_line_bytes": 1}}),
    record({"a.c": entry(100), "z.c": {"status": "ok", "lines": 1,
                                       "longest_line_bytes": 1}}),
    "not a dict",
])
def test_merge_ignores_malformed_old_record(tmp_path, old):
    p = results.record_path(tmp_path, "d" * 40, "gcc")
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(old))
    new = record({"b.c": entry(300)})
    merged = results.merge_record(tmp_path, new)
    assert merged["files"] == {"b.c": entry(300)}
    assert results.record_ok(merged)


def test_merge_ignores_unreadable_old_record(tmp_path, capsys):
    p = results.record_path(tmp_path, "d" * 40, "gcc")
    p.parent.mkdir(parents=True)
    p.write_text('{"kind": "kexpand.expansion", "fi')
    assert results.merge_record(tmp_path, record({"b.c": entry(3)}))["files"] == \
        {"b.c": entry(3)}


def timing_entry(**drop):
    t = {"median_s": 1.0, "stddev_s": 0.01, "runs": 3,
         "hyperfine": {"times": [1.0, 1.01, 0.99]}}
    for k in drop:
        t.pop(k)
    return dict(entry(100), time_E=t, time_c=t)


def test_load_records_skips_timing_without_stddev(tmp_path, capsys):
    good = dict(record({"a.c": timing_entry()}), commit="e" * 40)
    bad = record({"a.c": timing_entry(stddev_s=1)})
    results.write_record(tmp_path, good)
    results.write_record(tmp_path, bad)
    got = results.load_records(tmp_path)
    assert [r["commit"] for r in got] == ["e" * 40]
    err = capsys.readouterr().err
    assert f"skipping {results.record_path(tmp_path, 'd' * 40, 'gcc')}" in err
    assert "eeeeeeeeeeee" not in err


# --------------------------------------------------------- md_to_html

MD = """# Expansion

| file | source |
|---|---|
| setup.c | `a\\|b` |
| *hot* | plain |

- one
- two *em*
"""


def test_md_to_html_table_list_emphasis():
    h = page.md_to_html(MD)
    assert "<table>" in h and "<th>file</th>" in h and "<th>source</th>" in h
    assert "<li>one</li>" in h
    assert "<em>em</em>" in h and "<td><em>hot</em></td>" in h
    # the escaped pipe did not split the cell: two cells in the row
    row = h.split("<td>setup.c</td>", 1)[1].split("</tr>", 1)[0]
    assert row.count("<td>") == 1


def test_md_to_html_escaped_pipe_in_code_is_a_pipe():
    # GFM (GitHub, and the .md files as written) shows `a\|b` in a table
    # cell as a|b; the HTML page must show the same source text
    h = page.md_to_html(MD)
    assert "<code>a|b</code>" in h, h


# ---------------------------------------------------------- safe_name

@pytest.mark.parametrize("ref", ["laight-v4", "v6.7", "pre-6.7", "torvalds-fixes",
                                 "a1b2c3d4e5f6"])
def test_safe_name_keeps_plain_names(ref):
    assert results.safe_name(ref) == ref


def test_safe_name_keeps_refs_apart():
    names = [results.safe_name(r) for r in ("HEAD~1", "HEAD^1", "HEAD_1")]
    assert len(set(names)) == 3, names
    assert names[2] == "HEAD_1"
    assert all(n.startswith("HEAD_1") for n in names)


@pytest.mark.parametrize("ref", ["HEAD~1", "HEAD^1", "origin/master", "../../etc",
                                 ".hidden", "..", ".", "a/../b", "v6.7:mm", "-x"])
def test_safe_name_is_one_plain_path_component(ref, tmp_path):
    n = results.safe_name(ref)
    assert "/" not in n and not n.startswith(".") and n
    d = results.pair_dir(tmp_path, "compare", ref, "v6.7")
    assert d.parent == tmp_path / "compare"


# -------------------------------------------------------- from_env

@pytest.fixture
def env(tmp_path):
    return {"KEXPAND_WORK": str(tmp_path / "work"),
            "KEXPAND_RESULTS": str(tmp_path / "results")}


@pytest.mark.parametrize("var,value", [
    ("RUNS", "abc"), ("RUNS", "0"), ("RUNS", "-1"), ("RUNS", "2.5"),
    ("JOBS", "0"), ("JOBS", "abc"),
    ("BOOT_TIMEOUT", "0"), ("BOOT_TIMEOUT", "abc"),
    ("THRESHOLD", "infx"), ("THRESHOLD", "abc"), ("THRESHOLD", "0"),
    ("KX_CC", "icc"), ("KX_CC", "gcc icc"),
    ("NO_TIME", "yes"), ("NO_BOOT", "true"),
    ("CONFIG", "bogus"), ("KCONFIG", "/nonexistent"),
    ("CASE", "../x"),
])
def test_bad_setting_is_a_user_error_naming_it(env, var, value):
    with pytest.raises(KexpandError) as e:
        settings.from_env("bench", {}, dict(env, **{var: value}))
    assert e.value.klass == "user"
    assert e.value.exit_code == 2
    name = "CC" if var == "KX_CC" else var
    assert f"{name}=" in str(e.value), str(e.value)
    assert "Traceback" not in str(e.value)


def test_results_inside_work_is_refused(tmp_path):
    with pytest.raises(KexpandError) as e:
        settings.from_env("bench", {}, {"KEXPAND_WORK": str(tmp_path / "w"),
                                        "KEXPAND_RESULTS": str(tmp_path / "w/results")})
    assert e.value.klass == "user"
    assert "KEXPAND_RESULTS" in str(e.value) and "inside the work directory" in str(e.value)
    with pytest.raises(KexpandError):
        settings.from_env("bench", {}, {"KEXPAND_WORK": str(tmp_path / "w"),
                                        "KEXPAND_RESULTS": str(tmp_path / "w")})


def test_work_under_a_regular_file_is_infra(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(KexpandError) as e:
        settings.from_env("bench", {}, {"KEXPAND_WORK": str(tmp_path / "file/work"),
                                        "KEXPAND_RESULTS": str(tmp_path / "results")})
    assert e.value.klass == "infra" and e.value.exit_code == 5
    assert "KEXPAND_WORK" in str(e.value) and "not a directory" in str(e.value)


def test_valid_settings_parse(env, tmp_path):
    req = settings.from_env("bench", {}, dict(env, JOBS="3", KX_CC="both",
                                              BOOT_TIMEOUT="60", THRESHOLD="20MB",
                                              NO_TIME="1", POINTS="a, b c"))
    assert req.jobs == 3 and isinstance(req.jobs, int)
    assert req.runs is None
    assert req.boot_timeout == 60
    assert req.compilers == ["gcc", "clang"] and req.compilers_given
    assert req.no_time is True and req.no_boot is False
    assert req.points == ["a", "b", "c"]
    assert req.work == (tmp_path / "work").resolve()
    assert req.results == (tmp_path / "results").resolve()
    assert settings.from_env("bench", {}, dict(env, RUNS="7")).runs == 7
    dflt = settings.from_env("bench", {}, env)
    assert dflt.jobs == (os.cpu_count() or 1) and dflt.compilers == ["gcc", "clang"]
    assert not dflt.compilers_given and dflt.boot_timeout == 180


def test_arguments_win_over_environment(env):
    req = settings.from_env("bench", {"runs": "4", "cc": "clang", "no_time": True},
                            dict(env, RUNS="abc", KX_CC="icc", NO_TIME="yes"))
    assert req.runs == 4 and req.compilers == ["clang"] and req.no_time is True


def test_from_env_reads_only_the_env_it_is_given(env, monkeypatch):
    monkeypatch.setenv("RUNS", "abc")
    monkeypatch.setenv("KX_CC", "icc")
    assert settings.from_env("bench", {}, env).runs is None


# ----------------------------------------------------- compile_command

ARGV = "gcc -Wp,-MMD,mm/.compaction.o.d -nostdinc -O2 -c -o mm/compaction.o ../mm/compaction.c"
OBJTOOL = "./tools/objtool/objtool orc generate mm/compaction.o"


def cmdfile(tmp_path, text):
    p = tmp_path / "kb" / "mm" / ".compaction.o.cmd"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return tmp_path / "kb"


def check_argv(argv):
    assert argv[0] == "gcc"
    assert argv[-1] == "../mm/compaction.c"
    assert not any("objtool" in t or ";" in t for t in argv), argv
    assert argv[1:-1] == ["-Wp,-MMD,mm/.compaction.o.d", "-nostdinc", "-O2", "-c",
                          "-o", "mm/compaction.o"]


def test_compile_command_cmd_format_v6_1(tmp_path):
    bdir = cmdfile(tmp_path, f"cmd_mm/compaction.o := {ARGV}; {OBJTOOL}\n\n"
                             "source_mm/compaction.o := ../mm/compaction.c\n")
    check_argv(kcmd.compile_command(bdir, "mm/compaction.c"))


def test_compile_command_savedcmd_format_v6_3(tmp_path):
    bdir = cmdfile(tmp_path, f"savedcmd_mm/compaction.o := {ARGV}; {OBJTOOL}\n\n"
                             "source_mm/compaction.o := ../mm/compaction.c\n")
    check_argv(kcmd.compile_command(bdir, "mm/compaction.c"))


@pytest.mark.parametrize("prefix", ["cmd", "savedcmd"])
def test_compile_command_kbuild_spacing(tmp_path, prefix):
    # Kbuild itself writes "$<   ; objtool ..." (see tests/data/kbuild)
    bdir = cmdfile(tmp_path, f"{prefix}_mm/compaction.o := {ARGV}   ; {OBJTOOL}\n")
    check_argv(kcmd.compile_command(bdir, "mm/compaction.c"))


def test_compile_command_unknown_format_is_infra(tmp_path):
    bdir = cmdfile(tmp_path, f"command_mm/compaction.o = {ARGV}\n"
                             "deps_mm/compaction.o := \\\n")
    with pytest.raises(KexpandError) as e:
        kcmd.compile_command(bdir, "mm/compaction.c")
    assert e.value.klass == "infra"
    assert str(bdir / "mm" / ".compaction.o.cmd") in str(e.value)


def test_kbuild_commands_split_as_the_shell_splits_them():
    """kcmd.split (scanfiles reads compile_commands.json's commands with
    it) gives shlex.split's words, or its error, for plain commands,
    quoted parts and whatever it leaves to shlex."""
    import shlex
    cases = ["gcc -Wp,-MMD,a/.b.o.d -nostdinc -I./include -DKBUILD_MODFILE='\"mm/x\"' "
             "-DKBUILD_BASENAME='\"x\"' -c -o mm/x.o mm/x.c",
             "a b  c", 'a "" b', "a '' b", 'x"a b"y', "-D'A=1 2'", "a'b'\"c\"d", "a\tb\nc",
             "", "   ", "a\\ b", "a $X", 'a "b\\"c"', "a `b`", "'open", 'a"b', "a'b\"c'd",
             "a\x0bb\x0cc", "-DX=a\xa0b \u2003", "a\x1cb\x85", "a#b #c"]
    for c in cases:
        try:
            want = shlex.split(c)
        except ValueError as e:
            with pytest.raises(ValueError, match=str(e)):
                kcmd.split(c)
            continue
        assert kcmd.split(c) == want, c


def test_compile_command_missing_cmd_file_is_build(tmp_path):
    (tmp_path / "kb").mkdir()
    with pytest.raises(KexpandError) as e:
        kcmd.compile_command(tmp_path / "kb", "mm/compaction.c")
    assert e.value.klass == "build" and "mm/.compaction.o.cmd missing" in str(e.value)


# ------------------------------------- the CLI on the fake tree, both formats

def test_fake_tree_both_cmd_formats_measure_the_same(fake):  # noqa: F811
    base, env = fake
    got = {}
    for label, extra in (("cmd", {}), ("savedcmd", {"FAKE_SAVEDCMD": "1"})):
        e = {k: v for k, v in env.items() if k != "FAKE_SAVEDCMD"}
        e.update(extra, KEXPAND_WORK=str(base / f"work-{label}"),
                 KEXPAND_RESULTS=str(base / f"results-{label}"))
        p = kx(e, "bench", "--case", "fake", "--cc", "gcc", "--no-boot",
               "--no-time", "--points", "before")
        assert p.returncode == 0, p.stderr
        # the fake Makefile wrote the format asked for
        cmds = list((base / f"work-{label}").rglob(".setup.o.cmd"))
        assert cmds, "no .cmd file written"
        first = cmds[0].read_text().split(" := ", 1)[0]
        assert first == f"{label}_arch/x86/xen/setup.o"
        recs = list((base / f"results-{label}").glob("*/gcc.json"))
        assert len(recs) == 1
        rec = json.loads(recs[0].read_text())
        assert Path(recs[0]).parent.name == rec["commit"][:12]
        got[label] = rec["files"]["arch/x86/xen/setup.c"]
    assert got["cmd"]["status"] == got["savedcmd"]["status"] == "ok"
    assert got["cmd"]["expanded_bytes"] > 0
    assert got["cmd"]["expanded_bytes"] == got["savedcmd"]["expanded_bytes"]


def test_safe_name_never_collides_with_a_hashed_name():
    from bench.results import safe_name
    hashed = safe_name("HEAD~1")
    assert hashed.startswith("HEAD_1-")
    # a ref that is literally the hashed name gets a hash of its own
    assert safe_name(hashed) != hashed and safe_name(hashed) != safe_name("HEAD~1")


def test_seed_build_dir_copies_only_a_matching_config(tmp_path):
    """A new build dir starts from the newest one of the same compiler and
    config; nothing is seeded across configs or compilers, or over a dir
    that exists."""
    from kbuild import build, builddir
    old = tmp_path / "kb-aaaaaaaaaaaa-gcc"
    (old / "include/generated").mkdir(parents=True)
    (old / "include/generated/autoconf.h").write_text("#define CONFIG_X 1\n")
    (old / ".kexpand-config").write_text("h1\n")
    (old / "mm").mkdir()
    (old / "mm/compaction.o").write_bytes(b"obj")
    clang = tmp_path / "kb-cccccccccccc-clang"
    clang.mkdir()
    (clang / ".kexpand-config").write_text("h1\n")
    new = tmp_path / "kb-bbbbbbbbbbbb-gcc"
    assert builddir.seed(tmp_path, new, "gcc", "h2") is None and not new.exists()
    assert builddir.seed(tmp_path, new, "clang", "h1") is None
    assert builddir.seed(tmp_path, new, "gcc", "h1") == old.name
    assert (new / "mm/compaction.o").read_bytes() == b"obj"
    assert (new / ".kexpand-seeded-from").read_text().strip() == old.name
    assert (new / "mm/compaction.o").stat().st_mtime == (old / "mm/compaction.o").stat().st_mtime
    assert builddir.seed(tmp_path, new, "gcc", "h1") is None     # exists


def test_seed_for_a_full_build_replaces_a_dir_without_one(tmp_path):
    from kbuild import build, builddir
    def kb(name, vmlinux):
        d = tmp_path / name
        (d / "include/generated").mkdir(parents=True)
        (d / "include/generated/autoconf.h").write_text("")
        (d / ".kexpand-config").write_text("h1\n")
        if vmlinux:
            (d / "vmlinux").write_bytes(b"elf")
        return d
    full, objs = kb("kb-aaaaaaaaaaaa-gcc", True), kb("kb-bbbbbbbbbbbb-gcc", False)
    assert builddir.seed(tmp_path, objs, "gcc", "h1") is None      # exists
    assert builddir.seed(tmp_path, objs, "gcc", "h1", full=True) == full.name
    assert (objs / "vmlinux").read_bytes() == b"elf"
    # a dir with a whole kernel is never replaced
    assert builddir.seed(tmp_path, full, "gcc", "h1", full=True) is None


def test_seeded_dir_names_itself_where_a_path_was_absolute(tmp_path):
    """objtool's build records the build dir's absolute path: a copy must
    name the copy, with the file's mtime kept (else objtool is rebuilt and
    every object with it)."""
    import os
    from kbuild import build, builddir
    old = tmp_path / "kb-aaaaaaaaaaaa-gcc"
    (old / "include/generated").mkdir(parents=True)
    (old / "include/generated/autoconf.h").write_text("")
    (old / ".kexpand-config").write_text("h1\n")
    (old / "tools/objtool").mkdir(parents=True)
    cmd = old / "tools/objtool/.check.o.cmd"
    cmd.write_text(f"cmd_{old}/tools/objtool/check.o := gcc -o {old}/tools/objtool/check.o\n")
    os.utime(cmd, (1_000_000, 1_000_000))
    (old / "vmlinux.o").write_bytes(b"\0" + str(old).encode())    # binary: left alone
    new = tmp_path / "kb-bbbbbbbbbbbb-gcc"
    assert builddir.seed(tmp_path, new, "gcc", "h1") == old.name
    text = (new / "tools/objtool/.check.o.cmd").read_text()
    assert str(old) not in text and text.count(str(new)) == 2
    assert (new / "tools/objtool/.check.o.cmd").stat().st_mtime == 1_000_000
    assert (new / "vmlinux.o").read_bytes() == b"\0" + str(old).encode()
    assert str(old) in cmd.read_text()                       # the source dir: as it was


def test_measuring_again_needs_no_build_only_where_this_commit_built(tmp_path):
    from kbuild import builddir as engine
    from kbuild import build, builddir
    d = tmp_path / "kb-aaaaaaaaaaaa-gcc"
    (d / "mm").mkdir(parents=True)
    (d / "include/generated").mkdir(parents=True)
    (d / "include/generated/autoconf.h").write_text("")
    (d / ".kexpand-config").write_text("h1\n")
    (d / "mm/compaction.o").write_bytes(b"o")
    (d / "mm/.compaction.o.cmd").write_text("savedcmd_mm/compaction.o := gcc\n")
    assert not engine.built(d, "h1", ["mm/compaction.c"])       # no list: build
    engine.note_built(d, ["mm/compaction.o"], [])
    assert engine.built(d, "h1", ["mm/compaction.c"])
    assert not engine.built(d, "h2", ["mm/compaction.c"])        # another config
    assert not engine.built(d, "h1", ["mm/compaction.c", "mm/vmscan.c"])
    engine.note_built(d, ["mm/vmscan.o"], ["mm/vmscan.o"])
    assert not engine.built(d, "h1", ["mm/vmscan.c"])            # it failed
    # configure() rewrote the dir's config: what was built before is not h2's
    (d / ".kexpand-config").write_text("h2\n")
    assert not engine.built(d, "h2", ["mm/compaction.c"])
    engine.note_built(d, ["mm/vmscan.o"], [])
    assert not engine.built(d, "h2", ["mm/compaction.c"])
    (d / ".kexpand-config").write_text("h1\n")
    # a copy for another commit starts without the list
    new = tmp_path / "kb-bbbbbbbbbbbb-gcc"
    assert builddir.seed(tmp_path, new, "gcc", "h1") == d.name
    assert not engine.built(new, "h1", ["mm/compaction.c"])


def test_series_line_names_every_commit_between_points(tmp_path):
    """The first-parent line from the oldest point to the newest, controls
    (side branches) left out, each commit between points named from the
    next point."""
    import subprocess
    from types import SimpleNamespace

    def git(*a):
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t",
                               "-c", "user.email=t@t", *a], check=True,
                              capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    ids = {}
    for msg in ("base", "p1", "p2", "mid", "control"):
        if msg == "control":
            git("checkout", "-q", "--detach", ids["mid"])
        git("commit", "-q", "--allow-empty", "-m", msg)
        ids[msg] = git("rev-parse", "HEAD")
    git("checkout", "-q", "--detach", ids["mid"])
    git("commit", "-q", "--allow-empty", "-m", "tip")
    ids["tip"] = git("rev-parse", "HEAD")
    pts = {"first": ("base", False), "last": ("tip", False), "ctl": ("control", True)}
    case = SimpleNamespace(names=lambda: ["last", "ctl", "first"],
                           point=lambda n: SimpleNamespace(control=pts[n][1]))
    todo = [(n, ids[m]) for n, (m, _) in pts.items()]
    line = stages.series_line(tmp_path, case, todo)
    assert [(n, s, p) for n, _, s, p in line] == [
        ("first", "base", True), ("last~3", "p1", False), ("last~2", "p2", False),
        ("last~1", "mid", False), ("last", "tip", True)]


def test_scan_measures_a_file_built_twice_once_with_its_own_object(tmp_path, monkeypatch):
    """6.1's defconfig compiles lib/ctype.c twice (lib/ctype.o, and the EFI
    stub's lib-ctype.o with other flags): compile_commands.json lists it
    twice. The scan keeps one entry per C file, the command of the object
    beside it, whichever order the generator wrote them in."""
    monkeypatch.setenv(sandbox.ENV, "0")   # a fixture outside a tree: run bare
    from bench.measure import scanfiles as scan
    tree = tmp_path / "tree"
    bdir = tree / "kb-aaaaaaaaaaaa-gcc"
    bdir.mkdir(parents=True)
    (tree / "lib").mkdir()
    (tree / "lib/ctype.c").write_text("int c;\n")
    (tree / "lib/sort.c").write_text("int s;\n")
    efi = {"directory": str(bdir), "file": str(tree / "lib/ctype.c"),
           "command": "gcc -DEFI -c -o drivers/firmware/efi/libstub/lib-ctype.o ../lib/ctype.c"}
    own = {"directory": str(bdir), "file": str(tree / "lib/ctype.c"),
           "command": "gcc -c -o lib/ctype.o ../lib/ctype.c"}
    other = {"directory": str(bdir), "file": str(tree / "lib/sort.c"),
             "command": "gcc -c -o lib/sort.o ../lib/sort.c"}
    gen = tree / "scripts/clang-tools/gen_compile_commands.py"
    gen.parent.mkdir(parents=True)
    for order in ([efi, own, other], [own, other, efi], [other, efi, own]):
        (tmp_path / "entries.json").write_text(json.dumps(order))
        gen.write_text("import shutil, sys\n"
                       f"shutil.copy({str(tmp_path / 'entries.json')!r}, "
                       "sys.argv[sys.argv.index('-o') + 1])\n")
        entries = scan.compile_commands(tree, bdir)
        assert [rel for rel, _ in entries] == ["lib/ctype.c", "lib/sort.c"]
        assert "-DEFI" not in entries[0][1]
        assert entries[0][1][-2:] == ["lib/ctype.o", "../lib/ctype.c"]
    # a file built only under another name still counts, with that command
    assert scan.one_per_file([("lib/ctype.c", ["gcc", "-o", "x/lib-ctype.o"])]) == \
        [("lib/ctype.c", ["gcc", "-o", "x/lib-ctype.o"])]


def test_a_real_difference_is_never_reported_as_the_same():
    """6.12's setup.c went from 3,513,019 to 3,514,340 bytes and a compare
    report said "1.00x (same)": "same" only for equal bytes, and enough
    digits plus the difference in bytes otherwise."""
    from plots.tables import direction
    text = direction(round(3_514_340 / 3_513_019, 6), 3_513_019, 3_514_340)
    assert "same" not in text and "1.000376x" in text and "+1,321 bytes" in text
    assert direction(1.0, 7, 7) == "1x (same)"
    assert "-1 bytes" in direction(round(999_999 / 1_000_000, 6), 1_000_000, 999_999)


def test_a_log_line_is_one_write(monkeypatch):
    """log() and Progress.say() write each line with its newline in one
    call (print() writes them apart, and two threads' lines ran together)."""
    from kbuild import util

    class Writes:
        def __init__(self):
            self.calls = []

        def write(self, s):
            self.calls.append(s)

        def flush(self):
            pass

    w = Writes()
    monkeypatch.setattr(sys, "stderr", w)
    util.log("one")
    util.Progress(stream=w).say("two")
    assert len(w.calls) == 2 and w.calls[0] == "kexpand: one\n"
    assert w.calls[1].startswith("kexpand ") and w.calls[1].endswith("s two\n")


def test_a_scans_per_file_header_records_are_kept_packed(tmp_path, capsys):
    """scanfiles.keep() writes the per-file header records gzip'd (a
    defconfig point's were 183 MB as indented JSON); file_headers() reads
    them back equal, still reads an entry of the old kind, and a damaged
    one is missing (measured again), with a warning naming it."""
    import gzip
    from bench.measure import scanfiles
    from bench.measure.cache import Cache
    cache = Cache(tmp_path)
    inc = {f"dir/f{i}.c": {"v": 1, "bytes": 1000 + i, "names": [f"dir/f{i}.c", "a.h"] * 50}
           for i in range(200)}
    scan = {"files": {f: {"status": "ok"} for f in inc}, "file_headers": inc}
    assert scanfiles.keep(cache, "k1", scan) == inc and "file_headers" not in scan
    packed = tmp_path / "cache/k1-headers.json.gz"
    assert packed.exists() and not (tmp_path / "cache/k1-headers.json").exists()
    assert scanfiles.file_headers(cache, "k1") == inc
    cache.put("k2-headers", inc)                     # as kept before
    plain = (tmp_path / "cache/k2-headers.json").stat().st_size
    assert scanfiles.file_headers(cache, "k2") == inc
    assert packed.stat().st_size * 6 < plain
    packed.write_bytes(gzip.compress(b"{not json")[:-4])
    assert scanfiles.file_headers(cache, "k1") == {}
    assert "k1-headers.json.gz is unreadable" in capsys.readouterr().err
    assert not packed.exists()
    cache.put("k1", {"files": {}})      # its scan: forgotten, so made again, records and all
    assert scanfiles.file_headers(cache, "k1") == {} and cache.get("k1") is None


def test_a_config_has_one_identity_of_one_length(tmp_path):
    """One config identity: build.config_id, 12 hex digits, for what decides
    a .config (Config.hash) and a KCONFIG= file's report names and identity."""
    from kbuild import build
    kconfig = tmp_path / "my.config"
    kconfig.write_text("CONFIG_X86_64=y\n")
    frag = tmp_path / "frag"
    frag.write_text("CONFIG_XEN=y\n")
    cid = build.config_id(kconfig.read_bytes())
    assert len(cid) == 12 and int(cid, 16) >= 0
    assert results.config_tag("tinyconfig", kconfig) == f"@kconfig-{cid}"

    class Req:
        kernel, config_base, compilers, compilers_given, files = None, "x", [], False, []
    Req.kconfig = kconfig
    assert results.identity(Req())["kconfig_sha256"] == cid
    for c in (build.Config(frag), build.Config(frag, base="defconfig"),
              build.Config(frag, kconfig=kconfig)):
        assert len(c.hash()) == 12
    assert build.Config(frag).hash() != build.Config(frag, kconfig=kconfig).hash()


def test_bench_check_targets_are_seconds_or_a_ratio_of_the_floor():
    """Issue 33's targets: defconfig cold at most 1.3x its floor, base
    cached 1.2x; tinyconfig cold 3 min; one .c file 20 s."""
    from bench.cmd.checkbench import TARGETS, target_s
    assert target_s(TARGETS["defconfig"]["cold"], 459.3) == 597.1
    assert target_s(TARGETS["defconfig"]["base cached"], 205.5) == 246.6
    assert target_s(TARGETS["tinyconfig"]["cold"], 70.0) == 180
    assert target_s(TARGETS["defconfig"]["one .c file"], 0.8) == 20


def test_the_request_is_built_once(env, tmp_path):
    """settings.from_env builds the Request and freezes it: a command that
    needs another (make track's compares) makes a new one; what depends on
    the tree (strict config on the packaged one) is set there, not later."""
    import dataclasses
    req = settings.from_env("check", {}, dict(env, THRESHOLD="20%"))
    assert req.strict_config is True and req.growth_ratio == 1.2
    with pytest.raises(AttributeError, match="built once"):
        req.strict_config = False
    sub = dataclasses.replace(req, files=["mm/x.c"], command="compare")
    assert sub.files == ["mm/x.c"] and req.files == [] and req.command == "check"
    user = tmp_path / "linux"
    user.mkdir()
    assert settings.from_env("scan", {"kernel": str(user)}, env).strict_config is False
    assert settings.from_env("bisect", {}, env).compilers == ["gcc"]


def test_the_reference_reports_are_still_this_kexpands(tmp_path):
    """A report directory belongs to one identity (results.claim_dir): the
    identity kexpand computes today matches the one the reference reports
    in results/ hold, so running their command again rewrites them rather
    than being refused."""
    class Req:
        kernel, config_base, kconfig, compilers, compilers_given = \
            None, "tinyconfig", None, ["gcc", "clang"], False
        files = []
    d = Path(__file__).resolve().parent.parent / "results/check/" \
        "minmax-add-umin-a-b-and-umax-a-b-v4"
    old = json.loads((d / "check.json").read_text())["identity"]
    now = results.identity(Req(), files=False)
    keys = ("kernel", "config", "kconfig_sha256", "files")   # check sets the rest
    assert {k: old.get(k) for k in keys} == {k: now[k] for k in keys}
    results.claim_dir(d, dict(now, series=old["series"], base=old["base"],
                              compilers=old["compilers"]))


def test_a_scan_dirs_commands_name_the_wrapper_not_where_kexpand_is(tmp_path):
    """Kbuild's commands in a scan dir (and Kconfig's record of $(CC))
    name `kx-cc`, found first on make's PATH, not this clone's path: a
    scan dir made by one clone of kexpand is as good for another."""
    tree = tmp_path / "tree"
    cmd = build.make(tree, tree / f"{build.SCAN_PREFIX}0123456789ab-gcc", "gcc", "x.o")
    assert cmd[:2] == ["env", f"PATH={build.KX_CC.parent}:{os.environ['PATH']}"]
    assert "CC=kx-cc gcc" in cmd and "HOSTCC=kx-cc --host gcc" in cmd, cmd
    assert not [c for c in cmd[2:] if str(build.KX_CC.parent) in c and "=" in c
                and c.split("=")[0] in ("CC", "HOSTCC")]
    assert build.make(tree, tree / "kb-0123456789ab-gcc", "gcc")[0] == "make"
