#!/usr/bin/python3
"""kexpand in the kernel's CI (ci/README.md): `make check` run for NIPA
(netdev's patchwork CI: ci/nipa/kexpand-expansion/kexpand.sh runs
`kexpand_ci.py nipa`) and for b4's per-patch check hooks
(bin/kexpand-b4-check runs `b4`). Both only read the tree they run in:
kexpand clones it into its work directory (KEXPAND_WORK, default
~/.cache/kexpand: keep it the same for every run, and a series' base is
built once). kexpand's own progress goes to a log file, never to the
caller's terminal.

  kexpand_ci.py nipa            cwd: the kernel tree; env: DESC_FD, RESULTS_DIR,
                                BRANCH_BASE, FIRST_IN_SERIES (absent: a series test)
  kexpand_ci.py b4 [--json]     stdin: one patch mail; cwd: the git tree"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "kernel-build")]
from plots import ci  # noqa: E402

MEANING = {1: "a regression", 2: "user error", 3: "a build failure, or a patch that "
           "does not apply", 4: "boot failure", 5: "infrastructure", 70: "a bug in kexpand",
           130: "interrupted"}
COPIED = ("report.txt", "report.md", "check.json", "check.csv", "patchwork-check.json",
          "pwclient-check.txt", "report.eml")
NIPA_RC = {"success": 0, "warning": 250, "fail": 1}


class Failed(Exception):
    """kexpand did not give a verdict: (code, why)."""


def git(cwd, *args, data=None):
    p = subprocess.run(["git", "-C", str(cwd), *args], input=data, capture_output=True)
    if p.returncode:
        raise Failed(2, f"git {' '.join(args)} in {cwd} failed: "
                     f"{p.stderr.decode(errors='replace').strip()}")
    return p.stdout.decode(errors="replace").strip()


def make_check(variables, results, log):
    """`make check VAR=value ...` with KEXPAND_RESULTS=results (a fresh
    directory), everything it prints into log. (code, check dir or None);
    the code is kexpand's, read from make's `Error N` (README, "Exit codes")."""
    shutil.rmtree(results, ignore_errors=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env["KEXPAND_RESULTS"] = str(results)
    cmd = ["make", "-C", str(REPO), "--no-print-directory", "check",
           *(f"{k}={v}" for k, v in variables.items())]
    with open(log, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                           env=env)
    text = log.read_text(errors="replace")
    code = 0
    if p.returncode:
        found = re.findall(r"\] Error (\d+)$", text, re.M)
        code = int(found[-1]) if found else 5
    dirs = sorted(results.glob("check/*/check.json"))
    if code in (0, 1) and len(dirs) == 1:
        return code, dirs[0].parent
    why = next((l.removeprefix("kexpand: error: ") for l in text.splitlines()
                if l.startswith("kexpand: error:")), None)
    if code in (0, 1):
        code, why = 5, why or f"no check.json under {results}/check"
    raise Failed(code, why or f"make exited {p.returncode}; see {log}")


def failure_line(code, why):
    return f"kexpand failed: exit {code} ({MEANING.get(code, 'unknown')}): {why}"


# --- NIPA ------------------------------------------------------------------------

def nipa():
    """A NIPA test: exit 0 success, 250 warning (ci.warned), 1 regression;
    kexpand's own failure is its exit code (2, 3, 5, 70: never 0 nor 250)."""
    for var in ("DESC_FD", "RESULTS_DIR"):
        if not os.environ.get(var):
            print(f"kexpand-expansion: {var} is not set; NIPA sets DESC_FD, RESULTS_DIR "
                  "and BRANCH_BASE (ci/README.md)", file=sys.stderr)
            return 2
    out = Path(os.environ["RESULTS_DIR"])
    out.mkdir(parents=True, exist_ok=True)
    series = os.environ.get("KEXPAND_NIPA_MODE",
                            "patch" if "FIRST_IN_SERIES" in os.environ else "series") == "series"
    try:
        top = git(".", "rev-parse", "--show-toplevel")
        head = git(top, "rev-parse", "HEAD")
        if series:
            if not os.environ.get("BRANCH_BASE"):
                raise Failed(2, "a series test needs BRANCH_BASE (the branch the series is on)")
            base = git(top, "merge-base", os.environ["BRANCH_BASE"], head)
        else:
            base = git(top, "rev-parse", "HEAD~")
        code, d = make_check({"KERNEL": top, "A": base, "B": head,
                              "NAME": f"nipa-{'series' if series else 'patch'}-{head[:12]}"},
                             out / "kexpand-results", out / "kexpand.log")
        rec = json.loads((d / "check.json").read_text())
        for name in COPIED:
            if (d / name).exists():
                shutil.copy(d / name, out / name)
        state, desc = ci.outcome(rec), ci.description(rec)
        if code == 1:
            state = "fail"
        sys.stdout.write((d / "report.txt").read_text())
        rc = NIPA_RC[state]
    except Failed as e:
        code, why = e.args
        desc, rc = failure_line(code, why), code if code not in (0, 250) else 5
        check = {"state": "fail", "context": ci.CONTEXT, "description": desc}
        (out / "patchwork-check.json").write_text(json.dumps(check, indent=1) + "\n")
        print(desc)
    os.write(int(os.environ["DESC_FD"]), (desc.replace("\n", " ") + "\n").encode())
    return rc


