#!/usr/bin/python3
"""`make test`: the suite in two pytest processes side by side, as the
machine has two cores and no one test file keeps both busy (a kernel
build or scan does, for minutes; QEMU, a 47 MB -E, git and the unit
tests' many short processes use one, or less).

Lane 1 is the 6.1 integration module (about half of the suite's time
alone); lane 2 the 6.12 module, then every other test file. Each lane's
lines are printed as they come, prefixed with its number, and its pytest
summary again at the end with its wall and CPU time. The exit code is
the first failing lane's (pytest's: 1 tests failed, 2 interrupted, ...),
or 0; with options given, a lane they leave without a test is no failure. Each lane is a process group of its own: SIGINT, SIGTERM and
SIGHUP are passed on to both groups once (pytest, the tests' make and
kexpand runs, their builds), as a terminal sends them; the run ends when
both pytests have.

    tests/lanes.py [pytest options]     (e.g. -x, -k NAME, --durations=0)
"""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent
FIRST = "test_integration.py"
SECOND = "test_integration_612.py"


def lanes():
    rest = sorted(p.name for p in TESTS.glob("test_*.py") if p.name not in (FIRST, SECOND))
    return [[FIRST], [SECOND, *rest]]


def _pump(i, stream, out, lock):
    for line in stream:
        with lock:
            out.append(line)
            sys.stdout.write(f"[{i}] {line}")
            sys.stdout.flush()


def main(args):
    base = Path(tempfile.mkdtemp(prefix="kexpand-test-"))
    lock = threading.Lock()
    runs = []
    for i, files in enumerate(lanes(), 1):
        argv = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                f"--basetemp={base / f'lane{i}'}", "--durations=20", *args,
                *(str(TESTS / f) for f in files)]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, errors="replace", cwd=TESTS.parent,
                             process_group=0)
        out = []
        t = threading.Thread(target=_pump, args=(i, p.stdout, out, lock), daemon=True)
        t.start()
        runs.append((i, files, p, out, t, time.monotonic()))
        print(f"kexpand: lane {i}: {files[0]}" + (f" and {len(files) - 1} more files"
                                                   if len(files) > 1 else ""), flush=True)

    ended = {}

    def pass_on(sig, _frame):
        for i, _f, p, *_ in runs:
            if i not in ended:          # only this loop below reaps them
                os.killpg(p.pid, sig)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, pass_on)
    while len(ended) < len(runs):
        try:
            pid, status, ru = os.wait4(-1, 0)
        except ChildProcessError:
            break
        for i, _f, p, _o, _t, t0 in runs:
            if p.pid == pid:
                p.returncode = os.waitstatus_to_exitcode(status)
                ended[i] = (time.monotonic() - t0, ru.ru_utime + ru.ru_stime)
    code = 0
    for i, files, p, out, t, _t0 in runs:
        t.join()
        wall, cpu = ended.get(i, (0.0, 0.0))
        summary = out[-1].strip() if out else "(no output)"
        print(f"kexpand: lane {i} ({len(files)} files): exit {p.returncode} in {wall:.0f} s, "
              f"{cpu:.0f} CPU s: {summary}", flush=True)
        # (5: no test selected, as `-k NAME` leaves one lane)
        if p.returncode and not (args and p.returncode == 5) and not code:
            code = p.returncode if p.returncode > 0 else 128 - p.returncode
    if code == 0:
        subprocess.run(["rm", "-rf", str(base)])
    else:
        print(f"kexpand: the tests' files are kept in {base}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
