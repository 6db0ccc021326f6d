"""The C analyzer against a checked-in sample, hand-made inputs for each
defect found (a short marker after a long one, #line, escaped names), and a
plain Python reference of its whole output on generated inputs that cross
its 1 MiB read chunks. The reference and the generator are shared with
test_tools_fuzz.py (many more seeded cases) and its kx-macros reference.

The reference reads a line marker / #line by a regular expression of the
shapes documented in bench/tools/kx-marker.h, independent of the C parser:
    #[ \t]*N([ \t]*"NAME"([ \t]*FLAG)*)?[ \t]*\r?   and
    #[ \t]*line[ \t]+N([ \t]*"NAME")?[ \t]*\r?,   0 <= N <= 2147483647;
the next line is line N (C11 6.10.4p3; gcc -E writes a #line so)."""
import json
import random
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ANALYZER = REPO / "bench" / "tools" / "kx-analyze"
DATA = Path(__file__).parent / "data"
PATS = {"choose_expr": b"__builtin_choose_expr", "stmt_expr": b"({",
        "unique_id": b"__UNIQUE_ID_"}
CHUNK = 1 << 20                 # kx-analyze's read size


def analyze(data: bytes, top=5, stdin=None):
    """kx-analyze's JSON; stdin: a file to read instead of a pipe (a file
    gives full 1 MiB reads, so chunk boundaries fall where a test puts them)."""
    p = subprocess.run([str(ANALYZER), "-n", str(top)], input=None if stdin else data,
                       stdin=stdin, capture_output=True, check=True)
    return json.loads(p.stdout)


def count(hay, needle):
    n, i = 0, hay.find(needle)
    while i >= 0:
        n += 1
        i = hay.find(needle, i + 1)
    return n


NAME = rb'"((?:[^"\\]|\\.)*)"'
MARKER = re.compile(rb'#[ \t]*([0-9]+)(?:[ \t]*' + NAME +
                    rb'(?:[ \t]*[0-9]+(?:[ \t]+[0-9]+)*)?)?[ \t]*\r?', re.S)
LINE_DIRECTIVE = re.compile(rb'#[ \t]*line[ \t]+([0-9]+)(?:[ \t]*' + NAME +
                            rb')?[ \t]*\r?', re.S)
ESCAPE = re.compile(rb'\\(?:([0-7]{1,3})|x([0-9a-fA-F]+)|u([0-9a-fA-F]{4})|'
                    rb'U([0-9a-fA-F]{8})|(.))', re.S)
SIMPLE = dict(zip(b"abeEfnrtv", b"\a\b\x1b\x1b\f\n\r\t\v"))


def unescape(s: bytes) -> bytes:
    """A C string literal's body as gcc reads it (kx-marker.h)."""
    def one(m):
        octal, hexa, u4, u8, other = m.groups()
        if octal:
            return bytes([int(octal, 8) & 0xff])
        if hexa:
            return bytes([int(hexa[-2:], 16)])
        if u4 or u8:
            cp = int(u4 or u8, 16)
            if cp <= 0x10ffff and not 0xd800 <= cp <= 0xdfff and \
                    (cp >= 0xa0 or chr(cp) in "$@`"):
                return chr(cp).encode()
            return (b"u" + u4) if u4 else (b"U" + u8)
        return bytes([SIMPLE.get(other[0], other[0])])
    return ESCAPE.sub(one, s)


def directive(line: bytes):
    """(N, file name or None) when the line (without its '\n') is a line
    marker or #line directive, else None."""
    m = MARKER.fullmatch(line) or LINE_DIRECTIVE.fullmatch(line)
    if not m:
        return None
    digits = m.group(1).lstrip(b"0") or b"0"
    if len(digits) > 10 or int(digits) > 2147483647:
        return None
    return int(digits), None if m.group(2) is None else unescape(m.group(2))


def text(name: bytes) -> str:
    """A name as the tools' JSON gives it (bytes that are no UTF-8 as
    lone surrogates, Python's surrogateescape)."""
    return name.decode("utf-8", "surrogateescape")


