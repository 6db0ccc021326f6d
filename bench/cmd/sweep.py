"""make sweep FILE=... POINT=... N=16: which config options multiply a
file's expansion. FILE is measured at POINT under N configurations that
compile it: the named ones (the case's base config + fragment, defconfig +
fragment) and random ones (`make randconfig` with a recorded KCONFIG_SEED;
KCONFIG_ALLCONFIG holds the options FILE's Makefiles compile it under and
the fragment's options those depend on (Sweep.pins), so FILE stays
compiled while everything else, X86_5LEVEL included, varies). Each needs only its config and the one
object (Kbuild prepares what the object needs), not a kernel.

The options that differ between the configs are ranked by the median
bytes with the option on against off; the top CONFIRM candidates are
confirmed by toggling each alone on the base config. Writes
results/sweep/<point>/<file with / as _>/options.csv and sweep.json; the
plot is drawn by report.py. Every configuration is kept (seed, .config
hash, bytes; the .config itself in the work directory)."""
import hashlib
import math
import os
import re
import shlex
import statistics
import sys
from pathlib import Path

from kbuild import build, builddir, kcmd, sandbox, series, workdir
from kbuild.proc import run
from kbuild.util import KexpandError, atomic_write, atomic_write_json, log

from .. import results
from ..measure.cache import At, Cache
from ..measure.expansion import measure_file
from .inputs import file_slug, open_tree

CONFIRM = 5
OPTION_COLUMNS = ["option", "configs_on", "configs_off", "median_bytes_on",
                  "median_bytes_off", "effect_ratio", "confirmed_ratio"]


def read_config(path):
    """{CONFIG_X: 'y' | 'm' | value} of the options set; 'n' ones absent."""
    out = {}
    for line in Path(path).read_text().splitlines():
        m = re.match(r"(CONFIG_\w+)=(.*)", line)
        if m:
            out[m.group(1)] = m.group(2)
        m = re.match(r"# (CONFIG_\w+) is not set", line)
        if m:
            out.pop(m.group(1), None)
    return out


def file_options(tree, rel):
    """The options FILE's Makefiles compile it under: `obj-$(CONFIG_X) +=
    name.o` in its directory, `obj-$(CONFIG_Y) += dir/` above it."""
    opts, path = [], Path(rel)
    target = path.stem + ".o"
    d = path.parent
    while str(d) not in (".", ""):
        for mk in ("Makefile", "Kbuild"):
            p = Path(tree) / d / mk
            if p.exists():
                text = p.read_text(errors="replace").replace("\\\n", " ")
                for m in re.finditer(r"^obj-\$\((CONFIG_\w+)\)\s*\+?=([^\n]*)", text, re.M):
                    if target in m.group(2).split():
                        opts.append(m.group(1))
        target, d = d.name + "/", d.parent
    return sorted(set(opts))


def rank(configs, min_side=2):
    """Rows of OPTION_COLUMNS (confirmed_ratio empty) for every option on
    in at least min_side measured configs and off in at least min_side,
    sorted by how far the effect ratio is from 1 (either way)."""
    ok = [c for c in configs if c["status"] == "ok"]
    names = sorted({o for c in ok for o in c["options"]})
    rows = []
    for o in names:
        on = [c["bytes"] for c in ok if c["options"].get(o) in ("y", "m")]
        off = [c["bytes"] for c in ok if c["options"].get(o) not in ("y", "m")]
        if len(on) < min_side or len(off) < min_side:
            continue
        mon, moff = statistics.median(on), statistics.median(off)
        rows.append({"option": o, "configs_on": len(on), "configs_off": len(off),
                     "median_bytes_on": round(mon), "median_bytes_off": round(moff),
                     "effect_ratio": round(mon / moff, 4) if moff else None,
                     "confirmed_ratio": ""})
    rows.sort(key=lambda r: (-abs(math.log(r["effect_ratio"])) if r["effect_ratio"]
                             else 0, r["option"]))
    return rows


