"""Series points on a fake kernel tarball: manifests, patch headers, tags,
deterministic commits, and a patch that does not apply."""
import subprocess
import tarfile
import io
from pathlib import Path

import pytest

from kbuild import build, gitops, kcmd
from kbuild import series
from kbuild.util import KexpandError

REPO = Path(__file__).resolve().parent.parent
TARBALL = "linux-source-6.1.tar.xz"

MINMAX_V0 = "#define min(x, y) ((x) < (y) ? (x) : (y))\n" + "".join(
    f"/* line {i} */\n" for i in range(2, 30))


def make_tarball(path, files):
    with tarfile.open(path, "w:xz") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"linux-source-6.1/{name}")
            info.size = len(data)
            info.mtime = 1700000000
            t.addfile(info, io.BytesIO(data))


def mail_patch(subject, old, new, date="Mon, 18 Sep 2023 08:16:30 +0000"):
    return (f"From: A Developer <a@example.org>\nDate: {date}\n"
            f"Subject: [PATCH v4 1/5] {subject}\n\nWhy it is needed.\n\n"
            "Signed-off-by: A Developer <a@example.org>\n---\n"
            " include/linux/minmax.h | 2 +-\n\n"
            "diff --git a/include/linux/minmax.h b/include/linux/minmax.h\n"
            "--- a/include/linux/minmax.h\n+++ b/include/linux/minmax.h\n"
            "@@ -1,3 +1,3 @@\n"
            f"-{old}\n+{new}\n /* line 2 */\n /* line 3 */\n-- \n2.17.1\n")


COMMIT_PATCH = """commit e8432ac802a028eaee6b1e86383d7cd8e9fb8431
Repository: torvalds/linux
Author: Linus Torvalds
Date: 2024-07-26

minmax: a fix in the commit-dump format

Body text.

---
 include/linux/minmax.h | 1 +

diff --git a/include/linux/minmax.h b/include/linux/minmax.h
--- a/include/linux/minmax.h
+++ b/include/linux/minmax.h
@@ -27,3 +27,4 @@
 /* line 27 */
 /* line 28 */
 /* line 29 */
+#define MIN_T(t, a, b) min((t)(a), (t)(b))
"""


@pytest.fixture
def fake(tmp_path, monkeypatch):
    tarball = tmp_path / "linux-source-6.1.tar.xz"
    make_tarball(tarball, {
        "Makefile": "VERSION = 6\n", ".gitignore": "/*\n!/debian/\n",
        "include/linux/minmax.h": MINMAX_V0,
    })
    monkeypatch.setattr(series, "package_version", lambda: "6.1.999-1")
    case = tmp_path / "cases" / "fake"
    (case / "patches").mkdir(parents=True)
    (case / "patches" / "0001.patch").write_text(mail_patch(
        "minmax: first", "#define min(x, y) ((x) < (y) ? (x) : (y))",
        "#define min(x, y) __careful_cmp(x, y, <)"))
    (case / "patches" / "0002.patch").write_text(COMMIT_PATCH)
    (case / "patches" / "0003-bad.patch").write_text(mail_patch(
        "minmax: stale context", "#define min(x, y) NOT THERE", "x"))
    (case / "config.fragment").write_text("CONFIG_64BIT=y\n")
    (case / "focus-files").write_text("arch/x86/xen/setup.c   # why\n")
    (case / "series.toml").write_text('''
[[point]]
name = "one"
patches = ["0001.patch"]
[[point]]
name = "two"
patches = ["0002.patch"]
[[point]]
name = "broken"
parent = "one"
control = true
patches = ["0003-bad.patch"]
[[point]]
name = "packaged"
base = true
''')
    return tmp_path


def test_parse_mail_patch():
    m = series.parse_patch(mail_patch("minmax: first", "a", "b"))
    assert m.author == "A Developer <a@example.org>"
    assert m.subject == "minmax: first"
    assert m.date == "2023-09-18T08:16:30+00:00"
    assert m.body.startswith("Why it is needed.")
    assert "diff --git" not in m.body and m.body.endswith("<a@example.org>")


def test_parse_commit_dump():
    m = series.parse_patch(COMMIT_PATCH)
    assert m.author == "Linus Torvalds <>"
    assert m.subject == "minmax: a fix in the commit-dump format"
    assert m.date.startswith("2024-07-26")
    assert "Upstream-commit: e8432ac802a0" in m.body


def test_parse_every_case_patch():
    case = series.load_case("minmax", REPO / "cases")
    for p in case.points:
        for f in p.patches:
            m = series.parse_patch((case.dir / "patches" / f).read_text())
            assert m.subject and m.author and not m.subject.startswith("[")
            # every date was read (it is the author date: it decides the id)
            assert m.date != series.BASE_DATE and m.date[:2] == "20", (f, m.date)


@pytest.mark.parametrize("date", [None, "", "yesterday", "Mon, 32 Foo 2023 99:99:99",
                                  "2024-13", "Mon, 18 Sep 2023 08:16:30"])
