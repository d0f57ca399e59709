"""Checks the project makes beyond what MindSpeed and megatron-core raise on verl's path, each with its reason.

The one list of them: ``check --upstream`` reads it to say why a hand rule is stricter than the upstream run,
the conformance judge accepts exactly these disagreements, and docs/deliberate.md (generated from here) lists
them. A check that is not here and disagrees with upstream is a bug of the hand rules. Where the check is a
registered rule, its ``cites`` names the upstream code; the single-key checks cite theirs in :data:`CITES`.
"""

from __future__ import annotations

from typing import Optional

from ..i18n import Msg, tr
from ._base import RULES

#: Errors upstream does not raise on the config path, and why the error is still right.
ERRORS: dict[str, Msg] = {
    "unknown-key": tr("a key nothing reads (a typo): MindSpeed keeps it silently and the run silently lacks the "
                      "option"),
    "value": tr("a value of the wrong type or outside the choices of the code that reads it: verl's path runs no "
                "argparse, so nothing refuses it while the config is built; the run reads it as something else (any "
                "string as true), selects nothing with it (context_parallel_algo), or fails where the layer that "
                "reads it is built (normalization, the MoE dispatcher)"),
    "batch-divisibility": tr("verl's trainer asserts batch sizes against the device count at run time, outside "
                             "the config path upstream runs"),
    "model-layers-pp": tr("megatron floors num_layers / PP silently, and with both uneven stage sizes at PP=1 builds "
                          "the last stage's number of layers (0.16.1 refuses them only when they add up to "
                          "num_layers): the model built has fewer layers than the checkpoint"),
    "model-noop-layers": tr("no-op layers that the model's num_layers does not count replace layers of the "
                            "checkpoint: the weight loader fails or loads the wrong layers, after the config is "
                            "built"),
    "model-mla": tr("MLA switches or dimensions that differ from config.json build a model the checkpoint's "
                    "weights cannot be loaded into (the weight loader, after the config is built)"),
    "role-sizes-agree": tr("verl reuses the first engine's parallel state for every later role without a check: "
                           "the silent layout change is the failure, and nothing raises"),
    "dict-sizes-agree": tr("verl copies a parallel size of the dict over the engine's on the model's config while "
                           "the process groups keep the engine's: no config check sees it, and the model is split "
                           "for one size and run on another"),
    "cp-algo-release": tr("the release has no code for the algorithm: MindSpeed accepts the string without "
                          "argparse and registers no CP attention for it"),
    "stack-bridge-import": tr("no Megatron-Bridge release imports on the megatron-core 0.12 line (0.3.1 stops at "
                              "models/conversion/model_bridge.py:39 on 0.12.1, run here), so the oracle builds such a "
                              "role on the provider executed on 0.16.1: on a real host the worker stops with "
                              "ImportError"),
    "bridge-refuses-unknown": tr("the oracle's MindSpeed stacks (megatron-core 0.12.1, 0.16.1) carry no "
                                 "Megatron-Bridge 0.5+; executed on megatron-core 0.18.2 instead, its "
                                 "apply_overrides_and_finalize raises AttributeError on an override it has no "
                                 "attribute for"),
}
#: Warnings upstream cannot give (it reports exceptions and unregistered patches, not values that select
#: nothing), and why each is still right.
WARNINGS: dict[str, Msg] = {
    "fused-swiglu-inert": tr("a legal switch with no effect: megatron's MLP calls the fused SwiGLU MindSpeed "
                             "patches only under bias_activation_fusion, which Megatron-Bridge's provider leaves False "
                             "for most architectures; nothing raises"),
    "field-of-another-line": tr("a TransformerConfig field of another megatron-core line: the dict keeps it and "
                                "nothing on this stack reads it"),
    "mbridge-vpp": tr("a restriction of verl on NPU that MindSpeed's verl guide states (mbridge does not support VPP "
                      "yet): no code checks it, and verl's Ascend CI runs the pair, so a warning"),
    "cp-algo-without-cp": tr("context_parallel_algo only selects among CP patches, which need "
                             "context_parallel_size > 1; the ring-only switches act inside the ring attention"),
    "recompute-method-without-granularity": tr("megatron reads recompute_method and recompute_num_layers only "
                                               "under a granularity"),
    "moe-async-comm-alone": tr("moe_permutation_async_comm=True without a feature that reads it: a legal key with "
                               "no effect"),
    "mc2-requires-sp-tp": tr("as a warning (2.2.0, 2.3.0, core_r0.16.0): MindSpeed itself warns in mc2.py "
                             "validate_args and runs without MC2"),
    "mc2-conflicts": tr("as a warning, MC2 on a MoE model: MindSpeed's MC2 documentation says it is not for MoE "
                        "models; no code path checks it"),
    "dict-sizes-agree": tr("as a warning, sequence_parallel in the dict overriding the engine's: legal, the model "
                           "is built with the dict's value, which no config check compares"),
    "moe-dispatcher-variable-seq": tr("as a warning, when the model is unknown: megatron refuses the dispatcher "
                                      "on a MoE model only, and without a model the check cannot tell"),
    "fused-op-companions": tr("MindSpeed's verl guide pairs the fused RMSNorm and SwiGLU kernels with "
                              "normalization=RMSNorm and swiglu=True, and no code compares them: the kernel MindSpeed "
                              "applies then does not match the model the dict describes"),
    "model-memory": tr("the planner's estimate of the peak device memory against the device's capacity: nothing "
                       "upstream checks it; the failure is an out-of-memory after the weights are loaded"),
}
#: The upstream code behind the checks that are not registered rules.
CITES = {
    "unknown-key": "mindspeed/megatron_adaptor.py repatch (setattr of every key, read or not)",
    # verl's own check, which the conformance oracle executes (verl's dataclass conversion): not stricter
    "unknown-megatron-key": "verl 0.9.1 verl/utils/config.py omega_conf_to_dataclass (McoreEngineConfig)",
    "value": "mindspeed/arguments.py, megatron/training/arguments.py (argparse choices and types, which verl's path "
             "never runs); megatron/core/transformer/torch_norm.py, moe/moe_layer.py (the readers that refuse)",
    "field-of-another-line": "megatron/core/transformer/transformer_config.py of megatron-core 0.12.1, 0.16.1, 0.17.1 "
                             "and 0.18.2 (catalog/data/stacks.json, generated from the wheels)",
}


#: Checks of Hydra's and verl's own code, which refuse a launch before MindSpeed is ever called.
VERL_SIDE = tr("Hydra or verl refuses it before MindSpeed is called: the upstream run starts where verl hands "
               "MindSpeed the dicts")


def verl_side(rule_id: str) -> bool:
    """Whether a check mirrors Hydra's or verl's own code rather than MindSpeed's or megatron-core's."""
    if rule_id.startswith(("verl-", "hydra")) or rule_id in ("interpolation", "type", "config-group"):
        return True
    return cites(rule_id).startswith("verl ")


def why(rule_id: str, severity: str = "error") -> Optional[Msg]:
    """The recorded reason a check of ``severity`` is stricter than upstream (a check of verl's own code is, by
    construction); ``None`` when there is none."""
    found = (ERRORS if severity == "error" else WARNINGS).get(rule_id)
    if found is None and verl_side(rule_id):
        return VERL_SIDE
    return found


def cites(rule_id: str) -> str:
    """The upstream code a check mirrors or relies on."""
    found = next((r for r in RULES if r.id == rule_id), None)
    return found.cites if found is not None else CITES.get(rule_id, "")
