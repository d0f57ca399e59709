"""Cross-field rules, one small named function each, grouped by topic.

Importing this package registers every rule in :data:`RULES`. To add a rule,
write a function in the topic module and decorate it with ``@rule(id, cites=...)``.
"""

from __future__ import annotations

from . import (  # noqa: F401  (registration)
    attention,
    forward,
    mc2,
    memory,
    model_rules,
    moe,
    parallel,
    roles,
    router,
    stack,
    verl_engine,
    verl_passes,
    verl_sizes,
)
from ._base import RULES, Context, RoleView, Rule, rule


def covered_switches() -> frozenset[str]:
    """The switches outside the feature guide whose own checks a rule mirrors (each rule's ``covers``): setting
    any other one gets the ``no-hand-rule`` note, even when a rule names it as a conflict."""
    return frozenset(k for r in RULES for k in r.covers)


__all__ = ["RULES", "Context", "RoleView", "Rule", "covered_switches", "rule"]
