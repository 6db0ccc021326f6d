"""Posted patch series (make check PATCHES=...): read them as they are
posted, apply them with `git am` in kexpand's own tree.

read_series reads mbox files as `git format-patch --stdout` (`From <sha>
Mon Sep 17 00:00:00 2001`) and `b4 am` (`From git@z Thu Jan  1 00:00:00
1970`) write them, unquoted, and as lore and `b4 mbox` write a thread
(`From mboxrd@z ...`, mboxrd: a '>' added to lines matching ^>*From );
directories of patch files (format-patch -o), single mails, `git show` /
`git log -p` dumps. Like git mailsplit, only a `From ` line with a time
and a year opens a mail. apply_series makes commits whose ids depend only
on the base and the patches: author and date from the mail, kexpand the
committer at the author date, no global or system git config."""
import email.policy
import email.utils
import hashlib
import io
import os
import re
import textwrap
from dataclasses import dataclass, field
from datetime import datetime
from email.parser import BytesParser
from pathlib import Path

from .series import COMMITTER, checkout, git, git_env, hunk_at, parse_patch
from .util import KexpandError, atomic_write

# what a directory holds: format-patch's *.patch, b4's *.mbx and *.cover
SUFFIXES = (".patch", ".diff", ".mbox", ".mbx", ".eml", ".cover")
FROM_LINE = re.compile(rb"From \S+ .*\d:\d\d:\d\d\b.*\b\d{4}\b")
COMMIT_LINE = re.compile(r"commit [0-9a-f]{40}\b", re.M)
DIFF = re.compile(r"^(diff --git |--- \S.*\n\+\+\+ |GIT binary patch)", re.M)
REPLY = re.compile(r"(re|aw|sv)\s*:", re.I)       # Re: (and AW:, SV: of some mailers)
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

    @property
    def where(self):
        return _where(self.source, self.index)


@dataclass
class Series:
    patches: list               # [Patch] in the order they apply
    cover: Patch | None = None  # the cover letter, never applied
    version: int = 1
    sources: list = field(default_factory=list)

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
    version, number, total, tags = 1, None, None, []
    for word in re.findall(r"[^\s\[\],]+", m.group(1)):
        if re.fullmatch(r"[vV]\d+", word):
            version = int(word[1:])
        elif re.fullmatch(r"\d+/\d+", word):
            number, total = map(int, word.split("/"))
        elif word.upper() != "PATCH":
            tags.append(word)
    return Prefix(m.group(1).strip(), version, number, total, tuple(tags)), m.group(2)


def split_mbox(data):
    """The mails of an mbox, without their `From ` lines; mboxrd quoting
    undone unless a mail shows that the mbox does not quote (a bare
    `From ` line in a mail: git format-patch and b4 am write them)."""
    mails, cur = [], None
    for line in io.BytesIO(data):
        if FROM_LINE.match(line):
            cur = []
            mails.append(cur)
        elif cur is not None:
            cur.append(line)
    quoted = data.startswith(b"From mboxrd@") or not any(
        line.startswith(b"From ") for m in mails for line in m)
    if quoted:
        mails = [[re.sub(rb"^>(>*From )", rb"\1", l) for l in m] for m in mails]
    return [b"".join(m) for m in mails]


def split_dump(text):
    """The commits of a `git show` / `git log -p` dump, each as a mail.
    git log writes the newest first: a dump whose dates only go back in
    time is turned around, so that the oldest applies first."""
    starts = [m.start() for m in COMMIT_LINE.finditer(text)
              if m.start() == 0 or text[m.start() - 1] == "\n"]
    out = [(i, *dump_mail(text[a:b]))
           for i, (a, b) in enumerate(zip(starts, starts[1:] + [len(text)]))]
    dates = [d for _, _, d in out]
    if dates != sorted(dates) and dates == sorted(dates, reverse=True):
        out.reverse()
    return [(i if len(out) > 1 else None, m) for i, m, _ in out]


def dump_mail(text):
    """One commit of a dump as the mail git format-patch would write, and
    its date."""
    head, _, rest = text.partition("\n\n")
    lines = rest.split("\n")
    end = next((i for i, l in enumerate(lines)
                if l == "---" or l.startswith("diff --git ")), len(lines))
    # git show indents the message by four spaces
    message = textwrap.dedent("\n".join(lines[:end]))
    meta = parse_patch(head + "\n\n" + message + "\n" + "\n".join(lines[end:]))
    diff = "\n".join(lines[end:])
    name, addr = meta.author[:-1].rsplit(" <", 1)
    date = datetime.fromisoformat(meta.date)
    mail = (f"From: {email.utils.formataddr((name, addr))}\n"
            f"Date: {email.utils.format_datetime(date)}\n"
            f"Subject: {meta.subject}\nMIME-Version: 1.0\n"
            "Content-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: 8bit\n\n"
            + (meta.body + "\n" if meta.body else "")
            + ("" if diff.startswith("---") else "---\n") + diff)
    return mail.encode("utf-8", "surrogateescape"), date


