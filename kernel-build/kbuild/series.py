"""Cases and series points: read a case manifest, turn the packaged kernel
tarball into a git tree outside the repository, and apply every point's
patches as commits with a tag per named point."""
import email.utils
import hashlib
import re
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import gitops, mtimes, tarimport, workdir
from .gitops import git
from .proc import run
from .util import KexpandError, REPO, atomic_write, atomic_write_json, log, read_json
from .workdir import TREE_MARK, is_own_tree

SOURCE_PACKAGE = "linux-source-6.1"
COMMITTER = ("kexpand", "kexpand@localhost")
# The packaged tree's own commit gets a fixed date: commit ids then depend
# only on the tarball's contents and the patches.
BASE_DATE = "2000-01-01T00:00:00+00:00"
# Bump when the way commits are made changes (their ids then change).
PREPARE_VERSION = 2


@dataclass
class Point:
    name: str
    description: str = ""
    patches: list = field(default_factory=list)
    parent: str | None = None
    control: bool = False
    base: bool = False
    promises: dict = field(default_factory=dict)

    def promises_text(self):
        """The promises as "const_min=1 const_min_t=0" (cache keys, records)."""
        return " ".join(f"{k}={int(v)}" for k, v in sorted(self.promises.items()))


@dataclass
class Case:
    name: str
    dir: Path
    points: list
    config: Path
    focus: list          # [(path, why)]

    def point(self, name):
        for p in self.points:
            if p.name == name:
                return p
        raise KexpandError(f"unknown point '{name}'; the points of case "
                           f"'{self.name}' are: {', '.join(self.names())}")

    def names(self):
        return [p.name for p in self.points]

    def digest(self):
        """Hash of everything that decides the commits: manifest + patches."""
        h = hashlib.sha256(f"prepare-v{PREPARE_VERSION}\n".encode())
        h.update((self.dir / "series.toml").read_bytes())
        for p in self.points:
            for f in p.patches:
                h.update((self.dir / "patches" / f).read_bytes())
        return h.hexdigest()[:16]


def load_case(name, cases):
    """The case `name` under the cases directory; a user error naming the
    known cases when there is none."""
    d = Path(cases) / name
    mf = d / "series.toml"
    if not mf.is_file():
        known = sorted(p.name for p in Path(cases).iterdir()
                       if (p / "series.toml").is_file()) \
            if Path(cases).is_dir() else []
        raise KexpandError(f"unknown case '{name}'; cases: {', '.join(known)}")
    try:
        data = tomllib.loads(mf.read_text())
    except tomllib.TOMLDecodeError as e:
        raise KexpandError(f"{mf}: {e}")
    points = []
    for raw in data.get("point", []):
        unknown = set(raw) - {"name", "description", "patches", "parent",
                              "control", "base", "promises"}
        if unknown or "name" not in raw:
            raise KexpandError(f"{mf}: bad point entry {raw!r} (unknown "
                               f"fields {sorted(unknown)} or no name)")
        points.append(Point(**raw))
    names = [p.name for p in points]
    if len(set(names)) != len(names):
        raise KexpandError(f"{mf}: point names repeat: {names}")
    if sum(p.base for p in points) != 1:
        raise KexpandError(f"{mf}: exactly one point must have base = true")
    prev = next(p.name for p in points if p.base)
    for p in points:
        if p.base:
            if p.patches:
                raise KexpandError(f"{mf}: base point {p.name} has patches")
            continue
        if p.parent is None:
            p.parent = prev
        if p.parent not in names:
            raise KexpandError(f"{mf}: point {p.name}: unknown parent "
                               f"{p.parent}")
        for f in p.patches:
            if not (d / "patches" / f).is_file():
                raise KexpandError(f"{mf}: point {p.name}: no patch file "
                                   f"patches/{f}")
        if not p.control:
            prev = p.name
    return Case(name, d, points, d / data.get("config", "config.fragment"),
                read_focus(d / data.get("focus", "focus-files")))


def read_focus(path):
    out = []
    for line in Path(path).read_text().splitlines():
        body, _, why = line.partition("#")
        if body.strip():
            out.append((body.strip(), why.strip()))
    return out


# --- patch files -----------------------------------------------------------

@dataclass
class PatchMeta:
    author: str
    date: str
    subject: str
    body: str


