"""Each point's kernel booted in QEMU with the KUnit module, and the
conformance snippets compiled at each point (make boot, make bench):
the records results/<commit12>/boot.json and conformance.json."""
import time

from kbuild import boot, build, conformance, series, workdir
from kbuild.util import EXIT_BOOT, EXIT_BUILD, EXIT_INFRA, atomic_write_json, log

from .. import results
from .cache import At, Cache


def boot_points(req, case, tree, todo):
    """Boot-check each (name, commit) with gcc; results/<commit12>/boot.json.
    Returns the worst exit code (4 boot, 3 build, 5 infra). Only results
    of the code under test are cached; an infra error is retried next run."""
    cache = Cache(req.work)
    config = build.case_config(req, case)
    qver, gcc = boot.qemu_version(), At.of(None, "gcc", config)
    worst = 0
    for name, commit in todo:
        at = gcc.moved(commit)
        promises = case.point(name).promises_text() if name in case.names() else ""
        key = cache.boot_key(at, boot.inputs_hash(), qver, promises, req.boot_timeout)
        r = cache.get(key)
        req.progress.step(f"boot {name}" + (" (cached)" if r else ""))
        if r is None:
            series.checkout(tree, commit)
            bdir = build.build_dir(tree, commit, "gcc")
            # the kernel starts from a copy of the previous point's build
            # dir (Kbuild rebuilds what the checkout changed: about 650 of
            # 770 objects after a minmax.h change); kernel_build_from says so
            t0 = time.monotonic()
            r = boot.boot_point(tree, bdir, config, promises,
                                workdir.boot(req.work, commit), req.boot_timeout, req.jobs)
            req.split.add("builds", r.get("kernel_build_s", 0.0))
            req.split.add("boots", time.monotonic() - t0 - r.get("kernel_build_s", 0.0))
            if r["status"] != "infra-error":
                cache.put(key, r)
        req.progress.say(
            f"  {name}: {r['status']}, {r.get('tests_passed', 0)} passed, "
            f"{r.get('tests_failed', 0)} failed, {r.get('tests_skipped', 0)} skipped"
            + (f", /init after {r['boot_s']}s" if r.get("boot_s") else ""))
        rec = dict(r, **results.header("kexpand.boot", case.name, name, at))
        atomic_write_json(results.record_path(req.results, commit, "gcc")
                          .with_name("boot.json"), rec)
        if r["status"] != "booted":
            worst = max(worst, {"build": EXIT_BUILD, "infra": EXIT_INFRA}.get(r.get("class"), EXIT_BOOT))
    return worst


def conformance_points(req, case, tree, todo):
    """Compile every conformance snippet at each point (gcc)."""
    snippets = conformance.load_snippets(case.dir)
    if not snippets:
        return
    cache = Cache(req.work)
    gcc = At.of(None, "gcc", build.case_config(req, case))
    focus = [f for f, _ in case.focus]
    for name, commit in todo:
        at = gcc.moved(commit)
        key = {s["name"]: cache.conformance_key(at, s["hash"])
               for s in snippets}
        got = {n: cache.get(k) for n, k in key.items()}
        missing = [s for s in snippets if got[s["name"]] is None]
        if missing:
            bdir = build.build_dir(tree, commit, "gcc")
            template = conformance.template_command(bdir, focus)
            if template is None:
                log(f"conformance at {name}: no compiled focus file to take "
                    "flags from; skipped")
                continue
            series.checkout(tree, commit)
            req.progress.say(f"  conformance: {len(missing)} snippets at {name}")
            for s in missing:
                got[s["name"]] = conformance.compile_snippet(bdir, template, s["path"])
                cache.put(key[s["name"]], got[s["name"]])
        rec = results.header("kexpand.conformance", case.name, name, at)
        rec.update({"results": got, "snippets": [
            {k: sn[k] for k in ("name", "title", "expect")} for sn in snippets]})
        atomic_write_json(results.record_path(req.results, commit, "gcc")
                          .with_name("conformance.json"), rec)
