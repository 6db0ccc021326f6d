"""Plotting functions only: each takes data, returns nothing, writes files."""
import io
import sys

from bench.results import atomic_write

from .hover import Hover, value_text


class _Pyplot:
    """matplotlib.pyplot, imported at the first plot (0.3 s that a run
    drawing only text and pages does not pay)."""

    def __getattr__(self, name):
        import matplotlib
        if "matplotlib.pyplot" not in sys.modules:
            matplotlib.use("Agg")
            # the same data gives the same SVG bytes (no date, fixed clip-path
            # ids), so a regenerated page changes in git only where results did
            matplotlib.rcParams["svg.hashsalt"] = "kexpand"
        import matplotlib.pyplot
        return getattr(matplotlib.pyplot, name)


plt = _Pyplot()


def _ticker():
    import matplotlib.ticker
    return matplotlib.ticker


def human_bytes(v, _pos=None):
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if v >= div:
            return f"{v / div:g} {unit}"
    return f"{v:g} B"


def human_seconds(v, _pos=None):
    return f"{v * 1000:g} ms" if v < 1 else f"{v:g} s"


def human_kb(v, _pos=None):
    return human_bytes(v * 1000)


def _y_axis(ax, ylabel, log, formatter, ticks_125=False):
    if log:
        ax.set_yscale("log")
        if ticks_125:
            ax.yaxis.set_major_locator(_ticker().LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_minor_formatter(_ticker().NullFormatter())
    if formatter:
        ax.yaxis.set_major_formatter(_ticker().FuncFormatter(formatter))
    ax.set_ylabel(ylabel)


def unit_of(formatter):
    return {human_bytes: "bytes", human_seconds: "s", human_kb: "kB"}.get(formatter, "")


def save(fig, out_base, hover=None):
    """PNG and SVG side by side, each written atomically (mode 0644); the
    SVG with the hover titles, if any."""
    fig.tight_layout()
    for ext in ("png", "svg"):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, dpi=110,
                    metadata={"Date": None} if ext == "svg" else None)
        data = buf.getvalue()
        if ext == "svg" and hover:
            data = hover.apply(fig, data)
        atomic_write(f"{out_base}.{ext}", data)
    plt.close(fig)


def series_plot(points, lines, out_base, title, ylabel, log=True,
                formatter=human_bytes, errs=None, xlabel="series point (in order)"):
    """One line per file across the ordered series points.
    points: [name]; lines: {file: [value or None per point]}.
    Writes out_base.png and out_base.svg."""
    fig, ax = plt.subplots(figsize=(10, 5.5))
    x = list(range(len(points)))
    markers = "osD^v<>ph*"
    hover, unit = Hover(), unit_of(formatter)
    for i, (label, ys) in enumerate(lines.items()):
        xs = [xi for xi, y in zip(x, ys) if y is not None]
        vs = [y for y in ys if y is not None]
        es = [e for e, y in zip(errs[label], ys) if y is not None] \
            if vs and errs and label in errs else None
        if es is not None:
            ax.errorbar(xs, vs, yerr=es, marker=markers[i % len(markers)],
                        label=label, capsize=3)
        elif vs:
            ax.plot(xs, vs, marker=markers[i % len(markers)], label=label)
        for j, (xi, v) in enumerate(zip(xs, vs)):
            hover.point(ax, xi, v, f"{label} at {points[xi]}: {value_text(v, unit)}"
                        + (f" ± {value_text(es[j], unit)}" if es and es[j] else ""))
    ax.set_xticks(x)
    ax.set_xticklabels(points, rotation=15 if len(points) < 8 else 35, ha="right",
                       fontsize=None if len(points) < 8 else 8)
    _y_axis(ax, ylabel, log, formatter, ticks_125=True)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.4)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    save(fig, out_base, hover)


def pair_bars(files, a_vals, b_vals, a_label, b_label, out_base, title,
              ylabel, log=True, formatter=human_bytes, a_err=None, b_err=None):
    """Grouped bars, A beside B, one group per file."""
    fig, ax = plt.subplots(figsize=(10, 5.5))
    x = list(range(len(files)))
    w = 0.38
    hover, unit = Hover(), unit_of(formatter)
    for side, off, vals, err, name in (("A", -w / 2, a_vals, a_err, a_label),
                                       ("B", w / 2, b_vals, b_err, b_label)):
        bars = ax.bar([i + off for i in x], [v or 0 for v in vals], w, yerr=err,
                      capsize=3, label=f"{side}: {name}")
        for i, bar in enumerate(bars.patches):
            ratio = (f", B/A x{b_vals[i] / a_vals[i]:.4g}" if side == "B" and a_vals[i]
                     and b_vals[i] is not None else "")
            hover.artist(bar, f"{files[i]}, {side} ({name}): {value_text(vals[i], unit)}"
                         + (f" ± {value_text(err[i], unit)}" if err and err[i] else "")
                         + ratio)
    ax.set_xticks(x)
    ax.set_xticklabels(files, rotation=20, ha="right", fontsize=8)
    _y_axis(ax, ylabel, log, formatter)
    ax.set_xlabel("file")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.4)
    ax.legend(fontsize=8)
    save(fig, out_base, hover)