def lines_of(data: bytes):
    """[(line without '\n', its size with the '\n')]"""
    lines = data.split(b"\n")
    last = lines.pop()
    return [(l, len(l) + 1) for l in lines] + ([(last, len(last))] if last else [])


def reference(data: bytes, top=5):
    """kx-analyze's whole output, computed the plain way."""
    files, per = {}, {}           # name -> index (first named); (index, line) -> counts
    fname, line, markers, code, longest, longest_at = None, 1, 0, 0, 0, None
    totals = dict.fromkeys(PATS, 0)
    for l, size in lines_of(data):
        d = directive(l) if l[:1] == b"#" else None
        if d is not None:
            markers += 1
            line = d[0]
            if d[1] is not None:
                fname = files.setdefault(d[1], len(files))
            continue
        code += size
        c = {k: count(l, pat) for k, pat in PATS.items()}
        for k in PATS:
            totals[k] += c[k]
        if fname is not None:
            e = per.setdefault((fname, line),
                               {"bytes": 0, "out_lines": 0, **dict.fromkeys(PATS, 0)})
            e["bytes"] += size
            e["out_lines"] += 1
            for k in PATS:
                e[k] += c[k]
        if size > longest:
            longest = size
            longest_at = None if fname is None else (fname, line)
        line += 1
    names = [text(n) for n in files]
    rank = sorted(per.items(), key=lambda kv: (-kv[1]["bytes"], kv[0][0], kv[0][1]))
    return {"bytes": len(data), "lines": len(lines_of(data)), "longest_line_bytes": longest,
            "longest_line_at": longest_at and {"file": names[longest_at[0]],
                                               "line": longest_at[1]},
            "marker_lines": markers, "code_bytes": code, "totals": totals,
            "source_lines": len(per),
            "top": [{"file": names[f], "line": n, **e} for (f, n), e in rank[:top]]}


# ---- generated input: every kind of line the tools must tell apart

WORDS = [b"__builtin_choose_expr", b"({", b"__UNIQUE_ID_x_", b"x", b"(", b"{", b" ",
         b"__builtin_choose", b"_expr", b"__UNIQUE_ID", b"__UNIQUE_ID__UNIQUE_ID_",
         b'"', b"\\", b"#", b"# 1", b"\r", b"\t", b"\xc3\xa9", b"\xff", b"\0"]
NAMES = [b"a.c", b"../b.h", b"c.h", b"<built-in>", b"dir with space/x.h", b'q\\"b.h',
         b"back\\\\slash.h", b"\\101\\x42\\x4a.h", b"nl\\n.h", b"\\u00e9\\U0001F600.h",
         b"\\ud800\\u0041\\u0024\\u12.h", b"\\377\\xff\\0.h", b"\xc3\xa9\xff raw.h",
         b"\\q\\x\\e\\?.h", b"semi;F:colon:.h", b"", b"./a.c", b"\\x123456789.h",
         b"\\u0085\\u009f\\u00a0\\u0040\\U00110000\\U0010FFFF.h",
         # raw bytes that are no UTF-8: overlong, surrogate, past U+10FFFF, cut short
         b"\xc0\x80\xc1\xbf\xe0\x80\x80\xed\xa0\x80\xf4\x90\x80\x80\xf5\x80\xe2\x82.h",
         b"\xf0\x9f\x98\x80\xed\x9f\xbf\xee\x80\x80\xf4\x8f\xbf\xbf\x7f\x01.h"]
NUMBERS = [b"0", b"1", b"7", b"42", b"123456", b"2147483647", b"2147483648",
           b"99999999999", b"007", b"0" * 30 + b"5", b"4294967297"]


def blanks(rnd, plus=False):
    return rnd.choice([b" ", b"\t", b"  ", b" \t "] + ([] if plus else [b"", b""]))


