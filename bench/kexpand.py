#!/usr/bin/python3
"""Entry point of kexpand's measuring side: `bench/kexpand.py <command>`.
The commands are in bench/cli.py. This is the one place (with report.py
and the tests' conftest) that puts the project's packages on sys.path:
the repository (bench/, plots/) and kernel-build/ (kbuild/)."""
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# (bench/ itself, the script directory, is not a place to import from)
sys.path[:1] = [str(REPO), str(REPO / "kernel-build")]

from bench.cli import run  # noqa: E402

if __name__ == "__main__":
    run()
