#!/usr/bin/python3
"""`make test`: the suite as pytest processes two at a time (lanes), one
per core. First the unit tests, their files dealt into two lanes (two
lanes take about half the time of one); then the integration modules in
two lanes (the 6.1 module; the 6.12 module, then 6.1 timing and boot): a
scan keeps both cores busy, but QEMU, a 47 MB -E, hyperfine runs and git
use one, which the other lane fills.

Each lane's lines are printed as they come, prefixed with its number. At
the end come each lane's pytest summary again with its wall seconds, and
each phase's wall seconds with the whole machine's CPU meanwhile
(/proc/stat; busy cores near the machine's count mean that the work, not
the arrangement of lanes, sets the time). The exit code is the first
failing lane's (pytest's: 1 tests failed, 2 interrupted, ...), or 0; with
options given, a lane they leave without a test is no failure. Every
lane runs, also after a failure. Each lane is a process group of its
own: SIGINT, SIGTERM and SIGHUP are passed on to the running lanes'
groups once (pytest, the tests' make and kexpand runs, their builds), as
a terminal sends them, and no later lane starts.

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
# the integration modules, as the second phase's two lanes run them: the
# 6.1 module alone (about as long as the other two together)
INTEGRATION = [["test_integration.py"], ["test_integration_612.py", "test_integration_time_boot.py"]]


def phases():
    """[[lane's files, ...], ...]: the unit files dealt alternately (in
    name order) into two lanes, then INTEGRATION's two lanes."""
    modules = [f for lane in INTEGRATION for f in lane]
    units = sorted(p.name for p in TESTS.glob("test_*.py") if p.name not in modules)
    return [[units[0::2], units[1::2]], INTEGRATION]


def _pump(i, stream, out, lock):
    for line in stream:
        with lock:
            out.append(line)
            sys.stdout.write(f"[{i}] {line}")
            sys.stdout.flush()


def machine_cpu():
    """(user, system) CPU seconds of the whole machine since it booted
    (/proc/stat: every process, this suite's and any other's)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    return (v[0] + v[1]) / hz, (v[2] + v[5] + v[6]) / hz


class Lanes:
    def __init__(self, args):
        self.args = args
        self.base = Path(tempfile.mkdtemp(prefix="kexpand-test-"))
        self.lock = threading.Lock()
        self.running = {}           # pid -> lane, until reaped
        self.stopped = False
        self.summaries = []

    def pass_on(self, sig, _frame):
        self.stopped = True
        for pid in list(self.running):      # only run_phase reaps them
            os.killpg(pid, sig)

    def run_phase(self, first, lanes):
        started = []
        for i, files in enumerate(lanes, first):
            argv = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                    f"--basetemp={self.base / f'lane{i}'}", "--durations=15", *self.args,
                    *(str(TESTS / f) for f in files)]
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, errors="replace", cwd=TESTS.parent,
                                 process_group=0)
            out = []
            t = threading.Thread(target=_pump, args=(i, p.stdout, out, self.lock), daemon=True)
            t.start()
            self.running[p.pid] = i
            if self.stopped:                # (a signal came while it started)
                os.killpg(p.pid, signal.SIGTERM)
            started.append((i, files, p, out, t, time.monotonic()))
            with self.lock:
                print(f"kexpand: lane {i}: {', '.join(files)}", flush=True)
        ended = {}
        while self.running:
            pid, status = os.waitpid(-1, 0)
            i = self.running.pop(pid, None)
            if i is not None:
                ended[i] = (os.waitstatus_to_exitcode(status), time.monotonic())
        for i, files, p, out, t, t0 in started:
            t.join()
            code, t1 = ended[i]
            summary = out[-1].strip() if out else "(no output)"
            self.summaries.append((i, code, f"kexpand: lane {i} ({len(files)} files): exit "
                                   f"{code} in {t1 - t0:.0f} s: {summary}"))

    def main(self):
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, self.pass_on)
        first = 1
        for n, lanes in enumerate(phases(), 1):
            if self.stopped:
                break
            t0, c0 = time.monotonic(), machine_cpu()
            self.run_phase(first, lanes)
            first += len(lanes)
            secs, (user, system) = time.monotonic() - t0, \
                [b - a for a, b in zip(c0, machine_cpu())]
            busy = f", {(user + system) / secs:.2f} of {os.cpu_count()} cores busy" \
                if secs >= 10 else ""          # (a ratio of a few ticks means nothing)
            self.summaries.append((0, 0, f"kexpand: phase {n}: {secs:.0f} s; the whole "
                                   f"machine's CPU meanwhile: {user:.0f} s user, "
                                   f"{system:.0f} s system{busy}"))
        code = 0
        for _i, c, line in self.summaries:
            print(line, flush=True)
            # (5: no test selected, as `-k NAME` leaves a lane)
            if c and not (self.args and c == 5) and not code:
                code = c if c > 0 else 128 - c
        if self.stopped and not code:
            code = 130
        if code == 0:
            subprocess.run(["rm", "-rf", str(self.base)])
        else:
            print(f"kexpand: the tests' files are kept in {self.base}", flush=True)
        return code


if __name__ == "__main__":
    sys.exit(Lanes(sys.argv[1:]).main())
