"""Real mail as a list sends it (issue 30, section 4): the seeds' v4
series (cover letter and patches 1/5..5/5) rebuilt with Python's email
package the way lore, b4, mail clients and robots deliver it, read by
kbuild.mbox and applied with real `git am` in a tiny tree holding the
minmax.h the seeds apply to (the case's pre-6.7 point: the packaged 6.1
tree's file, read from Debian's tarball, with cases/minmax/patches/0001). Every form must give the tree the plain seed files give.
The PATCHES= type and size checks are in test_mailfile.py."""
import gzip
import lzma
import re
import shutil
import subprocess
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path

import pytest

from bench.cmd.check import declared_base, say_skipped
from kbuild.mbox import REPLY, apply_series, read_series
from kbuild.util import KexpandError
from test_mbox import SEED_SUBJECTS, SEEDS, run_git, seed_patches

REPO = Path(__file__).resolve().parent.parent
TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
PRE67 = REPO / "cases/minmax/patches/0001-pre-6.7-reconstruct-v6.6-minmax.patch"
LF = policy.default.clone(linesep="\n")
MBOXRD = b"From mboxrd@z Thu Jan  1 00:00:00 1970\n"
COVER_SUBJECT = "minmax: Relax type checks in min() and max()."
INTERDIFF = """
Interdiff against v3:
diff --git a/include/linux/minmax.h b/include/linux/minmax.h
--- a/include/linux/minmax.h
+++ b/include/linux/minmax.h
@@ -74,7 +74,7 @@
-#define min_unsigned(x, y)	\\
+#define umin(x, y)	\\
"""


def seed_cover():
    f = SEEDS / "001-cover-minmax-relax-type-checks-in-min-and-max.txt"
    if f.is_file():
        return f.read_bytes()
    return ("From: David Laight <David.Laight@ACULAB.COM>\nDate: Mon, 18 Sep 2023 08:14:40 "
            f"+0000\nSubject: [PATCH next v4 0/5] {COVER_SUBJECT}\n\nThe min() (etc) "
            "functions in minmax.h require that the arguments have\nexactly the same "
            "types.\n").encode()


def msgid(n, version=4):
    return f"<v{version}-{n}.minmax@aculab.com>"


def rebuild(raw, n, cte="8bit", subject=None, version=4, body=None, **headers):
    """Seed mail `raw` as a new EmailMessage: its From, Date and Subject, a
    Message-ID, threaded under the cover letter (n: 0..5) as git
    send-email threads a series, its body in `cte`."""
    seed = BytesParser(policy=policy.default).parsebytes(raw)
    m = EmailMessage()
    m["From"], m["Date"] = str(seed["From"]), str(seed["Date"])
    m["Subject"] = subject or str(seed["Subject"])
    m["Message-ID"] = headers.pop("message_id", msgid(n, version))
    if n:
        m["In-Reply-To"] = m["References"] = msgid(0, version)
    for k, v in headers.items():
        m[k.replace("_", "-")] = v
    m.set_content(seed.get_content() if body is None else body, cte=cte)
    return m


def series_mails(cte="8bit", version=4, prefix=None):
    """[cover, 1/5, ..., 5/5] as EmailMessages."""
    raws = [seed_cover()] + [f.read_bytes() for f in seed_patches()]
    out = []
    for n, raw in enumerate(raws):
        subject = None
        if prefix:
            s = str(BytesParser(policy=policy.default).parsebytes(raw)["Subject"])
            subject = re.sub(r"^\[[^\]]*\]", f"[{prefix} {n}/5]", s)
        out.append(rebuild(raw, n, cte, subject, version))
    return out


def mboxrd(mails):
    """A thread mbox as lore writes it (t.mbox): mboxrd quoting."""
    return b"".join(MBOXRD + re.sub(rb"(?m)^(>*From )", rb">\1", m.as_bytes(policy=LF))
                    + b"\n" for m in mails)


def write(path, data):
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def minmax(tmp_path_factory):
    """include/linux/minmax.h at the case's pre-6.7 point: the packaged
    tree's file (linux-source-6.1, which make test installs) with the
    case's first patch; never a copy of the kernel in this repository."""
    d = tmp_path_factory.mktemp("pre67")
    h = d / "include" / "linux" / "minmax.h"
    h.parent.mkdir(parents=True)
    with open(h, "wb") as f:
        subprocess.run(["tar", "-xJf", TARBALL, "--wildcards", "-O",
                        "*/include/linux/minmax.h"], stdout=f, check=True)
    subprocess.run(["git", "apply", "--include=include/linux/minmax.h", PRE67],
                   cwd=d, check=True)
    return h


