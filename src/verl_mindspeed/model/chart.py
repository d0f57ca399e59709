"""Pictures of planned layouts: an SVG (or a self-contained HTML page) of stacked bars, and a text bar.

No plotting library: the SVG is written by hand. One bar per layout, one segment per
memory component (the components of :data:`.memory.COMPONENTS`, which sum to the peak),
a dashed line at the device limit, a legend naming every component.
"""

from __future__ import annotations

from html import escape
from typing import Sequence

from ..i18n import tr
from .memory import COMPONENTS, GIB

__all__ = ["COLORS", "component_names", "render_html", "render_svg", "text_bar"]

COLORS = {
    "weights": "#4e79a7", "gradients": "#76b7b2", "optimizer": "#59a14f", "ref_weights": "#9c755f",
    "activations": "#f28e2b", "logits": "#e15759", "optimizer_step": "#edc948",
    "runtime": "#bab0ac", "comm_buffers": "#d4a6c8", "fragmentation": "#d7d7d7",
}
LETTERS = {"weights": "W", "gradients": "G", "optimizer": "O", "ref_weights": "R", "activations": "A",
           "logits": "L", "optimizer_step": "S", "runtime": ".", "comm_buffers": ".", "fragmentation": "."}


def component_names(lang: str = "en") -> dict[str, str]:
    """Display names of the components, in ``lang``."""
    names = {
        "weights": tr("weights"), "gradients": tr("gradients"), "optimizer": tr("optimizer states"),
        "ref_weights": tr("ref weights"), "activations": tr("activations"), "logits": tr("logits"),
        "optimizer_step": tr("optimizer step"), "runtime": tr("runtime"),
        "comm_buffers": tr("communication buffers"), "fragmentation": tr("allocator slack"),
    }
    return {key: msg.render(lang) for key, msg in names.items()}


def text_bar(breakdown: dict[str, int], limit_gib: float, width: int = 32) -> str:
    """``WWGGGOOAAL..|`` scaled so that ``width`` characters are the device limit (``|``); ``>`` past it."""
    scale = width / max(limit_gib * GIB, 1)
    cells, used = [], 0.0
    for name in COMPONENTS:
        used += breakdown.get(name, 0) * scale
        cells.append((name, used))
    out, start = [], 0.0
    for name, end in cells:
        count = round(end) - round(start)
        out.append(LETTERS[name] * max(count, 0))
        start = end
    bar = "".join(out)
    if len(bar) <= width:
        return bar.ljust(width) + "|"
    return bar[:width] + "|" + ">"


def render_svg(rows: Sequence[tuple[str, dict[str, int], bool]], limit_gib: float, *, title: str = "",
               lang: str = "en") -> str:
    """An SVG of one stacked bar per ``(label, breakdown bytes, fits)`` row, with the device limit."""
    names = component_names(lang)
    top = max([limit_gib] + [sum(b.values()) / GIB for _, b, _ in rows]) * 1.08
    left, bar_w, gap, plot_h, base = 70, 46, 22, 320, 380
    width = max(left + len(rows) * (bar_w + gap) + 250, 520)
    y = lambda gib: base - plot_h * gib / top  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{base + 150}" '
           f'font-family="sans-serif" font-size="11">',
           f'<title>{escape(title)}</title>',
           f'<text x="{left}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>']
    gib_label = tr("GiB per device").render(lang)
    out.append(f'<text x="14" y="{base - plot_h / 2}" transform="rotate(-90 14 {base - plot_h / 2})">'
               f'{escape(gib_label)}</text>')
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10**4, 10**5, 10**6)
                if top / s <= 8)
    for tick in range(0, int(top) + 1, step):
        out.append(f'<line x1="{left - 4}" x2="{width - 240}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#eee"/>'
                   f'<text x="{left - 8}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick}</text>')
    for i, (label, breakdown, fits) in enumerate(rows):
        x = left + i * (bar_w + gap) + gap / 2
        out.append(f'<g class="bar" data-layout="{escape(label)}" data-fits="{str(fits).lower()}">')
        level = 0.0
        for name in COMPONENTS:
            gib = breakdown.get(name, 0) / GIB
            if gib <= 0:
                continue
            top_y, bottom_y = y(level + gib), y(level)
            out.append(f'<rect class="segment" data-component="{name}" x="{x:.1f}" y="{top_y:.1f}" width="{bar_w}" '
                       f'height="{bottom_y - top_y:.2f}" fill="{COLORS[name]}"><title>{escape(names[name])}: '
                       f'{gib:.1f} GiB</title></rect>')
            if bottom_y - top_y >= 12:
                out.append(f'<text x="{x + bar_w / 2:.1f}" y="{(top_y + bottom_y) / 2 + 4:.1f}" text-anchor="middle" '
                           f'font-size="9">{gib:.1f}</text>')
            level += gib
        out.append(f'<text x="{x + bar_w / 2:.1f}" y="{y(level) - 4:.1f}" text-anchor="middle" font-weight="bold">'
                   f'{level:.1f}</text>')
        out.append(f'<text x="{x + bar_w / 2:.1f}" y="{base + 14}" text-anchor="end" '
                   f'transform="rotate(-40 {x + bar_w / 2:.1f} {base + 14})">{escape(label)}</text></g>')
    limit_text = tr("usable limit {gib:g} GiB", gib=round(limit_gib, 1)).render(lang)
    out.append(f'<line class="limit" x1="{left - 4}" x2="{width - 240}" y1="{y(limit_gib):.1f}" '
               f'y2="{y(limit_gib):.1f}" stroke="#c00" stroke-width="2" stroke-dasharray="6 4"/>'
               f'<text class="limit-label" x="{width - 236}" y="{y(limit_gib) + 4:.1f}" fill="#c00">'
               f'{escape(limit_text)}</text>')
    for j, name in enumerate(COMPONENTS):
        ly = 40 + j * 18
        out.append(f'<g class="legend" data-component="{name}"><rect x="{width - 180}" y="{ly}" width="12" '
                   f'height="12" fill="{COLORS[name]}"/><text x="{width - 162}" y="{ly + 10}">'
                   f'{escape(names[name])}</text></g>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render_html(rows: Sequence[tuple[str, dict[str, int], bool]], limit_gib: float, *, title: str = "",
                lang: str = "en") -> str:
    """A self-contained HTML page holding :func:`render_svg`."""
    svg = render_svg(rows, limit_gib, title=title, lang=lang)
    return (f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'</head>\n<body>\n{svg}</body></html>\n')
