"""``verl-mindspeed features``: the catalogue as a table, Markdown or JSON."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from .. import catalog
from ..catalog import Feature
from ..i18n import render, tr, trp
from ..report import table
from ._args import add_common, choice


def add_parser(sub: argparse._SubParsersAction, lang: str = "en") -> argparse.ArgumentParser:
    p = sub.add_parser("features", allow_abbrev=False,
                       help=render(tr("list every MindSpeed feature and fused operator, with its keys"), lang))
    p.add_argument("--format", type=choice(("table", "markdown", "json"), lang), default="table",
                   metavar="{table,markdown,json}", help=render(tr("output format (default: table)"), lang))
    add_common(p, lang)
    p.set_defaults(run=run)
    return p


def feature_json(f: Feature) -> dict[str, Any]:
    return {
        "id": f.id, "name": f.name, "name_zh": render(f.name, "zh"), "kind": f.kind, "status": f.status,
        "source": f.source,
        "keys": [key for key, _ in f.keys], "guide_keys": list(f.seed_keys), "aliases": list(f.aliases),
        "description": f.description,
        "description_zh": render(f.description, "zh"), "companions": list(f.companions), "rules": list(f.rules),
        "notes": list(f.notes), "notes_zh": [render(n, "zh") for n in f.notes],
        "flags": [{k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(fl).items()} for fl in f.flags],
    }


def as_json() -> str:
    from ..rules import RULES

    return json.dumps({"features": [feature_json(f) for f in catalog.FEATURES],
                       "rules": [r.to_json() for r in RULES]}, indent=2, ensure_ascii=False)


#: Column headings and the words of the kind and status columns.
WORDS = {"id": trp("column", "id"), "name": trp("column", "name"), "kind": trp("column", "kind"),
         "status": trp("column", "status"), "keys": trp("column", "keys"),
         "feature": tr("feature"), "fused_op": tr("fused operator"),
         "Preview": tr("Preview"), "Released": tr("Released"), "Dev": tr("Dev")}


def as_table(lang: str) -> str:
    say = lambda word: render(WORDS[word], lang)  # noqa: E731
    rows = [[say(w) for w in ("id", "name", "kind", "status", "keys")]]
    for f in catalog.FEATURES:
        for i, (key, guide) in enumerate(f.keys):
            shown = key + (render(tr("  (the guide's {alias} is an alias)", alias=guide), lang) if guide else "")
            rows.append([f.id if i == 0 else "", render(f.name, lang) if i == 0 else "",
                         say(f.kind) if i == 0 else "", say(f.status) if i == 0 else "", shown])
    return table(rows)


def run(ns: argparse.Namespace) -> int:
    if ns.format == "json":
        print(as_json())
    elif ns.format == "markdown":
        from ..docs_gen import features_markdown

        print(features_markdown(ns.lang), end="")
    else:
        print(as_table(ns.lang))
    return 0
