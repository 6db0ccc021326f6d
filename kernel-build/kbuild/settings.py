"""Settings: read once, up front, from the command line and the environment
(the Makefile passes its variables as environment, never as shell text),
validated into one Request that every stage receives. Nothing else in
kexpand reads the environment (but a Dask worker process: its own
KEXPAND_WORK).

Environment (README, "Variables"): KEXPAND_WORK, KEXPAND_RESULTS,
KEXPAND_CASES, KEXPAND_TARBALL, CASE, POINTS, FILES, KX_CC (make's CC=
from the command line), KERNEL, A, B, FILE, GOOD, BAD, THRESHOLD,
TOTAL_THRESHOLD, RUNS, JOBS, BOOT_TIMEOUT, ICOUNT_CAP, E_TIME_LIMIT, E_MEM_LIMIT, DASK_SCHEDULER,
DASK_TLS_CA, DASK_TLS_CERT, DASK_TLS_KEY, DASK_INSECURE, POINT, N, NO_TIME,
NO_BOOT, NO_MACROS, WRITE_FOCUS, REPORT_FROM, REPORT_URL, REPORTED_BY
(make check's CI files: ci/README.md)."""
import email.utils
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import sandbox
from .commands import (check_given, check_name, check_range, check_ref, parse_growth,
                       parse_int, parse_threshold)
from .util import REPO, KexpandError, Progress, Split, log

COMPILERS = ("gcc", "clang")
CONFIG_BASES = ("tinyconfig", "defconfig", "allnoconfig")
DEFAULT_TARBALL = "/usr/src/linux-source-6.1.tar.xz"


@dataclass
class Request:
    command: str
    case: str = "minmax"
    work: Path = None
    results: Path = None
    cases_dir: Path = REPO / "cases"
    tarball: Path = Path(DEFAULT_TARBALL)
    jobs: int = 1
    runs: int | None = None           # None: by the command's duration
    boot_timeout: int = 180
    icount_cap: int = 60              # s of native CPU; 0: count nothing
    dask_scheduler: str | None = None  # DASK_SCHEDULER=tls://host:port
    dask_tls: dict | None = None      # DASK_TLS_CA, _CERT, _KEY: {ca, cert, key}
    dask_insecure: bool = False       # DASK_INSECURE=1: plain tcp:// off this host
    e_time_limit: int = 300           # E_TIME_LIMIT=: s per -E (proc.pipe)
    e_mem_limit: int = 16384          # E_MEM_LIMIT=: MiB of address space per -E
    point: str | None = None          # POINT= (make sweep)
    sweep_n: int = 16                 # N= (make sweep): configurations
    points: list = field(default_factory=list)     # empty: all
    files: list = field(default_factory=list)      # empty: the focus files
    compilers: list = field(default_factory=lambda: list(COMPILERS))
    compilers_given: bool = False
    kernel: str | None = None
    a: str | None = None
    b: str | None = None
    file: str | None = None
    good: str | None = None
    bad: str | None = None
    threshold: str | None = None      # THRESHOLD= as typed (a reproduce block repeats it)
    total_threshold: str | None = None   # TOTAL_THRESHOLD= (make check), as typed
    # parsed once, here: make check's growth ratios (None: the default) and
    # make bisect's ('bytes', n) or ('ratio', r)
    growth_ratio: float | None = None
    total_ratio: float | None = None
    bisect_threshold: tuple | None = None
    config_base: str = "tinyconfig"   # CONFIG=
    kconfig: Path | None = None       # KCONFIG=: a user's .config
    no_time: bool = False
    no_macros: bool = False
    no_boot: bool = False
    write_focus: str | None = None
    patches: list = field(default_factory=list)    # PATCHES= (make check)
    base: str | None = None           # BASE= (make check)
    name: str | None = None           # NAME= (make check, make track)
    range: tuple | None = None        # RANGE= (make track): (from or None, to)
    every: int = 1                    # EVERY= (make track)
    scan: bool = False                # SCAN=1 (make track)
    full_build: bool = False          # FULL_BUILD=1 (make check: no fast path)
    no_sandbox: bool = False          # SANDBOX=0: builds run bare (trusted series only)
    max_commits: int = 2000           # MAX_COMMITS= (make track)
    report_from: str = "kexpand <kexpand@localhost>"  # REPORT_FROM=: report.eml's From:
    reported_by: str | None = None    # REPORTED_BY=: its Reported-by: (default REPORT_FROM)
    report_url: str | None = None     # REPORT_URL=: where results/check/ is served
    top: int = 20
    repeat: int = 10
    strict_config: bool = True        # False on a user's tree (KERNEL=)
    # what the stages report into (their contents change, not the fields)
    progress: Progress = field(default_factory=Progress)
    split: Split = field(default_factory=Split)

    def freeze(self):
        """The request is built once (from_env) and not changed after: a
        command that needs another makes a new one (dataclasses.replace)."""
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"Request.{name}: the request is built once, in "
                                 "settings.from_env; make a new one with "
                                 "dataclasses.replace")
        object.__setattr__(self, name, value)


