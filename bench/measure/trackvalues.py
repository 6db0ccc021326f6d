"""A track's values come from the measurement cache, never from its own
track.json: track.json is output. What an earlier run wrote names the
commits it measured and under which setup (compiler versions, config
hash, instruction counter); each such commit's values are looked up in
the cache under that setup. A commit the cache cannot vouch for is
measured again; a value that differs from the cache (a hand edit) and a
track.json of the wrong shape are redrawn from the cache, with a message
naming the file."""
from kbuild.util import log, read_json

from .cache import At, Cache
from .trackdist import values_of

FIELDS = ("bytes", "longest_line", "instructions_c", "status")


def _commits(path):
    """The commits of an earlier track.json, or [] (with a message) when
    it is not a track record of the documented shape."""
    if not path.exists():
        return []
    old = read_json(path)
    commits = old.get("commits") if isinstance(old, dict) else None
    if isinstance(commits, list) and all(
            isinstance(c, dict) and isinstance(c.get("commit"), str) for c in commits):
        return commits
    log(f"warning: {path} is not a track record of the documented shape (README, "
        "\"make track results\"); it is output, redrawn from the measurement cache")
    return []


def _value(cache, at, counter, f, old):
    """One file's values at one commit (`at`: cache.At) from the cache, or None."""
    e = cache.get(cache.expand_key(at, f))
    old = old if isinstance(old, dict) else {}
    if e is None:               # measured on a Dask worker
        v = cache.get(cache.track_key(at, counter, f))
        if v is not None and all(k in v for k in FIELDS):
            return v
    if e is None:
        # a file that failed to build is not cached: its failure has no
        # value that could lie, so it stands until measured again
        if old.get("status") not in (None, "ok") and old.get("bytes") is None:
            return {"bytes": None, "longest_line": None, "instructions_c": None,
                    "status": str(old["status"])}
        return None
    cnt = cache.get(cache.icount_key(at, f, "time_c", counter)) \
        if counter else None
    if e.get("status") == "ok" and not isinstance((cnt or {}).get("instructions"), int):
        if old.get("instructions_c") is not None:
            return None           # a count the cache does not hold: count it again
        note = old.get("instructions_note")
        cnt = {"instructions": None, **({"instructions_note": str(note)} if note else {})}
    return values_of(dict(e, counts={"time_c": cnt or {}}))


def _from_cache(cache, c, files, ccs, scan):
    """{"setup", "values"[, "total_bytes"]} of an earlier run's commit,
    from the cache under the setup it was measured with; None when the
    cache lacks any of it."""
    setup = c.get("setup")
    if not isinstance(setup, dict) or not isinstance(setup.get("config_hash"), str):
        return None
    chash, counter = setup["config_hash"], setup.get("counter")
    old = c.get("values") if isinstance(c.get("values"), dict) else {}
    vals, total = {}, {}
    for cc in ccs:
        ccver = setup.get(cc)
        if not isinstance(ccver, str):
            return None
        olds = old.get(cc) if isinstance(old.get(cc), dict) else {}
        at = At(c["commit"], cc, ccver, chash)
        for f in files:
            v = _value(cache, at, counter, f, olds.get(f))
            if v is None:
                return None
            vals.setdefault(cc, {})[f] = v
        if scan:
            s = cache.get(cache.scan_key(at))
            if not isinstance((s or {}).get("total_bytes"), int):
                return None
            total[cc] = s["total_bytes"]
    return {"setup": setup, "values": vals, **({"total_bytes": total} if scan else {})}


def _fields(values, files, ccs):
    """What a track's values say, for comparing; None where malformed."""
    out = {}
    for cc in ccs:
        per = values.get(cc) if isinstance(values, dict) else None
        for f in files:
            v = per.get(f) if isinstance(per, dict) else None
            out[(cc, f)] = tuple(v.get(k) for k in FIELDS) if isinstance(v, dict) else None
    return out


def keep_remote(work, got):
    """Values measured on Dask workers ({commit: {"setup", "values"}}),
    into this machine's cache."""
    cache = Cache(work)
    for commit, r in got.items():
        s = r["setup"]
        for cc, per in r["values"].items():
            for f, v in per.items():
                cache.put(cache.track_key(At(commit, cc, s[cc], s["config_hash"]),
                                          s.get("counter"), f), v)


def known(work, path, files, ccs, scan):
    """{commit: {"setup", "values"[, "total_bytes"]}} of the commits an
    earlier run measured, as the cache holds them."""
    cache, out, redrawn = Cache(work), {}, []
    for c in _commits(path):
        got = _from_cache(cache, c, files, ccs, scan)
        if got is None:
            continue
        out[c["commit"]] = got
        if _fields(c.get("values"), files, ccs) != _fields(got["values"], files, ccs) or \
                (scan and c.get("total_bytes") != got["total_bytes"]):
            redrawn.append(c["commit"][:12])
    if redrawn:
        log(f"warning: {path} does not hold what was measured at "
            f"{', '.join(redrawn)} (edited by hand?); it is output: redrawn from the "
            "measurement cache")
    return out
