"""The C analyzer against a checked-in sample, hand-made inputs for each
defect found (a short marker after a long one, #line, escaped names), and a
plain Python reference of its whole output on generated inputs that cross
its 1 MiB read chunks. The reference and the generator are shared with
test_tools_fuzz.py (many more seeded cases) and its kx-macros reference.

The reference reads a line marker / #line by a regular expression of the
shapes documented in bench/tools/kx-marker.h, independent of the C parser:
    #[ \t]*N([ \t]*"NAME"([ \t]*FLAG)*)?[ \t]*\r?   and
    #[ \t]*line[ \t]+N([ \t]*"NAME")?[ \t]*\r?,   0 <= N <= 2147483647;
the next line is line N (C11 6.10.4p3; gcc -E writes a #line so).

With -H (bytes by header, /work/hdr-spec.md) the reference follows the
flags that regular expression captures, a FLAG written "1" entering and "2"
returning, on a list of open includes, and gives each line to the file
current after it (header_reference)."""
import json
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ANALYZER = REPO / "bench" / "tools" / "kx-analyze"
DATA = Path(__file__).parent / "data"
PATS = {"choose_expr": b"__builtin_choose_expr", "stmt_expr": b"({",
        "unique_id": b"__UNIQUE_ID_"}
CHUNK = 1 << 20                 # kx-analyze's read size


def analyze(data: bytes, top=5, stdin=None, hdr=False):
    """kx-analyze's JSON; stdin: a file to read instead of a pipe (a file
    gives full 1 MiB reads, so chunk boundaries fall where a test puts them);
    hdr: with -H."""
    p = subprocess.run([str(ANALYZER), *(["-H"] if hdr else []), "-n", str(top)],
                       input=None if stdin else data, stdin=stdin, capture_output=True,
                       check=True)
    return json.loads(p.stdout)


def count(hay, needle):
    n, i = 0, hay.find(needle)
    while i >= 0:
        n += 1
        i = hay.find(needle, i + 1)
    return n


NAME = rb'"((?:[^"\\]|\\.)*)"'
MARKER = re.compile(rb'#[ \t]*([0-9]+)(?:[ \t]*' + NAME +
                    rb'((?:[ \t]*[0-9]+(?:[ \t]+[0-9]+)*)?))?[ \t]*\r?', re.S)
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
    """(N, file name or None, [flags as written]) when the line (without
    its '\n') is a line marker or #line directive, else None."""
    m = MARKER.fullmatch(line) or LINE_DIRECTIVE.fullmatch(line)
    if not m:
        return None
    digits = m.group(1).lstrip(b"0") or b"0"
    if len(digits) > 10 or int(digits) > 2147483647:
        return None
    flags = re.findall(rb"[0-9]+", m.group(3) or b"") if m.re is MARKER else []
    return int(digits), None if m.group(2) is None else unescape(m.group(2)), flags


def text(name: bytes) -> str:
    """A name as the tools' JSON gives it (bytes that are no UTF-8 as
    lone surrogates, Python's surrogateescape)."""
    return name.decode("utf-8", "surrogateescape")


def lines_of(data: bytes):
    """[(line without '\n', its size with the '\n')]"""
    lines = data.split(b"\n")
    last = lines.pop()
    return [(l, len(l) + 1) for l in lines] + ([(last, len(last))] if last else [])


def header_reference(data: bytes):
    """-H's fields, the plain way: each line to the file current after it,
    includes on a list of (includer, header), edges an ordered set."""
    index, own, unattributed = {}, [], 0      # name -> index; own bytes by index
    cur, open_, edges = None, [], {}
    for l, size in lines_of(data):
        d = directive(l) if l[:1] == b"#" else None
        if d is not None and d[1] is not None:
            n, name, flags = d
            before = cur
            if name not in index:
                index[name] = len(own)
                own.append(0)
            cur = index[name]
            if b"1" in flags:
                if before is not None:
                    open_.append((before, cur))
            elif b"2" in flags:
                by_cur = [k for k, (includer, _) in enumerate(open_) if includer == cur]
                if by_cur:
                    k = by_cur[-1]
                    closed = open_[k:]
                    del open_[k:]
                    # innermost first; only the one by cur returned (its line)
                    for j in range(len(closed) - 1, -1, -1):
                        line = max(n - 1, 0) if j == 0 else 0
                        edges.setdefault((closed[j][0], line, closed[j][1]))
        if cur is None:
            unattributed += size
        else:
            own[cur] += size
    for includer, header in open_:
        edges.setdefault((includer, 0, header))
    return {"headers": [[text(name), own[i]] for name, i in index.items()],
            "unattributed_bytes": unattributed, "includes": [list(e) for e in edges]}


