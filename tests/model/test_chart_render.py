"""``plan --chart``, looked at: every label inside the canvas, the limit's label clear of the legend, the bars numbered
like the table (the order of ``--json``), and the SVG rendered to PNG (resvg) with no ink outside the canvas.

Text boxes are computed from each ``<text>``'s position, anchor, rotation and font size with generous widths (1em for
a CJK character, 0.6em for any other, 0.7em in bold); the renders check what a real font draws. No PNG is decoded:
"no ink in a region" is "the render, with all else hidden or painted white, is byte for byte a blank render"."""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import xml.etree.ElementTree as ET
from unicodedata import east_asian_width

import pytest

from helpers import FIXTURES, require
from verl_mindspeed.cli import main

NS = "http://www.w3.org/2000/svg"
SVG = "{" + NS + "}"
ET.register_namespace("", NS)
MODELS = FIXTURES / "models"
ROTATE = re.compile(r"rotate\(\s*(-?[\d.]+)[\s,]+(-?[\d.]+)[\s,]+(-?[\d.]+)\s*\)")
#: (model, nnodes, gpus per node, --top, --lang): 10 bars in English and in Chinese, one bar under a title wider
#: than the plot, and the chart's most bars (24 of the 30 rows), in Chinese.
CASES = [("Qwen3-30B-A3B", 2, 8, 10, "en"), ("Qwen3-30B-A3B", 2, 8, 10, "zh"), ("Qwen3-8B", 1, 8, 1, "en"),
         ("Moonlight-16B-A3B-Instruct", 2, 8, 30, "zh")]
MOST_BARS = 24
BAND = 2  # px along each edge of the canvas where nothing may be drawn
FAMILIES = ("DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial", "Helvetica", "FreeSans", "Open Sans")


@pytest.fixture(scope="module", params=CASES, ids=[f"{m}-{n}x{g}-top{k}-{lang}" for m, n, g, k, lang in CASES])
def chart(request, tmp_path_factory):
    """``(root, svg text, --json layouts)`` of one ``plan --json --chart`` run per case."""
    model, nnodes, gpus, top, lang = request.param
    path = tmp_path_factory.mktemp("chart") / "plan.svg"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["plan", "--model", str(MODELS / model), "--nnodes", str(nnodes), "--n-gpus-per-node", str(gpus),
                     "--top", str(top), "--lang", lang, "--json", "--chart", str(path)])
    assert code == 0
    text = path.read_text(encoding="utf-8")
    layouts = json.loads(out.getvalue())["layouts"]
    assert len(layouts) == top
    return ET.fromstring(text), text, layouts


# --- geometry -----------------------------------------------------------------------------------------------------

def _parents(root):
    return {child: parent for parent in root.iter() for child in parent}


def _inherited(elem, parents, attr, default):
    while elem is not None:
        if elem.get(attr) is not None:
            return elem.get(attr)
        elem = parents.get(elem)
    return default


def _width(text: str, size: float, bold: bool) -> float:
    return size * sum(1.0 if east_asian_width(ch) in "WF" else (0.7 if bold else 0.6) for ch in text)


def _text_box(elem, parents):
    """``(x0, y0, x1, y1)`` holding the glyphs of a ``<text>``: ascent 1em, descent 0.3em, turned by its rotate()."""
    size = float(_inherited(elem, parents, "font-size", 16))
    bold = _inherited(elem, parents, "font-weight", "normal") == "bold"
    w = _width("".join(elem.itertext()), size, bold)
    x, y = float(elem.get("x", 0)), float(elem.get("y", 0))
    x0 = x - w * {"start": 0, "middle": 0.5, "end": 1}[_inherited(elem, parents, "text-anchor", "start")]
    corners = [(px, py) for px in (x0, x0 + w) for py in (y - size, y + 0.3 * size)]
    turn = ROTATE.search(elem.get("transform", ""))
    if turn:
        a, cx, cy = (float(v) for v in turn.groups())
        c, s = math.cos(math.radians(a)), math.sin(math.radians(a))
        corners = [(cx + (px - cx) * c - (py - cy) * s, cy + (px - cx) * s + (py - cy) * c) for px, py in corners]
    xs, ys = [p[0] for p in corners], [p[1] for p in corners]
    return min(xs), min(ys), max(xs), max(ys)


