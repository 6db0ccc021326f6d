"""No false "ok", no hang, nothing left behind (issue 30, section 3), and
a local Dask cluster on loopback only (section 2), with make check on the
fake kernel tree (tests/fakelinux).

A file that preprocesses at the base and fails at the tip (an #error, the
time limit, the memory limit) is a regression; every -E runs under a time
and a memory limit (proc.pipe); an interrupt ends every compiler,
analyzer and worker. The blocked point of a run is a tip that #includes
a fifo: the test opens the fifo's write end, which succeeds only once the
preprocessor has opened it for reading (and then waits in read()), so
what the test looks at, or the signal it sends, never races."""
import errno
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from test_check import SETUP, check, series_mbox
from test_faults import PY, REPO, fake  # noqa: F401
from test_hostile import code, out
from test_interrupts import tagged

from kbuild import proc, reap, settings
from kbuild.util import KexpandError


def setup_diff(line):
    """A patch that adds `line` after setup.c's first line."""
    return (f"diff --git a/{SETUP} b/{SETUP}\n--- a/{SETUP}\n+++ b/{SETUP}\n"
            "@@ -1,3 +1,4 @@\n #include <linux/minmax.h>\n" + f"+{line}\n \n"
            " unsigned long xen_memory_setup(unsigned long max_pfn, "
            "unsigned long extra_pages,")


def report(base):
    [d] = (base / "results/check").iterdir()
    return json.loads((d / "check.json").read_text()), (d / "report.txt").read_text()


def none_left(work, deadline_s=20):
    """No process of the run (its KEXPAND_RUN tag: make, compilers,
    analyzers, Dask workers) is alive; a killed one is given moments to
    go."""
    t0 = time.monotonic()
    while tagged(work) and time.monotonic() - t0 < deadline_s:
        time.sleep(0.05)
    left = []
    for p in tagged(work):
        try:
            left.append(Path(f"/proc/{p}/cmdline").read_bytes()[:200])
        except OSError:         # gone meanwhile
            pass
    return left


def test_a_tip_error_is_a_regression_named_in_the_report(fake, tmp_path):
    base, env = fake
    mbox = series_mbox(tmp_path / "e.mbox", [("xen: break", setup_diff('#error "tip broke"'))])
    p = check(env, PATCHES=mbox, BASE="before")
    assert code(p) == 1, out(p)
    assert f"REGRESSION {SETUP} (gcc): preprocesses at the base, fails at the tip " \
           "(error)" in p.stdout, out(p)
    rec, txt = report(base)
    assert rec["verdict"] == "regression"
    [f] = rec["results"]["gcc"]["failures"]
    assert f["file"] == SETUP and f["reason_tip"] == "error" and "tip broke" in f["error_tip"]
    assert txt.startswith(f"Subject: [kexpand] {SETUP}: -E fails at the tip (error)")
    assert f"    {SETUP} (gcc): error" in txt and "tip broke" in txt
    # the failed file is not counted as measured
    assert "measured: 2 C files at base, 1 (1 failed) at tip" in txt, txt
    md = next((base / "results/check").glob("*/report.md")).read_text()
    assert f"    {SETUP} (gcc): error" in md and "fails at the tip" in md


def fifo_for(env, tmp_path, name):
    """A fifo the sandboxed preprocessor can see (KEXPAND_SANDBOX_RW: the
    fake tree's -E runs in the sandbox, where no other host path is), and
    the environment that shows it."""
    d = tmp_path / "fifos"
    d.mkdir(exist_ok=True)
    os.mkfifo(d / name)
    return d / name, dict(env, KEXPAND_SANDBOX_RW=str(d))


def test_a_fifo_include_hits_the_time_limit_and_leaves_no_process(fake, tmp_path):
    base, env = fake
    fifo, env = fifo_for(env, tmp_path, "never-written")
    mbox = series_mbox(tmp_path / "f.mbox", [("xen: wait", setup_diff(f'#include "{fifo}"'))])
    t0 = time.monotonic()
    p = check(env, PATCHES=mbox, BASE="before", E_TIME_LIMIT=3)
    assert code(p) == 1, out(p)
    assert time.monotonic() - t0 < 240
    rec, txt = report(base)
    [f] = rec["results"]["gcc"]["failures"]
    assert f["reason_tip"] == "time limit" and "E_TIME_LIMIT=" in f["error_tip"], f
    assert f"    {SETUP} (gcc): time limit" in txt, txt
    assert none_left(Path(env["KEXPAND_WORK"])) == []