def make_minmax_tree(path, minmax):
    (path / "include" / "linux").mkdir(parents=True)
    shutil.copy(minmax, path / "include" / "linux" / "minmax.h")
    run_git(path, "init", "-q")
    run_git(path, "add", "-A")
    run_git(path, "commit", "-q", "-m", "minmax: the pre-6.7 point")
    run_git(path, "tag", "base")
    return path


@pytest.fixture
def tree(tmp_path, minmax):
    return make_minmax_tree(tmp_path / "tree", minmax)


@pytest.fixture(scope="module")
def want(tmp_path_factory, minmax):
    """The tree and commits the plain seed files give."""
    t = make_minmax_tree(tmp_path_factory.mktemp("ref") / "tree", minmax)
    done = apply_series(t, "base", read_series(seed_patches()))
    return run_git(t, "rev-parse", "HEAD^{tree}").strip(), [c for _, c in done]


def tree_of(tree, series):
    apply_series(tree, "base", series)
    return run_git(tree, "rev-parse", "HEAD^{tree}").strip()


def numbers(series):
    return [p.prefix.number for p in series.patches]


# --- 1. compressed threads ---------------------------------------------------------

def zstd(data):
    return subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True,
                          check=True).stdout


@pytest.mark.parametrize("kind", ["gz", "xz", "zst"])
def test_a_compressed_thread_reads_as_lore_sends_it(kind, tree, want, tmp_path):
    """lore's t.mbox.gz: the patches quoted-printable, out of order."""
    cover, *patches = series_mails(cte="quoted-printable")
    thread = mboxrd([cover, patches[3], patches[0], patches[4], patches[2], patches[1]])
    assert b"=\n" in thread or b"=09" in thread         # really quoted-printable
    pack = {"gz": gzip.compress, "xz": lzma.compress, "zst": zstd}[kind]
    f = write(tmp_path / f"t.mbox.{kind}", pack(thread))
    s = read_series([f])
    assert [p.subject for p in s.patches] == SEED_SUBJECTS and numbers(s) == [1, 2, 3, 4, 5]
    assert s.cover.subject == COVER_SUBJECT and s.version == 4
    assert tree_of(tree, s) == want[0]
    # listed inside a directory too, beside a plain patch file it leaves alone
    d = tmp_path / "inbox"
    d.mkdir()
    shutil.move(f, d / f.name)
    write(d / "notes.txt", b"not a patch\n")
    assert [p.subject for p in read_series([d]).patches] == SEED_SUBJECTS


def test_a_damaged_gz_is_named(tmp_path):
    f = write(tmp_path / "t.mbox.gz", gzip.compress(mboxrd(series_mails()))[:-40])
    with pytest.raises(KexpandError) as e:
        read_series([f])
    assert e.value.exit_code == 2 and f"{f}: a gzip file that cannot be decompressed" \
        in str(e.value) and "fetch it again" in str(e.value)


# --- 2. base-commit: ---------------------------------------------------------------

def test_base_commit_is_the_base_without_base(tree, want, tmp_path, capsys):
    """git format-patch --base=auto on a topic branch; upstream then moves on,
    so that the series no longer applies to HEAD."""
    run_git(tree, "checkout", "-q", "-b", "main")
    base = run_git(tree, "rev-parse", "HEAD").strip()
    run_git(tree, "checkout", "-q", "-b", "topic")
    run_git(tree, "branch", "-q", "-u", "main")
    for f in seed_patches():
        run_git(tree, "am", "-q", str(f))
    out = run_git(tree, "format-patch", "--base=auto", "--cover-letter", "--stdout", "main")
    assert f"\nbase-commit: {base}\n" in out
    run_git(tree, "checkout", "-q", "main")
    h = tree / "include" / "linux" / "minmax.h"
    h.write_text(h.read_text().replace("#define max(x, y)\t__careful_cmp(x, y, >)",
                                       "#define max(x, y)\t__careful_cmp(y, x, <)"))
    run_git(tree, "commit", "-q", "-a", "-m", "minmax: upstream moves on")
    head = run_git(tree, "rev-parse", "HEAD").strip()
    s = read_series([write(tmp_path / "v4.mbox", out.encode())])
    assert s.base_commit == base and numbers(s) == [1, 2, 3, 4, 5]
    # make check without BASE=: the declared base, and the log says so
    assert declared_base(tree, s.base_commit, "HEAD", head) == (base, base)
    assert f"BASE= not given: the series' base-commit: {base} is the base" in \
        capsys.readouterr().err
    apply_series(tree, base, s)
    assert run_git(tree, "rev-parse", "HEAD^{tree}").strip() == want[0]
    # on HEAD it does not apply, and the error names the declared base
    with pytest.raises(KexpandError) as e:
        apply_series(tree, "main", s)
    assert e.value.exit_code == 3 and "does not apply to main" in str(e.value)
    assert f"The series declares base-commit: {base}; give BASE={base}" in str(e.value)
    # a base the tree does not have: HEAD, said so, and named on failure
    gone = "1234567890abcdef1234567890abcdef12345678"
    s = read_series([write(tmp_path / "v4b.mbox", out.replace(base, gone).encode())])
    assert declared_base(tree, s.base_commit, "HEAD", head) == ("HEAD", head)
    assert f"declares base-commit: {gone}, which {tree} does not have" in \
        capsys.readouterr().err
    with pytest.raises(KexpandError) as e:
        apply_series(tree, "main", s)
    assert f"base-commit: {gone}, which {tree} does not have" in str(e.value)


