import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# the same two entries as the entry points (bench/kexpand.py, compare.py)
sys.path[:0] = [str(REPO), str(REPO / "kernel-build")]


def pytest_configure(config):
    config.addinivalue_line("markers", "integration: needs the packaged kernel tree, real compilers")


def pytest_addoption(parser):
    parser.addoption("--cpu-log", metavar="PATH",
                     help="append a line per test: its wall and CPU seconds (pytest's own "
                          "and its children's, setup and teardown included) and its id")


def _cpu_s():
    import resource
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = item.config.getoption("--cpu-log")
    t0, c0 = time.monotonic(), _cpu_s()
    yield
    if path:
        with open(path, "a") as f:
            f.write(f"{time.monotonic() - t0:.1f} {_cpu_s() - c0:.1f} {item.nodeid}\n")
