"""results/ records, summary.csv and compare.py on fixture records."""
import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

import results as res
from kxutil import atomic_write_json

REPO = Path(__file__).resolve().parent.parent
FILES = ["arch/x86/xen/setup.c", "mm/compaction.c"]
POINTS = [("pre-6.7", "a" * 40, {FILES[0]: 2_900_000, FILES[1]: 2_600_000}),
          ("laight-v4", "b" * 40, {FILES[0]: 50_700_000, FILES[1]: 3_700_000}),
          ("torvalds-fixes", "c" * 40, {FILES[0]: 2_950_000, FILES[1]: None})]


def entry(b):
    if b is None:
        return {"status": "build-failed", "log_tail": "error: oops"}
    return {"status": "ok", "expanded_bytes": b, "lines": b // 50,
            "longest_line_bytes": b // 2, "code_bytes": b - 10,
            "hot_lines": [{"at": "arch/x86/xen/setup.c:796", "bytes": b // 2,
                           "source": "extra_pages = min3(a, b, c);",
                           "choose_expr": 3969, "stmt_expr": 441,
                           "unique_id": 2646}]}


@pytest.fixture
def results(tmp_path):
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


def test_summary_columns_and_order(results):
    index = res.load_series(results)
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
    assert got[5]["status"] == "build-failed" and got[5]["expanded_bytes"] == ""
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
    p = subprocess.run(["/usr/bin/python3", str(REPO / "compare.py"),
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
    assert "| mm/compaction.c | 2,600,000 | 3,700,000 | build-failed |" in md
    assert "arch/x86/xen/setup.c:796" in md


def test_compare_without_results_is_a_clear_error(tmp_path):
    p = subprocess.run(["/usr/bin/python3", str(REPO / "compare.py"),
                        "--results", str(tmp_path)], capture_output=True,
                       text=True)
    assert p.returncode == 2
    assert "run 'make bench' first" in p.stderr and "Traceback" not in p.stderr


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    from kxutil import KexpandError, atomic_write
    target = tmp_path / "r.json"
    atomic_write(target, "old\n")

    def full(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(KexpandError, match="No space left.*earlier results"):
        atomic_write(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
