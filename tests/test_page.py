"""results/index.html in headless Chromium (Debian's chromium): every
image loads, offline, and a screenshot is kept for a person to look at."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import test_results as tr

CHROMIUM = shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=5000"]


def test_page_renders_with_all_images(tmp_path):
    if CHROMIUM is None and os.environ.get("CI") != "true":
        pytest.skip("chromium not installed (make test installs it)")
    assert CHROMIUM, "chromium missing: make test installs Debian's chromium"
    import compare
    results = tr.make_results(tmp_path)
    subprocess.run(["/usr/bin/python3", str(tr.REPO / "compare.py"),
                    "--results", str(results)], check=True, capture_output=True)
    out = tr.write_pair(results, [30.1, 31.0, 29.5], [0.61, 0.60, 0.62])
    compare.write_pair_report(results, out)
    page = compare.page.write_index(results, compare.PLOT_ORDER)
    profile = tmp_path / "profile"
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}",
                          "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120)
    assert 'data-images-broken="0"' in dom.stdout, dom.stderr[-2000:]
    assert dom.stdout.count('data-loaded="1"') == page.read_text().count('<img ') >= 4
    assert 'data-loaded="0"' not in dom.stdout
    shot = tmp_path / "page.png"
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}",
                    "--window-size=1280,2400", f"--screenshot={shot}",
                    page.as_uri()], capture_output=True, timeout=120)
    assert shot.read_bytes()[:4] == b"\x89PNG"
    keep = os.environ.get("KEXPAND_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)