def _rect_box(elem):
    x, y = float(elem.get("x", 0)), float(elem.get("y", 0))
    return x, y, x + float(elem.get("width")), y + float(elem.get("height"))


def _union(boxes):
    boxes = list(boxes)
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _size(root):
    return float(root.get("width")), float(root.get("height"))


def _legend_box(root, parents):
    legend = [g for g in root.iter(f"{SVG}g") if g.get("class") == "legend"]
    assert legend, "no legend"
    return _union([_rect_box(r) for g in legend for r in g.iter(f"{SVG}rect")] +
                  [_text_box(t, parents) for g in legend for t in g.iter(f"{SVG}text")])


def _limit_label(root):
    (label,) = [t for t in root.iter(f"{SVG}text") if t.get("class") == "limit-label"]
    return label


def _label(layout: dict) -> str:
    """The bar's label ``plan`` gives this --json layout (its table row's sizes and recompute)."""
    text = (f"TP{layout['tensor_model_parallel_size']} PP{layout['pipeline_model_parallel_size']}"
            + (f" VPP{layout['virtual_pipeline_model_parallel_size']}"
               if layout["virtual_pipeline_model_parallel_size"] else "")
            + f" CP{layout['context_parallel_size']}")
    if layout["context_parallel_size"] > 1:
        algo = layout["context_parallel_algo"].replace("_cp_algo", "")
        text += f"/{algo}{layout['ulysses_degree_in_cp'] or ''}"
    ep, etp = layout["expert_model_parallel_size"], layout["expert_tensor_parallel_size"]
    text += f" EP{ep} ETP{etp}" if ep > 1 or etp > 1 else ""
    return text + (f" {layout['recompute']}" if layout["recompute"] != "none" else "")


def test_every_label_lies_inside_the_canvas(chart):
    root, _, _ = chart
    parents, (width, height) = _parents(root), _size(root)
    outside = []
    for text in root.iter(f"{SVG}text"):
        x0, y0, x1, y1 = _text_box(text, parents)
        if x0 < 0 or y0 < 0 or x1 > width or y1 > height:
            outside.append(("".join(text.itertext()), (round(x0), round(y0), round(x1), round(y1))))
    assert not outside, f"labels leaving the {width:g}x{height:g} canvas: {outside}"


def test_the_limit_label_does_not_cover_the_legend(chart):
    root, _, _ = chart
    parents = _parents(root)
    legend, limit = _legend_box(root, parents), _text_box(_limit_label(root), parents)
    assert not _overlap(limit, legend), f"the limit label {limit} overlaps the legend {legend}"


def test_bars_carry_the_table_numbers_in_the_json_order(chart):
    root, _, layouts = chart
    parents = _parents(root)
    bars = [g for g in root.iter(f"{SVG}g") if g.get("class") == "bar"]
    assert len(bars) == min(len(layouts), MOST_BARS)
    centres, numbers = [], []
    for bar, layout in zip(bars, layouts):
        rects = [_rect_box(r) for r in bar.iter(f"{SVG}rect")]
        left, _, right, bottom = _union(rects)
        # the number: an upright text under the bar, centred on it
        under = [t for t in bar.iter(f"{SVG}text") if not t.get("transform") and _text_box(t, parents)[1] >= bottom]
        assert len(under) == 1, f"bar {bar.get('data-layout')}: no single number under it"
        assert abs(float(under[0].get("x")) - (left + right) / 2) < 1
        assert under[0].get("text-anchor") == "middle"
        numbers.append("".join(under[0].itertext()).strip())
        centres.append((left + right) / 2)
        assert bar.get("data-layout") == _label(layout)
        (total,) = [t for t in bar.iter(f"{SVG}text") if _text_box(t, parents)[3] <= _union(rects)[1] + 1]
        assert abs(float("".join(total.itertext())) - layout["memory_gib_per_device"]) <= 0.051
    assert numbers == [str(k) for k in range(1, len(bars) + 1)]
    assert centres == sorted(centres)


