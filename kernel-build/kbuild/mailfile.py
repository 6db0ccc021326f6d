"""The files PATCHES= names, before any mail is read: each must be a
regular file or a directory of them (a device, a FIFO or a socket is
refused from its stat, never opened), at most MAX_BYTES long, also once
decompressed. gzip, xz and zstd files (lore's t.mbox.gz) are read
decompressed, whatever their name; in a directory, the names of
SUFFIXES with a COMPRESSED ending are listed too (t.mbox.gz,
0001-x.patch.xz)."""
import email.utils
import io
import lzma
import os
import re
import shutil
import stat
import subprocess
import tempfile
import textwrap
import zlib
from datetime import datetime
from pathlib import Path

from .proc import kill_group, spawn
from .series import parse_patch
from .util import KexpandError

# what a directory holds: format-patch's *.patch, b4's *.mbx and *.cover
SUFFIXES = (".patch", ".diff", ".mbox", ".mbx", ".eml", ".cover")
COMPRESSED = (".gz", ".xz", ".zst")
# The largest input file, and the largest a compressed one may unpack to:
# a lore thread of a 100-patch series is a few MB; 64 MiB is far past any
# posted series and refuses /dev/zero-like input before it fills memory.
MAX_BYTES = 64 << 20
MAGIC = {b"\x1f\x8b": "gzip", b"\xfd7zXZ\x00": "xz", b"\x28\xb5\x2f\xfd": "zstd"}
KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
         (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))
CHUNK = 1 << 20
# Like git mailsplit, only a `From ` line with a time and a year opens a mail.
FROM_LINE = re.compile(rb"From \S+ .*\d:\d\d:\d\d\b.*\b\d{4}\b")
COMMIT_LINE = re.compile(r"commit [0-9a-f]{40}\b", re.M)


def check_path(p):
    """A path given in PATCHES=: 'dir' or 'file', or a user error. Only
    stat(2) is used: a FIFO is never opened, so it cannot block."""
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise KexpandError(f"{p}: no such file or directory (PATCHES=)")
    except OSError as e:
        raise KexpandError(f"{p}: cannot read it: {e.strerror} (PATCHES=)")
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    _check_regular(p, st)
    return "file"


def _check_regular(p, st):
    if not stat.S_ISREG(st.st_mode):
        what = next((w for test, w in KINDS if test(st.st_mode)), "not a regular file")
        raise KexpandError(f"{p} is {what}; PATCHES= takes regular files (mbox files, "
                           "patch files) and directories of them")
    if st.st_size > MAX_BYTES:
        raise _too_big(p, f"is {st.st_size:,} bytes ({st.st_size / 2**20:.1f} MiB)")


def _too_big(p, what):
    return KexpandError(f"{p} {what}; PATCHES= takes files of at most {MAX_BYTES >> 20} "
                        "MiB (also once decompressed): give the series' own mails "
                        "(b4 am, or a thread mbox from lore)")


def list_dir(d):
    """The patch files of a directory, by name: regular files only (a
    FIFO or a device in it is left out, as any other file)."""
    def wanted(f):
        name = f.name
        for z in COMPRESSED:
            name = name.removesuffix(z)
        return not f.name.startswith(".") and Path(name).suffix in SUFFIXES \
            and f.is_file()
    try:
        files = sorted(f for f in Path(d).iterdir() if wanted(f))
    except OSError as e:
        raise KexpandError(f"{d}: cannot list it: {e.strerror} (PATCHES=)")
    if not files:
        raise KexpandError(f"no patch found in {d}: no "
                           f"{', '.join('*' + s for s in SUFFIXES)} files (nor "
                           f"{', '.join(COMPRESSED)} of them)")
    return files


def read_input(p):
    """The bytes of one input file, decompressed when it is gzip, xz or
    zstd (told by its first bytes); a user error past MAX_BYTES. Opened
    non-blocking and checked again on the open file: a file replaced by
    a FIFO after check_path cannot block either."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        raise KexpandError(f"{p}: cannot read it: {e.strerror}")
    with os.fdopen(fd, "rb") as f:
        _check_regular(p, os.fstat(fd))
        try:
            data = f.read(MAX_BYTES + 1)
        except OSError as e:
            raise KexpandError(f"{p}: cannot read it: {e.strerror}")
    if len(data) > MAX_BYTES:                   # it grew since its stat
        raise _too_big(p, "grew past the limit while read")
    kind = next((k for m, k in MAGIC.items() if data.startswith(m)), None)
    if kind is None:
        return data
    try:
        out = {"gzip": _gunzip, "xz": _unxz, "zstd": _unzstd}[kind](data)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as e:
        raise KexpandError(f"{p}: a {kind} file that cannot be decompressed ({e}); "
                           "fetch it again")
    if out is None:
        raise _too_big(p, f"unpacks ({kind}) to more than the limit")
    return out


def _gunzip(data):
    """Every gzip member, at most MAX_BYTES of output (None: more)."""
    out, rest = [], data
    while rest:
        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
        n = sum(map(len, out))
        out.append(d.decompress(rest, MAX_BYTES + 1 - n))
        if d.unconsumed_tail or sum(map(len, out)) > MAX_BYTES:
            return None
        if not d.eof:
            raise EOFError("the file ends inside the compressed data")
        rest = d.unused_data.lstrip(b"\0")
    return b"".join(out)


def _unxz(data):
    d = lzma.LZMADecompressor()
    out = d.decompress(data, MAX_BYTES + 1)
    if len(out) > MAX_BYTES:
        return None
    if not d.eof:
        raise EOFError("the file ends inside the compressed data")
    return out


def _unzstd(data):
    """With the zstd program (Debian's zstd, in the Makefile's package
    lists): Python 3.11 has no zstd module."""
    if not shutil.which("zstd"):
        raise KexpandError("zstd: command not found, needed for a .zst PATCHES= file; "
                           "install it with 'apt-get install zstd' (or run make as "
                           "root: it installs what is missing)", "infra")
    with tempfile.TemporaryFile() as src, tempfile.TemporaryFile() as errf:
        src.write(data)
        src.seek(0)
        proc = spawn(["zstd", "-dcq", "--no-progress"], stdin=src,
                     stdout=subprocess.PIPE, stderr=errf)
        out, n = [], 0
        try:
            while n <= MAX_BYTES and (chunk := proc.stdout.read(CHUNK)):
                out.append(chunk)
                n += len(chunk)
            if n > MAX_BYTES:
                kill_group(proc)
                return None
            proc.wait()
        except BaseException:
            kill_group(proc)
            raise
        finally:
            proc.stdout.close()
        if proc.returncode != 0:
            errf.seek(0)
            raise OSError(errf.read().decode(errors="replace").strip()
                          or f"zstd exit {proc.returncode}")
    return b"".join(out)


# --- a file's mails ------------------------------------------------------------

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
