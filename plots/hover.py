"""Values on hover in the matplotlib SVGs: an SVG <title> per bar (the
artist gets a gid; its <g id=...> gets the title) and per data point (a
transparent circle over the point, placed from the axes' own transform,
holding the title). The text is a function of the data alone, so the
same data still gives the same SVG bytes."""
import html


class Hover:
    def __init__(self):
        self.titles = {}        # gid -> text
        self.points = []        # (axes, x, y, text)

    def artist(self, artist, text):
        gid = f"kx-hover-{len(self.titles)}"
        artist.set_gid(gid)
        self.titles[gid] = text

    def point(self, ax, x, y, text):
        if x is not None and y is not None:
            self.points.append((ax, x, y, text))

    def apply(self, fig, svg):
        """The SVG bytes of fig (as savefig wrote them, after the layout)
        with the titles in."""
        s = svg.decode()
        for gid, text in self.titles.items():
            s = s.replace(f'<g id="{gid}">', f'<g id="{gid}"><title>{html.escape(text)}'
                          "</title>", 1)
        if self.points:
            # display coordinates are pixels at fig.dpi; the SVG's are points
            # (72 per inch), y down from the top
            k, height = 72 / fig.dpi, fig.get_figheight() * 72
            dots = []
            for ax, x, y, text in self.points:
                px, py = ax.transData.transform((x, y))
                dots.append(f'<circle cx="{px * k:.2f}" cy="{height - py * k:.2f}" r="5" '
                            'fill="#000" fill-opacity="0" pointer-events="all"><title>'
                            f"{html.escape(text)}</title></circle>")
            s = s.replace("</svg>", '<g id="kx-hover">\n' + "\n".join(dots) + "\n</g>\n</svg>")
        return s.encode()


def value_text(v, unit):
    """A value as its title says it: exact, with its unit."""
    if v is None:
        return "not measured"
    if unit == "bytes":
        return f"{v:,.0f} bytes"
    if unit == "s":
        return f"{v:.3f} s" if v >= 1 else f"{v * 1000:.1f} ms"
    if unit == "kB":
        return f"{v:,.0f} kB"
    return f"{v:,.6g}"
