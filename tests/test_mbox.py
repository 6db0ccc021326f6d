"""kbuild.mbox: posted series read in every form they come in (mbox files
of git format-patch, b4 am and lore threads, directories, single mails,
commit dumps, CRLF, quoted-printable, base64), refused when incomplete or
mixed, and applied with real `git am` in a tiny tree: deterministic
commit ids, a patch that does not apply named and the tree left clean.
The fixtures are in tests/data/mbox (see its README)."""
import base64
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kbuild import mbox
from kbuild.mbox import apply_series, parse_prefix, read_series, series_key
from kbuild.util import KexpandError

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "mbox"
DIR = DATA / "dir"
PATCHES = sorted(DIR.glob("v2-000[1-3]-*.patch"))
# the seeds of the minmax case; where /work/shared is not, the case's copies in
# the repository (002-006 and 007 byte for byte, 010 and 011 rebased onto 6.1)
SEEDS = Path("/work/shared/seeds")
CASE = REPO / "cases" / "minmax" / "patches"

SUBJECTS = ["demo: Add demo_umin()", "demo: Split the naïve demo_clamp()",
            "demo: Add demo_clamp_t()"]
DATES = ["2023-09-18T08:16:30+00:00", "2023-09-18T08:17:10+00:00",
         "2023-09-18T08:18:40+00:00"]
SEED_SUBJECTS = [
    "minmax: Add umin(a, b) and umax(a, b)",
    "minmax: Allow min()/max()/clamp() if the arguments have the same signedness.",
    "minmax: Fix indentation of __cmp_once() and __clamp_once()",
    "minmax: Allow comparisons of 'int' against 'unsigned char/short'.",
    "minmax: Relax check to allow comparison between unsigned arguments and signed constants.",
]


def seed_patches():
    """Seeds 002-006 ([PATCH next v4 n/5]), from /work/shared when there."""
    if SEEDS.is_dir():
        return sorted(SEEDS.glob("00[2-6]-patch-*.patch"))
    return sorted(CASE.glob("000[2-6]-*.patch"))


def seed_dumps():
    """Seeds 007, 010, 011: `commit <sha>` dumps of Linus' commits."""
    if SEEDS.is_dir():
        return [next(SEEDS.glob(f"{n}-commit-*.patch")) for n in ("007", "010", "011")]
    return [next(CASE.glob(f"{n}-torvalds-*.patch")) for n in ("0008", "0009", "0010")]


def run_git(cwd, *args, env=None, input=None):
    full = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
                LC_ALL="C", GIT_AUTHOR_NAME="kexpand", GIT_AUTHOR_EMAIL="kexpand@localhost",
                GIT_COMMITTER_NAME="kexpand", GIT_COMMITTER_EMAIL="kexpand@localhost",
                GIT_AUTHOR_DATE="2023-09-18T08:00:00+00:00",
                GIT_COMMITTER_DATE="2023-09-18T08:00:00+00:00", **(env or {}))
    p = subprocess.run(["git", "-C", str(cwd), *args], env=full, input=input,
                       capture_output=True, check=True)
    return p.stdout.decode()


def make_tree(path):
    """The fixtures' base as a git tree (same commit id every time), HEAD
    on a branch as a fresh clone has it; tag 'base'."""
    shutil.copytree(DATA / "tree", path)
    run_git(path, "init", "-q")
    run_git(path, "add", "-A")
    run_git(path, "commit", "-q", "-m", "demo: base")
    run_git(path, "tag", "base")
    return path


@pytest.fixture
def tree(tmp_path):
    return make_tree(tmp_path / "tree")


def summary(series):
    return [(p.prefix.number, p.prefix.total, p.prefix.version, p.prefix.tags,
             p.subject, p.author, p.date) for p in series.patches]


EXPECTED = [(n + 1, 3, 2, ("next",), SUBJECTS[n], "Zoë Example <zoe@example.org>",
             DATES[n]) for n in range(3)]


def crlf_copy(src, dst):
    dst.write_bytes(src.read_bytes().replace(b"\n", b"\r\n"))
    return dst


# --- reading ---------------------------------------------------------------------

@pytest.mark.parametrize("form", ["format-patch mbox", "directory", "files",
                                  "files reversed", "b4 am mbx", "lore thread",
                                  "crlf mbox", "qp and base64 mails"])