def test_a_date_that_cannot_be_read_is_refused(date):
    """An unreadable Date: used to become a fixed date, silently changing
    the commit id; it is refused, naming the header. (A date without a
    time zone is unreadable too: its instant is unknown.)"""
    text = mail_patch("minmax: first", "a", "b")
    text = "\n".join(l for l in text.split("\n") if not l.startswith("Date:"))
    if date is not None:
        text = text.replace("Subject:", f"Date: {date}\nSubject:", 1)
    with pytest.raises(KexpandError, match="Date: header"):
        series.parse_patch(text)


def test_checkout_repairs_what_a_killed_run_left(fake):
    """kill -9 in the middle of a checkout leaves an index.lock and a half
    rewritten work tree; kexpand's mark says it was its own command, so the
    next checkout repairs the tree (a dirty tree without the mark is
    someone else's change, and is refused: the test below)."""
    from kbuild import gitops
    case = series.load_case("fake", fake / "cases")
    commits, _, _ = series.prepare(case, fake / "work", fake / TARBALL)
    tree = fake / "work" / "tree"
    (tree / "include/linux/minmax.h").write_text("half written\n")
    (tree / ".git/index.lock").write_text("")
    (tree / ".git" / gitops.BUSY).write_text("12345 checkout\n")
    series.checkout(tree, commits["one"])
    assert gitops.is_clean(tree) and not (tree / ".git/index.lock").exists()
    assert not gitops.interrupted(tree)
    assert series.git(tree, "rev-parse", "HEAD").stdout.strip() == commits["one"]


def test_minmax_manifest():
    case = series.load_case("minmax", REPO / "cases")
    assert case.names()[:2] == ["pre-6.7", "laight-v4"]
    assert case.names()[-1] == "packaged"
    tf = case.point("torvalds-fixes")
    assert tf.parent == "laight-v4"
    assert case.point("laight-v4-clamp-move").control
    assert ("arch/x86/xen/setup.c" in dict(case.focus)
            and "mm/compaction.c" in dict(case.focus)
            and len(case.focus) >= 8)
    with pytest.raises(KexpandError, match="unknown point 'v6.6'.*pre-6.7"):
        case.point("v6.6")


def test_unknown_case_lists_known():
    with pytest.raises(KexpandError, match="unknown case 'nope'.*minmax"):
        series.load_case("nope", REPO / "cases")


def test_prepare_tags_commits_and_reports_bad_patch(fake):
    case = series.load_case("fake", fake / "cases")
    work = fake / "work"
    commits, failures, version = series.prepare(case, work, fake / TARBALL)
    tree = work / "tree"
    assert version == "6.1.999-1"
    assert set(commits) == {"packaged", "one", "two"}
    # the broken patch is named with its hunk, and nothing else suffers
    assert "0003-bad.patch does not apply at include/linux/minmax.h hunk #1" \
        in failures["broken"]
    assert gitops.is_clean(tree)
    # Debian's '/*' .gitignore did not stop the base commit
    files = subprocess.run(["git", "-C", tree, "ls-files"], capture_output=True,
                           text=True, check=True).stdout.split()
    assert {"Makefile", ".gitignore", "include/linux/minmax.h"} <= set(files)
    show = lambda ref: subprocess.run(  # noqa: E731
        ["git", "-C", tree, "show", f"{ref}:include/linux/minmax.h"],
        capture_output=True, text=True, check=True).stdout
    assert "__careful_cmp" in show("one") and "MIN_T" not in show("one")
    assert "MIN_T" in show("two") and show("packaged") == MINMAX_V0
    log = subprocess.run(["git", "-C", tree, "log", "--format=%an|%s", "two"],
                         capture_output=True, text=True, check=True).stdout
    assert log.splitlines() == ["Linus Torvalds|minmax: a fix in the commit-dump format",
                                "A Developer|minmax: first",
                                "kexpand|linux-source-6.1 6.1.999-1 as packaged"]
    # same inputs, same commit ids: prepare again from scratch
    commits2, _, _ = series.prepare(case, fake / "work2", fake / TARBALL)
    assert commits2 == commits
    # and a second call on the same work dir is a no-op returning the same
    assert series.prepare(case, work, fake / TARBALL)[0] == commits


def test_checkout_refuses_dirty_tree(fake):
    case = series.load_case("fake", fake / "cases")
    commits, _, _ = series.prepare(case, fake / "work", fake / TARBALL)
    tree = fake / "work" / "tree"
    (tree / "include/linux/minmax.h").write_text("local edit\n")
    with pytest.raises(KexpandError, match="uncommitted changes"):
        series.checkout(tree, commits["one"])


def test_missing_tarball_names_package(tmp_path):
    with pytest.raises(KexpandError, match="apt-get install linux-source-6.1"):
        series.unpack_base(tmp_path / "tree", tmp_path / "none.tar.xz")


# --- Kbuild commands ----------------------------------------------------------

