"""Posted patch series (make check PATCHES=...): read them as they are
posted, apply them with `git am` in kexpand's own tree.

read_series reads mbox files as `git format-patch --stdout` (`From <sha>
Mon Sep 17 00:00:00 2001`) and `b4 am` (`From git@z Thu Jan  1 00:00:00
1970`) write them, unquoted, and as lore and `b4 mbox` write a thread
(`From mboxrd@z ...`, mboxrd: a '>' added to lines matching ^>*From );
directories of patch files (format-patch -o), single mails, `git show` /
`git log -p` dumps; gzip, xz and zstd files of any of them (kbuild.mailfile
checks and reads the files). A thread's mails that are not numbered parts
of the series (replies, forwards, a robot's fix sent in reply to a patch)
and a mail that comes twice (same Message-ID) are skipped and listed.
apply_series makes commits whose ids depend only on the base and the
patches: author and date from the mail, kexpand the committer at the
author date, no global or system git config."""
import email.policy
import email.utils
import hashlib
import os
import re
from dataclasses import dataclass, field
from email.parser import BytesParser
from pathlib import Path

from . import mtimes
from .mailfile import COMMIT_LINE, FROM_LINE, check_path, list_dir, read_input, \
    split_dump, split_mbox
from .series import COMMITTER, checkout, git, git_env, hunk_at
from .util import KexpandError, atomic_write, one_line

DIFF = re.compile(r"^(diff --git |--- \S.*\n\+\+\+ |GIT binary patch)", re.M)
# Re: (AW:, SV:, 回复:, 答复: of other mailers), also after a tag a mail
# gateway puts first ("[EXTERNAL] Re:"), never after a [PATCH ...] group;
# a forward (Fwd:, FW:, WG:, TR:, 转发:) or a rarer reply word only before a
# [...] group: "fw: loader" alone may be a commit subject
REPLY = re.compile(r"(?:\[(?![^\]]*\b(?:PATCH|RFC)\b)[^\]]*\]\s*)*(?:"
                   r"(?:re|aw|sv|回复|答复|回覆)\s*[:：]|"
                   r"(?:fwd?|wg|tr|antw|odp|vs|转发|轉寄)\s*[:：]\s*\[)", re.I)
BASE_COMMIT = re.compile(r"^base-commit: ([0-9a-f]{7,40})\s*$", re.M)
KEY_VERSION = "kexpand-series-v1"
# the mbox git am reads: mboxrd, so no line of a mail can split it
AM_FROM = b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"


@dataclass(frozen=True)
class Prefix:
    """What the [PATCH ...] groups of a subject say."""
    text: str = ""              # "[PATCH next v4 2/5]", as posted
    version: int = 1            # v4 -> 4; none given: 1
    number: int | None = None   # 2 of 2/5; 0 for a cover letter
    total: int | None = None    # 5 of 2/5
    tags: tuple = ()            # the other words: ("next",), ("RFC",)
    versioned: bool = False     # a version was given (v1 too)


@dataclass
class Patch:
    source: Path                # the file it came from
    index: int | None           # which mail of that mbox (0-based); None: not an mbox
    subject: str                # without the [PATCH ...] prefix
    prefix: Prefix
    author: str                 # "Name <addr>"
    date: str                   # the author date, ISO 8601
    raw: bytes                  # the mail as git am gets it
    text: str = ""              # the decoded message and diff
    keep_cr: bool = False       # its lines end in CR LF in the files it patches
    kind: str = "patch"         # patch, cover or reply
    message_id: str = ""        # its Message-ID, <> stripped
    in_reply_to: str = ""       # the Message-ID it answers (or its last Reference)
    to: tuple = ()              # its To: and Cc: addresses (a reply's recipients)
    cc: tuple = ()

    @property
    def where(self):
        return _where(self.source, self.index)