# --- 3. the same mail twice ----------------------------------------------------------

def test_a_cross_posted_mail_counts_once(tree, want, tmp_path):
    mails = series_mails()
    again = rebuild(seed_patches()[3].read_bytes(), 4, List_Id="<linux-mm.kvack.org>")
    f = write(tmp_path / "t.mbox", mboxrd(mails + [again]))
    s = read_series([f])
    assert numbers(s) == [1, 2, 3, 4, 5]
    (dup, why), = s.skipped
    assert dup.where == f"{f} (mail 7)" and why == \
        f"the same mail (Message-ID <{msgid(4)[1:-1]}>) as {f} (mail 5)"
    assert tree_of(tree, s) == want[0]
    # two lists' copies of the whole thread, each its own file
    g = write(tmp_path / "t2.mbox", mboxrd(series_mails()))
    assert numbers(read_series([f, g])) == [1, 2, 3, 4, 5]


# --- 4. a cover letter with an interdiff ---------------------------------------------

def test_a_cover_letter_with_an_interdiff_stays_the_cover(tree, want, tmp_path):
    cover, *patches = series_mails()
    body = cover.get_content() + INTERDIFF
    cover = rebuild(seed_cover(), 0, body=body)
    s = read_series([write(tmp_path / "t.mbox", mboxrd([cover] + patches))])
    assert s.cover.subject == COVER_SUBJECT and "Interdiff against v3" in s.cover.text
    assert numbers(s) == [1, 2, 3, 4, 5] and len(s.patches) == 5
    assert tree_of(tree, s) == want[0]


# --- 5. mails of the thread that are not parts of the series -------------------------

def reply(to, n, subject, body, sender="Kees Cook <kees@kernel.org>", **headers):
    m = EmailMessage()
    m["From"], m["Date"] = sender, "Mon, 18 Sep 2023 10:00:00 +0000"
    m["Subject"], m["Message-ID"] = subject, f"<reply-{n}@example.org>"
    m["In-Reply-To"] = m["References"] = to["Message-ID"]
    for k, v in headers.items():
        m[k.replace("_", "-")] = v
    m.set_content(body)
    return m


def test_replies_forwards_and_a_robots_fix_are_skipped_and_listed(tree, want, tmp_path,
                                                                   capsys):
    cover, *patches = series_mails()
    quoted = "".join(f"> {l}\n" for l in patches[1].get_content().splitlines())
    diff = patches[1].get_content().partition("\n---\n")[2]
    robot = reply(patches[1], 1, "[PATCH] minmax: fix spdx.cocci warnings",
                  "include/linux/minmax.h:1:1-2: WARNING: SPDX\n\nSigned-off-by: kernel "
                  f"test robot <lkp@intel.com>\n---\n{diff}",
                  sender="kernel test robot <lkp@intel.com>")
    others = [reply(patches[1], 2, "Re: " + str(patches[1]["Subject"]), quoted + "\nOK.\n"),
              reply(patches[2], 3, "[EXTERNAL] Re: " + str(patches[2]["Subject"]),
                    quoted + "\nTry this:\n---\n" + diff),
              reply(patches[3], 4, "回复: " + str(patches[3]["Subject"]), quoted),
              reply(patches[2], 5, "Fwd: " + str(patches[2]["Subject"]),
                    patches[2].get_content())]
    f = write(tmp_path / "t.mbox", mboxrd([cover, patches[0], patches[1], robot,
                                           *patches[2:], *others]))
    s = read_series([f])
    assert numbers(s) == [1, 2, 3, 4, 5] and s.cover.subject == COVER_SUBJECT
    assert [(m.where, f"{m.prefix.text} {m.subject}".strip(), why.split(":")[0])
            for m, why in s.skipped] == [
        (f"{f} (mail 4)", str(robot["Subject"]), "not a numbered part of the series")] + [
        (f"{f} (mail {n})", str(m["Subject"]), "a reply or a forward")
        for n, m in zip((8, 9, 10, 11), others)]
    say_skipped(s)
    assert capsys.readouterr().err.splitlines()[:2] == [
        f'kexpand: skipped {f} (mail 4): "[PATCH] minmax: fix spdx.cocci warnings" (not a '
        f"numbered part of the series: a patch sent in reply to {f} (mail 3))",
        f'kexpand: skipped {f} (mail 8): "{others[0]["Subject"]}" (a reply or a forward)']
    assert tree_of(tree, s) == want[0]
    # a [PATCH] sent in reply to a discussion is a patch: alone, a series of
    # one; given beside the series, one more patch (it answers none of its mails)
    talk = EmailMessage()
    talk["Message-ID"] = "<discussion@example.org>"
    one = write(tmp_path / "one.eml", reply(talk, 6, str(robot["Subject"]),
                                            robot.get_content()).as_bytes(policy=LF))
    s = read_series([one])
    assert len(s.patches) == 1 and not s.skipped
    s = read_series([write(tmp_path / "v4.mbox", mboxrd([cover, *patches])), one])
    assert numbers(s) == [1, 2, 3, 4, 5, None] and not s.skipped


