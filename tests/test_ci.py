"""kexpand in the kernel's CI (ci/README.md), each system's contract as
its source states it, on the fake kernel tree:

- NIPA (linux-netdev/nipa core/test.py Test._exec_run): the test's
  info.json "run" joined to its folder, cwd the tree, env + DESC_FD (the
  write end of an os.pipe, pass_fds), RESULTS_DIR, BRANCH_BASE and, for
  a patch only, FIRST_IN_SERIES; exit 0 success, 250 warning, else fail;
- patchwork (getpatchwork/patchwork docs/api/schemas: CheckCreate):
  state, context ^[-a-zA-Z0-9_]+$ (<= 255), description, target_url
  (a URI, <= 200);
- b4 (mricon/b4 LoreMessage.run_local_check): the mail's bytes on stdin,
  cwd the git top-level, no commit id; a stdout line with "ERROR:" fails,
  another warns, stderr lines fail, nothing and exit 0 passes; 0.15's
  JSON [{tool, status, summary, url, details}];
- the reply mail: parsed back with Python's email package."""
import email
import email.policy
import json
import mailbox
import os
import re
import shlex
import subprocess

import pytest

from test_check import BAD_SERIES, SETUP, spread_diff, series_mbox, user_tree
from test_faults import REPO, fake  # noqa: F401

NIPA_TEST = REPO / "ci/nipa/kexpand-expansion"
B4 = REPO / "bin/kexpand-b4-check"


def nipa(tree, result_dir, env, branch, first_in_series=None, name="kexpand-expansion",
         timeout=600):
    """NIPA's Test._exec_run, step by step: (retcode, stdout, desc)."""
    info = json.loads((NIPA_TEST / "info.json").read_text())
    run = list(info["run"])
    if run[0][0] != "/":
        run[0] = os.path.join(NIPA_TEST, run[0])
    rfd, wfd = os.pipe()
    add = {"DESC_FD": str(wfd), "RESULTS_DIR": os.path.join(result_dir, name),
           "BRANCH_BASE": branch}
    if first_in_series is not None:
        add["FIRST_IN_SERIES"] = str(int(first_in_series))
    os.makedirs(add["RESULTS_DIR"], exist_ok=True)     # Test.exec makes it first
    p = subprocess.run(run, cwd=tree, env=dict(env, **add), pass_fds=[wfd],
                       capture_output=True, text=True, timeout=timeout)
    os.close(wfd)
    with os.fdopen(rfd) as f:
        desc = f.read()
    return p.returncode, p.stdout + p.stderr, desc


def committed(tmp_path):
    """The fake tree as a git tree: `net-next` at the base, the series
    (comment, 300 min3() calls in setup.c, min() evaluating once) on top."""
    g = user_tree(tmp_path / "linux")
    g("branch", "net-next")
    g("am", "-q", str(series_mbox(tmp_path / "v2.mbox", BAD_SERIES, cover=False)))
    return tmp_path / "linux", g


def check_schema(pw):
    """patchwork's CheckCreate (docs/api/schemas/latest/patchwork.yaml)."""
    assert set(pw) <= {"state", "context", "description", "target_url"}
    assert pw["state"] in ("pending", "success", "warning", "fail")
    assert re.fullmatch(r"[-a-zA-Z0-9_]+", pw["context"]) and len(pw["context"]) <= 255
    assert isinstance(pw["description"], str) and "\n" not in pw["description"]
    if pw.get("target_url") is not None:
        assert re.fullmatch(r"https?://\S+", pw["target_url"])
        assert len(pw["target_url"]) <= 200