def test_every_form_reads_the_same_patches(form, tmp_path):
    paths = {"format-patch mbox": [DATA / "series.mbox"], "directory": [DIR],
             "files": PATCHES, "files reversed": PATCHES[::-1],
             "b4 am mbx": [DATA / "b4-am.mbx"], "lore thread": [DATA / "thread.mbox"],
             "crlf mbox": [crlf_copy(DATA / "series.mbox", tmp_path / "crlf.mbox")],
             "qp and base64 mails": [PATCHES[0], DATA / "patch2-qp.eml",
                                     DATA / "patch3-base64.eml"]}[form]
    s = read_series(paths)
    assert summary(s) == EXPECTED
    assert series_key(s) == series_key(read_series([DATA / "series.mbox"]))
    assert s.version == 2
    assert all(b"\r" not in p.raw and not p.keep_cr for p in s.patches)


def test_the_cover_letter_is_skipped_and_names_the_series():
    s = read_series([DATA / "series.mbox"])
    assert [p.prefix.number for p in s.patches] == [1, 2, 3]
    assert s.cover.prefix.number == 0 and s.cover.subject == "demo: Make the demo helpers safer"
    assert s.name == "demo: Make the demo helpers safer"
    assert s.slug == "demo-make-the-demo-helpers-safer-v2"
    assert read_series([DIR]).cover.source.name == "v2-0000-cover-letter.patch"
    # b4 am keeps the cover letter apart: the first patch names the series
    s = read_series([DATA / "b4-am.mbx"])
    assert s.cover is None and s.slug == "demo-add-demo-umin-v2"


def test_a_thread_skips_replies_and_orders_by_number():
    s = read_series([DATA / "thread.mbox"])
    # mails: 0 cover, 1 patch 2/3, 2 reply, 3 patch 1/3, 4 reply with a diff, 5 patch 3/3
    assert [p.index for p in s.patches] == [3, 1, 5]
    assert s.cover.index == 0
    assert [p.where for p in s.patches][0] == f"{DATA / 'thread.mbox'} (mail 4)"


def test_mboxrd_quoting_is_undone_and_unquoted_mboxes_are_left_alone():
    for f in ("thread.mbox", "b4-am.mbx", "series.mbox"):
        p = read_series([DATA / f]).patches[0]
        assert "\nFrom the start, a signed" in p.text, f
        assert b">From" not in p.raw, f
    assert b"\n>From the start" in (DATA / "thread.mbox").read_bytes()


def test_quoted_printable_and_base64_are_decoded(tmp_path):
    plain = read_series([DIR]).patches
    for i, f in ((1, "patch2-qp.eml"), (2, "patch3-base64.eml")):
        p, = mbox.read_file(DATA / f)
        assert p.text == plain[i].text and p.index is None
    assert "int r = demo_max(v, lo);" in mbox.read_file(DATA / "patch2-qp.eml")[0].text
    # base64 of text in MIME's canonical form, CR LF: decoded to the same patch
    head, _, body = (DATA / "patch3-base64.eml").read_text().partition("\n\n")
    crlf = base64.encodebytes(base64.b64decode(body).replace(b"\n", b"\r\n")).decode()
    (tmp_path / "crlf.eml").write_text(f"{head}\n\n{crlf}")
    p, = mbox.read_file(tmp_path / "crlf.eml")
    assert p.text == plain[2].text and not p.keep_cr


@pytest.mark.parametrize("subject,want", [
    ("[PATCH next v4 2/5] minmax: Add umin(a, b)", ("[PATCH next v4 2/5]", 4, 2, 5, ("next",))),
    ("[RFC PATCH v2 0/3] demo: x", ("[RFC PATCH v2 0/3]", 2, 0, 3, ("RFC",))),
    ("[PATCH]   demo: x", ("[PATCH]", 1, None, None, ())),
    ("[PATCH v3 RESEND 03/10] demo: x", ("[PATCH v3 RESEND 03/10]", 3, 3, 10, ("RESEND",))),
    ("[RFC][PATCH net-next 1/2] demo: x", ("[RFC][PATCH net-next 1/2]", 1, 1, 2,
                                          ("RFC", "net-next"))),
    ("demo: x", ("", 1, None, None, ())),
])
def test_subject_prefix(subject, want):
    prefix, rest = parse_prefix(subject)
    assert rest == "demo: x" or rest == "minmax: Add umin(a, b)"
    assert (prefix.text, prefix.version, prefix.number, prefix.total, prefix.tags) == want


