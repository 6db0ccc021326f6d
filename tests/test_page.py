"""results/index.html in headless Chromium (Debian's chromium): every
image loads, offline, and a screenshot is kept for a person to look at."""
import os
import shutil
import subprocess


import test_results as tr

CHROMIUM = shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=5000"]


def test_page_renders_with_all_images(tmp_path):
    assert CHROMIUM, "chromium missing: make test installs Debian's chromium"
    import compare
    from bench import results as res
    results = tr.make_results(tmp_path)
    # a clang record whose setup.c carries the stacks of its hottest line
    name, commit, sizes = tr.POINTS[1]
    f = tr.FILES[0]
    e = dict(tr.entry(sizes[f]), macros={
        "status": "ok", "bytes_est": 90, "n_macros": 2,
        "macros": [{"name": "min3", "inclusive_bytes": 80, "calls": 1}],
        "hot_line": {"at": f + ":796", "bytes_est": 90, "macros": [],
                     "n_macros": 2, "stacks": [[f + ":796", 10],
                                               [f + ":796;min3;min", 80]]}})
    res.write_record(results, {"schema": 1, "kind": "kexpand.expansion",
                               "case": "minmax", "point": name, "commit": commit,
                               "compiler": "clang", "compiler_version": "clang 14",
                               "files": {f: e}})
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
    flames = list((results / "plots").glob("flame-*.svg"))
    assert len(flames) == 1 and f'src="plots/{flames[0].name}"' in page.read_text()
    shot = tmp_path / "page.png"
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}",
                    "--window-size=1280,2400", f"--screenshot={shot}",
                    page.as_uri()], capture_output=True, timeout=120)
    assert shot.read_bytes()[:4] == b"\x89PNG"
    keep = os.environ.get("KEXPAND_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)

