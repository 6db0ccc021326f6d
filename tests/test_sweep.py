"""make sweep on the fake tree: configurations from its randconfig (seeded),
one option (FAKE_5LEVEL) that multiplies setup.c's expansion, one that adds
a little (FAKE_A), the file's own option kept on in every config."""
import csv
import json
import shutil
import tarfile

import pytest

from test_faults import FAKE, fake, mk  # noqa: F401

BIG = """
#ifdef CONFIG_FAKE_5LEVEL
unsigned long fake_5level(unsigned long a, unsigned long b)
{
""" + "".join(f"\ta += min3(min3(a, b, {i}), min3(b, a, {i}), max(a, b));\n"
              for i in range(60)) + """\treturn a;
}
#endif
#ifdef CONFIG_FAKE_A
unsigned long fake_a(unsigned long a, unsigned long b) { return min3(min3(a, b, 1), min3(b, a, 2), max(a, b)); }
#endif
"""


@pytest.fixture
def swept(fake):
    base, env = fake
    src = base / "src" / "linux-source-6.1"
    shutil.copytree(FAKE, src)
    with open(src / "arch/x86/xen/setup.c", "a") as f:
        f.write(BIG)
    (src / "arch/x86/xen/Makefile").write_text("obj-$(CONFIG_FAKE_XEN) += setup.o\n")
    (src / "arch/x86/Makefile").write_text("obj-$(CONFIG_FAKE_X86) += xen/\n")
    # like the real case's fragment: the multiplying option is on in it, and
    # the file's option needs another (FAKE_XEN depends on FAKE_PV)
    (base / "cases/fake/config.fragment").write_text(
        "CONFIG_FAKE=y\nCONFIG_FAKE_5LEVEL=y\nCONFIG_FAKE_PV=y\nCONFIG_FAKE_XEN=y\n")
    with tarfile.open(env["KEXPAND_TARBALL"], "w:xz") as t:
        t.add(src, arcname="linux-source-6.1")
    return base, env


def test_sweep_ranks_the_multiplying_option_first(swept):
    base, env = swept
    p = mk(env, "sweep", CASE="fake", FILE="arch/x86/xen/setup.c", POINT="after", N=12)
    assert p.returncode == 0, p.stderr[-3000:]
    out = base / "results/sweep/after/arch_x86_xen_setup.c"
    rows = list(csv.DictReader(open(out / "options.csv")))
    assert list(rows[0]) == ["option", "configs_on", "configs_off", "median_bytes_on",
                             "median_bytes_off", "effect_ratio", "confirmed_ratio"]
    top = rows[0]
    assert top["option"] == "CONFIG_FAKE_5LEVEL" and float(top["effect_ratio"]) > 3
    # toggled alone (off) on the base config (tinyconfig + fragment)
    assert float(top["confirmed_ratio"]) > 3
    # the small real effect comes second (confirmed: fake_a() adds a min3());
    # options that only rode along with FAKE_5LEVEL in the random configs,
    # whatever their median split, are confirmed as no effect and come last
    assert rows[1]["option"] == "CONFIG_FAKE_A"
    assert 1.005 < float(rows[1]["confirmed_ratio"]) < 1.05
    tail = [r for r in rows if r["confirmed_ratio"] and float(r["confirmed_ratio"]) == 1.0]
    assert tail and rows[-len(tail):] == tail
    data = json.loads((out / "sweep.json").read_text())
    # the file's own options (its Makefiles) are on in every random config
    assert data["file_options"] == ["CONFIG_FAKE_X86", "CONFIG_FAKE_XEN"]
    rand = [c for c in data["configs"] if c["kind"].startswith("randconfig")]
    assert len(rand) == 10 and [c["seed"] for c in rand] == list(range(1, 11))
    assert all(c["options"].get("CONFIG_FAKE_XEN") == "y" for c in rand)
    # only what keeps them on is pinned: the fragment's FAKE_PV, not its
    # FAKE_5LEVEL, which varies (an option on in every config cannot rank)
    assert data["pinned"] == ["CONFIG_FAKE_PV", "CONFIG_FAKE_X86", "CONFIG_FAKE_XEN"]
    assert 2 < sum(c["options"].get("CONFIG_FAKE_5LEVEL") == "y" for c in rand) < 8
    assert len({c["config_sha256"] for c in rand}) > 3
    assert (out / "effects.png").exists() and "CONFIG_FAKE_5LEVEL" in (out / "sweep.md").read_text()
    assert 'href="sweep/after/arch_x86_xen_setup.c/index.html"' in \
        (base / "results/index.html").read_text()
    assert "after, arch_x86_xen_setup.c" in (base / "results/pages/sweeps.html").read_text()
    # a second run measures nothing again (cached by the .config's hash)
    p = mk(env, "sweep", CASE="fake", FILE="arch/x86/xen/setup.c", POINT="after", N=12)
    assert p.returncode == 0 and "building" not in p.stderr


def test_sweep_needs_file_and_point(fake):
    base, env = fake
    p = mk(env, "sweep", CASE="fake", FILE="arch/x86/xen/setup.c")
    assert "Error 2" in p.stderr and "POINT=" in p.stderr and "Traceback" not in p.stderr
    p = mk(env, "sweep", CASE="fake", FILE="arch/x86/xen/setup.c", POINT="after", N="1")
    assert "Error 2" in p.stderr and "N='1'" in p.stderr