# --- refusals ----------------------------------------------------------------------

def refused(paths):
    with pytest.raises(KexpandError) as e:
        read_series(paths)
    assert e.value.klass == "user" and e.value.exit_code == 2
    return str(e.value)


def test_a_number_that_repeats_is_refused(tmp_path):
    text = (DATA / "series.mbox").read_text().replace("v2 3/3]", "v2 2/3]")
    f = tmp_path / "dup.mbox"
    f.write_text(text)
    msg = refused([f])
    assert "patch 2/3 comes twice" in msg and f"{f} (mail 3)" in msg and f"{f} (mail 4)" in msg


def test_a_missing_number_is_refused(tmp_path):
    d = tmp_path / "dir"
    shutil.copytree(DIR, d)
    (d / PATCHES[1].name).unlink()
    msg = refused([d])
    assert "patch 2/3 missing" in msg and str(d / PATCHES[0].name) in msg
    assert "found 1, 3" in msg


def test_two_versions_are_refused(tmp_path):
    f = tmp_path / "v3.patch"
    f.write_text(PATCHES[2].read_text().replace("[PATCH next v2 3/3]", "[PATCH next v3 3/3]"))
    msg = refused([PATCHES[0], PATCHES[1], f])
    assert "mix versions v2 and v3" in msg and str(f) in msg


def test_no_patch_and_missing_paths_are_refused(tmp_path):
    assert f"{tmp_path / 'nope.mbox'}: no such file" in refused([tmp_path / "nope.mbox"])
    notes = tmp_path / "notes.txt"
    notes.write_text("Some notes, not a mail.\n")
    assert f"no patch found in {notes}" in refused([notes])
    assert "no patch found" in refused([DIR / "v2-0000-cover-letter.patch"])
    diff = tmp_path / "bare.diff"
    diff.write_text(PATCHES[0].read_text().partition("\n---\n")[2])
    assert f"no patch found in {diff}: a bare diff" in refused([diff])
    (tmp_path / "empty").mkdir()
    assert f"no patch found in {tmp_path / 'empty'}" in refused([tmp_path / "empty"])
    replies = tmp_path / "replies.mbox"
    sep = b"From mboxrd@z Thu Jan  1 00:00:00 1970\n"
    replies.write_bytes(b"".join(sep + m for m in (DATA / "thread.mbox").read_bytes()
                                 .split(sep) if b"Subject: Re:" in m))
    assert f"no patch found in {replies}: it holds 2 replies" in refused([replies])


def test_a_patch_without_a_date_is_refused(tmp_path):
    f = tmp_path / "nodate.patch"
    f.write_text("".join(l for l in PATCHES[0].read_text().splitlines(True)
                         if not l.startswith("Date:")))
    assert "no Date: header" in refused([f])


# --- the seeds -----------------------------------------------------------------------

def test_seeds_as_files_directory_and_mbox_give_the_same_series(tmp_path):
    files = seed_patches()
    assert len(files) == 5
    d = tmp_path / "seeds"
    d.mkdir()
    for f in files:
        shutil.copy(f, d)
    (d / "000-article.md").write_text("# not a patch\n")
    one = tmp_path / "seeds.mbox"
    one.write_bytes(b"".join(b"From git@z Thu Jan  1 00:00:00 1970\n" + f.read_bytes() + b"\n"
                             for f in reversed(files)))
    series = [read_series(files), read_series([d]), read_series([one])]
    for s in series:
        assert [p.subject for p in s.patches] == SEED_SUBJECTS
        assert [p.prefix.number for p in s.patches] == [1, 2, 3, 4, 5]
        assert {p.prefix.tags for p in s.patches} == {("next",)} and s.version == 4
        assert series_key(s) == series_key(series[0])
    assert series[2].patches[0].where == f"{one} (mail 5)"


