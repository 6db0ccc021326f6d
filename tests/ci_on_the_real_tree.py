#!/usr/bin/python3
"""Laight's v4 and Torvalds' three fixes through every CI system kexpand
speaks (ci/README.md), on the packaged 6.1 tree: a by-hand run, too long
for `make test` (tests/test_ci.py holds each contract on the fake tree).

    KEXPAND_WORK=<dir> tests/ci_on_the_real_tree.py OUT

OUT gets `linux/` (a user's tree: `base` = pre-6.7, `v4` = Laight's five
patches on it, `fixes` = Torvalds' three on v4, cloned from the case's
prepared tree), one results dir per run, and `summary.json` / `summary.md`:
- NIPA (linux-netdev/nipa core/test.py): the folder's info.json run with
  the tree as cwd, DESC_FD a pipe, RESULTS_DIR, BRANCH_BASE and, for a
  patch test, FIRST_IN_SERIES; the series test, then each patch's;
- b4 (mricon/b4 run_local_check): each patch's mail on stdin (v4: the
  seed mails as lore gives them, decoded; the fixes: `git format-patch`
  of each commit), cwd the tree with the series applied (`b4 prep
  --check`);
- `make check PATCHES= KERNEL=<the tree>` of each series as a lore
  thread (`t.mbox.gz`, quoted-printable, cover letter first, patches out
  of order), for patchwork-check.json and report.eml, whose threading is
  checked against the cover letter.
Macro attribution and instruction counts are left out (NO_MACROS=1
ICOUNT_CAP=0, as a CI may set them): they add minutes and no verdict."""
import email
import email.policy
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
sys.path[:0] = [str(TESTS), str(REPO), str(REPO / "kernel-build")]
from test_ci import B4, nipa  # noqa: E402
from test_mail import mboxrd, msgid, series_mails  # noqa: E402

V4_EXPECTED = ["success", "fail", "success", "fail", "fail"]
FIXES_EXPECTED = ["success"] * 3
NIPA_STATE = {0: "success", 250: "warning", 1: "fail"}


def git(tree, *args):
    return subprocess.run(["git", "-C", str(tree), *args], check=True,
                          capture_output=True).stdout


def user_tree(out, env):
    """The case's tree prepared in KEXPAND_WORK, cloned as a user has it."""
    subprocess.run(["make", "-s", "-C", str(REPO), "prepare"], env=env, check=True)
    tree = out / "linux"
    if not tree.exists():
        case = Path(env["KEXPAND_WORK"]) / "tree"
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(case), str(tree)],
                       check=True)
        for branch, tag in (("base", "pre-6.7"), ("v4", "laight-v4"),
                            ("fixes", "torvalds-fixes")):
            git(tree, "branch", "-f", branch, f"refs/tags/{tag}")
        git(tree, "-c", "advice.detachedHead=false", "checkout", "-q", "v4")
    return tree


def timed(rows, system, what, expected, fn):
    t0 = time.monotonic()
    state, desc, extra = fn()
    rows.append({"system": system, "what": what, "state": state, "expected": expected,
                 "ok": state == expected, "description": desc.strip(),
                 "seconds": round(time.monotonic() - t0, 1), **extra})
    print(f"{system:9} {what:28} {state:8} (expected {expected}) "
          f"{rows[-1]['seconds']:7.1f} s  {desc.strip()[:100]}", flush=True)


def run_nipa(rows, tree, out, env, branch, base, expected, label):
    git(tree, "checkout", "-q", branch)
    timed(rows, "nipa", f"{label} series", "fail" if "fail" in expected else "success",
          lambda: nipa_state(tree, out / f"nipa-{label}-series", env, base, None))
    n = len(expected)
    for k in range(1, n + 1):
        git(tree, "checkout", "-q", f"{branch}~{n - k}")
        timed(rows, "nipa", f"{label} patch {k}/{n}", expected[k - 1],
              lambda: nipa_state(tree, out / f"nipa-{label}-{k}", env, base, k == 1))
    git(tree, "checkout", "-q", branch)


def nipa_state(tree, res, env, base, first):
    rc, _out, desc = nipa(tree, str(res), env, base, first, timeout=None)
    return NIPA_STATE.get(rc, f"exit {rc}"), desc, {"exit": rc}


