"""The measurement cache ($KEXPAND_WORK/cache): one small JSON file per
measurement, keyed by (commit, compiler + version, config hash, file,
kind, setting). One key function per kind, so every stage that reuses a
measurement builds the same key."""
import dataclasses
import gzip
import hashlib
import json
import zlib
from pathlib import Path

from kbuild import build, workdir
from kbuild.util import atomic_write, log, read_json

# Bump when what a kind measures changes: its cached values are then stale.
ANALYZER_VERSION = "2"
# An expansion entry's own version: 2 since its cpp_cpu_s (the ICOUNT_CAP
# estimate) is taken inside the sandbox (before: bwrap's own few ms).
EXPAND_VERSION = "2"
# Scans of version 1 could keep the wrong one of a C file built into two
# objects (scanfiles.one_per_file); version 2 kept one hot line, version 3
# keeps five (make check reports them) and a failing file's error, version
# 4 leaves build products out of the include dirs' listings, version 6
# keeps every file's bytes by header (kx-analyze -H, headers.py), version
# 7 is Kbuild-driven (kbuildscan: modules in, the boot code out).
SCAN_VERSION = "7"
MACROS_VERSION = "4"     # 4: kx-macros fixed (a hot line without macro bytes, repeated -l, #line)
COST_VERSION = "2"      # 2: counts run hermetically (icount.count)
CHECK_VERSION = "2"     # what make check's details hold (2: the whole build's witness too)
# Interleaved timings only (group_time_key): 2 since each run is timed by
# hyperfine (before: kexpand's own wait4 loop), so that timings of the two
# timers are never mixed in one group. Instruction counts keep COST_VERSION:
# they did not change, and they are expensive.
TIMING_VERSION = "2"


@dataclasses.dataclass(frozen=True)
class At:
    """What a measurement is of, besides its file: a commit, built by a
    compiler (its name and version) at a config (build.Config.hash()).
    Every cache key starts with it."""
    commit: str
    cc: str
    ccver: str
    chash: str

    @classmethod
    def of(cls, commit, cc, config):
        """This machine's compiler `cc` at `config` (a build.Config)."""
        return cls(commit, cc, build.compiler_version(cc), config.hash())

    @classmethod
    def of_record(cls, rec):
        """What a record (results.header's fields) measured."""
        return cls(rec["commit"], rec["compiler"], rec["compiler_version"],
                   rec["config_hash"])

    def moved(self, commit):
        """The same compiler and config at another commit."""
        return dataclasses.replace(self, commit=commit)

    def parts(self):
        return (self.commit, self.cc, self.ccver, self.chash)


class Cache:
    """Measurements keyed by (commit, compiler + version, config hash, file,
    kind, setting); one small JSON file each. One key function per kind, so
    every stage that reuses a measurement builds the same key."""

    def __init__(self, work):
        self.work = Path(work)
        self.dir = workdir.cache(work)

    @staticmethod
    def _key(*parts):
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]

    def expand_key(self, at, f):
        return self._key(*at.parts(), f, "expand", ANALYZER_VERSION, EXPAND_VERSION)

    def group_time_key(self, at, commits, f, runs):
        """One file's interleaved runs at a group of commits (bench/cost.py),
        each with `at`'s compiler and config."""
        return self._key(commits, at.cc, at.ccver, at.chash, f, "interleaved",
                         TIMING_VERSION, f"runs={runs}")

    def icount_key(self, at, f, kind, source):
        return self._key(*at.parts(), f, kind, "icount", source, COST_VERSION)

    def boot_key(self, at, inputs, qver, promises, timeout):
        return self._key(*at.parts(), "boot", inputs, qver, promises, timeout)

    def conformance_key(self, at, snippet_hash):
        return self._key(*at.parts(), "conformance", snippet_hash)

    def lines_key(self, at, f):
        return self._key(*at.parts(), f, "lines", ANALYZER_VERSION)

    def macros_key(self, at, f):
        return self._key(*at.parts(), f, "macros", MACROS_VERSION)

    def sweep_key(self, at, f):
        """One file under one .config of a sweep (bench/sweep.py): `at`'s
        config is that .config's own hash."""
        return self._key(*at.parts(), f, "sweep", ANALYZER_VERSION)

    def check_key(self, at, commits, path, files):
        """The details make check found for the files that regressed from
        the base (`at`) through the series' commits (bench/cmd/checkdetail.py)."""
        return self._key(at.commit, commits, at.cc, at.ccver, at.chash, path, sorted(files),
                         "check", ANALYZER_VERSION, SCAN_VERSION, MACROS_VERSION,
                         COST_VERSION, CHECK_VERSION)

    def track_key(self, at, counter, f):
        """One file's track values measured on a Dask worker (whose own
        cache holds the measurement), kept by the client."""
        return self._key(*at.parts(), counter, f, "track", ANALYZER_VERSION, COST_VERSION)

    def scan_key(self, at):
        return self._key(*at.parts(), "scan", ANALYZER_VERSION, SCAN_VERSION)

    def get(self, key, shape=dict):
        """The cached value, or None. A value of the wrong shape is
        reported once and treated as missing (it is measured again)."""
        p = self.dir / f"{key}.json"
        return _shaped(p, read_json(p), shape) if p.exists() else None

    def put(self, key, value):
        """Compact JSON: C's encoder (indent takes Python's, about six
        times as long: 0.2 s a defconfig scan record)."""
        atomic_write(self.dir / f"{key}.json", json.dumps(value, separators=(",", ":")))

    def drop(self, key):
        """Forget a value (put's or put_packed's): it is measured again."""
        for p in (self.dir / f"{key}.json", self.dir / f"{key}.json.gz"):
            p.unlink(missing_ok=True)

    def put_packed(self, key, value):
        """A large value (a scan's per-file header records: about 180 MB
        as indented JSON for a defconfig point): compact JSON, gzip'd
        at level 1, in <key>.json.gz, about a sixth of that (level 6 saves
        a fifth more and takes three times as long: 1.8 s a defconfig
        point)."""
        atomic_write(self.dir / f"{key}.json.gz", gzip.compress(
            json.dumps(value, separators=(",", ":")).encode(), 1))

    def get_packed(self, key, shape=dict):
        """What put_packed() wrote (or put(), before it), like get()."""
        p = self.dir / f"{key}.json.gz"
        if not p.exists():
            return self.get(key, shape)
        try:
            v = json.loads(gzip.decompress(p.read_bytes()))
        except (OSError, EOFError, ValueError, zlib.error) as e:
            log(f"warning: cache entry {p} is unreadable ({e}); removed")
            p.unlink(missing_ok=True)
            return None
        return _shaped(p, v, shape)


def _shaped(p, v, shape):
    """v, or None (reported) when a cache entry holds another shape."""
    if v is not None and not isinstance(v, shape):
        log(f"warning: cache entry {p} has the wrong shape; measuring again")
        return None
    return v