def test_nipa_patch_and_series_tests(fake, tmp_path):
    base, env = fake
    env = dict(env, CASE="fake", REPORT_URL="https://ci.example.org/kexpand/" + "x" * 80)
    tree, g = committed(tmp_path)
    res = tmp_path / "nipa-results"
    tip = g("rev-parse", "HEAD").stdout.decode().strip()
    # patch 1/3: a comment, success
    g("checkout", "-q", "HEAD~2")
    rc, out, desc = nipa(tree, res / "1", env, "net-next", first_in_series=True)
    assert rc == 0, out
    assert re.fullmatch(r"expansion: 0 files over \+10%; whole build \+\d+\.\d\d% "
                        r"\([\d,]+ -> [\d,]+ B\)\n", desc), desc
    d = res / "1/kexpand-expansion"
    assert {"report.txt", "check.json", "patchwork-check.json", "pwclient-check.txt",
            "report.eml", "kexpand.log"} <= {p.name for p in d.iterdir()}
    assert json.loads((d / "patchwork-check.json").read_text())["state"] == "success"
    # patch 2/3: 300 min3() calls, fail; the tree only read
    g("checkout", "-q", tip + "~1")
    status = g("status", "--porcelain").stdout
    rc, out, desc = nipa(tree, res / "2", env, "net-next", first_in_series=False)
    assert rc == 1, out
    assert desc.startswith("expansion: 1 file over +10%;") and desc.count("\n") == 1, desc
    assert g("status", "--porcelain").stdout == status
    d = res / "2/kexpand-expansion"
    rec = json.loads((d / "check.json").read_text())
    assert rec["base"]["commit"] == g("rev-parse", "HEAD~").stdout.decode().strip()
    assert (d / "report.txt").read_text() in out        # stdout: what NIPA's summary shows
    pw = json.loads((d / "patchwork-check.json").read_text())
    check_schema(pw)
    assert pw == {"state": "fail", "context": "kexpand-expansion", "description": desc.strip(),
                  "target_url": pw["target_url"]}
    assert pw["target_url"].startswith("https://ci.example.org/kexpand/")
    line = (d / "pwclient-check.txt").read_text().splitlines()[-1]
    assert shlex.split(line) == ["pwclient", "check-create", "-c", "kexpand-expansion",
                                 "-s", "fail", "-u", pw["target_url"], "-d",
                                 pw["description"], "PATCH_ID"]
    # the series test: no FIRST_IN_SERIES, BRANCH_BASE..HEAD
    g("checkout", "-q", tip)
    rc, out, desc = nipa(tree, res / "s", env, "net-next")
    assert rc == 1, out
    rec = json.loads((res / "s/kexpand-expansion/check.json").read_text())
    assert len(rec["series"]["patches"]) == 3 and rec["tip"]["commit"] == tip
    assert rec["base"]["commit"] == g("rev-parse", "net-next").stdout.decode().strip()
    # a warning (250): the whole build over half of TOTAL_THRESHOLD, under it
    g("checkout", "-q", "-b", "spread", "net-next")
    g("am", "-q", str(series_mbox(tmp_path / "s.mbox", [("minmax: clamp helpers",
                                                         spread_diff())], cover=False)))
    rc, out, desc = nipa(tree, res / "w", dict(env, THRESHOLD="100000%",
                                               TOTAL_THRESHOLD="3000%"), "net-next", True)
    assert rc == 250, out
    assert desc.startswith("expansion: 0 files over +100000%; whole build +")
    assert desc.endswith("; warning: over half of +3000%\n"), desc
    assert json.loads((res / "w/kexpand-expansion/patchwork-check.json").read_text()
                      )["state"] == "warning"
    # kexpand failing is never success: a bad setting is exit 2, said in the line
    rc, out, desc = nipa(tree, res / "bad", dict(env, THRESHOLD="ten"), "net-next")
    assert rc == 2 and desc.startswith("kexpand failed: exit 2 (user error): THRESHOLD="), desc
    pw = json.loads((res / "bad/kexpand-expansion/patchwork-check.json").read_text())
    check_schema(pw)
    assert pw["state"] == "fail"


def b4(tree, mail, env, *args):
    """b4's run_local_check: the mail's bytes on stdin, cwd the top-level."""
    return subprocess.run([str(B4), *args], input=mail, cwd=tree, env=env,
                          capture_output=True, timeout=600)