def stepwise(configs, rows, steps=CONFIRM * 2):
    """Forward selection on log bytes: repeatedly the option whose on/off
    split explains most of what is left (mean difference weighted by the
    split's balance), then its effect taken out. Unlike a plain median
    split, an option that only rode along with a stronger one explains
    nothing once that one is taken out. Returns option names in order."""
    ok = [c for c in configs if c["status"] == "ok" and c["bytes"] > 0]
    resid = [math.log(c["bytes"]) for c in ok]
    mean = statistics.fmean(resid) if resid else 0.0
    resid = [r - mean for r in resid]
    ons = {r["option"]: [c["options"].get(r["option"]) in ("y", "m") for c in ok]
           for r in rows}
    order = []
    for _ in range(min(steps, len(ons))):
        best, score, diff = None, 1e-9, 0.0
        for o, on in ons.items():
            if o in order:
                continue
            a = [x for x, f in zip(resid, on) if f]
            b = [x for x, f in zip(resid, on) if not f]
            if not a or not b:
                continue
            d = statistics.fmean(a) - statistics.fmean(b)
            sc = abs(d) * math.sqrt(len(a) * len(b) / len(on))
            if sc > score:
                best, score, diff = o, sc, d
        if best is None:
            break
        order.append(best)
        frac = sum(ons[best]) / len(ons[best])
        resid = [x - diff * ((1 if f else 0) - frac) for x, f in zip(resid, ons[best])]
    return order


def final_order(rows):
    """Options confirmed to change the bytes when toggled alone first, by
    that confirmed effect; then the unconfirmed ones in their candidate
    order; last those confirmed to change nothing (a median split over few
    random configs can credit an option with another's effect)."""
    def key(i_r):
        i, r = i_r
        c = r.get("confirmed_ratio")
        if isinstance(c, (int, float)) and c > 0:
            e = abs(math.log(c))
            return (0, -e, i) if e > 0.005 else (2, 0, i)
        return (1, 0, i)
    return [r for _, r in sorted(enumerate(rows), key=key)]


