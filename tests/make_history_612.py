#!/usr/bin/python3
"""A git tree made from Debian's linux-source-6.12 with a synthetic history
for `make track` (issue 24, "verified on a real history"): 34 commits on
top of the packaged tree, most of them harmless (comments in C files, in
headers everyone includes and in minmax.h itself, an unrelated new C
file, documentation), four that change the expansion of the focus files:

  min3() nested the 6.7 way      setup.c +1,321 bytes (0.04%): 6.12's min() is
                                 cheap, so under make track's floors
  that undone                    back
  compaction: 64 more max()es    mm/compaction.c +2.0%, -c instructions x1.12
  fair.c: clamp() of its own     kernel/sched/fair.c -c instructions x1.007

Usage: tests/make_history_612.py DIR   (DIR must not exist; prints the four
commits, one per line, as `<commit> <subject>`). Not a test:
the by-hand check of make track's noise model (README, "Reference run")."""
import subprocess
import sys
from pathlib import Path

TARBALL = "/usr/src/linux-source-6.12.tar.xz"
HARMLESS_C = ["mm/vmscan.c", "mm/page_alloc.c", "kernel/fork.c", "kernel/exit.c",
              "fs/namei.c", "lib/string.c", "kernel/sched/core.c", "mm/memblock.c",
              "mm/percpu.c", "kernel/signal.c", "fs/open.c", "kernel/sys.c"]
HARMLESS_H = ["include/linux/kernel.h", "include/linux/sched.h", "include/linux/mm.h",
              "include/linux/compiler.h"]


def git(tree, *args):
    return subprocess.run(["git", "-C", str(tree), "-c", "user.name=History",
                           "-c", "user.email=h@example.org", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def commit(tree, msg):
    git(tree, "add", "-A", "-f", ".")   # the packaged tree ignores new files (/*)
    git(tree, "commit", "-qm", msg)
    return git(tree, "rev-parse", "HEAD")


def comment(tree, rel, n):
    p = Path(tree) / rel
    lines = p.read_text().split("\n")
    lines.insert(1, f"/* history {n}: a comment that changes no expansion */")
    p.write_text("\n".join(lines))


def replace(tree, rel, old, new):
    p = Path(tree) / rel
    text = p.read_text()
    assert old in text, (rel, old)
    p.write_text(text.replace(old, new, 1))


def main(out):
    tree = Path(out)
    tree.mkdir(parents=True)
    subprocess.run(["tar", "-xf", TARBALL, "-C", tree, "--strip-components=1"], check=True)
    git(tree, "init", "-q")
    git(tree, "add", "-A", "-f", ".")
    git(tree, "commit", "-qm", "linux-source-6.12 as packaged")
    interesting, n = [], 0
    minmax = "include/linux/minmax.h"
    min3_old = ("#define min3(x, y, z) \\\n\t__careful_op3(min, x, y, z, __UNIQUE_ID(x_), "
                "__UNIQUE_ID(y_), __UNIQUE_ID(z_))")
    min3_new = "#define min3(x, y, z) min((typeof(x))min(x, y), z)"

    def harmless(k):
        nonlocal n
        for _ in range(k):
            n += 1
            if n % 7 == 3:
                comment(tree, HARMLESS_H[n % len(HARMLESS_H)], n)
                commit(tree, f"headers: comment {n}")
            elif n % 11 == 5:
                comment(tree, minmax, n)
                commit(tree, f"minmax: comment {n}")
            elif n == 9:
                (tree / "lib/kx_history_new.c").write_text("int kx_history_new;\n")
                commit(tree, "lib: an unrelated new file")
            elif n % 5 == 0:
                (tree / "Documentation/kx-history.txt").write_text(f"note {n}\n")
                commit(tree, f"docs: note {n}")
            else:
                comment(tree, HARMLESS_C[n % len(HARMLESS_C)], n)
                commit(tree, f"c: comment {n}")

    harmless(6)
    replace(tree, minmax, min3_old, min3_new)
    interesting.append((commit(tree, "minmax: min3() as two min()s"), "min3 nested"))
    harmless(7)
    replace(tree, minmax, min3_new, min3_old)
    interesting.append((commit(tree, "minmax: min3() back to __careful_op3()"), "undone"))
    harmless(6)
    p = tree / "mm/compaction.c"
    p.write_text(p.read_text() + "".join(
        f"\nunsigned long kx_history_max{i}(unsigned long a, unsigned long b)\n"
        f"{{\n\treturn max(a, b + {i});\n}}\n" for i in range(64)))
    interesting.append((commit(tree, "compaction: 64 more max()es"), "compaction"))
    harmless(7)
    p = tree / "kernel/sched/fair.c"
    p.write_text(p.read_text() + "\nint kx_history_clamp(int v)\n{\n"
                 "\treturn clamp(v, 1, 1024);\n}\n")
    interesting.append((commit(tree, "fair: a clamp() of its own"), "fair"))
    harmless(4)
    for c, _ in interesting:
        print(c, git(tree, "log", "-1", "--format=%s", c))
    print(f"{int(git(tree, 'rev-list', '--count', 'HEAD')) - 1} commits on the packaged tree",
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
