"""What make check measures about a series (bench/cmd/check.py drives it):
every C file of the build at the base and at the tip, then, for the files
that grew past the threshold, where and how.

Both sides are Kbuild-driven scans (kbuildscan): the tip's scan dir
starts as a copy of the base's, and Kbuild measures again the objects
whose command or files the series changed (a Makefile or Kconfig change
included); the others keep the base's measurement. FULL_BUILD=1 makes
the tip's dir from nothing. The integration tests check that both give
every file the same bytes."""
import statistics

from kbuild import build, series

from . import cost, headerbuild, headers, kbuildscan

# a file whose growth is under this many bytes is never a regression,
# whatever its ratio (a 10 kB file that grows 20%)
MIN_GROWTH = 16 * 1024
DEFAULT_RATIO = 1.10        # THRESHOLD=10%
# The whole build (every C file's -E bytes summed) regresses when it grows
# by more than TOTAL_THRESHOLD and TOTAL_MIN_GROWTH. 0.5%, calibrated on
# the 6.1 tree with the case's tinyconfig + fragment (1.29 GB over 701
# files): Laight's v4 is +5.0% (defconfig +2.3%), a macro spread over
# minmax.h's includers +2.5% (6.12), while a new C file of the median
# size (2.0 MB) is +0.16%, and one as large as the largest (4.3 MB)
# +0.33%. Over 701 files, 0.5% is 9.2 kB per file: a spread that no
# per-file rule (16 KiB) can see. The whole build, like a file, never
# regresses by less than MIN_GROWTH (a small tree or config).
DEFAULT_TOTAL_RATIO = 1.005  # TOTAL_THRESHOLD=0.5%
TOTAL_MIN_GROWTH = MIN_GROWTH
COUNT_TOP = 3               # -c instruction counts for the worst files
def verdict(bytes_base, bytes_tip, ratio):
    """regression, improvement, changed or same."""
    if bytes_tip == bytes_base:
        return "same"
    if bytes_tip - bytes_base >= MIN_GROWTH and bytes_tip > bytes_base * ratio:
        return "regression"
    if bytes_base - bytes_tip >= MIN_GROWTH and bytes_base > bytes_tip * ratio:
        return "improvement"
    return "changed"


def whole_build(scan_base, scan_tip, rows, total_ratio):
    """The whole build's -E bytes (every file that preprocessed, summed;
    none that failed at either side) at base and tip, its change and verdict (the files' own rule, with
    TOTAL_THRESHOLD and TOTAL_MIN_GROWTH), and how the change is spread:
    how many files grew or shrank, and the largest single file's share."""
    # a file that failed at one side is left out of both (the failure
    # rule judges it; a base file past E_TIME_LIMIT is no growth); a new
    # or removed file counts at its own side
    a = sum(r["bytes_base"] for r in rows
            if r["bytes_base"] is not None and r["verdict"] != "error at tip")
    b = sum(r["bytes_tip"] for r in rows
            if r["bytes_tip"] is not None and r["verdict"] != "error at base")
    grown = [r for r in rows if (r["growth_bytes"] or 0) > 0]
    shrunk = [r for r in rows if (r["growth_bytes"] or 0) < 0]
    if b == a:
        v = "same"
    elif b - a >= TOTAL_MIN_GROWTH and b > a * total_ratio:
        v = "regression"
    elif a - b >= TOTAL_MIN_GROWTH and a > b * total_ratio:
        v = "improvement"
    else:
        v = "changed"
    top = max(grown, key=lambda r: r["growth_bytes"], default=None)
    return {"bytes_base": a, "bytes_tip": b, "growth_bytes": b - a,
            "change": round(b / a - 1, 6) if a else None, "verdict": v,
            "files_base": scan_base.get("n_ok"), "files_tip": scan_tip.get("n_ok"),
            "files_grown": len(grown), "files_shrunk": len(shrunk),
            "grown_bytes": sum(r["growth_bytes"] for r in grown),
            "largest_file": top and {"file": top["file"], "growth_bytes": top["growth_bytes"]}}


def header_changes(scan_base, scan_tip, inc_base, inc_tip, top=10):
    """What the whole build's change is made of, by header (headers.py):
    the headers and include entries whose bytes changed most over the
    build (a new entry marked new), and for the header whose own bytes grew
    most, how that growth is spread over the files (from the scans'
    per-file records): how many files changed, the median change per file,
    and the file where it grew most. None for scans without headers.
    inc_base, inc_tip: functions giving the per-file records (only
    called when a header grew: a defconfig scan's take about a second to
    read)."""
    ha, hb = scan_base.get("headers"), scan_tip.get("headers")
    if not ha or not hb:
        return None
    d = headerbuild.diff(ha, hb, top=top)
    out = {"headers": d["headers"], "edges": d["edges"], "top": None}
    grown = headerbuild.top_growth(ha, hb, n=1)
    inc_base, inc_tip = (inc_base(), inc_tip()) if grown else (None, None)
    # the spread over files: only files at both sides (a new file's
    # bytes are not growth), only where both sides' records are there
    if grown and inc_tip and inc_base:
        h = grown[0]["name"]
        per = {f: headers.own_bytes(rec, h) - headers.own_bytes(inc_base[f], h)
               for f, rec in inc_tip.items() if f in inc_base}
        changed = {f: v for f, v in per.items() if v}
        if changed:
            most = max(sorted(changed), key=lambda f: changed[f])
            out["top"] = {"header": h, "own_growth": grown[0]["delta"]["own"],
                          "files": len(changed),
                          "per_file_median": int(statistics.median(changed.values())),
                          "file_most": most, "file_most_bytes": changed[most]}
    return out