def reference(data: bytes, top=5, hdr=False):
    """kx-analyze's whole output, computed the plain way; hdr: -H's."""
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
            "top": [{"file": names[f], "line": n, **e} for (f, n), e in rank[:top]],
            **(header_reference(data) if hdr else {})}


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


INC_NAMES = [b"m.c", b"a.h", b"b.h", b"sub/c.h", b'q\\"b.h', b"\\101.h", b"A.h",
             b"<built-in>", b"e\\\\f.h", b"\\u00e9.h"]


class IncludeLines:
    """Lines of a gcc-like stream of nested includes, its state kept from
    call to call: enter (flag 1, at times with 3 and 4, or 1 2) and return
    (flag 2 naming the includer, "# L+1", at times 0) pairs, returns that
    skip levels or name a file with no open include, #line switching file
    inside a header, plain markers, near-miss flags ("12", "02", "3"),
    any other directive, code; includes left open at the end."""

    def __init__(self, rnd):
        self.rnd, self.stack, self.cur, self.line = rnd, [], None, 1
        self.crlf = rnd.random() < 0.2

    def one(self):
        rnd, r = self.rnd, self.rnd.random()
        if r < 0.22 and len(self.stack) < 15:
            h = rnd.choice(INC_NAMES)
            flags = rnd.choice([b" 1", b" 1", b" 1 3", b" 1 3 4", b"\t1\t4", b" 1 2", b"1"])
            l = b'# 1 "%s"%s' % (h, flags)
            if self.cur is not None:
                self.stack.append((self.cur, self.line))
            self.cur, self.line = h, 1
        elif r < 0.42 and self.stack:
            k = len(self.stack) - 1 if rnd.random() < 0.85 else rnd.randrange(len(self.stack))
            includer, at = self.stack[k]
            del self.stack[k:]
            if rnd.random() < 0.1:
                includer = rnd.choice(INC_NAMES)     # maybe no open include by it
            n = at + 1 if rnd.random() < 0.95 else 0
            flags = rnd.choice([b" 2", b" 2", b" 2", b" 2 3", b" 2 3 4", b"\t2", b" 3 2", b" 12",
                                b" 02", b" 3"])
            l = b'# %d "%s"%s' % (n, includer, flags)
            self.cur, self.line = includer, n
        elif r < 0.47:
            h, n = rnd.choice(INC_NAMES), rnd.randint(0, 30)
            l = b'#line %d "%s"' % (n, h)
            self.cur, self.line = h, n
        elif r < 0.53:
            self.line += rnd.randint(0, 9)
            if self.cur is None or rnd.random() < 0.3:
                l = b"# %d" % self.line
            else:
                l = b'# %d "%s"%s' % (self.line, self.cur, rnd.choice([b"", b" 3", b" 3 4"]))
        elif r < 0.58:
            l = directive_line(rnd)
        else:
            l = b"".join(rnd.choice(WORDS) for _ in range(rnd.choice([0, 1, 3, 20])))
            self.line += 1
        return l + (b"\r\n" if self.crlf and rnd.random() < 0.9 else b"\n")

    def lines(self, n):
        return b"".join(self.one() for _ in range(n))


def generate_includes(rnd, n):
    """A whole input of nested includes: maybe code before the first
    marker, maybe a main file's marker, maybe no final newline."""
    data = b"".join(rnd.choice(gen_lines(rnd, 3)) for _ in range(rnd.choice([0, 0, 1, 3])))
    if rnd.random() < 0.7:
        data += b'# 1 "m.c"\n'
    data += IncludeLines(rnd).lines(n)
    if data and rnd.random() < 0.3:
        data = data.rstrip(b"\n")
    return data


def check_headers(a):
    """-H's invariant: every byte in one file or unattributed."""
    assert sum(own for _, own in a["headers"]) + a["unattributed_bytes"] == a["bytes"]
    assert all(0 <= i < len(a["headers"]) and 0 <= j < len(a["headers"])
               for i, _, j in a["includes"])
    return a


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


