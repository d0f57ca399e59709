"""``verl-mindspeed features``: the catalogue as a table, Markdown or JSON."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from .. import catalog
from ..catalog import Feature
from ..report import table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("features", help="list every MindSpeed feature and fused operator, with its keys")
    p.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    p.add_argument("--lang", choices=("en", "zh"), default="en")
    p.set_defaults(run=run)


def feature_json(f: Feature) -> dict[str, Any]:
    return {
        "id": f.id, "name": f.name, "name_zh": f.name_zh, "kind": f.kind, "status": f.status, "source": f.source,
        "keys": list(f.seed_keys), "aliases": list(f.aliases), "description": f.description,
        "description_zh": f.description_zh, "companions": list(f.companions), "rules": list(f.rules),
        "notes": list(f.notes), "notes_zh": list(f.notes_zh),
        "flags": [{k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(fl).items()} for fl in f.flags],
    }


def as_json() -> str:
    from ..rules import RULES

    return json.dumps({"features": [feature_json(f) for f in catalog.FEATURES],
                       "rules": [r.to_json() for r in RULES]}, indent=2, ensure_ascii=False)


def as_table(lang: str) -> str:
    zh = lang == "zh"
    rows = [["id", "名称" if zh else "name", "类型" if zh else "kind", "状态" if zh else "status",
             "配置参数" if zh else "keys"]]
    for f in catalog.FEATURES:
        for i, key in enumerate(f.seed_keys):
            rows.append([f.id if i == 0 else "", (f.name_zh if zh else f.name) if i == 0 else "",
                         f.kind if i == 0 else "", f.status if i == 0 else "", key])
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
