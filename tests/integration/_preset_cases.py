"""Realistic launches for every preset: a corpus command line, the preset, and the overrides the preset needs.

The corpus scripts add some keys with ``+key=v`` that a preset also sets; after the preset those keys
exist, so Hydra needs ``++key=v`` (docs/usage.md, "+ versus ++"). :func:`after_preset` applies exactly
that rewrite and nothing else.
"""

from __future__ import annotations

from pathlib import Path

from verl_mindspeed.integrations import presets


from helpers import CORPUS, ROOT, require  # noqa: F401

#: preset -> (corpus script, the extra overrides this preset needs on it, and why)
CASES: dict[str, tuple[str, list[str]]] = {
    "validate": ("run_qwen3_06b_grpo_mindspeed", []),
    "dense": ("run_qwen3_0_6b_megatron_vllm_ascend", []),
    "moe": ("run_qwen3_30b_a3b_megatron", []),
    # CP-ready settings only act with CP >= 2 (the script runs PP=2, TP=2 on 8 devices: CP=2 fits).
    "long_context": ("run_qwen3_0_6b_megatron_vllm_ascend",
                     ["actor_rollout_ref.actor.megatron.context_parallel_size=2",
                      "actor_rollout_ref.ref.megatron.context_parallel_size=2"]),
    "memory_saving": ("run_gspo_qwen3_30b_megatron_npu", []),
    "mla_moe": ("run_dapo_moonlight-16b_megatron_npu", []),
    # MC2 needs TP > 1: this script runs TP=2 (with verl's default sequence_parallel=True).
    "mc2": ("run_qwen3_06b_grpo_mindspeed", []),
}


def corpus_argv(name: str) -> list[str]:
    text = (Path(CORPUS) / f"{name}.args").read_text(encoding="utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def after_preset(argv: list[str], preset: str) -> list[str]:
    """``+key=v`` -> ``++key=v`` for every key the preset sets (Hydra refuses to '+' an existing key)."""
    keys = set(presets.settings(preset))
    out = []
    for arg in argv:
        key = arg[1:].split("=", 1)[0] if arg.startswith("+") and not arg.startswith("++") else None
        out.append(f"+{arg}" if key in keys else arg)
    return out


def launch(preset: str) -> list[str]:
    """The full argv of the realistic launch for ``preset``."""
    script, extra = CASES[preset]
    return after_preset(corpus_argv(script), preset) + extra + [f"+mindspeed={preset}"]
