"""The packaged tarball as one commit (kbuild.tarimport): the very commit
that `tar -x` then `git add -A -f` and `git commit` make of it, and a
tarball that is not a source tree refused by name."""
import io
import subprocess
import tarfile

import pytest

from kbuild import gitops, series, tarimport
from kbuild.util import KexpandError

WHO, DATE = "kexpand <kexpand@localhost>", series.BASE_DATE
MESSAGE = "linux-source-6.1 1.0 as packaged\n\nUnpacked unchanged from a test.\n"


def member(t, name, data=b"", kind=tarfile.REGTYPE, mode=0o644, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.mtime = kind, mode, link, 1700000000
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    t.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def tree_tarball(path):
    """What a kernel tarball holds: directories (one empty), a script,
    dot files, a .gitignore that ignores everything, symlinks, a hard
    link, a file with a space, a name that is not UTF-8, binary data, and
    a path given twice (the later one wins, before another file)."""
    with tarfile.open(path, "w:xz") as t:
        member(t, "linux-source-6.1/", kind=tarfile.DIRTYPE, mode=0o755)
        member(t, "linux-source-6.1/.gitignore", b"/*\n.*\n")
        member(t, "linux-source-6.1/Makefile", b"all:\n")
        member(t, "linux-source-6.1/scripts/", kind=tarfile.DIRTYPE, mode=0o755)
        member(t, "linux-source-6.1/scripts/setlocalversion", b"#!/bin/sh\n", mode=0o755)
        member(t, "linux-source-6.1/scripts/.cocciconfig", b"[spatch]\n")
        member(t, "linux-source-6.1/empty/", kind=tarfile.DIRTYPE, mode=0o755)
        member(t, "linux-source-6.1/include/linux/minmax.h", b"#define min(x, y) x\n")
        member(t, "linux-source-6.1/include/dt-bindings", kind=tarfile.SYMTYPE,
               link="../scripts")
        member(t, "linux-source-6.1/dangling", kind=tarfile.SYMTYPE, link="nowhere/at all")
        member(t, "linux-source-6.1/include/linux/same.h", kind=tarfile.LNKTYPE,
               link="linux-source-6.1/include/linux/minmax.h")
        member(t, "linux-source-6.1/Documentation/a name with spaces.rst", b"x\n")
        member(t, "linux-source-6.1/firmware.bin", bytes(range(256)) * 3)
        member(t, "linux-source-6.1/caf\udce9.txt", b"latin-1\n")
        member(t, "linux-source-6.1/Makefile", b"all: again\n")
        member(t, "linux-source-6.1/Kconfig", b"menu\n")


def commit_as_git_add_does(tarball, d):
    """The oracle: the tarball unpacked by tar, committed by git add."""
    d.mkdir()
    subprocess.run(["tar", "-xf", str(tarball), "-C", str(d), "--strip-components=1"],
                   check=True)
    gitops.git(d, "init", "-q")
    gitops.git(d, "add", "-A", "-f", ".")
    gitops.git(d, "commit", "-q", "-m", MESSAGE.split("\n\n")[0], "-m",
               MESSAGE.split("\n\n")[1].rstrip("\n"), env=series.git_env(WHO, DATE))
    return gitops.git(d, "rev-parse", "HEAD").stdout.strip()


def imported(tarball, d):
    d.mkdir()
    gitops.git(d, "init", "-q")
    return tarimport.commit_tarball(d, tarball, MESSAGE, WHO, DATE)


def test_the_commit_is_the_one_git_add_makes_and_is_checked_out(tmp_path):
    tarball = tmp_path / "t.tar.xz"
    tree_tarball(tarball)
    want = commit_as_git_add_does(tarball, tmp_path / "oracle")
    got = imported(tarball, tmp_path / "tree")
    assert got == want
    tree = tmp_path / "tree"
    assert gitops.git(tree, "status", "--porcelain", "--ignored").stdout == ""
    assert (tree / "scripts/setlocalversion").stat().st_mode & 0o100
    assert not (tree / "Makefile").stat().st_mode & 0o100
    assert (tree / "include/dt-bindings").readlink().as_posix() == "../scripts"
    assert (tree / "include/linux/same.h").read_bytes() == b"#define min(x, y) x\n"
    assert (tree / "firmware.bin").read_bytes() == bytes(range(256)) * 3
    assert (tree / "Makefile").read_bytes() == b"all: again\n"
    assert (tree / "Kconfig").read_bytes() == b"menu\n"
    assert gitops.git(tree, "ls-files", "-z").stdout.count("\0") == 12


@pytest.mark.parametrize("name, kind, link, says", [
    ("linux-source-6.1/../../etc/passwd", tarfile.REGTYPE, "", "outside the tree"),
    ("/etc/passwd", tarfile.REGTYPE, "", "outside the tree"),
    ("linux-source-6.1/dev/null", tarfile.CHRTYPE, "", "neither a file"),
    ("linux-source-6.1/fifo", tarfile.FIFOTYPE, "", "neither a file"),
    ("linux-source-6.1/a", tarfile.LNKTYPE, "linux-source-6.1/later", "comes nowhere before"),
    ('linux-source-6.1/"quoted', tarfile.REGTYPE, "", "quoted"),
    ("linux-source-6.1/sub/.git/config", tarfile.REGTYPE, "", "inside a .git"),
])
def test_a_member_that_is_not_source_is_refused_by_name(tmp_path, name, kind, link, says):
    tarball = tmp_path / "t.tar.xz"
    with tarfile.open(tarball, "w:xz") as t:
        member(t, "linux-source-6.1/Makefile", b"all:\n")
        member(t, name, kind=kind, link=link)
    with pytest.raises(KexpandError, match=says) as e:
        imported(tarball, tmp_path / "tree")
    assert name.rsplit("/", 1)[-1] in str(e.value)
    assert gitops.git(tmp_path / "tree", "rev-parse", "-q", "--verify", "HEAD",
                      check=False).returncode != 0


def test_a_truncated_tarball_says_so(tmp_path):
    tarball = tmp_path / "t.tar.xz"
    tree_tarball(tarball)
    tarball.write_bytes(tarball.read_bytes()[:300])
    with pytest.raises(KexpandError, match="not a readable tarball"):
        imported(tarball, tmp_path / "tree")
