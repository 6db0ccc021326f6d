"""make track SCAN=1's headers (#31): per commit the own bytes of a few
headers, from the scans' aggregates in the measurement cache
(bench/measure/trackheaders.py), in track.json, a CSV and a graph on the
track page (plots/headergraph.py). On the fake tree's history
(tests/test_track.py) with one more commit that gives minmax.h bytes of
its own; the field rebuilt from the cache after a hand edit, and an older
track.json without it redrawn; the graph's series, legend and escaping on
hand-made tracks."""
import json
import subprocess
from xml.etree import ElementTree

from test_faults import PY, REPO, fake  # noqa: F401
from test_track import history, load, track

from kbuild.util import atomic_write_json

MINMAX = "include/linux/minmax.h"
NS = "{http://www.w3.org/2000/svg}"


def declared(user, g):
    """One more commit: declarations in minmax.h, which both files include
    (its own bytes over the build grow)."""
    f = user / MINMAX
    f.write_text(f.read_text().replace("#endif", "extern int kx_a, kx_b, kx_c;\n#endif"))
    g("commit", "-qam", "minmax: declarations")
    return g("rev-parse", "HEAD")


def scanned(env, user, ids):
    p = track(env, user, "--range", f"{ids[0]}..HEAD", "--name", "h", "--scan")
    assert p.returncode == 0, p.stderr
    return p


