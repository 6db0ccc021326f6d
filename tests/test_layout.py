"""The architecture rules of DESIGN.md, checked on the sources with `ast`:
imports point upstream only (kernel-build/ <- bench/ <- report.py, plots/),
sys.path is touched only by the entry points, no source file grows past
400 lines, and nothing reads the environment at import time. Each checker
is also run on small synthetic snippets, so a checker that cannot see a
violation fails here too."""
import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MAX_LINES = 400
SYS_PATH_ALLOWED = {"bench/kexpand.py", "report.py", "tests/conftest.py",
                    "tests/ci_on_the_real_tree.py", "tests/kbuild_vs_full_build.py",
                    "ci/kexpand_ci.py"}


def sources():
    """Every Python file of the work tree (tracked or not), as
    {relative posix path: text}."""
    out = {}
    for p in sorted(REPO.rglob("*.py")):
        rel = p.relative_to(REPO)
        if any(part.startswith(".") or part in ("__pycache__", "results")
               for part in rel.parts):
            continue
        out[rel.as_posix()] = p.read_text()
    return out


SOURCES = sources()


# ---------------------------------------------------------------- checkers

def imported_modules(text):
    """Top-level names of absolute imports (import x.y, from x import y,
    importlib.import_module('x'), __import__('x')), with line numbers.
    Relative imports (from . import z) stay inside their package."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out += [(a.name.split(".")[0], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.module.split(".")[0], node.lineno))
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], ast.Constant) and \
                isinstance(node.args[0].value, str):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in ("import_module", "__import__"):
                out.append((node.args[0].value.split(".")[0], node.lineno))
    return out


def sibling_imports(text):
    """(module, line) of each relative import of a module of the same
    package (`from .x import y`, `from . import x`), anywhere in the file."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            out += [(node.module.split(".")[0], node.lineno)] if node.module else \
                [(a.name, node.lineno) for a in node.names]
    return out


def forbidden_imports(text, forbidden):
    return [f"line {n}: imports {m}" for m, n in imported_modules(text)
            if m in forbidden]


def sys_path_uses(text):
    """Lines that touch the import path: sys.path (any use), `from sys
    import path`, site.addsitedir."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Attribute) and node.attr == "path" and \
                isinstance(node.value, ast.Name) and node.value.id == "sys":
            out.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and \
                any(a.name == "path" for a in node.names):
            out.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "addsitedir":
            out.append(node.lineno)
    return sorted(set(out))


def import_time_nodes(tree):
    """The nodes that run when the module is imported: everything except
    function and lambda bodies (decorators, default values and annotations
    of a def do run at import; so do class bodies)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            todo += node.decorator_list + a.defaults + \
                [d for d in a.kw_defaults if d is not None]
            todo += [x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs
                     + [a.vararg, a.kwarg] if x is not None and x.annotation]
            if node.returns:
                todo.append(node.returns)
        elif isinstance(node, ast.Lambda):
            a = node.args
            todo += a.defaults + [d for d in a.kw_defaults if d is not None]
        else:
            todo += list(ast.iter_child_nodes(node))


def import_time_environ(text):
    """Lines where module-level code reads the environment: os.environ,
    os.getenv, os.environb, or those names imported from os."""
    tree = ast.parse(text)
    names = {"environ", "getenv", "environb"}
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            aliases |= {a.asname or a.name for a in node.names if a.name in names}
    os_names = {"os"} | {a.asname for node in ast.walk(tree)
                         if isinstance(node, ast.Import) for a in node.names
                         if a.name == "os" and a.asname}
    out = []
    for node in import_time_nodes(tree):
        if isinstance(node, ast.Attribute) and node.attr in names and \
                isinstance(node.value, ast.Name) and node.value.id in os_names:
            out.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id in aliases and \
                isinstance(node.ctx, ast.Load):
            out.append(node.lineno)
    return sorted(set(out))


# ------------------------------------------------- the checkers themselves