def test_a_numbered_series_and_commit_dumps_keep_the_order_given():
    s = read_series([*seed_patches(), *seed_dumps()])
    assert [p.prefix.number for p in s.patches] == [1, 2, 3, 4, 5, None, None, None]
    assert s.version == 4 and s.slug == "minmax-add-umin-a-b-and-umax-a-b-v4"
    s = read_series([*seed_dumps()[:1], *reversed(seed_patches())])
    assert [p.prefix.number for p in s.patches] == [None, 1, 2, 3, 4, 5]


def test_the_seeds_cover_letter_names_the_series(tmp_path):
    cover = SEEDS / "001-cover-minmax-relax-type-checks-in-min-and-max.txt"
    if not cover.is_file():
        cover = tmp_path / "cover.txt"
        cover.write_text("From: David Laight <David.Laight@ACULAB.COM>\n"
                         "Date: Mon, 18 Sep 2023 08:14:40 +0000\nSubject: [PATCH next v4 0/5] "
                         "minmax: Relax type checks in min() and max().\n\nThe min() ...\n")
    s = read_series([cover, *seed_patches()])
    assert s.cover.source == cover and len(s.patches) == 5
    assert s.slug == "minmax-relax-type-checks-in-min-and-max-v4"


def test_bench_checks_next_version_is_v5_of_4_and_reads_whole(tmp_path):
    """make bench-check's "base cached" stage posts v4 without 5/5 again:
    1/5..4/5 as they are is refused (incomplete), renumbered they read."""
    from bench.cmd.checkbench import next_version
    four = seed_patches()[:4]
    assert "patch 5/5 missing" in refused(four)
    s = read_series(next_version(four, tmp_path / "v5"))
    assert [p.prefix.number for p in s.patches] == [1, 2, 3, 4] and s.version == 5
    assert [p.subject for p in s.patches] == SEED_SUBJECTS[:4]
    assert [p.prefix.total for p in s.patches] == [4] * 4
    assert series_key(s) != series_key(read_series(seed_patches()))


def test_commit_dumps_become_mails_git_reads(tmp_path):
    dumps = seed_dumps()
    s = read_series(dumps)
    assert [p.subject for p in s.patches] == [
        "minmax: avoid overly complex min()/max() macro arguments in xen",
        "minmax: avoid overly complicated constant expressions in VM code",
        "minmax: simplify and clarify min_t()/max_t() implementation"]
    assert {p.author for p in s.patches} == {"Linus Torvalds <>"}
    assert [p.date for p in s.patches] == ["2024-07-26T12:00:00+00:00"] * 2 + [
        "2024-07-28T12:00:00+00:00"]
    for p, f in zip(s.patches, dumps):
        info = run_git(tmp_path, "mailinfo", str(tmp_path / "msg"), str(tmp_path / "patch"),
                       input=p.raw)
        assert f"Subject: {p.subject}\n" in info and "Author: Linus Torvalds\n" in info
        dump = f.read_text()
        assert (tmp_path / "patch").read_text() in dump[dump.index("\n---\n"):]
        assert "Upstream-commit: " in (tmp_path / "msg").read_text()


# --- applying --------------------------------------------------------------------------

def commits(done):
    return [c for _, c in done]


def test_apply_makes_the_same_commits_every_time_and_from_every_form(tree, tmp_path):
    s = read_series([DATA / "series.mbox"])
    first = apply_series(tree, "base", s)
    assert [p.prefix.number for p, _ in first] == [1, 2, 3]
    assert commits(apply_series(tree, "base", s)) == commits(first)
    other = make_tree(tmp_path / "other")
    crlf = crlf_copy(DATA / "thread.mbox", tmp_path / "thread-crlf.mbox")
    for form in ([DATA / "thread.mbox"], [crlf], [PATCHES[0], DATA / "patch2-qp.eml",
                                                  DATA / "patch3-base64.eml"]):
        assert commits(apply_series(other, "base", read_series(form))) == commits(first)
    log = run_git(tree, "log", "--format=%an <%ae>|%aI|%cn <%ce>|%cI|%s", "base..HEAD")
    assert log.splitlines() == [f"Zoë Example <zoe@example.org>|{d}|kexpand <kexpand@localhost>|"
                                f"{d}|{s}" for d, s in reversed(list(zip(DATES, SUBJECTS)))]
    assert "\nFrom the start, a signed" in run_git(tree, "log", "-1", "--format=%B",
                                                   commits(first)[0])
    assert run_git(tree, "status", "--porcelain") == ""
    assert subprocess.run(["git", "-C", str(tree), "symbolic-ref", "-q", "HEAD"],
                          stdout=subprocess.DEVNULL).returncode == 1     # detached
    assert not list((tree / ".git").glob("kexpand-am*"))


