"""The results/ directory: one JSON record per (commit, compiler), the series
index, and the flat summary.csv. Field-by-field documentation: README.md,
"Results"."""
import csv
import io
from pathlib import Path

from kxutil import atomic_write, atomic_write_json, read_json, log

SCHEMA = 1
OTHER_KINDS = ("kexpand.boot", "kexpand.conformance", "kexpand.scan")
BOOT_COLUMNS = ["point", "commit", "status", "boot_s", "tests_passed",
                "tests_failed", "tests_skipped", "class", "failures",
                "kernel_build_s"]
SUMMARY_COLUMNS = ["point", "commit", "compiler", "file", "status",
                   "expanded_bytes", "lines", "longest_line_bytes",
                   "code_bytes", "hot_line", "hot_line_bytes",
                   "e_time_median_s", "e_time_stddev_s", "c_time_median_s",
                   "c_time_stddev_s", "peak_rss_kb", "e_runs", "c_runs"]


def record_path(results, commit, compiler):
    return Path(results) / commit[:12] / f"{compiler}.json"


def write_record(results, rec):
    atomic_write_json(record_path(results, rec["commit"], rec["compiler"]), rec)


def merge_record(results, rec):
    """A run that measured some files keeps the other files of an earlier
    record of the same (commit, compiler, compiler version, config)."""
    p = record_path(results, rec["commit"], rec["compiler"])
    old = read_json(p) if p.exists() else None
    if isinstance(old, dict) and isinstance(old.get("files"), dict) and all(
            old.get(k) == rec[k] for k in ("compiler_version", "config_hash")):
        files = dict(old["files"])
        files.update(rec["files"])
        rec = dict(rec, files=files)
    return rec


def load_records(results):
    """All well-formed records under results/; others are skipped with a
    warning naming the file."""
    out = []
    for p in sorted(Path(results).glob("*/*.json")):
        rec = read_json(p)
        if rec is None:
            continue
        if isinstance(rec, dict) and rec.get("kind") in OTHER_KINDS:
            continue
        if not isinstance(rec, dict) or rec.get("kind") != "kexpand.expansion" \
                or not isinstance(rec.get("files"), dict):
            log(f"warning: skipping {p}: not a kexpand expansion record")
            continue
        out.append(rec)
    return out


def load_series(results, case="minmax"):
    p = Path(results) / f"series-{case}.json"
    return read_json(p) if p.exists() else None


def summary_rows(series, records):
    """Rows in series order, then compiler, then focus-file order."""
    by = {(r["commit"], r["compiler"]): r for r in records}
    rows = []
    for pt in series["points"]:
        for cc in sorted({r["compiler"] for r in records}):
            rec = by.get((pt["commit"], cc))
            if not rec:
                continue
            for f in series.get("files") or list(rec["files"]):
                e = rec["files"].get(f)
                if e is None:
                    continue
                hot = (e.get("hot_lines") or [{}])[0]
                te, tc = e.get("time_E") or {}, e.get("time_c") or {}
                rows.append({
                    "point": pt["name"], "commit": pt["commit"][:12],
                    "compiler": cc, "file": f, "status": e.get("status"),
                    "expanded_bytes": e.get("expanded_bytes", ""),
                    "lines": e.get("lines", ""),
                    "longest_line_bytes": e.get("longest_line_bytes", ""),
                    "code_bytes": e.get("code_bytes", ""),
                    "hot_line": hot.get("at", ""),
                    "hot_line_bytes": hot.get("bytes", ""),
                    "e_time_median_s": te.get("median_s", ""),
                    "e_time_stddev_s": te.get("stddev_s", ""),
                    "c_time_median_s": tc.get("median_s", ""),
                    "c_time_stddev_s": tc.get("stddev_s", ""),
                    "peak_rss_kb": tc.get("peak_rss_kb", ""),
                    "e_runs": te.get("runs", ""), "c_runs": tc.get("runs", ""),
                })
    return rows


def write_summary(results, series, records):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
    w.writeheader()
    rows = summary_rows(series, records)
    w.writerows(rows)
    atomic_write(Path(results) / "summary.csv", buf.getvalue())
    return rows


def load_kind(results, kind, name):
    """Records of another kind: results/<commit12>/<name>.json."""
    out = {}
    for p in sorted(Path(results).glob(f"*/{name}.json")):
        rec = read_json(p)
        if isinstance(rec, dict) and rec.get("kind") == kind:
            out[rec["commit"]] = rec
        elif rec is not None:
            log(f"warning: skipping {p}: not a {kind} record")
    return out


def write_boot_csv(results, index):
    boots = load_kind(results, "kexpand.boot", "boot")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=BOOT_COLUMNS, lineterminator="\n",
                       extrasaction="ignore")
    w.writeheader()
    rows = []
    for pt in index["points"]:
        b = boots.get(pt["commit"])
        if not b:
            continue
        row = dict(b, point=pt["name"], commit=pt["commit"][:12],
                   failures=" ".join(b.get("failures") or []))
        row["class"] = b.get("class") or ""
        rows.append(row)
    w.writerows(rows)
    atomic_write(Path(results) / "boot.csv", buf.getvalue())
    return rows
