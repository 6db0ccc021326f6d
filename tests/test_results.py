"""results/ records, summary.csv and report.py on fixture records."""
import csv
import re
import json
import os
import subprocess
from pathlib import Path

import pytest

from bench import results as res
from kbuild.util import atomic_write_json

REPO = Path(__file__).resolve().parent.parent
FILES = ["arch/x86/xen/setup.c", "mm/compaction.c"]
POINTS = [("pre-6.7", "a" * 40, {FILES[0]: 2_900_000, FILES[1]: 2_600_000}),
          ("laight-v4", "b" * 40, {FILES[0]: 50_700_000, FILES[1]: 3_700_000}),
          ("torvalds-fixes", "c" * 40, {FILES[0]: 2_950_000, FILES[1]: None})]


def entry(b):
    if b is None:
        return {"status": "build-failure", "log_tail": "error: oops"}
    return {"status": "ok", "expanded_bytes": b, "lines": b // 50,
            "longest_line_bytes": b // 2, "code_bytes": b - 10,
            "hot_lines": [{"at": "arch/x86/xen/setup.c:796", "bytes": b // 2,
                           "source": "extra_pages = min3(a, b, c);",
                           "choose_expr": 3969, "stmt_expr": 441,
                           "unique_id": 2646}]}


def make_results(tmp_path):
    r = tmp_path / "results"
    for name, commit, sizes in POINTS:
        res.write_record(r, {"schema": 1, "kind": "kexpand.expansion",
                             "case": "minmax", "point": name, "commit": commit,
                             "compiler": "gcc", "compiler_version": "gcc 12",
                             "files": {f: entry(b) for f, b in sizes.items()}})
    atomic_write_json(r / "series-minmax.json", {
        "case": "minmax", "package": "linux-source-6.1 6.1.192-3",
        "files": FILES, "points": [
            {"name": n, "commit": c, "description": "", "parent": None,
             "control": False} for n, c, _ in POINTS]})
    return r


@pytest.fixture
def results(tmp_path):
    return make_results(tmp_path)


def test_summary_columns_and_order(results):
    index = res.load_series(results, "minmax")
    rows = res.write_summary(results, index, res.load_records(results))
    with open(results / "summary.csv") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        got = list(reader)
    assert header[:7] == ["point", "commit", "compiler", "file",
                          "status", "expanded_bytes", "lines"]
    for col in ("longest_line_bytes",):
        assert col in header
    assert [(r["point"], r["file"]) for r in got] == [
        (p, f) for p, _, sz in POINTS for f in FILES]
    assert got[2]["expanded_bytes"] == "50700000"
    assert got[2]["commit"] == "b" * 12
    assert got[5]["status"] == "build-failure" and got[5]["expanded_bytes"] == ""
    assert len(rows) == 6


def test_foreign_and_corrupt_files_are_skipped(results, capsys):
    (results / "zzz").mkdir()
    (results / "zzz" / "gcc.json").write_text("{ not json")
    (results / "zzz" / "other.json").write_text(json.dumps({"kind": "x"}))
    recs = res.load_records(results)
    assert len(recs) == 3
    err = capsys.readouterr().err
    assert "skipping" in err and "zzz/gcc.json" in err and "zzz/other.json" in err


