"""Cross-field rules, one small named function each, grouped by topic.

Importing this package registers every rule in :data:`RULES`. To add a rule,
write a function in the topic module and decorate it with ``@rule(id, cites=...)``.
"""

from __future__ import annotations

from . import attention, memory, moe, parallel  # noqa: F401  (registration)
from ._base import RULES, Context, RoleView, Rule, rule

try:  # model- and cluster-aware rules
    from . import model_rules  # noqa: F401
except ImportError:  # pragma: no cover - only while that module is being written
    pass

__all__ = ["RULES", "Context", "RoleView", "Rule", "rule"]
