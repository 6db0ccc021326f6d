"""A scan report's headers page (headers.html, #31) on hand-made builds:
per-file header records made with bench/measure/headers.py from small
include graphs, summed as a scan sums them; the files of each header taken
from a cache as make scan takes them (measure/headerfiles.py), the page
drawn by plots/headerpage.py. The bars' order, every in-page link landing
on its section, a hostile header name escaped, the size cap with the worst
names, an old scan without per-file records, and make scan A= B= on the
fake tree writing the page and its link."""
import json
import os
import re
import subprocess
from html.parser import HTMLParser

from test_faults import PY, REPO, fake, kx  # noqa: F401
from test_headers import mk

from bench.measure import headerbuild, headerfiles, headers
from bench.measure.cache import Cache
from plots import headerbars, headerpage

EVIL = 'include/<script>alert("x")</script>&.h'
KERNEL_H, MINMAX, X_H = "include/linux/kernel.h", "include/linux/minmax.h", \
    "arch/x86/include/asm/x.h"
PAIR = {"a": {"ref": "v1", "commit": "a" * 40}, "b": {"ref": "v2", "commit": "b" * 40},
        "compiler": "gcc"}


def build(k, files=("a.c", "b.c", "mm/c.c")):
    """{file: header record}: each C file includes kernel.h (which includes
    minmax.h) and x.h (which includes EVIL); minmax.h and EVIL grow with k."""
    out = {}
    for i, f in enumerate(files):
        out[f] = headers.record(mk(
            [(f, 100), (KERNEL_H, 1000 + 10 * i), (MINMAX, 50 * k * (i + 1)), (X_H, 300),
             (EVIL, 7 * k)],
            [(f, 1, KERNEL_H), (KERNEL_H, 5, MINMAX), (f, 2, X_H), (X_H, 3, EVIL)]))
    return out


def report(tmp_path, recs_a, recs_b, cached=True):
    """A scan report dir with headers-files.json (as make scan writes it)
    and headers.html (as report.py draws it); (dir, page text)."""
    agg_a = headerbuild.aggregate(recs_a.values()) if recs_a is not None else None
    agg_b = headerbuild.aggregate(recs_b.values())
    cache = Cache(tmp_path / "work")
    if cached:
        cache.put("ka-headers", recs_a or {})
        cache.put("kb-headers", recs_b)
    d = tmp_path / "results" / "scan" / "v1..v2"
    d.mkdir(parents=True)
    (d / "headers-files.json").write_text(json.dumps(headerfiles.extract(
        cache, "ka" if agg_a else None, "kb", agg_a, agg_b, ("a" * 40, "b" * 40))))
    p = headerpage.write_page(tmp_path / "results", d, PAIR, agg_a, agg_b)
    return d, p.read_text()


class Page(HTMLParser):
    """The ids, the in-page links (in order), the text of each <h3>."""

    def __init__(self):
        super().__init__()
        self.ids, self.links, self.h3, self._in = set(), [], [], False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and (a.get("href") or "").startswith("#"):
            self.links.append(a["href"][1:])
        self._in = tag == "h3"

    def handle_data(self, data):
        if self._in:
            self.h3.append(data)
            self._in = False


def parsed(text):
    p = Page()
    p.feed(text)
    return p


def charts(text):
    """[[anchor of each bar, in order]] of the page's charts."""
    return [re.findall(r'<a href="#(h-[0-9a-f]+)">', s)
            for s in re.findall(r"<svg class=\"hb\".*?</svg>", text, re.S)]


def test_bars_are_sorted_and_every_link_lands_on_its_section(tmp_path):
    d, text = report(tmp_path, build(1), build(4))
    agg_b = headerbuild.aggregate(build(4).values())
    by_own, by_change = charts(text)
    want = sorted(agg_b["headers"], key=lambda h: -agg_b["headers"][h]["own"])
    assert by_own == [headerbars.anchor(h) for h in want]
    assert by_change == [headerbars.anchor(MINMAX), headerbars.anchor(EVIL)]   # +450 x3, +21 x3
    p = parsed(text)
    assert p.links and set(p.links) <= p.ids, set(p.links) - p.ids
    assert {headerbars.anchor(h) for h in want} <= p.ids
    assert p.h3 == want          # a section per header drawn, by own bytes first
    # the files of minmax.h: by its own bytes at B, with A's beside them
    sec = text[text.index(f'id="{headerbars.anchor(MINMAX)}"'):]
    sec = sec[:sec.index("<h3", 10)]
    rows = re.findall(r"<tr><td class=l>([^<]+)</td><td>([^<]+)</td><td>([^<]+)</td>", sec)
    assert rows[:3] == [("mm/c.c", "150", "600"), ("b.c", "100", "400"), ("a.c", "50", "200")]
    # the include entry that brings it in, with its bytes at B and A
    assert "<td class=l>include/linux/kernel.h:5</td><td>3</td><td>3</td><td>1,200</td>" \
        "<td>300</td>" in sec
    assert (d / "headers.html").exists() and "per-file header records" not in text


def test_a_hostile_header_name_is_escaped_everywhere(tmp_path):
    _d, text = report(tmp_path, build(1), build(4))
    assert "<script>alert" not in text and 'alert("x")' not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;.h" in text
    # the only scripts are the page's own
    assert text.count("<script>") == 1
    p = parsed(text)
    assert 'include/<script>alert("x")</script>&.h' in p.h3