@pytest.mark.parametrize("snippet,mods", [
    ("import plots\n", ["plots"]),
    ("import plots.page as p\n", ["plots"]),
    ("from plots import page\n", ["plots"]),
    ("from plots.tables import ok\n", ["plots"]),
    ("import compare\n", ["compare"]),
    ("def f():\n    import compare\n", ["compare"]),
    ("import importlib\nm = importlib.import_module('bench.results')\n", ["bench"]),
    ("m = __import__('plots')\n", ["plots"]),
    ("from . import plots\nfrom .compare import x\nimport compare_tools\n", []),
    ("from kbuild.util import log\nimport os, sys\n", []),
])
def test_import_checker_sees_imports(snippet, mods):
    got = [m.split()[-1] for m in forbidden_imports(snippet, {"plots", "compare", "bench"})]
    assert got == mods


@pytest.mark.parametrize("snippet,hits", [
    ("import sys\nsys.path.insert(0, 'x')\n", [2]),
    ("import sys\nsys.path[:0] = ['x']\n", [2]),
    ("import sys\ndef f():\n    sys.path.append('x')\n", [3]),
    ("from sys import path\npath.append('x')\n", [1]),
    ("import site\nsite.addsitedir('x')\n", [2]),
    ("import os.path\nos.path.join('a', 'b')\nimport sys\nsys.argv\n", []),
])
def test_sys_path_checker(snippet, hits):
    assert sys_path_uses(snippet) == hits


@pytest.mark.parametrize("snippet,hits", [
    ("import os\nWORK = os.environ.get('KEXPAND_WORK')\n", [2]),
    ("import os\nWORK = os.getenv('KEXPAND_WORK', '/tmp')\n", [2]),
    ("import os\nif 'CI' in os.environ:\n    X = 1\n", [2]),
    ("import os\ndef f(env=os.environ):\n    return env\n", [2]),
    ("import os\nclass C:\n    jobs = os.environ['JOBS']\n", [3]),
    ("import os as o\nX = o.environ\n", [2]),
    ("from os import environ\nX = environ['A']\n", [2]),
    ("from os import getenv as ge\nX = ge('A')\n", [2]),
    ("import os, functools\n@functools.lru_cache(int(os.getenv('N', '1')))\n"
     "def g():\n    pass\n", [2]),
    ("import os\nimport pytest\n@pytest.mark.skipif(os.environ.get('CI') != 'true', "
     "reason='x')\ndef test_x():\n    pass\n", [3]),
    ("import os\ndef f(*, env: os.environ = None):\n    pass\n", [2]),
    # read when called, not when imported: fine
    ("import os\ndef f():\n    return os.environ.get('A')\n", []),
    ("import os\nclass C:\n    def m(self):\n        return os.getenv('A')\n", []),
    ("import os\nf = lambda: os.environ['A']\n", []),
    ("import os\nos.path.join('a')\n", []),
])
def test_environ_checker(snippet, hits):
    assert import_time_environ(snippet) == hits


def test_flat_module_names():
    assert {"page", "tables", "regression"} <= REPORTS
    assert {"results", "timing", "point", "bench", "scanfiles"} <= MEASURING
    assert {"settings", "build", "util"} <= KBUILD
    import sys
    assert not (REPORTS | MEASURING | KBUILD) & set(sys.stdlib_module_names)


def test_the_sources_were_found():
    for f in ("report.py", "bench/kexpand.py", "bench/results.py",
              "kernel-build/kbuild/settings.py", "plots/page.py", "tests/conftest.py"):
        assert f in SOURCES
    assert len(SOURCES) >= 20


# ------------------------------------------------------------ the rules

def under(prefix):
    return {p: t for p, t in SOURCES.items() if p.startswith(prefix)}


def flat_names(prefix):
    """Module names of a package's files: with a sys.path entry pointing
    into the package they could be imported flat (`import tables`), as
    they were before the packages existed."""
    return {Path(p).stem for p in under(prefix)} - {"__init__", "kexpand"}


REPORTS = {"report", "plots"} | flat_names("plots/")
MEASURING = {"bench"} | flat_names("bench/")
KBUILD = {"kbuild"} | flat_names("kernel-build/")


@pytest.mark.parametrize("prefix", ["bench/", "kernel-build/"])
def test_measuring_side_knows_nothing_of_reports(prefix):
    bad = {p: v for p, t in under(prefix).items()
           if (v := forbidden_imports(t, REPORTS))}
    assert bad == {}


def test_kernel_build_knows_nothing_of_bench():
    bad = {p: v for p, t in under("kernel-build/").items()
           if (v := forbidden_imports(t, MEASURING | REPORTS))}
    assert bad == {}


