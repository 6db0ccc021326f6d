"""bench/measure/headers.py: bytes by header on hand-made include graphs
with known answers, and on seeded random graphs against brute force (the
definitions recomputed by plain reachability: added = what the root loses
when the header's in-entries are dropped; expanded = what the header
reaches; an entry's bytes = what the root loses when that entry is dropped).
Inputs are dicts of the shape `kx-analyze -H` prints (hdr-spec.md)."""
import json
import random

import pytest

from bench.measure import headerbuild as B
from bench.measure import headers as H


def mk(files, includes=(), unattributed=0):
    """An -H analysis: files [(name, own)], includes [(includer, line,
    header)] by name (the first file of that name)."""
    at = {}
    for i, (name, _) in enumerate(files):
        at.setdefault(name, i)
    return {"bytes": sum(b for _, b in files) + unattributed,
            "unattributed_bytes": unattributed,
            "headers": [[n, b] for n, b in files],
            "includes": [[at[u], line, at[h]] for u, line, h in includes]}


def edges(st):
    return {(e["includer"], e["line"], e["header"]): (e["sole"], e["bytes"])
            for e in st["edges"]}


# ------------------------------------------------------------ hand-made

def test_normalize():
    assert H.normalize("../include/linux/kernel.h") == "include/linux/kernel.h"
    assert H.normalize("./include/generated/autoconf.h") == \
        "include/generated/autoconf.h"
    assert H.normalize("/usr/include/stdc-predef.h") == \
        "/usr/include/stdc-predef.h"
    assert H.normalize("<built-in>") == "<built-in>"
    assert H.normalize("../../x.h") == "../x.h"      # one level only


def test_chain():
    # a.c -> b.h -> c.h -> d.h: each header dominates the rest of the chain
    st = H.tu_stats(mk([("a.c", 1), ("b.h", 10), ("c.h", 100), ("d.h", 1000)],
                       [("a.c", 3, "b.h"), ("b.h", 5, "c.h"), ("c.h", 7, "d.h")],
                       unattributed=4))
    assert st["root"] == "a.c" and st["root_own"] == 1
    assert st["bytes"] == 1115 and st["unattributed"] == 4
    assert st["reached"] == 1111
    assert st["headers"] == {
        "b.h": {"own": 10, "expanded": 1110, "added": 1110},
        "c.h": {"own": 100, "expanded": 1100, "added": 1100},
        "d.h": {"own": 1000, "expanded": 1000, "added": 1000}}
    assert edges(st) == {("a.c", 3, "b.h"): (True, 1110),
                         ("b.h", 5, "c.h"): (True, 1100),
                         ("c.h", 7, "d.h"): (True, 1000)}


def test_diamond():
    # a.c -> b.h -> d.h, a.c -> c.h -> d.h: d.h is dominated by a.c only
    st = H.tu_stats(mk([("a.c", 1), ("b.h", 10), ("c.h", 100), ("d.h", 1000)],
                       [("a.c", 1, "b.h"), ("a.c", 2, "c.h"),
                        ("b.h", 1, "d.h"), ("c.h", 1, "d.h")]))
    assert st["headers"] == {
        "b.h": {"own": 10, "expanded": 1010, "added": 10},
        "c.h": {"own": 100, "expanded": 1100, "added": 100},
        "d.h": {"own": 1000, "expanded": 1000, "added": 1000}}
    assert edges(st) == {("a.c", 1, "b.h"): (True, 10),
                         ("a.c", 2, "c.h"): (True, 100),
                         ("b.h", 1, "d.h"): (False, 0),
                         ("c.h", 1, "d.h"): (False, 0)}


def test_twice_from_one_includer():
    # b.h included on lines 4 and 9 of a.c: two entries, neither sole
    st = H.tu_stats(mk([("a.c", 1), ("b.h", 10), ("c.h", 100)],
                       [("a.c", 4, "b.h"), ("a.c", 9, "b.h"),
                        ("b.h", 2, "c.h")]))
    assert edges(st) == {("a.c", 4, "b.h"): (False, 0),
                         ("a.c", 9, "b.h"): (False, 0),
                         ("b.h", 2, "c.h"): (True, 100)}
    # the header itself is still dominated by the root only, and added
    assert st["headers"]["b.h"] == {"own": 10, "expanded": 110, "added": 110}
    agg = B.aggregate([H.record(mk([("a.c", 1), ("b.h", 10)],
                                   [("a.c", 4, "b.h"), ("a.c", 9, "b.h")]))])
    assert agg["edges"] == {
        "a.c:4 -> b.h": {"files_sole": 0, "bytes_sole": 0, "files": 1},
        "a.c:9 -> b.h": {"files_sole": 0, "bytes_sole": 0, "files": 1}}


