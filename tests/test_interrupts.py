"""Interrupted at any stage, a run leaves a state the next run resumes
from (issue 22, section 1): SIGTERM to make (what `timeout make ...` and
CI runners send), SIGINT or SIGTERM to make's process group (Ctrl-C),
and kill -9 of kexpand itself, while it unpacks the tarball (git
fast-import), checks out a commit (git checkout) or builds (make). The fake kernel tree, real make and
real git.

No test here races: the stage under test announces that it is blocked
(a stand-in that waits on a fifo, or the fake Kbuild's FAKE_BLOCK), and
only then is the signal sent."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from test_faults import REPO, fake  # noqa: F401

STAGES = ("unpack", "checkout", "make")
SIGNALS = ("make-term", "group-int", "group-term", "kill-9")

SHIM = """#!/bin/sh
# stand-in for {tool}: blocks once at the stage under test ({stage}), then runs it
block=
for a in "$@"; do case "$a" in {match}) block=1;; esac; done
if [ -n "$block" ] && mkdir "$FAKE_BLOCK/{stage}.once" 2>/dev/null; then
  if [ -n "$FAKE_PARTIAL" ] && [ "$1" = -C ]; then
    # what a killed checkout leaves: a lock and a half-rewritten file
    : > "$2/.git/index.lock"; echo half >> "$2/include/linux/minmax.h"
  fi
  touch "$FAKE_BLOCK/blocked-{stage}"
  cat "$FAKE_BLOCK/fifo" > /dev/null
  {real} "$@"; rc=$?
  echo "$rc" >> "$FAKE_BLOCK/{stage}.log"      # the blocked run's own end
  exit $rc
fi
exec {real} "$@"
"""
# the stand-in of each stage: the tool, and the argument that marks the stage
SHIMS = {"unpack": ("git", "fast-import"), "checkout": ("git", "checkout")}


def tagged(work):
    """Processes that carry a run's tag for this work directory."""
    from kbuild.workdir import tag_prefix
    prefix = tag_prefix(work)
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(e.startswith(f"KEXPAND_RUN={prefix}".encode()) for e in env):
            out.append(int(d.name))
    return out


def kexpand_pid(make_pid):
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
                sid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[3])
            except (OSError, ValueError, IndexError):
                continue
            if sid == make_pid and any(c.endswith(b"bench/kexpand.py") for c in cmd):
                return int(d.name)
    return None


def make_compare(env, **kw):
    return subprocess.Popen(
        ["make", "-s", "-C", str(REPO), "compare", "CASE=fake", "A=before", "B=after",
         "CC=gcc", "NO_TIME=1", "NO_MACROS=1"], env=env, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def wait_for(path, proc, what, limit=120):
    """Until `path` exists (the stage announced it is blocked); fails with
    the run's output if the run ended first."""
    t0 = time.monotonic()
    while not path.exists():
        if proc.poll() is not None:
            o, e = proc.communicate()
            pytest.fail(f"the run ended before {what} blocked:\n{o}\n{e}")
        assert time.monotonic() - t0 < limit, f"{what} never blocked"
        time.sleep(0.02)


def delivered(pid, sig):
    """The signal reached `pid` (no longer pending), or the pid is gone or
    a zombie (a zombie can show the signal it re-raised to end itself, as
    make does, as pending)."""
    try:
        st = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    if "\nState:\tZ" in st:
        return True
    bit = 1 << (sig - 1)
    return all(not int(line.split()[1], 16) & bit for line in st.splitlines()
               if line.startswith(("SigPnd:", "ShdPnd:")))


def group_members(pgid):
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            out.append(int(stat.parent.name))
    return out


def signal_group(pgid, sig):
    """`sig` to a make's whole process group (as Ctrl-C or a CI runner's
    timeout sends it), make first. GNU make 4.3 loses a child that exits
    between its own wait() and its signal handler ("wait: No child
    processes", exit 2 instead of the child's code), a race of make's, not
    kexpand's: the rest of the group is signalled once make's handler runs."""
    os.kill(pgid, sig)
    t0 = time.monotonic()
    while not delivered(pgid, sig):
        assert time.monotonic() - t0 < 30, "make never took the signal"
        time.sleep(0.01)
    for pid in group_members(pgid):
        if pid != pgid:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


@pytest.fixture
def rig(fake, tmp_path):  # noqa: F811
    base, env = fake
    block = tmp_path / "block"
    block.mkdir()
    os.mkfifo(block / "fifo")
    shims = tmp_path / "shims"
    for stage, (tool, match) in SHIMS.items():
        real = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True,
                              text=True, check=True).stdout.strip()
        (shims / stage).mkdir(parents=True)
        s = shims / stage / tool
        s.write_text(SHIM.format(tool=tool, stage=stage, real=real, match=match))
        s.chmod(0o755)
    return base, env, block, shims