def test_report_reads_results_through_bench_and_settings_only():
    """report.py reads results/ through bench/, and its settings through
    the same Request as the measuring side (kbuild.settings, kbuild.util):
    nothing of kernel-build/ that builds, boots or touches a tree."""
    bad = [f"line {n}: {m}" for m, n in imported_modules(SOURCES["report.py"])
           if m in KBUILD - {"kbuild"}]
    text = SOURCES["report.py"]
    kb = [line for line in text.splitlines() if line.startswith(("from kbuild", "import kbuild"))]
    assert bad == [] and kb, kb
    assert all(line.startswith(("from kbuild import settings", "from kbuild.util import"))
               for line in kb), kb


def test_plots_do_not_import_kbuild_or_report():
    bad = {p: v for p, t in under("plots/").items()
           if (v := forbidden_imports(t, KBUILD | {"report"}))}
    assert bad == {}


@pytest.mark.parametrize("snippet,mods", [
    ("from .scan import scan_point\n", ["scan"]),
    ("def f():\n    from .compare import x\n", ["compare"]),
    ("from . import boot, inputs\n", ["boot", "inputs"]),
    ("from ..measure import scan\nfrom .. import results\nimport scan\n", []),
])
def test_sibling_checker(snippet, mods):
    assert [m for m, _ in sibling_imports(snippet)] == mods


def test_commands_do_not_call_commands():
    """A command module (bench/cmd/ with a cmd_* function) imports no
    other command module: what two commands share lives in the engine
    (bench/measure/) or in bench/cmd/inputs.py."""
    cmds = {Path(p).stem for p, t in under("bench/cmd/").items() if "\ndef cmd_" in t}
    assert {"check", "scan", "compare", "track", "bench", "boot"} <= cmds
    bad = {p: [f"line {n}: {m}" for m, n in sibling_imports(t) if m in cmds]
           for p, t in under("bench/cmd/").items()}
    assert {p: v for p, v in bad.items() if v} == {}


def test_sys_path_only_in_entry_points():
    bad = {p: lines for p, t in SOURCES.items()
           if p not in SYS_PATH_ALLOWED and (lines := sys_path_uses(t))}
    assert bad == {}
    for p in SYS_PATH_ALLOWED:
        assert sys_path_uses(SOURCES[p]), f"{p} no longer sets sys.path: update the rule"


