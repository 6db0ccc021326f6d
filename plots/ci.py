"""What a make check says to the kernel's CI and review systems, drawn
from its check.json (pure functions; report.py writes the files):

- the outcome, one of patchwork's check states (success, warning, fail)
  and the one-line description NIPA and patchwork show;
- patchwork-check.json and the `pwclient check-create` line
  (patchwork's CheckCreate schema: state, context ^[-a-zA-Z0-9_]+$,
  description, target_url at most 200 characters);
- b4's per-patch check output: one `ERROR:`/`WARNING:` line per finding,
  or its JSON protocol ([{tool, status, summary, url, details}]);
- report.eml, a reply to the checked mail shaped like the kernel test
  robot's (ci/README.md)."""
import email.policy
import email.utils
import hashlib
import json
import re
import shlex
from datetime import datetime
from email.message import EmailMessage
from urllib.parse import quote

CONTEXT = "kexpand-expansion"   # patchwork context, the NIPA test's folder name
TOOL = "kexpand"                # b4's JSON "tool"
URL_MAX = 200                   # patchwork's target_url (a Django URLField)
STATES = ("pending", "success", "warning", "fail")
SENDER = "kexpand <kexpand@localhost>"   # REPORT_FROM='s default (kbuild.settings)


def _results(rec):
    return list((rec.get("results") or {}).items())


def warned(rec):
    """The warning class: no regression, but the whole build grew by more
    than half of TOTAL_THRESHOLD and by at least half its floor (16 KiB):
    [(compiler, whole_build)] of the compilers where it did."""
    t = rec["threshold"]
    half = (t.get("total_ratio") or 1.005) - 1
    floor = (t.get("total_min_growth_bytes") or 16384) / 2
    return [(cc, w) for cc, d in _results(rec) if (w := d.get("whole_build"))
            and w.get("verdict") != "regression" and (w.get("change") or 0) > half / 2
            and (w.get("growth_bytes") or 0) >= floor]


def outcome(rec):
    """success, warning or fail (patchwork's states; NIPA's 0, 250, 1)."""
    if rec.get("verdict") == "regression":
        return "fail"
    return "warning" if warned(rec) else "success"


def size(b):
    """4.2 MB, 115.7 kB, 912 B (decimal units, as du -h --si)."""
    for unit, f in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= f:
            return f"{b / f:.1f} {unit}" if unit != "GB" else f"{b / f:.2f} {unit}"
    return f"{b} B"


def pct(change, digits=2):
    return f"{change * 100:+.{digits}f}%"


def limit(ratio):
    return f"+{(ratio - 1) * 100:g}%"


def description(rec):
    """One line: `expansion: 0 files over +10%; whole build +0.01%
    (1,292,181,821 -> 1,292,313,002 B)`, a compiler named when there are
    several, and what made it a warning or a failure."""
    t, multi = rec["threshold"], len(rec.get("results") or {}) > 1
    files = sorted({r["file"] for cc, d in _results(rec) for r in d["regressions"]})
    parts = [f"expansion: {len(files)} file{'s' * (len(files) != 1)} over {limit(t['ratio'])}"]
    for cc, d in _results(rec):
        w = d.get("whole_build")
        if w:
            parts.append(f"whole build{f' ({cc})' * multi} {pct(w['change'])} "
                         f"({w['bytes_base']:,} -> {w['bytes_tip']:,} B)"
                         + (f" over {limit(t['total_ratio'])}"
                            if w.get("verdict") == "regression" else ""))
        if d.get("failures"):
            parts.append(f"{len(d['failures'])} file(s) fail at the tip{f' ({cc})' * multi}")
    if outcome(rec) == "warning":
        parts.append(f"warning: over half of {limit(t['total_ratio'])}")
    return "; ".join(parts)


def target_url(base, dirname):
    """The report's URL under REPORT_URL=, or the base URL itself when
    that would pass patchwork's 200 characters; None without a base."""
    if not base:
        return None
    url = f"{base.rstrip('/')}/{quote(dirname)}/report.txt"
    return url if len(url) <= URL_MAX else base[:URL_MAX]


def patchwork_check(rec, url=None):
    """patchwork-check.json: the body of POST /api/patches/{id}/checks/."""
    out = {"state": outcome(rec), "context": CONTEXT, "description": description(rec)}
    if url:
        out["target_url"] = url
    return out


def pwclient_line(check, patch_id="PATCH_ID"):
    """`pwclient check-create ...` for patchwork-check.json's fields."""
    args = ["pwclient", "check-create", "-c", check["context"], "-s", check["state"]]
    if check.get("target_url"):
        args += ["-u", check["target_url"]]
    return shlex.join(args + ["-d", check["description"]]) + f" {patch_id}"


def line_of(at):
    m = re.search(r":(\d+)$", at or "")
    return f", line {m.group(1)}" if m else ""


def findings(rec):
    """b4's lines: an `ERROR:` per regressed file, whole build and tip
    failure, a `WARNING:` for the warning class; [] when nothing grew."""
    t, multi = rec["threshold"], len(rec.get("results") or {}) > 1
    out = []
    for cc, d in _results(rec):
        tag = f" ({cc})" * multi
        for r in d["regressions"]:
            out.append(f"ERROR: {r['file']}{tag}: preprocessed size {size(r['bytes_base'])} -> "
                       f"{size(r['bytes_tip'])} (x{r['bytes_tip'] / max(r['bytes_base'], 1):.2f})"
                       + line_of(r.get("hot_tip")))
        w = d.get("whole_build") or {}
        if w.get("verdict") == "regression":
            out.append(f"ERROR: whole build{tag}: preprocessed size {size(w['bytes_base'])} -> "
                       f"{size(w['bytes_tip'])} ({pct(w['change'])}, over "
                       f"{limit(t['total_ratio'])}) in {w['files_grown']} "
                       f"file{'s' * (w['files_grown'] != 1)}")
        for r in d.get("failures") or ():
            out.append(f"ERROR: {r['file']}{tag}: preprocesses at the base, fails at the tip"
                       f" ({r.get('reason_tip')})")
    for cc, w in warned(rec):
        out.append(f"WARNING: whole build{f' ({cc})' * multi}: preprocessed size "
                   f"{pct(w['change'])} ({w['bytes_base']:,} -> {w['bytes_tip']:,} B), "
                   f"over half of {limit(t['total_ratio'])}")
    return out


