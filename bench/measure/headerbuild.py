"""Bytes by header over a build (#31): the sums of the per-file records of
headers.py (record()) over every C file of a scan, what changed between
two builds, and the top tables the reports draw. Pure computation."""
from collections import defaultdict

from .headers import EDGE_STATS, RECORD_VERSION, STATS, edge_key, record_edges, record_headers

def aggregate(records):
    """Sums over a build's records -> {"files", "bytes", "unattributed",
    "root_own": own bytes of the main files,
    "headers": {name: {"occurrences", "own", "expanded", "added"}},
    "edges": {"includer:line -> header": {"files_sole", "bytes_sole",
    "files"}}}, JSON-serializable, keys sorted."""
    headers = defaultdict(lambda: dict.fromkeys(STATS, 0))
    edges = defaultdict(lambda: dict.fromkeys(EDGE_STATS, 0))
    agg = {"files": 0, "bytes": 0, "unattributed": 0, "root_own": 0}
    for rec in records:
        if rec.get("v") != RECORD_VERSION:
            raise ValueError(f"header record version {rec.get('v')!r}, "
                             f"expected {RECORD_VERSION}")
        agg["files"] += 1
        agg["bytes"] += rec["bytes"]
        agg["unattributed"] += rec["unattributed"]
        if rec["own"]:
            agg["root_own"] += rec["own"][0]
        for name, (o, e, a) in record_headers(rec).items():
            h = headers[name]
            h["occurrences"] += 1
            h["own"] += o
            h["expanded"] += e
            h["added"] += a
        for u, line, h, s in record_edges(rec):
            e = edges[edge_key(u, line, h)]
            e["files"] += 1
            if s is not None:
                e["files_sole"] += 1
                e["bytes_sole"] += s
    agg["headers"] = {k: headers[k] for k in sorted(headers)}
    agg["edges"] = {k: edges[k] for k in sorted(edges)}
    return agg


def _rows(a, b, fields, by):
    """Changed rows of two {name: stats} maps, largest |change of by| first."""
    rows = []
    for name in set(a) | set(b):
        sa, sb = a.get(name), b.get(name)
        za, zb = sa or dict.fromkeys(fields, 0), sb or dict.fromkeys(fields, 0)
        delta = {f: zb[f] - za[f] for f in fields}
        status = "new" if sa is None else "gone" if sb is None else ""
        if status or any(delta.values()):
            rows.append({"name": name, "status": status, "a": sa, "b": sb,
                         "delta": delta})
    rows.sort(key=lambda r: (-abs(r["delta"][by]), r["name"]))
    return rows


def _pairs(edges):
    """Include entries by includer and header, over the lines they are on:
    {"includer -> header": stats summed}, {"includer -> header": [lines]}."""
    stats, lines = {}, {}
    for key, st in edges.items():
        src, header = key.rsplit(" -> ", 1)
        includer, line = src.rsplit(":", 1)
        k = f"{includer} -> {header}"
        acc = stats.setdefault(k, dict.fromkeys(EDGE_STATS, 0))
        for f in EDGE_STATS:
            acc[f] += st[f]
        lines.setdefault(k, []).append(int(line))
    return stats, {k: sorted(v) for k, v in lines.items()}


def _at(lines):
    return ",".join(map(str, lines))


def edge_rows(edges_a, edges_b):
    """Changed include entries, matched by includer and header whatever
    line they are on (an #include that moved is the same entry), named with
    their lines at B (at A if gone); status "new", "gone", "moved from
    :<line at A>" (as many lines at both), "was at :<lines at A>" (an
    #include of the header added or removed beside it) or ""."""
    (sa, la), (sb, lb) = _pairs(edges_a), _pairs(edges_b)
    rows = _rows(sa, sb, EDGE_STATS, "bytes_sole")
    for r in rows:
        includer, header = r["name"].rsplit(" -> ", 1)
        old, new = la.get(r["name"]), lb.get(r["name"])
        if not r["status"] and old != new:
            r["status"] = f"{'moved from' if len(old) == len(new) else 'was at'} :{_at(old)}"
        r["name"] = f"{includer}:{_at(new or old)} -> {header}"
    return rows


def diff(agg_a, agg_b, top=50):
    """What changed from build A to build B: {"headers": rows, "edges": rows},
    each at most `top` rows, the largest absolute change first (headers: of
    own bytes; edges: of bytes_sole); a row: {"name", "status": "new" (absent
    at A) | "gone" (absent at B) | "" (edges also "moved from :<line>",
    "was at :<lines>"),
    "a": stats or None, "b": stats or None, "delta": {stat: B - A}} (stats
    as in aggregate; absent = zeros)."""
    return {"headers": _rows(agg_a["headers"], agg_b["headers"], STATS,
                             "own")[:top],
            "edges": edge_rows(agg_a["edges"], agg_b["edges"])[:top]}


def top_headers(agg, by="own", n=20):
    """The n headers with the most `by` (own, added, expanded, occurrences):
    [(name, stats)], ties by name."""
    items = sorted(agg["headers"].items(), key=lambda kv: (-kv[1][by], kv[0]))
    return items[:n]


def top_edges(agg, by="bytes_sole", n=20):
    """The n include entries with the most `by` (bytes_sole, files_sole,
    files): [(key, stats)]."""
    items = sorted(agg["edges"].items(), key=lambda kv: (-kv[1][by], kv[0]))
    return items[:n]


def top_growth(agg_a, agg_b, by="own", n=20):
    """The n headers whose `by` grew most from A to B (positive changes
    only): diff rows."""
    rows = _rows(agg_a["headers"], agg_b["headers"], STATS, by)
    rows = [r for r in rows if r["delta"][by] > 0]
    rows.sort(key=lambda r: (-r["delta"][by], r["name"]))
    return rows[:n]