def test_many_lines_match_reference_by_any_top():
    """The line table keeps blocks of 16 lines of a file and finds them
    through a hash; the top is picked without sorting every line when it
    is short (under 64). Tens of thousands of lines, runs broken by jumps
    anywhere up to the largest marker line, files coming back, many equal
    byte counts, then more blocks than the first block array holds: both
    ways give the reference's order (bytes, then file in the order first
    named, then line)."""
    rnd = random.Random(33)
    out = []
    for _ in range(1500):
        name = b"f%d.h" % rnd.randrange(40)
        line = rnd.choice([0, 1, rnd.randrange(100), rnd.randrange(2**31 - 40), 2**31 - 1])
        out.append(b'# %d "%s"\n' % (line, name))
        out += [b"x" * rnd.choice([0, 1, 2, 7]) + b"\n" for _ in range(rnd.randrange(40))]
    # then 6,000 lines alone, each in a block of its own, over 3,000 files:
    # the blocks, the entries and the hash all grow while a block is in use
    for i in range(6000):
        out.append(b'# %d "g%d.h"\n' % (rnd.randrange(2**31 - 1), i % 3000))
        out.append(b"y" * rnd.choice([1, 3]) + b"\n")
    data = b"".join(out)
    for top in (0, 1, 5, 63, 64, 10**6):
        assert analyze(data, top=top) == reference(data, top=top), top
    assert check_headers(analyze(data, top=7, hdr=True)) == reference(data, top=7, hdr=True)


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


# ---- -H: bytes by header and include edges

def test_headers_hand_made():
    """Every rule of -H on one input, the expected values worked out by hand:
    lines before the first name (a nameless directive too) unattributed;
    flags 1 3 4 enter; #line switches file inside a header (no edge); a
    nameless marker stays in its file; a return closes the include of its
    includer at N - 1; a header included from two lines gives two edges, the
    same edge twice one; a return to a file with no open include pops
    nothing; a return to an outer includer closes the includes above it
    (LINE 0); flags 1 2 enter; 3 and 12 are no flags here; includes never
    closed come last with LINE 0; CRLF and escaped names."""
    lines = [b"x\n", b"#line 3\n",                                   # unattributed: 10
             b'# 1 "m.c"\n', b"int m;\n",                              # m.c
             b'# 1 "a.h" 1 3 4\n', b"a\n",                             # a.h (m.c:?)
             b'# 1 "b.h" 1\n',                                         # b.h (a.h:?)
             b'#line 5 "c.h"\n', b"c\n", b"# 7\n",                    # c.h
             b'# 2 "a.h" 2\n',                                         # a.h:1 -> b.h
             b'# 3 "m.c" 2\n',                                         # m.c:2 -> a.h
             b'# 1 "a.h" 1\n', b'# 4 "m.c" 2\n',                       # m.c:3 -> a.h
             b'# 1 "a.h" 1\n', b'# 4 "m.c" 2\n',                       # the same edge
             b'# 1 "q\\"b.h" 1 3\r\n',                                  # q"b.h (m.c:?)
             b'# 9 "zz.h" 2\r\n',                                      # nothing open by zz.h
             b'# 1 "\\101.h" 1\n', b"y\r\n",                           # A.h (zz.h:?)
             b'# 6 "m.c" 2\n',                        # zz.h:0 -> A.h, m.c:5 -> q"b.h
             b'# 1 "d.h" 1\n', b'# 1 "e.h" 1 2\n', b'# 4 "e.h" 3\n', b'# 5 "e.h" 12\n',
             b"z"]                                                     # no final newline
    data = b"".join(lines)
    a = analyze(data, hdr=True)
    assert a["headers"] == [["m.c", 65], ["a.h", 54], ["b.h", 12], ["c.h", 20],
                            ['q"b.h', 18], ["zz.h", 14], ["A.h", 18], ["d.h", 12],
                            ["e.h", 40]]
    assert a["unattributed_bytes"] == 10 and a["bytes"] == len(data) == 263
    assert a["includes"] == [[1, 1, 2], [0, 2, 1], [0, 3, 1], [5, 0, 6], [0, 5, 4],
                             [0, 0, 7], [7, 0, 8]]
    assert a == reference(data, hdr=True)
    # and without -H, none of it
    assert not {"headers", "unattributed_bytes", "includes"} & analyze(data).keys()


@pytest.mark.parametrize("data", [b"", b"x", b"x\n# 5\n", b'# 1 "a.c" 2\n', b'# 1 "a.c" 1\n',
                                  b'# 0 "a.c"\n# 0 "b.h" 1\n# 0 "a.c" 2\n',
                                  b'# 1 "a.c"\n# 1 "a.c" 1\n# 2 "a.c" 2\n'])
