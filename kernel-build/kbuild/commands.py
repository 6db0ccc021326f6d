"""kexpand's commands as data, and checks of what a user typed before any
work: the one table of commands (each one's make target, what draws its
report, the variables it takes); which variables each make target takes
(a misspelt FIELS= or a FILE= given to compare is named, with the
variable meant), and what a git revision may look like (A=, B=, GOOD=,
BAD=, BASE=, RANGE=), so that a ref git would refuse is refused before the
tree is unpacked or cloned."""
import difflib
import math
import re

from .util import KexpandError, log

# Settings every command reads (the limits of every -E: proc.pipe).
COMMON = {"KEXPAND_WORK", "KEXPAND_RESULTS", "CASE", "JOBS", "SANDBOX", "E_TIME_LIMIT",
          "E_MEM_LIMIT"}
DASK = {"DASK_SCHEDULER", "DASK_TLS_CA", "DASK_TLS_CERT", "DASK_TLS_KEY", "DASK_INSECURE"}
# The one table of commands (as tuxmake's targets are data): each
# kexpand.py command's make target, what report.py draws after it (the
# Makefile's `measure`; None: nothing), and below, the variables it takes
# besides COMMON. The Makefile's targets, recipes and KX_VARS, the CLI's
# flags and the README's "Variables" table are tested against it
# (tests/test_commands.py).
MAKE = {"bench": ("bench", ""), "boot": ("boot", ""), "compare": ("compare", "--compare"),
        "bisect": ("bisect", "--index"), "scan": ("scan", "--scan|--index"),
        "sweep": ("sweep", "--sweep"), "check": ("check", "--check"),
        "track": ("track", "--track"), "prepare": ("prepare", None),
        "report": ("plots", None), "analyzer-bench": ("bench-analyzer", None),
        "check-bench": ("bench-check", None)}
TARGETS = {
    "bench": {"POINTS", "FILES", "CC", "RUNS", "NO_TIME", "NO_BOOT", "NO_MACROS",
              "BOOT_TIMEOUT", "ICOUNT_CAP", "CONFIG", "KCONFIG"},
    "boot": {"POINTS", "BOOT_TIMEOUT", "CONFIG", "KCONFIG"},
    "compare": {"A", "B", "KERNEL", "FILES", "CC", "RUNS", "NO_TIME", "NO_MACROS",
                "ICOUNT_CAP", "CONFIG", "KCONFIG"},
    "bisect": {"FILE", "GOOD", "BAD", "KERNEL", "THRESHOLD", "NO_MACROS",
               "CONFIG", "KCONFIG"},
    "scan": {"A", "B", "POINTS", "KERNEL", "CC", "WRITE_FOCUS", "CONFIG", "KCONFIG",
             *DASK},
    "sweep": {"FILE", "POINT", "N", "CONFIG"},
    "check": {"PATCHES", "BASE", "A", "B", "KERNEL", "CC", "CONFIG", "KCONFIG",
              "THRESHOLD", "TOTAL_THRESHOLD", "NO_MACROS", "ICOUNT_CAP", "NAME",
              "FULL_BUILD", "REPORT_FROM", "REPORTED_BY", "REPORT_URL"},
    "track": {"RANGE", "EVERY", "KERNEL", "FILES", "CC", "CONFIG", "KCONFIG",
              "SCAN", "NAME", "ICOUNT_CAP", "MAX_COMMITS", "NO_MACROS", *DASK},
    "prepare": set(), "report": set(), "analyzer-bench": set(),
    "check-bench": {"CONFIG", "KCONFIG"},
}
TARGETS["report"] = set().union(*TARGETS.values())      # report.py after any target
ALL = COMMON.union(*TARGETS.values())


def check_given(target, given):
    """`given`: the variables typed on make's command line (the Makefile
    passes their names). An unknown one is a user error naming the variable
    meant; one this target does not take gets a warning naming what it
    takes (a script may pass one set of variables to several targets)."""
    takes = COMMON | TARGETS.get(target, ALL)
    for name in given:
        if name in takes:
            continue
        if name not in ALL:
            near = difflib.get_close_matches(name, sorted(ALL), n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]}=?" if near else \
                "; the variables are listed in README.md, \"Variables\""
            raise KexpandError(f"{name}= is not a kexpand variable{hint}")
        near = difflib.get_close_matches(name, sorted(takes - COMMON), n=1, cutoff=0.6)
        log(f"warning: {name}= is not used by make {target} and is ignored"
            + (f"; did you mean {near[0]}=?" if near else "")
            + f" (make {target} takes: {', '.join(sorted(takes - COMMON)) or 'none'})")