def test_apply_ignores_the_users_git_config(tree, tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "hooks").mkdir(parents=True)
    hook = home / "hooks" / "applypatch-msg"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Someone Else\n\temail = else@example.com\n[commit]\n\tgpgSign = true\n"
        f"[core]\n\thooksPath = {home / 'hooks'}\n\tautocrlf = true\n[am]\n\tthreeWay = true\n"
        "[i18n]\n\tcommitEncoding = ISO-8859-1\n")
    want = commits(apply_series(make_tree(tmp_path / "ref"), "base",
                                read_series([DATA / "series.mbox"])))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    assert commits(apply_series(tree, "base", read_series([DATA / "series.mbox"]))) == want
    assert b"\r" not in (tree / "lib" / "demo.c").read_bytes()


def test_a_git_log_dump_applies_oldest_first(tree, tmp_path):
    tip = commits(apply_series(tree, "base", read_series([DATA / "series.mbox"])))[-1]
    dump = tmp_path / "log.patch"                    # newest first, indented messages
    dump.write_text(run_git(tree, "log", "-p", "--no-color", "base.." + tip))
    s = read_series([dump])
    assert [p.subject for p in s.patches] == SUBJECTS
    assert [p.index for p in s.patches] == [2, 1, 0]
    assert "\nFrom the start, a signed" in s.patches[0].text
    other = make_tree(tmp_path / "other")
    done = apply_series(other, "base", s)
    assert run_git(other, "rev-parse", "HEAD^{tree}") == \
        run_git(tree, "rev-parse", f"{tip}^{{tree}}")
    assert run_git(other, "log", "-1", "--format=%B", commits(done)[0]).startswith(
        "demo: Add demo_umin()\n\ndemo_min() compares its arguments as they are.\nFrom the start")


def test_a_patch_that_does_not_apply_is_a_build_error_and_the_tree_stays_clean(tree, tmp_path):
    d = tmp_path / "bad"
    shutil.copytree(DIR, d)
    bad = d / PATCHES[1].name
    bad.write_text(bad.read_text().replace(" int demo_clamp(int v, int lo, int hi)",
                                           " int demo_clamp(long v, int lo, int hi)"))
    base = run_git(tree, "rev-parse", "base").strip()
    with pytest.raises(KexpandError) as e:
        apply_series(tree, "base", read_series([d]))
    msg = str(e.value)
    assert e.value.klass == "build" and e.value.exit_code == 3
    assert 'patch 2/3 "demo: Split the naïve demo_clamp()"' in msg
    assert str(bad) in msg and "lib/demo.c hunk #1" in msg
    assert run_git(tree, "rev-parse", "HEAD").strip() == base
    assert run_git(tree, "status", "--porcelain", "--ignored") == ""
    assert not (tree / ".git" / "rebase-apply").exists()
    # the next run starts from a clean tree and applies the good series
    assert len(apply_series(tree, "base", read_series([DIR]))) == 3


def test_a_patch_to_a_crlf_file_keeps_its_crs(tmp_path):
    t = tmp_path / "t"
    t.mkdir()
    (t / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    run_git(t, "init", "-q")
    run_git(t, "add", "-A")
    run_git(t, "commit", "-q", "-m", "base")
    (t / "dos.txt").write_bytes(b"one\r\nTWO\r\n")
    run_git(t, "commit", "-q", "-a", "-m", "dos: shout")
    mail = tmp_path / "dos.patch"
    mail.write_text(run_git(t, "format-patch", "-1", "--stdout"))
    want = run_git(t, "rev-parse", "HEAD^{tree}")
    s = read_series([mail])
    assert s.patches[0].keep_cr
    apply_series(t, "HEAD~1", s)
    assert run_git(t, "rev-parse", "HEAD^{tree}") == want


def test_an_unknown_base_is_a_user_error(tree):
    with pytest.raises(KexpandError) as e:
        apply_series(tree, "v9.9", read_series([DIR]))
    assert e.value.klass == "user" and "BASE=v9.9" in str(e.value)
