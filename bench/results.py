"""The results/ directory, the contract between measuring (bench/) and
reporting (compare.py): one JSON record per (commit, compiler) and kind,
the series index, and the flat summary.csv. Every record is checked
against its documented shape when read; a bad one is reported once and
skipped, never copied forward. Field-by-field documentation: README.md,
"Results"."""
import csv
import datetime
import hashlib
import io
import platform
import re
from pathlib import Path

# compare.py reads results/ through this module only; these helpers are
# its share of kbuild.util (it imports nothing from kernel-build/ itself).
from kbuild.util import (KexpandError, atomic_write, atomic_write_json,  # noqa: F401
                         log, main_wrapper, read_json)

SCHEMA = 1
OTHER_KINDS = ("kexpand.boot", "kexpand.conformance", "kexpand.scan")
BOOT_COLUMNS = ["point", "commit", "status", "boot_s", "tests_passed",
                "tests_failed", "tests_skipped", "class", "failures",
                "kernel_build_s", "kernel_build_from"]
SUMMARY_COLUMNS = ["point", "commit", "compiler", "file", "status",
                   "expanded_bytes", "lines", "longest_line_bytes",
                   "code_bytes", "hot_line", "hot_line_bytes",
                   "e_time_median_s", "e_time_stddev_s", "c_time_median_s",
                   "c_time_stddev_s", "peak_rss_kb", "e_runs", "c_runs",
                   "e_instructions", "c_instructions", "e_cpu_median_s",
                   "c_cpu_median_s", "instructions_source"]


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def header(kind, case, point, commit, compiler, compiler_version, config_hash):
    """The fields every record starts with, whatever its kind."""
    return {"schema": SCHEMA, "kind": kind, "case": case, "point": point,
            "commit": commit, "compiler": compiler,
            "compiler_version": compiler_version, "config_hash": config_hash,
            "cpu": cpu_model(), "host": platform.node(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds")}


TIMING_FIELDS = {"median_s": float, "stddev_s": float, "runs": int}


def timing_ok(t):
    return isinstance(t, dict) and all(
        isinstance(t.get(k), (int, float)) for k in TIMING_FIELDS) and \
        isinstance((t.get("samples") or t.get("hyperfine") or {}).get("times"), list)


def macros_ok(m):
    """A macros entry: a status, and when measured its list of macros."""
    return isinstance(m, dict) and isinstance(m.get("status"), str) and (
        m["status"] == "error" or isinstance(m.get("macros"), list))


def entry_ok(e):
    """A file entry of an expansion record is well formed: a failure with
    its status, or "ok" with integer bytes and, if timed, full timings."""
    if not isinstance(e, dict) or not isinstance(e.get("status"), str):
        return False
    if e["status"] != "ok":
        return True
    if not all(isinstance(e.get(k), int) for k in ("expanded_bytes", "lines",
                                                   "longest_line_bytes")):
        return False
    if not isinstance(e.get("hot_lines", []), list):
        return False
    return all(timing_ok(e[k]) for k in ("time_E", "time_c") if e.get(k) is not None) \
        and (e.get("macros") is None or macros_ok(e["macros"]))


def record_ok(rec):
    return isinstance(rec, dict) and rec.get("kind") == "kexpand.expansion" \
        and all(isinstance(rec.get(k), str) for k in ("commit", "compiler")) \
        and isinstance(rec.get("files"), dict) \
        and all(entry_ok(e) for e in rec["files"].values())


def safe_name(ref):
    """A directory name for a ref. Characters other than [A-Za-z0-9-_.+]
    become '_', and when that changed anything a short hash of the ref is
    appended (also to a plain name that already ends like such a hash),
    so two different refs never share a directory."""
    s = "".join(c if c.isalnum() and c.isascii() or c in "-_.+" else "_"
                for c in ref)
    if s != ref or s.startswith(".") or re.search(r"-[0-9a-f]{6}$", s):
        s = f"{s.lstrip('.')}-{hashlib.sha256(ref.encode()).hexdigest()[:6]}"
    return s


def config_tag(base, kconfig):
    """'' for the default config (tinyconfig under the case's fragment);
    otherwise a suffix that keeps scans of another config apart, in the
    scan records' names and the pair directories: '@defconfig',
    '@kconfig-<first 8 of the file's sha256>'."""
    if kconfig:
        return "@kconfig-" + hashlib.sha256(Path(kconfig).read_bytes()).hexdigest()[:8]
    return "" if base in ("", "tinyconfig") else f"@{base}"


def pair_dir(results, kind, a, b):
    """results/<kind>/<A>..<B>: where compare, scan and bisect write."""
    return Path(results) / kind / f"{safe_name(a)}..{safe_name(b)}"


def record_path(results, commit, compiler):
    return Path(results) / commit[:12] / f"{compiler}.json"


def write_record(results, rec):
    atomic_write_json(record_path(results, rec["commit"], rec["compiler"]), rec)


def merge_record(results, rec):
    """A run that measured some files keeps the other files of an earlier
    record of the same (commit, compiler, compiler version, config)."""
    p = record_path(results, rec["commit"], rec["compiler"])
    old = read_json(p) if p.exists() else None
    if record_ok(old) and all(
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
        if not record_ok(rec):
            log(f"warning: skipping {p}: not a well-formed kexpand expansion "
                "record (see README, Results)")
            continue
        out.append(rec)
    return out


def load_series(results, case):
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
                    "e_instructions": none_empty(te.get("instructions")),
                    "c_instructions": none_empty(tc.get("instructions")),
                    "e_cpu_median_s": te.get("cpu_median_s", ""),
                    "c_cpu_median_s": tc.get("cpu_median_s", ""),
                    "instructions_source": tc.get("instructions_source")
                    or te.get("instructions_source") or "",
                })
    return rows


def csv_text(columns, rows):
    """CSV with `columns` (other keys of the rows are ignored)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n",
                       extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def none_empty(v):
    return "" if v is None else v


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
        if isinstance(rec, dict) and rec.get("kind") == kind and \
                isinstance(rec.get("commit"), str):
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