# A revision: a name git-check-ref-format(1) accepts (or a commit id),
# followed by suffixes such as ~2, ^, ^2, ^{commit} or @{1}.
_NAME = r"[A-Za-z0-9_+,@=](?:[A-Za-z0-9_.+,@=/-]*[A-Za-z0-9_+,@=-])?"
_SUFFIX = r"(?:~[0-9]*|\^[0-9]*|\^\{[a-z]*\}|@\{[0-9A-Za-z.: -]+\})"
_REV = re.compile(rf"(?:{_NAME}|@)(?:{_SUFFIX})*")


def check_ref(var, value):
    """A git revision as a user would type it (v6.6, HEAD~1, origin/master,
    a commit id, a series point), or a user error; checked before any tree
    is unpacked or cloned. What git itself refuses never reaches it."""
    why = None
    if not value or not _REV.fullmatch(value):
        why = "not a git revision"
    else:
        name = re.sub(rf"(?:{_SUFFIX})+$", "", value)
        parts = name.split("/")
        if ".." in name or "//" in name or "@{" in name or name.endswith(".lock") \
                or any(p.startswith(".") or p.endswith(".lock") for p in parts):
            why = "a name git refuses (git check-ref-format)"
    if why:
        raise KexpandError(f"{var}={value!r}: {why}; give a branch, tag, commit id "
                           f"or series point, for example {var}=v6.6 or {var}=HEAD~1")
    return value


def check_name(var, value):
    """NAME=: a short name that becomes a directory and a ref's last part
    (refs/kexpand/check/<name>), so it follows git-check-ref-format(1)
    too: no '..', no trailing '.' or '.lock'; checked before any work."""
    why = None
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}", value):
        why = "give a short name of letters, digits, '.', '_', '+' or '-'"
    elif ".." in value or value.endswith((".", ".lock")):
        why = "git refuses it as a ref name ('..', or a trailing '.' or '.lock')"
    if why:
        raise KexpandError(f"{var}={value!r}: {why}; for example {var}=minmax-v4")
    return value


def check_range(var, value):
    """RANGE=A..B (or A...B, or one revision: everything up to it)."""
    sep = "..." if "..." in value else ".." if ".." in value else None
    if sep is None:
        return (None, check_ref(var, value))
    a, b = value.split(sep, 1)
    if not a or not b:
        raise KexpandError(f"{var}={value!r}: give both ends, for example "
                           f"{var}=v6.6..v6.7")
    return (check_ref(var, a), check_ref(var, b))


# The parsers of settings.from_env (each setting is parsed there, once).
def parse_int(name, value, lo, hi, example):
    """A whole number in [lo, hi] or a user error naming the setting."""
    s = str(value).strip()
    if not re.fullmatch(r"[0-9]+", s) or not lo <= int(s) <= hi:
        raise KexpandError(f"{name}={value!r}: give a whole number from {lo} to "
                           f"{hi}, for example {name}={example}")
    return int(s)


THRESHOLD_UNITS = {"": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6,
                   "g": 1e9, "gb": 1e9}


def parse_threshold(s):
    """THRESHOLD: bytes ('20000000', '20MB', '20M') or a ratio of GOOD's
    bytes ('2x'). Returns ('bytes', n) or ('ratio', r)."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(x|[kmg]b?|)\s*", s or "",
                     re.I)
    if m:
        v, unit = float(m.group(1)), m.group(2).lower()
        if math.isfinite(v) and v > 0:
            if unit == "x":
                return ("ratio", v)
            if v * THRESHOLD_UNITS[unit] < 1e15:
                return ("bytes", int(v * THRESHOLD_UNITS[unit]))
    raise KexpandError(f"THRESHOLD={s!r}: give bytes (THRESHOLD=20000000 or "
                       "THRESHOLD=20MB) or a ratio of GOOD's bytes (THRESHOLD=2x)")


def parse_growth(s, var="THRESHOLD"):
    """THRESHOLD (TOTAL_THRESHOLD) of make check: the growth of a file's
    (the whole build's) -E bytes that makes a regression, as a ratio
    ('1.2x') or a percentage ('20%', '+20%', '0.5%'). Returns the ratio (> 1)."""
    m = re.fullmatch(r"\s*\+?([0-9]+(?:\.[0-9]+)?)\s*(x|%)\s*", s or "", re.I)
    if m:
        v = float(m.group(1))
        r = v if m.group(2).lower() == "x" else 1 + v / 100
        if math.isfinite(r) and 1 < r < 1e6:
            return r
    raise KexpandError(f"{var}={s!r}: give the growth that makes a regression, "
                       f"as a percentage ({var}=20%) or a ratio ({var}=1.2x)")