def test_pseudo_files_merge_into_root():
    # gcc: a.c, <built-in>, <command-line> -include k.h and stdc-predef.h;
    # clang: the main file enters <built-in> (flag 1), which is no include
    gcc = mk([("../a.c", 5), ("<built-in>", 7), ("<command-line>", 11),
              ("/usr/include/stdc-predef.h", 100), ("../k.h", 1000),
              ("../x.h", 10000)],
             [("<command-line>", 0, "/usr/include/stdc-predef.h"),
              ("<command-line>", 0, "../k.h"), ("../a.c", 0, "../x.h"),
              ("<command-line>", 0, "../x.h")])
    st = H.tu_stats(gcc)
    assert st["root"] == "a.c" and st["root_own"] == 23
    assert set(st["headers"]) == {"/usr/include/stdc-predef.h", "k.h", "x.h"}
    assert st["headers"]["k.h"] == {"own": 1000, "expanded": 1000,
                                    "added": 1000}
    assert edges(st) == {
        ("<command-line>", 0, "/usr/include/stdc-predef.h"): (True, 100),
        ("<command-line>", 0, "k.h"): (True, 1000),
        ("a.c", 0, "x.h"): (False, 0), ("<command-line>", 0, "x.h"): (False, 0)}
    clang = mk([("a.c", 5), ("<built-in>", 7), ("<command line>", 11),
                ("k.h", 1000)],
               [("a.c", 0, "<built-in>"), ("<built-in>", 1, "<command line>"),
                ("<built-in>", 1, "k.h")])
    st = H.tu_stats(clang)
    assert st["root_own"] == 23 and st["reached"] == 1023
    assert edges(st) == {("<built-in>", 1, "k.h"): (True, 1000)}
    rec = H.record(clang)
    assert H.record_edges(rec) == [("<built-in>", 1, "k.h", 1000)]
    assert H.record_headers(rec) == {"k.h": (1000, 1000, 1000)}
    agg = B.aggregate([H.record(gcc), rec])
    assert agg["edges"]["<command-line>:0 -> k.h"]["files_sole"] == 1
    assert agg["headers"]["k.h"]["occurrences"] == 2
    assert agg["root_own"] == 46


def test_unreachable_node():
    # u.h named (a #line) but included by nothing; it includes v.h, which
    # a.c also includes
    st = H.tu_stats(mk([("a.c", 1), ("u.h", 10), ("v.h", 100), ("w.h", 1000)],
                       [("u.h", 1, "v.h"), ("a.c", 1, "v.h"),
                        ("u.h", 2, "w.h")]))
    assert st["headers"] == {
        "u.h": {"own": 10, "expanded": 1110, "added": 0},
        "v.h": {"own": 100, "expanded": 100, "added": 100},
        "w.h": {"own": 1000, "expanded": 1000, "added": 0}}
    assert st["reached"] == 101
    assert edges(st) == {("u.h", 1, "v.h"): (False, 0),
                         ("a.c", 1, "v.h"): (True, 100),
                         ("u.h", 2, "w.h"): (False, 0)}


def test_cycle_through_header():
    # trace/events/x.h -> define_trace.h -> trace/events/x.h again: the
    # C file's entry is still the only way in, so it is sole
    st = H.tu_stats(mk([("a.c", 1), ("x.h", 10), ("dt.h", 100)],
                       [("a.c", 5, "x.h"), ("x.h", 9, "dt.h"),
                        ("dt.h", 3, "x.h")]))
    assert st["headers"]["x.h"] == {"own": 10, "expanded": 110, "added": 110}
    assert st["headers"]["dt.h"] == {"own": 100, "expanded": 110, "added": 100}
    assert edges(st) == {("a.c", 5, "x.h"): (True, 110),
                         ("x.h", 9, "dt.h"): (True, 100),
                         ("dt.h", 3, "x.h"): (False, 0)}


def test_same_name_after_normalize_is_one_node():
    st = H.tu_stats(mk([("a.c", 1), ("../x.h", 10), ("x.h", 5)],
                       [("a.c", 1, "../x.h"), ("a.c", 2, "x.h")]))
    assert st["headers"] == {"x.h": {"own": 15, "expanded": 15, "added": 15}}
    assert not any(s for s, _ in edges(st).values())


