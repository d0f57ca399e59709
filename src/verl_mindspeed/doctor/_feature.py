"""A MindSpeed feature's own code failing on this run's config: no check raised, the code did (``'TransformerConfig'
object has no attribute 'num_experts'`` in ``moe_tp_extend_ep``'s validation; ``'Namespace' object has no attribute
'seq_length'`` in the HCCL buffer patch). verl hands MindSpeed another config than Megatron-LM's parsed arguments,
and a feature written for those may read what verl's path lacks.

- Which feature: the deepest frame of MindSpeed's code that is a feature's file, or a module a feature's methods
  import (the index's ``features``, read from every release's ``features_manager``).
- Only a switch the launch turns on (given, or the override list Hydra printed): ``validate_args`` runs for every
  feature, and a switch the launch leaves off is no fault of it.
- The line turns it off, and ``check`` must accept it (no error and no new warning on its key).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from ..catalog.universe import switches
from ..i18n import Msg, tr
from ._blame import Cause, Verdict
from ._log import Raised
from ._replay import Replay
from ._settings import line, written_keys
from ._sites import index, relative
from ._switch import accepted

#: Exceptions of code going wrong, not of a check deciding (a check raises its own, and has a site).
CODE_ERRORS = ("AttributeError", "TypeError", "KeyError", "IndexError", "ZeroDivisionError", "NameError",
               "UnboundLocalError")
_ON = ("true", "1")


@lru_cache(maxsize=1)
def _features() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    data = index().get("features") or {}
    return data.get("files", {}), data.get("modules", {})


def features_of(path: str) -> list[str]:
    """The switches whose feature's code a frame's file is: the feature's own file, or a module its methods import
    (``mindspeed/core/hccl_buffer/adaptor.py``)."""
    rel = relative(path)
    if rel is None or not rel.startswith("mindspeed/"):
        return []
    files, modules = _features()
    module = rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return files.get(rel) or modules.get(module) or []


def feature_code(raised: Raised, what: Msg, launch: Optional[Replay], options: dict) -> Optional[Verdict]:
    """The switch of the feature whose code raised, where the launch turns it on, with the line that turns it off."""
    if launch is None or raised.type not in CODE_ERRORS:
        return None
    found = next((f for path, _line, _fn in reversed(raised.frames) for f in [features_of(path)] if f), [])
    on = [(key, leaf) for leaf in found if leaf in switches() for key in written_keys(launch, leaf)
          if (launch.value(key) or "").lower() in _ON]
    causes = [Cause(key, fix) for key, _leaf in on for fix in [line(key, False)] if accepted(fix, key, launch, options)]
    if not causes:
        return None
    names = ", ".join(sorted({leaf for _key, leaf in on}))
    what = tr("{what}: MindSpeed's code of the feature {switches}, which the launch turns on, failed on what verl's "
              "path hands it; with the feature off, that code does not run", what=what, switches=names)
    return Verdict("override", what, causes, tuple(leaf for _key, leaf in on), "likely")


__all__ = ["CODE_ERRORS", "feature_code", "features_of"]