def growth_histogram(ratios, out_base, title):
    """How many files grew by how much (log-spaced bins of B/A)."""
    fig, ax = plt.subplots(figsize=(10, 5))
    lo, hi = min(ratios), max(ratios)
    lo, hi = min(lo, 0.99), max(hi, 1.01)
    n = 40
    edges = [lo * (hi / lo) ** (i / n) for i in range(n + 1)]
    counts, _, patches = ax.hist(ratios, bins=edges, color="tab:blue")
    hover = Hover()
    for i, (c, bar) in enumerate(zip(counts, patches)):
        if c:
            hover.artist(bar, f"B/A {edges[i]:.4g} to {edges[i + 1]:.4g}: {int(c):,} files")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axvline(1.0, color="gray", lw=1)
    ax.set_xlabel("growth ratio B/A of -E bytes (log scale; 1 = unchanged)")
    ax.set_ylabel("number of files (log scale)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    save(fig, out_base, hover)


def totals_plot(points, totals, builds, clean, out_base, title):
    """Two panels over the series points: total bytes, the scan's time."""
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    x = list(range(len(points)))
    a1.plot(x, totals, marker="o")
    hover = Hover()
    for xi, p, t, b, c in zip(x, points, totals, builds, clean):
        hover.point(a1, xi, t, f"{p}: {value_text(t, 'bytes')} of -E output, all C files")
        hover.point(a2, xi, b, f"{p}: scan {value_text(b, 's')}"
                    + ("" if c else " (not from a clean build dir)"))
    a1.yaxis.set_major_formatter(_ticker().FuncFormatter(human_bytes))
    a1.set_ylabel("total -E bytes, all C files")
    a1.grid(True, alpha=0.4)
    a2.plot(x, builds, marker="s", color="tab:red")
    for xi, b, c in zip(x, builds, clean):
        if not c:
            a2.annotate("not from clean", (xi, b), fontsize=7,
                        textcoords="offset points", xytext=(4, 4))
    a2.set_ylabel("scan wall time, s")
    a2.grid(True, alpha=0.4)
    a2.set_xticks(x)
    a2.set_xticklabels(points, rotation=15, ha="right")
    a2.set_xlabel("series point (in order)")
    a1.set_title(title, fontsize=10)
    save(fig, out_base, hover)


def header_bars(by_dir, grew, out_base, title):
    """Two panels of a build's bytes by header: own bytes by directory at B
    (by_dir: [(dir, bytes)], largest first) and the headers whose own bytes
    changed most from A to B (grew: [(header, change)])."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 7))
    hover = Hover()
    names = [d for d, _ in by_dir][::-1]
    vals = [b for _, b in by_dir][::-1]
    for bar, d, b in zip(a1.barh(names, vals, color="tab:blue"), names, vals):
        hover.artist(bar, f"{d}: {value_text(b, 'bytes')} of -E output")
    a1.xaxis.set_major_formatter(_ticker().FuncFormatter(human_bytes))
    a1.set_xlabel("own bytes over the build, at B")
    a1.set_title("by directory of the file the bytes came from", fontsize=9)
    a1.tick_params(axis="y", labelsize=7)
    names = [h for h, _ in grew][::-1]
    vals = [c for _, c in grew][::-1]
    bars = a2.barh(names, vals, color=["tab:red" if v > 0 else "tab:green" for v in vals])
    for bar, h, c in zip(bars, names, vals):
        hover.artist(bar, f"{h}: {c:+,} bytes over the build")
    a2.axvline(0, color="gray", lw=1)
    a2.xaxis.set_major_formatter(_ticker().FuncFormatter(
        lambda v, _p=None: ("-" if v < 0 else "+") + human_bytes(abs(v))))
    a2.set_xlabel("change of own bytes over the build, A -> B")
    a2.set_title("headers whose own bytes changed most", fontsize=9)
    a2.tick_params(axis="y", labelsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save(fig, out_base, hover)