def split_list(s):
    """A list setting ("a b", "a,b"), each item once, in the order given."""
    return list(dict.fromkeys(x for x in (s or "").replace(",", " ").split() if x))


def check_path_setting(name, path):
    """A directory setting must be a directory or creatable as one."""
    p = Path(path)
    probe = p
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise KexpandError(f"{name}={path}: {probe} is not a directory; give a "
                           "directory path", "infra")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise KexpandError(f"{name}={path}: {probe} is not writable by this "
                           "user; give a writable directory", "infra")


def from_env(command, args=None, env=None):
    """The Request for `command`: explicit arguments (a dict of non-None
    values) win over the environment. Raises KexpandError (exit 2 or 5)
    before any work starts."""
    env = os.environ if env is None else env
    args = {k: v for k, v in (args or {}).items() if v is not None}

    def get(key, envname):
        if key in args:
            return args[key]
        v = env.get(envname, "")
        return v if v.strip() else None

    check_given(command, split_list(env.get("KX_GIVEN")))
    req = Request(command)
    req.case = get("case", "CASE") or "minmax"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", req.case):
        raise KexpandError(f"CASE={req.case!r}: a case is a directory name "
                           "under cases/, for example CASE=minmax")
    _paths(req, env, args)
    _numbers(req, get, args)
    _names(req, get)
    _kernel_apart(req)
    _config(req, get)
    _report(req, get)
    for key, envname in (("no_time", "NO_TIME"), ("no_boot", "NO_BOOT"),
                          ("no_macros", "NO_MACROS"), ("scan", "SCAN"),
                          ("full_build", "FULL_BUILD"), ("no_sandbox", "SANDBOX"),
                          ("dask_insecure", "DASK_INSECURE")):
        v = args.get(key)
        if v is None:
            raw = (env.get(envname) or "").strip()
            if raw not in ("", "0", "1"):
                raise KexpandError(f"{envname}={raw!r}: give {envname}=1 (or 0)")
            v = raw == ("0" if key == "no_sandbox" else "1")
        setattr(req, key, bool(v))
    sandbox.set_enabled(not req.no_sandbox)
    _dask(req, get)
    # the packaged tree must keep every fragment option; a user's tree
    # (KERNEL=) only warns (a bisect step is told which by its caller)
    req.strict_config = args["strict_config"] != "0" if "strict_config" in args \
        else not req.kernel
    if command in ("bisect", "bisect-step"):
        req.compilers = ["gcc"]
    req.freeze()
    return req


LOOPBACK = re.compile(r"(127\.[0-9.]+|localhost|\[::1\]|::1)")


def _dask(req, get):
    """DASK_SCHEDULER= and how to reach it: tls:// with certificates, or
    plain tcp:// only on this machine (or with DASK_INSECURE=1)."""
    sched = get("dask_scheduler", "DASK_SCHEDULER")
    tls = {k: get(f"dask_tls_{k}", f"DASK_TLS_{k.upper()}") for k in ("ca", "cert", "key")}
    if sched is None:
        if any(tls.values()):
            log("warning: DASK_TLS_* are ignored without DASK_SCHEDULER=tls://...")
        return
    sched = sched.strip()
    m = re.fullmatch(r"(tcp|tls)://([A-Za-z0-9_.\[\]:-]+):[0-9]{1,5}", sched)
    if not m:
        raise KexpandError(f"DASK_SCHEDULER={sched!r}: give a Dask scheduler's "
                           "address, for example DASK_SCHEDULER=tls://10.0.0.5:8786")
    req.dask_scheduler = sched
    if m.group(1) == "tcp":
        if any(tls.values()):
            raise KexpandError(f"DASK_SCHEDULER={sched}: DASK_TLS_* certificates go "
                               f"with a tls:// address: give tls://{sched[6:]}")
        if not LOOPBACK.fullmatch(m.group(2)) and not req.dask_insecure:
            raise KexpandError(
                f"DASK_SCHEDULER={sched}: refused: plain tcp:// to another machine "
                "lets anyone who reaches that scheduler run pickled code on the "
                "workers and this client. Start the scheduler and workers with TLS "
                "and give DASK_SCHEDULER=tls://... with DASK_TLS_CA=, DASK_TLS_CERT= "
                "and DASK_TLS_KEY= (README, \"Scans on Dask\"), or DASK_INSECURE=1 on a "
                "network you trust")
        return
    for k, v in tls.items():
        if v is not None and not Path(v).expanduser().is_file():
            raise KexpandError(f"DASK_TLS_{k.upper()}={v}: no such file; give the "
                               "path of a PEM file (README, \"Scans on Dask\")")
    if tls["ca"] and tls["cert"]:
        req.dask_tls = {k: str(Path(v).expanduser().resolve()) if v else None
                        for k, v in tls.items()}