# --- renders --------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def render():
    """``render(svg) -> PNG bytes`` on white, with an installed font as sans-serif (resvg's default, Arial, often is
    not), so that the labels are drawn."""
    resvg = require("resvg_py")

    def draw(svg: str, family: str) -> bytes:
        return resvg.svg_to_bytes(svg_string=svg, background="white", sans_serif_family=family)

    probe = _svg({"font-family": "sans-serif", "font-size": "16"}, 60, 24, '<text x="4" y="18">Hg</text>')
    for family in FAMILIES:
        if draw(probe, family) != draw(_blank(60, 24), family):
            return lambda svg: draw(svg, family)
    # A font is a system package, not part of the Python stack: without one the renders skip, visibly, and the
    # box checks above still run.
    pytest.skip(f"resvg finds none of the fonts {FAMILIES}: the renders cannot show the labels")


def _svg(attrib: dict, width: float, height: float, body: str, view=None) -> str:
    attrs = {k: v for k, v in attrib.items() if k not in ("width", "height", "viewBox")}
    view = " ".join(f"{v:g}" for v in view or (0, 0, width, height))
    attrs.update(width=f"{width:g}", height=f"{height:g}", viewBox=view)
    head = " ".join(f'{k}="{v}"' for k, v in attrs.items())
    return f'<svg xmlns="{NS}" {head}>{body}</svg>'


def _blank(width: float, height: float) -> str:
    return _svg({}, width, height, "")


def _body(text: str) -> str:
    return text[text.index(">", text.index("<svg")) + 1:text.rindex("</svg>")]


def _fragment(elems) -> str:
    return "".join(ET.tostring(e, encoding="unicode") for e in elems)


def _no_ink_in(render, root, elems, box, tmp_path, name) -> None:
    """The ``elems`` drawn alone on the chart's canvas leave ``box`` blank."""
    width, height = _size(root)
    x0, y0, x1, y1 = box
    clip = f'<clipPath id="only"><rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}"/></clipPath>' \
           f'<g clip-path="url(#only)">{_fragment(elems)}</g>'
    png = render(_svg(root.attrib, width, height, clip))
    if png != render(_blank(width, height)):
        (tmp_path / f"{name}.png").write_bytes(png)
        pytest.fail(f"{name}: ink inside {box}; see {tmp_path / name}.png")


def test_render_draws_nothing_outside_the_canvas(chart, render, tmp_path):
    """The chart drawn with a 200 px margin around its canvas, the canvas but a band along its edges painted white:
    a blank picture, so no label runs off (or touches) an edge in the font resvg uses."""
    root, text, _ = chart
    width, height = _size(root)
    m = 200
    cover = f'<rect x="{BAND}" y="{BAND}" width="{width - 2 * BAND:g}" height="{height - 2 * BAND:g}" fill="#fff" ' \
            f'shape-rendering="crispEdges"/>'
    size = (width + 2 * m, height + 2 * m)
    framed = _svg(root.attrib, *size, _body(text) + cover, (-m, -m, *size))
    if render(framed) != render(_blank(*size)):
        (tmp_path / "chart.png").write_bytes(render(text))
        pytest.fail(f"ink outside the canvas or within {BAND} px of its edges; see {tmp_path / 'chart.png'}")


def test_render_keeps_the_limit_label_and_the_legend_apart(chart, render, tmp_path):
    """Neither draws inside the other's box: the limit label's ink in the legend's, the legend's in the label's."""
    root, _, _ = chart
    parents = _parents(root)
    label = _limit_label(root)
    legend = [g for g in root.iter(f"{SVG}g") if g.get("class") == "legend"]
    _no_ink_in(render, root, [label], _legend_box(root, parents), tmp_path, "limit-label-in-legend")
    _no_ink_in(render, root, legend, _text_box(label, parents), tmp_path, "legend-in-limit-label")


def test_render_draws_the_labels_checked_above(chart, render):
    """Not vacuous: the bars' texts (numbers, layouts, totals) and the limit label are drawn, in the font found."""
    root, _, _ = chart
    width, height = _size(root)
    bar_texts = [t for g in root.iter(f"{SVG}g") if g.get("class") == "bar" for t in g.iter(f"{SVG}text")]
    blank = render(_blank(width, height))
    for texts in (bar_texts, [_limit_label(root)]):
        assert render(_svg(root.attrib, width, height, _fragment(texts))) != blank