def blocked_check(env, tmp_path, via_make=False):
    """kexpand check (or `make check`, in a process group of its own, as
    a CI job runs it) with a tip that #includes a fifo; returns (the run,
    the fifo's write end) once the preprocessor is known to wait on it."""
    fifo, env = fifo_for(env, tmp_path, "held")
    mbox = series_mbox(tmp_path / "h.mbox", [("xen: wait", setup_diff(f'#include "{fifo}"'))])
    argv = (["make", "-s", "-C", str(REPO), "check", "CASE=fake", f"PATCHES={mbox}",
             "BASE=before"] if via_make else
            [PY, str(REPO / "bench/kexpand.py"), "check", "--case", "fake",
             "--patches", str(mbox), "--base", "before"])
    run = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, start_new_session=via_make)
    t0 = time.monotonic()
    while True:
        try:        # ENXIO until a reader has the fifo open
            return run, os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
        assert run.poll() is None, run.communicate()
        assert time.monotonic() - t0 < 240, "the tip's -E never opened the fifo"
        time.sleep(0.02)


def commands(pid):
    """The command names of the processes below `pid`."""
    out = set()
    for p, _ in reap.descendants(pid):
        try:
            out.add(Path(f"/proc/{p}/comm").read_text().strip())
        except OSError:
            pass
    return out


def listening(pids):
    """[(address, port)] of the TCP sockets `pids` listen on."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            continue
    out = []
    for name in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:         # LISTEN
                addr, port = f[1].split(":")
                out.append((address(addr), int(port, 16)))
    return out


def address(hexaddr):
    """/proc/net/tcp's address (32-bit words in host order) as text."""
    words = [bytes.fromhex(hexaddr[i:i + 8])[::-1] for i in range(0, len(hexaddr), 8)]
    raw = b"".join(words)
    if len(raw) == 4:
        return ".".join(map(str, raw))
    if raw[:12] == b"\0" * 10 + b"\xff\xff":
        return "::ffff:" + ".".join(map(str, raw[12:]))
    return ":".join(raw[i:i + 2].hex() for i in range(0, 16, 2))




def test_a_local_check_listens_nowhere(fake, tmp_path):
    """A check on this machine (no DASK_SCHEDULER) runs Kbuild and its
    wrapper, no Dask cluster: while its tip's -E waits on a fifo, no
    process of the run listens on any socket."""
    base, env = fake
    run, w = blocked_check(env, tmp_path)
    try:
        socks = listening([run.pid] + [p for p, _ in reap.descendants(run.pid)])
    finally:
        os.close(w)         # the include reads as empty: the run goes on
    seen, err = run.communicate(timeout=300)
    assert run.returncode == 0, seen + err
    assert socks == []
    assert "Traceback" not in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupt_leaves_no_compiler_analyzer_or_worker(fake, tmp_path, sig):
    base, env = fake
    run, w = blocked_check(env, tmp_path)
    try:
        # the analyzer is started just after the compiler: it may be a
        # moment behind cc1's open of the fifo
        t0 = time.monotonic()
        while not {"cc1", "kx-analyze"} <= (names := commands(run.pid)):
            assert time.monotonic() - t0 < 60, names
            time.sleep(0.02)
        run.send_signal(sig)
        seen, err = run.communicate(timeout=120)
        assert run.returncode == 130, seen + err
        assert none_left(Path(env["KEXPAND_WORK"])) == []
    finally:
        os.close(w)
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_sigterm_to_makes_group_leaves_no_compiler_analyzer_or_worker(fake, tmp_path):
    """What a CI runner's timeout sends: SIGTERM to make's whole process
    group, kexpand's Dask workers included (exit codes: section 5)."""
    base, env = fake
    run, w = blocked_check(env, tmp_path, via_make=True)
    try:
        os.killpg(run.pid, signal.SIGTERM)
        seen, err = run.communicate(timeout=120)
        assert run.returncode != 0
        assert none_left(Path(env["KEXPAND_WORK"])) == []
    finally:
        os.close(w)
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_the_limits_are_applied_and_named(tmp_path):
    with pytest.raises(proc.LimitHit) as e:
        proc.pipe([PY, "-c", "x = bytearray(400 << 20)"], ["cat"], tmp_path,
                  limits={"mem_mb": 200})
    assert e.value.limit == "memory limit" and "E_MEM_LIMIT=" in str(e.value)
    with pytest.raises(proc.LimitHit) as e:
        proc.pipe(["sleep", "30"], ["cat"], tmp_path, limits={"time_s": 1})
    assert e.value.limit == "time limit" and "E_TIME_LIMIT=" in str(e.value)
    out, _, rc, _, arc, _ = proc.pipe(["echo", "hi"], ["cat"], tmp_path)
    assert (out, rc, arc) == (b"hi\n", 0, 0)


