import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# the same two entries as the entry points (bench/kexpand.py, report.py)
sys.path[:0] = [str(REPO), str(REPO / "kernel-build")]


def pytest_configure(config):
    config.addinivalue_line("markers", "integration: needs the packaged kernel tree, real compilers")
