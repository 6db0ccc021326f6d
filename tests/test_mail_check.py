"""make check without BASE= on the fake tree (tests/fakelinux): the
series' base-commit: is its base when the tree has it, and the log says
so; when the tree does not have it, the series goes on the default base
and a failure to apply names the declared base. Each series stops at a
patch that does not apply, so that no build runs."""
import os
import subprocess

from test_check import COMMENT_DIFF, ONCE_DIFF, check, series_mbox
from test_faults import fake  # noqa: F401
from test_hostile import code, errors, out

GONE = "1234567890abcdef1234567890abcdef12345678"


def declaring(path, commit):
    stale = ONCE_DIFF.replace("#define _LINUX_MINMAX_H\n", "#define NOT_THERE\n")
    series_mbox(path, [("kernel.h: a comment", COMMENT_DIFF), ("minmax: stale", stale)])
    path.write_text(path.read_text().replace("The series.\n", f"The series.\n\nbase-commit: "
                                             f"{commit}\n", 1))
    return path


def test_make_check_takes_the_declared_base(fake, tmp_path):  # noqa: F811
    base, env = fake
    p = check(env, PATCHES=declaring(tmp_path / "gone.mbox", GONE))
    assert code(p) == 3, out(p)
    assert f"the series declares base-commit: {GONE}, which " in p.stderr, out(p)
    assert "it is applied on packaged (give BASE= to choose the base)" in p.stderr, out(p)
    assert 'patch 2/2 "minmax: stale"' in errors(p), out(p)
    assert f"\nThe series declares base-commit: {GONE}, which " in p.stderr, out(p)
    after = subprocess.run(["git", "-C", base / "work" / "tree", "rev-parse", "after"],
                           capture_output=True, text=True, check=True).stdout.strip()
    p = check(env, PATCHES=declaring(tmp_path / "after.mbox", after))
    assert code(p) == 3, out(p)
    assert f"BASE= not given: the series' base-commit: {after} is the base" in p.stderr
    assert f"does not apply to {after}" in errors(p), out(p)
    assert "The series declares" not in p.stderr, out(p)


def test_make_check_refuses_a_device_and_a_fifo_at_once(fake, tmp_path):  # noqa: F811
    base, env = fake
    fifo = tmp_path / "t.mbox"
    os.mkfifo(fifo)
    for path, what in (("/dev/zero", "a character device"), (fifo, "a FIFO (named pipe)")):
        p = check(env, PATCHES=path)
        assert code(p) == 2 and errors(p) == (
            f"kexpand: error: {path} is {what}; PATCHES= takes regular files (mbox files, "
            "patch files) and directories of them"), out(p)
        assert "Traceback" not in p.stderr
    assert not (base / "work").exists()