def b4_json(state, summary, url="", details=""):
    """b4's JSON check protocol (b4 0.15, docs/maintainer/review.rst)."""
    status = {"success": "pass", "warning": "warn"}.get(state, "fail")
    return [{"tool": TOOL, "status": status, "summary": summary, "url": url or "",
             "details": details}]


# --- the reply mail -------------------------------------------------------------

def _blocks(txt):
    """report.txt as (subject, first paragraph, header block, the rest,
    reproduce block): the robot puts them in another order."""
    lines = txt.rstrip("\n").split("\n")
    i = lines.index("")
    subject = " ".join(l.strip() for l in lines[:i]).removeprefix("Subject: ")
    body = lines[i + 1:]
    if body[:2] == ["Hello,", ""]:
        body = body[2:]
    j = body.index("") if "" in body else len(body)
    para, body = body[:j], body[j + 1:]
    k = body.index("") if "" in body else len(body)
    head, body = body[:k], body[k + 1:]
    r = body.index("reproduce:") if "reproduce:" in body else len(body)
    return subject, para, head, body[:r], body[r:]


def message_id(rec, sender):
    """Its own Message-ID: the same check gives the same one, so a redraw
    (make plots) does not make a new mail."""
    domain = email.utils.parseaddr(sender)[1].rpartition("@")[2] or "localhost"
    h = hashlib.sha256(f"{rec['name']}\0{rec['tip']['commit']}\0{rec.get('date')}"
                       .encode()).hexdigest()[:16]
    return f"<kexpand-{h}@{domain}>"


def reply_mail(rec, txt, sender, reported_by=None, url=None):
    """report.eml: RFC 5322, UTF-8, ready for `git send-email` or
    `sendmail -t`. Threaded to the checked mail (the cover letter, else
    the patch) when it had a Message-ID; To: its author, Cc: its To and Cc."""
    subject, para, head, rest, repro = _blocks(txt)
    mail = (rec.get("series") or {}).get("mail")
    msgid = mail and mail.get("message_id")
    own = message_id(rec, sender)
    m = EmailMessage(policy=email.policy.default)
    m["From"] = sender
    greet = "Hello,"
    if mail:
        # by address, each once, each a well-formed "Name <addr>"
        (name, author), *others = [email.utils.parseaddr(a) for a in
                                   [mail["from"]] + list(mail["to"]) + list(mail["cc"])]
        if author:
            m["To"] = email.utils.formataddr((name if name != author else "", author))
        cc = {}
        for n, a in others:
            if a and a != author:
                cc.setdefault(a, n)
        if cc:
            m["Cc"] = ", ".join(email.utils.formataddr((n, a)) for a, n in cc.items())
        m["Subject"] = "Re: " + re.sub(r"^(re:\s*)+", "", mail["subject"], flags=re.I)
        greet = f"Hi {name}," if name and name != author else greet
    else:
        m["Subject"] = subject
    m["Date"] = email.utils.format_datetime(datetime.fromisoformat(rec["date"])) \
        if rec.get("date") else email.utils.formatdate()
    m["Message-ID"] = own
    if msgid:
        m["In-Reply-To"] = m["References"] = f"<{msgid}>"
    out = [greet, ""] + para + [""]
    if not mail:
        out += ["(The series was read from commits, not from a mail: no author to",
                "write to and no thread to reply in; add To: before sending.)", ""]
    elif not msgid:
        out += ["(The checked mail had no Message-ID, as `git format-patch`",
                "writes without --thread: this reply cannot be threaded to it.)", ""]
    out += head + [""]
    if msgid:
        out += [f"patch link: https://lore.kernel.org/r/{msgid}", ""]
    out += repro + ["", "If you fix the issue in a separate patch/commit (i.e. not just a "
                    "new version of", "the same patch/commit), kindly add following tags",
                    f"| Reported-by: {reported_by or sender}",
                    f"| Closes: {url or 'https://lore.kernel.org/r/' + own.strip('<>')}",
                    ""]
    out += rest + ["-- ", "kexpand: preprocessor expansion of Linux kernel files", ""]
    m.set_content("\n".join(out), charset="utf-8", cte="8bit")
    return m.as_bytes()


def files(rec, txt, dirname, sender, reported_by=None, base_url=None):
    """{name: bytes} of the CI files beside report.txt (report.py writes them)."""
    url = target_url(base_url, dirname)
    pw = patchwork_check(rec, url)
    return {"patchwork-check.json": (json.dumps(pw, indent=1, ensure_ascii=False)
                                     + "\n").encode(),
            "pwclient-check.txt": (
                "# post it: PATCH_ID is the patch's id in patchwork (pwclient list, or\n"
                "# GET /api/patches/?msgid=...); a series: once per patch\n"
                + pwclient_line(pw) + "\n").encode(),
            "report.eml": reply_mail(rec, txt, sender, reported_by, url)}
