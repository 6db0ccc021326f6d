"""The sandbox (kernel-build/kbuild/sandbox.py, issue 30 section 1): what
runs on a tree that may hold someone else's patches runs under bubblewrap,
with no network, an unprivileged uid and no capabilities, only its build
dir writable, nothing of the host's secrets visible, and a time and a
memory limit. First the sandbox itself, probed from inside by a shell
script; then a hostile series through make check on the fake tree: a
Makefile $(shell ...), an edited merge_config.sh and an #include of an
absolute host path. Real bwrap, make, git and gcc."""
import difflib
import os
import socket
import subprocess
from pathlib import Path

import pytest

from bench.measure.expansion import source_text
from kbuild import builddir, sandbox
from kbuild.util import KexpandError
from test_check import COVER, check, mail
from test_faults import FAKE, fake  # noqa: F401
from test_hostile import code, out

SECRET = "kx-secret-7f3a9c"


@pytest.fixture
def box(tmp_path):
    """A tree (git) with two build dirs, a secret and a writable-looking
    place outside it, a listener on the host's loopback."""
    tree = tmp_path / "work" / "tree"
    (tree / "include").mkdir(parents=True)
    (tree / "include" / "a.h").write_text("int a;\n")
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    mine, other = tree / "kb-aaaa-gcc", tree / "kb-bbbb-gcc"
    mine.mkdir()
    other.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "secret.h").write_text(f"#define KX \"{SECRET}\"\n")
    (tmp_path / "work" / "cache.json").write_text(SECRET)
    return tmp_path, tree, mine, other, outside


def test_inside_the_sandbox_nothing_of_the_host_is_reachable(box):
    base, tree, mine, other, outside = box
    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(1)
    lsn.setblocking(False)
    port = lsn.getsockname()[1]
    script = f"""
    echo "uid=$(id -u)"
    grep CapEff /proc/self/status
    echo x > {outside}/marker && echo "wrote-outside"
    cat {base}/secret.h {base}/work/cache.json /etc/shadow 2>/dev/null
    ls /root /home 2>/dev/null | head -1
    echo x > {tree}/include/new.h && echo "wrote-source"
    echo x > {tree}/.git/hooks/post-checkout && echo "wrote-hook"
    echo x > {other}/obj.o && echo "wrote-other-build-dir"
    echo x > {mine}/obj.o && echo "wrote-own-build-dir"
    echo "token=${{SOME_TOKEN:-none}}"
    if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo connected; fi
    echo "pid1=$(cat /proc/1/comm)"
    """
    p = subprocess.run(sandbox.wrap(["bash", "-c", script], mine,
                                    env=dict(os.environ, SOME_TOKEN=SECRET)),
                       capture_output=True, text=True, timeout=60)
    o = p.stdout
    assert "uid=65534" in o, o + p.stderr
    assert "CapEff:\t0000000000000000" in o
    for bad in ("wrote-outside", SECRET, "wrote-source", "wrote-hook",
                "wrote-other-build-dir", "connected"):
        assert bad not in o, o
    assert "wrote-own-build-dir" in o and "token=none" in o
    assert "pid1=bwrap" in o          # a pid namespace of its own
    assert not (outside / "marker").exists()
    assert not (tree / ".git/hooks/post-checkout").exists()
    with pytest.raises(BlockingIOError):
        lsn.accept()                  # nothing reached the host's listener
    lsn.close()


