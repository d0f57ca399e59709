"""The shipped raise-site index holds what the upstream archives give: rebuilt here from MindSpeed's branches,
Megatron-LM's ``megatron/training`` and Megatron-Bridge's archives (no download), each raise site and each call made
inside a try is in the shipped index with the same line in each of those releases, and each site with the same fields,
aliases and enclosing tests."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest
import sources

ROOT = Path(__file__).resolve().parents[2]


def _builder():
    spec = importlib.util.spec_from_file_location("build_raise_index", ROOT / "tools" / "build_raise_index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _site_key(e: dict) -> tuple:
    return e["p"], e["f"], e["fn"], e["x"], tuple(e["t"]), tuple(e["v"])


def _call_key(e: dict) -> tuple:
    return e["p"], e["f"], e["fn"], e["call"], json.dumps(e["h"])


def test_the_shipped_index_holds_what_the_upstream_archives_give():
    up = sources.upstream_dir()
    if up is None or not any(up.glob("mindspeed-*.tar.gz")):
        if sources.required():
            pytest.fail(f"upstream archives missing in {up or 'no folder'}")
        pytest.skip(f"upstream archives missing in {up or 'no folder'}: the index cannot be rebuilt")
    builder = _builder()
    rebuilt = builder.build(up, wheels=False)
    shipped = json.loads(gzip.decompress(builder.OUT.read_bytes()).decode("utf-8"))
    for part, key in (("sites", _site_key), ("caught", _call_key)):
        have = {key(e): e["r"] for e in shipped[part]}
        lost = [k for e in rebuilt[part] for k in [key(e)]
                if k not in have or any(have[k].get(r) != line for r, line in e["r"].items())]
        assert rebuilt[part] and not lost, \
            f"{len(lost)} {part} differ (first: {lost[:2]}): run tools/build_raise_index.py"
    # what each site reads, the copies of settings it reads under another name (a validate_args copy), and the
    # switches it sits under
    # (the switches only where the archives hold every release of the site: a wheel's release may differ on them)
    shipped_by_key = {_site_key(e): e for e in shipped["sites"]}

    def reads(e: dict, whole: bool) -> tuple:
        return (e["c"], e.get("l")) + ((e.get("e"), e.get("ea")) if whole else ())

    changed = [_site_key(e) for e in rebuilt["sites"] for old in [shipped_by_key[_site_key(e)]]
               for whole in [set(old["r"]) <= set(e["r"])] if reads(old, whole) != reads(e, whole)]
    assert not changed, f"{len(changed)} sites read other fields (first: {changed[:2]}): run tools/build_raise_index.py"
    copies = {e["l"]["transformer_pipeline_model_parallel_size"] for e in rebuilt["sites"]
              if "transformer_pipeline_model_parallel_size" in e.get("l", {})}
    assert copies == {"pipeline_model_parallel_size"}  # Megatron-LM's copy, read by its checks and MindSpeed's
    fused = [e for e in rebuilt["sites"]
             if e["p"] == "mindspeed" and "--use-fused-rmsnorm must enable" in "".join(e["t"])]
    assert fused and all(e["e"] == "args.use_fused_rmsnorm" and e["k"] == "args.normalization != 'RMSNorm'"
                         for e in fused)  # the switch the check sits under, apart from its own condition
