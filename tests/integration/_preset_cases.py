"""Realistic launches for every preset: one of the project's example launch lines, the preset, and the
overrides the preset needs.

The examples add some keys with ``+key=v`` that a preset also sets; after the preset those keys
exist, so Hydra needs ``++key=v`` (docs/usage.md, "+ versus ++"). :func:`after_preset` applies exactly
that rewrite and nothing else.
"""

from __future__ import annotations

from helpers import ROOT, require  # noqa: F401
from verl_mindspeed import presets

EXAMPLES = ROOT / "examples"

#: preset -> (example launch line, the extra overrides this preset needs on it, and why)
CASES: dict[str, tuple[str, list[str]]] = {
    "validate": ("qwen3_8b_dense_grpo", []),
    "dense": ("qwen3_8b_dense_grpo", []),
    "moe": ("qwen3_30b_a3b_moe_grpo", []),
    # CP-ready settings only act with CP >= 2 (the example runs TP=4, PP=2 on 8 devices: 16 devices fit CP=2).
    "long_context": ("qwen3_8b_dense_grpo",
                     ["actor_rollout_ref.actor.megatron.context_parallel_size=2",
                      "actor_rollout_ref.ref.megatron.context_parallel_size=2", "trainer.n_gpus_per_node=16",
                      "++actor_rollout_ref.actor.megatron.override_transformer_config.seq_length=4096"]),
    "memory_saving": ("qwen3_30b_a3b_moe_grpo", []),
    "mla_moe": ("moonlight_16b_mla_dapo", []),
    # MC2 needs TP > 1: this example runs TP=4 (with verl's default sequence_parallel=True).
    "mc2": ("qwen3_8b_dense_grpo", []),
}


def corpus_argv(name: str) -> list[str]:
    text = (EXAMPLES / f"{name}.args").read_text(encoding="utf-8")
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
