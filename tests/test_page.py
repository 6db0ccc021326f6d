"""The pages under results/ in headless Chromium (Debian's chromium),
offline from file://: the index opens with the finding and has one <h1>;
every page reachable from it loads, with one <h1>, every image loading
and every link, image and embedded graph resolving to a file; a make
check and a 1,000-commit make track get pages of their own; the track's
graphs render, every point is a link with a title, clicking one opens
that commit against its parent; and the track page stays within bounds
of bytes and DOM nodes (never of wall time: the machine is shared)."""
import csv
import io
import json
import os
import random
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit
from xml.etree import ElementTree

import pytest

import test_results as tr
from kbuild.util import atomic_write, atomic_write_json

CHROMIUM = shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
SECTIONS = ["series", "boots", "conformance", "macros", "compares", "scans", "sweeps",
            "checks", "tracks"]
N_COMMITS = 1000
TRACK_FILES = [tr.FILES[0], tr.FILES[1], "kernel/sched/fair.c"]
METRICS = {"bytes": "-E bytes", "longest_line": "longest -E line, bytes",
           "instructions_c": "instructions of -c"}
# size bounds of a track page (README, "Tracks"): a graph is a path and one
# <a><circle><title> per commit, about 200 bytes and 3 elements each
SVG_BYTES_PER_COMMIT, SVG_BYTES_FIXED = 260, 16_000
SVG_NODES_PER_COMMIT, SVG_NODES_FIXED = 3, 300
TRACK_PAGE_BYTES, TRACK_PAGE_NODES = 48_000, 1_500
COMMIT_PAGE_BYTES = 6_000


def chromium(profile, *args, timeout=180):
    assert CHROMIUM, "chromium missing: make test installs Debian's chromium"
    p = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                       capture_output=True, text=True, timeout=timeout)
    return p.stdout, p.stderr


# --- the fixture results: series, a compare, a check, a 1,000-commit track --------

def fake_check(results):
    d = results / "check" / "minmax-make-min3-safer-v2"
    setup = tr.FILES[0]
    reg = {"file": setup, "bytes_base": 2_900_000, "bytes_tip": 50_700_000,
           "growth_bytes": 47_800_000, "change": 16.482759, "verdict": "regression",
           "longest_line_base": 1_434_144, "longest_line_tip": 47_857_779,
           "hot_tip": setup + ":796",
           "hot_lines_tip": [{"at": setup + ":796", "bytes": 47_857_779,
                              "source": "extra_pages = min3(a, b, c);"}],
           "hot_lines_base": [{"at": setup + ":796", "bytes": 1_434_144,
                               "source": "extra_pages = min3(a, b, c);"}],
           "grew_most": {"patch": 2, "subject": "xen: more min3() calls",
                         "bytes": 50_700_000, "ratio": 17.48},
           "per_patch": [{"patch": 1, "subject": "kernel.h: a comment", "bytes": 2_900_000,
                          "ratio": 1.0},
                         {"patch": 2, "subject": "xen: more min3() calls",
                          "bytes": 50_700_000, "ratio": 17.48}]}
    scan = {"n_files": 701, "n_ok": 701, "n_measured": 3, "n_reused": 698,
            "total_bytes": 1_292_181_981, "scan_seconds": 10.0, "workers": 2, "build": {}}
    atomic_write_json(d / "check.json", {
        "schema": 1, "kind": "kexpand.check", "name": "minmax-make-min3-safer-v2",
        "series": {"subject": "minmax: make min3() safer", "version": 2, "key": "k",
                   "sources": ["/x/v2.mbox"],
                   "patches": [{"n": 1, "of": 2, "subject": "kernel.h: a comment",
                                "commit": "1" * 40, "prefix": "[PATCH v2 1/2]"},
                               {"n": 2, "of": 2, "subject": "xen: more min3() calls",
                                "commit": "2" * 40, "prefix": "[PATCH v2 2/2]"}]},
        "base": {"ref": "packaged", "commit": "a" * 40, "subject": "the base"},
        "tip": {"commit": "2" * 40}, "tree": "/x", "package": "linux-source-6.1 6.1.192-3",
        "config": "x86_64 tinyconfig + config.fragment", "compilers": {"gcc": "gcc 12"},
        "threshold": {"ratio": 1.1, "given": None, "min_growth_bytes": 16384},
        "path": "seeded", "path_reason": None, "verdict": "regression",
        "results": {"gcc": {"regressions": [reg], "improvements": [],
                            "scan_base": scan, "scan_tip": scan}},
        "make_command": "make check PATCHES=/x/v2.mbox", "date": "2026-12-05T00:00:00+00:00"})
    return d