class Sweep:
    """The configurations of one sweep, in build dirs named by a fixed-
    length id (line markers may name the build dir; equal lengths keep
    bytes comparable)."""

    def __init__(self, req, case, tree, commit, rel):
        self.req, self.case, self.tree, self.commit, self.rel = req, case, tree, commit, rel
        self.cc = "gcc"
        self.cache = Cache(req.work)

    def bdir(self, cid):
        return Path(self.tree) / f"kb-{self.commit[:12]}-sw{cid}"

    def make(self, bdir, *targets, env=None):
        ro = [v for k, v in (env or {}).items() if k == "KCONFIG_ALLCONFIG"]
        run(sandbox.wrap(["make", "-s", "-C", str(self.tree), f"O={bdir.name}",
                          *build.make_args(self.cc), *targets], bdir, env=env, ro=ro),
            env=env, what=f"make {' '.join(targets)}", klass="build")

    def measure(self, cid, kind, how):
        """Configure a build dir with `how(bdir)`, build FILE's object,
        measure its -E bytes. Cached by the .config's hash."""
        bdir = self.bdir(cid)
        bdir.mkdir(parents=True, exist_ok=True)
        how(bdir)
        self.make(bdir, "olddefconfig")
        text = (bdir / ".config").read_bytes()
        # a resolved .config (olddefconfig's output) named by its content,
        # 16 hex as in the sweeps' records: not a config identity, which
        # names what decides a config (build.config_id)
        chash = hashlib.sha256(text).hexdigest()[:16]
        rec = {"id": cid, "kind": kind, "config_sha256": chash,
               "options": read_config(bdir / ".config")}
        key = self.cache.sweep_key(At(self.commit, "gcc", build.compiler_version("gcc"),
                                      chash), self.rel)
        got = self.cache.get(key)
        if got is None:
            self.req.progress.say(f"  config {cid} ({kind}): building {kcmd.obj_of(self.rel)}")
            b = build.build(self.tree, bdir, self.cc, [kcmd.obj_of(self.rel)],
                            self.req.jobs)
            if not b.ok:
                got = {"status": "not-built", "log_tail": b.log_tail[-1500:]}
            else:
                e = measure_file(bdir, self.rel)
                got = {"status": "ok", "bytes": e["expanded_bytes"],
                       "longest_line_bytes": e["longest_line_bytes"],
                       "hot": (e.get("hot_lines") or [{}])[0].get("at")}
            self.cache.put(key, got)
        rec.update(got)
        self.req.progress.say(f"  config {cid} ({kind}): {rec['status']}"
                              + (f", {rec['bytes']:,} bytes" if rec["status"] == "ok" else ""))
        return rec

    def named(self, base):
        """base + the case's fragment, as every other measurement configures
        (builddir.configure; an option the base cannot take is a warning)."""
        cfg = build.Config(self.case.config, base=base, strict=False)
        return lambda bdir: builddir.configure(self.tree, bdir, self.cc, cfg)

    def random(self, seed, allconfig):
        def how(bdir):
            self.make(bdir, "randconfig", env=dict(
                os.environ, KCONFIG_SEED=str(seed),
                KCONFIG_ALLCONFIG=str(allconfig)))
        return how

    def pins(self, own):
        """The options the random configs keep: FILE's own options and the
        case fragment's options without which those do not stay on after
        olddefconfig (their dependencies, like XEN_PV's PARAVIRT). Found
        by setting each fragment option in turn to the opposite value on
        base + fragment and running olddefconfig: no build. A file with no
        Makefile option found keeps the whole fragment. Every other option, X86_5LEVEL
        included, is left to randconfig: an option kept on in every config
        could never be ranked."""
        frag = build.fragment_options(self.case.config)
        bdir = self.bdir("pins")
        bdir.mkdir(parents=True, exist_ok=True)
        self.make(bdir, self.req.config_base)
        base_text = (bdir / ".config").read_text()

        def keeps(opts):
            atomic_write(bdir / ".config", base_text + "".join(
                f"{o}={v}\n" if v != "n" else f"# {o} is not set\n"
                for o, v in opts.items()))
            self.make(bdir, "olddefconfig")
            have = read_config(bdir / ".config")
            return all(have.get(o) in ("y", "m") for o in own)
        if not own:
            log(f"sweep: no Makefile option found for {self.rel}; the random "
                "configs keep the whole fragment")
            return frag
        keep = dict(frag, **{o: frag.get(o, "y") for o in own})
        if not keeps(keep):
            raise KexpandError(f"{self.rel} is not compiled under {self.req.config_base} "
                               f"+ the case's fragment ({', '.join(own)} do not stay "
                               "on after olddefconfig): add what they depend on to "
                               f"{self.case.config}", "build")
        for o in frag:
            if o in own:
                continue
            # the opposite value, as randconfig may pick it (dropping the
            # line would leave the base config's value, often the same)
            trial = dict(keep, **{o: "y" if frag[o] == "n" else "n"})
            if keeps(trial):
                keep = {k: v for k, v in keep.items() if k != o}
        return keep

    def toggled(self, base_cfg, option, value):
        def how(bdir):
            lines = [l for l in base_cfg.splitlines()
                     if not re.match(rf"(# )?{option}[= ]", l)]
            lines.append(f"{option}={value}" if value != "n" else f"# {option} is not set")
            atomic_write(bdir / ".config", "\n".join(lines) + "\n")
        return how


