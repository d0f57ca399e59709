"""Pictures of planned layouts: an SVG (or a self-contained HTML page) of stacked bars, and a text bar.

No plotting library: the SVG is written by hand. One bar per layout, numbered 1..K like the rows of plan's table,
one segment per memory component (the components of :data:`.memory.COMPONENTS`, which sum to the peak), a dashed
line at the device limit, a legend naming every component and, last, the limit. The canvas is sized from generous
text widths (:func:`text_width`) so that no label leaves it in any usual font, Chinese included.
"""

from __future__ import annotations

import math
from html import escape
from typing import Sequence
from unicodedata import east_asian_width

from ..i18n import tr
from .memory import COMPONENTS, GIB

__all__ = ["COLORS", "component_names", "render_html", "render_svg", "text_bar", "text_width"]

COLORS = {
    "weights": "#4e79a7", "gradients": "#76b7b2", "optimizer": "#59a14f", "ref_weights": "#9c755f",
    "activations": "#f28e2b", "logits": "#e15759", "optimizer_step": "#edc948",
    "runtime": "#bab0ac", "comm_buffers": "#d4a6c8", "fragmentation": "#d7d7d7",
}
LETTERS = {"weights": "W", "gradients": "G", "optimizer": "O", "ref_weights": "R", "activations": "A",
           "logits": "L", "optimizer_step": "S", "runtime": ".", "comm_buffers": ".", "fragmentation": "."}
LIMIT = "#c00"
#: The SVG's geometry in px: text size, outer margin, bar width and the gap between bars, the plot's height and the
#: baseline of its bars, the slant of the layout labels in degrees.
FONT, PAD, BAR_W, GAP, PLOT_H, BASE, SLANT = 11, 8, 46, 22, 320, 380, 40
PITCH = BAR_W + GAP


def component_names(lang: str = "en") -> dict[str, str]:
    """Display names of the components, in ``lang``."""
    names = {
        "weights": tr("weights"), "gradients": tr("gradients"), "optimizer": tr("optimizer states"),
        "ref_weights": tr("ref weights"), "activations": tr("activations"), "logits": tr("logits"),
        "optimizer_step": tr("optimizer step"), "runtime": tr("runtime"),
        "comm_buffers": tr("communication buffers"), "fragmentation": tr("allocator slack"),
    }
    return {key: msg.render(lang) for key, msg in names.items()}


