"""Rules on the MoE router megatron-core's ``TransformerConfig`` checks on every stack verl builds.

verl's config paths set the router of the model (:data:`verl_mindspeed.model.spec.ROUTERS`): softmax scores without
pre-softmax for Qwen3-MoE, softmax with pre-softmax for Qwen2-MoE and Mixtral, sigmoid with pre-softmax for
DeepSeek-V3 and GLM-4.5. A launch that changes the top-k through ``override_transformer_config`` meets the router's
own checks when the config is built, in every worker.
"""

from __future__ import annotations

from typing import Iterable

from ..errors import Issue
from ..i18n import tr
from ..model.spec import ROUTERS
from ._base import Context, RoleView, _int, error, rule, warning

_MCORE_TC = "megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__"


@rule("moe-topk1-pre-softmax", cites=_MCORE_TC + " (Please use --moe-router-pre-softmax when topk is 1)",
      holds_for="megatron-core 0.12.1, 0.15.3, 0.16.1 and 0.18.2")
def topk1_pre_softmax(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """A top-1 softmax router without pre-softmax: softmax over one score has zero gradient, and megatron-core
    refuses it unless the load balancing is sinkhorn."""
    model = ctx.model
    topk = _int(role.get("moe_router_topk")) or (model.moe_router_topk if model is not None else None)
    if topk != 1 or role.get("moe_router_load_balancing_type") == "sinkhorn":
        return
    router = model.router if model is not None else None  # what the model's config path sets
    score = role.get("moe_router_score_function", router[0] if router else None)
    pre = role.get("moe_router_pre_softmax", router[1] if router else None)
    if pre is True or score not in (None, "softmax"):
        return
    message = tr("moe_router_topk=1 with the softmax router requires moe_router_pre_softmax=True (megatron-core: "
                 "\"Please use --moe-router-pre-softmax when topk is 1\")")
    line = role.set_line("moe_router_pre_softmax", True)
    if score is None or pre is None:  # no model (or one not listed) and no router written: its path may set them
        unless = tr("{message}, unless the model's config path sets a sigmoid router or pre-softmax (give "
                    "--model-config to know)", message=message) if model is None else \
            tr("{message}, unless the config path of {architecture} sets a sigmoid router or pre-softmax (the "
               "check knows the routers of {known})", message=message, architecture=model.architecture,
               known=", ".join(sorted(ROUTERS)))
        yield warning(role.key("moe_router_topk"), unless, "moe-topk1-pre-softmax", override=line)
        return
    yield error(role.key("moe_router_topk"), message, "moe-topk1-pre-softmax", override=line)