def release(block):
    """Let a stand-in blocked on the fifo go on."""
    fd = os.open(block / "fifo", os.O_WRONLY | os.O_NONBLOCK)
    os.close(fd)


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("how", SIGNALS)
def test_interrupt_at_any_stage_then_resume(rig, stage, how):
    base, env, block, shims = rig
    work = base / "work"
    run_env = dict(env, FAKE_BLOCK=str(block), KEXPAND_SANDBOX_RW=str(block),
                   PATH=f"{shims / stage}:{env['PATH']}")
    if how == "kill-9" and stage == "checkout":
        run_env["FAKE_PARTIAL"] = "1"
    proc = make_compare(run_env)
    wait_for(block / f"blocked-{stage}", proc, stage)
    py = kexpand_pid(proc.pid)
    assert py, "kexpand is not running"
    # the lock names the live holder; a second run is refused and names it
    assert (work / "lock").read_text().strip() == str(py)
    second = subprocess.run(["make", "-s", "-C", str(REPO), "prepare", "CASE=fake"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert second.returncode != 0 and f"(pid {py})" in second.stderr, second.stderr
    assert (work / "lock").read_text().strip() == str(py)

    sig = {"make-term": signal.SIGTERM, "group-int": signal.SIGINT,
           "group-term": signal.SIGTERM, "kill-9": signal.SIGKILL}[how]
    if how == "make-term":
        os.kill(proc.pid, sig)
    elif how.startswith("group"):
        signal_group(proc.pid, sig)
    else:
        os.kill(py, sig)
    if stage == "checkout" and how != "kill-9":
        # git is never killed half-way: kexpand waits for it to finish
        t0 = time.monotonic()
        while not delivered(py, sig):
            assert time.monotonic() - t0 < 30
            time.sleep(0.01)
        release(block)
    o, e = proc.communicate(timeout=120)
    assert "Traceback" not in o + e
    if how == "kill-9":
        # git runs outside the sandbox and outlives kexpand; the
        # sandboxed build dies with it (bwrap --die-with-parent), on its way
        # out as the signal lands: the next run finds it gone or ends it
        if stage != "make":
            assert tagged(work), "the stage under test should have outlived kexpand"
    else:
        assert "interrupted; finished results are kept" in e, e
        assert tagged(work) == [], "a child outlived the interrupted run"
        assert (work / "lock").read_text() == ""
        if stage == "checkout":
            assert (block / "checkout.log").read_text().split() == ["0"], \
                "the checkout was not allowed to finish"

    # the next run cleans up after the last one and finishes the work
    again = subprocess.run(["make", "-s", "-C", str(REPO), "compare", "CASE=fake",
                            "A=before", "B=after", "CC=gcc", "NO_TIME=1", "NO_MACROS=1"],
                           env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Traceback" not in again.stdout + again.stderr
    assert tagged(work) == []
    tree = work / "tree"
    assert not (base / "work/tree.unpacking").exists()
    assert not (tree / ".git/index.lock").exists()
    st = subprocess.run(["git", "-C", tree, "status", "--porcelain", "-uno"],
                        capture_output=True, text=True, check=True).stdout
    assert st == ""
    assert (base / "results/compare/before..after@gcc/report.md").exists()
    assert (work / "lock").read_text() == ""