LORE = """From a@example.org Mon Sep 18 08:16:30 2023
From: A Developer <a@example.org>
To: linux-kernel@vger.kernel.org
Cc: Other Dev <o@example.org>, x86@kernel.org
Date: Mon, 18 Sep 2023 08:16:30 +0000
Message-ID: <{mid}@example.org>
{extra}Subject: [PATCH v2 {n}/3] {subject}

{body}
---
{diff}
--
2.39.5

"""


def lore_mbox(path):
    """The series as lore serves it: a cover letter, the patches replying to it."""
    text = LORE.format(mid="cover", extra="", n=0, subject="minmax: make min3() safer",
                       body="The series.", diff="")
    for i, (s, d) in enumerate(BAD_SERIES, 1):
        text += LORE.format(mid=f"p{i}", extra="In-Reply-To: <cover@example.org>\n"
                            "References: <cover@example.org>\n", n=i, subject=s,
                            body="Why.", diff=d)
    path.write_text(text)
    return path


def test_b4_check_prep_and_am(fake, tmp_path):
    base, env = fake
    env = dict(env, CASE="fake", KEXPAND_B4_DIR=str(tmp_path / "b4"))
    tree, g = committed(tmp_path)
    # prep: the series applied, each patch as `git format-patch` gives it
    # (no Message-ID); its base is the commit before its own
    one = g("format-patch", "--stdout", "-1", "HEAD~2").stdout
    p = b4(tree, one, env)
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b""), p
    two = g("format-patch", "--stdout", "-1", "HEAD~1").stdout
    p = b4(tree, two, env)
    assert p.stderr == b"" and p.returncode == 1, p
    lines = p.stdout.decode().splitlines()
    assert re.fullmatch(rf"ERROR: {SETUP}: preprocessed size \d+ B -> [\d.]+ kB "
                        r"\(x\d+\.\d\d\), line \d+", lines[0]), lines
    assert all(l.startswith(("ERROR:", "WARNING:")) for l in lines)
    [rec] = [r for r in (json.loads(j.read_text()) for j in (tmp_path / "b4").glob(
        "*/results/check/*/check.json")) if r["verdict"] == "regression"]
    assert rec["base"]["commit"] == g("rev-parse", "HEAD~2").stdout.decode().strip()
    eml = email.message_from_bytes(next((tmp_path / "b4").glob(
        f"*/results/check/{rec['name']}*/report.eml")).read_bytes(),
        policy=email.policy.default)
    assert eml["In-Reply-To"] is None and eml["References"] is None
    assert "had no Message-ID" in eml.get_content()
    # am: the series not applied (HEAD is the base), a mail from lore
    g("checkout", "-q", "net-next")
    mails = lore_mbox(tmp_path / "lore.mbox").read_text().split("\nFrom a@example.org ")
    p = b4(tree, ("From a@example.org " + mails[2]).encode(), env, "--json")
    assert p.stderr == b"" and p.returncode == 1, p
    [r] = json.loads(p.stdout)
    assert set(r) == {"tool", "status", "summary", "url", "details"}
    assert r["tool"] == "kexpand" and r["status"] == "fail" and SETUP in r["details"]
    assert r["summary"].startswith("expansion: 1 file over +10%")
    assert r["url"].startswith("file:///")