def test_no_source_file_over_400_lines():
    long = {p: n for p, t in SOURCES.items()
            if not p.startswith("tests/") and (n := len(t.splitlines())) > MAX_LINES}
    assert long == {}
    native = [p for ext in ("*.c", "*.h", "*.cpp") for p in REPO.rglob(ext)
              if not p.relative_to(REPO).as_posix().startswith(("tests/", "results/"))]
    assert len(native) >= 6          # the analyzers, /init, the KUnit module
    long = {p.relative_to(REPO).as_posix(): n for p in native
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_nothing_reads_the_environment_at_import_time():
    bad = {p: lines for p, t in SOURCES.items() if (lines := import_time_environ(t))}
    assert bad == {}


def test_each_setting_is_parsed_once_in_settings():
    """One parser per setting: the text a user typed (THRESHOLD=10%) is
    parsed in kbuild/settings.py, once, into the Request; the commands read
    the parsed value (req.growth_ratio), never parse it again."""
    parsers = {"parse_int", "parse_threshold", "parse_growth"}
    bad = {}
    for p, t in SOURCES.items():
        if p.startswith("tests/") or p in ("kernel-build/kbuild/settings.py",
                                           "kernel-build/kbuild/commands.py"):
            continue
        used = [n.lineno for n in ast.walk(ast.parse(t))
                if (isinstance(n, ast.Name) and n.id in parsers) or
                (isinstance(n, ast.Attribute) and n.attr in parsers) or
                (isinstance(n, ast.alias) and n.name in parsers)]
        if used:
            bad[p] = used
    assert bad == {}


# third-party libraries that take long to import and serve one path only:
# imported where that path starts (Dask with DASK_SCHEDULER=, scipy where a
# verdict is made, matplotlib after its backend is chosen)
LAZY_IMPORTS = {"dask", "distributed", "scipy", "matplotlib"}


def inner_imports(text):
    """(line, module) of each import that is not at the top of the module
    (in a function, a class, or under an if/try inside one)."""
    tree = ast.parse(text)
    top = set()
    for n in tree.body:     # the top level, and under a top-level if/try
        top.add(id(n))
        if isinstance(n, (ast.If, ast.Try)):
            top |= {id(m) for m in ast.walk(n) if isinstance(m, (ast.Import, ast.ImportFrom))}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in top:
            mods = [a.name for a in n.names] if isinstance(n, ast.Import) else \
                ["." * n.level + (n.module or "")]
            out += [(n.lineno, m) for m in mods]
    return out


def private_uses(text):
    """(line, name) of each private name of another module: `from x import
    _y`, or `module._y` (not self._y, cls._y, or a dunder)."""
    out = []
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, ast.ImportFrom):
            out += [(n.lineno, a.name) for a in n.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
        elif isinstance(n, ast.Attribute) and n.attr.startswith("_") and \
                not n.attr.startswith("__") and isinstance(n.value, ast.Name) and \
                n.value.id not in ("self", "cls"):
            out.append((n.lineno, f"{n.value.id}.{n.attr}"))
    return out


@pytest.mark.parametrize("snippet,hits", [
    ("import os\ndef f():\n    import json\n", [(3, "json")]),
    ("def f():\n    from .x import y\n", [(2, ".x")]),
    ("try:\n    import yaml\nexcept ImportError:\n    pass\n", []),
    ("class C:\n    import re\n", [(2, "re")]),
])
def test_inner_import_checker(snippet, hits):
    assert inner_imports(snippet) == hits


@pytest.mark.parametrize("snippet,hits", [
    ("from .dist import _config\n", [(1, "_config")]),
    ("x = dist._results(c)\n", [(1, "dist._results")]),
    ("self._x = 1\ny = cls._z\nz = a.__class__\n", []),
])
def test_private_name_checker(snippet, hits):
    assert private_uses(snippet) == hits


def test_imports_at_the_top_and_no_private_names_across_modules():
    """Every import at the top of its module (but the slow third-party
    libraries of one path, LAZY_IMPORTS), and no module uses another's
    private names: what is shared is public."""
    inner = {p: [(n, m) for n, m in inner_imports(t) if m.split(".")[0] not in LAZY_IMPORTS]
             for p, t in SOURCES.items() if not p.startswith("tests/")}
    assert {p: v for p, v in inner.items() if v} == {}
    private = {p: v for p, t in SOURCES.items()
               if not p.startswith("tests/") and (v := private_uses(t))}
    assert private == {}


def work_paths(text):
    """(line, name) of each path spelled under a work directory: `work /
    "cache"`, `req.work / "tree"` (an entry of the work dir's top level)."""
    names = {"tree", "tree.unpacking", "cache", "trees", "bisect", "scratch", "boot",
             "kconfigs", "sweep-allconfig", "track", "check", "dask", "build-steps.json"}

    def is_work(n):
        return (isinstance(n, ast.Name) and n.id == "work") or \
            (isinstance(n, ast.Attribute) and n.attr == "work") or \
            (isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Path" and
             any(is_work(a) for a in n.args))
    out = []
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and is_work(n.left):
            r = n.right
            if isinstance(r, ast.Constant) and r.value in names:
                out.append((n.lineno, r.value))
            elif isinstance(r, ast.JoinedStr):
                out.append((n.lineno, "f-string"))
    return out


@pytest.mark.parametrize("snippet,hits", [
    ('t = req.work / "tree"\n', [(1, "tree")]),
    ('c = Path(work) / "cache"\n', [(1, "cache")]),
    ('s = work / f"series-{c}.json"\n', [(1, "f-string")]),
    ('r = req.results / "track"\nx = workdir.tree(work) / "include"\n', []),
])
def test_work_path_checker(snippet, hits):
    assert work_paths(snippet) == hits


def test_the_work_dirs_layout_has_one_owner():
    """Every path under KEXPAND_WORK is named in kbuild/workdir.py (tree(),
    cache(), scratch(), ...); the other modules ask it."""
    bad = {p: v for p, t in SOURCES.items()
           if not p.startswith("tests/") and p != "kernel-build/kbuild/workdir.py"
           and (v := work_paths(t))}
    assert bad == {}