def directive_line(rnd):
    """A line marker or #line in one of its shapes, or a near miss."""
    n, name = rnd.choice(NUMBERS), rnd.choice(NAMES)
    if rnd.random() < 0.1:          # any bytes a name may hold, escapes paired
        name = re.sub(rb'\\(.?)|"', lambda m: b"\\" + (m.group(1) or b'"'),
                      bytes(rnd.randrange(256) for _ in range(12)).replace(b"\n", b""), flags=re.S)
    quoted = b"" if rnd.random() < 0.3 else blanks(rnd) + b'"' + name + b'"'
    flags = b"".join(blanks(rnd, True) + rnd.choice([b"1", b"2", b"3", b"4", b"12"])
                     for _ in range(rnd.choice([0, 0, 1, 3])))
    tail = blanks(rnd) + rnd.choice([b"", b"", b"\r"])
    kind = rnd.random()
    if kind < 0.45:
        return b"#" + blanks(rnd) + n + quoted + (flags if quoted else b"") + tail
    if kind < 0.8:
        return b"#" + blanks(rnd) + b"line" + blanks(rnd, True) + n + quoted + tail
    return rnd.choice([
        b"#", b"#lol", b"#lin 5", b"#line5", b"#line", b"#line ", b"# 5 x", b"# x 5",
        b'# 5 "a.c" x', b'#line 5 "a.c" 1', b'# "a.c"', b' # 5 "a.c"', b'# 5 "open',
        b'# 5 "a\\"', b'# 5 "a.c"\r\r', b'# 5\r "a.c"', b"#pragma once", b"# -5",
        b"# +5", b'# 5 L"w.c"', b'#line 5 "a.c" "b.c"', b"#\tline\t8", b"# 5 \x00",
        b'# 5 "a.c"1 3', b'# 5"a.c"', b"# 1 " + b'"' * 3])