def test_headers_edge_inputs(data):
    """Empty input, no name at all, a return or an enter with nothing
    before it, "# 0" returns (LINE 0), a file that includes itself."""
    a = check_headers(analyze(data, hdr=True))
    assert a == reference(data, hdr=True)


def test_headers_adds_fields_and_changes_nothing_else():
    """The -H output is the plain output, byte for byte, with the three
    fields before its closing brace."""
    rnd = random.Random(7)
    for _ in range(40):
        data = generate_includes(rnd, rnd.choice([0, 3, 60]))
        plain = subprocess.run([str(ANALYZER)], input=data, capture_output=True,
                               check=True).stdout
        with_h = subprocess.run([str(ANALYZER), "-H"], input=data, capture_output=True,
                                check=True).stdout
        assert plain.endswith(b"]}\n") and b'"headers"' not in plain
        assert with_h.startswith(plain[:-2] + b', "headers": [')


@pytest.mark.parametrize("seed", [4, 5])
def test_headers_match_reference_across_chunks(seed, tmp_path):
    """Several MiB of nested includes with lines over 1 MiB, through a file
    (full 1 MiB reads) and a pipe."""
    rnd = random.Random(seed)
    inc = IncludeLines(rnd)
    data = b'# 1 "m.c"\n'
    while len(data) < 3 * CHUNK:
        data += inc.lines(200) + b"".join(gen_lines(rnd, 20, big=True))
    f = tmp_path / "in.i"
    f.write_bytes(data)
    with f.open("rb") as stdin:
        a = check_headers(analyze(data, top=10, stdin=stdin, hdr=True))
    want = reference(data, top=10, hdr=True)
    assert a == want
    assert len(a["includes"]) > 20
    assert analyze(data, top=3, hdr=True) == {**want, "top": want["top"][:3]}   # a pipe


REAL = {"main.c": '#include "outer.h"\n\n#include "inner.h"\nint main(void)\n{\n'
                  "\treturn OUTER + INNER;\n}\n",
        "outer.h": '/* outer */\n#include "inner.h"\n#define OUTER 1\nint outer;\n',
        "inner.h": "#ifndef INNER_H\n#define INNER_H\n#define INNER 2\nint inner;\n#endif\n"}


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_headers_of_a_real_compile(cc, tmp_path):
    """A real `-E`: main.c includes outer.h on line 1, which includes
    inner.h on its line 2; main.c's second #include "inner.h" (line 3) is
    skipped by the include guard and leaves no marker. The compiler must
    be installed (a missing one fails)."""
    exe = shutil.which(cc)
    assert exe, f"{cc} is not installed"
    for name, body in REAL.items():
        (tmp_path / name).write_text(body)
    data = subprocess.run([exe, "-E", "main.c"], cwd=tmp_path, capture_output=True,
                          check=True).stdout
    a = check_headers(analyze(data, hdr=True))
    assert a == reference(data, hdr=True)
    names = [n for n, _ in a["headers"]]
    assert names[0] == "main.c" and a["unattributed_bytes"] == 0
    idx = {n.removeprefix("./"): i for i, n in enumerate(names)}
    edges = {(names[i].removeprefix("./"), line, names[j].removeprefix("./"))
             for i, line, j in a["includes"]}
    user = {e for e in edges if not e[0].startswith(("<", "/")) and
            not e[2].startswith(("<", "/"))}
    assert user == {("main.c", 1, "outer.h"), ("outer.h", 2, "inner.h")}
    # own bytes: the output cut at each marker that names a file (the
    # compilers write plain names and no #line)
    assert sum(own for _, own in a["headers"]) == len(data)
    sections = re.split(rb'(?m)^(?=# [0-9]+ "[^"\n]*")', data)
    want = {}
    for sec in sections[1:]:
        name = re.match(rb'# [0-9]+ "([^"\n]*)"', sec).group(1).decode().removeprefix("./")
        want[name] = want.get(name, 0) + len(sec)
    own = {n.removeprefix("./"): b for n, b in a["headers"]}
    assert own == want and sections[0] == b""
    assert b"int inner;\n" in data and own["inner.h"] >= len(b'# 1 "inner.h" 1\nint inner;\n')
    assert set(idx) >= {"main.c", "outer.h", "inner.h"}
