"""What following a key's fix line costs `check`: a launch judged with its lines followed against the same launch
judged without (``launch.evaluate(..., follow=False)``), each in a fresh process.

    python benchmarks/fix_follow_cost.py [--runs 7]

Two launches on verl 0.9.1's Megatron trainer: two near misses whose lines need nothing more (the lines are judged
pasted together, once), and four errors whose lines all bring what the key then needs (full recompute's method and
layers, SP's TP, the swap optimizer's distributed optimizer, a TP of 3 on 8 devices), each judged alone to find
whose line a companion belongs to. Prints every run, the medians and each ratio.
"""

from __future__ import annotations

import argparse
import sys

from check_vs_verl_cfg import interleaved

O = "actor_rollout_ref.actor.megatron.override_transformer_config"
BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", "trainer.n_gpus_per_node=8",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1", "actor_rollout_ref.rollout.name=vllm"]
LAUNCHES = {
    "two near misses, nothing to follow": [f"++{O}.use_flash_atn=True", f"++{O}.moe_grouped_gem=True"],
    "four errors, each with companions": [f"++{O}.recompute_granularty=full", f"++{O}.sequence_parallel=Ture",
                                          f"++{O}.swap_optimzer=True",
                                          "actor_rollout_ref.actor.megatron.tensor_model_paralel_size=3"],
}


def _command(argv: list[str], follows: bool) -> list[str]:
    code = (f"from verl_mindspeed.launch import evaluate; "
            f"assert evaluate({[*BASE, *argv]!r}, follow={follows}).errors")
    return [sys.executable, "-c", code]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    ns = parser.parse_args()
    rows = []
    for name, argv in LAUNCHES.items():
        print(f"\n{name}")
        followed, alone = interleaved(_command(argv, True), _command(argv, False), ns.runs, ("followed", "not"))
        rows.append((name, followed, alone))
    print(f"\n{ns.runs} runs each, interleaved, fresh processes")
    for name, followed, alone in rows:
        print(f"{name}: followed {followed:.3f} s, not followed {alone:.3f} s, {followed / alone:.2f}x")


if __name__ == "__main__":
    main()
