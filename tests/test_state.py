"""State that cannot lie (fake kernel tree, tests/fakelinux): a report
directory belongs to one identity whatever its kind; track.json is output,
its values come from the measurement cache; a range runs forwards only; a
NAME= is a name git could give a ref; control characters from mails and
commit subjects never reach a report or the terminal raw."""
import json
import os
import signal
import subprocess

import pytest

from test_check import COMMENT_DIFF, check, series_mbox
from test_faults import PY, REPO, fake  # noqa: F401
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


def test_a_reversed_or_unrelated_range_is_refused(fake, tmp_path):
    """RANGE=A..B and A= B= run forwards: a reversed range is not one
    commit, and an A off B's history is not put in front of it as a parent."""
    base, env = fake
    user = tmp_path / "user"
    g, ids = history(user)
    g("checkout", "-q", "-b", "side", ids[1])
    (user / "side.txt").write_text("side\n")
    g("add", "side.txt")
    g("commit", "-qm", "a side branch")
    side = g("rev-parse", "HEAD")
    g("checkout", "-q", "-")
    p = track(env, user, "--range", f"{ids[3]}..{ids[1]}", "--name", "r")
    assert p.returncode == 2 and "reversed" in p.stderr and ids[3][:12] in p.stderr, p.stderr
    p = track(env, user, "--range", f"{side}..{ids[3]}", "--name", "r")
    assert p.returncode == 2 and "is not an ancestor of" in p.stderr, p.stderr
    assert not (base / "results/track").exists()
    p = check(env, KERNEL=user, A=ids[3], B=ids[1])
    assert code(p) == 2 and "reversed" in errors(p), out(p)
    p = check(env, KERNEL=user, A=side, B=ids[3])
    assert code(p) == 2 and f"A={side} B={ids[3]}: " in errors(p), out(p)


