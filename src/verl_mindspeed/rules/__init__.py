"""Cross-field rules, one small named function each, grouped by topic.

Importing this package registers every rule in :data:`RULES`. To add a rule,
write a function in the topic module and decorate it with ``@rule(id, cites=...)``.
"""

from __future__ import annotations

import inspect
import re
from functools import lru_cache

from . import attention, mc2, memory, model_rules, moe, parallel, roles, verl_engine  # noqa: F401  (registration)
from ._base import RULES, Context, RoleView, Rule, rule

_QUOTED = re.compile(r"[\"']([A-Za-z_][A-Za-z0-9_]*)[\"']")
_TOPICS = (attention, mc2, memory, model_rules, moe, parallel, roles, verl_engine)


@lru_cache(maxsize=None)
def named_keys() -> frozenset[str]:
    """Every key a rule names in its code: the switches some hand rule looks at (read from the rules' own source,
    so a new rule covers its keys without a list to keep)."""
    found: set[str] = set()
    for module in _TOPICS:
        found.update(_QUOTED.findall(inspect.getsource(module)))
    return frozenset(found)


__all__ = ["RULES", "Context", "RoleView", "Rule", "named_keys", "rule"]
