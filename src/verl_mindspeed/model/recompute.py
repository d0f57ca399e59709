"""Activation recompute as megatron-core 0.12.1 runs it: none, selective modules, full uniform/block N.

``TransformerConfig`` (``transformer/transformer_config.py``) takes
``recompute_granularity`` (``full``/``selective``), ``recompute_method``
(``uniform``/``block``, full only), ``recompute_num_layers`` (full only) and
``recompute_modules`` (selective only; 0.12.1 allows ``core_attn``, ``moe_act``,
``layernorm``, ``mla_up_proj``, ``mlp``, ``moe``). ``TransformerBlock._checkpointed_forward``
keeps the input of each checkpointed unit and replays one unit at a time in the
backward pass; :mod:`.activations` models exactly that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["NO_RECOMPUTE", "FULL_UNIFORM_1", "Recompute", "SELECTIVE_MODULES"]

#: megatron-core 0.12.1 ``allowed_modules`` for selective recompute.
SELECTIVE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe")


@dataclass(frozen=True)
class Recompute:
    """One recompute choice."""

    granularity: Optional[str] = None
    """``None`` (store everything), ``selective`` or ``full``."""
    method: Optional[str] = None
    """Full only: ``uniform`` (units of ``num_layers``) or ``block`` (the first ``num_layers`` of each chunk)."""
    num_layers: Optional[int] = None
    """Full only: ``recompute_num_layers``."""
    modules: tuple[str, ...] = ()
    """Selective only: ``recompute_modules``."""

    @property
    def full(self) -> bool:
        return self.granularity == "full"

    @property
    def selective(self) -> bool:
        return self.granularity == "selective"

    def label(self) -> str:
        """A short name: ``none``, ``sel:moe+layernorm``, ``full:uniform/1``, ``full:block/3``."""
        if self.full:
            return f"full:{self.method}/{self.num_layers}"
        if self.selective:
            return "sel:" + "+".join(self.modules)
        return "none"

    def otc_items(self) -> list[tuple[str, object]]:
        """The ``override_transformer_config`` keys that select this choice (nothing for none)."""
        if self.full:
            return [("recompute_granularity", "full"), ("recompute_method", self.method),
                    ("recompute_num_layers", self.num_layers)]
        if self.selective:
            return [("recompute_granularity", "selective"), ("recompute_modules", list(self.modules))]
        return []


NO_RECOMPUTE = Recompute()
FULL_UNIFORM_1 = Recompute("full", "uniform", 1)
