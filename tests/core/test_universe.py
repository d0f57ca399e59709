"""The known-key universe: the snapshot, and megatron-core's fields read from its installed sources."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

from helpers import require
from verl_mindspeed.catalog import universe


def test_source_fields_equal_the_real_dataclass_fields():
    tc = require("megatron.core.transformer")
    real = {f.name for cls in (tc.TransformerConfig, tc.MLATransformerConfig) for f in dataclasses.fields(cls)}
    parsed, version = universe._installed_source_fields()
    assert parsed == real
    assert version


def test_reading_the_installed_fields_does_not_import_torch():
    require("megatron.core")
    code = ("import sys; from verl_mindspeed.catalog import universe; "
            "f, src = universe.transformer_config_fields(); "
            "print(len(f), 'installed source' in src, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[1:] == ["True", "False"]


def test_universe_holds_every_source():
    keys = universe.known_otc_keys()
    assert {"use_flash_attn", "swiglu"} <= keys  # Megatron-LM training arguments
    assert {"swap_optimizer", "noop_layers", "context_parallel_algo"} <= keys  # MindSpeed
    assert {"recompute_granularity", "moe_router_dtype", "kv_lora_rank"} <= keys  # TransformerConfig
    assert "fused_permute_and_unpermute" in keys  # catalogue alias


def test_releases_and_per_release_args():
    assert universe.DEFAULT_RELEASE in universe.releases()
    old = universe.mindspeed_args("2.3.0_core_r0.12.1")["context_parallel_algo"]["choices"]
    new = universe.mindspeed_args("26.0.0_core_r0.12.1")["context_parallel_algo"]["choices"]
    assert "kvallgather_cp_algo" not in old and "kvallgather_cp_algo" in new
