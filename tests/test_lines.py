"""Matching source lines of A and B through their diff (bench/lines.py)."""
import subprocess

from bench.measure import changed_lines as lines


def test_b_to_a_shifts_and_pairs():
    # A: 10 lines. B: 2 lines inserted after A's line 2, line 6 changed,
    # A's line 9 deleted.
    hunks = [(2, 0, 3, 2), (6, 1, 8, 1), (9, 1, 10, 0)]
    m = {b: lines.b_to_a(hunks, b) for b in range(1, 12)}
    assert m[1] == 1 and m[2] == 2                 # before any change
    assert m[3] is None and m[4] is None           # added in B
    assert m[5] == 3 and m[7] == 5                 # shifted by 2
    assert m[8] == 6                               # changed: paired with A's 6
    assert m[9] == 7 and m[10] == 8                # shifted
    assert m[11] == 10                             # after A's deleted line 9
    assert lines.b_to_a([], 7) == 7


def test_diff_hunks_on_a_real_repository(tmp_path):
    g = lambda *a: subprocess.run(["git", "-C", tmp_path, "-c", "user.name=t",  # noqa: E731
                                   "-c", "user.email=t@t", *a], check=True,
                                  capture_output=True, text=True).stdout
    g("init", "-q")
    f = tmp_path / "x.c"
    f.write_text("".join(f"line {i}\n" for i in range(1, 11)))
    g("add", "x.c")
    g("commit", "-qm", "a")
    text = f.read_text().splitlines()
    text[5] = "line 6 changed"
    del text[8]
    text[2:2] = ["new a", "new b"]
    f.write_text("\n".join(text) + "\n")
    g("commit", "-qam", "b")
    hunks = lines.diff_hunks(tmp_path, "HEAD~1", "HEAD")
    assert set(hunks) == {"x.c"}
    b_lines = f.read_text().splitlines()
    for i, t in enumerate(b_lines, 1):
        a = lines.b_to_a(hunks["x.c"], i)
        if t.startswith("new"):
            assert a is None
        else:
            assert a == int(t.split()[1]), (i, t)
            assert lines._a_to_b(hunks["x.c"], a) == i


def test_every_file_at_a_then_every_file_at_b(monkeypatch):
    """The per-line bytes of all files at A, then all at B: the tree is
    checked out once per side, not twice per file (500 files took 1,000
    checkouts). Each uncached per_line_bytes checks out its commit."""
    head, checkouts = ["A"], []

    def fake_per_line_bytes(req, config, at, tree, f):
        commit = at.commit
        if head[0] != commit:
            checkouts.append(commit)
            head[0] = commit
        return {(f, 1): 10 if commit == "A" else 11}
    monkeypatch.setattr(lines, "per_line_bytes", fake_per_line_bytes)
    monkeypatch.setattr(lines, "diff_hunks", lambda tree, a, b: {})
    monkeypatch.setattr(lines.build, "case_config",
                        lambda req, case: type("Config", (), {"hash": lambda self: "h"})())
    monkeypatch.setattr(lines.build, "compiler_version", lambda cc: "gcc 12")
    monkeypatch.setattr(lines, "_source", lambda *a: "")
    files = [f"mm/f{i}.c" for i in range(50)]
    rows = lines.changed_lines(None, None, "tree", "A", "B", "gcc", files, top=100)
    assert checkouts == ["B"]
    assert len(rows) == 50 and all(r["delta"] == 1 and r["files"] == 1 for r in rows)