def leads(whole, regs):
    """Which finding a report leads with: 'file' when a file regressed and
    the worst file alone made at least half of the build's growth (one
    blown-up statement, as Laight's v4 in setup.c), 'whole build' when the
    whole-build rule fired and the growth is spread, else None."""
    if regs and (whole["verdict"] != "regression" or
                 (regs[0]["growth_bytes"] or 0) * 2 >= whole["growth_bytes"]):
        return "file"
    return "whole build" if whole["verdict"] == "regression" else None


def compare(scan_base, scan_tip, ratio):
    """Rows for every C file of the base or tip build, worst growth first."""
    rows = []
    fa, fb = scan_base["files"], scan_tip["files"]
    for f in sorted(set(fa) | set(fb)):
        a, b = fa.get(f), fb.get(f)
        ok_a, ok_b = bool(a and a["status"] == "ok"), bool(b and b["status"] == "ok")
        row = {"file": f, "bytes_base": a["bytes"] if ok_a else None,
               "bytes_tip": b["bytes"] if ok_b else None,
               "longest_line_base": a["longest_line_bytes"] if ok_a else None,
               "longest_line_tip": b["longest_line_bytes"] if ok_b else None,
               "hot_tip": (b.get("hot") or {}).get("at") if ok_b else None,
               "hot_lines_base": a.get("hot_lines") or [] if ok_a else [],
               "hot_lines_tip": b.get("hot_lines") or [] if ok_b else []}
        if ok_a and ok_b:
            row["growth_bytes"] = b["bytes"] - a["bytes"]
            row["change"] = round(b["bytes"] / a["bytes"] - 1, 6) if a["bytes"] else None
            row["verdict"] = verdict(a["bytes"], b["bytes"], ratio)
        else:
            row["growth_bytes"], row["change"] = None, None
            row["verdict"] = ("new" if not a else "gone" if not b else
                              "error at base" if not ok_a else "error at tip")
            if row["verdict"] == "error at tip":     # a regression (check.py)
                row["reason_tip"] = b.get("reason") or "error"
                row["error_tip"] = first_error_line(b.get("error"))
        rows.append(row)
    rows.sort(key=lambda r: (-(r["growth_bytes"] or 0), r["file"]))
    return rows


def first_error_line(text):
    """The line of a failed -E that says what went wrong: the compiler's
    first error, else the first line."""
    lines = (text or "").splitlines()
    for line in lines:
        if "error:" in line or "fatal" in line:
            return line.strip()[:300]
    return lines[0].strip()[:300] if lines else ""


class TipDir:
    """Where the tip and each commit of the series are measured: the tip's
    scan dir (kbuildscan), a copy of the base's made at the tip by Kbuild,
    or (fresh, FULL_BUILD=1) made from nothing."""

    def __init__(self, req, tree, base, tip, cc, config):
        self.req, self.tree, self.cc, self.config = req, tree, cc, config
        self.tip = tip
        self.base_dir = build.scan_dir(tree, base, cc)
        self.dir = build.scan_dir(tree, tip, cc)

    def scan(self, fresh=False):
        """The tip's scan (the tree checked out at the tip)."""
        series.checkout(self.tree, self.tip)
        return kbuildscan.scan(self.tree, self.tip, self.cc, self.config, self.req.jobs,
                               self.req.progress, fresh=fresh)

    def ready_at(self, commit):
        """Check out `commit` and make the dir's generated headers its own."""
        series.checkout(self.tree, commit)
        return kbuildscan.make_at(self.tree, commit, self.cc, self.config, self.req.jobs,
                                  ["prepare"], sdir=self.dir)[1]

    def measure(self, commit, files):
        """{file: scan result} of `files` at `commit` (Kbuild's objects)."""
        series.checkout(self.tree, commit)
        return kbuildscan.measure(self.tree, self.dir, commit, self.cc, self.config,
                                  self.req.jobs, files)


def per_patch(req, work, commits):
    """[{file: [bytes at commit 1, ..., N-1]}] (the tip's are the scan's),
    one per (tip dir, files) of `work`: the series' commits visited from
    the last to the first, each once, Kbuild making the files' objects in
    every tip dir there."""
    out = [{f: [None] * (len(commits) - 1) for f in files} for _, files in work]
    for i in range(len(commits) - 2, -1, -1):
        c = commits[i]
        req.progress.say(f"  patch {i + 1}/{len(commits)} ({c[:12]}): "
                         f"{sum(len(f) for _, f in work)} file(s)")
        for (tipdir, files), got in zip(work, out):
            res = tipdir.measure(c, files)
            for f in files:
                got[f][i] = res[f].get("bytes") if res[f]["status"] == "ok" else None
    return out


def grew_most(base_bytes, steps, tip_bytes, patches):
    """The patch with the largest ratio of growth (1-based), and every
    step as (n, bytes, ratio to the step before)."""
    seq = [base_bytes] + list(steps) + [tip_bytes]
    out, best = [], None
    for n in range(1, len(seq)):
        a, b = seq[n - 1], seq[n]
        r = round(b / a, 4) if a and b is not None else None
        out.append({"patch": n, "subject": patches[n - 1], "bytes": b, "ratio": r})
        if r is not None and r > 1 and (best is None or r > best["ratio"]):
            best = out[-1]
    return best, out


def count_c(req, cache, at, bdir, f, view=None):
    """The instruction count of f's -c at one side (`at`: cache.At; cached;
    view: cost.count_one's)."""
    what, v = cost.count_plan(req, cache, at, f, "time_c", 0)
    if what == "have":
        return v
    return cost.count_one(cache, v, bdir, f, at.cc, "time_c", view=view)


def count_cached(req, cache, at, f):
    """Whether f's -c count at one side needs no count (cached, or not to
    be counted)."""
    return cost.count_plan(req, cache, at, f, "time_c", 0)[0] == "have"

