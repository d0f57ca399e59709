"""Refresh the known-key universe shipped in the package.

Reads MindSpeed's registered arguments and Megatron-LM's training arguments from
the reference catalogues (extracted from their sources, one entry per release
branch), and the field names of megatron-core's ``TransformerConfig`` and
``MLATransformerConfig`` from the installed megatron-core, then writes
``src/verl_mindspeed/catalog/data/known_keys.json``.

    python tools/refresh_known_keys.py --reference ../shared/reference
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/verl_mindspeed/catalog/data/known_keys.json"
KEEP = ("type", "default", "choices", "action")


def _trim(args: dict) -> dict:
    return {name: {k: spec[k] for k in KEEP if k in spec} for name, spec in sorted(args.items())}


def _transformer_fields() -> dict:
    import megatron.core
    from megatron.core.transformer import MLATransformerConfig, TransformerConfig

    base = {f.name for f in dataclasses.fields(TransformerConfig)}
    mla = {f.name for f in dataclasses.fields(MLATransformerConfig)} - base
    return {
        "megatron_core_version": megatron.core.__version__,
        "fields": sorted(base),
        "mla_fields": sorted(mla),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, required=True, help="folder with mindspeed_args.json")
    ns = parser.parse_args()
    ms = json.loads((ns.reference / "mindspeed_args.json").read_text())
    mg = json.loads((ns.reference / "megatron_training_args.json").read_text())
    data = {
        "mindspeed": {rel: {"commit": v["commit"], "args": _trim(v["args"])} for rel, v in ms.items()},
        "megatron_training": {rel: {"commit": v["commit"], "args": _trim(v["args"])} for rel, v in mg.items()},
        "transformer_config": _transformer_fields(),
    }
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