def test_an_include_of_a_host_path_is_not_there(box):
    base, tree, mine, _, _ = box
    (tree / "x.c").write_text(f'#include "{base}/secret.h"\nconst char *s = KX;\n')
    p = subprocess.run(sandbox.wrap(["gcc", "-E", "../x.c"], mine),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "No such file" in p.stderr
    assert SECRET not in p.stdout + p.stderr
    # outside the sandbox the same command reads it: the probe is real
    bare = subprocess.run(["gcc", "-E", "../x.c"], cwd=mine, capture_output=True,
                          text=True, timeout=60)
    assert SECRET in bare.stdout


def test_time_limit_ends_the_whole_tree_of_processes(box):
    *_, mine, _, outside = box
    fifo = outside / "fifo"
    os.mkfifo(fifo)
    # children that would block for ever (a fifo nobody writes, a sleep)
    script = f"sleep 1000 & cat {fifo} & cat {fifo}; wait"
    env = dict(os.environ, KX_PROBE="kx-limit-probe")
    p = subprocess.run(sandbox.wrap(["sh", "-c", script], mine, rw=[outside],
                                    env=env, seconds=2),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 124, (p.returncode, p.stderr)       # timeout(1)'s code
    left = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and b"KX_PROBE=kx-limit-probe" in \
                    (d / "environ").read_bytes().split(b"\0"):
                left.append(d.name)
        except OSError:
            pass
    assert left == []


def test_memory_limit_per_process(box):
    *_, mine, _, _ = box
    grab = ["/usr/bin/python3", "-c", "b = bytearray(512 << 20); print('got it')"]
    small = subprocess.run(sandbox.wrap(grab, mine, data=128 << 20),
                           capture_output=True, text=True, timeout=60)
    assert small.returncode != 0 and "MemoryError" in small.stderr
    big = subprocess.run(sandbox.wrap(grab, mine), capture_output=True, text=True,
                         timeout=60)
    assert big.returncode == 0 and "got it" in big.stdout


def test_off_only_when_asked_and_refused_when_it_cannot_start(box, monkeypatch):
    *_, mine, _, _ = box
    monkeypatch.setenv(sandbox.ENV, "0")
    assert sandbox.wrap(["gcc", "-E", "x.c"], mine) == ["gcc", "-E", "x.c"]
    monkeypatch.delenv(sandbox.ENV)
    assert sandbox.wrap(["gcc"], mine)[0] == "bwrap"
    monkeypatch.setattr(sandbox, "BWRAP", "/nonexistent/bwrap")
    sandbox.check.cache_clear()
    with pytest.raises(KexpandError, match="bubblewrap.*SANDBOX=0, only for series "
                                           "you trust") as e:
        sandbox.check()
    assert e.value.klass == "infra"
    sandbox.check.cache_clear()


def diff_of(rel, after, added):
    """A git diff of the fake tree's file `rel` that adds the lines `added`
    after the line starting with `after`."""
    old = (FAKE / rel).read_text().splitlines(keepends=True)
    i = next(n for n, line in enumerate(old) if line.startswith(after)) + 1
    new = old[:i] + [line + "\n" for line in added.split("\n")] + old[i:]
    body = "".join(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}"))
    return f"diff --git a/{rel} b/{rel}\n{body}".rstrip("\n")


def test_a_hostile_series_runs_nowhere_but_in_its_sandbox(fake, tmp_path):  # noqa: F811
    """A posted series whose Makefile runs $(shell ...), whose
    merge_config.sh is rewritten and whose C file includes a host file:
    its tip made from nothing (FULL_BUILD=1, so that the tip's
    merge_config.sh runs too) runs all three, in the sandbox: the markers land in the build dir only, written by
    uid 65534, and the host file's contents reach no result."""
    base, env = fake
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = tmp_path / "host-secret.h"
    secret.write_text(f'#define HOST_SECRET "{SECRET}"\n')
    mk_diff = diff_of("Makefile", "CMD_PREFIX :=",
                      f"KX_EVIL := $(shell id -u > {outside}/make-marker; id -u > "
                      "$(O)/make-marker; cat /etc/shadow >> $(O)/make-marker)")
    mc_diff = diff_of("scripts/kconfig/merge_config.sh", 'cat "$@"',
                      f'id -u > {outside}/kconfig-marker\nid -u > "$out/kconfig-marker"')
    inc_diff = diff_of("mm/compaction.c", "#include <linux/minmax.h>",
                       f'#include "{secret}"')
    mbox = tmp_path / "evil.mbox"
    mbox.write_text(COVER.replace("0/3", "0/3").replace("make min3() safer", "evil")
                    + mail(1, 3, "kbuild: a shell", "Why.", mk_diff)
                    + mail(2, 3, "kconfig: merge", "Why.", mc_diff)
                    + mail(3, 3, "mm: include", "Why.", inc_diff))
    p = check(env, PATCHES=mbox, BASE="before", NAME="evil", FULL_BUILD=1)
    assert code(p) in (1, 3), out(p)
    assert list(outside.iterdir()) == [], out(p)
    tree = base / "work" / "tree"
    marks = sorted(tree.glob("ks-*-gcc/make-marker"))
    kmarks = sorted(tree.glob("ks-*-gcc/kconfig-marker"))
    assert marks and kmarks, out(p)
    for m in marks + kmarks:
        assert m.read_text().split() == ["65534"], m.read_text()
    leaked = [str(f) for d in (base / "results", base / "work") for f in d.rglob("*")
              if f.is_file() and f != secret and SECRET.encode() in f.read_bytes()]
    assert leaked == [], leaked


def test_a_line_marker_naming_a_host_file_is_not_read(box):
    """A patch's `#line 2 "/root/.ssh/id_rsa"` makes the hottest line's
    file a host path: kexpand reads a hot line's statement from the tree
    only (outside the sandbox, nothing else may be read)."""
    base, tree, mine, _, _ = box
    assert source_text(mine, "../include/a.h", 1) == "int a;"
    for name in (str(base / "secret.h"), "../../../secret.h", "/proc/self/environ"):
        assert source_text(mine, name, 1) == "", name
    (tree / "include" / "out.h").symlink_to(base / "secret.h")
    assert source_text(mine, "../include/out.h", 1) == ""


def test_retarget_writes_nothing_outside_the_build_dir(box):
    """A build can name a dir "x\\n" in its build dir, so that a list of
    file names read line by line holds a host path; retarget (a seeded or
    taken-over dir) must rewrite files inside the dir only."""
    base, tree, mine, other, _ = box
    victim = base / "victim" / "f"
    victim.parent.mkdir()
    victim.write_text(f"host file naming {mine.resolve()}\n")
    planted = other / "g" / "x\n" / str(victim)[1:]
    planted.parent.mkdir(parents=True)
    planted.write_text(f"cmd := {mine.resolve()}/a.o\n")
    (other / "link.cmd").symlink_to(victim)
    builddir.retarget(mine, other)
    assert victim.read_text() == f"host file naming {mine.resolve()}\n"
    assert planted.read_text() == f"cmd := {other.resolve()}/a.o\n"


def test_path_shows_a_toolchain_dir_but_never_tmp_or_the_work_dir(box):
    base, tree, mine, _, _ = box
    tools = base / "opt-cross" / "bin"
    tools.mkdir(parents=True)
    (tools / "kx-cc").write_text("#!/bin/sh\necho cross\n")
    (tools / "kx-cc").chmod(0o755)
    env = dict(os.environ, PATH=f"/tmp:{base / 'work'}:{tools}:/usr/bin:/bin")
    p = subprocess.run(sandbox.wrap(["sh", "-c", f"kx-cc; ls {base / 'work'}; "
                                    "echo x > /tmp/t && echo tmp-writable"], mine,
                                    env=env), capture_output=True, text=True, timeout=60)
    assert p.stdout.split() == ["cross", "tree", "tmp-writable"], p.stdout + p.stderr


def test_a_sandboxed_preprocessors_cpu_is_its_own(box):
    """expansion.analyze's cpp_cpu_s is the CPU of the command in the box
    (the ICOUNT_CAP estimate), not bwrap's: bwrap's reaper waits for the
    command, so wait4() of bwrap saw about 3 ms whatever ran inside."""
    from bench.measure import expansion
    _base, _tree, mine, _other, _outside = box
    burn = ["sh", "-c", "i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done; echo 'int x;'"]
    a, secs = expansion.analyze(burn, mine)
    assert a["bytes"] == len("int x;\n")
    assert a["cpp_cpu_s"] > 0.1 and a["cpp_cpu_s"] <= secs * 1.5, (a["cpp_cpu_s"], secs)
    assert not list(mine.iterdir())         # (nothing of it in the build dir)


def test_the_cpu_figure_is_read_as_a_small_regular_file(tmp_path):
    """What the box wrote for /usr/bin/time is read as a regular file of at
    most 256 bytes: a fifo, a link or junk gives wait4's figure, without
    blocking or reading on."""
    from bench.measure.expansion import _time_cpu
    f = tmp_path / "cpu"
    f.write_text("0.50 0.25\n")
    assert _time_cpu(f, 9.0) == 0.75
    f.write_text("")
    assert _time_cpu(f, 9.0) == 9.0
    f.write_text("x" * 10_000_000 + " 1 2")
    assert _time_cpu(f, 9.0) == 9.0
    os.mkfifo(tmp_path / "fifo")
    assert _time_cpu(tmp_path / "fifo", 9.0) == 9.0
    (tmp_path / "link").symlink_to(f)
    assert _time_cpu(tmp_path / "link", 9.0) == 9.0


def test_git_inside_trusts_the_index_for_files_whose_stat_is_unchanged(box, monkeypatch):
    """Kbuild's setlocalversion runs `git status` at every make. Inside,
    the tree's files belong to the sandbox's uid, not to the one the index
    recorded: without core.checkStat=minimal git reads every file again
    (3-5 s on a kernel tree). Probe: a.h unreadable inside (mode 000, no
    capabilities), so reading it would show it modified; a file that did
    change is still seen."""
    _base, tree, mine, _, _ = box
    (tree / "include" / "b.h").write_text("int b;\n")
    for f in ("a.h", "b.h"):
        os.utime(tree / "include" / f, (1577836800, 1577836800))    # not racy
    git = ["git", "-c", "user.name=k", "-c", "user.email=k@x", "-C", str(tree)]
    subprocess.run([*git, "add", "include"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    (tree / "include" / "a.h").chmod(0)
    status = ["git", "--no-optional-locks", "status", "-uno", "--porcelain"]
    assert subprocess.run([*git, *status[1:]], capture_output=True, text=True,
                          check=True).stdout == ""      # (outside: refreshed, clean)

    def inside():
        return subprocess.run(sandbox.wrap(status, mine, cwd=tree), capture_output=True,
                              text=True, timeout=60).stdout
    assert inside() == ""
    (tree / "include" / "b.h").write_text("int bb;\n")
    assert inside() == " M include/b.h\n"
    monkeypatch.setattr(sandbox, "GIT_CONFIG", {})
    assert inside() == " M include/a.h\n M include/b.h\n"  # the probe is real
