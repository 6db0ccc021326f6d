"""The processes below a process (the tests look for what a run left)."""
import collections
import os


def descendants(pid=None):
    """[(pid, process group)] of every process below `pid` (default: this
    one), from /proc."""
    kids = collections.defaultdict(list)
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            kids[int(fields[1])].append((int(d), int(fields[2])))
    out, todo = [], [pid or os.getpid()]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out
