"""Cross-field rules, one small named function each, grouped by topic.

Importing this package registers every rule in :data:`RULES`. To add a rule,
write a function in the topic module and decorate it with ``@rule(id, cites=...)``.
"""

from __future__ import annotations

from . import attention, memory, model_rules, moe, parallel, roles, verl_engine  # noqa: F401  (registration)
from ._base import RULES, Context, RoleView, Rule, rule

__all__ = ["RULES", "Context", "RoleView", "Rule", "rule"]
