"""make track SCAN=1's headers (#31): per commit the own bytes of a few
headers, from the scans' aggregates in the measurement cache
(bench/measure/trackheaders.py), in track.json, a CSV and a graph on the
track page (plots/headergraph.py). On the fake tree's history
(tests/test_track.py) with one more commit that gives minmax.h bytes of
its own; the field rebuilt from the cache after a hand edit, and an older
track.json without it redrawn; the graph's series, legend and escaping on
hand-made tracks."""
import json

from test_faults import fake  # noqa: F401
from test_track import history, load, track

MINMAX = "include/linux/minmax.h"


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


def test_track_scan_keeps_a_few_headers_per_commit(fake, tmp_path):
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
