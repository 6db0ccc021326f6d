"""The C analyzer against a checked-in sample and against a plain Python
reference on generated inputs that cross its 1 MiB read chunks."""
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


def analyze(data: bytes, top=5):
    p = subprocess.run([str(ANALYZER), "-n", str(top)], input=data,
                       capture_output=True, check=True)
    return json.loads(p.stdout)


def count(hay, needle):
    n, i = 0, hay.find(needle)
    while i >= 0:
        n += 1
        i = hay.find(needle, i + 1)
    return n


def reference(data: bytes):
    """Straightforward Python version of the same attribution rules."""
    per, longest, fname, line = {}, 0, None, 1
    markers = code = 0
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
        ends = [True] * len(lines)
    else:
        ends = [True] * (len(lines) - 1) + [False]
    for l, nl in zip(lines, ends):
        size = len(l) + (1 if nl else 0)
        m = re.match(rb'#(?:line)? ?(\d+)(?: "((?:[^"\\]|\\.)*)")?', l)
        if m and (l[1:2] in (b" ", b"l")):
            markers += 1
            if m.group(2) is not None:
                fname = m.group(2).decode()
            line = int(m.group(1))
            continue
        code += size
        if fname is not None:
            e = per.setdefault((fname, line), {"bytes": 0, **{k: 0 for k in PATS}})
            e["bytes"] += size
            for k, pat in PATS.items():
                e[k] += count(l, pat)
        longest = max(longest, size)
        line += 1
    return per, longest, markers, code


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
def test_matches_reference_across_chunks(seed):
    rnd = random.Random(seed)
    words = [b"__builtin_choose_expr", b"({", b"__UNIQUE_ID_x_", b"x", b"(",
             b"{", b" ", b"__builtin_choose", b"_expr", b"__UNIQUE_ID"]
    parts = [b'# 1 "a.c"\n']
    for i in range(60):
        if rnd.random() < 0.2:
            parts.append(b'# %d "%s" 1\n' % (rnd.randint(1, 500),
                                            rnd.choice([b"a.c", b"../b.h", b"c.h"])))
        # some lines far longer than the 1 MiB read chunk
        n = rnd.choice([0, 3, 50, 400, 150000])
        parts.append(b"".join(rnd.choice(words) for _ in range(n)) + b"\n")
    data = b"".join(parts)
    assert len(data) > 3 << 20
    a = analyze(data, top=1000)
    per, longest, markers, code = reference(data)
    assert a["bytes"] == len(data)
    assert a["longest_line_bytes"] == longest
    assert a["marker_lines"] == markers
    assert a["code_bytes"] == code
    got = {(t["file"], t["line"]): t for t in a["top"]}
    assert set(got) == set(per)
    for k, e in per.items():
        for f in ("bytes", *PATS):
            assert got[k][f] == e[f], (k, f)
    for k in PATS:
        assert a["totals"][k] == sum(e[k] for e in per.values())


def test_top_is_sorted_and_limited():
    data = b'# 1 "f.c"\n' + b"".join(b"x" * n + b"\n" for n in (5, 50, 500, 1))
    a = analyze(data, top=2)
    assert [t["line"] for t in a["top"]] == [3, 2]
    assert a["source_lines"] == 4


def test_bad_option_is_usage_error():
    p = subprocess.run([str(ANALYZER), "-n", "x"], capture_output=True)
    assert p.returncode == 2 and b"usage" in p.stderr