def work_dir(env):
    """KEXPAND_WORK, default ${XDG_CACHE_HOME:-$HOME/.cache}/kexpand (also
    a Dask worker's own, from the worker's environment)."""
    work = env.get("KEXPAND_WORK") or str(
        Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kexpand")
    return Path(work).expanduser().resolve()


def _paths(req, env, args):
    req.work = work_dir(env)
    req.results = Path(args.get("results") or env.get("KEXPAND_RESULTS")
                       or REPO / "results").expanduser().resolve()
    req.cases_dir = Path(env.get("KEXPAND_CASES") or REPO / "cases").resolve()
    req.tarball = Path(env.get("KEXPAND_TARBALL") or DEFAULT_TARBALL)
    check_path_setting("KEXPAND_WORK", req.work)
    check_path_setting("KEXPAND_RESULTS", req.results)
    if re.search(r"[\s:]", str(req.work)):
        # the build dirs live under it, and Kbuild takes no such path
        raise KexpandError(f"KEXPAND_WORK={req.work}: Kbuild cannot build in a path "
                           "with spaces or colons; give another work directory")
    if req.results == req.work or req.results.is_relative_to(req.work):
        raise KexpandError(f"KEXPAND_RESULTS={req.results} is inside the work "
                           f"directory {req.work}; give a results directory "
                           "outside it")
    if req.work.is_relative_to(req.results):
        raise KexpandError(f"KEXPAND_WORK={req.work} is inside the results "
                           f"directory {req.results}: the kernel tree and builds "
                           "would land in results/; give a work directory outside it")


def _numbers(req, get, args):
    cpus = os.cpu_count() or 1
    j = get("jobs", "JOBS")
    req.jobs = parse_int("JOBS", j, 1, 4096, cpus) if j is not None else cpus
    r = get("runs", "RUNS")
    req.runs = parse_int("RUNS", r, 1, 1000, 5) if r is not None else None
    t = get("boot_timeout", "BOOT_TIMEOUT")
    req.boot_timeout = parse_int("BOOT_TIMEOUT", t, 10, 86400, 180) \
        if t is not None else 180
    c = get("icount_cap", "ICOUNT_CAP")
    req.icount_cap = parse_int("ICOUNT_CAP", c, 0, 86400, 60) if c is not None else 60
    t = get("e_time_limit", "E_TIME_LIMIT")
    req.e_time_limit = parse_int("E_TIME_LIMIT", t, 1, 86400, 300) if t is not None \
        else 300
    m = get("e_mem_limit", "E_MEM_LIMIT")
    req.e_mem_limit = parse_int("E_MEM_LIMIT", m, 64, 1 << 20, 16384) if m is not None \
        else 16384
    req.threshold = get("threshold", "THRESHOLD")
    if req.threshold is not None:
        if req.command == "check":
            req.growth_ratio = parse_growth(req.threshold)
        else:
            req.bisect_threshold = parse_threshold(req.threshold)
    req.total_threshold = get("total_threshold", "TOTAL_THRESHOLD")
    if req.total_threshold is not None:
        req.total_ratio = parse_growth(req.total_threshold, "TOTAL_THRESHOLD")
    e = get("every", "EVERY")
    req.every = parse_int("EVERY", e, 1, 100000, 10) if e is not None else 1
    m = get("max_commits", "MAX_COMMITS")
    req.max_commits = parse_int("MAX_COMMITS", m, 1, 1000000, 2000) if m is not None \
        else 2000
    n = get("n", "N") if req.command == "sweep" else None
    req.sweep_n = parse_int("N", n, 2, 1000, 16) if n is not None else 16
    for key in ("top", "repeat"):
        if key in args:
            setattr(req, key, parse_int(f"--{key}", args[key], 1, 100000, 20))


def _names(req, get):
    req.points = split_list(get("points", "POINTS"))
    req.files = split_list(get("files", "FILES"))
    cc = split_list(get("cc", "KX_CC"))
    if cc:
        req.compilers_given = True
        if cc == ["both"]:
            cc = list(COMPILERS)
        bad = [c for c in cc if c not in COMPILERS]
        if bad:
            raise KexpandError(f"CC={' '.join(cc)}: unknown compiler "
                               f"{', '.join(bad)}; give CC=gcc, CC=clang or CC=both")
        req.compilers = list(dict.fromkeys(cc))
    for key, envname in (("kernel", "KERNEL"), ("a", "A"), ("b", "B"),
                         ("file", "FILE"), ("good", "GOOD"), ("bad", "BAD"),
                         ("point", "POINT"), ("base", "BASE"), ("name", "NAME"),
                         ("write_focus", "WRITE_FOCUS")):
        v = get(key, envname)
        if v is not None:
            v = v.strip()
            if "\0" in v or "\n" in v:
                raise KexpandError(f"{envname}={v!r}: no newlines or NUL bytes")
            if key in REFS:
                check_ref(envname, v)
        setattr(req, key, v)
    if req.name is not None:
        check_name("NAME", req.name)
    rng = get("range", "RANGE")
    if rng is not None:
        req.range = check_range("RANGE", rng.strip())
    # (paths: split on blanks only; a comma may be part of a file name)
    req.patches = list(dict.fromkeys((get("patches", "PATCHES") or "").split()))
    if req.write_focus is not None:
        wf = Path(req.write_focus).expanduser()
        if wf.is_dir():
            raise KexpandError(f"WRITE_FOCUS={req.write_focus} is a directory; "
                               "give a file path, for example WRITE_FOCUS=focus.txt")
        check_path_setting("WRITE_FOCUS", wf.resolve().parent)


REFS = ("a", "b", "good", "bad", "point", "base")


def _report(req, get):
    """REPORT_FROM=, REPORTED_BY= (addresses) and REPORT_URL= (an http(s)
    URL under patchwork's 200 characters, leaving room for a check's name)."""
    for key, envname in (("report_from", "REPORT_FROM"), ("reported_by", "REPORTED_BY")):
        v = get(key, envname)
        if v is None:
            continue
        name, addr = email.utils.parseaddr(v.strip())
        if not re.fullmatch(r"[^@\s<>]+@[^@\s<>]+", addr or "") or "\n" in v:
            raise KexpandError(f"{envname}={v!r}: give a mail address, for example "
                               f'{envname}="kexpand CI <ci@example.org>"')
        setattr(req, key, v.strip())
    url = get("report_url", "REPORT_URL")
    if url is not None:
        url = url.strip()
        if not re.fullmatch(r"https?://[^\s]+", url) or len(url) > 120:
            raise KexpandError(f"REPORT_URL={url!r}: give the http(s) URL (at most 120 "
                               "characters) where results/check/ is served, for example "
                               "REPORT_URL=https://ci.example.org/kexpand/check")
        req.report_url = url


def _kernel_apart(req):
    """kexpand never writes into a user's tree: its work and results
    directories must be outside KERNEL."""
    if not req.kernel:
        return
    k = Path(req.kernel).expanduser().resolve()
    for var, d in (("KEXPAND_WORK", req.work), ("KEXPAND_RESULTS", req.results)):
        if d == k or d.is_relative_to(k):
            raise KexpandError(f"{var}={d} is inside KERNEL={req.kernel}; kexpand "
                               "only reads a user's tree: give a directory outside it")


def _config(req, get):
    base = get("config", "CONFIG")
    if base is not None:
        if base not in CONFIG_BASES:
            raise KexpandError(f"CONFIG={base!r}: give one of {', '.join(CONFIG_BASES)} "
                               "(or KCONFIG=path/to/.config)")
        req.config_base = base
    kc = get("kconfig", "KCONFIG")
    if kc is not None:
        p = Path(kc).expanduser().resolve()
        if not p.is_file():
            raise KexpandError(f"KCONFIG={kc}: no such file; give the path of a "
                               "kernel .config")
        req.kconfig = p