@pytest.mark.parametrize("env,needle", [
    ({"E_TIME_LIMIT": "0"}, "E_TIME_LIMIT='0': give a whole number from 1"),
    ({"E_MEM_LIMIT": "lots"}, "E_MEM_LIMIT='lots'"),
    ({"DASK_SCHEDULER": "tcp://10.0.0.5:8786"}, "DASK_INSECURE=1"),
    ({"DASK_SCHEDULER": "tcp://10.0.0.5:8786", "DASK_TLS_CA": "/x"}, "tls://10.0.0.5:8786"),
    ({"DASK_SCHEDULER": "tls://10.0.0.5:8786", "DASK_TLS_CA": "/nonexistent/ca.pem",
      "DASK_TLS_CERT": "/nonexistent/c.pem"}, "DASK_TLS_CA=/nonexistent/ca.pem: no such file"),
])
def test_limit_and_dask_settings_are_checked(tmp_path, env, needle):
    env = dict(env, KEXPAND_WORK=str(tmp_path / "w"), KEXPAND_RESULTS=str(tmp_path / "r"))
    with pytest.raises(KexpandError) as e:
        settings.from_env("check", env=env)
    assert needle in str(e.value) and e.value.exit_code == 2


def test_plain_tcp_is_taken_on_loopback_or_when_meant(tmp_path):
    env = {"KEXPAND_WORK": str(tmp_path / "w"), "KEXPAND_RESULTS": str(tmp_path / "r")}
    req = settings.from_env("check", env=dict(env, DASK_SCHEDULER="tcp://127.0.0.1:8786"))
    assert req.dask_scheduler == "tcp://127.0.0.1:8786" and req.e_time_limit == 300
    req = settings.from_env("check", env=dict(env, DASK_SCHEDULER="tcp://10.0.0.5:8786",
                                              DASK_INSECURE="1", E_MEM_LIMIT="8192"))
    assert req.dask_insecure and req.e_mem_limit == 8192


CHILD_TAKES_TERM = """
import os, signal, sys, time
def ended(*_):
    open(sys.argv[1], "w").write("SIGTERM")
    sys.exit(7)
signal.signal(signal.SIGTERM, ended)
os.kill(os.getppid(), signal.SIGINT)     # the interrupt, with this child ready for it
while True:
    signal.pause()
"""


@pytest.mark.parametrize("mode", ["term", "finish"])
def test_an_interrupt_is_passed_on_as_sigterm_or_waited_out(tmp_path, mode):
    """on_interrupt="term": the child gets SIGTERM (kexpand ends its own
    children then) and is waited for before the interrupt goes on;
    "finish": it is waited for, never signalled (git)."""
    from kbuild import proc
    mark = tmp_path / "mark"
    cmd = [PY, "-c", CHILD_TAKES_TERM, str(mark)]
    if mode == "finish":        # ends by itself once interrupted
        cmd[2] = CHILD_TAKES_TERM.replace("while True:\n    signal.pause()", "sys.exit(3)")
    # Python's own handler, also where the suite was started with SIGINT
    # ignored (a shell's background job): otherwise the child's SIGINT to
    # this process would be lost and the child would wait forever
    was = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            proc.run(cmd, check=False, on_interrupt=mode)
    finally:
        signal.signal(signal.SIGINT, was)
    assert (mark.read_text() if mark.exists() else None) == \
        ("SIGTERM" if mode == "term" else None)
