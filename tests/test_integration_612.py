"""Integration on a second real kernel: Debian's linux-source-6.12, whose
Kbuild (v6.3+) writes `savedcmd_` lines in its .cmd files. The tarball is
made a git tree with commits of the test's own that change expansion in
known ways; compare, bisect and scan run on it through make, as a user
types them, and the user's tree is left byte for byte as it was."""
import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
pytestmark = pytest.mark.integration

PROBE_MIN = "\nint kx_probe_min(int a, int b)\n{\n\treturn min(a, b);\n}\n"
PROBE_MIN3 = "\nint kx_probe_min3(int a, int b, int c)\n{\n\treturn min3(a, b, c);\n}\n"


def git(tree, *args):
    return subprocess.run(["git", "-C", str(tree), "-c", "user.name=t", "-c",
                           "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout


def append(path, text):
    path.write_text(path.read_text() + text)


@pytest.fixture(scope="module")
def k612(tmp_path_factory):
    if not TARBALL.exists():
        pytest.fail("linux-source-6.12 is not installed: run 'make test', "
                    "which installs it")
    base = tmp_path_factory.mktemp("k612")
    user = base / "linux-6.12"
    user.mkdir()
    subprocess.run(["tar", "-xf", TARBALL, "-C", user, "--strip-components=1"],
                   check=True)
    git(user, "init", "-q")
    git(user, "add", "-A", "-f", ".")
    git(user, "commit", "-qm", "linux-source-6.12 as packaged")
    append(user / "mm/compaction.c", PROBE_MIN)
    git(user, "commit", "-qam", "mm: a min() of two ints")          # HEAD~2
    append(user / "README", "\nA comment that changes no expansion.\n")
    git(user, "commit", "-qam", "README: a comment")                # HEAD~1
    append(user / "mm/compaction.c", PROBE_MIN3)
    git(user, "commit", "-qam", "mm: a min3() of three ints")       # HEAD
    from kbuild import trees
    env = dict(os.environ, KEXPAND_WORK=str(base / "work"),
               KEXPAND_RESULTS=str(base / "results"))
    snap = trees.snapshot(user)
    yield base, user, env
    # the user's tree, after every test: as it was
    assert trees.snapshot(user) == snap
    subprocess.run(["rm", "-rf", str(base / "work"), str(user)])


def mk(env, target, **variables):
    p = subprocess.run(["make", "-s", "-C", str(REPO), target,
                        *(f"{k}={v}" for k, v in variables.items())],
                       env=env, capture_output=True, text=True, timeout=3000)
    if p.returncode != 0:
        pytest.fail(f"make {target} exit {p.returncode}:\n{p.stdout[-3000:]}\n"
                    f"{p.stderr[-3000:]}")
    return p


def probe_line(user, commit, text):
    body = git(user, "show", f"{commit}:mm/compaction.c").splitlines()
    return body.index(text) + 1


def test_compare_on_612_names_the_new_line(k612):
    base, user, env = k612
    p = mk(env, "compare", KERNEL=user, A="HEAD~3", B="HEAD~2", CC="gcc",
           NO_TIME=1, FILES="mm/compaction.c arch/x86/xen/setup.c")
    assert "uncommitted" not in p.stderr
    out = next((base / "results/compare").glob("HEAD_3-*..HEAD_2-*"))
    rows = {r["file"]: r for r in csv.DictReader(open(out / "compare.csv"))}
    comp, setup = rows["mm/compaction.c"], rows["arch/x86/xen/setup.c"]
    assert int(comp["bytes_b"]) > int(comp["bytes_a"]) > 1_000_000
    assert setup["bytes_a"] == setup["bytes_b"]          # not touched
    # the commands came from 6.3+ style .cmd files
    cmd = next((base / "work/trees").glob("*/kb-*-gcc/mm/.compaction.o.cmd"))
    assert cmd.read_text().startswith("savedcmd_mm/compaction.o := ")
    # the only changed line is named, new in B, with its bytes
    ch = json.load(open(out / "lines.json"))
    line = probe_line(user, "HEAD~2", "\treturn min(a, b);")
    top = ch["lines"][0]
    assert (top["at_a"], top["at_b"]) == (None, f"mm/compaction.c:{line}")
    assert top["bytes_a"] == 0 and top["bytes_b"] > 100 and top["files"] == 1
    # every line that changed is one of the new function's, nothing shifted
    assert all(r["at_a"] is None and r["at_b"].startswith("mm/compaction.c:")
               for r in ch["lines"])
    md = (out / "report.md").read_text()
    assert f"| (new) | mm/compaction.c:{line} |" in md


def test_bisect_on_612(k612):
    base, user, env = k612
    # (up to HEAD~1: one build directory more than the compare made)
    p = mk(env, "bisect", KERNEL=user, FILE="mm/compaction.c", GOOD="HEAD~3",
           BAD="HEAD~1", THRESHOLD="1.00002x")
    res = json.load(open(next((base / "results/bisect").glob("*/mm_compaction.c.json"))))
    assert res["first_bad"] == git(user, "rev-parse", "HEAD~2").strip()
    assert res["agrees_with_per_commit_measurements"]
    b = [c["bytes"] for c in res["per_commit"]]
    assert len(b) == 3 and b[0] < b[1] == b[2]  # min(), then a comment
    assert "mm: a min() of two ints" in p.stdout
    # what the min() brought: the macros whose own bytes grew, all of them
    grew = res["first_bad_macros"]
    assert grew and all(m["own_bytes_after"] > (m["own_bytes_before"] or 0)
                        for m in grew[:3])
    assert "macros whose own bytes changed most" in p.stdout


def test_scan_on_612_ranks_the_changed_file_first(k612):
    base, user, env = k612
    mk(env, "scan", KERNEL=user, A="HEAD~3", B="HEAD~2")
    out = next((base / "results/scan").glob("HEAD_3-*..HEAD_2-*"))
    rows = list(csv.DictReader(open(out / "ranking.csv")))
    assert len(rows) > 300
    assert rows[0]["file"] == "mm/compaction.c" and int(rows[0]["growth_bytes"]) > 0
    assert all(int(r["growth_bytes"]) == 0 for r in rows[1:])
    assert "mm/compaction.c" in (out / "ranking.md").read_text()
    # B's files whose inputs did not change took A's measurements
    rec = json.load(open(next(p for p in (base / "results").glob("*/scan-gcc.json")
                              if json.load(open(p))["point"] == "HEAD~2")))
    assert rec["n_reused"] >= 0.9 * rec["n_files"] and rec["n_measured"] >= 1
    assert rec["files"]["mm/compaction.c"].get("status") == "ok"
    # Kbuild scanned A, then B in a copy of A's scan dir (compaction.c
    # rewritten by the checkout); back at A, its scan dir is up to date:
    # the checkout gave compaction.c back A's time (kbuild.mtimes), so
    # Kbuild measures nothing again
    from kbuild import build, series, trees
    from bench.measure import kbuildscan
    clone = trees.user_clone(user, base / "work")
    a = trees.resolve(user, "HEAD~3")
    rec = kbuildscan.record_path(build.scan_dir(clone, a, "gcc"), "mm/compaction.o")
    before = rec.stat().st_mtime_ns
    series.checkout(clone, a)
    config = build.Config(REPO / "cases/minmax/config.fragment", strict=False)
    sc = kbuildscan.scan(clone, a, "gcc", config, 2)
    assert sc["n_measured"] == 0 and rec.stat().st_mtime_ns == before


def mail(subject, path, text, i, n_old, new_lines):
    """A patch mail replacing lines i .. i + n_old - 1 (0-based) of `text`
    (the file's lines) by `new_lines`, with three lines of context."""
    a = max(0, i - 3)
    before, old = text[a:i], text[i:i + n_old]
    after = text[i + n_old:i + n_old + 3]
    body = "".join(f" {l}\n" for l in before) + "".join(f"-{l}\n" for l in old) + \
        "".join(f"+{l}\n" for l in new_lines) + "".join(f" {l}\n" for l in after)
    ctx = len(before) + len(after)
    return (f"From: A Reviewer <r@example.org>\nDate: Mon, 2 Dec 2024 10:00:00 +0000\n"
            f"Subject: [PATCH] {subject}\n\nWritten by hand for the test.\n---\n"
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -{a + 1},{ctx + n_old} +{a + 1},{ctx + len(new_lines)} @@\n{body}")


def check(env, base, user, name, patch):
    """make check of one patch on HEAD~3 (the tip's scan dir a copy of the
    base's). Returns its exit code (0, or 1 for a regression), its
    check.json and {file: (bytes at base, bytes at tip)} from check.csv."""
    p = subprocess.run(["make", "-s", "-C", str(REPO), "check", f"KERNEL={user}",
                        "BASE=HEAD~3", f"PATCHES={patch}", "CC=gcc", "NO_MACROS=1",
                        "ICOUNT_CAP=0", f"NAME={name}"],
                       env=env, capture_output=True, text=True, timeout=3000)
    assert "Traceback" not in p.stderr and p.returncode in (0, 2), p.stderr[-3000:]
    code = 1 if "Error 1" in p.stderr else p.returncode
    assert code in (0, 1), p.stderr[-3000:]
    assert "Kbuild measures at the tip what the series changed" in p.stderr
    [d] = (base / "results/check").glob(f"{name}@*")
    rows = {r["file"]: (r["bytes_base"], r["bytes_tip"])
            for r in csv.DictReader(open(d / "check.csv"))}
    assert len(rows) > 300
    return code, json.load(open(d / "check.json")), rows


def test_check_612_one_line_header_patch(k612):
    """A one-line patch to mm/internal.h written by hand (an inline helper
    that calls min3(), as a header every file of a subsystem includes
    grows a little) checked against the 6.12 tree: the tip's scan dir, a
    copy of the base's, measures again the files that include that header
    and no other; a sample of files measured in a scan dir made from
    nothing at the tip has the same bytes, file for file (the whole tip
    made from nothing, FULL_BUILD=1, is tested on the fake tree; a
    minmax.h change that every file sees, by the 6.1 module's checks).
    The user's tree is left as it was (the fixture checks it)."""
    base, user, env = k612
    text = git(user, "show", "HEAD~3:mm/internal.h").splitlines()
    i = text.index("struct folio_batch;")
    patch = base / "internal.patch"
    patch.write_text(mail("mm: a helper that clamps three page counts", "mm/internal.h", text,
                          i, 1, ["static inline unsigned long kx_least(unsigned long a, "
                                 "unsigned long b, unsigned long c) { return min3(a, b, c); }",
                                 text[i]]))
    code, rec, rows = check(env, base, user, "one-line", patch)
    assert rec["path"] == "seeded"
    if code == 1:
        assert rec["results"]["gcc"]["regressions"][0]["per_patch"]
    from kbuild import build, series, trees
    from bench.measure import kbuildscan
    clone, tip = trees.user_clone(user, base / "work"), rec["tip"]["commit"]
    # the header's includers, from the dependencies Kbuild recorded at the tip
    tip_dir = build.scan_dir(clone, tip, "gcc")

    def deps(f):
        cmd = tip_dir / Path(f).parent / f".{Path(f).stem}.o.cmd"
        lines = cmd.read_text().splitlines() if cmd.is_file() else []
        return {os.path.normpath(line.strip(" \\")) for line in lines}
    includers = {f for f in rows if "../mm/internal.h" in deps(f)}
    assert 20 < len(includers) < 100, sorted(includers)
    assert rec["results"]["gcc"]["scan_tip"]["n_measured"] == len(includers)
    ok = sorted(f for f, (a, b) in rows.items() if a and b)
    grown = sorted((f for f in ok if int(rows[f][1]) > int(rows[f][0])),
                   key=lambda f: int(rows[f][0]) - int(rows[f][1]))
    assert grown and set(grown) <= includers, sorted(set(grown) - includers)
    sample = sorted(set(grown[:5] + ok[::30]))
    assert len(sample) >= 20
    series.checkout(clone, tip)
    config = build.Config(REPO / "cases/minmax/config.fragment", strict=False)
    fresh = clone / f"ks-{'0' * 12}-gcc"        # of no commit: never a seed's source
    kbuildscan.make_at(clone, tip, "gcc", config, 2, ["prepare"], fresh=True, sdir=fresh)
    got = kbuildscan.measure(clone, fresh, tip, "gcc", config, 2, sample)
    assert {f: str(got[f].get("bytes")) for f in sample} == {f: rows[f][1] for f in sample}


def test_check_612_comment_only_patch_exits_0(k612):
    base, user, env = k612
    text = git(user, "show", "HEAD~3:mm/compaction.c").splitlines()
    patch = base / "comment.patch"
    patch.write_text(mail("mm: a comment", "mm/compaction.c", text, 0, 1,
                          [text[0], "/* a comment that changes no expansion */"]))
    code, rec, _rows = check(env, base, user, "comment", patch)
    assert code == 0 and rec["verdict"] == "ok"
    # only compaction.c is measured again: Kbuild redoes only the object
    # whose source changed
    assert rec["results"]["gcc"]["scan_tip"]["n_measured"] == 1
