"""Seeded fuzzing of the C tools against plain Python references.

kx-analyze: the reference in test_analyzer.py (the documented marker and
#line shapes as regular expressions, the attribution rules line by line),
on generated input of every kind of line (markers with and without a name,
with flags, #line, near misses, CRLF, raw and escaped bytes in names, lines
over 1 MiB, no final newline, empty input), on directives placed across
the 1 MiB read boundary, through a file and through a pipe. Every field of
the JSON output is compared. Every case runs with -H too (bytes by header:
its fields against the reference's, and own bytes plus unattributed bytes
adding up to the bytes), and streams of nested includes (flag 1 / flag 2
pairs, #line inside headers, stray returns, includes left open) are
generated for it, also across the read boundaries.

kx-macros: a reference written here from its documentation (the location
prefix's shape, which path a prefix names, when a token is spelled at its
location, #define lines of plain headers, the output position through the
markers and #line): its whole JSON output on generated -fdebug-cpp-like
streams over real headers in a temporary directory, plus the cross-check
that a -l line's bytes are kx-analyze's bytes of that line in the plain
stream, and that the rows add up to the plain byte count.

Both tools also run, on a part of the cases, built with AddressSanitizer
and UndefinedBehaviorSanitizer (a read past a buffer fails the run).

Seeds are fixed: a failure names its seed, and
`random.Random(seed)` with the same generator gives the input again."""
import json
import os
import random
import re
import subprocess
from pathlib import Path

import pytest

from test_analyzer import (ANALYZER, CHUNK, IncludeLines, analyze, check_headers, directive,
                           directive_line, gen_lines, generate, generate_includes,
                           header_reference, reference, text)

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "bench" / "tools"
MACROS = TOOLS / "kx-macros"
CLASSES = ["<source>", "<stringified>", "<pasted>", "<command-line>", "<markers>", "<unread>"]


def run(tool, data, args=(), cwd=None, via_file=None, env=None):
    """A tool's JSON on data, through a pipe or (via_file: a path) a file."""
    if via_file:
        via_file.write_bytes(data)
        with via_file.open("rb") as f:
            p = subprocess.run([str(tool), *args], stdin=f, capture_output=True, cwd=cwd, env=env)
    else:
        p = subprocess.run([str(tool), *args], input=data, capture_output=True, cwd=cwd, env=env)
    assert p.returncode == 0, (tool, p.returncode, p.stderr[-2000:])
    return json.loads(p.stdout)


# ---------------------------------------------------------------- kx-analyze

def small_case(seed):
    rnd = random.Random(seed)
    data = generate(rnd, rnd.choice([0, 1, 2, 5, 20, 80, 300]))
    return data, rnd.choice([0, 1, 5, 10**6])


@pytest.mark.parametrize("batch", range(20))
def test_analyzer_matches_reference(batch, tmp_path):
    """150 seeded cases per batch, small enough that the reference is quick;
    every other one read from a file, the rest from a pipe."""
    for seed in range(batch * 150, batch * 150 + 150):
        data, top = small_case(seed)
        got = run(ANALYZER, data, ["-n", str(top)],
                  via_file=tmp_path / "in.i" if seed % 2 else None)
        want = reference(data, top)
        assert got == want, f"seed {seed}: {data[:300]!r}"
        got = check_headers(run(ANALYZER, data, ["-H", "-n", str(top)],
                                via_file=tmp_path / "in.i" if seed % 2 == 0 else None))
        assert got == {**want, **header_reference(data)}, f"seed {seed} -H: {data[:300]!r}"


def include_case(seed):
    rnd = random.Random(seed)
    return generate_includes(rnd, rnd.choice([0, 1, 2, 5, 20, 80, 300])), rnd.choice([0, 5])


@pytest.mark.parametrize("batch", range(10))
def test_analyzer_headers_match_reference(batch, tmp_path):
    """-H on 150 seeded streams of nested includes per batch."""
    for seed in range(batch * 150, batch * 150 + 150):
        data, top = include_case(seed)
        got = check_headers(run(ANALYZER, data, ["-H", "-n", str(top)],
                                via_file=tmp_path / "in.i" if seed % 2 else None))
        assert got == reference(data, top, hdr=True), f"seed {seed}: {data[:300]!r}"


