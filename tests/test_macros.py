"""Macro attribution on a fixture whose figures are counted by hand
(tests/data/macros: nest.h, fixture.c), the stack pruning, the flame graph
and macros.csv. Line 5 of fixture.c, `return QUAD(y);`, preprocesses to
    " return (((((y) + (y))) + (((y) + (y)))) - 1);\\n"        (47 bytes)
QUAD(x) is `(TWICE(TWICE(x)) - 1)`, TWICE(x) is `((x) + (x))`: the inner
TWICE's result is substituted twice into the outer one, so three copies of
TWICE's 7 body characters reach the output (own 21), QUAD's own are
"(", "-", "1", ")" (4), the source's are "return", four "y" and ";" (11),
and the rest is 10 spaces and the newline (11)."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from bench.measure import macros
from plots import flame
from plots import macros as pmacros
from kbuild import sandbox

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests/data/macros"


def own(*args, cwd=FIX):
    e = subprocess.run(["gcc", "-E", "-fdebug-cpp", "fixture.c", "-o", "-"],
                       cwd=cwd, check=True, capture_output=True).stdout
    p = subprocess.run([str(macros.OWN_TOOL), *args], input=e, cwd=cwd,
                       check=True, capture_output=True)
    return json.loads(p.stdout)


def plain_bytes():
    return len(subprocess.run(["gcc", "-E", "fixture.c", "-o", "-"], cwd=FIX,
                              check=True, capture_output=True).stdout)


def test_own_bytes_by_hand():
    d = own("-l", "fixture.c:5", "-l", "fixture.c:8")
    by = {m["name"]: m["own_bytes"] for m in d["macros"]}
    assert by == {"TWICE": 21, "QUAD": 4, "LONG_DEF": 4}
    l5, l8 = d["lines"]
    assert l5["bytes"] == 47
    assert {m["name"]: m["own_bytes"] for m in l5["macros"]} == {"TWICE": 21, "QUAD": 4}
    assert l5["classes"]["<source>"] == 11 and l5["classes"]["<markers>"] == 11
    # a #define continued over three lines: "(", "*", "2", ")" are its own
    assert {m["name"]: m["own_bytes"] for m in l8["macros"]} == {"LONG_DEF": 4}
    assert l8["classes"]["<source>"] == 20          # int g(int z){return z;}
    # "y + 1" made by NAME's '#', v1 by GLUE's '##'
    assert d["classes"]["<stringified>"] == len('"y + 1"')
    assert d["classes"]["<pasted>"] == len("v1")


def test_every_byte_is_in_one_row():
    d = own()
    assert d["bytes"] == plain_bytes()
    assert sum(d["classes"].values()) + d["macro_bytes"] == d["bytes"]


def test_locations_inside_literals_are_text(tmp_path):
    """A string that looks like a location prefix is counted as text."""
    (tmp_path / "fixture.c").write_text(
        'const char *t = "{P:x;L:1;C:1}";\nchar q = \'"\';\n'
        '#define S(x) #x\nconst char *u = S({P:y});\n')
    d = own(cwd=tmp_path)
    plain = subprocess.run(["gcc", "-E", "fixture.c", "-o", "-"], cwd=tmp_path,
                           check=True, capture_output=True).stdout
    assert d["bytes"] == len(plain)
    assert sum(d["classes"].values()) + d["macro_bytes"] == d["bytes"]


def test_unreadable_headers_are_not_claimed(tmp_path):
    """Run elsewhere, the tool cannot read the files: every token is
    <unread>, none is given to a macro or to the source, the total holds."""
    e = subprocess.run(["gcc", "-E", "-fdebug-cpp", "fixture.c", "-o", "-"],
                       cwd=FIX, check=True, capture_output=True).stdout
    d = json.loads(subprocess.run([str(macros.OWN_TOOL)], input=e, cwd=tmp_path,
                                  check=True, capture_output=True).stdout)
    assert d["macro_bytes"] == 0 and d["classes"]["<source>"] == 0
    assert d["classes"]["<unread>"] == 29 + 62 + 7 + 2      # all but <markers>
    assert d["bytes"] == plain_bytes()


def test_line_without_macros_lists_none():
    """fixture.c:3 (`int f(int y)`) has no macro bytes; its row listed the
    whole file's macros (a line with no per-macro array was taken for the
    file)."""
    l3 = own("-l", "fixture.c:3")["lines"][0]
    assert l3["bytes"] == len("int f(int y)\n")
    assert (l3["macro_bytes"], l3["n_macros"], l3["macros"]) == (0, 0, [])


def tool(data, *args, cwd=None):
    p = subprocess.run([str(macros.OWN_TOOL), *args], input=data, cwd=cwd,
                       capture_output=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_short_marker_after_a_long_one(tmp_path):
    """The number of "# 7" was read from a buffer never terminated: the
    line after it counted for a.c:723456 (kx-analyze had the same bug)."""
    pre = b"{P:<built-in>;F:<NULL>;L:0;C:0;S:0;M:0;E:0,LOC:1,R:1}"
    d = tool(pre + b'# 123456 "a.c"\n# 7\nx\n', "-l", "a.c:7", "-l", "a.c:723456",
             cwd=tmp_path)
    assert [(l["line"], l["bytes"]) for l in d["lines"]] == [(7, 2), (723456, 0)]


def test_line_directives_and_escaped_names_move_the_line(tmp_path):
    """#line N "F" and #line N set the next line as a marker does (they
    were ignored); a marker's name is read with its escapes."""
    data = b'#line 10 "b.c"\nx\n#line 20\nyy\n# 5 "q\\"b.c" 1\nzzz\n'
    d = tool(data, "-l", "b.c:10", "-l", "b.c:20", "-l", 'q"b.c:5', cwd=tmp_path)
    assert [l["bytes"] for l in d["lines"]] == [2, 3, 4]