# --- b4 --------------------------------------------------------------------------

def unnumbered(raw):
    """The mail with `n/m` taken out of its Subject's [PATCH ...] group:
    b4 hands over one patch of a series, which kexpand would refuse as a
    series with the others missing."""
    head, sep, body = raw.partition(b"\n\n")
    head = re.sub(rb"(?im)^(Subject:[^\n]*?\[[^\]\n]*?)\s*\b\d+/\d+\]", rb"\1]", head, count=1)
    return head + sep + body


def b4_base(top, patch, depth):
    """(base, mode): the commit before the one whose `git patch-id
    --stable` equals the patch's among the last `depth` commits (prep: the
    series is applied), else HEAD (am)."""
    pid = git(top, "patch-id", "--stable", data=patch).split()
    if not pid:
        return None, None, None
    log = subprocess.run(["git", "-C", top, "log", "-p", "--no-merges", "--format=commit %H",
                          f"-n{depth}", "HEAD"], capture_output=True).stdout
    for line in git(top, "patch-id", "--stable", data=log).splitlines():
        p, commit = line.split()
        if p == pid[0]:
            return git(top, "rev-parse", f"{commit}~"), "prep", pid[0]
    return git(top, "rev-parse", "HEAD"), "am", pid[0]


def b4(argv):
    """b4's per-patch check command: nothing printed when nothing grew;
    an `ERROR:`/`WARNING:` line per finding; with --json b4 0.15's protocol."""
    as_json = "--json" in argv
    raw = sys.stdin.buffer.read()
    home = Path(os.environ.get("KEXPAND_B4_DIR") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kexpand-b4")
    state, lines, summary, url, details = "success", [], "", "", ""
    try:
        top = git(".", "rev-parse", "--show-toplevel")
        depth = int(os.environ.get("KEXPAND_B4_DEPTH") or 200)
        base, mode, pid = b4_base(top, raw, depth)
        if base is None:    # no diff: a cover letter, nothing to build
            summary = "no diff in this mail: nothing to check"
        else:
            here = home / pid[:16]
            here.mkdir(parents=True, exist_ok=True)
            (here / "patch.eml").write_bytes(unnumbered(raw))
            try:
                code, d = make_check({"PATCHES": here / "patch.eml", "KERNEL": top,
                                      "BASE": base, "NAME": f"b4-{pid[:12]}"},
                                     here / "results", here / "kexpand.log")
            except Failed as e:
                if e.args[0] == 3 and mode == "am":
                    raise Failed(3, f"does not apply on HEAD alone ({e.args[1]}); b4 am "
                                 "checks each patch without the ones before it: apply the "
                                 "series and check it there (b4 prep --check)") from None
                raise
            rec = json.loads((d / "check.json").read_text())
            state, lines, summary = ci.outcome(rec), ci.findings(rec), ci.description(rec)
            pw = json.loads((d / "patchwork-check.json").read_text())
            url = pw.get("target_url") or (d / "report.txt").as_uri()
            details = (d / "report.txt").read_text()
            state = "fail" if code == 1 else state
    except Failed as e:
        code, why = e.args
        state, summary = ("warning" if code == 3 else "fail"), failure_line(code, why)
        lines = [f"{'WARNING' if code == 3 else 'ERROR'}: {summary}"]
        rc = code
    else:
        rc = 1 if state == "fail" else 0
    if as_json:     # [] : nothing to report (a mail without a diff)
        print(json.dumps(ci.b4_json(state, summary, url, details) if url or lines else []))
    else:
        print("\n".join(lines), end="\n" if lines else "")
    return rc


def main(argv):
    if argv[:1] == ["nipa"]:
        return nipa()
    if argv[:1] == ["b4"]:
        return b4(argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