EDGES = [b"", b"\n", b"\r\n", b"#", b"#\n", b"# 1", b'# 1 "a.c"', b'# 1 "a.c"\nx',
         b'# 1 "a.c"\n\n\n', b'# 1 "a.c"\r\n\r\n', b"x", b'#line 3 "f"\nx', b"# 7\nx\n",
         b'# 123456 "a.c"\n# 7\nx\n', b'# 1 "a.c"\n#line 5\r\nx\r\n', b'# 0 "<built-in>"\nx\n',
         b'# 2147483647 "a.c"\nx\ny\n', b'# 1 "\\0"\nx\n', b'# 1 "a\\\\"\nx\n']


@pytest.mark.parametrize("data", EDGES)
def test_analyzer_edge_inputs(data):
    assert analyze(data, top=99) == reference(data, top=99)
    assert check_headers(analyze(data, top=99, hdr=True)) == reference(data, top=99, hdr=True)


def across_boundaries(rnd, n, includes=None):
    """Input whose n 1 MiB boundaries each cut a short piece (a directive,
    CRLF, a pattern, a '#') at a random place; filler lines in between.
    includes: an IncludeLines, whose lines (nested includes, one stream
    over the whole input) are pieces too."""
    pieces = [b"x\r\n", b"__builtin_choose_expr__builtin_choose_expr\n", b"(({{\n",
              b"__UNIQUE_ID___UNIQUE_ID_\n", b"#\n", b"# 7\n", b'# 123456 "a.c" 1 3\r\n']
    parts, size = [b'# 1 "a.c"\n'], 10
    for i in range(1, n + 1):
        if includes:
            piece = includes.lines(rnd.choice([1, 2, 3, 4]))
        else:
            piece = b"".join(rnd.choice(pieces + [directive_line(rnd) + b"\n"])
                             for _ in range(rnd.choice([1, 3])))
        cut = rnd.randrange(len(piece) + 1)           # bytes of piece before the boundary
        ends = [m.start() + len(m.group(1)) for m in
                re.finditer(rb"(?=(__builtin_choose_expr|\(\{|__UNIQUE_ID_))", piece)]
        if ends and rnd.random() < 0.5:               # a pattern ends right at the boundary
            cut = rnd.choice(ends) + rnd.choice([0, 0, -1, 1])
        fill = i * CHUNK - cut - size - 1
        parts += [b"({x" * (fill // 3) + b"y" * (fill % 3) + b"\n", piece]
        size += fill + 1 + len(piece)
    return b"".join(parts)


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_analyzer_across_read_boundaries(seed, tmp_path):
    rnd = random.Random(seed)
    data = across_boundaries(rnd, 16)
    assert run(ANALYZER, data, ["-n", "100000"], via_file=tmp_path / "in.i") == \
        reference(data, 100_000)
    # one input ending exactly at a boundary, without a final newline
    data = data[:17 * CHUNK] if len(data) > 17 * CHUNK else data + b"z" * (17 * CHUNK - len(data))
    want = reference(data, 7)
    assert run(ANALYZER, data, ["-n", "7"], via_file=tmp_path / "in.i") == want
    assert check_headers(run(ANALYZER, data, ["-H", "-n", "7"], via_file=tmp_path / "in.i")) \
        == {**want, **header_reference(data)}


@pytest.mark.parametrize("seed", [21, 22, 23, 24])
def test_analyzer_headers_across_read_boundaries(seed, tmp_path):
    """-H where every 1 MiB boundary cuts enter / return markers of one
    stream of nested includes (their flags, their names, their CRLF)."""
    rnd = random.Random(seed)
    includes = IncludeLines(rnd)
    data = across_boundaries(rnd, 16, includes) + includes.lines(20)
    got = check_headers(run(ANALYZER, data, ["-H", "-n", "50"], via_file=tmp_path / "in.i"))
    assert got == reference(data, 50, hdr=True)
    assert len(got["includes"]) >= 5
    # ending exactly at a boundary, without a final newline
    data = data[:17 * CHUNK] if len(data) > 17 * CHUNK else data + b"z" * (17 * CHUNK - len(data))
    got = check_headers(run(ANALYZER, data, ["-H", "-n", "7"], via_file=tmp_path / "in.i"))
    assert got == reference(data, 7, hdr=True)


# ---------------------------------------------------------------- kx-macros reference

PREFIX = re.compile(rb"\{P:(?:(?!\{P:)[^\n])*?;F:(?:(?!\{P:)[^\n])*?,R:[0-9]+\}")
PREFIX_MAX = 8192
DEFINE = re.compile(rb"[ \t]*#[ \t]*define[ \t]+([A-Za-z0-9_]+)")


def split_stream(data):
    """[(field, None) for a location prefix, (None, plain bytes)]: a prefix
    is the shortest {P:...;F:...,R:<digits>} from a "{P:", without a line
    break or another "{P:" inside, at most PREFIX_MAX bytes."""
    out, i = [], 0
    while True:
        j = data.find(b"{P:", i)
        if j < 0:
            return out + [(None, data[i:])]
        m = PREFIX.match(data, j, j + PREFIX_MAX)
        if m:
            out += [(None, data[i:j]), (data[j + 3:m.end() - 1], None)]
            i = m.end()
        else:
            out.append((None, data[i:j + 1]))
            i = j + 1


def number(field, at):
    d = re.match(rb"[0-9]*", field[at:]).group()
    d = d.lstrip(b"0") or b"0"
    return 2**32 - 1 if len(d) > 10 else min(int(d), 2**32 - 1)


def parse_field(field):
    """(path, has a location, line, column): the path runs to the last
    ";F:" that a ";L:" and then a ";C:" follow."""
    fsep, q = len(field), field.find(b";F:")
    while q >= 0:
        l = field.find(b";L:", q)
        if l >= 0 and field.find(b";C:", l) >= 0:
            fsep = q
        q = field.find(b";F:", q + 1)
    l, c = field.find(b";L:", fsep), field.find(b";C:", fsep)
    return (field[:fsep], l >= 0 and c >= 0, number(field, l + 3) if l >= 0 else 0,
            number(field, c + 3) if c >= 0 else 0)


def norm(p):
    while True:
        if p.startswith(b"./"):
            p = p[2:]
        elif p.startswith(b"../"):
            p = p[3:]
        else:
            return p


def is_ident(c):
    return c == ord("_") or chr(c).isascii() and chr(c).isalnum()


class MacrosReference:
    """kx-macros' output, the plain way (headers without comments,
    literals or continuations, so that a #define is one line)."""

    def __init__(self, cwd, sels):
        # a macro: [name, path, line, bytes, tokens]
        self.cwd, self.files, self.macros = cwd, {}, []
        self.cls = dict.fromkeys(CLASSES, 0)
        self.sels = [{"file": norm(f), "line": l, "bytes": 0, "cls": dict.fromkeys(CLASSES, 0),
                      "mac": {}} for f, l in sels]
        self.cur_sel = self.cur_file = None
        self.cur_line = 1
        self.loc = (None, False, 0, 0)
        self.tok, self.line_text = bytearray(), bytearray()

    def load(self, path):
        if path not in self.files:
            p = os.path.join(self.cwd, os.fsdecode(path))
            if b"\0" in path or not os.path.isfile(p) or os.path.getsize(p) > 64 << 20:
                self.files[path] = None
            else:
                t = Path(p).read_bytes()
                lines = t.split(b"\n")
                starts = [0]
                for l in lines[:-1]:
                    starts.append(starts[-1] + len(l) + 1)
                mac = [None] * (len(lines) + 2)
                for n, l in enumerate(lines, 1):
                    if m := DEFINE.match(l):
                        mac[n] = len(self.macros)
                        self.macros.append([m.group(1), path, n, 0, 0])
                self.files[path] = (t, starts, mac)
        return self.files[path]

    def add(self, cls, mac, n):
        if not n:
            return
        if mac is None:
            self.cls[cls] += n
        else:
            self.macros[mac][3] += n
            self.macros[mac][4] += 1
        if self.cur_sel is not None:
            s = self.sels[self.cur_sel]
            s["bytes"] += n
            if mac is None:
                s["cls"][cls] += n
            else:
                s["mac"][mac] = s["mac"].get(mac, 0) + n

    def classify(self):
        tok, self.tok = bytes(self.tok), bytearray()
        core = tok.strip(b" \t")
        self.add("<markers>", None, len(tok) - len(core))
        if not core:
            return
        path, has_loc, line, col = self.loc
        if not has_loc or path.startswith(b"<"):
            return self.add("<command-line>", None, len(core))
        f = self.load(path)
        if f is None:
            return self.add("<unread>", None, len(core))
        t, starts, macro_of = f
        spelled, mac = False, None
        if 1 <= line <= len(starts) and col >= 1:
            off, n = starts[line - 1] + col - 1, len(core)
            end = starts[line] if line < len(starts) else len(t)
            spelled = off + n <= end and t[off:off + n] == core
            if spelled and off + n < end and is_ident(core[-1]) and is_ident(t[off + n]):
                spelled = False
            mac = macro_of[line]
        if not spelled:
            self.add("<stringified>" if core[:1] == b'"' else "<pasted>", None, len(core))
        else:
            self.add("<source>", mac, len(core))

    def end_line(self, directive_line, nl):
        d = directive(bytes(self.line_text)) if directive_line else None
        if self.tok:
            self.classify()
        keep = self.cur_sel
        if d is not None:
            self.cur_sel = None
        self.add("<markers>", None, len(self.line_text) + nl)
        self.cur_sel = keep
        if d is not None and d[1] is not None:
            self.cur_file = d[1]
        self.cur_line = d[0] if d is not None else self.cur_line + 1
        self.cur_sel = None
        if self.cur_file is not None:
            for i, s in enumerate(self.sels):
                if s["line"] == self.cur_line and s["file"] == norm(self.cur_file):
                    self.cur_sel = i
        self.line_text = bytearray()

    def top(self, by, tokens, cls, n):
        ids = sorted((i for i in range(len(self.macros)) if by(i) > 0),
                     key=lambda i: (-by(i), self.macros[i][0], i))
        out = {"classes": dict(cls), "macro_bytes": sum(by(i) for i in ids), "n_macros": len(ids),
               "macros": []}
        for i in ids[:n]:
            name, path, line, _, toks = self.macros[i]
            m = {"name": text(name), "file": text(path), "line": line, "own_bytes": by(i)}
            out["macros"].append({**m, "tokens": toks} if tokens else m)
        return out

    def run(self, data, n):
        line_start, dline, plain = True, False, 0
        for field, chunk in split_stream(data):
            if field is not None:
                if self.tok:
                    self.classify()
                self.loc = parse_field(field)
                continue
            plain += len(chunk)
            pieces = chunk.split(b"\n")
            for k, piece in enumerate(pieces):
                if piece:
                    if line_start:
                        line_start, dline = False, piece[:1] == b"#"
                    (self.line_text if dline else self.tok).extend(piece)
                if k < len(pieces) - 1:
                    self.end_line(dline and not line_start, 1)
                    line_start, dline = True, False
        if not line_start:
            self.end_line(dline, 0)
        return {"bytes": plain, **self.top(lambda i: self.macros[i][3], True, self.cls, n),
                "lines": [{"file": text(s["file"]), "line": s["line"], "bytes": s["bytes"],
                           **self.top(lambda i, s=s: s["mac"].get(i, 0), False, s["cls"], n)}
                          for s in self.sels]}


# ---------------------------------------------------------------- kx-macros input

HEADERS = [b"s1.h", b"sub/s2.c", b"sp ace.h", b"we;F:ird.h", b"q\"b.h", b"h\xff.h"]
MARK_NAMES = [(b"s1.h", b"s1.h"), (b"./s1.h", b"./s1.h"), (b"../sub/s2.c", b"../sub/s2.c"),
              (b'q\\"b.h', b'q"b.h'), (b"sp ace.h", b"sp ace.h"),
              (b"h\\377.h", b"h\xff.h")]                          # (as written, real)


def make_headers(rnd, cwd):
    """Headers of plain lines and one-line #defines; {path: text}."""
    words = [b"a", b"b1", b"x_y", b"(", b")", b"+", b"1", b"{", b"}", b";", b"#", b"x", b"  ",
             b"\t", b"[", b"]", b"->", b"\r"]
    out = {}
    for path in HEADERS:
        lines = []
        for _ in range(rnd.randint(1, 25)):
            body = b" ".join(rnd.choice(words) for _ in range(rnd.randint(0, 8)))
            if rnd.random() < 0.3:
                lines.append(rnd.choice([b"#define ", b" # define\t", b"#define  "]) +
                             rnd.choice([b"TWICE", b"M", b"x_y", b"1n"]) + b" " + body)
            else:
                lines.append(body)
        t = b"\n".join(lines) + rnd.choice([b"", b"\n"])
        (cwd / os.fsdecode(path)).parent.mkdir(parents=True, exist_ok=True)
        (cwd / os.fsdecode(path)).write_bytes(t)
        out[path] = t
    return out


def prefix(rnd, path, line, col, size=None):
    """A location prefix; size: padded (in its F: field) to that length."""
    if size:
        p = prefix(rnd, path, line, col)
        return p.replace(b";L:", b"f" * (size - len(p)) + b";L:", 1) if b";C:" in p else p
    line, col = b"%d" % line, b"%d" % col
    f = rnd.choice([b"<NULL>", b"x.c", b"a;F:b"])
    kind = rnd.random()
    if kind < 0.05:
        return b"{P:" + path + b";F:" + f + b";L:" + line + b";S:0,LOC:1,R:1}"    # no column
    if kind < 0.1:
        line = rnd.choice([b"", b"99999999999", b"4294967296", b"0"])
    return (b"{P:" + path + b";F:" + f + b";L:" + line + b";C:" + col +
            b";S:0;M:0x7f7a0c21f078;E:0,LOC:%d,R:%d}" % (rnd.randrange(9999), rnd.randrange(9999)))


def gen_stream(rnd, headers, n):
    """A -fdebug-cpp-like stream: located tokens (most spelled where they
    say), markers and #line, near-miss prefixes, junk."""
    near = [b"{P:x", b"{P:a;F:b,R:1}", b"{P:a\n;F:b;L:1;C:1,R:1}", b"{P:{P:a;F:;L:1;C:1,R:1}",
            b"{P:a;F:b;L:1;C:1,R:x}", b"{P:a;F:b;L:1;C:1,R:12", b"{P:", b"{P:;F:;L:;C:,R:0}",
            b'"{P:s1.h;F:x;L:1;C:1,R:1}"', b"{P:s1.h;L:1;C:1;F:x,R:1}"]
    out = []
    for _ in range(n):
        r = rnd.random()
        if r < 0.5:
            path = rnd.choice(list(headers) + [b"missing.h", b"<built-in>", b"<command-line>",
                                               b"", b"sub", b"/dev/null", b"a\0b.h"])
            line, col = rnd.randint(0, 30), rnd.randint(0, 30)
            tok = rnd.choice([b"x", b"+", b'"s"'])
            if path in headers and rnd.random() < 0.85:
                lines = headers[path].split(b"\n")
                line = rnd.randrange(len(lines)) + 1
                col = rnd.randrange(len(lines[line - 1]) + 1) + 1
                tok = lines[line - 1][col - 1:col - 1 + rnd.choice([1, 2, 3, 8, 40])] or b"x"
                if rnd.random() < 0.1:
                    tok, col = (tok + b"z", col) if rnd.random() < 0.5 else (tok, col + 1)
            size = rnd.choice([PREFIX_MAX - 1, PREFIX_MAX, PREFIX_MAX + 1]) if r < 0.01 else None
            out.append(prefix(rnd, path, line, col, size) + rnd.choice([b"", b" ", b"\t"]) + tok +
                       rnd.choice([b"", b"", b" "]))
        elif r < 0.6:
            out.append(rnd.choice([b"\n", b"\r\n", b" \n"]))
        elif r < 0.75:
            written, _ = rnd.choice(MARK_NAMES)
            d = rnd.choice([b'# %d "%s"' % (rnd.randint(1, 4), written),
                            b"# %d" % rnd.randint(1, 4),
                            b'#line %d "%s"' % (rnd.randint(1, 4), written), directive_line(rnd)])
            pre = prefix(rnd, b"<command-line>", 0, 0) if rnd.random() < 0.5 else b""
            out.append(b"\n" + pre + d + b"\n")
        elif r < 0.85:
            out.append(rnd.choice(near))
        else:
            out.append(rnd.choice(gen_lines(rnd, 1)))
    data = b"".join(out)
    return data.rstrip(b"\n") if rnd.random() < 0.2 else data


def selections(rnd):
    """-l FILE:LINE arguments and the (file, line) they select."""
    sels = [(rnd.choice(MARK_NAMES)[1], rnd.randint(1, 5)) for _ in range(rnd.randint(0, 6))]
    sels = list({(norm(f), l): (f, l) for f, l in sels}.values())   # a line once (else usage)
    return sels, [x for f, l in sels for x in (b"-l", f + b":%d" % l)]


def check_macros(tool, data, cwd, sels, args, top, via_file=None, env=None):
    got = run(tool, data, ["-n", str(top), *args], cwd=cwd, via_file=via_file, env=env)
    want = MacrosReference(str(cwd), sels).run(data, top)
    assert got == want
    assert sum(got["classes"].values()) + got["macro_bytes"] == got["bytes"]
    # kx-macros follows the position as kx-analyze does: a -l line's bytes
    # are that line's bytes in the plain (prefix-free) stream
    plain = b"".join(c for f, c in split_stream(data) if f is None)
    per = reference(plain, 10**9)["top"]
    for s in got["lines"]:
        assert s["bytes"] == sum(t["bytes"] for t in per if t["line"] == s["line"] and
                                 norm(os.fsencode(t["file"])) == os.fsencode(s["file"]))
    return got


@pytest.mark.parametrize("batch", range(12))
def test_macros_matches_reference(batch, tmp_path):
    """60 seeded streams per batch over headers in a temporary directory."""
    for seed in range(batch * 60, batch * 60 + 60):
        rnd = random.Random(seed)
        cwd = tmp_path / str(seed)
        headers = make_headers(rnd, cwd)
        data = gen_stream(rnd, headers, rnd.choice([0, 1, 5, 40, 400]))
        sels, args = selections(rnd)
        try:
            check_macros(MACROS, data, cwd, sels, args, rnd.choice([0, 3, 1000]),
                         via_file=tmp_path / "in" if seed % 2 else None)
        except AssertionError as e:
            raise AssertionError(f"seed {seed}: {data[:300]!r}") from e


@pytest.mark.parametrize("seed", [1001, 1002])
def test_macros_across_the_read_buffer(seed, tmp_path):
    """Streams of several MiB (the reader keeps 1 MiB and moves what is
    left when a prefix may cross its end), and prefixes placed across the
    first read's end byte by byte."""
    rnd = random.Random(seed)
    headers = make_headers(rnd, tmp_path)
    data = gen_stream(rnd, headers, 60_000)
    while len(data) < 3 * CHUNK:
        data += gen_stream(rnd, headers, 20_000)
    sels, args = selections(rnd)
    check_macros(MACROS, data, tmp_path, sels, args, 50, via_file=tmp_path / "in")
    p = prefix(rnd, b"s1.h", 1, 1)
    for cut in range(0, len(p) + 2, 9 if seed % 2 else 7):
        data = (b'# 1 "s1.h"\n' + b"y" * (CHUNK - 11 - cut) + p + b"xy\n" +
                gen_stream(rnd, headers, 20))
        check_macros(MACROS, data, tmp_path, [(b"s1.h", 1)], ["-l", "s1.h:1"], 5,
                     via_file=tmp_path / "in")


# ---------------------------------------------------------------- sanitizers

@pytest.fixture(scope="module")
def sanitized(tmp_path_factory):
    """Both tools built with ASan and UBSan (any report aborts the run)."""
    d = tmp_path_factory.mktemp("asan")
    flags = ["gcc", "-O1", "-g", "-std=gnu11", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror"]
    subprocess.run(flags + ["-o", str(d / "kx-analyze")] + [str(TOOLS / f) for f in (
        "kx-analyze.c", "kx-includes.c", "kx-names.c")], check=True)
    subprocess.run(flags + ["-o", str(d / "kx-macros"), str(TOOLS / "kx-macros.c"),
                            str(TOOLS / "kx-srcmap.c")], check=True)
    return d, dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")


def test_sanitized_tools_on_fuzz_cases(sanitized, tmp_path):
    d, env = sanitized
    for seed in range(0, 3000, 12):
        data, top = small_case(seed)
        assert run(d / "kx-analyze", data, ["-n", str(top)], env=env) == reference(data, top)
    for seed in range(0, 1500, 6):
        data, top = include_case(seed)
        assert check_headers(run(d / "kx-analyze", data, ["-H", "-n", str(top)], env=env)) == \
            reference(data, top, hdr=True)
    for seed in range(0, 720, 6):
        rnd = random.Random(seed)
        cwd = tmp_path / str(seed)
        headers = make_headers(rnd, cwd)
        data = gen_stream(rnd, headers, rnd.choice([0, 1, 5, 40, 400]))
        sels, args = selections(rnd)
        check_macros(d / "kx-macros", data, cwd, sels, args, rnd.choice([0, 3, 1000]), env=env)


def test_sanitized_macros_on_a_long_unterminated_marker(sanitized, tmp_path):
    """The old marker scan ran past line_text's allocation on this line (a
    4096-byte buffer, no closing quote, no NUL): ASan stopped it."""
    d, env = sanitized
    pre = b"{P:a.c;F:<NULL>;L:1;C:1;S:0;M:0;E:0,LOC:1,R:1}"
    line = b'# 1 "' + b"a" * 4090
    got = run(d / "kx-macros", pre + b"x\n" + line + b"\n", ["-l", "a.c:1"], cwd=tmp_path, env=env)
    assert got["bytes"] == 2 + len(line) + 1
    assert got["classes"]["<unread>"] == 1 and got["classes"]["<markers>"] == 1 + len(line) + 1
