"""make's view of a shared source tree across checkouts (kbuild.mtimes):
a build dir stays up to date when the tree leaves its commit and comes
back, and a build dir copied from another commit's is never taken as up
to date. Real git and real make on a three-commit tree."""
import json
import os
import subprocess
import time

import pytest

from kbuild import build, builddir, gitops, mtimes, series

RULE = "o: ../h.h ../c.c\n\tcat ../h.h ../c.c > o\n"


def git(tree, *args):
    return subprocess.run(["git", "-C", str(tree), *args], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "tree"
    t.mkdir()
    git(t, "init", "-q")
    git(t, "config", "user.email", "t@example.org")
    git(t, "config", "user.name", "t")
    (t / "c.c").write_text('#include "h.h"\n')
    commits = []
    for v in ("1", "2", "3"):
        (t / "h.h").write_text(f"#define V {v}\n")
        git(t, "add", "-A")
        git(t, "commit", "-q", "-m", v)
        commits.append(git(t, "rev-parse", "HEAD"))
    return t, commits


def bdir_of(tree, commit):
    return build.build_dir(tree, commit, "gcc")


def make(bdir, question=False):
    """Build `o` in bdir (question: only ask; True when up to date)."""
    time.sleep(0.02)                 # distinct times without trusting ns
    p = subprocess.run(["make", "-s", "-C", str(bdir)] + (["-q"] if question else []),
                       capture_output=True, text=True)
    return p.returncode == 0


def new_bdir(tree, commit):
    b = bdir_of(tree, commit)
    b.mkdir()
    (b / "Makefile").write_text(RULE)
    return b


def test_return_to_a_commit_keeps_its_build_dir_up_to_date(tree):
    t, (a, b, _) = tree
    series.checkout(t, a)
    ba = new_bdir(t, a)
    assert make(ba) and make(ba, question=True)
    series.checkout(t, b)
    bb = new_bdir(t, b)
    assert make(bb)
    assert not make(ba, question=True)           # at b, a's dir is out of date
    series.checkout(t, a)
    assert make(ba, question=True), "back at a, its build dir was up to date"
    assert (ba / "o").read_text().startswith("#define V 1")
    series.checkout(t, b)
    assert make(bb, question=True)
    assert gitops.is_clean(t)


def test_without_kept_times_make_would_rebuild(tree):
    """The failure the module exists for, shown with a plain checkout."""
    t, (a, b, _) = tree
    series.checkout(t, a)
    ba = new_bdir(t, a)
    assert make(ba)
    time.sleep(0.02)
    git(t, "checkout", "-q", "--detach", b)
    git(t, "checkout", "-q", "--detach", a)
    assert not make(ba, question=True)


def test_a_changed_file_is_newer_after_the_checkout(tree):
    """First visit: the files that differ get the checkout's time, after
    every object built before it."""
    t, (a, b, _) = tree
    series.checkout(t, a)
    ba = new_bdir(t, a)
    assert make(ba)
    time.sleep(0.02)
    series.checkout(t, b)
    assert os.stat(t / "h.h").st_mtime_ns > os.stat(ba / "o").st_mtime_ns


def test_seeded_build_dir_is_rebuilt_even_with_old_kept_times(tree):
    """c was visited before b's dir was built, so c's kept time of h.h is
    older than b's object; a dir for c copied from b's must still rebuild
    (else it would keep b's object: wrong bytes)."""
    t, (a, b, c) = tree
    series.checkout(t, c)                        # first visit of c
    series.checkout(t, b)
    bb = new_bdir(t, b)
    for f in (".kexpand-config", "include/generated/autoconf.h"):
        (bb / f).parent.mkdir(parents=True, exist_ok=True)
        (bb / f).write_text("tinyconfig\n")
    assert make(bb)
    series.checkout(t, c)                        # h.h gets its old time back
    assert os.stat(t / "h.h").st_mtime_ns < os.stat(bb / "o").st_mtime_ns
    bc = bdir_of(t, c)
    assert builddir.seed(t, bc, "gcc", "tinyconfig") == bb.name
    assert not make(bc, question=True)
    assert make(bc) and (bc / "o").read_text().startswith("#define V 3")


def test_seed_from_an_unknown_commit_is_refused(tree):
    t, (a, *_) = tree
    series.checkout(t, a)
    other = t / "kb-0123456789ab-gcc"
    (other / "include/generated").mkdir(parents=True)
    (other / ".kexpand-config").write_text("tinyconfig\n")
    (other / "include/generated/autoconf.h").write_text("")
    assert builddir.seed(t, bdir_of(t, a), "gcc", "tinyconfig") is None
    assert not bdir_of(t, a).exists()


def test_the_store_keeps_the_most_recent_contents(tree, monkeypatch):
    """Times are kept per (path, content): the most recent KEEP of them."""
    t, (a, b, c) = tree
    monkeypatch.setattr(mtimes, "KEEP", 2)
    blob = {x: git(t, "rev-parse", f"{x}:h.h") for x in (a, b, c)}
    for x in (a, b, c, a):
        series.checkout(t, x)
    store = json.loads((t / ".git" / mtimes.STORE).read_text())
    assert list(store["blobs"]) == [f"h.h\0{blob[b]}", f"h.h\0{blob[c]}"]
    (t / ".git" / mtimes.STORE).write_text("{not json")
    series.checkout(t, b)                       # a corrupt store is started afresh
    assert list(json.loads((t / ".git" / mtimes.STORE).read_text())["blobs"]) == \
        [f"h.h\0{blob[a]}"]


def test_content_seen_at_another_commit_keeps_its_time(tree):
    """A new commit whose file holds content the tree held before (a
    second series on the same base, after a first one changed the file)
    gives that file the time it had then: a dir made with that content is
    up to date."""
    t, (a, b, _) = tree
    series.checkout(t, a)
    ba = new_bdir(t, a)
    assert make(ba) and make(ba, question=True)
    series.checkout(t, b)                       # h.h changes
    git(t, "checkout", "-q", "--detach", a)     # a commit of a's content, new to the store:
    (t / "c.c").write_text('#include "h.h"\n/* a comment */\n')
    git(t, "commit", "-q", "-am", "comment")
    d = git(t, "rev-parse", "HEAD")
    git(t, "checkout", "-q", "--detach", b)
    series.checkout(t, d)
    assert os.stat(t / "h.h").st_mtime_ns < os.stat(ba / "o").st_mtime_ns
    assert os.stat(t / "c.c").st_mtime_ns > os.stat(ba / "o").st_mtime_ns


def mail(n, old, new):
    return ("From: A <a@example.org>\nDate: Mon, 2 Dec 2024 10:00:00 +0000\n"
            f"Subject: [PATCH {n}/2] h: {new}\n\nWhy.\n---\ndiff --git a/h.h b/h.h\n"
            f"--- a/h.h\n+++ b/h.h\n@@ -1 +1 @@\n-#define V {old}\n+#define V {new}\n")


@pytest.mark.parametrize("applies", [True, False])
def test_a_series_applied_by_git_am_leaves_the_base_dir_up_to_date(tree, applies):
    """git am writes the files a posted series changes (and git reset
    writes them back when a later patch does not apply): back at the
    base, its dir is up to date, as after a checkout; the tip's files
    are newer."""
    from kbuild import mbox
    t, (a, b, _) = tree
    series.checkout(t, a)
    ba = new_bdir(t, a)
    assert make(ba) and make(ba, question=True)
    (t.parent / "p.mbox").write_text(
        "From x Mon Sep 17 00:00:00 2001\n" + mail(1, 1, 4) + "\n"
        "From x Mon Sep 17 00:00:00 2001\n" + mail(2, 4 if applies else 9, 5))
    s = mbox.read_series([t.parent / "p.mbox"])
    time.sleep(0.02)
    if applies:
        [_, (_, tip)] = mbox.apply_series(t, a, s)
        assert os.stat(t / "h.h").st_mtime_ns > os.stat(ba / "o").st_mtime_ns
        series.checkout(t, a)
    else:
        with pytest.raises(Exception, match="does not apply"):
            mbox.apply_series(t, a, s)
    assert git(t, "rev-parse", "HEAD") == a and gitops.is_clean(t)
    assert make(ba, question=True), "back at the base, its dir is up to date"