def run_b4(rows, tree, env, branch, mails, expected, label):
    git(tree, "checkout", "-q", branch)
    for k, mail in enumerate(mails, 1):
        def one():
            p = subprocess.run([str(B4)], input=mail, cwd=tree, env=env, capture_output=True)
            lines = p.stdout.decode().splitlines()
            state = "fail" if any("ERROR:" in x for x in lines) else \
                "warning" if lines or p.stderr else "success"
            return state, (lines[0] if lines else ""), {
                "exit": p.returncode, "lines": lines, "stderr": p.stderr.decode()}
        timed(rows, "b4", f"{label} patch {k}/{len(mails)}", expected[k - 1], one)


def run_mbox(rows, out, env, tree, mails, base, expected, label):
    """make check PATCHES=t.mbox.gz KERNEL=<the user's tree>; the reply
    mail's threading against the thread's cover letter."""
    mbox = out / f"{label}.t.mbox.gz"
    cover, *patches = mails
    mbox.write_bytes(gzip.compress(mboxrd([cover] + patches[::-1])))
    res = out / f"mbox-{label}"

    def one():
        p = subprocess.run(["make", "-s", "-C", str(REPO), "check", f"PATCHES={mbox}",
                            f"KERNEL={tree}", f"BASE={base}", "CC=gcc", f"NAME={label}"],
                           env=dict(env, KEXPAND_RESULTS=str(res)), capture_output=True,
                           text=True)
        [d] = (res / "check").glob(f"{label}@*")
        pw = json.loads((d / "patchwork-check.json").read_text())
        eml = email.message_from_bytes((d / "report.eml").read_bytes(),
                                       policy=email.policy.default)
        # (a long header is folded: Python reads it back with the fold's space)
        threaded = (str(eml["In-Reply-To"] or "").strip() == cover["Message-ID"].strip()
                    and cover["Message-ID"].strip() in str(eml["References"] or "").split())
        return pw["state"], pw["description"], {
            "make_exit": p.returncode, "patchwork": pw, "eml_threaded": threaded,
            "eml_headers": {k: str(v) for k, v in eml.items()}, "dir": str(d)}
    timed(rows, "mbox", f"{label} t.mbox.gz", expected, one)


def fixes_mails(tree):
    """Torvalds' three commits as a thread: a cover letter and 1/3..3/3."""
    raw = git(tree, "format-patch", "--cover-letter", "--thread", "--stdout",
              "--subject-prefix=PATCH", "v4..fixes").replace(
        b"*** SUBJECT HERE ***", b"minmax: Linus Torvalds' three 6.11 fixes")
    parts = [b"From " + p for p in raw.split(b"\nFrom ")]
    parts[0] = parts[0][len(b"From "):]
    return [email.message_from_bytes(p.split(b"\n", 1)[1], policy=email.policy.default)
            for p in parts]


def main(out):
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, NO_MACROS="1", ICOUNT_CAP="0", CC="gcc",
               KEXPAND_B4_DIR=str(out / "b4"))
    if "KEXPAND_WORK" not in env:
        sys.exit("set KEXPAND_WORK= (the work dir every run shares)")
    rows = []
    tree = user_tree(out, env)
    t0 = time.monotonic()
    run_nipa(rows, tree, out, env, "v4", "base", V4_EXPECTED, "v4")
    run_nipa(rows, tree, out, env, "fixes", "v4", FIXES_EXPECTED, "fixes")
    run_b4(rows, tree, env, "v4", [m.as_bytes() for m in series_mails()[1:]],
           V4_EXPECTED, "v4")
    fixes = [git(tree, "format-patch", "--stdout", "-1", f"fixes~{i}") for i in (2, 1, 0)]
    run_b4(rows, tree, env, "fixes", fixes, FIXES_EXPECTED, "fixes")
    run_mbox(rows, out, env, tree, series_mails(cte="quoted-printable"), "base", "fail", "v4")
    run_mbox(rows, out, env, tree, fixes_mails(tree), "v4", "success", "fixes")
    summary = {"rows": rows, "seconds": round(time.monotonic() - t0, 1),
               "all_as_expected": all(r["ok"] for r in rows),
               "v4_cover_message_id": msgid(0)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    md = ["| system | what | state | expected | s | description |", "|---|---|---|---|---:|---|"]
    md += [f"| {r['system']} | {r['what']} | {r['state']} | {r['expected']} | "
           f"{r['seconds']} | {r['description']} |" for r in rows]
    (out / "summary.md").write_text("\n".join(md) + "\n")
    print(f"{sum(r['ok'] for r in rows)} of {len(rows)} as expected in "
          f"{summary['seconds']} s; {out / 'summary.md'}")
    return 0 if summary["all_as_expected"] else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