def test_text_before_any_location_prefix(tmp_path):
    """Text with no location prefix before it crashed the tool (a NULL
    file table); it has no location: <command-line>."""
    d = tool(b"abc\n", cwd=tmp_path)
    assert (d["bytes"], d["classes"]["<command-line>"], d["classes"]["<markers>"]) == (4, 3, 1)


def test_a_line_selected_twice_is_a_usage_error():
    """Two -l for one line (also "./a.c" and "a.c") would give two
    different rows for it."""
    p = subprocess.run([str(macros.OWN_TOOL), "-l", "a.c:1", "-l", "./a.c:1"], input=b"",
                       capture_output=True)
    assert p.returncode == 2 and b"usage" in p.stderr


HOSTILE = {
    "literal-lookalikes": 'const char *t = "{P:x;L:1;C:1}";\nchar q = \'"\';\n'
                          '#pragma message "{P:x;L:1;C:1}"\n'
                          '_Pragma("message(\\"hi {P:\\")") int z;\n',
    "lone-quote": "#define APOS '\nint a = 1; APOS int b = 2;\n",
    "device-marker": '#line 1 "/dev/zero"\nint a;\n#line 5 "fixture.c"\nint b;\n',
    "brace-path": '#line 1 "we}ird;F:x.h"\nint a;\n',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_sources_still_add_up(tmp_path, name):
    (tmp_path / "fixture.c").write_text(HOSTILE[name])
    d = own(cwd=tmp_path)
    plain = subprocess.run(["gcc", "-E", "fixture.c", "-o", "-"], cwd=tmp_path,
                           capture_output=True).stdout
    assert d["bytes"] == len(plain)
    assert sum(d["classes"].values()) + d["macro_bytes"] == d["bytes"]


@pytest.mark.parametrize("eol", ["\n", "\r\n", " \n"])
def test_defines_continued_and_commented(tmp_path, eol):
    """A #define continued with CRLF or a blank after the backslash, and
    comment openers inside literals, do not move the #define's lines."""
    cont = "\\" + eol
    (tmp_path / "h.h").write_text(
        'static const char glob[] = "/*";\n'
        f"#define ADD(a) ({cont}a + {cont}1)\n"
        '#define GLOB "dir/*"\nint y = 2;\n')
    (tmp_path / "fixture.c").write_text('#include "h.h"\nint f(int q) { return ADD(q); }\n')
    d = own(cwd=tmp_path)
    by = {m["name"]: m["own_bytes"] for m in d["macros"]}
    assert by == {"ADD": len("(") + len("+") + len("1") + len(")")}
    assert sum(d["classes"].values()) + d["macro_bytes"] == d["bytes"]


def stacks(tmp_path):
    folded = tmp_path / "f.folded"
    p = subprocess.run([str(macros.STACK_TOOL), "-l", "fixture.c:5", "-f", str(folded),
                        "--", "clang", "fixture.c"], cwd=FIX, check=True,
                       capture_output=True, text=True)
    return json.loads(p.stdout), folded.read_text()


def test_inclusive_bytes_calls_and_stacks_by_hand(tmp_path):
    """clang counts a token's length plus one for a leading space: QUAD's
    expansion is the 37 characters after "return", plus the space before
    it (38); TWICE's, 21 + four "y" + six spaces (31)."""
    d, folded = stacks(tmp_path)
    line = d["lines"][0]
    inc = {m["name"]: (m["inclusive_bytes"], m["calls"]) for m in line["macros"]}
    assert inc == {"QUAD": (38, 1), "TWICE": (31, 2)}
    assert line["bytes_est"] == 46          # 47 less the newline
    # the inner TWICE was called inside QUAD, as the outer one's argument
    assert folded.splitlines() == ["fixture.c:5 8", "fixture.c:5;QUAD 7",
                                   "fixture.c:5;QUAD;TWICE 9",
                                   "fixture.c:5;QUAD;TWICE;TWICE 22"]
    whole = {m["name"]: m["calls"] for m in d["macros"]}
    assert whole == {"QUAD": 1, "TWICE": 2, "NAME": 1, "GLUE": 1, "LONG_DEF": 1}


def test_stack_tool_writes_json_for_any_file_name(tmp_path):
    """A header whose name is not UTF-8 made kx-macrostack write invalid
    JSON; the name's bytes now come back through surrogateescape."""
    name = b"h\xff.h"
    (tmp_path / os.fsdecode(name)).write_text("#define TWICE(x) ((x)+(x))\n")
    (tmp_path / "m.c").write_bytes(b'#include "' + name + b'"\nint f(int y) { return TWICE(y); }\n')
    p = subprocess.run([str(macros.STACK_TOOL), "-l", "m.c:2", "--", "clang", "m.c"],
                       cwd=tmp_path, check=True, capture_output=True)
    (m,) = json.loads(p.stdout)["macros"]
    assert m["name"] == "TWICE" and os.fsencode(m["at"]) == name + b":1"


def test_stack_tool_names_a_bad_command():
    p = subprocess.run([str(macros.STACK_TOOL), "--", "clang", "no-such-file.c"],
                       cwd=FIX, capture_output=True, text=True)
    assert p.returncode != 0 and "no-such-file.c" in p.stderr


def test_prune_keeps_the_sum_and_merges_narrow_stacks():
    raw = [("l", 10), ("l;a", 500), ("l;a;b", 480), ("l;a;c", 1), ("l;a;c;d", 2),
           ("l;e", 7)]
    total = sum(b for _, b in raw)
    out = macros.prune(raw, total, frac=0.01)
    assert sum(b for _, b in out) == total
    assert dict(out) == {"l": 17, "l;a": 503, "l;a;b": 480}


def test_flame_graph_has_a_frame_per_stack():
    svg = flame.flame_svg([["l", 8], ["l;QUAD", 7], ["l;QUAD;TWICE", 9],
                           ["l;QUAD;TWICE;TWICE", 22]], "fixture.c:5")
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert svg.count("<rect") == 1 + 4         # background + l, QUAD, TWICE x2
    assert "QUAD (38 bytes, 82.61%)" in svg


@pytest.fixture()
def records():
    g = {"status": "ok", "bytes": 100, "macro_bytes": 60, "other_macros_bytes": 10,
         "classes": {"<source>": 20, "<stringified>": 5, "<pasted>": 5,
                     "<command-line>": 0, "<markers>": 10},
         "macros": [{"name": "min", "own_bytes": 30}, {"name": "max", "own_bytes": 20}]}
    c = {"status": "ok", "bytes_est": 90, "macros": [
        {"name": "min", "inclusive_bytes": 80, "calls": 2}]}
    return [{"commit": "c1", "compiler": "gcc", "files": {"f.c": {"macros": g}}},
            {"commit": "c1", "compiler": "clang", "files": {"f.c": {"macros": c}}}]


def test_macros_csv_rows_add_up(records):
    index = {"points": [{"name": "p", "commit": "c1"}], "files": ["f.c"]}
    rows = pmacros.csv_rows(index, records)
    gcc = [r for r in rows if r["compiler"] == "gcc"]
    assert sum(r["own_bytes"] for r in gcc) == 100
    assert {r["macro"] for r in gcc} >= {"<source>", "<markers>", "<other macros>"}
    clang = [r for r in rows if r["compiler"] == "clang"]
    assert clang == [{"point": "p", "commit": "c1", "compiler": "clang", "file": "f.c",
                      "macro": "min", "inclusive_bytes": 80, "calls": 2,
                      "defined_at": None}]


def test_changes_rank_by_size_of_change():
    a = [{"name": "min", "own_bytes": 1000}, {"name": "max", "own_bytes": 10}]
    b = [{"name": "min", "own_bytes": 100}, {"name": "max", "own_bytes": 20},
         {"name": "umin", "own_bytes": 15}]
    out = macros.changes(a, b, "own_bytes")
    assert out[0] == ("min", 1000, 100)
    assert ("umin", None, 15) in out


def test_opaque_text_keeps_parameters_and_line_numbers():
    text = "a\n#define F(x, ...) \\\n\tg(x, __VA_ARGS__)\n#define O 1\nz\n"
    new = macros.opaque_text(text, "F", 2)
    assert new.split("\n") == ["a", "#define F(x, ...) __kx_opaque_F(x, __VA_ARGS__)",
                               "", "#define O 1", "z", ""]
    assert macros.opaque_text(text, "O", 4).split("\n")[3] == "#define O __kx_opaque_O"
    assert macros.opaque_text(text, "F", 4) is None


def test_counterfactual_by_hand(tmp_path, monkeypatch):
    """QUAD made opaque: " return __kx_opaque_QUAD(y);" counts 28, so 18 of
    the 46 bytes go, not QUAD's 38 inclusive: the call keeps 20. TWICE
    made opaque: two calls with 17-character names, 54 bytes, 8 more."""
    monkeypatch.setenv(sandbox.ENV, "0")   # a fixture outside a tree: run bare
    tree = tmp_path / "tree"
    (tree / "inc").mkdir(parents=True)
    (tree / "kb").mkdir()
    (tree / "inc/nest.h").write_text((FIX / "nest.h").read_text())
    (tree / "fixture.c").write_text((FIX / "fixture.c").read_text().replace(
        '#include "nest.h"', "#include <nest.h>"))
    flags, src = ["clang", "-I../inc"], "../fixture.c"
    d = macros.run_stack_tool(tree / "kb", flags, src, "fixture.c:5")
    line = d["lines"][0]
    out = macros.counterfactual(tree / "kb", flags, src, "fixture.c:5",
                                line["macros"], line["bytes_est"])
    got = {r["name"]: (r["applied"], r["inclusive_bytes"], r["line_bytes_opaque"],
                       r["removed_bytes"]) for r in out}
    assert got == {"QUAD": (True, 38, 28, 18), "TWICE": (True, 31, 54, -8)}


def test_changes_tell_two_definitions_of_a_name_apart():
    """notrace is defined twice; each definition is its own macro."""
    a = [{"name": "notrace", "at": "asm/linkage.h:9", "own_bytes": 191_412},
         {"name": "notrace", "at": "linux/compiler_types.h:156", "own_bytes": 1_247}]
    b = [{"name": "notrace", "at": "asm/linkage.h:9", "own_bytes": 191_412},
         {"name": "__is_constexpr", "at": "linux/const.h:12", "own_bytes": 50_000}]
    out = dict((n, (x, y)) for n, x, y in macros.changes(a, b, "own_bytes"))
    assert out["notrace (asm/linkage.h:9)"] == (191_412, 191_412)
    assert out["notrace (linux/compiler_types.h:156)"] == (1_247, None)


def test_changes_follow_a_macro_whose_definition_moved():
    """An edited header moves a #define; across two commits it is the
    same macro."""
    a = [{"name": "min3", "at": "linux/minmax.h:116", "inclusive_bytes": 47_886_644}]
    b = [{"name": "min3", "at": "linux/minmax.h:119", "inclusive_bytes": 42_503}]
    assert macros.changes(a, b, "inclusive_bytes") == [("min3", 47_886_644, 42_503)]


def test_counterfactual_uses_the_definition_the_line_used(tmp_path, monkeypatch):
    """W is defined in a.h, then #undef'd and defined again in b.h; the
    line uses b.h's: that one is made opaque, and it removes bytes."""
    monkeypatch.setenv(sandbox.ENV, "0")   # a fixture outside a tree: run bare
    tree = tmp_path / "tree"
    (tree / "inc").mkdir(parents=True)
    (tree / "kb").mkdir()
    (tree / "inc/a.h").write_text("#define W(x) ((x)+(x))\n")
    (tree / "inc/b.h").write_text("#undef W\n#define W(x) ((x)+(x)+(x)+(x)+(x)+(x)+(x)+(x))\n")
    (tree / "r.c").write_text("#include <a.h>\nint p(int y) { return W(y); }\n"
                              "#include <b.h>\nint q(int y) { return W(W(y)); }\n")
    flags, src = ["clang", "-I../inc"], "../r.c"
    d = macros.run_stack_tool(tree / "kb", flags, src, "r.c:4")
    line = d["lines"][0]
    assert line["macros"][0]["at"] == "inc/b.h:2"
    (row,) = macros.counterfactual(tree / "kb", flags, src, "r.c:4",
                                   line["macros"], line["bytes_est"])
    assert row["applied"] and row["removed_bytes"] > 0
