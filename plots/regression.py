"""Plotting functions only: each takes data, returns nothing, writes files."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt          # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter   # noqa: E402


def human_bytes(v, _pos=None):
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if v >= div:
            return f"{v / div:g} {unit}"
    return f"{v:g} B"


def series_plot(points, lines, out_base, title, ylabel, log=True,
                formatter=human_bytes):
    """One line per file across the ordered series points.
    points: [name]; lines: {file: [value or None per point]}.
    Writes out_base.png and out_base.svg."""
    fig, ax = plt.subplots(figsize=(10, 5.5))
    x = list(range(len(points)))
    markers = "osD^v<>ph*"
    for i, (label, ys) in enumerate(lines.items()):
        xs = [xi for xi, y in zip(x, ys) if y is not None]
        vs = [y for y in ys if y is not None]
        if vs:
            ax.plot(xs, vs, marker=markers[i % len(markers)], label=label)
    ax.set_xticks(x)
    ax.set_xticklabels(points, rotation=15, ha="right")
    if log:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_formatter(NullFormatter())
    if formatter:
        ax.yaxis.set_major_formatter(FuncFormatter(formatter))
    ax.set_xlabel("series point (in order)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.4)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{out_base}.{ext}", dpi=110)
    plt.close(fig)
