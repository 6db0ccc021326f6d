#!/usr/bin/python3
"""A git tree of Debian's two packaged kernels as two commits:
linux-source-6.1, then linux-source-6.12 on top of it (every file of 6.1
removed, every file of 6.12 added). The whole-build comparison of 6.1 and
6.12 runs on it with the case's configuration:

    tests/make_two_releases.py DIR
    make scan KERNEL=DIR A=HEAD~1 B=HEAD CC=gcc
    make scan KERNEL=DIR A=HEAD~1 B=HEAD CC=gcc CONFIG=defconfig

(results/scan/HEAD~1..HEAD*/ranking.md and headers.md; results/README.md
quotes the reference run). DIR must not exist; prints the two commits.
Not a test: the data of a reference run."""
import subprocess
import sys
from pathlib import Path

TARBALLS = ["/usr/src/linux-source-6.1.tar.xz", "/usr/src/linux-source-6.12.tar.xz"]


def git(tree, *args):
    return subprocess.run(["git", "-C", str(tree), "-c", "user.name=kexpand",
                           "-c", "user.email=kexpand@example.org", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def package_version(tarball):
    name = Path(tarball).name.removesuffix(".tar.xz")
    p = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", name],
                       capture_output=True, text=True)
    return f"{name} {p.stdout.strip()}".strip()


def main(argv):
    if len(argv) != 1:
        sys.exit("usage: tests/make_two_releases.py DIR")
    tree = Path(argv[0])
    if tree.exists():
        sys.exit(f"{tree} exists: give a new directory")
    for t in TARBALLS:
        if not Path(t).exists():
            sys.exit(f"{t} missing: apt-get install {Path(t).name.removesuffix('.tar.xz')}")
    tree.mkdir(parents=True)
    git(tree, "init", "-q")
    for t in TARBALLS:
        for p in tree.iterdir():
            if p.name != ".git":
                subprocess.run(["rm", "-rf", str(p)], check=True)
        subprocess.run(["tar", "-xJf", t, "-C", str(tree), "--strip-components=1"],
                       check=True)
        git(tree, "add", "-A", "-f", ".")
        git(tree, "commit", "-qm", f"{package_version(t)} as packaged")
        print(git(tree, "rev-parse", "HEAD"), package_version(t))


if __name__ == "__main__":
    main(sys.argv[1:])