def test_report_eml_threads_to_the_cover_letter(fake, tmp_path):
    base, env = fake
    tree, g = committed(tmp_path)
    mbox = lore_mbox(tmp_path / "lore.mbox")
    p = subprocess.run(["make", "-C", str(REPO), "check", "CASE=fake", f"KERNEL={tree}",
                        "BASE=net-next", f"PATCHES={mbox}",
                        "REPORT_FROM=Kexpand CI <ci@example.net>"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert "Error 1" in p.stderr, p.stderr[-3000:]
    [d] = (base / "results/check").iterdir()
    rec = json.loads((d / "check.json").read_text())
    assert rec["series"]["mail"] == {
        "message_id": "cover@example.org", "from": "A Developer <a@example.org>",
        "to": ["linux-kernel@vger.kernel.org"],
        "cc": ["Other Dev <o@example.org>", "x86@kernel.org"],
        "subject": "[PATCH v2 0/3] minmax: make min3() safer"}
    raw = (d / "report.eml").read_bytes()
    m = email.message_from_bytes(raw, policy=email.policy.default)
    [cover] = [x for x in mailbox.mbox(str(mbox)) if "0/3]" in x["Subject"]]
    assert m["In-Reply-To"] == m["References"] == cover["Message-ID"]
    assert m["To"] == cover["From"]
    assert m["Cc"] == "linux-kernel@vger.kernel.org, Other Dev <o@example.org>, x86@kernel.org"
    assert m["Subject"] == "Re: " + cover["Subject"]
    assert m["From"] == "Kexpand CI <ci@example.net>"
    assert m["Message-ID"].endswith("@example.net>") and m["Date"].datetime
    body = m.get_content()
    # the robot's order: the finding, the base/config/compiler block with
    # the patch link and reproduce, the tags, then the details
    at = [body.index(s) for s in ("Hi A Developer,", "kexpand noticed a +", "base:",
                                  "patch link: https://lore.kernel.org/r/cover@example.org",
                                  "reproduce:", "| Reported-by: Kexpand CI <ci@example.net>",
                                  "| Closes: ", "Details are as below:")]
    assert at == sorted(at), body
    assert b"\r\n" not in raw and all(len(l) <= 998 for l in raw.split(b"\n"))


def test_ci_outcome_and_findings_on_records():
    """The warning class and the lines, on records of Laight's v4 shape."""
    from plots import ci
    w = {"bytes_base": 1292181821, "bytes_tip": 1292313002, "growth_bytes": 131181,
         "change": 131181 / 1292181821, "verdict": "ok", "files_grown": 3}
    rec = {"name": "x", "verdict": "ok", "tip": {"commit": "0" * 40},
           "threshold": {"ratio": 1.1, "total_ratio": 1.005, "total_min_growth_bytes": 16384},
           "results": {"gcc": {"regressions": [], "failures": [], "whole_build": w}}}
    assert ci.description(rec) == ("expansion: 0 files over +10%; whole build +0.01% "
                                   "(1,292,181,821 -> 1,292,313,002 B)")
    assert ci.outcome(rec) == "success" and ci.findings(rec) == []
    w.update(bytes_tip=1292181821 + 4000000, growth_bytes=4000000, change=4e6 / 1292181821)
    assert ci.outcome(rec) == "warning"
    assert ci.findings(rec)[0].startswith("WARNING: whole build: preprocessed size +0.31%")
    rec["verdict"] = "regression"
    rec["results"]["gcc"]["regressions"] = [{"file": SETUP, "bytes_base": 4239000,
                                              "bytes_tip": 50698440, "hot_tip": SETUP + ":796"}]
    assert ci.outcome(rec) == "fail"
    assert ci.findings(rec)[0] == (f"ERROR: {SETUP}: preprocessed size 4.2 MB -> 50.7 MB "
                                   "(x11.96), line 796")
    check_schema(ci.patchwork_check(rec, ci.target_url("https://e.org/" + "y" * 190, "n")))
    assert ci.b4_json("warning", "s") == [{"tool": "kexpand", "status": "warn",
                                           "summary": "s", "url": "", "details": ""}]


@pytest.mark.parametrize("var,value", [("REPORT_URL", "ftp://x"), ("REPORT_FROM", "nobody"),
                                       ("REPORTED_BY", "a <b>")])
def test_bad_report_settings_are_named(var, value):
    from kbuild import settings
    from kbuild.util import KexpandError
    with pytest.raises(KexpandError, match=var + "="):
        settings.from_env("check", env={var: value, "KEXPAND_WORK": "/tmp/kx-w",
                                        "KEXPAND_RESULTS": "/tmp/kx-r"})