def test_every_nth_point_names_its_real_parent_and_its_span(fake, tmp_path):
    base, env = fake
    user = tmp_path / "user"
    _g, ids = history(user)
    p = track(env, user, "--range", f"{ids[0]}..HEAD", "--every", "3", "--name", "n3")
    assert p.returncode == 0, p.stderr
    d, rec = load(base)
    assert [c["commit"] for c in rec["commits"]] == [ids[0], ids[3], ids[6], ids[7]]
    assert [c["parent"] for c in rec["commits"][1:]] == [ids[2], ids[5], ids[6]]
    assert [c.get("spans") for c in rec["commits"]] == [None, 3, 3, 1]
    up = next(i for i in rec["interesting"] if i["commit"] == ids[6])
    assert up["parent"] == ids[5] and up["from"] == ids[3] and up["spans"] == 3
    assert f"A={ids[3]}" in up["make_compare"]
    pair = json.loads((base / "results" / up["compare"] / "pair.json").read_text())
    assert pair["a"]["commit"] == ids[3] and pair["spans"] == 3
    assert f"(spans 3 commits, from {ids[3][:12]})" in (d / "interesting.md").read_text()
    p = subprocess.run([PY, str(REPO / "report.py"), "--results", str(base / "results"),
                        "--track"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    page = next((d / "c").glob(f"*{ids[6][:12]}*.html")).read_text()
    assert "it spans 3 commits" in page and f"parent <code>{ids[5]}</code>" in page


@pytest.mark.parametrize("name", ["v4.lock", "x..y", "v4.", "a.lock"])
def test_a_name_git_refuses_is_refused_before_any_work(fake, tmp_path, name):
    base, env = fake
    mbox = series_mbox(tmp_path / "c.mbox", [("kernel.h: a comment", COMMENT_DIFF)])
    p = check(env, PATCHES=mbox, BASE="before", NAME=name)
    assert code(p) == 2 and "NAME=" in errors(p) and "git" in errors(p), out(p)
    assert not (base / "work").exists()


def test_names_kexpand_takes_are_names_git_takes():
    from kbuild.commands import check_name
    from kbuild.util import KexpandError
    for name in ["v4", "minmax-v4", "a.b", "a+b", "x..y", "v4.", "v4.lock", "a.lock.b",
                 "a_b.", "1.2.3", "a-.lock", "a...b", "v4.locked", "q" * 64]:
        try:
            check_name("NAME", name)
            ok = True
        except KexpandError:
            ok = False
        git = subprocess.run(["git", "check-ref-format", f"refs/kexpand/check/{name}"],
                             capture_output=True).returncode == 0
        assert not ok or git, name


def test_the_csv_of_a_metric_no_longer_tracked_is_removed(fake, tmp_path):
    """SCAN=1 one night, not the next: total_bytes-gcc.csv goes."""
    base, env = fake
    user = tmp_path / "user"
    _g, ids = history(user)
    p = track(env, user, "--range", f"{ids[0]}..{ids[1]}", "--name", "s", "--scan")
    assert p.returncode == 0, p.stderr
    d, _rec = load(base)
    assert (d / "total_bytes-gcc.csv").exists()
    p = track(env, user, "--range", f"{ids[0]}..{ids[1]}", "--name", "s")
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in d.glob("*.csv")) == [
        "bytes-gcc.csv", "instructions_c-gcc.csv", "longest_line-gcc.csv"]
    assert "removed total_bytes-gcc.csv: a metric or compiler no longer tracked" in p.stderr


RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def no_raw_controls(root):
    """Every report, page, plot and CSV under root: no raw control character."""
    bad = []
    for p in root.rglob("*"):
        if p.is_file() and p.suffix in (".txt", ".md", ".html", ".svg", ".csv"):
            text = p.read_text(errors="replace")
            bad += [f"{p}: {c!r}" for c in RAW if c in text]
    return bad


def test_control_characters_of_a_subject_are_escaped(fake, tmp_path):
    """ESC, BEL, a C1 CSI and a right-to-left override in a cover letter's
    and a patch's subject reach the reports, the pages and the terminal
    escaped."""
    base, env = fake
    mbox = series_mbox(tmp_path / "c.mbox", [("kernel.h: a \x1b]0;owned\x07 comment",
                                              COMMENT_DIFF)])
    mbox.write_text(mbox.read_text().replace("make min3() safer",
                                             "make \x1b[31mmin3()\x9b2J\u202e safer"))
    p = check(env, PATCHES=mbox, BASE="before")
    assert code(p) == 0, out(p)
    assert not [c for c in RAW if c in p.stdout + p.stderr], out(p)
    [d] = (base / "results/check").iterdir()
    assert "\\x1b[31mmin3()\\x9b2J\\u202e safer" in (d / "report.md").read_text()
    c = subprocess.run([PY, str(REPO / "report.py"), "--results", str(base / "results"),
                        "--index"], capture_output=True, text=True)
    assert c.returncode == 0, c.stderr
    assert no_raw_controls(base / "results") == []


def test_control_characters_of_a_commit_subject_are_escaped(fake, tmp_path):
    base, env = fake
    user = tmp_path / "user"
    g, ids = history(user)
    (user / SETUP).write_text((user / SETUP).read_text() + "int x = min3(1, 2, 3);\n")
    g("commit", "-qam", "xen: \x1b[2Jone more min3()\x07")
    p = track(env, user, "--range", f"{ids[6]}..HEAD", "--name", "c")
    assert p.returncode == 0, p.stderr
    assert not [c for c in RAW if c in p.stdout + p.stderr], p.stdout + p.stderr
    assert "\\x1b[2Jone more min3()\\x07" in p.stdout
    c = subprocess.run([PY, str(REPO / "report.py"), "--results", str(base / "results"),
                        "--track"], capture_output=True, text=True)
    assert c.returncode == 0, c.stderr
    assert not [x for x in RAW if x in c.stdout + c.stderr]
    assert no_raw_controls(base / "results") == []


PY_SHIM = """#!/bin/sh
# kexpand before it takes signals: blocks once at its start, then runs
case " $* " in *bench/kexpand.py*)
  if mkdir "$FAKE_BLOCK/py.once" 2>/dev/null; then
    # blocked in the shell's own open(2) of the fifo: no child outlives it
    touch "$FAKE_BLOCK/blocked-py"; : < "$FAKE_BLOCK/fifo"
  fi;;
esac
exec {py} "$@"
"""


@pytest.mark.parametrize("how", ["group-term", "make-term", "group-int"])
def test_an_early_interrupt_is_exit_130(fake, tmp_path, how):
    """A signal that reaches kexpand before Python has set its handlers
    (a stand-in for its start, blocked on a fifo until signalled) still
    ends the run with the documented 130, never make's 'Error 143'."""
    from test_interrupts import signal_group, wait_for
    base, env = fake
    block = tmp_path / "block"
    block.mkdir()
    os.mkfifo(block / "fifo")
    shim = tmp_path / "py"
    shim.write_text(PY_SHIM.format(py=PY))
    shim.chmod(0o755)
    proc = subprocess.Popen(
        ["make", "-s", "-C", str(REPO), "compare", "CASE=fake", "A=before", "B=after",
         "CC=gcc", "NO_TIME=1", "NO_MACROS=1", f"PY={shim}"],
        env=dict(env, FAKE_BLOCK=str(block)), start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # Ctrl-C reaches make as at a terminal, even where this test runs
        # as a background job (whose shell left SIGINT ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_for(block / "blocked-py", proc, "kexpand's start")
    if how == "make-term":
        os.kill(proc.pid, signal.SIGTERM)
    else:
        signal_group(proc.pid, signal.SIGINT if how == "group-int" else signal.SIGTERM)
    o, e = proc.communicate(timeout=120)
    assert code(proc_result(proc, o, e)) == 130, e
    assert not (base / "results/compare").exists()


def proc_result(proc, o, e):
    return subprocess.CompletedProcess(proc.args, proc.returncode, o, e)


def test_values_measured_on_dask_workers_are_kept_in_the_clients_cache(tmp_path, capsys):
    """A worker's measurements are in its own cache: the client keeps the
    values it got, and a later run takes them from there, not from
    track.json."""
    from bench.measure import trackvalues
    setup = {"config_hash": "c0ffee", "host": "w1", "counter": "perf 1", "gcc": "gcc 12"}
    vals = {"gcc": {SETUP: {"bytes": 10, "longest_line": 5, "instructions_c": 7,
                            "status": "ok"}}}
    trackvalues.keep_remote(tmp_path, {"a" * 40: {"setup": setup, "values": vals}})
    track_json = tmp_path / "track.json"
    edited = json.loads(json.dumps(vals))
    edited["gcc"][SETUP]["bytes"] = 99
    track_json.write_text(json.dumps({"commits": [
        {"commit": "a" * 40, "setup": setup, "values": edited},
        {"commit": "b" * 40, "setup": setup, "values": vals}]}))
    got = trackvalues.known(tmp_path, track_json, [SETUP], ["gcc"], False)
    assert got == {"a" * 40: {"setup": setup, "values": vals}}     # b: measured again
    assert f"{track_json} does not hold what was measured at aaaaaaaaaaaa" in \
        capsys.readouterr().err