def test_empty_and_without_h():
    st = H.tu_stats({"bytes": 3, "unattributed_bytes": 3, "headers": [],
                     "includes": []})
    assert st["root"] is None and st["headers"] == {}
    rec = H.record({"bytes": 3, "unattributed_bytes": 3, "headers": [],
                    "includes": []})
    assert H.record_root(rec) is None
    assert B.aggregate([rec])["bytes"] == 3
    with pytest.raises(ValueError):
        H.tu_stats({"bytes": 3})


def test_own_bytes_of_header_in_file():
    rec = H.record(mk([("a.c", 1), ("b.h", 10)], [("a.c", 1, "b.h")]))
    assert H.own_bytes(rec, "b.h") == 10
    assert H.own_bytes(rec, "a.c") == 0       # the root is no header
    assert H.own_bytes(rec, "zz.h") == 0


# ------------------------------------------------------------ brute force

def random_analysis(rng, n_max=25):
    """A random graph: mostly forward entries (so most nodes are reached),
    some back entries and self loops (cycles), repeated (includer, header)
    on other lines, a few nodes nobody includes; own bytes often 0."""
    n = rng.randint(1, n_max)
    files = [("r.c" if v == 0 else f"h{v}.h",
              0 if rng.random() < 0.2 else rng.randint(1, 5000))
             for v in range(n)]
    entries = set()
    for h in range(1, n):
        if rng.random() < 0.1:
            continue                                  # nobody includes h
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            entries.add((rng.randrange(h), rng.randint(0, 40), h))
    for _ in range(rng.randint(0, n // 3)):           # back entries, loops
        u = rng.randrange(n)
        entries.add((u, rng.randint(0, 40), rng.randint(1, u) if u else 0))
    for _ in range(rng.randint(0, 2)):                # same pair, other line
        if entries:
            u, line, h = rng.choice(sorted(entries))
            entries.add((u, line + 1, h))
    entries = sorted(entries)
    rng.shuffle(entries)
    unattributed = rng.choice((0, 0, rng.randint(1, 100)))
    return {"bytes": sum(b for _, b in files) + unattributed,
            "unattributed_bytes": unattributed,
            "headers": [list(f) for f in files],
            "includes": [list(e) for e in entries]}


def reach(start, entries, skip=lambda e: False):
    seen, todo = {start}, [start]
    while todo:
        v = todo.pop()
        for e in entries:
            if e[0] == v and e[2] not in seen and not skip(e):
                seen.add(e[2])
                todo.append(e[2])
    return seen


def brute(analysis):
    """tu_stats' numbers by their definitions, on the raw indices."""
    own = [b for _, b in analysis["headers"]]
    ents = [tuple(e) for e in analysis["includes"]]
    names = [n for n, _ in analysis["headers"]]
    full = reach(0, ents)
    base = sum(own[v] for v in full)
    hdr = {}
    for h in range(1, len(own)):
        kept = reach(0, ents, lambda e: e[2] == h)
        hdr[names[h]] = {"own": own[h],
                         "expanded": sum(own[v] for v in reach(h, ents)),
                         "added": base - sum(own[v] for v in kept)}
    edg = {}
    for x in ents:
        kept = reach(0, ents, lambda e: e == x)
        lost = x[2] in full and x[2] not in kept
        edg[(names[x[0]], x[1], names[x[2]])] = (
            lost, base - sum(own[v] for v in kept))
    return base, hdr, edg


def test_brute_force_random_graphs():
    rng = random.Random(31)
    cycles = dags = 0
    for case in range(600):
        an = random_analysis(rng)
        st = H.tu_stats(an)
        base, hdr, edg = brute(an)
        msg = f"case {case}: {json.dumps(an)}"
        assert st["reached"] == base, msg
        assert st["headers"] == hdr, msg
        assert edges(st) == edg, msg
        assert st["root_own"] + sum(h["own"] for h in st["headers"].values()) \
            == an["bytes"] - an["unattributed_bytes"], msg
        rec = H.record(an)
        assert sum(rec["own"]) == rec["bytes"] - rec["unattributed"], msg
        # without cycles and unreachable files, sole is "the only entry"
        ents = [tuple(e) for e in an["includes"]]
        acyclic = all(u < h for u, _, h in ents)
        if acyclic and len(reach(0, ents)) == len(an["headers"]):
            dags += 1
            for u, line, h in ents:
                only = sum(1 for e in ents if e[2] == h) == 1
                assert edges(st)[(f"h{u}.h" if u else "r.c", line,
                                  f"h{h}.h")][0] == only, msg
        elif not acyclic:
            cycles += 1
    assert dags > 50 and cycles > 50         # both kinds were tried


def test_pseudo_merge_random():
    """Pseudo files anywhere in the list are the root: the same stats as the
    graph with their bytes and entries given to the root."""
    rng = random.Random(7)
    compared = 0
    for case in range(200):
        an = random_analysis(rng, 15)
        n = len(an["headers"])
        if n < 3:
            continue
        ps = rng.sample(range(1, n), rng.randint(1, min(3, n - 1)))
        with_ps = json.loads(json.dumps(an))
        for i, v in enumerate(ps):
            with_ps["headers"][v][0] = ("<built-in>", "<command-line>",
                                        "<command line>")[i]
        merged = json.loads(json.dumps(an))
        for v in ps:
            merged["headers"][0][1] += merged["headers"][v][1]
            merged["headers"][v][1] = 0
        keep, seen, collide = [], {}, False
        for u, line, h in merged["includes"]:
            u2, h2 = (0 if u in ps else u), (0 if h in ps else h)
            if h in ps:
                continue
            if (u2, line, h2) in seen:
                # "<command-line>:L -> x" and "r.c:L -> x" are two entries
                # (tested by hand), which the reference cannot express
                collide |= seen[(u2, line, h2)] != u
                continue
            seen[(u2, line, h2)] = u
            keep.append([u2, line, h2])
        merged["includes"] = keep
        st, ref = H.tu_stats(with_ps), H.tu_stats(merged)
        msg = f"case {case}: {json.dumps(with_ps)}"
        assert st["root_own"] == ref["root_own"] and \
            st["reached"] == ref["reached"], msg
        assert st["headers"] == {k: v for k, v in ref["headers"].items()
                                 if k not in {f"h{v}.h" for v in ps}}, msg
        if collide:
            continue
        # entries keep their pseudo includer's name; same sole bytes
        got = sorted((e["line"], e["header"], e["sole"], e["bytes"])
                     for e in st["edges"])
        assert got == sorted((e["line"], e["header"], e["sole"], e["bytes"])
                             for e in ref["edges"]), msg
        compared += 1
    assert compared > 100


def test_aggregate_is_sum_of_files():
    rng = random.Random(5)
    ans = [random_analysis(rng) for _ in range(40)]
    agg = B.aggregate(H.record(a) for a in ans)
    want_h, want_e = {}, {}
    for a in ans:
        st = H.tu_stats(a)
        for name, s in st["headers"].items():
            w = want_h.setdefault(name, dict.fromkeys(H.STATS, 0))
            w["occurrences"] += 1
            for k in ("own", "expanded", "added"):
                w[k] += s[k]
        for e in st["edges"]:
            w = want_e.setdefault(H.edge_key(e["includer"], e["line"],
                                             e["header"]),
                                  dict.fromkeys(H.EDGE_STATS, 0))
            w["files"] += 1
            w["files_sole"] += e["sole"]
            w["bytes_sole"] += e["bytes"]
    assert agg["headers"] == want_h
    assert agg["edges"] == want_e
    assert agg["files"] == 40
    assert agg["bytes"] == sum(a["bytes"] for a in ans)
    assert agg["unattributed"] == sum(a["unattributed_bytes"] for a in ans)
    assert agg["root_own"] + sum(h["own"] for h in agg["headers"].values()) \
        == agg["bytes"] - agg["unattributed"]


# ------------------------------------------------------------ diff, tops

def test_diff_marks_new_and_gone():
    a = B.aggregate([H.record(mk([("a.c", 1), ("b.h", 10), ("old.h", 5)],
                                 [("a.c", 1, "b.h"), ("b.h", 1, "old.h")]))])
    b = B.aggregate([H.record(mk([("a.c", 1), ("b.h", 12), ("new.h", 500)],
                                 [("a.c", 1, "b.h"), ("b.h", 2, "new.h")]))])
    d = B.diff(a, b, top=10)
    rows = {r["name"]: r for r in d["headers"]}
    assert [r["name"] for r in d["headers"]] == ["new.h", "old.h", "b.h"]
    assert rows["new.h"]["status"] == "new" and rows["new.h"]["a"] is None
    assert rows["new.h"]["delta"] == {"occurrences": 1, "own": 500,
                                      "expanded": 500, "added": 500}
    assert rows["old.h"]["status"] == "gone" and rows["old.h"]["b"] is None
    assert rows["b.h"]["status"] == ""
    assert rows["b.h"]["delta"] == {"occurrences": 0, "own": 2,
                                    "expanded": 497, "added": 497}
    erows = {r["name"]: r for r in d["edges"]}
    assert erows["b.h:2 -> new.h"]["status"] == "new"
    assert erows["b.h:1 -> old.h"]["status"] == "gone"
    assert erows["a.c:1 -> b.h"]["delta"]["bytes_sole"] == 497
    assert [r["name"] for r in d["edges"]][0] == "b.h:2 -> new.h"
    assert B.diff(a, b, top=1)["headers"] == d["headers"][:1]
    assert B.diff(a, a) == {"headers": [], "edges": []}
    grow = B.top_growth(a, b, n=5)
    assert [r["name"] for r in grow] == ["new.h", "b.h"]
    assert [r["name"] for r in B.top_growth(a, b, by="occurrences")] == \
        ["new.h"]


def test_top_tables():
    agg = B.aggregate([H.record(mk([("a.c", 1), ("b.h", 10), ("c.h", 100)],
                                   [("a.c", 1, "b.h"), ("b.h", 1, "c.h")]))])
    assert [k for k, _ in B.top_headers(agg, "own")] == ["c.h", "b.h"]
    assert [k for k, _ in B.top_headers(agg, "added")] == ["b.h", "c.h"]
    assert [k for k, _ in B.top_headers(agg, "own", n=1)] == ["c.h"]
    assert [k for k, _ in B.top_edges(agg)] == ["a.c:1 -> b.h", "b.h:1 -> c.h"]


def test_json_round_trip():
    rng = random.Random(11)
    ans = [random_analysis(rng) for _ in range(20)]
    ans.append(mk([("a.c", 1), ("<command-line>", 2), ("k.h", 3)],
                  [("<command-line>", 0, "k.h")]))
    recs = [H.record(a) for a in ans]
    back = [json.loads(json.dumps(r)) for r in recs]
    assert back == recs
    agg = B.aggregate(back)
    assert agg == B.aggregate(recs)
    assert json.loads(json.dumps(agg)) == agg
    d = B.diff(agg, B.aggregate(back[:10]))
    assert json.loads(json.dumps(d)) == d


def test_record_version_checked():
    rec = H.record(mk([("a.c", 1)]))
    rec["v"] = 0
    with pytest.raises(ValueError):
        B.aggregate([rec])


# ------------------------------------------------------------ speed


def test_an_include_that_moved_is_the_same_entry():
    """The same #include on another line at B (lines added above it) is one
    entry, named at its line at B and marked as moved; a second #include
    of the same header from the same file sums with it."""
    a = B.aggregate([H.record(mk([("a.c", 1), ("b.h", 10), ("c.h", 5)],
                                 [("a.c", 1, "b.h"), ("b.h", 3, "c.h")]))])
    b = B.aggregate([H.record(mk([("a.c", 1), ("b.h", 14), ("c.h", 7)],
                                 [("a.c", 1, "b.h"), ("b.h", 9, "c.h")]))])
    erows = {r["name"]: r for r in B.diff(a, b)["edges"]}
    assert set(erows) == {"b.h:9 -> c.h", "a.c:1 -> b.h"}
    assert erows["b.h:9 -> c.h"]["status"] == "moved from :3"
    assert erows["b.h:9 -> c.h"]["delta"]["bytes_sole"] == 2
    assert erows["a.c:1 -> b.h"]["status"] == ""
    assert B.diff(b, b)["edges"] == []


def test_a_second_include_of_a_header_is_not_a_move():
    a = B.aggregate([H.record(mk([("a.c", 1), ("b.h", 10), ("c.h", 5)],
                                 [("a.c", 1, "b.h"), ("b.h", 9, "c.h")]))])
    b = B.aggregate([H.record(mk([("a.c", 1), ("b.h", 14), ("c.h", 7)],
                                 [("a.c", 1, "b.h"), ("b.h", 9, "c.h"), ("b.h", 12, "c.h")]))])
    erows = {r["name"]: r for r in B.diff(a, b)["edges"]}
    assert erows["b.h:9,12 -> c.h"]["status"] == "was at :9"
