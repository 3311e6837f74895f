"""Line charts as inline SVG text (the report's training curves): no script, no library.

``line_chart(xs, ys, title, xlabel)`` draws one series against its x values with "nice" ticks
(1, 2, 5 times a power of ten) on both axes; the text is deterministic for the same numbers.
"""

import html
import math

WIDTH, HEIGHT = 380, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 14, 26, 38


def nice_ticks(lo, hi, count=5):
    """Round tick values covering [lo, hi]: multiples of 1, 2 or 5 times a power of ten."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0]
    if hi < lo:
        lo, hi = hi, lo
    if hi == lo:
        pad = abs(lo) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / max(count, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    ticks = []
    t = first
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    if ticks[-1] < hi:
        ticks.append(round(t, 12))
    return ticks


def fmt(v):
    """A tick label: 4 significant digits, SI-like suffixes for large magnitudes."""
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:.4g}G"
    if a >= 1e6:
        return f"{v / 1e6:.4g}M"
    if a >= 1e4:
        return f"{v / 1e3:.4g}k"
    return f"{v:.4g}"


def line_chart(xs, ys, title, xlabel="iteration", css_class="chart"):
    """An <svg> element (text) of the points (xs[i], ys[i]); non-finite values are skipped."""
    pts = [(float(x), float(y)) for x, y in zip(xs, ys) if math.isfinite(x) and math.isfinite(y)]
    esc = html.escape
    out = [
        f'<svg class="{esc(css_class)}" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{esc(title)}">',
        f'<text class="chart-title" x="{LEFT}" y="16">{esc(title)}</text>',
    ]
    if not pts:
        out.append(f'<text x="{LEFT}" y="{HEIGHT // 2}">no values</text></svg>')
        return "".join(out)
    xt = nice_ticks(min(p[0] for p in pts), max(p[0] for p in pts))
    yt = nice_ticks(min(p[1] for p in pts), max(p[1] for p in pts))
    x0, x1, y0, y1 = xt[0], xt[-1], yt[0], yt[-1]
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x):
        return LEFT + (x - x0) / (x1 - x0) * pw

    def sy(y):
        return TOP + ph - (y - y0) / (y1 - y0) * ph

    for t in yt:
        y = sy(t)
        out.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + pw}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{esc(fmt(t))}</text>')
    for t in xt:
        x = sx(t)
        out.append(f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP + ph}" y2="{TOP + ph + 4}"/>')
        out.append(f'<text class="tick" x="{x:.1f}" y="{TOP + ph + 16}" text-anchor="middle">{esc(fmt(t))}</text>')
    out.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT + pw}" y1="{TOP + ph}" y2="{TOP + ph}"/>')
    out.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + ph}"/>')
    out.append(
        f'<text class="label" x="{LEFT + pw / 2:.1f}" y="{HEIGHT - 4}" text-anchor="middle">{esc(xlabel)}</text>'
    )
    points = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
    out.append(f'<polyline class="line" points="{points}"/>')
    if len(pts) <= 40:
        out.extend(f'<circle class="dot" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5"/>' for x, y in pts)
    out.append("</svg>")
    return "".join(out)
