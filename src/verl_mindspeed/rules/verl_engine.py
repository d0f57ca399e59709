"""verl's own checks on a role's engine config, per era: what verl's Megatron engine asserts when each worker
starts, before MindSpeed is ever called (``verl/workers/engine/megatron/transformer_impl.py``)."""

from __future__ import annotations

from typing import Iterable

from .. import eras
from ..errors import Issue
from ..i18n import tr
from ._base import Context, RoleView, error, rule


@rule("verl-engine-mbridge", holds_for="verl 0.8.0 and later",
      cites="verl 0.8.0, 0.9.0, 0.9.1 verl/workers/engine/megatron/transformer_impl.py MegatronEngine.__init__ "
            "(assert self.engine_config.use_mbridge, 'use_mbridge must be True')")
def engine_mbridge(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """verl 0.8+ builds every Megatron model through a bridge and asserts it in each worker's engine."""
    if ctx.era is None or ctx.era.id != eras.ENGINE or role.megatron.get("use_mbridge") is not False:
        return
    fixes = [role.mset_line("use_mbridge", True)]
    if (role.vpp or 1) > 1:  # mbridge-vpp: a bridge and VPP cannot be combined on NPU
        fixes.append(role.mset_line("virtual_pipeline_model_parallel_size", None))
    yield error(role.mkey("use_mbridge"), tr(
        "use_mbridge=False cannot run on {era}: verl's Megatron engine asserts 'use_mbridge must be True' when each "
        "worker starts", era=ctx.era.releases), "verl-engine-mbridge", override=" ".join(fixes),
        hint=tr("without a bridge there is no VPP on NPU for this verl release") if (role.vpp or 1) > 1 else "")