def test_names_are_cut_and_the_page_stays_under_its_cap(tmp_path):
    """The worst case: 30 headers by own bytes and 30 others by change,
    each 20 listed files and 15 include entries, every name 480 characters
    of what HTML-escaping and control-character escaping make longest."""
    def evil(i, kind):
        return f"{kind}/{i}/" + '"<&\x1b\u202e' * 96 + f"{i}.h"
    own, changed = [evil(i, "o") for i in range(30)], [evil(i, "c") for i in range(30)]
    big = {"occurrences": 10 ** 6, "expanded": 10 ** 13, "added": 10 ** 13}

    def agg(change):
        hs = {h: dict(big, own=10 ** 16 - i) for i, h in enumerate(own)}
        hs.update({h: dict(big, own=(10 ** 15 - i) * change) for i, h in enumerate(changed)})
        edges = {f"{evil(j, 'inc')}:99999 -> {h}": {"files": 10 ** 6, "files_sole": 10 ** 6,
                                                     "bytes_sole": 10 ** 12 + j}
                 for h in own + changed for j in range(15)}
        return {"files": 1, "bytes": 10 ** 17, "unattributed": 0, "root_own": 0,
                "headers": hs, "edges": edges}
    files = {"schema": 1, "kind": headerfiles.KIND, "a": "a" * 40, "b": "b" * 40,
             "records": {"a": True, "b": True},
             "headers": {h: {"by": "b", "files": 10 ** 6, "rest": 10 ** 6 - 20,
                             "rest_bytes": 10 ** 15,
                             "top": [{"file": evil(j, "f"), "a": 10 ** 12, "b": 10 ** 12 + 1}
                                     for j in range(20)]} for h in own + changed}}
    d = tmp_path / "scan" / "v1..v2"
    d.mkdir(parents=True)
    (d / "headers-files.json").write_text(json.dumps(files))
    text = headerpage.write_page(tmp_path, d, PAIR, agg(0), agg(1)).read_text()
    assert text.count("<h3 ") == 60 and text.count("<tr>") == 60 * (21 + 11)
    assert len(text.encode()) <= headerpage.CAP_BYTES
    assert "\x1b" not in text and "\\x1b" in text
    name = headerbars.clip(evil(1, "o"))
    assert "\u2026" in name and len(name.encode()) <= headerbars.NAME_BYTES
    assert name.endswith("1.h")


def test_without_per_file_records_the_page_says_so_and_draws_the_charts(tmp_path):
    _d, text = report(tmp_path, build(1), build(4), cached=False)
    assert "The per-file header records of A's build and B's build are not in the cache" \
        in text
    by_own, by_change = charts(text)
    assert len(by_own) == 4 and len(by_change) == 2
    assert "Files: not listed" in text and "include/linux/kernel.h:5" in text
    p = parsed(text)
    assert set(p.links) <= p.ids


def test_one_build_only(tmp_path):
    """No aggregate at A: B's build, one chart, one column of bytes."""
    _d, text = report(tmp_path, None, build(4))
    assert len(charts(text)) == 1 and 'id="by-change"' not in text
    assert "own bytes at A" not in text and "At v2 (B, gcc)" in text
    assert "per-file header records" not in text


def test_selection_takes_the_top_by_own_bytes_and_by_change():
    a = {"headers": {f"h{i}.h": {"occurrences": 1, "own": 100 * i, "expanded": 0, "added": 0}
                     for i in range(50)}, "edges": {}}
    b = json.loads(json.dumps(a))
    b["headers"]["h3.h"]["own"] += 10_000          # grew most, yet small
    b["headers"]["h7.h"]["own"] -= 700             # shrank to nothing
    names = headerfiles.names(a, b)
    # by own bytes at B: h3.h, then h49.h .. h21.h; by change h3.h (drawn
    # already) and h7.h
    assert names[:3] == ["h3.h", "h49.h", "h48.h"] and names[-2:] == ["h21.h", "h7.h"]
    assert len(names) == 31
    by_own, by_change = headerfiles.selection(a, b)
    assert [r["name"] for r in by_change] == ["h3.h", "h7.h"]


def test_make_scan_writes_the_headers_page_and_links_it(fake):
    """make scan A= B= on the fake tree (kexpand.py scan, then report.py
    --scan, as the Makefile runs them): headers-files.json from the cache,
    headers.html beside headers.md, linked from the report's index.html."""
    base, env = fake
    env = dict(env, A="before", B="after", CASE="fake")
    p = kx(env, "scan", "--case", "fake", "--a", "before", "--b", "after")
    assert p.returncode == 0, p.stderr
    d = base / "results/scan/before..after"
    got = json.loads((d / "headers-files.json").read_text())
    assert got["records"] == {"a": True, "b": True} and got["headers"]
    p = subprocess.run([PY, str(REPO / "report.py"), "--scan"], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    text = (d / "headers.html").read_text()
    pg = parsed(text)
    assert charts(text)[0] and set(pg.links) <= pg.ids
    name = next(iter(got["headers"]))
    assert headerbars.clip(name) in pg.h3 or name in pg.h3
    assert 'href="headers.html"' in (d / "index.html").read_text()
    assert 'href="../../pages/scans.html"' in text
    for ref in re.findall(r'href="([^"#]+)"', text):
        assert os.path.exists(d / ref), ref
    # the next scan's report.py --scan draws the scan's page and the scans
    # list again (older than the report it rewrites), not the other sections
    lst = base / "results/pages/scans.html"
    for stale in (d / "index.html", lst):
        stale.write_text("stale")
        os.utime(stale, (1, 1))
    other = base / "results/pages/checks.html"
    before = other.read_text()
    other.write_text(before + "<!-- mine -->")
    p = subprocess.run([PY, str(REPO / "report.py"), "--scan"], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (d / "index.html").read_text() != "stale" and lst.read_text() != "stale"
    assert other.read_text().endswith("<!-- mine -->")
