"""make track on the fake kernel tree (tests/fakelinux) made a git history
of its own: most commits harmless (comments, an unrelated file), two that
change min(); only those two are interesting. Incremental (a commit
measured before is never measured again), a config change and a compiler
version change between nights shown as setup changes and never taken for
a regression, and the noise model on its own (bench/history.py)."""
import json
import subprocess
from pathlib import Path

import pytest

from test_faults import FAKE, PY, REPO, fake, kx  # noqa: F401

SETUP = "arch/x86/xen/setup.c"
COMP = "mm/compaction.c"
ONCE = ("#define __cmp(x, y, op)\t((x) op (y) ? (x) : (y))",
        "#define __cmp(x, y, op)\t({ typeof(x) __a = (x); typeof(y) __b = (y); \\\n"
        "\t(void)(&__a == &__b); __a op __b ? __a : __b; })")


def history(path):
    """base, 3 harmless, min() evaluates once, 2 harmless, min() back."""
    subprocess.run(["cp", "-a", FAKE, path], check=True)

    def g(*a):
        return subprocess.run(["git", "-C", path, "-c", "user.name=t", "-c", "user.email=t@t",
                               *a], check=True, capture_output=True, text=True).stdout.strip()

    def commit(msg, rel=None, old=None, new=None, append=None):
        f = Path(path) / rel if rel else None
        if f and old is not None:
            f.write_text(f.read_text().replace(old, new))
        if f and append is not None:
            f.write_text(f.read_text() + append)
        g("commit", "-qam", msg)
        return g("rev-parse", "HEAD")

    g("init", "-q")
    g("add", "-A")
    g("commit", "-qm", "base")
    ids = [g("rev-parse", "HEAD")]
    ids.append(commit("compaction: a comment", COMP, append="/* a comment */\n"))
    ids.append(commit("minmax: a comment", "include/linux/minmax.h",
                      "#define min3", "/* three */\n#define min3"))
    ids.append(commit("kernel.h: a comment", "include/linux/kernel.h", append="/* k */\n"))
    ids.append(commit("minmax: evaluate once", "include/linux/minmax.h", *ONCE))
    ids.append(commit("compaction: another comment", COMP, append="/* more */\n"))
    ids.append(commit("setup: a comment", SETUP, append="/* s */\n"))
    ids.append(commit("minmax: back to the ternary", "include/linux/minmax.h", *ONCE[::-1]))
    return g, ids


def track(env, user, *args):
    return kx(env, "track", "--case", "fake", "--kernel", str(user), "--cc", "gcc",
              "--files", f"{SETUP},{COMP}", *args)


def load(base):
    [d] = (base / "results/track").iterdir()
    return d, json.loads((d / "track.json").read_text())


def test_only_the_commits_that_change_min_are_interesting(fake, tmp_path):
    base, env = fake
    user = tmp_path / "user"
    g, ids = history(user)
    p = track(env, user, "--range", f"{ids[0]}..HEAD", "--name", "fake")
    assert p.returncode == 0, p.stderr
    d, rec = load(base)
    assert [c["commit"] for c in rec["commits"]] == ids
    flagged = {(i["commit"], i["file"], i["metric"]) for i in rec["interesting"]}
    assert {c for c, _, _ in flagged} == {ids[4], ids[7]}, rec["interesting"]
    assert (ids[4], SETUP, "bytes") in flagged and (ids[7], SETUP, "bytes") in flagged
    up = next(i for i in rec["interesting"] if i["commit"] == ids[4] and i["file"] == SETUP
              and i["metric"] == "bytes")
    assert up["after"] > up["before"] and up["parent"] == ids[3]
    assert up["make_compare"].startswith("make compare KERNEL=") and f"A={ids[3]}" in \
        up["make_compare"]
    # the interesting ones are pre-drawn as compare reports
    assert up["compare"] and (base / "results" / up["compare"] / "pair.json").exists()
    # every commit has its values; instructions of -c counted
    v = rec["commits"][0]["values"]["gcc"][SETUP]
    assert v["bytes"] > 0 and v["longest_line"] > 0 and v["instructions_c"] > 0
    csv = (d / "bytes-gcc.csv").read_text().splitlines()
    assert csv[0] == f"commit,date,subject,{SETUP},{COMP}" and len(csv) == 1 + len(ids)
    assert "minmax: evaluate once" in (d / "interesting.md").read_text()

    # one more commit: only that one is measured
    (user / "include/linux/kernel.h").write_text(
        (user / "include/linux/kernel.h").read_text() + "/* later */\n")
    g("commit", "-qam", "kernel.h: a later comment")
    p = track(env, user, "--range", f"{ids[0]}..HEAD", "--name", "fake")
    assert p.returncode == 0, p.stderr
    assert "8 measured before (kept as they were measured), 1 to measure" in p.stderr
    assert p.stderr.count("  preprocessing ") == 2         # the new commit's two files
    d, rec2 = load(base)
    assert len(rec2["commits"]) == 9
    assert rec2["commits"][:8] == [dict(c) for c in rec["commits"]]


