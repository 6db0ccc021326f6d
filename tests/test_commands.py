"""The one table of commands (kbuild/commands.py: MAKE and TARGETS) against
what repeats it: the Makefile's targets, recipes and KX_VARS, the CLI's
flags, and the README's "Variables" table. A variable added in one place
and not in the others fails here."""
import re
from pathlib import Path

from bench import cli
from kbuild import commands

REPO = Path(__file__).resolve().parent.parent
MAKEFILE = (REPO / "Makefile").read_text()
README = (REPO / "README.md").read_text()


def recipe(target):
    m = re.search(rf"(?m)^{re.escape(target)}:.*\n((?:\t.*\n)+)", MAKEFILE)
    assert m, f"no make target {target}"
    return m.group(1)


def test_every_command_has_its_make_target_and_draws_as_the_table_says():
    assert set(commands.MAKE) == set(commands.TARGETS)
    for cmd, (target, draw) in commands.MAKE.items():
        r = recipe(target)
        if cmd == "report":         # make plots: report.py alone
            assert "report.py" in r and "kexpand.py" not in r
        elif draw is None:
            assert f"bench/kexpand.py {cmd})" in r and "measure" not in r, r
        else:
            flags = "$(if $(A),--scan,--index)" if draw == "--scan|--index" else draw
            assert f"$(call measure,{cmd},{flags})" in r, r


def test_the_makefile_passes_every_variable_of_the_table():
    m = re.search(r"KX_VARS := (.*?)\n(?!\s)", MAKEFILE, re.S)
    kx = set(m.group(1).replace("\\", " ").split())
    # CC is passed apart (KX_CC): make's own CC default must not reach kexpand
    assert kx | {"CC"} == commands.ALL
    assert "export KX_CC :=" in MAKEFILE


def test_the_cli_takes_only_variables_its_command_takes():
    sub = next(a for a in cli.parser()._actions if a.dest == "cmd")
    # flags that are not make variables: the CLI's own
    own = {"CASE", "TOP", "REPEAT", "TREE", "STEP_THRESHOLD", "STRICT_CONFIG"}
    for cmd, p in sub.choices.items():
        flags = {a.dest.upper() for a in p._actions if a.dest != "help"}
        if cmd == "bisect-step":            # internal: git bisect run's step
            continue
        assert flags - own <= commands.TARGETS[cmd] | commands.COMMON, cmd


def readme_rows():
    """[(variables, targets as written)] of the README's Variables table."""
    rows = []
    for line in README.splitlines():
        m = re.match(r"\| ((?:`[A-Z_]+=[^`]*`(?:, )?)+) \| ([^|]+) \|", line)
        if m:
            rows.append((re.findall(r"`([A-Z_]+)=", m.group(1)), m.group(2).strip()))
    return rows


def test_the_readme_lists_every_variable_with_the_targets_that_take_it():
    rows = readme_rows()
    assert len(rows) >= 20
    takes = {}
    for cmd, vs in commands.TARGETS.items():
        if cmd != "report":     # report.py after any target: reads them all
            for v in vs:
                takes.setdefault(v, set()).add(commands.MAKE[cmd][0])
    said_of = {}         # a variable may be in two rows (NAME=: check, track)
    for vs, written in rows:
        if written == "all" or written.startswith("every command"):
            assert set(vs) <= commands.COMMON | {"KEXPAND_SANDBOX_RW"}, vs
            said_of.update((v, None) for v in vs)
            continue
        said = set(re.findall(r"[a-z][a-z-]*", written)) - {"also"}
        # every target named takes at least one of the row's variables
        assert all(any(t in takes.get(v, ()) for v in vs) for t in said), (vs, written)
        for v in vs:
            said_of[v] = said_of.get(v, set()) | said
    assert commands.ALL <= set(said_of), commands.ALL - set(said_of)
    for v, said in said_of.items():
        if said is not None:
            assert takes.get(v, set()) <= said, (v, said, takes.get(v))
