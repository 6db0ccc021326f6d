"""State that cannot lie (fake kernel tree, tests/fakelinux): a report
directory belongs to one identity whatever its kind; track.json is output,
its values come from the measurement cache; a range runs forwards only; a
NAME= is a name git could give a ref; control characters from mails and
commit subjects never reach a report or the terminal raw."""
import json

import pytest

from test_check import COMMENT_DIFF, check, series_mbox
from test_faults import fake, kx  # noqa: F401
from test_hostile import code, errors, out
from test_track import SETUP, history, load, track


def test_a_check_of_another_base_never_replaces_a_report(fake, tmp_path):
    """The same series on another BASE= is another check: its report
    directory holds the first one's report, which stays (exit 2, naming it)."""
    base, env = fake
    mbox = series_mbox(tmp_path / "c.mbox", [("kernel.h: a comment", COMMENT_DIFF)])
    p = check(env, PATCHES=mbox, BASE="before")
    assert code(p) == 0, out(p)
    [d] = (base / "results/check").iterdir()
    first = (d / "check.json").read_text()
    p = check(env, PATCHES=mbox, BASE="after")
    assert code(p) == 2, out(p)
    assert str(d) in errors(p) and "'base': 'before'" in errors(p), out(p)
    assert (d / "check.json").read_text() == first


@pytest.mark.parametrize("name", ["check.json", "track.json", "pair.json"])
def test_every_report_kind_carries_its_identity(tmp_path, name):
    from bench import results
    from kbuild.util import KexpandError
    d = tmp_path / "r"
    d.mkdir()
    (d / name).write_text(json.dumps({"identity": {"series": "a", "base": "v1"}}))
    results.claim_dir(d, {"series": "a", "base": "v1"})
    with pytest.raises(KexpandError) as e:
        results.claim_dir(d, {"series": "a", "base": "v2"})
    assert e.value.klass == "user" and str(d) in str(e.value) and name in str(e.value)


def _track(env, user, ids, *more):
    p = track(env, user, "--range", f"{ids[0]}..{ids[3]}", "--name", "t", *more)
    assert p.returncode == 0, p.stderr
    return p


def test_track_json_is_output_redrawn_from_the_cache(fake, tmp_path):
    """A value edited in track.json is not kept: the next run takes it from
    the cache and says which file it redrew; nothing is measured again."""
    base, env = fake
    user = tmp_path / "user"
    _g, ids = history(user)
    _track(env, user, ids)
    d, rec = load(base)
    edited = json.loads(json.dumps(rec))
    edited["commits"][1]["values"]["gcc"][SETUP]["bytes"] *= 3
    (d / "track.json").write_text(json.dumps(edited))
    p = _track(env, user, ids)
    assert f"{d / 'track.json'} does not hold what was measured at {ids[1][:12]}" in \
        p.stderr, p.stderr
    assert "  preprocessing " not in p.stderr
    _d, again = load(base)
    assert [c["values"] for c in again["commits"]] == [c["values"] for c in rec["commits"]]
    assert not again["interesting"]


@pytest.mark.parametrize("junk", ["[]", '{"commits": [1, 2]}'])
def test_a_track_json_of_the_wrong_shape_is_redrawn(fake, tmp_path, junk):
    base, env = fake
    user = tmp_path / "user"
    _g, ids = history(user)
    _track(env, user, ids)
    d, rec = load(base)
    (d / "track.json").write_text(junk)
    p = _track(env, user, ids)
    assert f"{d / 'track.json'} is not a track record" in p.stderr, p.stderr
    assert "  preprocessing " not in p.stderr
    _d, again = load(base)
    assert [c["values"] for c in again["commits"]] == [c["values"] for c in rec["commits"]]
    assert [c["commit"] for c in again["commits"]] == ids[:4]