def gen_lines(rnd, n, big=False):
    """n lines (bytes, each with its ending) of every kind; big: some
    longer than the 1 MiB read chunk (code, and '#' lines that are or are
    not directives)."""
    crlf = rnd.random() < 0.3
    out = []
    for _ in range(n):
        r = rnd.random()
        if r < 0.35:
            l = directive_line(rnd)
        elif r < 0.45:
            l = bytes(rnd.randrange(256) for _ in range(rnd.choice([1, 5, 40]))).replace(b"\n", b"")
        elif big and r < 0.5:
            l = rnd.choice([
                b"".join(rnd.choice(WORDS) for _ in range(150_000)),
                b'# 5 "' + b"n" * (CHUNK + 7) + b'" 1',            # a directive
                b'# 5 "' + b"({" * (CHUNK // 2 + 3),                 # unterminated: code
                b'# 5 "a.c" ' + b"({ __UNIQUE_ID_" * 80_000])        # code after the name
        else:
            l = b"".join(rnd.choice(WORDS) for _ in range(rnd.choice([0, 1, 3, 20, 200])))
        out.append(l + (b"\r\n" if crlf and rnd.random() < 0.9 else b"\n"))
    return out


def generate(rnd, n, big=False):
    """A whole input: maybe a first marker, n lines, maybe no final newline."""
    lines = gen_lines(rnd, n, big)
    if rnd.random() < 0.7:
        lines.insert(0, b'# 1 "a.c"\n')
    data = b"".join(lines)
    if data and rnd.random() < 0.3:
        data = data.rstrip(b"\n")
    return data


def test_sample_file():
    data = (DATA / "sample.i").read_bytes()
    a = analyze(data, top=3)
    assert a["bytes"] == len(data) == 430
    assert a["lines"] == data.count(b"\n") == 19
    assert a["marker_lines"] == 8
    assert a["longest_line_bytes"] == 90
    assert a["longest_line_at"] == {"file": "../arch/x86/xen/setup.c", "line": 13}
    top = a["top"][0]
    assert (top["file"], top["line"]) == ("../arch/x86/xen/setup.c", 13)
    assert (top["choose_expr"], top["stmt_expr"], top["unique_id"]) == (1, 1, 2)
    # the header's first code line: 3 blank lines after its marker
    assert {"file": "../include/linux/minmax.h", "line": 4} == \
        {k: a["top"][1][k] for k in ("file", "line")}
    # #pragma is code, not a marker
    assert (a["top"][2]["line"], a["top"][2]["bytes"]) == (15, 28)


def test_empty_input():
    a = analyze(b"")
    assert (a["bytes"], a["lines"], a["top"]) == (0, 0, [])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_matches_reference_across_chunks(seed, tmp_path):
    rnd = random.Random(seed)
    data = generate(rnd, 120, big=True)
    while len(data) < 3 * CHUNK:
        data += generate(rnd, 40, big=True)
    f = tmp_path / "in.i"
    f.write_bytes(data)
    with f.open("rb") as stdin:
        assert analyze(data, top=100_000, stdin=stdin) == reference(data, top=100_000)
    assert analyze(data, top=3) == reference(data, top=3)          # through a pipe


def test_short_marker_after_a_long_one():
    """The number of "# 7" was read from a buffer never terminated: it
    still held "123456" of the marker before, so the line was 723456."""
    a = analyze(b'# 123456 "a.c"\n# 7\nx\n')
    assert a["top"][0]["line"] == 7 and a["longest_line_at"] == {"file": "a.c", "line": 7}


def test_line_directive_sets_the_next_line():
    """#line N "F" and #line N: the next line is line N (of F), as with a
    marker; they were counted as markers and their numbers ignored."""
    a = analyze(b'x\n#line 10 "b.c"\ny\nz\n#line 20\nw\n# line\t30 "c.c"\r\nv\n', top=9)
    got = {(t["file"], t["line"]): t["bytes"] for t in a["top"]}
    assert got == {("b.c", 10): 2, ("b.c", 11): 2, ("b.c", 20): 2, ("c.c", 30): 2}
    assert a["marker_lines"] == 3 and a["code_bytes"] == 10


def test_marker_names_are_unescaped_and_flags_ignored():
    """gcc writes a name with '"' and '\\' escaped ("q\\"b\\\\c d.c") and
    reads C escapes in it; the JSON name is the file's real name."""
    a = analyze(b'# 1 "q\\"b\\\\c d.c" 1 3 4\nx\n# 9 "\\101\\x42\\n\\u00e9\\377"\ny\n', top=9)
    assert [t["file"] for t in a["top"]] == ['q"b\\c d.c', "AB\n\u00e9\udcff"]


def test_lines_like_directives_are_code():
    """'#' lines of any other shape are code (the old code took every
    "# ..." and "#l..." line for a marker)."""
    lines = [b"#", b"#lol", b"# 5 x", b'#line 5 "a.c" 1', b"# 2147483648", b'# 5 "open']
    a = analyze(b'# 1 "a.c"\n' + b"\n".join(lines) + b"\n", top=99)
    assert a["marker_lines"] == 1
    assert [t["line"] for t in sorted(a["top"], key=lambda t: t["line"])] == [1, 2, 3, 4, 5, 6]


def test_usage_matches_the_documented_synopsis():
    """The header promised "-s SELF", which the tool never had (removed)."""
    p = subprocess.run([str(ANALYZER), "-s", "x"], capture_output=True, text=True)
    assert p.returncode == 2 and "usage: kx-analyze [-H] [-n TOP]" in p.stderr
    head = (REPO / "bench/tools/kx-analyze.c").read_text().split("*/")[0]
    assert "| kx-analyze [-H] [-n TOP]\n" in head and "SELF" not in head


def test_top_is_sorted_and_limited():
    data = b'# 1 "f.c"\n' + b"".join(b"x" * n + b"\n" for n in (5, 50, 500, 1))
    a = analyze(data, top=2)
    assert [t["line"] for t in a["top"]] == [3, 2]
    assert a["source_lines"] == 4


def test_bad_option_is_usage_error():
    p = subprocess.run([str(ANALYZER), "-n", "x"], capture_output=True)
    assert p.returncode == 2 and b"usage" in p.stderr