def test_compare_writes_plots_and_table(results):
    p = subprocess.run(["/usr/bin/python3", str(REPO / "report.py"),
                        "--results", str(results)], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    for stem in ("expansion-gcc", "longest-line-gcc"):
        png = results / "plots" / f"{stem}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert b"<svg" in (results / "plots" / f"{stem}.svg").read_bytes()[:500]
    md = (results / "expansion.md").read_text()
    assert "| file | pre-6.7 | laight-v4 | torvalds-fixes |" in md
    assert "| arch/x86/xen/setup.c | 2,900,000 | 50,700,000 | 2,950,000 |" in md
    assert "| mm/compaction.c | 2,600,000 | 3,700,000 | build-failure |" in md
    assert "arch/x86/xen/setup.c:796" in md


def test_compare_without_results_is_a_clear_error(tmp_path):
    p = subprocess.run(["/usr/bin/python3", str(REPO / "report.py"),
                        "--results", str(tmp_path)], capture_output=True,
                       text=True)
    assert p.returncode == 2
    assert "run 'make bench' first" in p.stderr and "Traceback" not in p.stderr


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    from kbuild.util import KexpandError, atomic_write
    target = tmp_path / "r.json"
    atomic_write(target, "old\n")

    def full(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(KexpandError, match="No space left.*earlier results"):
        atomic_write(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


# --- A versus B, significance, the page -----------------------------------------

def timed_entry(b, times):
    e = entry(b)
    import statistics as st
    t = {"median_s": st.median(times), "stddev_s": st.stdev(times),
         "runs": len(times), "peak_rss_kb": 90000 + b // 1000,
         "hyperfine": {"times": times}}
    e["time_c"] = e["time_E"] = t
    return e


def write_pair(results, a_times, b_times):
    for name, commit, b, times in (("A", "d" * 40, 50_000_000, a_times),
                                   ("B", "e" * 40, 3_000_000, b_times)):
        res.write_record(results, {
            "schema": 1, "kind": "kexpand.expansion", "case": "minmax",
            "point": name, "commit": commit, "compiler": "gcc",
            "compiler_version": "gcc 12",
            "files": {FILES[0]: timed_entry(b, times)}})
    out = results / "compare" / "laight-v4..torvalds-fixes"
    atomic_write_json(out / "pair.json", {
        "a": {"ref": "laight-v4", "commit": "d" * 40, "subject": "a"},
        "b": {"ref": "torvalds-fixes", "commit": "e" * 40, "subject": "b"},
        "tree": "/x", "package": "linux-source-6.1 6.1.192-3",
        "files": [FILES[0]], "compilers": ["gcc"], "command": "make compare"})
    return out


def test_pair_report_significant_fix(results):
    import report
    out = write_pair(results, [30.1, 31.0, 29.5], [0.61, 0.60, 0.62])
    report.write_pair_report(results, out)
    rows = list(csv.DictReader(open(out / "compare.csv")))
    assert list(rows[0])[:9] == ["file", "compiler", "bytes_a", "bytes_b",
                                 "bytes_ratio", "c_time_a_s", "c_time_b_s",
                                 "c_time_ratio", "significant"]
    r = rows[0]
    assert (r["bytes_a"], r["bytes_b"], r["bytes_ratio"]) == ("50000000", "3000000", "0.06")
    assert r["significant"] == "True"
    md = (out / "report.md").read_text()
    assert "16.7x smaller" in md and "B shrank by 47,000,000 bytes" in md
    assert "arch/x86/xen/setup.c:796" in md
    for stem in ("bytes-gcc", "c-time-gcc"):
        assert (out / f"{stem}.png").stat().st_size > 1000
        assert (out / f"{stem}.svg").exists()


def test_pair_report_noise_is_not_a_difference(results):
    import report
    out = write_pair(results, [1.00, 1.30, 0.80], [1.10, 0.90, 1.25])
    report.write_pair_report(results, out)
    r = next(csv.DictReader(open(out / "compare.csv")))
    assert r["significant"] == "False"


def test_index_page_links_every_plot(results):
    import report
    subprocess.run(["/usr/bin/python3", str(REPO / "report.py"),
                    "--results", str(results)], check=True, capture_output=True)
    out = write_pair(results, [30.1, 31.0, 29.5], [0.61, 0.60, 0.62])
    report.write_pair_report(results, out)
    index = report.page.write_index(results, report.PLOT_ORDER)
    # the index links the sections; the plots are on their pages, lazily
    series = results / "pages" / "series.html"
    pair = results / "compare" / "laight-v4..torvalds-fixes" / "index.html"
    links = re.findall(r'<a href="([^"]+)"', index.read_text())
    assert "pages/series.html" in links
    assert "compare/laight-v4..torvalds-fixes/index.html" in links
    imgs = {p: re.findall(r'<img src="([^"]+)" loading="lazy"', p.read_text())
            for p in (series, pair)}
    assert "../plots/expansion-gcc.png" in imgs[series]
    assert "bytes-gcc.png" in imgs[pair]
    for p, srcs in imgs.items():
        text = p.read_text()
        assert "<table>" in text and "http" not in text.replace("http-equiv", "")
        for i in srcs:
            assert (p.parent / i).exists(), i
            assert f'<a href="{i[:-4]}.svg"' in text       # the SVG: values on hover


def test_plots_are_the_same_bytes_for_the_same_data(tmp_path):
    """A regenerated page changes in git only where the results did: no
    date in the SVG, no random clip-path ids."""
    from plots import regression
    outs = []
    for i in range(2):
        base = tmp_path / f"p{i}"
        regression.series_plot(["a", "b"], {"x.c": [1e6, 2e6]}, base, "t", "bytes")
        outs.append((base.with_suffix(".svg").read_bytes(),
                     base.with_suffix(".png").read_bytes()))
    assert outs[0] == outs[1] and b"<dc:date>" not in outs[0][0]


def test_plots_show_their_values_on_hover(tmp_path):
    """An SVG <title> per point (over the marker, where the axes put it)
    and per bar, saying the value."""
    from plots import regression, sweep
    base = tmp_path / "s"
    regression.series_plot(["a", "b"], {"x.c": [1_000_000, None], "y.c": [3e6, 2e6]},
                           base, "t", "bytes")
    svg = base.with_suffix(".svg").read_text()
    dots = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"[^>]*><title>([^<]*)</title>', svg)
    assert [t for _, _, t in dots] == ["x.c at a: 1,000,000 bytes",
                                       "y.c at a: 3,000,000 bytes", "y.c at b: 2,000,000 bytes"]
    # matplotlib's own marker of x.c at a is where the title is
    x, y = map(float, dots[0][:2])
    marks = [(float(a), float(b)) for a, b in
             re.findall(r'<use xlink:href="#m[0-9a-f]+" x="([\d.]+)" y="([\d.]+)"', svg)]
    assert any(abs(a - x) < 0.05 and abs(b - y) < 0.05 for a, b in marks)
    regression.pair_bars(["f.c"], [50_000_000], [3_000_000], "A1", "B1", tmp_path / "b",
                         "t", "bytes")
    titles = re.findall(r"<title>([^<]*)</title>", (tmp_path / "b.svg").read_text())
    assert "f.c, A (A1): 50,000,000 bytes" in titles
    assert "f.c, B (B1): 3,000,000 bytes, B/A x0.06" in titles
    regression.totals_plot(["p"], [1_292_181_981], [797.0], [True], tmp_path / "t", "t")
    assert "p: 1,292,181,981 bytes of -E output, all C files" in (tmp_path / "t.svg").read_text()
    sweep.effect_plot({"file": "f.c", "point": "p", "package": "x", "configs": [],
                       "options": [{"option": "CONFIG_A", "effect_ratio": 11.2,
                                    "confirmed_ratio": 13.2, "median_bytes_on": 50_000_000,
                                    "median_bytes_off": 4_500_000, "configs_on": 12,
                                    "configs_off": 4}]}, tmp_path / "e")
    text = (tmp_path / "e.svg").read_text()
    assert "CONFIG_A: x11.2 (median -E bytes 50,000,000 on" in text
    assert "CONFIG_A toggled alone on the base config: x13.2" in text
