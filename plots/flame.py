"""Flame graphs (SVG) from stacks in the folded format
("line;outer;...;inner bytes"), drawn as flamegraph.pl draws them: the root
at the bottom, each frame as wide as the bytes produced inside it, frames
sorted by name. Every frame carries a <title> tooltip (name, bytes, share)."""
import hashlib
import html

WIDTH, ROW, FONT = 1200, 16, 11


def _tree(stacks):
    root = {"name": "", "self": 0, "kids": {}}
    for stack, b in stacks:
        node = root
        for fr in stack.split(";"):
            node = node["kids"].setdefault(fr, {"name": fr, "self": 0, "kids": {}})
        node["self"] += b
    return root


def _total(n):
    n["total"] = n["self"] + sum(_total(k) for k in n["kids"].values())
    return n["total"]


def _depth(n):
    return 1 + max((_depth(k) for k in n["kids"].values()), default=0)


def _colour(name):
    h = int(hashlib.sha1(name.encode()).hexdigest()[:6], 16)
    return f"rgb({205 + h % 50},{(h >> 8) % 180 + 40},{(h >> 16) % 55})"


def flame_svg(stacks, title):
    """The SVG text of a flame graph of `stacks` ([[folded, bytes]])."""
    root = _tree(stacks)
    total = _total(root) or 1
    depth = _depth(root) - 1
    height = (depth + 3) * ROW
    scale = (WIDTH - 20) / total
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="Verdana,sans-serif" '
           f'font-size="{FONT}">',
           '<rect width="100%" height="100%" fill="#fff"/>',
           f'<text x="{WIDTH / 2}" y="{ROW}" text-anchor="middle" font-size="13">'
           f'{html.escape(title)}</text>']

    def draw(n, x, level):
        w = n["total"] * scale
        y = height - (level + 1) * ROW
        if w >= 0.3:
            label = f"{n['name']} ({n['total']:,} bytes, {100 * n['total'] / total:.2f}%)"
            out.append(f'<g><title>{html.escape(label)}</title>'
                       f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{ROW - 1}" '
                       f'fill="{_colour(n["name"])}" rx="1"/>')
            chars = int(w / (FONT * 0.62))
            if chars >= 3:
                text = n["name"] if len(n["name"]) <= chars else n["name"][:chars - 2] + ".."
                out.append(f'<text x="{x + 3:.2f}" y="{y + ROW - 4}">{html.escape(text)}</text>')
            out.append("</g>")
        cx = x
        for k in sorted(n["kids"].values(), key=lambda k: k["name"]):
            draw(k, cx, level + 1)
            cx += k["total"] * scale

    cx = 10.0
    for k in sorted(root["kids"].values(), key=lambda k: k["name"]):
        draw(k, cx, 0)
        cx += k["total"] * scale
    out.append("</svg>")
    return "\n".join(out) + "\n"