def cmd_sweep(req, case):
    if not req.file or not req.point:
        raise KexpandError("give FILE= and POINT=: make sweep "
                           "FILE=arch/x86/xen/setup.c POINT=laight-v4 [N=16]")
    if req.kernel:
        raise KexpandError("make sweep runs on the packaged tree (KERNEL= is not "
                           "supported yet): drop KERNEL=")
    focus = [f for f, _ in case.focus]
    with workdir.lock(req.work):
        tree, repo, package, (commit,) = open_tree(req, case, [req.point], [req.file],
                                                   focus)
        series.checkout(tree, commit)
        sw = Sweep(req, case, tree, commit, req.file)
        own = file_options(tree, req.file)
        req.progress.say(f"  finding what keeps {', '.join(own) or req.file} on "
                         "(olddefconfig trials, no build)")
        pinned = sw.pins(own)
        allconfig = workdir.sweep_allconfig(req.work)
        atomic_write(allconfig, "".join(f"{o}={v}\n" if v != "n" else f"# {o} is not set\n"
                                        for o, v in pinned.items()))
        n_random = max(0, req.sweep_n - 2)
        req.progress.total = 2 + n_random + CONFIRM
        configs = []
        for cid, kind, how in (
                ("base0000", f"{req.config_base} + fragment", sw.named(req.config_base)),
                ("defc0000", "defconfig + fragment", sw.named("defconfig")),
                *((f"r{seed:07d}", f"randconfig KCONFIG_SEED={seed}",
                   sw.random(seed, allconfig)) for seed in range(1, n_random + 1))):
            req.progress.step(f"sweep {req.point}: {kind}")
            rec = sw.measure(cid, kind, how)
            rec["seed"] = int(cid[1:]) if cid.startswith("r") else None
            configs.append(rec)
        # the pinned options vary only between the named configs: they keep
        # FILE compiled and are not candidates
        rows = [r for r in rank(configs) if r["option"] not in pinned]
        lead = stepwise(configs, rows)
        rows.sort(key=lambda r: lead.index(r["option"]) if r["option"] in lead else len(lead))
        base = configs[0]
        if base["status"] != "ok":
            raise KexpandError(f"{req.file} does not build under the base config "
                               f"({base['kind']}):\n{base.get('log_tail', '')}", "build")
        base_text = (sw.bdir("base0000") / ".config").read_text()
        for i, r in enumerate(rows[:CONFIRM], 1):
            o = r["option"]
            on = base["options"].get(o) in ("y", "m")
            req.progress.step(f"sweep {req.point}: confirm {o} "
                              f"({'off' if on else 'on'} alone on the base config)")
            t = sw.measure(f"t{i:07d}", f"base with {o}={'n' if on else 'y'}",
                           sw.toggled(base_text, o, "n" if on else "y"))
            took = (t["options"].get(o) in ("y", "m")) != on
            t["toggles"] = o
            configs.append(t)
            if t["status"] == "ok" and took:
                b_on, b_off = (base["bytes"], t["bytes"]) if on else (t["bytes"], base["bytes"])
                r["confirmed_ratio"] = round(b_on / b_off, 4) if b_off else ""
            else:
                r["confirmed_note"] = ("olddefconfig undid the toggle (dependencies)"
                                       if not took else f"the toggled config: {t['status']}")
        rows = final_order(rows)
        out = req.results / "sweep" / results.safe_name(req.point) / file_slug(req.file)
        varying = {r["option"] for r in rows} | set(own) | set(pinned)
        atomic_write_json(out / "sweep.json", {
            "point": req.point, "commit": commit, "file": req.file,
            "package": package, "compiler": build.compiler_version("gcc"),
            "file_options": own, "pinned": sorted(pinned),
            "allconfig": allconfig.read_text(),
            "command": shlex.join(sys.argv),
            "make_command": f"make sweep FILE={req.file} POINT={req.point} N={req.sweep_n}",
            "configs": [dict(c, options={o: v for o, v in c["options"].items()
                                         if o in varying}) for c in configs],
            "options": rows})
        atomic_write(out / "options.csv", results.csv_text(OPTION_COLUMNS, rows))
    log(f"sweep: {sum(c['status'] == 'ok' for c in configs)} of {len(configs)} "
        f"configs measured; top option: {rows[0]['option'] if rows else '(none varies)'}")
    print(out)
    return 0
