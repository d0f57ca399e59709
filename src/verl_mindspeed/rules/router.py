"""Rules on the MoE router megatron-core's ``TransformerConfig`` checks on every stack verl builds.

verl's converters set the router of the model: softmax scores without pre-softmax for Qwen's MoE models, sigmoid
with pre-softmax for DeepSeek's (MLA) ones; Megatron-Bridge's providers do the same. A launch that changes the top-k
through ``override_transformer_config`` meets the router's own checks when the config is built, in every worker.
"""

from __future__ import annotations

from typing import Iterable

from ..errors import Issue
from ..i18n import tr
from ._base import Context, RoleView, _int, error, rule, warning

_MCORE_TC = "megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__"


@rule("moe-topk1-pre-softmax", cites=_MCORE_TC + " (Please use --moe-router-pre-softmax when topk is 1)",
      holds_for="megatron-core 0.12.1, 0.15.3, 0.16.1 and 0.18.2")
def topk1_pre_softmax(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """A top-1 softmax router without pre-softmax: softmax over one score has zero gradient, and megatron-core
    refuses it unless the load balancing is sinkhorn."""
    model = ctx.model
    topk = _int(role.get("moe_router_topk")) or (model.moe_router_topk if model is not None else None)
    if topk != 1 or role.on("moe_router_pre_softmax") or role.get("moe_router_load_balancing_type") == "sinkhorn":
        return
    score = role.get("moe_router_score_function")
    if score is None and model is not None:
        score = "sigmoid" if model.is_mla else "softmax"  # what verl's converters and the bridge set
    if score not in (None, "softmax"):
        return
    message = tr("moe_router_topk=1 with the softmax router requires moe_router_pre_softmax=True (megatron-core: "
                 "\"Please use --moe-router-pre-softmax when topk is 1\")")
    line = role.set_line("moe_router_pre_softmax", True)
    if score is None:  # no model given and no router written: DeepSeek's sigmoid router would pass
        yield warning(role.key("moe_router_topk"), tr("{message}, unless the model's router uses sigmoid scores "
                                                      "(give --model-config to know)", message=message),
                      "moe-topk1-pre-softmax", override=line)
        return
    yield error(role.key("moe_router_topk"), message, "moe-topk1-pre-softmax", override=line)