def test_compile_command_from_cmd_file(tmp_path):
    b = tmp_path / "kb"
    (b / "arch/x86/xen").mkdir(parents=True)
    (b / "arch/x86/xen/.setup.o.cmd").write_text(
        (Path(__file__).parent / "data/kbuild/setup.o.cmd").read_text())
    argv = kcmd.compile_command(b, "arch/x86/xen/setup.c")
    assert argv[0] == "gcc" and argv[-1] == "../arch/x86/xen/setup.c"
    assert "objtool" not in " ".join(argv)       # the ';' post-step is dropped
    assert "-DKBUILD_MODFILE=\"arch/x86/xen/setup\"" in argv
    pre = kcmd.preprocess_command(argv)
    assert pre[-4:] == ["-E", "-o", "-", "../arch/x86/xen/setup.c"]
    assert "-c" not in pre and not any(a.startswith("-Wp,-MMD") for a in pre)
    assert pre.count("-o") == 1
    with pytest.raises(KexpandError, match="was not compiled"):
        kcmd.compile_command(b, "mm/compaction.c")


def test_fragment_options():
    opts = build.fragment_options(REPO / "cases/minmax/config.fragment")
    assert opts["CONFIG_XEN_PV"] == "y" and opts["CONFIG_COMPACTION"] == "y"
    assert opts["CONFIG_HUGETLB_PAGE"] == "y"


def test_unknown_compiler():
    with pytest.raises(KexpandError, match="unknown compiler 'icc'"):
        build.make_args("icc")


def test_gcc_builds_name_nm_a_plugin_that_lists_the_same_symbols(tmp_path):
    """NM= for gcc names binutils' own LTO plugin (so that nm does not load
    every plugin in /usr/lib/bfd-plugins per object); the symbols it lists
    of a real object are plain nm's. clang's builds keep LLVM=1's llvm-nm."""
    [nm] = [a for a in build.make_args("gcc") if a.startswith("NM=")]
    argv = nm[3:].split()
    assert argv[:2] == ["nm", "--plugin"] and Path(argv[2]).is_file()
    (tmp_path / "a.c").write_text("int kx_a(void) { return 1; }\nstatic int b;\n"
                                  "int *kx_c(void) { return &b; }\n")
    subprocess.run(["gcc", "-c", "-o", tmp_path / "a.o", tmp_path / "a.c"], check=True)
    listed = [subprocess.run([*a, "--", tmp_path / "a.o"], capture_output=True, text=True,
                             check=True).stdout for a in (argv, ["nm"])]
    assert listed[0] == listed[1] and "T kx_a" in listed[0]
    assert not any(a.startswith("NM=") for a in build.make_args("clang"))


def test_kernel_must_be_a_kernel_git_tree(tmp_path):
    from kbuild import trees
    with pytest.raises(KexpandError, match="no such directory"):
        trees.check_user_tree(tmp_path / "none")
    with pytest.raises(KexpandError, match="is not a git tree"):
        trees.check_user_tree(tmp_path)
    subprocess.run(["git", "init", "-q", tmp_path], check=True)
    (tmp_path / "README").write_text("x\n")
    subprocess.run(["git", "-C", tmp_path, "add", "README"], check=True)
    subprocess.run(["git", "-C", tmp_path, "-c", "user.name=t", "-c",
                    "user.email=t@t", "commit", "-qm", "x"], check=True)
    with pytest.raises(KexpandError, match="not a Linux kernel tree"):
        trees.check_user_tree(tmp_path)
    with pytest.raises(KexpandError, match="unknown ref 'v9.9'"):
        trees.resolve(tmp_path, "v9.9")


def test_threshold_parsing():
    from bench.cmd.bisection import threshold_bytes
    from kbuild.settings import parse_threshold
    assert threshold_bytes(parse_threshold("20MB"), 1, 2) == 20_000_000
    assert threshold_bytes(parse_threshold("2x"), 4_000_000, 9_000_000) == 8_000_000
    assert threshold_bytes(parse_threshold("12345"), 1, 2) == 12345
    assert threshold_bytes(None, 100, 400) == 200       # geometric mean
    for bad in ("lots", "infx", "nan", "-5", "0", "1e999", "", "2xx", "5 MB MB"):
        with pytest.raises(KexpandError, match="THRESHOLD="):
            parse_threshold(bad)


def test_build_progress_learns_from_real_builds_only(tmp_path):
    """A build with nothing to do (3 steps) must not teach the next real
    build of the same config to expect 3 steps."""
    counts = tmp_path / "build-steps.json"

    def run(n):
        p = build.BuildProgress(counts, "tinyconfig gcc bzImage", "x")
        for _ in range(n):
            p.line("  CC      mm/x.o\n")
        p.done(True)
        return p.expected
    assert run(750) is None
    assert run(3) == 750
    assert run(600) == 750
    assert build.BuildProgress(counts, "tinyconfig gcc bzImage", "x").expected == 600