def test_track_scan_keeps_a_few_headers_per_commit_and_draws_them(fake, tmp_path):
    base, env = fake
    user = tmp_path / "user"
    g, ids = history(user)
    ids.append(declared(user, g))
    scanned(env, user, ids)
    d, rec = load(base)
    h = rec["headers"]["gcc"]
    assert h["names"][0] == MINMAX and len(h["names"]) <= 9, h
    assert (h["first"], h["last"]) == (ids[0], ids[-1]) and "changed most" in h["rule"]
    own = [c["header_own"]["gcc"][MINMAX] for c in rec["commits"]]
    assert own[-1] > own[0] and own[:-1] == [own[0]] * (len(ids) - 1), own
    assert all(set(c["header_own"]["gcc"]) == set(h["names"]) for c in rec["commits"])
    # the rest of track.json as before
    assert "headers" not in rec["metrics"] and rec["commits"][0]["total_bytes"]["gcc"] > 0
    rows = (d / "headers-gcc.csv").read_text().splitlines()
    assert rows[0] == "commit,date,subject," + ",".join(h["names"])
    assert len(rows) == 1 + len(ids) and rows[-1].startswith(ids[-1])
    p = subprocess.run([PY, str(REPO / "report.py"), "--results", str(base / "results"),
                        "--track"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    svg = ElementTree.parse(d / "graphs/headers-gcc.svg").getroot()
    assert [x.find(f"{NS}title").text for x in svg.iter(f"{NS}path")] == h["names"]
    legend = ["".join(t.itertext()) for t in svg.iter(f"{NS}text") if t.find(f"{NS}tspan")
              is not None]
    assert legend[0].startswith(f"{MINMAX}  {own[0]:,} -> {own[-1]:,} (+")
    page = (d / "index.html").read_text()
    assert 'src="graphs/headers-gcc.svg"' in page and 'href="#headers-gcc"' in page
    assert 'href="headers-gcc.csv"' in page


def test_the_headers_field_is_output_rebuilt_from_the_cache(fake, tmp_path):
    """Edited by hand, or missing (a track.json from before the field):
    the next run takes it from the cache, measures nothing again, and names
    the edited file."""
    base, env = fake
    user = tmp_path / "user"
    g, ids = history(user)
    ids.append(declared(user, g))
    scanned(env, user, ids)
    d, rec = load(base)
    edited = json.loads(json.dumps(rec))
    edited["commits"][1]["header_own"]["gcc"][MINMAX] *= 3
    edited["headers"]["gcc"]["names"] = ["include/made/up.h"]
    (d / "track.json").write_text(json.dumps(edited))
    p = scanned(env, user, ids)
    assert f"{d / 'track.json'} does not hold the header bytes measured at " \
        f"{rec['commits'][1]['commit'][:12]}" in p.stderr, p.stderr
    assert "  preprocessing " not in p.stderr, p.stderr
    _d, again = load(base)
    assert again["headers"] == rec["headers"]
    assert [c["header_own"] for c in again["commits"]] == \
        [c["header_own"] for c in rec["commits"]]
    old = json.loads(json.dumps(rec))          # as written before #31
    del old["headers"]
    for c in old["commits"]:
        del c["header_own"]
    (d / "track.json").write_text(json.dumps(old))
    (d / "headers-gcc.csv").unlink()
    p = scanned(env, user, ids)
    assert "header bytes" not in p.stderr and "  preprocessing " not in p.stderr
    _d, again = load(base)
    assert again["headers"] == rec["headers"] and (d / "headers-gcc.csv").exists()
    assert [c["header_own"] for c in again["commits"]] == \
        [c["header_own"] for c in rec["commits"]]


# --- the graph on hand-made tracks --------------------------------------------------

EVIL = 'include/<script>alert("x")</script>.h'


def small(n=6, names=("include/linux/a.h", "include/linux/b.h", EVIL), headers=True):
    cs = []
    for i in range(n):
        c = {"commit": f"{i:040x}", "date": f"2024-01-{1 + i % 28:02d}", "subject": f"s{i}",
             "parent": f"{i - 1:040x}" if i else None,
             "setup": {"gcc": "gcc 12" if i < n // 2 else "gcc 13", "config_hash": "a"},
             "values": {"gcc": {"f.c": {"bytes": 1000 + i, "status": "ok"}}}}
        if headers:
            c["header_own"] = {"gcc": None if i == 1 else
                               {h: 1000 * (j + 1) + 10 * i * j for j, h in enumerate(names)}}
        cs.append(c)
    t = {"schema": 1, "kind": "kexpand.track", "name": "t", "files": ["f.c"],
         "compilers": ["gcc"], "metrics": {"bytes": "-E bytes"}, "commits": cs,
         "interesting": [], "setup_changes": []}
    if headers:
        t["headers"] = {"gcc": {"rule": "r", "names": list(names), "first": cs[0]["commit"],
                                "last": cs[-1]["commit"]}}
    return t


def test_the_graph_names_each_header_and_escapes_it():
    from plots import headergraph, track
    t = small()
    ser = headergraph.series(t, "gcc")
    assert [h for h, _ in ser] == t["headers"]["gcc"]["names"]
    assert ser[1][1][:3] == [2000, None, 2020]
    text = headergraph.svg(t, "gcc", ser, track.setup_changes(t))
    root = ElementTree.fromstring(text)
    paths = list(root.iter(f"{NS}path"))
    assert [p.find(f"{NS}title").text for p in paths] == [h for h, _ in ser]
    assert len({p.get("stroke") for p in paths}) == 3
    # the line breaks where nothing was measured and at the compiler change
    assert paths[0].get("d").count("M") == 3
    assert "<script>" not in text and "&lt;script&gt;alert(&quot;x&quot;)" in text
    legend = ["".join(x.itertext()) for x in root.iter(f"{NS}text")]
    assert f"{EVIL}  3,000 -> 3,100 (+100)" in legend
    assert "gcc: gcc 12 -&gt; gcc 13" in text
    ticks = [x.text for x in root.iter(f"{NS}text") if (x.text or "").endswith("kB")]
    assert len(ticks) >= 3 and len(set(ticks)) == len(ticks)


def test_a_track_without_headers_has_no_headers_graph(tmp_path):
    from plots import headergraph, trackpage
    t = small(headers=False)
    assert headergraph.series(t, "gcc") == []
    t2 = small()
    t2["headers"]["gcc"]["names"] = "not a list"
    assert headergraph.series(t2, "gcc") == []
    d = tmp_path / "track" / "t"
    atomic_write_json(d / "track.json", t)
    assert trackpage.write_track(tmp_path, d)
    assert not (d / "graphs/headers-gcc.svg").exists()
    assert 'id="headers-gcc"' not in (d / "index.html").read_text()
    atomic_write_json(d / "track.json", small())
    trackpage.write_track(tmp_path, d)
    assert (d / "graphs/headers-gcc.svg").exists()


def test_the_graph_stays_small_at_a_thousand_commits():
    """Nine headers over 1,000 commits: a path each, no element per commit."""
    from plots import headergraph
    names = [f"include/linux/header-number-{j}.h" for j in range(9)]
    t = small(n=1000, names=names)
    text = headergraph.svg(t, "gcc", headergraph.series(t, "gcc"), {})
    assert len(text) <= 9 * 14 * 1000 + 8_000
    assert len(list(ElementTree.fromstring(text).iter())) <= 120
