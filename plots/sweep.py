"""The report of one `make sweep`: sweep.md and the effect plot, from
results/sweep/<point>/<file>/sweep.json (written by bench/sweep.py)."""
from .hover import Hover
from .regression import human_bytes, plt, save

TOP = 15


def effect_plot(data, out_base):
    """Horizontal bars: each top option's effect ratio (median bytes on /
    off, log scale), a dot where toggling it alone confirmed it."""
    rows = [r for r in data["options"] if r.get("effect_ratio")][:TOP][::-1]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.8))
    y = range(len(rows))
    bars = ax.barh(list(y), [r["effect_ratio"] for r in rows], color="#4c72b0",
                   label="median bytes on / off, over the configs")
    hover = Hover()
    for r, bar in zip(rows, bars.patches):
        hover.artist(bar, f"{r['option']}: x{r['effect_ratio']} (median -E bytes "
                     f"{r['median_bytes_on']:,} on, {r['median_bytes_off']:,} off; "
                     f"on in {r['configs_on']} configs, off in {r['configs_off']})")
    conf = [(i, r["confirmed_ratio"]) for i, r in enumerate(rows)
            if isinstance(r.get("confirmed_ratio"), (int, float))]
    if conf:
        ax.plot([c for _, c in conf], [i for i, _ in conf], "o", color="#dd8452",
                label="toggled alone on the base config")
        for i, c in conf:
            hover.point(ax, c, i, f"{rows[i]['option']} toggled alone on the base "
                        f"config: x{c}")
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(list(y), [r["option"] for r in rows], fontsize=8)
    ax.set_xlabel("effect on -E bytes (ratio, log scale)")
    n_ok = sum(c["status"] == "ok" for c in data["configs"] if not c.get("toggles"))
    ax.set_title(f"{data['file']} at {data['point']}: options by effect on "
                 f"expansion\n{n_ok} configurations, {data['package']}", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    return save(fig, out_base, hover)


def markdown(data, top=10):
    ok = [c for c in data["configs"] if c["status"] == "ok"]
    sizes = [c["bytes"] for c in ok if not c.get("toggles")]
    out = [f"# Sweep: {data['file']} at {data['point']}", "",
           f"- commit `{data['commit'][:12]}`, {data['package']}, {data['compiler']}",
           f"- reproduce: `{data['make_command']}`",
           f"- {len(sizes)} configurations measured"
           + (f": {min(sizes):,} to {max(sizes):,} bytes of -E output" if sizes else "")
           + f"; options that compile the file: {', '.join(data['file_options']) or 'none found'}",
           "", f"## Top {top} options by effect", "",
           "| # | option | configs on | off | median bytes on | off | effect | confirmed alone |",
           "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for i, r in enumerate(data["options"][:top], 1):
        c = r.get("confirmed_ratio")
        out.append(f"| {i} | `{r['option']}` | {r['configs_on']} | {r['configs_off']} | "
                   f"{r['median_bytes_on']:,} | {r['median_bytes_off']:,} | "
                   f"{r['effect_ratio']}x | "
                   f"{f'{c}x' if isinstance(c, (int, float)) else r.get('confirmed_note', '-')} |")
    out += ["", "## Configurations", "",
            "| id | how | .config sha256 | status | -E bytes |", "|---|---|---|---|---:|"]
    for c in data["configs"]:
        out.append(f"| {c['id']} | {c['kind']} | `{c['config_sha256']}` | {c['status']} | "
                   f"{human_bytes(c['bytes']) if c['status'] == 'ok' else '-'} |")
    return "\n".join(out) + "\n"
