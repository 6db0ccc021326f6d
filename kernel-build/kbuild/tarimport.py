"""A packaged tarball as one commit, in one pass: each file of the tarball
goes from the decompressor straight into `git fast-import`, and git then
checks the commit out with a worker per core.

`tar -x` followed by `git add` writes every file of the tree, reads it all
back to hash it, and writes it again as a loose object: 78,635 files of
6.1, where creating a file is the dear part on many disks. Here the
objects go into one pack (zlib level 1, no deltas: the tree is read, not
shipped), and only the checkout creates files, in parallel.

The commit is the one `git add -A -f` and `git commit` would make of the
unpacked tree (same modes, same symlinks, same tree id), so commit ids,
and every result keyed by them, do not depend on how the tree was
unpacked."""
import datetime
import posixpath
import subprocess
import tarfile
import tempfile

from .gitops import git, git_environ
from .proc import kill_group, spawn
from .util import KexpandError

FAST_IMPORT = ["fast-import", "--quiet", "--done", "--depth=0"]


def _path(name):
    """A member's path below the tarball's top directory ('' for the top
    itself); a path that would leave the tree is an error."""
    norm = posixpath.normpath(name)
    if norm.startswith("/") or norm == ".." or norm.startswith("../") or "\n" in norm:
        raise KexpandError(f"tarball member {name!r} is outside the tree")
    _top, _, rest = norm.partition("/")
    if ".git" in rest.split("/"):
        raise KexpandError(f"tarball member {name!r} is inside a .git directory: "
                           "not a source tarball")
    if rest.startswith('"'):
        raise KexpandError(f"tarball member {name!r}: a path git fast-import would "
                           "read as quoted")
    return rest


def _stream(tf, out):
    """Write every file of the tarball as a blob; [(mode, mark, path)]."""
    files, marks, n = [], {}, 0
    for m in tf:
        path = _path(m.name)
        if not path or m.isdir():
            continue
        if m.isreg():
            data, mode = tf.extractfile(m).read(), "100755" if m.mode & 0o100 else "100644"
        elif m.issym():
            data, mode = m.linkname.encode(errors="surrogateescape"), "120000"
        elif m.islnk():         # a hard link: the same content as its target
            target = marks.get(_path(m.linkname))
            if target is None:
                raise KexpandError(f"tarball member {m.name!r} links to "
                                   f"{m.linkname!r}, which comes nowhere before it")
            files.append((target[0], target[1], path))
            marks[path] = target
            continue
        else:
            raise KexpandError(f"tarball member {m.name!r} is neither a file, a "
                               "directory nor a link: not a source tarball")
        n += 1          # a path given twice: the later one wins, as with tar -x
        mark = n
        out.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)))
        out.write(data)
        out.write(b"\n")
        marks[path] = (mode, mark)
        files.append((mode, mark, path))
    return files


def _who(ident, date):
    """'Name <email> <seconds> <+hhmm>' of an ISO date."""
    d = datetime.datetime.fromisoformat(date)
    off = int(d.utcoffset().total_seconds()) // 60
    return f"{ident} {int(d.timestamp())} {'-' if off < 0 else '+'}{abs(off) // 60:02d}{abs(off) % 60:02d}"


def commit_tarball(repo, tarball, message, ident, date):
    """Commit the files of `tarball`, its top directory stripped, as the
    first commit of the new repository `repo` (author and committer
    `ident`, 'Name <email>', at the ISO `date`), and check it out."""
    head = git(repo, "symbolic-ref", "HEAD").stdout.strip()
    with tempfile.TemporaryFile() as err:
        fi = spawn(["git", "-C", str(repo), "-c", "pack.compression=1", *FAST_IMPORT],
                   env=git_environ(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                   stderr=err)
        try:
            try:
                with tarfile.open(tarball, "r|*") as tf:
                    files = _stream(tf, fi.stdin)
                msg = message.encode()
                who = _who(ident, date)
                fi.stdin.write(f"commit {head}\nauthor {who}\ncommitter {who}\n"
                               f"data {len(msg)}\n".encode() + msg + b"\n")
                fi.stdin.write("".join(f"M {mode} :{mark} {path}\n" for mode, mark, path
                                       in files).encode(errors="surrogateescape"))
                fi.stdin.write(b"\ndone\n")
                fi.stdin.close()
            except (tarfile.TarError, EOFError, OSError) as e:
                if isinstance(e, BrokenPipeError):
                    fi.wait()
                else:
                    raise KexpandError(f"{tarball}: not a readable tarball ({e}); "
                                       "reinstall the package that provides it", "infra")
            if fi.wait() != 0:
                err.seek(0)
                raise KexpandError(f"git fast-import of {tarball} failed (exit "
                                   f"{fi.returncode}): {err.read().decode(errors='replace')[-1000:]}",
                                   "infra")
        finally:
            kill_group(fi)
    # checkout.workers=0: one worker per core
    git(repo, "-c", "checkout.workers=0", "reset", "-q", "--hard", "HEAD",
        what="git reset --hard (checking out the unpacked tarball)")
    return git(repo, "rev-parse", "HEAD").stdout.strip()