def read_mail(raw, source, index, dump=False):
    """A Patch (kind patch, cover or reply) from one mail's bytes; None for
    a mail that is none of them (no subject)."""
    lines = raw.split(b"\n")
    if all(l.endswith(b"\r") for l in lines[:-1] if l) and b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n")   # CR LF from the mail's transport
    try:
        msg = BytesParser(policy=email.policy.default).parsebytes(raw)
        subject, author, date = (str(msg.get(h, "")) for h in ("subject", "from", "date"))
        parts = [p for p in msg.walk() if p.get_content_maintype() == "text"]
        text = "".join(_decode(p) for p in parts) if parts else ""
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
    kind = ("reply" if REPLY.match(str(msg.get("subject", ""))) else
            "patch" if DIFF.search(text) else
            "cover" if not dump and (prefix.number == 0 or "PATCH" in prefix.text.upper())
            else None)
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
    return Patch(Path(source), index, subject, prefix, f"{name or addr} <{addr}>", iso,
                 raw, text, b"\r\n" in raw or "\r\n" in text, kind)


def _decode(part):
    data, charset = part.get_payload(decode=True) or b"", part.get_content_charset()
    try:
        return data.decode(charset or "utf-8", "replace")
    except LookupError:                 # a charset Python does not know
        return data.decode("utf-8", "replace")


def _where(source, index):
    return f"{source}" + ("" if index is None else f" (mail {index + 1})")


def read_file(path):
    """Every patch, cover letter and reply of one file."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise KexpandError(f"{path}: cannot read it: {e.strerror}")
    data = data.lstrip(b"\r\n").removeprefix(b"\xef\xbb\xbf")
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
    SUFFIXES files), single mails, commit dumps. Replies are skipped, a
    cover letter names the series. Numbered patches ([PATCH n/m]) take
    their places in the order of their numbers, others keep the order
    they were given in (a directory's by file name)."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not paths:
        raise KexpandError("no patches given: PATCHES=<mbox file | directory "
                           "of patch files | patch files ...>")
    mails = []
    for p in map(Path, paths):
        if not p.exists():
            raise KexpandError(f"{p}: no such file or directory (PATCHES=)")
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file()
                           and f.suffix in SUFFIXES and not f.name.startswith("."))
            if not files:
                raise KexpandError(f"no patch found in {p}: no "
                                   f"{', '.join('*' + s for s in SUFFIXES)} files")
        else:
            files = [p]
        for f in files:
            mails += read_file(f)
    patches = [m for m in mails if m.kind == "patch"]
    covers = [m for m in mails if m.kind == "cover"]
    if not patches:
        raise KexpandError(f"no patch found in {', '.join(map(str, paths))}: "
                           "only cover letters and replies, no mail with a diff")
    version = check_versions(patches + covers)
    order_by_number(patches)
    cover = next((c for c in covers if c.prefix.number == 0), covers[0] if covers else None)
    return Series(patches, cover, version, [Path(p) for p in paths])


def check_versions(mails):
    """The series' one version; a patch neither numbered nor versioned (a
    lone [PATCH], a commit dump) goes with any."""
    by = {}
    for m in mails:
        if m.prefix.number is not None or re.search(r"\b[vV]\d+\b", m.prefix.text):
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
    try:
        for i, p in enumerate(series.patches):
            atomic_write(mbox, AM_FROM + re.sub(rb"(?m)^(>*From )", rb">\1", p.raw))
            cr = ["--keep-cr", "--quoted-cr=nowarn"] if p.keep_cr else \
                ["--no-keep-cr", "--quoted-cr=strip"]
            e = am_env(p, env)
            r = git(tree, "-c", "core.hooksPath=" + os.devnull, "-c", "commit.gpgSign=false",
                    "am", "--patch-format=mboxrd", "--no-3way", "--no-scissors",
                    "--no-message-id", *cr, str(mbox), check=False, env=e, what="git am")
            if r.returncode != 0:
                git(tree, "am", "--abort", check=False, env=plain)
                git(tree, "reset", "-q", "--hard", base_commit, env=plain)
                raise KexpandError(failure(p, i, len(series.patches), base, r.stdout),
                                   "build")
            done.append((p, git(tree, "rev-parse", "HEAD", env=plain).stdout.strip()))
    finally:
        mbox.unlink(missing_ok=True)
    return done


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