def make_track(results, n=N_COMMITS, name="minmax"):
    """track.json (the shape bench/cmd/track.py writes) and its CSVs: n
    commits, 3 files, 3 metrics; steps at a few commits (interesting), a
    compiler change at n*2/5 (with an interesting entry there, which is
    not a regression), a config change, a host change (not listed: found
    from the setups; shown, not a boundary: the step there is marked), a
    build failure, a stretch not counted; SCAN=1's total_bytes. Commit n-100 is the fixture's
    compare B against its A: its point links to that report."""
    rnd = random.Random(24)
    d = results / "track" / name
    ids = [f"{rnd.getrandbits(160):040x}" for _ in range(n)]
    ids[n - 100], ids[n - 101] = "e" * 40, "d" * 40
    base = {f: (2_600_000 + 300_000 * i, 22_000 + 1_000 * i, 3_000_000_000 + 10 ** 8 * i)
            for i, f in enumerate(TRACK_FILES)}
    step = {150: (TRACK_FILES[0], 1.3), 400: (TRACK_FILES[1], 1.2), 600: (TRACK_FILES[2], 1.1),
            n * 17 // 20: (TRACK_FILES[2], 1.05)}
    gcc, cfg, host = "gcc (Debian 12.2.0-14) 12.2.0", "abc123", "h1"
    commits, level = [], {f: 1.0 for f in TRACK_FILES}
    for i, c in enumerate(ids):
        if i == n * 2 // 5:
            gcc = "gcc (Debian 12.3.0-1) 12.3.0"
        if i == n * 7 // 10:
            cfg = "def456"
        if i == n * 17 // 20:
            host = "h2"
        if i in step:
            level[step[i][0]] *= step[i][1]
        vals = {}
        for f in TRACK_FILES:
            b, ll, ins = base[f]
            e = {"bytes": int(b * level[f]) + rnd.randrange(3), "longest_line": int(ll * level[f]),
                 "instructions_c": int(ins * level[f]) + rnd.randrange(100_000), "status": "ok"}
            if i == 300 and f == TRACK_FILES[1]:
                e = {"bytes": None, "longest_line": None, "instructions_c": None,
                     "status": "build-failure"}
            elif 500 <= i < 510:
                e["instructions_c"] = None
            vals[f] = e
        commits.append({"commit": c, "short": c[:12], "date": f"2024-{1 + i * 12 // n:02d}-"
                        f"{1 + i % 28:02d}T12:00:00+00:00",
                        "subject": f"mm: change number {i} <in> \"{TRACK_FILES[i % 3]}\"",
                        "parent": ids[i - 1] if i else "f" * 40,
                        "setup": {"gcc": gcc, "config_hash": cfg, "host": host,
                                  "counter": "qemu-tcg"},
                        "values": {"gcc": vals},
                        "total_bytes": {"gcc": 1_292_181_981 + 1000 * i}})
    tpl = "make compare KERNEL=/src/linux A={parent} B={commit} FILES=\"" + \
        " ".join(TRACK_FILES) + "\""

    def entry(i, f, m, compare=None):
        a = commits[i - 1]["values"]["gcc"][f][m]
        b = commits[i]["values"]["gcc"][f][m]
        return {"commit": ids[i], "parent": ids[i - 1], "subject": commits[i]["subject"],
                "cc": "gcc", "file": f, "metric": m, "before": a, "after": b,
                "delta": b - a, "ratio": round(b / a, 4), "sigma": 3.5,
                "z": round((b - a) / 3.5, 1), "compare": compare,
                "make_compare": tpl.replace("{parent}", ids[i - 1]).replace("{commit}", ids[i])}
    interesting = [entry(150, TRACK_FILES[0], "bytes", "compare/laight-v4..torvalds-fixes"),
                   entry(150, TRACK_FILES[0], "longest_line"),
                   entry(400, TRACK_FILES[1], "bytes"),
                   entry(600, TRACK_FILES[2], "instructions_c"),
                   entry(n * 17 // 20, TRACK_FILES[2], "longest_line")]
    atomic_write_json(d / "track.json", {
        "schema": 1, "kind": "kexpand.track", "name": name, "tree": "/src/linux",
        "range": "v6.6..master", "every": 1, "config": "x86_64 tinyconfig + config.fragment",
        "files": TRACK_FILES, "compilers": ["gcc"], "commits": commits,
        "metrics": dict(METRICS, total_bytes="whole build, total -E bytes"),
        "setup_changes": [{"commit": ids[n * 2 // 5], "boundary": True,
                           "what": "gcc: gcc 12.2.0 -> gcc 12.3.0"},
                          {"commit": ids[n * 7 // 10], "what": "config: abc123 -> def456"}],
        "noise": {"gcc": {f: {"bytes": 3.5, "longest_line": 0.0, "instructions_c": 120000.0}
                          for f in TRACK_FILES}},
        "interesting": interesting, "make_compare_template": tpl,
        "make_command": "make track KERNEL=/src/linux RANGE=v6.6..master",
        "generated": "2026-12-05T00:00:00+00:00"})
    for m in METRICS:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["commit", "date", "subject"] + TRACK_FILES)
        for c in commits:
            w.writerow([c["commit"], c["date"], c["subject"]]
                       + [c["values"]["gcc"][f][m] for f in TRACK_FILES])
        atomic_write(d / f"{m}-gcc.csv", buf.getvalue())
    return d, ids


def clang_record(results):
    """A clang record whose setup.c carries the stacks of its hottest line."""
    from bench import results as res
    name, commit, sizes = tr.POINTS[1]
    f = tr.FILES[0]
    e = dict(tr.entry(sizes[f]), macros={
        "status": "ok", "bytes_est": 90, "n_macros": 2,
        "macros": [{"name": "min3", "inclusive_bytes": 80, "calls": 1}],
        "hot_line": {"at": f + ":796", "bytes_est": 90, "macros": [],
                     "n_macros": 2, "stacks": [[f + ":796", 10],
                                               [f + ":796;min3;min", 80]]}})
    res.write_record(results, {"schema": 1, "kind": "kexpand.expansion",
                               "case": "minmax", "point": name, "commit": commit,
                               "compiler": "clang", "compiler_version": "clang 14",
                               "files": {f: e}})


def compare_py(results, *args):
    p = subprocess.run(["/usr/bin/python3", str(tr.REPO / "report.py"), "--results",
                        str(results), *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("page")
    results = tr.make_results(tmp)
    clang_record(results)
    compare_py(results)
    tr.write_pair(results, [30.1, 31.0, 29.5], [0.61, 0.60, 0.62])
    compare_py(results, "--pair", str(results / "compare" / "laight-v4..torvalds-fixes"))
    fake_check(results)
    compare_py(results, "--check")
    d, ids = make_track(results)
    compare_py(results, "--track")
    return {"results": results, "track": d, "ids": ids, "tmp": tmp}


# --- reading the pages (Python) ------------------------------------------------

class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.h1, self.imgs, self.frames = [], 0, [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.h1 += tag == "h1"
        for key in {"a": ["href"], "img": ["src"], "iframe": ["src"], "object": ["data"],
                    "link": ["href"], "script": ["src"]}.get(tag, []):
            if a.get(key):
                self.refs.append((tag, a[key]))
        if tag == "img":
            self.imgs.append(a)
        if tag in ("iframe", "object"):
            self.frames.append(a)


def parse(p):
    x = Links()
    x.feed(p.read_text())
    return x


def target(page, ref):
    """The file a relative reference of `page` names (None: an anchor on
    the page itself); absolute and remote references fail the test."""
    u = urlsplit(ref)
    assert not u.scheme and not u.netloc and not ref.startswith("/"), (page, ref)
    return (page.parent / unquote(u.path)).resolve() if u.path else None


SVG_HREF = re.compile(r'\shref="([^"]*)"')


def crawl(index):
    """Every HTML page reachable from index, through pages and the links
    inside SVG documents: {page: parsed}."""
    seen, svgs, todo = {}, set(), [index.resolve()]
    while todo:
        p = todo.pop()
        if p in seen or p in svgs:
            continue
        if p.suffix == ".svg":
            svgs.add(p)
            refs = [("svg a", r) for r in SVG_HREF.findall(p.read_text())]
        else:
            seen[p] = parse(p)
            refs = seen[p].refs
        for tag, ref in refs:
            t = target(p, ref)
            assert t is None or t.exists(), f"{p}: {tag} {ref} names no file"
            if t is not None and t.suffix in (".html", ".svg"):
                todo.append(t)
    return seen


# --- the tests -------------------------------------------------------------------

def test_index_opens_with_the_finding_and_links_every_section(site):
    results = site["results"]
    index = results / "index.html"
    text = index.read_text()
    assert len(text) < 16_000 and "<img" not in text
    x = parse(index)
    assert x.h1 == 1
    # setup.c: worst at laight-v4, best at pre-6.7; its hottest line
    assert ("<b>arch/x86/xen/setup.c</b>: laight-v4 expands to <b>50,700,000</b> bytes, "
            "<b>x17.5</b> pre-6.7's 2,900,000; line 796 <code") in text
    assert ">extra_pages = min3(a, b, c);</code> makes 25,350,000 of them (50%)" in text
    # compaction.c: failed at torvalds-fixes, so 3,700,000 against 2,600,000
    assert "<b>mm/compaction.c</b>: laight-v4 expands to <b>3,700,000</b> bytes, " \
        "<b>x1.42</b> pre-6.7's 2,600,000" in text
    assert text.index("setup.c</b>") < text.index("compaction.c</b>") < text.index("Sections")
    refs = [ref for tag, ref in x.refs if tag == "a"]
    for key in SECTIONS:
        assert f"pages/{key}.html" in refs, key
        assert (results / "pages" / f"{key}.html").exists()
    for report in ("compare/laight-v4..torvalds-fixes/index.html",
                   "check/minmax-make-min3-safer-v2/index.html", "track/minmax/index.html"):
        assert report in refs, report
    assert "regression: minmax: make min3() safer" in text
    dom, err = chromium(site["tmp"] / "p-index", "--virtual-time-budget=5000", "--dump-dom",
                        index.as_uri())
    assert dom.count("<h1>") == 1 and "x17.5" in dom, err[-2000:]


def test_every_page_loads_with_its_links_images_and_graphs(site):
    results = site["results"]
    pages = crawl(results / "index.html")
    commit_pages = [p for p in pages if p.parent.name == "c"]
    # a page per commit; all reachable but the one whose point and row
    # link straight to its compare report
    assert len(list((site["track"] / "c").glob("*.html"))) == N_COMMITS
    assert len(commit_pages) == N_COMMITS - 1
    for p, x in pages.items():
        assert x.h1 == 1, p
        for img in x.imgs:
            assert img.get("loading") == "lazy" and img.get("width"), (p, img)
    # every section has its page, and each report a page of its own
    for key in SECTIONS:
        assert (results / "pages" / f"{key}.html").resolve() in pages
    for d in ("compare/laight-v4..torvalds-fixes", "check/minmax-make-min3-safer-v2",
              "track/minmax"):
        assert (results / d / "index.html").resolve() in pages
    check = (results / "check/minmax-make-min3-safer-v2/index.html").read_text()
    assert "regression" in check and 'href="report.txt"' in check and "<table>" in check
    assert "<pre><code>series:   minmax: make min3() safer" in check    # fenced blocks
    # in Chromium, all pages but the thousand commit pages (a sample of them)
    load = [p for p in pages if p not in commit_pages] + sorted(commit_pages)[:3]
    report = harness(site["tmp"], load)
    assert len(report) == len(load)
    imgs = 0
    for r in report:
        p = Path(unquote(urlsplit(r["page"]).path))
        assert r["h1"] == "1", r
        assert r["imgs"] == str(len(pages[p].imgs)), r
        assert r["broken"] == "", r
        imgs += int(r["imgs"])
        for g in filter(None, r["graphs"].split(" ")):
            root, circles, links, nodes, width = g.split(":")
            assert root == "svg" and int(width) > 500, r
            assert int(circles) == int(links) == N_COMMITS
            assert int(nodes) <= SVG_NODES_PER_COMMIT * N_COMMITS + SVG_NODES_FIXED
    assert imgs >= 7      # series plots (gcc, clang), a flame graph, the compare's two
    graphs = next(r for r in report if r["page"].endswith("track/minmax/index.html"))
    assert len(graphs["graphs"].split()) == 10 and int(graphs["nodes"]) <= TRACK_PAGE_NODES


HARNESS = """<!doctype html><html><body><ol id=out></ol><script>
var pages=%s,i=0,out=document.getElementById('out');
function wait(fr,n){return new Promise(function(res){(function poll(k){var d=null;
try{d=fr.contentDocument;}catch(e){}if(d&&d.documentElement&&d.documentElement.nodeName==='svg'
&&d.readyState==='complete'||k>n)res();else setTimeout(function(){poll(k+1);},50);})(0);});}
function next(){if(i>=pages.length){document.body.setAttribute('data-done','1');return;}
var url=pages[i++],f=document.createElement('iframe');f.width=1280;f.height=3000;
f.onload=function(){var d=f.contentDocument,imgs=Array.from(d.images),
fr=Array.from(d.querySelectorAll('iframe,object'));
imgs.forEach(function(im){im.loading='eager';});fr.forEach(function(g){g.loading='eager';});
Promise.all(imgs.map(function(im){return im.complete&&im.naturalWidth>0?0:new Promise(
function(r){im.addEventListener('load',r);im.addEventListener('error',r);});})
.concat(fr.map(function(g){return wait(g,200);}))).then(function(){
var li=document.createElement('li');li.setAttribute('data-page',url);
li.setAttribute('data-h1',d.querySelectorAll('h1').length);
li.setAttribute('data-imgs',imgs.length);
li.setAttribute('data-nodes',d.getElementsByTagName('*').length);
li.setAttribute('data-broken',imgs.filter(function(im){return !(im.naturalWidth>0);})
.map(function(im){return im.getAttribute('src');}).join(' '));
li.setAttribute('data-graphs',fr.map(function(g){var s=g.contentDocument,r=s&&s.documentElement;
if(!r||r.nodeName!=='svg')return 'none:0:0:0:0';var p=s.querySelector('path');
return 'svg:'+s.querySelectorAll('circle').length+':'+s.querySelectorAll('a').length+':'+
s.getElementsByTagName('*').length+':'+Math.round(p?p.getBBox().width:0);}).join(' '));
out.appendChild(li);f.remove();next();});};f.src=url;document.body.appendChild(f);}
next();</script></body></html>"""


def harness(tmp, pages):
    """Every page in an iframe of one Chromium (file access between file://
    pages allowed, for the test only): its <h1>s, its images once each has
    loaded or failed (lazy ones made eager), and its embedded graphs."""
    h = tmp / "harness.html"
    h.write_text(HARNESS % json.dumps([p.as_uri() for p in pages]))
    dom, err = chromium(tmp / "p-harness", "--allow-file-access-from-files",
                        "--virtual-time-budget=600000", "--window-size=1300,3100",
                        "--dump-dom", h.as_uri(), timeout=300)
    assert 'data-done="1"' in dom, err[-3000:]
    return [dict(re.findall(r'data-([a-z0-9]+)="([^"]*)"', li))
            for li in re.findall(r"<li ([^>]*)>", dom)]


def test_track_page_graphs_links_and_bounds(site):
    d, ids = site["track"], site["ids"]
    index = d / "index.html"
    assert index.stat().st_size <= TRACK_PAGE_BYTES
    svgs = sorted((d / "graphs").glob("*.svg"))
    assert len(svgs) == len(TRACK_FILES) * len(METRICS) + 1       # + total_bytes
    total = index.stat().st_size
    for s in svgs:
        size = s.stat().st_size
        total += size
        assert size <= SVG_BYTES_PER_COMMIT * N_COMMITS + SVG_BYTES_FIXED, (s, size)
        root = ElementTree.parse(s).getroot()
        nodes = list(root.iter())
        assert len(nodes) <= SVG_NODES_PER_COMMIT * N_COMMITS + SVG_NODES_FIXED
        ns = "{http://www.w3.org/2000/svg}"
        links = root.findall(f"{ns}a")
        assert len(links) == N_COMMITS
        for a in links:
            assert a.get("target") == "_top"
            circle = a.find(f"{ns}circle")
            assert circle.find(f"{ns}title").text
            t = target(s, a.get("href"))
            assert t.exists(), (s, a.get("href"))
    assert total <= 48_000 + 10 * (SVG_BYTES_PER_COMMIT * N_COMMITS + SVG_BYTES_FIXED)
    for p in list((d / "c").glob("*.html"))[:50]:
        assert p.stat().st_size <= COMMIT_PAGE_BYTES
    g = (d / "graphs" / "bytes-gcc-arch_x86_xen_setup.c.svg").read_text()
    # the step at commit 150: red, linked to the compare report drawn for it
    step = re.search(r'<a href="([^"]+)" target="_top"><circle class="i"[^>]*><title>'
                     + ids[150][:12] + r"[^<]*\n([^<]*)\ninteresting: z=", g)
    assert step and step.group(1) == "../../../compare/laight-v4..torvalds-fixes/index.html"
    assert "x1.3 vs parent" in step.group(2)
    # the setup change: a labelled line, and the entry there is not a regression
    g2 = (d / "graphs" / "bytes-gcc-mm_compaction.c.svg").read_text()
    assert "gcc: gcc 12.2.0 -&gt; gcc 12.3.0" in g2 and 'class="s"' in g2
    assert 'class="i"' not in g2 and "host: h1 -&gt; h2 (shown only)" in g2
    g3 = (d / "graphs" / "longest_line-gcc-kernel_sched_fair.c.svg").read_text()
    assert g3.count('class="i"') == 1 and "host: h1 -&gt; h2" in g3
    assert (d / "graphs" / "total_bytes-gcc-whole_build.svg").exists()
    assert "setup change, not a regression" in index.read_text()
    assert "no value: build-failure" in g2
    # a commit without a report: its page shows the make compare command
    plain = (d / "c" / f"{ids[10][:12]}.html").read_text()
    assert f"make compare KERNEL=/src/linux A={ids[9]} B={ids[10]}" in plain
    assert f'href="../c/{ids[10][:12]}.html"' in g
    # the compare whose A and B are a commit and its parent: linked from its point
    assert '<a href="../../../compare/laight-v4..torvalds-fixes/index.html" target="_top">' \
           '<circle cx' in g
    for name in ("bytes-gcc.csv", "track.json"):
        assert f'href="{name}"' in index.read_text()
    # in Chromium, opened as it is: the graphs near the window load (the
    # others as the page scrolls; how many depends on Chromium's lazy-load
    # distance, so only "some, each whole" here: the test above loads all)
    dom, err = chromium(site["tmp"] / "p-track", "--allow-file-access-from-files",
                        "--virtual-time-budget=20000", "--window-size=1280,1200",
                        "--dump-dom", index.as_uri())
    assert dom.count('<iframe class="graph"') == len(svgs), err[-2000:]
    frames = re.findall(r'<iframe class="graph"[^>]*data-loaded="(\d+)"', dom)
    assert frames and all(int(n) == N_COMMITS for n in frames), err[-2000:]
    # a click on the step's point opens that commit against its parent
    click = site["tmp"] / "click.html"
    click.write_text(
        f'<!doctype html><iframe id=f src="{(d / "graphs" / svgs[0].name).as_uri()}" width=960 '
        "height=280></iframe><script>document.getElementById('f').onload=function(){"
        "var a=this.contentDocument.querySelector('circle.i').parentNode;"
        "a.dispatchEvent(new MouseEvent('click',{bubbles:true,cancelable:true}));};</script>")
    dom, err = chromium(site["tmp"] / "p-click", "--allow-file-access-from-files",
                        "--virtual-time-budget=5000", "--dump-dom", click.as_uri())
    assert "<h1>laight-v4 .. torvalds-fixes</h1>" in dom, dom[:2000] + err[-2000:]


def test_screenshot_of_the_index(site):
    shot = site["tmp"] / "page.png"
    chromium(site["tmp"] / "p-shot", "--virtual-time-budget=5000", "--window-size=1280,1600",
             f"--screenshot={shot}", (site["results"] / "index.html").as_uri())
    assert shot.read_bytes()[:4] == b"\x89PNG"
    keep = os.environ.get("KEXPAND_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)


# --- plots/track.py on small tracks ------------------------------------------------

def small_track(n=5, every=1):
    cs = [{"commit": f"{i:040x}", "date": f"2024-01-0{i + 1}", "subject": f"s{i}",
           "parent": f"{i - 1:040x}" if i else None,
           "setup": {"gcc": "gcc 12", "clang": "clang 14" if i < 3 else "clang 15",
                     "config_hash": "a", "host": "h1"},
           "values": {cc: {"f.c": {"bytes": 1000 + 100 * i, "status": "ok"}}
                      for cc in ("gcc", "clang")}} for i in range(0, n * every, every)]
    return {"schema": 1, "kind": "kexpand.track", "name": "t", "files": ["f.c"],
            "compilers": ["gcc", "clang"], "metrics": {"bytes": "-E bytes"}, "commits": cs,
            "interesting": [], "setup_changes": []}


def test_track_titles_say_the_change_against_the_parent_or_the_point_before():
    from plots import track
    t = small_track()
    hrefs = {c["commit"]: "x.html" for c in t["commits"]}
    g = track.svg(t, "gcc", "f.c", "bytes", hrefs, {}, {})
    assert "1,100 +100, x1.1 vs parent" in g
    t2 = small_track(every=2)          # the parents were not measured
    g2 = track.svg(t2, "gcc", "f.c", "bytes", {c["commit"]: "x" for c in t2["commits"]}, {}, {})
    assert f"1,200 +200, x1.2 vs {0:012x} (the point before)" in g2
    ElementTree.fromstring(g)           # well-formed XML


def test_track_setup_changes_belong_to_their_compiler():
    from plots import track
    t = small_track()
    ch = track.setup_changes(t)
    [(commit, c)] = ch.items()
    assert commit == f"{3:040x}" and c["what"] == "clang: clang 14 -> clang 15"
    assert track.applies(c, "clang", t["compilers"]) and not track.applies(c, "gcc", t["compilers"])
    t["setup_changes"] = [{"commit": commit, "what": "clang 14 -> 15"}]
    assert track.setup_changes(t)[commit]["what"] == "clang 14 -> 15"
    f, ticks = track.y_scale([1000, 50_000])             # 50x: a log scale
    assert [v for v, _ in ticks][:3] == [1000, 2000, 5000] and f(1000) > f(50_000)


def test_a_track_of_another_shape_is_skipped(tmp_path):
    from plots import trackpage
    d = tmp_path / "track" / "bad"
    atomic_write_json(d / "track.json", {"kind": "kexpand.track", "commits": "no"})
    assert trackpage.write_all(tmp_path) == []
    assert trackpage.tracks_section(tmp_path)["items"] == []
    assert not (d / "index.html").exists()


def test_track_axis_labels_differ_however_close_the_values():
    """setup.c's bytes over a history vary in the fifth digit: four ticks
    once read 3.514MB, 3.514MB, 3.514MB, 3.513MB."""
    from plots.track import tick_labels, y_scale
    _, ticks = y_scale([3_513_019, 3_513_402, 3_514_011, 3_513_700])
    labels = tick_labels([v for v, _ in ticks], "B")
    assert len(set(labels)) == len(labels) > 2, labels
    assert all(lab.endswith("MB") for lab in labels)
    assert tick_labels([0, 500, 1000], "B") == ["0.0kB", "0.5kB", "1.0kB"]
    # each label is its value: 250 is 0.25kB, never 0.2kB
    assert tick_labels([0, 250, 500, 750, 1000], "B") == [
        "0.00kB", "0.25kB", "0.50kB", "0.75kB", "1.00kB"]