@dataclass
class Series:
    patches: list               # [Patch] in the order they apply
    cover: Patch | None = None  # the cover letter, never applied
    version: int = 1
    sources: list = field(default_factory=list)
    base_commit: str | None = None  # the base-commit: trailer (format-patch --base)
    skipped: list = field(default_factory=list)    # [(Patch, why)] not applied

    @property
    def name(self):
        """The cover letter's subject, else the first patch's."""
        return (self.cover or self.patches[0]).subject

    @property
    def slug(self):
        """A name for results directories: minmax-relax-type-checks-in-min-and-max-v4."""
        s = re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")
        s = (s[:61].rsplit("-", 1)[0] if len(s) > 60 else s) or "series"
        return f"{s}-v{self.version}" if self.version > 1 else s


def series_key(series):
    """A hash of what the patches say (subjects, authors, messages and
    diffs, in order), not where they came from nor when they were sent."""
    h = hashlib.sha256(f"{KEY_VERSION}\n".encode())
    for p in series.patches:
        for part in (p.subject, p.author, p.text.rstrip()):
            h.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()[:16]


# --- reading -------------------------------------------------------------------

def parse_prefix(subject):
    """(Prefix, subject without it): every leading [...] group goes, as
    git mailinfo drops them from the commit's subject."""
    subject = " ".join(subject.split())
    m = re.match(r"((?:\[[^\]]*\]\s*)+)(.*)", subject)
    if not m:
        return Prefix(), subject
    version, number, total, tags, versioned = 1, None, None, [], False
    for word in re.findall(r"[^\s\[\],]+", m.group(1)):
        if v := re.fullmatch(r"(?:PATCH[-_]?)?[vV](\d+)", word, re.I):     # v4, PATCHv4
            version, versioned = int(v.group(1)), True
        elif re.fullmatch(r"\d+/\d+", word):
            number, total = map(int, word.split("/"))
        elif word.upper() != "PATCH":
            tags.append(word)
    return Prefix(m.group(1).strip(), version, number, total, tuple(tags), versioned), \
        m.group(2)


def read_mail(raw, source, index, dump=False):
    """A Patch (kind patch, cover or reply) from one mail's bytes; None for
    a mail that is none of them (no subject)."""
    lines = raw.split(b"\n")
    if all(l.endswith(b"\r") for l in lines[:-1] if l) and b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n")   # CR LF from the mail's transport
    try:
        msg = BytesParser(policy=email.policy.default).parsebytes(raw)
        subject, author, date = (str(msg.get(h, "")) for h in ("subject", "from", "date"))
        text = "".join(_decode(p) for p in msg.walk() if not p.is_multipart())
        ids = [str(msg.get(h, "")) for h in ("message-id", "in-reply-to", "references")]
        to, cc = (tuple(one_line(f"{n} <{a}>" if n else a) for n, a in
                        email.utils.getaddresses([str(v) for v in msg.get_all(h, [])]) if a)
                  for h in ("to", "cc"))
    except (ValueError, LookupError, TypeError, IndexError) as e:
        raise KexpandError(f"{_where(source, index)}: cannot read this mail: {e}")
    lines = [l for l in text.split("\n") if l]
    if lines and all(l.endswith("\r") for l in lines):
        text = text.replace("\r\n", "\n")   # the canonical CR LF of base64 text
    # an in-body From:/Date:/Subject: (a patch sent on another's behalf)
    m = re.match(r"((?:(?:From|Date|Subject): .*\n)+)\n", text.lstrip("\n"))
    if m:
        inbody = dict(re.findall(r"(From|Date|Subject): (.*)", m.group(1)))
        subject = inbody.get("Subject", subject)
        author, date = inbody.get("From", author), inbody.get("Date", date)
    if not subject.strip():
        return None
    prefix, subject = parse_prefix(subject)
    name, addr = email.utils.parseaddr(author)
    # a 0/N is the cover letter even with a diff (an interdiff, a range-diff)
    kind = ("reply" if not dump and REPLY.match(str(msg.get("subject", ""))) else
            "cover" if prefix.number == 0 and not dump else
            "patch" if DIFF.search(text) else
            "cover" if not dump and "PATCH" in prefix.text.upper() else None)
    if kind is None:
        return None
    try:
        iso = email.utils.parsedate_to_datetime(date).isoformat() if date else ""
    except (TypeError, ValueError, IndexError):
        iso = ""
    if kind == "patch" and not iso:
        raise KexpandError(f"{_where(source, index)}: patch \"{subject}\" has "
                           f"{'an unreadable' if date else 'no'} Date: header; git am "
                           "would date its commit now, and its id would change from run to run")
    msgids = [re.findall(r"<([^<>\s]+)>", v) for v in ids]     # only <id>: one line
    return Patch(Path(source), index, subject, prefix, one_line(f"{name or addr} <{addr}>"),
                 iso, raw, text, b"\r\n" in raw or "\r\n" in text, kind,
                 next(iter(msgids[0]), ""), next(iter(msgids[1] or msgids[2][-1:]), ""), to, cc)


