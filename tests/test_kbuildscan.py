"""The Kbuild-driven scan: kexpand's compiler wrapper (bench/tools/kx-cc.c)
on its own, then bench/measure/kbuildscan.py on a copy of the fake kernel
tree (tests/fakelinux), whose make runs the wrapper as Kbuild does. Real
gcc, make and git."""
import concurrent.futures
import json
import os
import select
import signal
import sys
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.measure import kbuildscan, macros, scanfiles
from kbuild import build, kcmd, sandbox, series
from kbuild.util import KexpandError

REPO = Path(__file__).resolve().parent.parent
KXCC = REPO / "bench/tools/kx-cc"
ANALYZE = REPO / "bench/tools/kx-analyze"
FAKE = Path(__file__).parent / "fakelinux"


def wrapped(cwd, *args, env=None, analyze=True):
    e = dict(os.environ, **(env or {}))
    if analyze:
        e.update(KX_SCAN_ANALYZE=str(ANALYZE), KX_SCAN_TIME="30", KX_SCAN_MEM="4096")
    else:
        e.pop("KX_SCAN_ANALYZE", None)
    return subprocess.run([str(KXCC), *args], cwd=cwd, env=e, capture_output=True, text=True)


def test_the_wrapper_measures_a_c_file_and_leaves_an_empty_object(tmp_path):
    """-c of a C file into an object: the record holds the command (the
    wrapper left out) and the analyzer's output for exactly that command's
    -E; the dependency file is the compiler's; the object is an empty
    relocatable file that ar and ld -r take."""
    (tmp_path / "a.h").write_text("#define TWICE(x) ((x) + (x))\n")
    (tmp_path / "a.c").write_text('#include "a.h"\nint f(int x) { return TWICE(TWICE(x)); }\n')
    argv = ["gcc", "-Wp,-MMD,.a.o.d", "-O2", "-c", "-o", "a.o", "a.c"]
    p = wrapped(tmp_path, *argv)
    assert p.returncode == 0, p.stderr
    rec = json.loads((tmp_path / ".a.o.kx.json").read_text())
    assert rec["argv"] == argv and rec["status"] == "ok"
    e = subprocess.run(kcmd.preprocess_command(argv), cwd=tmp_path, capture_output=True,
                       check=True).stdout
    direct = json.loads(subprocess.run([str(ANALYZE), "-n", "5", "-H"], input=e,
                                       capture_output=True, check=True).stdout)
    assert rec["analysis"] == direct and direct["bytes"] == len(e)
    assert "a.h" in (tmp_path / ".a.o.d").read_text()
    assert not list(tmp_path.glob("*.kx.out")) and not list(tmp_path.glob(".*.kx.err"))
    out = subprocess.run(["readelf", "-h", "-S", "a.o"], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout
    assert "REL (Relocatable file)" in out and "X86-64" in out and ".symtab" in out
    subprocess.run(["ar", "rcs", "a.a", "a.o"], cwd=tmp_path, check=True)
    subprocess.run(["ld", "-r", "-o", "r.o", "a.o"], cwd=tmp_path, check=True)
    assert "f" not in subprocess.run(["nm", "a.o"], cwd=tmp_path, capture_output=True,
                                     text=True).stdout.split()


def test_the_wrapper_records_a_failure_and_asks_to_be_run_again(tmp_path):
    """A file that does not preprocess: exit 0 (the build goes on), the
    record says why, and its dependency list names a file that never
    exists, so that the next make measures it again."""
    (tmp_path / "bad.c").write_text("#error this file is broken\n")
    p = wrapped(tmp_path, "gcc", "-Wp,-MMD,.bad.o.d", "-c", "-o", "bad.o", "bad.c")
    assert p.returncode == 0 and "this file is broken" in p.stderr
    rec = json.loads((tmp_path / ".bad.o.kx.json").read_text())
    assert rec["status"] == "error" and rec["reason"] == "error"
    assert "#error this file is broken" in rec["error"] and "analysis" not in rec
    assert "kexpand-measure-again" in (tmp_path / ".bad.o.d").read_text()
    assert (tmp_path / "bad.o").is_file()


def test_the_wrapper_ends_a_preprocessor_blocked_past_the_time_limit(tmp_path):
    """An #include of a fifo blocks cc1 (known to be blocked: nothing ever
    opens the fifo's other end): the time limit ends it, and the record
    says so."""
    os.mkfifo(tmp_path / "fifo.h")
    (tmp_path / "hang.c").write_text('#include "fifo.h"\n')
    p = wrapped(tmp_path, "gcc", "-c", "-o", "hang.o", "hang.c", env={"KX_SCAN_TIME": "1"})
    assert p.returncode == 0, p.stderr
    rec = json.loads((tmp_path / ".hang.o.kx.json").read_text())
    assert rec["status"] == "error" and rec["reason"] == "time limit"
    left = subprocess.run(["pgrep", "-f", f"cc1 .*{tmp_path}/hang.c"], capture_output=True,
                          text=True).stdout
    assert left == ""


def test_other_commands_and_host_objects_are_the_compilers(tmp_path):
    """What is not -c of a C file into an object runs as the compiler runs
    it (probes, -S, -E, assembler); a host program's object (--host) and
    one under KX_SCAN_REAL are measured and compiled for real; without
    KX_SCAN_ANALYZE the wrapper only runs the compiler."""
    (tmp_path / "m.c").write_text("int main(void) { return 3; }\n")
    assert wrapped(tmp_path, "gcc", "-S", "-o", "m.s", "m.c").returncode == 0
    assert "main" in (tmp_path / "m.s").read_text()
    e = wrapped(tmp_path, "gcc", "-E", "-P", "m.c")
    assert e.stdout.strip() == "int main(void) { return 3; }"
    assert wrapped(tmp_path, "gcc", "-x", "c", "-c", "-o", "probe", "/dev/null").returncode == 0
    assert not list(tmp_path.glob(".*.kx.json"))
    assert wrapped(tmp_path, "--host", "gcc", "-c", "-o", "m.o", "m.c").returncode == 0
    assert json.loads((tmp_path / ".m.o.kx.json").read_text())["status"] == "ok"
    subprocess.run(["gcc", "-o", "m", "m.o"], cwd=tmp_path, check=True)
    assert subprocess.run([str(tmp_path / "m")]).returncode == 3
    (tmp_path / "real").mkdir()
    p = wrapped(tmp_path, "gcc", "-c", "-o", "real/m.o", "m.c", env={"KX_SCAN_REAL": "x/:real/"})
    assert p.returncode == 0 and "main" in subprocess.run(
        ["nm", "real/m.o"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert wrapped(tmp_path, "gcc", "-c", "-o", "plain.o", "m.c", analyze=False).returncode == 0
    assert not (tmp_path / ".plain.o.kx.json").exists()
    assert "main" in subprocess.run(["nm", "plain.o"], cwd=tmp_path, capture_output=True,
                                    text=True).stdout



def test_the_wrapper_leaves_macro_tracking_off_only_for_a_kernel_gcc_command(
        tmp_path, monkeypatch):
    """A kernel object's -E with gcc (-nostdinc, no -isystem) runs with
    -ftrack-macro-expansion=0, which only moves __LINE__ inside a macro
    call that spans lines (to the call's first line; here 9, not 10, one
    byte less: the deviation the README states). Everywhere else the -E
    is the command's own: a system header (-isystem, a host program)
    makes tracking change line markers, and clang has no such option.
    `kx-cc --e-flags` says what it adds, so that gcc's macros (-E
    -fdebug-cpp) add up to the scan's bytes."""
    monkeypatch.setenv(sandbox.ENV, "0")
    (tmp_path / "sys").mkdir()
    (tmp_path / "sys/s.h").write_text("#define SYS(x) ((x) + 1)\n")
    (tmp_path / "ln.c").write_text("#define F(a, b) a + b\n" + "\n" * 7 +
                                   "int v = F(1,\n          __LINE__);\n")
    (tmp_path / "sy.c").write_text('#include <s.h>\nint w = SYS(2);\n')

    def record_and_e(args, src, extra=()):
        obj = f"{src[:-2]}-{len(list(tmp_path.glob('*.o')))}.o"
        argv = [*args, "-c", "-o", obj, src]
        p = wrapped(tmp_path, *argv)
        assert p.returncode == 0, p.stderr
        rec = json.loads((tmp_path / f".{obj}.kx.json").read_text())
        assert rec["argv"] == argv[1:] if args[0] == "--host" else rec["argv"] == argv
        e = kcmd.preprocess_command([x for x in argv if x != "--host"])
        out = subprocess.run([e[0], *extra, *e[1:]], cwd=tmp_path, capture_output=True,
                             check=True).stdout
        if args[0] != "--host":      # what the wrapper adds, a Dask worker, gcc's macros
            same = subprocess.run([e[0], *build.scan_e_flags(argv), *e[1:]], cwd=tmp_path,
                                  capture_output=True, check=True).stdout
            assert len(same) == rec["analysis"]["bytes"], args
            assert scanfiles.measure_one(tmp_path, src, argv)[1]["bytes"] == len(same), args
            if args[0] == "gcc":        # like the scan, and as given
                assert macros.own_bytes(tmp_path, argv, None, build.scan_e_flags(argv))[
                    "bytes"] == len(same), args
                plain = subprocess.run(e, cwd=tmp_path, capture_output=True, check=True)
                assert macros.own_bytes(tmp_path, argv, None)["bytes"] == len(
                    plain.stdout), args
        return rec["analysis"]["bytes"], len(out), out

    got, exact, out = record_and_e(["gcc", "-nostdinc"], "ln.c")
    assert b"int v = 1 + 10" in out and got == exact - 1
    assert build.scan_e_flags(["gcc", "-nostdinc", "-c", "ln.c"]) == [
        "-ftrack-macro-expansion=0"]
    # a kx-cc that does not know --e-flags (an older build) is named
    monkeypatch.setattr(build, "KX_CC", Path("/bin/false"))
    with pytest.raises(KexpandError, match="--e-flags failed"):
        build.scan_e_flags(["gcc", "-nostdinc", "-c", "ln.c"])
    monkeypatch.undo()
    monkeypatch.setenv(sandbox.ENV, "0")
    assert (got,) * 2 == record_and_e(["gcc", "-nostdinc"], "ln.c",
                                      ["-ftrack-macro-expansion=0"])[:2]
    for args, src in ((["gcc", "-nostdinc", "-isystem", "sys"], "sy.c"),
                      (["gcc", "-nostdinc", "-Wp,-idirafter,sys"], "sy.c"),
                      (["--host", "gcc", "-isystem", "sys"], "sy.c"),
                      (["gcc", "-isystem", "sys"], "ln.c"),
                      (["clang", "-nostdinc"], "ln.c")):
        got, exact, _ = record_and_e(args, src)
        assert got == exact, args
    # where a system header's macro is used, tracking shows in the -E itself
    _, exact, _ = record_and_e(["gcc", "-nostdinc", "-isystem", "sys"], "sy.c")
    _, off, _ = record_and_e(["gcc", "-nostdinc", "-isystem", "sys"], "sy.c",
                             ["-ftrack-macro-expansion=0"])
    assert off != exact

@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A git copy of the fake kernel tree, two commits: the second changes
    include/linux/minmax.h, which every file of the fake includes."""
    monkeypatch.setenv(sandbox.ENV, "0")
    t = tmp_path / "tree"
    shutil.copytree(FAKE, t)
    git = ["git", "-C", str(t), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "one"], check=True)
    m = t / "include/linux/minmax.h"
    m.write_text(m.read_text() + "\n/* two */\n#define KX_TWO 2\n")
    (t / "mm/compaction.c").write_text((t / "mm/compaction.c").read_text()
                                       + "\nint kx_two = KX_TWO;\n")
    subprocess.run(git + ["commit", "-qam", "two"], check=True)
    revs = subprocess.run(git + ["rev-list", "--reverse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.split()
    fragment = tmp_path / "fragment"
    fragment.write_text("CONFIG_64BIT=y\n")
    return t, revs, build.Config(fragment, strict=False)


def test_a_kbuild_scan_equals_measuring_each_file(tree):
    """Every C file's record from the Kbuild-driven scan equals
    scanfiles.measure_one on its command; the next commit's scan dir
    starts as a copy of the first; walked back to the first commit for one
    file (make check's per-patch bytes), the first commit's bytes. (What
    Kbuild redoes is Kbuild's: the fake tree rebuilds every object every
    time; the integration tests show the real one redo only what changed.)"""
    t, (one, two), config = tree
    series.checkout(t, one)
    a = kbuildscan.scan(t, one, "gcc", config, 2)
    sdir = build.scan_dir(t, one, "gcc")
    assert a["n_files"] == a["n_ok"] == a["n_measured"] == 2
    assert a["build"]["engine"] == "kbuild" and a["headers"]["headers"]
    for rel, argv in scanfiles.compile_commands(t, sdir):
        assert argv[0] == "gcc"              # the wrapper left out
        _, direct = scanfiles.measure_one(sdir, rel, argv)
        got = a["files"][rel]
        assert {k: got[k] for k in ("bytes", "lines", "longest_line_bytes", "hot_lines")} == \
            {k: direct[k] for k in ("bytes", "lines", "longest_line_bytes", "hot_lines")}
    series.checkout(t, two)
    b = kbuildscan.scan(t, two, "gcc", config, 2)
    assert b["build"]["from"] == sdir.name
    assert b["files"]["mm/compaction.c"]["bytes"] > a["files"]["mm/compaction.c"]["bytes"]
    series.checkout(t, one)
    back = kbuildscan.measure(t, build.scan_dir(t, two, "gcc"), one, "gcc", config, 2,
                              ["mm/compaction.c"])
    assert back["mm/compaction.c"]["bytes"] == a["files"]["mm/compaction.c"]["bytes"]
    series.checkout(t, two)
    again = kbuildscan.scan(t, two, "gcc", config, 2)
    assert {k: v["bytes"] for k, v in again["files"].items()} == \
        {k: v["bytes"] for k, v in b["files"].items()}


def _forget_kept(sdir):
    for p in sdir.rglob("*" + kbuildscan.RESULT):
        p.unlink()


def test_a_record_of_another_command_is_never_read_as_a_measurement(tree, monkeypatch):
    """... nor in a pool of processes (results made two at a time), which
    gives what this process gives."""
    t, (one, _), config = tree
    series.checkout(t, one)
    kbuildscan.scan(t, one, "gcc", config, 2)
    sdir = build.scan_dir(t, one, "gcc")
    _forget_kept(sdir)
    alone = kbuildscan.collect(t, sdir, 0, 1)
    monkeypatch.setattr(kbuildscan, "POOL_MIN", 1)
    pools = []

    class Pool(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, *a, **k):
            pools.append(a)
            super().__init__(*a, **k)
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Pool)
    _forget_kept(sdir)
    assert kbuildscan.collect(t, sdir, 0, 2) == alone and pools     # (in a pool)
    rec = kbuildscan.record_path(sdir, "mm/compaction.o")
    data = json.loads(rec.read_text())
    rec.write_text(json.dumps(dict(data, argv=data["argv"] + ["-DOTHER"])))
    for jobs in (1, 2):
        with pytest.raises(Exception, match="another command"):
            kbuildscan.collect(t, sdir, 0, jobs)
    rec.unlink()
    for jobs in (1, 2):
        with pytest.raises(Exception, match="no measurement from kx-cc"):
            kbuildscan.collect(t, sdir, 0, jobs)


def test_a_result_kept_beside_its_record_is_read_back_only_for_that_record(tree, tmp_path):
    """collect keeps each file's result beside its record, so that a copy
    of the dir reads back only what Kbuild measured again; a kept result
    is used only while its record is the one it was made from. What a
    build (untrusted) leaves in the scan dir is not followed: a link or
    FIFO where a record or kept result goes, a linked directory."""
    t, (one, _), config = tree
    series.checkout(t, one)
    a = kbuildscan.scan(t, one, "gcc", config, 2)
    want = a["files"]["mm/compaction.c"]["bytes"]
    sdir = build.scan_dir(t, one, "gcc")
    rec = kbuildscan.record_path(sdir, "mm/compaction.o")
    kept = rec.with_name(rec.name[:-len(kbuildscan.RECORD)] + kbuildscan.RESULT)
    data = json.loads(kept.read_text())
    assert data["result"]["bytes"] == want
    data["result"]["bytes"] += 1          # read back as kept: the record is not parsed
    kept.write_text(json.dumps(data))
    assert kbuildscan.collect(t, sdir, 0)[0]["mm/compaction.c"]["bytes"] == want + 1
    rec.write_text(rec.read_text() + " ")     # another record: the kept one is stale
    assert kbuildscan.collect(t, sdir, 0)[0]["mm/compaction.c"]["bytes"] == want
    assert json.loads(kept.read_text())["result"]["bytes"] == want
    kept.write_text("[" * 100000)         # a damaged one is made again
    assert kbuildscan.collect(t, sdir, 0)[0]["mm/compaction.c"]["bytes"] == want
    # a link where the kept result goes: replaced, its target untouched
    outside = tmp_path / "outside"
    outside.write_text("keep me")
    kept.unlink()
    kept.symlink_to(outside)
    assert kbuildscan.collect(t, sdir, 0)[0]["mm/compaction.c"]["bytes"] == want
    assert outside.read_text() == "keep me" and not kept.is_symlink()
    # a FIFO for a record, a record through a linked directory: no
    # measurement (an error of kexpand's), no hang, nothing read outside
    body = rec.read_bytes()
    rec.unlink()
    os.mkfifo(rec)
    with pytest.raises(Exception, match="no measurement from kx-cc"):
        kbuildscan.collect(t, sdir, 0)
    rec.unlink()
    rec.write_bytes(body)
    argv = kcmd.compile_command(sdir, "mm/compaction.c")
    mm = sdir / "mm"
    mm.rename(tmp_path / "mm")
    mm.symlink_to(tmp_path / "mm")
    assert "mm/compaction.c" not in kbuildscan.collect(t, sdir, 0)[0]   # (not listed)
    with pytest.raises(Exception, match="no measurement from kx-cc"):
        kbuildscan._read(sdir, "mm/compaction.c", argv)      # as a walked dir reads it
    mm.unlink()
    (tmp_path / "mm").rename(mm)
    assert kbuildscan.collect(t, sdir, 0)[0]["mm/compaction.c"]["bytes"] == want


def test_a_copy_made_at_other_kconfig_files_is_configured_again(tree):
    """A dir seeded from another commit's keeps its .config only if no
    Kconfig file, config fragment or kconfig tool differs between the two
    commits: otherwise the config is made again, as a dir from nothing
    would have it (6.1's .config under 6.12's Kconfig is not 6.12's)."""
    from kbuild import builddir
    t, (one, two), config = tree
    assert not builddir.config_inputs_differ(t, one, two)
    (t / "Kconfig").write_text("config FAKE_NEW\n\tbool\n\tdefault y\n")
    git = ["git", "-C", str(t), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["add", "Kconfig"], check=True)
    subprocess.run(git + ["commit", "-qm", "three"], check=True)
    three = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert builddir.config_inputs_differ(t, two, three)
    series.checkout(t, two)
    kbuildscan.scan(t, two, "gcc", config, 2)
    cfg = build.scan_dir(t, two, "gcc") / ".config"
    cfg.write_text(cfg.read_text() + "CONFIG_ONLY_IN_THE_COPY=y\n")
    series.checkout(t, three)
    kbuildscan.scan(t, three, "gcc", config, 2)
    assert "CONFIG_ONLY_IN_THE_COPY" not in (build.scan_dir(t, three, "gcc") / ".config").read_text()


def test_headers_cost_is_measured_on_the_scans_own_files(tree, tmp_path):
    """make bench-analyzer's headers' cost (measure/headercost.py) samples
    the scan's own files: every file with every=1, the preprocessor and
    both analyzer runs paid for, and each file's output the bytes the scan
    measured; the per-file record it times is the one the scan keeps."""
    from bench.measure import headercost
    t, (one, _two), config = tree
    series.checkout(t, one)
    a = kbuildscan.scan(t, one, "gcc", config, 2)
    sdir = build.scan_dir(t, one, "gcc")
    c = headercost.measure(t, sdir, tmp_path / "scratch", every=1, runs=1)
    assert c["files_in_scan"] == c["files_sampled"] == a["n_files"] == 2
    assert c["output_bytes"] == sum(v["bytes"] for v in a["files"].values())
    recs = [json.loads(kbuildscan.record_path(sdir, kcmd.output_file(argv)).read_text())
            for _, argv in scanfiles.compile_commands(t, sdir)]
    # (CPU seconds of files this small may round to 0: the sums, not their size)
    assert c["cpp_cpu_s"] == round(sum(r["cpp_cpu_s"] for r in recs), 3)
    without = c["cpp_cpu_s"] + c["analyze_cpu_s"]
    assert (c["bound"] is None) if not without else c["bound"] == pytest.approx(
        (c["cpp_cpu_s"] + c["analyze_headers_cpu_s"] + c["record_cpu_s"]) / without, abs=1e-3), c
    inc = [json.dumps(v, separators=(",", ":")) for v in a["file_headers"].values()]
    assert c["record_bytes_per_file"] == round(sum(map(len, inc)) / 2)
    assert not list((tmp_path / "scratch").iterdir())


def test_a_pool_worker_ends_with_kexpand_even_after_kill_9():
    """kill -9 of kexpand leaves nobody to end the pool that makes scan
    results: its workers end with it (PR_SET_PDEATHSIG), instead of waiting
    on the pool's pipes for good. The worker announces itself, then blocks."""
    repo = Path(__file__).resolve().parent.parent
    r, w = os.pipe()
    script = f"""
import os, sys, time
sys.path[:0] = [{str(repo)!r}, {str(repo / "kernel-build")!r}]
from bench.measure import kbuildscan
kbuildscan.POOL_MIN = 1
def made(*_):
    os.write({w}, f"{{os.getpid()}}\\n".encode())
    time.sleep(3600)
kbuildscan._made = made
kbuildscan._made_all([("a.c", [], "/nonexistent", None, None)] * 2, 2)
"""
    parent = subprocess.Popen([sys.executable, "-c", script], pass_fds=[w])
    os.close(w)
    try:
        said = os.read(r, 64)           # (b"" if it died first: no hang)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        os.close(r)
    assert said, "the script died before its pool started"
    worker = int(said.split()[0])       # (the other worker may have written too)
    try:
        pidfd = os.pidfd_open(worker)
    except ProcessLookupError:
        return                          # (ended already)
    try:
        ended, _, _ = select.select([pidfd], [], [], 60)
        if not ended:
            os.kill(worker, signal.SIGKILL)
        assert ended, "a pool worker outlived kill -9 of its parent"
    finally:
        os.close(pidfd)
