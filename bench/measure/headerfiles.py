"""What a scan report's headers page draws (#31), beyond the build's
aggregate: which headers it shows (`selection`: the top N by own bytes at
B and the top N by change of own bytes from A to B), and for each, the
files that include it with its own bytes in each (`files_of`), from the
per-file header records the cache keeps beside each scan
(scanfiles.file_headers). make scan writes them as headers-files.json in
the report dir (`extract`), so that report.py, which reads results/ only,
draws headers.html (plots/headerpage.py) from that file and the scan
records' aggregates."""
from . import headerbuild, scanfiles
from .headers import record_headers

KIND = "kexpand.scan-headers"
N_HEADERS = 30          # per chart: by own bytes at B, by change A -> B
N_FILES = 20            # files listed per header
N_EDGES = 10            # include entries listed per header


def selection(agg_a, agg_b, n=N_HEADERS):
    """The page's two charts: ([(name, stats at B)] the top n by own bytes
    at B, [diff rows] the top n by absolute change of own bytes from A to
    B, nonzero changes only; [] without A's aggregate)."""
    by_own = headerbuild.top_headers(agg_b, "own", n) if agg_b else []
    by_change = [r for r in headerbuild.diff(agg_a, agg_b, top=n)["headers"]
                 if r["delta"]["own"]] if agg_a and agg_b else []
    return by_own, by_change


def names(agg_a, agg_b, n=N_HEADERS):
    """Every header the page draws, each once: by own bytes, then by change."""
    by_own, by_change = selection(agg_a, agg_b, n)
    return list(dict.fromkeys([name for name, _ in by_own] + [r["name"] for r in by_change]))


def _owns(recs, want):
    """{header: {file: own bytes}} of the wanted headers over a build's
    per-file records."""
    out = {h: {} for h in want}
    for f, rec in recs.items():
        for h, (own, _e, _a) in record_headers(rec).items():
            if h in out:
                out[h][f] = own
    return out


def files_of(recs_a, recs_b, wanted, n=N_FILES):
    """{header: {"by": "b" (or "a" when no file of B has it), "files": how
    many files of that build include it, "top": [{"file", "a", "b"}] the n
    whose own bytes of it are largest there, "rest": files beyond them,
    "rest_bytes": their own bytes of it}}. A row's "a" and "b": the
    header's own bytes in that file at A and at B, 0 where the file is in
    that build without the header, None where the file is not in it."""
    at_a, at_b = _owns(recs_a, wanted), _owns(recs_b, wanted)
    out = {}
    for h in wanted:
        by = "b" if at_b[h] or not at_a[h] else "a"
        main = at_b[h] if by == "b" else at_a[h]
        ranked = sorted(main.items(), key=lambda kv: (-kv[1], kv[0]))
        top = [{"file": f,
                "a": at_a[h].get(f, 0 if f in recs_a else None),
                "b": at_b[h].get(f, 0 if f in recs_b else None)} for f, _ in ranked[:n]]
        out[h] = {"by": by, "files": len(ranked), "top": top,
                  "rest": max(len(ranked) - n, 0),
                  "rest_bytes": sum(v for _, v in ranked[n:])}
    return out


def extract(cache, key_a, key_b, agg_a, agg_b, commits):
    """headers-files.json of a scan pair (README, "make scan"): the cached
    scans' per-file header records reduced to the headers the page draws.
    `records`: whether each side's per-file records were in the cache (a
    scan cached before they were kept has none: the page says so)."""
    recs_a = scanfiles.file_headers(cache, key_a) if key_a else {}
    recs_b = scanfiles.file_headers(cache, key_b)
    wanted = names(agg_a, agg_b)
    return {"schema": 1, "kind": KIND, "a": commits[0], "b": commits[1],
            "records": {"a": bool(recs_a), "b": bool(recs_b)},
            "n_headers": N_HEADERS, "n_files": N_FILES,
            "headers": files_of(recs_a, recs_b, wanted) if recs_b or recs_a else {}}


def shape_ok(x):
    """Whether x is a headers-files.json the page can read."""
    return isinstance(x, dict) and x.get("kind") == KIND and \
        isinstance(x.get("records"), dict) and isinstance(x.get("headers"), dict) and \
        all(isinstance(v, dict) and isinstance(v.get("top"), list) and
            all(isinstance(r, dict) and isinstance(r.get("file"), str) for r in v["top"])
            for v in x["headers"].values())