# --- 6. a patch as an attachment -----------------------------------------------------

def test_a_patch_attached_as_octet_stream_is_read(tree, want, tmp_path, minmax):
    """A mail client's attachment: the message inline, the patch as
    application/octet-stream (base64), as git am reads it."""
    cover, *patches = series_mails()
    text = patches[2].get_content()
    message, _, patch = text.partition("\n---\n")
    m = rebuild(seed_patches()[2].read_bytes(), 3, body=message + "\n")
    m.add_attachment(("---\n" + patch).encode(), maintype="application",
                     subtype="octet-stream", filename="0003-minmax-fix-indentation.patch")
    patches[2] = m
    raw = m.as_bytes(policy=LF)
    assert b"application/octet-stream" in raw and b"diff --git" not in raw      # base64
    f = write(tmp_path / "t.mbox", mboxrd([cover, *patches]))
    s = read_series([f])
    assert numbers(s) == [1, 2, 3, 4, 5] and "diff --git" in s.patches[2].text
    assert tree_of(tree, s) == want[0]
    # plain git am reads it the same way
    other = make_minmax_tree(tmp_path / "other", minmax)
    run_git(other, "am", "-q", "--patch-format=mboxrd",
            str(write(tmp_path / "series.mbox", mboxrd(patches))))
    assert run_git(other, "rev-parse", "HEAD^{tree}").strip() == want[0]


# --- 7. [PATCHv4 n/m] ------------------------------------------------------------------

def test_patchv4_is_version_4(tree, want, tmp_path):
    f = write(tmp_path / "t.mbox", mboxrd(series_mails(prefix="PATCHv4")))
    s = read_series([f])
    assert s.version == 4 and numbers(s) == [1, 2, 3, 4, 5]
    assert s.patches[1].prefix.text == "[PATCHv4 2/5]"
    assert s.slug == "minmax-relax-type-checks-in-min-and-max-v4"
    assert tree_of(tree, s) == want[0]


def test_a_thread_of_patchv3_and_patchv4_mixes_versions(tmp_path):
    v3 = series_mails(version=3, prefix="PATCHv3")
    f = write(tmp_path / "t.mbox", mboxrd(v3 + series_mails(prefix="PATCHv4")))
    with pytest.raises(KexpandError) as e:
        read_series([f])
    msg = str(e.value)
    assert e.value.exit_code == 2 and "mix versions v3 and v4" in msg, msg
    assert f"[PATCHv3 1/5] in {f} (mail 2)" in msg and "comes twice" not in msg


@pytest.mark.parametrize("subject,reply", [
    ("Re: [PATCH next v4 2/5] x", True), ("[EXTERNAL] Re: [PATCH 2/5] x", True),
    ("回复: [PATCH 2/5] x", True), ("AW: [PATCH 2/5] x", True), ("RE : x", True),
    ("Fwd: [PATCH 2/5] x", True), ("FW: [PATCH 2/5] x", True), ("转发：[PATCH] x", True),
    ("[PATCH] fw: loader: fix x", False), ("fw: loader: fix x", False),
    ("[PATCH 2/5] re: x", False), ("[PATCH] tr: x", False)])
def test_what_reads_as_a_reply(subject, reply):
    assert bool(REPLY.match(subject)) == reply
