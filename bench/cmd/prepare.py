"""make prepare: unpack the packaged tree and apply the case's series,
one commit per patch and a tag per point."""
from kbuild import series, workdir
from kbuild.util import EXIT_USER


def cmd_prepare(req, case):
    with workdir.lock(req.work):
        commits, failures, version = series.prepare(case, req.work, req.tarball,
                                                    req.progress)
    for p in case.points:
        c = commits.get(p.name)
        print(f"{p.name:24} {c[:12] if c else 'FAILED: ' + failures[p.name]}")
    return EXIT_USER if failures else 0
