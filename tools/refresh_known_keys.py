"""Refresh the known-key universe shipped in the package.

Reads MindSpeed's registered arguments and Megatron-LM's training arguments from
the reference catalogues (extracted from their sources, one entry per release
branch), and the field names of megatron-core's ``TransformerConfig`` and
``MLATransformerConfig`` from the installed megatron-core, then writes
``src/verl_mindspeed/catalog/data/known_keys.json``.

    python tools/refresh_known_keys.py --reference ../shared/reference --upstream ../shared/upstream

MindSpeed release branches the reference catalogue lacks (core_r0.17.0, core_r0.18.0) are read from their
archives in ``--upstream`` by ``tools/extract_upstream_args.py``, which gives the reference's entries exactly on
every branch the reference has (checked by ``tests/conformance/test_stack_facts.py``).
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


def _manifest_commit(upstream: Path, archive: str) -> str:
    """The commit the upstream manifest (its README's table) gives for an archive."""
    for line in (upstream / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 4 and cells[1] == archive:
            return cells[4]
    return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, required=True, help="folder with mindspeed_args.json")
    parser.add_argument("--upstream", type=Path, default=None, help="folder with the MindSpeed archives")
    ns = parser.parse_args()
    ms = json.loads((ns.reference / "mindspeed_args.json").read_text())
    if ns.upstream is not None:
        from extract_upstream_args import extract

        for archive in sorted(ns.upstream.glob("mindspeed-*.tar.gz")):
            release = archive.name[len("mindspeed-"):-len(".tar.gz")]
            if release not in ms:
                ms[release] = {"commit": _manifest_commit(ns.upstream, archive.name),
                               "args": extract(archive, "mindspeed")}
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