def parse_patch(text):
    """Commit metadata of a patch file: a mail (From:/Date:/Subject:
    headers) or a 'commit <sha>' dump (Author:/Date: headers). The message
    runs up to the '---' separator before the diff."""
    lines = text.split("\n")
    headers, i = {}, 0
    if lines and re.match(r"From [0-9a-f]{40} ", lines[0]):
        i = 1
    last = None
    while i < len(lines) and lines[i].strip():
        line = lines[i]
        if line[0] in " \t" and last:
            headers[last] += " " + line.strip()
        else:
            key, sep, val = line.partition(":")
            if line.startswith("commit ") and not sep:
                key, val = "Commit", line[7:]
            last = key.strip().lower()
            headers[last] = val.strip()
        i += 1
    rest = lines[i + 1:]
    end = len(rest)
    for j, line in enumerate(rest):
        if line == "---" or line.startswith("diff --git "):
            end = j
            break
    msg = rest[:end]
    if "subject" in headers:
        subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", headers["subject"])
        author = headers.get("from", "")
    else:
        while msg and not msg[0].strip():
            msg.pop(0)
        if not msg:
            raise KexpandError("patch has no subject line")
        subject = msg.pop(0).strip()
        author = headers.get("author", "")
        if headers.get("commit"):
            msg = msg + ["", f"Upstream-commit: {headers['commit'].strip()}"]
    if not author:
        raise KexpandError("patch has no From:/Author: header")
    if "<" in author or "@" in author:
        name, addr = email.utils.parseaddr(author)
    else:
        name, addr = author.strip(), ""
    date = parse_date(headers.get("date"))
    body = "\n".join(msg).strip()
    return PatchMeta(f"{name or addr} <{addr}>", date, subject, body)


def parse_date(text):
    """A patch's Date: header as ISO 8601: a mail date (RFC 2822) or a plain
    day (2024-07-26, as the seeds' commit dumps give it, taken at noon
    UTC). A missing or unreadable date is refused: it is the author date
    of the commit, so it decides the commit id."""
    if not text:
        raise KexpandError("patch has no Date: header (it decides the commit id); "
                           "add one, for example 'Date: Mon, 18 Sep 2023 08:16:30 +0000'")
    try:
        d = email.utils.parsedate_to_datetime(text)
        if d is not None and d.tzinfo is not None:
            return d.isoformat()
    except (TypeError, ValueError, IndexError):
        pass
    if re.fullmatch(r"\d{4}-\d\d-\d\d", text.strip()):
        return text.strip() + "T12:00:00+00:00"
    raise KexpandError(f"patch has a Date: header that cannot be read: {text!r}; "
                       "give a mail date ('Mon, 18 Sep 2023 08:16:30 +0000') or a day "
                       "('2024-07-26')")


def hunk_at(patch_text, path, line):
    """Which hunk (1-based) of `path` in the patch starts nearest before
    `line` (a line number git printed); None if unknown."""
    cur, n, best = None, 0, None
    for l in patch_text.splitlines():
        if l.startswith("+++ "):
            cur = l[4:].split("/", 1)[-1] if l[4:] != "/dev/null" else None
            n = 0
        elif l.startswith("@@ ") and cur == path:
            n += 1
            m = re.match(r"@@ -(\d+)", l)
            if m and int(m.group(1)) <= line:
                best = n
            elif best is None:
                best = n
    return best


# --- the git tree ------------------------------------------------------------

def git_env(author, date):
    name, _, addr = author.partition(" <")
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": addr.rstrip(">"),
            "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_NAME": COMMITTER[0],
            "GIT_COMMITTER_EMAIL": COMMITTER[1], "GIT_COMMITTER_DATE": date}


def package_version():
    p = run(["dpkg-query", "-W", "-f=${Version}", SOURCE_PACKAGE], check=False)
    return p.stdout.strip() if p.returncode == 0 else "unknown"


def unpack_base(tree, tarball):
    """Unpack the tarball into `tree` and commit it unchanged as the base.
    The Makefile's install step provides the tarball (linux-source-6.1)."""
    if not Path(tarball).is_file():
        raise KexpandError(f"{tarball} not found; install it with 'apt-get "
                           f"install {SOURCE_PACKAGE}' (make bench does it "
                           "when run as root)", "infra")
    tmp = workdir.unpacking(tree.parent)
    shutil.rmtree(tmp, ignore_errors=True)      # kexpand's own, from a killed run
    tmp.mkdir(parents=True)
    log(f"unpacking {tarball} into {tree}")
    git(tmp, "init", "-q")
    atomic_write(gitops.git_dir(tmp) / TREE_MARK, "a tree kexpand unpacked\n")
    git(tmp, "config", "gc.auto", "0")
    git(tmp, "config", "core.abbrev", "12")
    # the commit is the tarball, every file (Debian's top-level .gitignore
    # ignores '/*', the kernel's ignores dot files: none is left out)
    version = package_version()
    tarimport.commit_tarball(tmp, tarball, f"{SOURCE_PACKAGE} {version} as packaged\n\n"
                             f"Unpacked unchanged from {tarball}.\n",
                             "kexpand <kexpand@localhost>", BASE_DATE)
    untracked = git(tmp, "status", "--porcelain", "--ignored").stdout.strip()
    if untracked:
        raise KexpandError(f"unpacked tree not fully committed: "
                           f"{untracked[:200]}", "infra")
    if tree.exists():
        if not is_own_tree(tree):       # never delete what kexpand did not make
            raise KexpandError(f"{tree} exists and is not a tree kexpand unpacked; "
                               "move it away or use another KEXPAND_WORK")
        shutil.rmtree(tree)
    tmp.rename(tree)
    return version


