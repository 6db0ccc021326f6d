"""The results/ directory, the contract between measuring (bench/) and
reporting (report.py): one JSON record per (commit, compiler) and kind,
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

# report.py reads results/ through this module only; these helpers are
# its share of kbuild.util (it imports nothing from kernel-build/ itself).
from kbuild import build
from kbuild.util import (KexpandError, atomic_write, atomic_write_json,  # noqa: F401
                         log, printable, read_json)

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


def stamp():
    """Where and when a record was made."""
    return {"host": platform.node(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds")}


def header(kind, case, point, at):
    """The fields every record starts with, whatever its kind; `at`: what
    it measured (a cache.At: commit, compiler and its version, config)."""
    return dict({"schema": SCHEMA, "kind": kind, "case": case, "point": point,
                 "commit": at.commit, "compiler": at.cc,
                 "compiler_version": at.ccver, "config_hash": at.chash,
                 "cpu": cpu_model()}, **stamp())


TIMING_FIELDS = {"median_s": float, "stddev_s": float, "runs": int}


def timing_ok(t):
    """A time_E / time_c entry: the wall-time summary, and per-run samples
    (`samples`; records before interleaving: hyperfine's export `hyperfine`,
    one object for all runs). `hyperfine` of records timed by hyperfine run
    by run is a list, one exported object per run."""
    if not isinstance(t, dict) or not all(
            isinstance(t.get(k), (int, float)) for k in TIMING_FIELDS):
        return False
    hf = t.get("hyperfine")
    s = t.get("samples") or (hf if isinstance(hf, dict) else None)
    return isinstance(s, dict) and isinstance(s.get("times"), list) and \
        (hf is None or isinstance(hf, dict) or
         (isinstance(hf, list) and all(isinstance(r, dict) for r in hf)))


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


HASH_HEX = 12          # of a name that had to change: 48 bits, no collisions in practice
NAME_MAX = 96          # a directory name component, well under the 255 bytes of ext4


def _h(text):
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_HEX]


def safe_name(ref):
    """A directory name for a ref. Characters other than [A-Za-z0-9-_.+]
    become '_', and when that changed anything (or the name is long) a
    hash of the ref is appended (also to a plain name that already ends
    like such a hash), so two different refs never share a directory and
    no name is too long for the file system."""
    s = "".join(c if c.isalnum() and c.isascii() or c in "-_.+" else "_"
                for c in ref)
    if s != ref or s.startswith(".") or len(s) > NAME_MAX or \
            re.search(r"-[0-9a-f]{6}$|-[0-9a-f]{12}$", s):
        s = f"{s.lstrip('.')[:NAME_MAX - HASH_HEX - 1]}-{_h(ref)}"
    return s


def config_tag(base, kconfig):
    """'' for the default config (tinyconfig under the case's fragment);
    otherwise a suffix that keeps scans of another config apart, in the
    scan records' names and the pair directories: '@defconfig',
    '@kconfig-<the file's config id>' (build.config_id)."""
    if kconfig:
        return "@kconfig-" + build.config_id(Path(kconfig).read_bytes())
    return "" if base in ("", "tinyconfig") else f"@{base}"


def identity(req, files=True):
    """Everything that decides what a report holds besides its refs: the
    tree (KERNEL=), the config, the compilers and the files. Kept in
    pair.json; a report directory belongs to one identity."""
    return {"kernel": str(Path(req.kernel).expanduser().resolve()) if req.kernel else None,
            "config": req.config_base,
            # (the name reports had before config_id: their identity still matches)
            "kconfig_sha256": build.config_id(Path(req.kconfig).read_bytes())
            if req.kconfig else None,
            "compilers": list(req.compilers) if req.compilers_given else None,
            "files": list(req.files) if files and req.files else None}


def identity_tag(req, files=True, compilers=True):
    """The directory-name suffix of a report's identity: '' for the
    default (the packaged tree, tinyconfig, both compilers, the focus
    files); else readable parts, and a hash of the whole identity where
    the parts do not name it (a tree's path, a list of files)."""
    ident = identity(req, files)
    tag = config_tag(req.config_base, req.kconfig)
    if ident["kernel"]:
        tag += f"@{safe_name(Path(ident['kernel']).name)[:40]}-{_h(ident['kernel'])[:8]}"
    if compilers and ident["compilers"] and len(ident["compilers"]) == 1:
        tag += f"@{ident['compilers'][0]}"
    if ident["files"]:
        tag += f"@files-{_h(' '.join(ident['files']))[:8]}"
    return tag


def pair_dir(results, kind, a, b, tag=""):
    """results/<kind>/<A>..<B><tag>: where compare, scan and bisect write
    (tag: identity_tag)."""
    return Path(results) / kind / f"{safe_name(a)}..{safe_name(b)}{tag}"


def report_dir(req, kind, a, b):
    """Where a compare, scan or bisect of A and B writes: its refs and its
    identity (identity_tag: tree, config, compilers, files). The measuring
    command and report.py both name it from the same Request."""
    return pair_dir(req.results, kind, a, b, identity_tag(
        req, files=kind == "compare", compilers=kind != "bisect"))


# the file of each report kind that carries its identity
REPORT_FILES = ("pair.json", "check.json", "track.json")


def claim_dir(outdir, ident):
    """Refuse to write a report into a directory that holds a report of
    another identity, whatever its kind (exit 2, naming it)."""
    for name in REPORT_FILES:
        p = Path(outdir) / name
        old = read_json(p) if p.exists() else None
        if isinstance(old, dict) and "identity" in old and old["identity"] != ident:
            raise KexpandError(
                f"{outdir} holds the report of another run ({name}: {old['identity']}; "
                f"this run: {ident}); move it away, give NAME= another name or "
                "KEXPAND_RESULTS= another directory")


def write_report(path, text):
    """A report, page, plot or CSV: subjects of mails and commits in it
    have their control characters escaped (util.printable)."""
    atomic_write(path, printable(text))


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