def test_every_nth_keeps_both_ends(fake, tmp_path):
    base, env = fake
    user = tmp_path / "user"
    g, ids = history(user)
    p = track(env, user, "--range", f"{ids[0]}..HEAD", "--every", "3", "--name", "n3")
    assert p.returncode == 0, p.stderr
    d, rec = load(base)
    assert [c["commit"] for c in rec["commits"]] == [ids[0], ids[3], ids[6], ids[7]]


def test_a_setup_change_is_shown_and_never_a_regression(fake, tmp_path):
    """Night 1 with gcc as it is; night 2 with a 'gcc' that reports another
    version (a stand-in first on PATH) and a config file: the new commits
    are measured under the new setup, the boundary is shown, and the change
    across it (setup.c's bytes do jump there: 'evaluate once' is the first
    new commit) is not taken for a regression: it cannot be told from the
    setup's doing. The next real change, under one setup, is."""
    base, env = fake
    user = tmp_path / "user"
    g, ids = history(user)
    p = track(env, user, "--range", f"{ids[0]}..{ids[3]}", "--name", "s")
    assert p.returncode == 0, p.stderr
    shim = tmp_path / "bin"
    shim.mkdir()
    real = subprocess.run(["sh", "-c", "command -v gcc"], capture_output=True,
                          text=True).stdout.strip()
    (shim / "gcc").write_text(f'#!/bin/sh\n[ "$1" = --version ] && '
                              f'{{ echo "gcc (Fake) 99.1.0"; exit 0; }}\nexec {real} "$@"\n')
    (shim / "gcc").chmod(0o755)
    kconfig = tmp_path / "my.config"
    kconfig.write_text("CONFIG_64BIT=y\nCONFIG_FAKE_5LEVEL=y\n")
    env2 = dict(env, PATH=f"{shim}:{env['PATH']}")
    p = track(env2, user, "--range", f"{ids[0]}..HEAD", "--name", "s",
              "--kconfig", str(kconfig))
    assert p.returncode == 0, p.stderr
    d, rec = load(base)
    [ch] = [c for c in rec["setup_changes"] if c["boundary"]]
    assert ch["commit"] == ids[4] and "99.1.0" in ch["what"] and "config_hash" in ch["what"]
    c3, c4 = rec["commits"][3], rec["commits"][4]
    assert c3["setup"]["gcc"] != c4["setup"]["gcc"]
    assert c4["values"]["gcc"][SETUP]["bytes"] > c3["values"]["gcc"][SETUP]["bytes"]
    flagged = {i["commit"] for i in rec["interesting"]}
    assert ids[4] not in flagged and ids[7] in flagged


def test_bad_range_is_refused(fake, tmp_path):
    base, env = fake
    p = kx(env, "track", "--case", "fake", "--range", "a..")
    assert p.returncode == 2 and "RANGE=" in p.stderr
    p = kx(env, "track", "--case", "fake")
    assert p.returncode == 2 and "RANGE=" in p.stderr


# --- the noise model --------------------------------------------------------------

def test_noise_from_differences_is_robust_to_jumps():
    from bench import history as h
    s = ("gcc 12", "cfg", "qemu")
    quiet = [(1000 + (i % 2), s) for i in range(40)]               # +-1 around 1000
    assert 0.6 < h.series_sigma(quiet) < 0.8                        # 1/sqrt(2)
    jumpy = quiet[:20] + [(v + 500, s) for v, _ in quiet[20:]]     # one jump of 500
    assert abs(h.series_sigma(jumpy) - h.series_sigma(quiet)) < 0.05
    ch = h.changes(jumpy, "bytes", h.series_sigma(jumpy))
    assert [(i, d) for i, _, _, d, _, _ in ch] == [(20, 499)] or \
        [(i, d) for i, _, _, d, _, _ in ch] == [(20, 501)]


def test_a_change_within_the_floor_is_not_interesting():
    from bench import history as h
    s = ("gcc 12", "cfg", "qemu")
    pts = [(1_000_000, s)] * 10 + [(1_000_500, s)] + [(1_000_500, s)] * 5
    # one small step among zeros: noise by the tracker's rule (5 sigma
    # cannot single out one difference of 15), and under the 0.1% floor
    assert 0 < h.series_sigma(pts) < 150
    assert h.changes(pts, "bytes", h.series_sigma(pts)) == []
    pts[-1] = (1_200_000, s)        # +20%: a jump, left out of the noise
    assert [i for i, *_ in h.changes(pts, "bytes", h.series_sigma(pts))] == [15]
    assert h.series_sigma(pts) == h.series_sigma(pts[:-1])


@pytest.mark.parametrize("other", [("gcc 13", "cfg", "qemu"), ("gcc 12", "cfg2", "qemu"),
                                   ("gcc 12", "cfg", "perf")])
def test_no_change_across_a_setup_boundary(other):
    from bench import history as h
    s = ("gcc 12", "cfg", "qemu")
    pts = [(1000, s)] * 5 + [(5000, other)] * 5
    assert h.changes(pts, "bytes", h.series_sigma(pts)) == []