def _decode(part):
    """A part's text: text/* in its charset; a part of another type (an
    application/octet-stream attachment) only if it holds a diff, as git
    am reads it then."""
    data, charset = part.get_payload(decode=True) or b"", part.get_content_charset()
    if part.get_content_maintype() != "text":
        text = data.decode("utf-8", "replace")
        return text if DIFF.search(text) else ""
    try:
        return data.decode(charset or "utf-8", "replace")
    except LookupError:                 # a charset Python does not know
        return data.decode("utf-8", "replace")


def _where(source, index):
    return f"{source}" + ("" if index is None else f" (mail {index + 1})")


def read_file(path):
    """Every patch, cover letter and reply of one file (gzip, xz or zstd
    too)."""
    data = read_input(path).lstrip(b"\r\n").removeprefix(b"\xef\xbb\xbf")
    text = data.decode("utf-8", "surrogateescape").replace("\r\n", "\n")
    if FROM_LINE.match(data):
        mails = split_mbox(data)
        mails = [(m, i if len(mails) > 1 else None, False) for i, m in enumerate(mails)]
    elif COMMIT_LINE.match(text):
        try:
            mails = [(m, i, True) for i, m in split_dump(text)]
        except KexpandError as e:
            raise KexpandError(f"{path}: {e}")
    else:
        mails = [(data, None, False)]
    out = [p for m, i, dump in mails if (p := read_mail(m, path, i, dump))]
    if not any(p.kind in ("patch", "cover") for p in out):
        what = (f"it holds {len(out)} repl{'y' if len(out) == 1 else 'ies'}, no mail "
                "with a diff nor a cover letter" if out else "a bare diff: no From:, Date: "
                "and Subject: for the commit" if DIFF.search(text) else "it is not a mail "
                "with a diff, an mbox of them or a `git show` dump")
        raise KexpandError(f"no patch found in {path}: {what}")
    return out


