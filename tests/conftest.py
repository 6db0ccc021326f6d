import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "bench"), str(REPO / "kernel-build"), str(REPO / "plots")]


def pytest_configure(config):
    config.addinivalue_line("markers", "integration: needs the packaged kernel tree, real compilers")
