"""A raise whose condition reads no launch key, only its own arguments (``strategy_type not in
CPStrategyFactory._STRATEGY_MAP``): whose values they are, the code does not say, but the message may print one that
is a choice of exactly one setting (``Unsupported CP strategy: megatron_cp_algo``: MindSpeed's
``--context-parallel-algo`` takes it), with another of that setting's choices. That setting is named, with no line:
the value is one the setting accepts, and which other one this path takes, the message's list and the setting's
choices need not agree on."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

from .. import catalog
from ..catalog.universe import arguments
from ..i18n import Msg, tr
from ._blame import Cause, Verdict, paths_for
from ._sites import Match

#: A value specific enough to say whose it is: a word of five letters or more with an underscore or a dash
#: (``megatron_cp_algo``, not ``fp16`` or ``auto``, which many settings take).
_SPECIFIC = re.compile(r"[A-Za-z][\w-]{4,}")


@lru_cache(maxsize=1)
def _owners() -> dict[str, frozenset[str]]:
    """Each choice -> the settings (MindSpeed's and Megatron-LM's arguments, the catalogue's flags) that take it."""
    out: dict[str, set[str]] = {}
    for dest, spec in arguments().items():
        for choice in spec.get("choices") or ():
            out.setdefault(str(choice), set()).add(dest)
    for flag in catalog.flags():
        for choice in flag.choices or ():
            out.setdefault(str(choice), set()).add(flag.name)
    return {choice: frozenset(names) for choice, names in out.items()}


def chosen(site: Optional[Match], what: Msg, message: str) -> Optional[Verdict]:
    """The setting whose choice the message prints, where the site's condition reads no launch key, and where the
    message prints another of its choices too (``Available strategies: ['kvallgather_cp_algo']``): a module's name
    that is also a choice (``transformer_engine``) is printed for other reasons."""
    if site is None:
        return None
    words = set(re.findall(r"[A-Za-z][\w-]{2,}", message[:6000]))
    found: dict[str, str] = {}
    for text in site.bound.values():
        value = text.strip().strip("'\"`")
        owners = _owners().get(value, frozenset())
        if not (_SPECIFIC.fullmatch(value) and ("_" in value or "-" in value) and len(owners) == 1):
            continue
        setting = next(iter(owners))
        if any(word != value and setting in _owners().get(word, ()) for word in words):
            found.setdefault(setting, value)
    keys = [(leaf, key) for leaf in found for key in paths_for(leaf, site.site.package)[:1]]
    if not keys:
        return None
    return Verdict("override", tr("{what} (it prints {value}, a value of {setting})", what=what,
                                  value=", ".join(found[leaf] for leaf, _key in keys),
                                  setting=", ".join(leaf for leaf, _key in keys)),
                   [Cause(key) for _leaf, key in keys], tuple(found), "possible")


__all__ = ["chosen"]
