"""PATCHES= takes regular files and directories of them (kbuild.mailfile):
a device, a FIFO or a socket is refused from its stat without being
opened (a FIFO cannot block the run), a file over MAX_BYTES (64 MiB) is
refused before it is read, and so is a compressed file that unpacks past
it; all user errors (exit 2) naming the path and what to give."""
import gzip
import lzma
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kbuild import mailfile
from kbuild.mbox import read_series
from kbuild.util import KexpandError
from test_mail import mboxrd, series_mails, write, zstd

REPO = Path(__file__).resolve().parent.parent


def refused(paths):
    with pytest.raises(KexpandError) as e:
        read_series(paths)
    assert e.value.klass == "user" and e.value.exit_code == 2
    return str(e.value)


def test_a_fifo_is_refused_without_being_opened(tmp_path):
    """In a child with a time limit: opening a FIFO that has no writer
    would block it (b1b59f3 did), which the limit turns into a failure."""
    fifo = tmp_path / "v4.mbox"
    os.mkfifo(fifo)
    code = ("import sys\nfrom kbuild.mbox import read_series\nfrom kbuild.util import "
            "KexpandError\ntry:\n    read_series(sys.argv[1:])\nexcept KexpandError as e:\n"
            "    print(e.klass, e)\n")
    p = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True,
                       text=True, timeout=120, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=f"{REPO}:{REPO / 'kernel-build'}"))
    assert p.stdout == (f"user {fifo} is a FIFO (named pipe); PATCHES= takes regular "
                        "files (mbox files, patch files) and directories of them\n"), p.stderr


def test_devices_and_sockets_are_refused(tmp_path):
    assert refused(["/dev/zero"]).startswith("/dev/zero is a character device; ")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tmp_path / "sock.mbox"))
        assert f"{tmp_path / 'sock.mbox'} is a socket" in refused([tmp_path / "sock.mbox"])
    # in a directory, anything but a regular file is left out, as any other file
    d = tmp_path / "dir"
    d.mkdir()
    os.mkfifo(d / "0001-x.patch")
    assert f"no patch found in {d}" in refused([d])
    f = write(d / "t.mbox.gz", gzip.compress(mboxrd(series_mails())))
    assert len(read_series([d]).patches) == 5
    assert mailfile.list_dir(d) == [f]


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path):
    junk = tmp_path / "junk.mbox"
    with open(junk, "wb") as f:
        f.truncate(200 << 20)                   # 200 MB, sparse: no disk, no memory
    assert mailfile.MAX_BYTES == 64 << 20
    assert refused([junk]) == (f"{junk} is 209,715,200 bytes (200.0 MiB); PATCHES= "
                               "takes files of at most 64 "
                               "MiB (also once decompressed): give the series' own mails "
                               "(b4 am, or a thread mbox from lore)")
    # inside a directory too
    (tmp_path / "d").mkdir()
    junk.rename(tmp_path / "d" / "junk.mbox")
    assert "junk.mbox is 209,715,200 bytes (200.0 MiB); PATCHES= takes files of" in \
        refused([tmp_path / "d"])


@pytest.mark.parametrize("kind", ["gz", "xz", "zst"])
def test_a_compressed_file_that_unpacks_past_the_limit_is_refused(kind, tmp_path,
                                                                  monkeypatch):
    thread = mboxrd(series_mails())
    pack = {"gz": gzip.compress, "xz": lzma.compress, "zst": zstd}[kind]
    f = write(tmp_path / f"t.mbox.{kind}", pack(thread + b"\n" * 4096))
    assert len(read_series([f]).patches) == 5
    monkeypatch.setattr(mailfile, "MAX_BYTES", len(thread))
    name = {"gz": "gzip", "xz": "xz", "zst": "zstd"}[kind]
    assert refused([f]).startswith(f"{f} unpacks ({name}) to more than the limit; "
                                   "PATCHES= takes files of at most")


def test_two_gzip_members_read_as_one(tmp_path):
    mails = series_mails()
    f = write(tmp_path / "t.mbox.gz", gzip.compress(mboxrd(mails[:3]))
              + gzip.compress(mboxrd(mails[3:])))
    assert len(read_series([f]).patches) == 5
