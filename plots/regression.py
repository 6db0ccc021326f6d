"""Plotting functions only: each takes data, returns nothing, writes files."""
import io

import matplotlib

matplotlib.use("Agg")
# the same data gives the same SVG bytes (no date, fixed clip-path ids), so a
# regenerated page changes in git only where the results did
matplotlib.rcParams["svg.hashsalt"] = "kexpand"
import matplotlib.pyplot as plt          # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter   # noqa: E402

from bench.results import atomic_write                                     # noqa: E402


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
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_minor_formatter(NullFormatter())
    if formatter:
        ax.yaxis.set_major_formatter(FuncFormatter(formatter))
    ax.set_ylabel(ylabel)


def _save(fig, out_base):
    """PNG and SVG side by side, each written atomically (mode 0644)."""
    fig.tight_layout()
    for ext in ("png", "svg"):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, dpi=110,
                    metadata={"Date": None} if ext == "svg" else None)
        atomic_write(f"{out_base}.{ext}", buf.getvalue())
    plt.close(fig)


def series_plot(points, lines, out_base, title, ylabel, log=True,
                formatter=human_bytes, errs=None, xlabel="series point (in order)"):
    """One line per file across the ordered series points.
    points: [name]; lines: {file: [value or None per point]}.
    Writes out_base.png and out_base.svg."""
    fig, ax = plt.subplots(figsize=(10, 5.5))
    x = list(range(len(points)))
    markers = "osD^v<>ph*"
    for i, (label, ys) in enumerate(lines.items()):
        xs = [xi for xi, y in zip(x, ys) if y is not None]
        vs = [y for y in ys if y is not None]
        if vs and errs and label in errs:
            es = [e for e, y in zip(errs[label], ys) if y is not None]
            ax.errorbar(xs, vs, yerr=es, marker=markers[i % len(markers)],
                        label=label, capsize=3)
        elif vs:
            ax.plot(xs, vs, marker=markers[i % len(markers)], label=label)
    ax.set_xticks(x)
    ax.set_xticklabels(points, rotation=15 if len(points) < 8 else 35, ha="right",
                       fontsize=None if len(points) < 8 else 8)
    _y_axis(ax, ylabel, log, formatter, ticks_125=True)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.4)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    _save(fig, out_base)


def pair_bars(files, a_vals, b_vals, a_label, b_label, out_base, title,
              ylabel, log=True, formatter=human_bytes, a_err=None, b_err=None):
    """Grouped bars, A beside B, one group per file."""
    fig, ax = plt.subplots(figsize=(10, 5.5))
    x = list(range(len(files)))
    w = 0.38
    ax.bar([i - w / 2 for i in x], [v or 0 for v in a_vals], w, yerr=a_err,
           capsize=3, label=f"A: {a_label}")
    ax.bar([i + w / 2 for i in x], [v or 0 for v in b_vals], w, yerr=b_err,
           capsize=3, label=f"B: {b_label}")
    ax.set_xticks(x)
    ax.set_xticklabels(files, rotation=20, ha="right", fontsize=8)
    _y_axis(ax, ylabel, log, formatter)
    ax.set_xlabel("file")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.4)
    ax.legend(fontsize=8)
    _save(fig, out_base)


def growth_histogram(ratios, out_base, title):
    """How many files grew by how much (log-spaced bins of B/A)."""
    fig, ax = plt.subplots(figsize=(10, 5))
    lo, hi = min(ratios), max(ratios)
    lo, hi = min(lo, 0.99), max(hi, 1.01)
    n = 40
    edges = [lo * (hi / lo) ** (i / n) for i in range(n + 1)]
    ax.hist(ratios, bins=edges, color="tab:blue")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axvline(1.0, color="gray", lw=1)
    ax.set_xlabel("growth ratio B/A of -E bytes (log scale; 1 = unchanged)")
    ax.set_ylabel("number of files (log scale)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    _save(fig, out_base)


def totals_plot(points, totals, builds, clean, out_base, title):
    """Two panels over the series points: total bytes, full build time."""
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    x = list(range(len(points)))
    a1.plot(x, totals, marker="o")
    a1.yaxis.set_major_formatter(FuncFormatter(human_bytes))
    a1.set_ylabel("total -E bytes, all C files")
    a1.grid(True, alpha=0.4)
    a2.plot(x, builds, marker="s", color="tab:red")
    for xi, b, c in zip(x, builds, clean):
        if not c:
            a2.annotate("not from clean", (xi, b), fontsize=7,
                        textcoords="offset points", xytext=(4, 4))
    a2.set_ylabel("full build wall time, s")
    a2.grid(True, alpha=0.4)
    a2.set_xticks(x)
    a2.set_xticklabels(points, rotation=15, ha="right")
    a2.set_xlabel("series point (in order)")
    a1.set_title(title, fontsize=10)
    _save(fig, out_base)