def text_width(text: str, size: float = FONT, bold: bool = False) -> float:
    """A generous estimate of ``text``'s width in px in a sans-serif font: 1em for a wide (CJK) character, 0.6em for
    any other (0.7em in bold); the usual fonts (DejaVu Sans, Arial, Helvetica) draw these labels narrower."""
    narrow = 0.7 if bold else 0.6
    return size * sum(1.0 if east_asian_width(ch) in "WF" else narrow for ch in text)


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
    """An SVG of one stacked bar per ``(label, breakdown bytes, fits)`` row, numbered 1..K in order (the rows of
    plan's table), with the device limit.

    Every text is kept inside the canvas by sizing it from :func:`text_width`: the left margin leaves room for the
    slanted layout labels, which hang down-left of their bars; the legend, the limit's key last, sits right of the plot.
    """
    names = component_names(lang)
    gib_label, limit_text = tr("GiB per device").render(lang), \
        tr("usable limit {gib:g} GiB", gib=round(limit_gib, 1)).render(lang)
    top = max([limit_gib] + [sum(b.values()) / GIB for _, b, _ in rows]) * 1.08
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10**4, 10**5, 10**6)
                if top / s <= 8)
    ticks = range(0, int(top) + 1, step)
    cos, sin = math.cos(math.radians(SLANT)), math.sin(math.radians(SLANT))
    # the plot's left edge: the axis title and the tick labels, or more if a slanted label reaches further left
    tick_w = max(text_width(str(t)) for t in ticks)
    left = max([PAD + FONT + 16 + tick_w] +
               [text_width(label) * cos + FONT * sin + PAD - GAP / 2 - BAR_W / 2 - i * PITCH
                for i, (label, _, _) in enumerate(rows)])
    right = left + len(rows) * PITCH
    legend_x = right + 24
    label_y = BASE + 30  # the slanted labels' anchor, under the bar numbers
    width = math.ceil(max(legend_x + 18 + max(text_width(t) for t in [limit_text, *names.values()]),
                          PAD + text_width(title, 14, bold=True)) + PAD)
    height = math.ceil(max([label_y + FONT * cos * 0.3] +
                           [label_y + text_width(label) * sin + FONT * cos * 0.3 for label, _, _ in rows]) + PAD)
    y = lambda gib: BASE - PLOT_H * gib / top  # noqa: E731
    axis_x, axis_y = left - 16 - tick_w, BASE - PLOT_H / 2  # the axis title's baseline, right of its glyphs
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="{FONT}">',
           f'<title>{escape(title)}</title>',
           f'<text class="title" x="{PAD}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>',
           f'<text class="axis-label" x="{axis_x:.1f}" y="{axis_y}" text-anchor="middle" '
           f'transform="rotate(-90 {axis_x:.1f} {axis_y})">{escape(gib_label)}</text>']
    for tick in ticks:
        out.append(f'<line x1="{left - 4:.1f}" x2="{right:.1f}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#eee"/>'
                   f'<text class="tick" x="{left - 8:.1f}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick}</text>')
    for number, (label, breakdown, fits) in enumerate(rows, 1):
        x = left + (number - 1) * PITCH + GAP / 2
        middle = x + BAR_W / 2
        out.append(f'<g class="bar" data-row="{number}" data-layout="{escape(label)}" '
                   f'data-fits="{str(fits).lower()}">')
        level = 0.0
        for name in COMPONENTS:
            gib = breakdown.get(name, 0) / GIB
            if gib <= 0:
                continue
            top_y, bottom_y = y(level + gib), y(level)
            out.append(f'<rect class="segment" data-component="{name}" x="{x:.1f}" y="{top_y:.1f}" width="{BAR_W}" '
                       f'height="{bottom_y - top_y:.2f}" fill="{COLORS[name]}"><title>{escape(names[name])}: '
                       f'{gib:.1f} GiB</title></rect>')
            if bottom_y - top_y >= 12:
                out.append(f'<text x="{middle:.1f}" y="{(top_y + bottom_y) / 2 + 4:.1f}" text-anchor="middle" '
                           f'font-size="9">{gib:.1f}</text>')
            level += gib
        out.append(f'<text class="total" x="{middle:.1f}" y="{y(level) - 4:.1f}" text-anchor="middle" '
                   f'font-weight="bold" stroke="#fff" stroke-width="3" paint-order="stroke">{level:.1f}</text>'
                   f'<text class="bar-number" x="{middle:.1f}" y="{BASE + 16}" text-anchor="middle" '
                   f'font-weight="bold">{number}</text>'
                   f'<text class="bar-label" x="{middle:.1f}" y="{label_y}" text-anchor="end" '
                   f'transform="rotate(-{SLANT} {middle:.1f} {label_y})">{escape(label)}</text></g>')
    out.append(f'<line class="limit" x1="{left - 4:.1f}" x2="{right:.1f}" y1="{y(limit_gib):.1f}" '
               f'y2="{y(limit_gib):.1f}" stroke="{LIMIT}" stroke-width="2" stroke-dasharray="6 4"/>')
    for j, name in enumerate(COMPONENTS):
        ly = 40 + j * 18
        out.append(f'<g class="legend" data-component="{name}"><rect x="{legend_x:.1f}" y="{ly}" width="12" '
                   f'height="12" fill="{COLORS[name]}"/><text x="{legend_x + 18:.1f}" y="{ly + 10}">'
                   f'{escape(names[name])}</text></g>')
    ly = 40 + len(COMPONENTS) * 18 + 6
    out.append(f'<g class="limit-key"><line x1="{legend_x:.1f}" x2="{legend_x + 12:.1f}" y1="{ly + 6}" '
               f'y2="{ly + 6}" stroke="{LIMIT}" stroke-width="2" stroke-dasharray="4 2"/><text class="limit-label" '
               f'x="{legend_x + 18:.1f}" y="{ly + 10}" fill="{LIMIT}">{escape(limit_text)}</text></g>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render_html(rows: Sequence[tuple[str, dict[str, int], bool]], limit_gib: float, *, title: str = "",
                lang: str = "en") -> str:
    """A self-contained HTML page holding :func:`render_svg`."""
    svg = render_svg(rows, limit_gib, title=title, lang=lang)
    return (f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'</head>\n<body>\n{svg}</body></html>\n')