def apply_patch(tree, patch):
    """Apply one patch file as one commit; on failure leave the tree clean
    and name the patch and hunk."""
    text = patch.read_text()
    try:
        meta = parse_patch(text)
    except KexpandError as e:
        raise KexpandError(f"patch {patch.name}: {e}")
    p = git(tree, "apply", "--index", "--check", str(patch), check=False)
    if p.returncode != 0:
        m = re.search(r"patch failed: (\S+):(\d+)", p.stdout)
        where = ""
        if m:
            h = hunk_at(text, m.group(1), int(m.group(2)))
            where = f" at {m.group(1)} hunk #{h}" if h else f" at {m.group(1)}"
        raise KexpandError(
            f"patch {patch.relative_to(REPO) if patch.is_relative_to(REPO) else patch}"
            f" does not apply{where}:\n{p.stdout.strip()}\n"
            "The work tree was left clean; fix or rebase the patch.")
    git(tree, "apply", "--index", str(patch))
    msg = meta.subject + ("\n\n" + meta.body if meta.body else "")
    msg += f"\n\nkexpand-patch: {patch.name}"
    git(tree, "commit", "-q", "--no-verify", "-m", msg,
        env=git_env(meta.author, meta.date))


def prepare(case, work, tarball, progress=None):
    """Make sure `work`/tree holds the base commit and every point's tag for
    `case`. Returns {point: commit}, plus failures {point: message}.
    Cheap when already done (state file matches the case digest)."""
    tree = workdir.tree(work)
    state_file = workdir.series_state(work, case.name)
    state = read_json(state_file) if state_file.exists() else None
    digest = case.digest()
    have_tree = (tree / ".git").is_dir() and git(
        tree, "rev-parse", "-q", "--verify", "refs/tags/packaged",
        check=False).returncode == 0
    if have_tree and state and state.get("digest") == digest:
        return state["commits"], state.get("failures", {}), state["package"]
    if not have_tree:
        version = unpack_base(tree, tarball)
        git(tree, "tag", "packaged")
    else:
        version = (state or {}).get("package") or package_version()
    with gitops.busy(tree, "prepare"):
        commits, failures = _apply_points(case, tree, progress)
    atomic_write_json(state_file, {"digest": digest, "package": version,
                                   "commits": commits, "failures": failures})
    return commits, failures, version


def _apply_points(case, tree, progress=None):
    """Every point's patches as commits on its parent, a tag per point."""
    base = next(p for p in case.points if p.base)
    commits, failures = {}, {}
    base_commit = git(tree, "rev-parse", "packaged^{commit}").stdout.strip()
    if base.name != "packaged":
        git(tree, "tag", "-f", base.name, base_commit)
    commits[base.name] = base_commit
    git(tree, "reset", "-q", "--hard")
    with mtimes.kept_across(tree):   # (build dirs of an earlier prepare stay up to date)
        for p in case.points:
            if p.base:
                continue
            if progress:
                progress.say(f"applying {len(p.patches)} patch(es) for {p.name}")
            if p.parent in failures or p.parent not in commits:
                failures[p.name] = f"parent point {p.parent} failed"
                continue
            git(tree, "checkout", "-q", "--detach", commits[p.parent])
            try:
                for f in p.patches:
                    apply_patch(tree, case.dir / "patches" / f)
            except KexpandError as e:
                git(tree, "reset", "-q", "--hard")
                failures[p.name] = str(e)
                log(f"point {p.name}: {e}")
                continue
            commits[p.name] = git(tree, "rev-parse", "HEAD").stdout.strip()
            git(tree, "tag", "-f", p.name, commits[p.name])
        git(tree, "checkout", "-q", "--detach", base_commit)
    return commits, failures


def checkout(tree, commit):
    """Check out a commit (detached), keeping make's view of each commit's
    files (kbuild.mtimes); repairs a tree a killed run left mid-checkout,
    refuses one that someone else changed."""
    if gitops.interrupted(tree):
        gitops.repair(tree)
    if not gitops.is_clean(tree):
        raise KexpandError(f"{tree} has uncommitted changes; kexpand will not "
                           "overwrite them. Reset it or remove it to re-prepare.",
                           "infra")
    cur = git(tree, "rev-parse", "HEAD").stdout.strip()
    if cur != commit:
        with gitops.busy(tree, f"checkout {commit[:12]}"):
            mtimes.checkout(tree, cur, commit)