def read_series(paths):
    """The Series in `paths`: mbox files, directories of patch files (their
    mailfile.SUFFIXES files), single mails, commit dumps, compressed or
    not. Replies, mails that come twice and, beside numbered patches,
    unnumbered ones sent in reply (a robot's fix) are skipped and listed
    in Series.skipped; a cover letter names the series, its (or else a
    patch's) base-commit: is Series.base_commit. Numbered patches
    ([PATCH n/m]) take their places in the order of their numbers, others
    keep the order they were given in (a directory's by file name)."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not paths:
        raise KexpandError("no patches given: PATCHES=<mbox file | directory "
                           "of patch files | patch files ...>")
    mails = []
    for p in map(Path, paths):
        for f in (list_dir(p) if check_path(p) == "dir" else [p]):
            mails += read_file(f)
    mails, skipped = unique(mails)
    numbered = any(m.prefix.number for m in mails if m.kind == "patch")
    by_id = {m.message_id: m for m in mails if m.message_id}
    for m in mails:
        if m.kind == "reply":
            skipped.append((m, "a reply or a forward"))
        elif numbered and not m.prefix.number and m.kind == "patch" and \
                m.in_reply_to in by_id:
            skipped.append((m, "not a numbered part of the series: a patch sent in "
                               f"reply to {by_id[m.in_reply_to].where}"))
    dropped = {id(m) for m, _ in skipped}
    patches = [m for m in mails if m.kind == "patch" and id(m) not in dropped]
    covers = [m for m in mails if m.kind == "cover"]
    if not patches:
        raise KexpandError(f"no patch found in {', '.join(map(str, paths))}: "
                           "only cover letters and replies, no mail with a diff")
    version = check_versions(patches + covers)
    order_by_number(patches)
    cover = next((c for c in covers if c.prefix.number == 0), covers[0] if covers else None)
    base = next((b.group(1) for m in [cover] * bool(cover) + patches
                 if (b := BASE_COMMIT.search(m.text))), None)
    return Series(patches, cover, version, [Path(p) for p in paths], base, skipped)


def unique(mails):
    """The mails without those that come again (the same Message-ID: a
    mail cross-posted to two lists, a thread given twice), and
    [(mail, why)] of those left out."""
    first, out, skipped = {}, [], []
    for m in mails:
        if m.message_id and m.message_id in first:
            skipped.append((m, f"the same mail (Message-ID <{m.message_id}>) as "
                               f"{first[m.message_id].where}"))
        else:
            first.setdefault(m.message_id or id(m), m)
            out.append(m)
    return out, skipped


def check_versions(mails):
    """The series' one version; a patch neither numbered nor versioned (a
    lone [PATCH], a commit dump) goes with any."""
    by = {}
    for m in mails:
        if m.prefix.number is not None or m.prefix.versioned:
            by.setdefault(m.prefix.version, []).append(m)
    if len(by) > 1:
        which = "; ".join(f"v{v}: {len(ms)} mail(s), e.g. {ms[0].prefix.text} in {ms[0].where}"
                          for v, ms in sorted(by.items()))
        raise KexpandError(f"the patches mix versions {' and '.join(f'v{v}' for v in sorted(by))}"
                           f" of the series ({which}); give one version (b4 am -vN writes one)")
    return next(iter(by), 1)


def order_by_number(patches):
    """Check the [PATCH n/m] numbers, and put the numbered patches in the
    places they hold in the input in the order of their numbers."""
    numbered = [p for p in patches if p.prefix.number]
    if not numbered:
        return
    totals = {p.prefix.total: p for p in reversed(numbered)}
    if len(totals) > 1:
        raise KexpandError("the patch numbers disagree on the series' length: " + ", ".join(
            f"{p.prefix.text} in {p.where}" for _, p in sorted(totals.items())))
    total, seen = next(iter(totals)), {}
    for p in numbered:
        n = p.prefix.number
        if n in seen:
            raise KexpandError(f"patch {n}/{total} comes twice: \"{seen[n].subject}\" in "
                               f"{seen[n].where} and \"{p.subject}\" in {p.where}")
        if n > total:
            raise KexpandError(f"{p.where}: patch {n}/{total} is past the series' end")
        seen[n] = p
    missing = [n for n in range(1, total + 1) if n not in seen]
    if missing:
        raise KexpandError(f"patch{'es' if len(missing) > 1 else ''} "
                           f"{', '.join(f'{n}/{total}' for n in missing)} missing from "
                           f"the series in {', '.join(sorted({str(p.source) for p in numbered}))}"
                           f" (found {', '.join(str(n) for n in sorted(seen))})")
    slots = [i for i, p in enumerate(patches) if p.prefix.number]
    for i, p in zip(slots, sorted(numbered, key=lambda p: p.prefix.number)):
        patches[i] = p


# --- applying --------------------------------------------------------------------

def am_env(patch=None, env=None):
    """git's environment: no global or system config (identity, am.threeWay,
    core.autocrlf, hooks, signing), messages in English; for a patch,
    kexpand the committer and the author date the commit's."""
    ids = git_env(patch.author, patch.date) if patch else \
        {"GIT_COMMITTER_NAME": COMMITTER[0], "GIT_COMMITTER_EMAIL": COMMITTER[1]}
    return dict({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                 "LC_ALL": "C", "LANGUAGE": ""}, **ids, **(env or {}))


