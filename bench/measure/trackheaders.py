"""make track SCAN=1: the own bytes of a few headers at every commit
(#31), from the "headers" aggregate of each commit's scan record in the
measurement cache (under the compiler version and config hash the
commit was measured with), never from track.json, which is output.

Which headers, per compiler (RULE): the N_CHANGED whose own bytes over
the build changed most (absolute change) between the first and the last
commit whose scan the cache holds, then the largest header at that last
commit when it is not among them. A new commit at the end of the range
may change the choice; every commit's values are then taken again."""
from kbuild.util import log, read_json

from .cache import At, Cache

N_CHANGED = 8
RULE = (f"the {N_CHANGED} headers whose own bytes changed most between the first and "
        "the last commit with a scan, then the largest at the last commit")


def _own(cache, c, cc):
    """{header: own bytes} of commit c's build (cc), from the cache; None
    when the cache holds no scan of it with bytes by header."""
    setup = c.get("setup") if isinstance(c.get("setup"), dict) else {}
    ccver, chash = setup.get(cc), setup.get("config_hash")
    if not isinstance(ccver, str) or not isinstance(chash, str):
        return None
    agg = (cache.get(cache.scan_key(At(c["commit"], cc, ccver, chash))) or {}).get("headers")
    hs = agg.get("headers") if isinstance(agg, dict) else None
    if not isinstance(hs, dict):
        return None
    return {h: st["own"] for h, st in hs.items()
            if isinstance(st, dict) and isinstance(st.get("own"), int)}


def choose(first, last, n=N_CHANGED):
    """The headers to draw, from {header: own bytes} at the first and the
    last commit: the n that changed most (largest |change| first, then by
    name), then the largest at the last one when not among them."""
    changed = sorted((h for h in set(first) | set(last) if first.get(h, 0) != last.get(h, 0)),
                     key=lambda h: (-abs(last.get(h, 0) - first.get(h, 0)), h))[:n]
    largest = min(last, key=lambda h: (-last[h], h)) if last else None
    return changed + ([largest] if largest is not None and largest not in changed else [])


def _ends(cache, commits, cc):
    """(index, {header: own}) of the first and of the last commit with a
    scan in the cache, or None."""
    first = next(((i, o) for i, c in enumerate(commits)
                  if (o := _own(cache, c, cc)) is not None), None)
    if first is None:
        return None, None
    last = next(((i, o) for i in range(len(commits) - 1, first[0], -1)
                 if (o := _own(cache, commits[i], cc)) is not None), first)
    return first, last


def attach(work, commits, ccs, old_path=None):
    """Each commit's "header_own" ({cc: {header: own bytes, 0 where the
    build has no such header} or null where the cache holds no scan of
    it}) from the cache; returns the track's "headers" field ({cc:
    {"rule", "names", "first", "last"}}). A value in old_path (the track.json
    of an earlier run) that differs from the cache's is named in a warning:
    it is output, redrawn from the cache."""
    cache, out = Cache(work), {}
    for cc in ccs:
        first, last = _ends(cache, commits, cc)
        names = choose(first[1], last[1]) if first else []
        out[cc] = {"rule": RULE, "names": names,
                   "first": commits[first[0]]["commit"] if first else None,
                   "last": commits[last[0]]["commit"] if last else None}
        at = dict((first, last)) if first else {}
        for i, c in enumerate(commits):
            o = at[i] if i in at else _own(cache, c, cc)
            c.setdefault("header_own", {})[cc] = \
                None if o is None else {h: o.get(h, 0) for h in names}
    _warn_edited(old_path, commits, ccs)
    return out


def _warn_edited(old_path, commits, ccs):
    """Warn when an earlier track.json's header values differ from what the
    cache gives for the same commit, compiler and header."""
    old = read_json(old_path) if old_path and old_path.exists() else None
    olds = old.get("commits") if isinstance(old, dict) else None
    if not isinstance(olds, list):
        return
    was = {c["commit"]: c.get("header_own") for c in olds
           if isinstance(c, dict) and isinstance(c.get("commit"), str)}
    edited = []
    for c in commits:
        w = was.get(c["commit"])
        for cc in ccs:
            o = w.get(cc) if isinstance(w, dict) else None
            n = c["header_own"].get(cc)
            if isinstance(o, dict) and isinstance(n, dict) and \
                    any(o[h] != n[h] for h in o.keys() & n.keys()):
                edited.append(c["commit"][:12])
                break
    if edited:
        log(f"warning: {old_path} does not hold the header bytes measured at "
            f"{', '.join(edited)} (edited by hand?); it is output: redrawn from the "
            "measurement cache")