def apply_series(tree, base, series, env=None):
    """In kexpand's own git tree `tree`, check out `base` (detached) and
    apply the series' patches with `git am`, one commit each. Returns
    [(patch, commit)]. A patch that does not apply is a "build" error
    naming it, its file and hunk; the tree is then left clean at base."""
    tree, plain, done = Path(tree), am_env(env=env), []
    gdir = Path(git(tree, "rev-parse", "--absolute-git-dir", env=plain).stdout.strip())
    if (gdir / "rebase-apply").exists():      # a killed run's git am
        git(tree, "am", "--abort", check=False, env=plain)
    r = git(tree, "rev-parse", "-q", "--verify", f"{base}^{{commit}}", check=False, env=plain)
    if r.returncode != 0:
        raise KexpandError(f"BASE={base}: no such commit in {tree}")
    base_commit = r.stdout.strip()
    checkout(tree, base_commit)     # refuses a tree someone changed; keeps file times
    git(tree, "checkout", "-q", "--detach", base_commit, env=plain)
    mbox = gdir / "kexpand-am.mbox"     # in the tree's git dir, never outside the tree
    try:    # the files git am and git reset rewrite keep their times as a checkout's
        with mtimes.kept_across(tree):
            for i, p in enumerate(series.patches):
                atomic_write(mbox, AM_FROM + re.sub(rb"(?m)^(>*From )", rb">\1", p.raw))
                cr = ["--keep-cr", "--quoted-cr=nowarn"] if p.keep_cr else [
                    "--no-keep-cr", "--quoted-cr=strip"]
                r = git(tree, "-c", "core.hooksPath=" + os.devnull, "-c", "commit.gpgSign=false",
                        "am", "--patch-format=mboxrd", "--no-3way", "--no-scissors", "--no-message-id",
                        *cr, str(mbox), check=False, env=am_env(p, env), what="git am")
                if r.returncode != 0:
                    git(tree, "am", "--abort", check=False, env=plain)
                    git(tree, "reset", "-q", "--hard", base_commit, env=plain)
                    raise KexpandError(failure(p, i, len(series.patches), base, r.stdout)
                                       + declared(tree, series, base_commit, plain), "build")
                done.append((p, git(tree, "rev-parse", "HEAD", env=plain).stdout.strip()))
    finally:
        mbox.unlink(missing_ok=True)
    return done


def declared(tree, series, base_commit, env):
    """What to add to a failure when the series declares another base."""
    d = series.base_commit
    if not d or base_commit.startswith(d):
        return ""
    has = git(tree, "rev-parse", "-q", "--verify", f"{d}^{{commit}}", check=False,
              env=env).returncode == 0
    return (f"\nThe series declares base-commit: {d}" + (
        f"; give BASE={d}" if has else
        f", which {tree} does not have; give KERNEL= a tree that has it (git fetch "
        f"it there), and BASE={d} or no BASE="))


def failure(p, i, n, base, out):
    """What to say when git am could not apply patch p (the i-th of n)."""
    m = re.search(r"patch failed: (\S+):(\d+)", out)
    if m:
        h = hunk_at(p.text, m.group(1), int(m.group(2)))
        where = f": {m.group(1)}" + (f" hunk #{h}" if h else f" line {m.group(2)}")
    else:
        m = re.search(r"error: (\S+?):? (does not exist in index|already exists"
                      r"|No such file or directory)", out)
        where = f": {m.group(1)} ({m.group(2)})" if m else ""
    errors = [l for l in out.splitlines() if l.startswith(("error:", "fatal:"))]
    num = f"{p.prefix.number}/{p.prefix.total}" if p.prefix.number else f"{i + 1} of {n}"
    return (f'patch {num} "{p.subject}" ({p.where}) does not apply to {base}{where}\n'
            + "\n".join(errors or out.strip().splitlines()[-5:])
            + f"\nThe series stops there; the tree was reset to {base}.")
