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
from ._blame import ACTOR, Cause, Verdict
from ._log import Raised
from ._replay import Replay
from ._settings import line, unique, written_keys
from ._sites import index, relative
from ._switch import accepted

#: Exceptions of code going wrong, not of a check deciding (a check raises its own, and has a site).
CODE_ERRORS = ("AttributeError", "TypeError", "KeyError", "IndexError", "ZeroDivisionError", "NameError",
               "UnboundLocalError")
_ON = ("true", "1")
_OTC = ACTOR + "override_transformer_config."


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


def feature_code(raised: Raised, what: Msg, launch: Optional[Replay], options: dict,
                 upstream: bool = False) -> Optional[Verdict]:
    """The switch of the feature whose code raised, where the launch turns it on, with the line that turns it off.
    ``upstream``: a check on state no launch key sets, reached through a feature's code (the HCCL buffer patch
    calling Megatron-LM's ``get_args()``, which verl never initialises): only the switch, no other finding."""
    if raised.type not in CODE_ERRORS and not upstream:
        return None
    if launch is None:
        return _patched(raised, what)
    found = _deepest(raised)
    if not found:
        return None if upstream else _unplaced(raised, what, launch)
    if upstream:  # what check says the feature requires keeps it (swap_optimizer's use_distributed_optimizer)
        required = _checked(found, what, launch, options)
        if required is not None:
            return required
    on = [(key, leaf) for leaf in found if leaf in switches() for key in written_keys(launch, leaf)
          if (launch.value(key) or "").lower() in _ON]
    causes = [Cause(key, fix) for key, _leaf in on for fix in [line(key, False)] if accepted(fix, key, launch, options)]
    if not causes:
        return None if upstream else _checked(found, what, launch, options)
    # the feature's code failing on verl's config, check or no check: off is the way out
    names = ", ".join(sorted({leaf for _key, leaf in on}))
    what = tr("{what}: MindSpeed's code of the feature {switches}, which the launch turns on, failed on what verl's "
              "path hands it; with the feature off, that code does not run", what=what, switches=names)
    return Verdict("override", what, causes, tuple(leaf for _key, leaf in on), "likely")


def _deepest(raised: Raised, patches_only: bool = False) -> list[str]:
    """The switches of the deepest frame that is a feature's code (``patches_only``: a module its patches bring in,
    not the feature's own file)."""
    for path, _line, _fn in reversed(raised.frames):
        if patches_only and (relative(path) or "").startswith("mindspeed/features_manager/"):
            continue
        found = features_of(path)
        if found:
            return found
    return []


def _patched(raised: Raised, what: Msg) -> Optional[Verdict]:
    """Without the launch: a frame in a module a feature's patches bring in (not the feature's own file, whose
    ``validate_args`` runs for every feature) ran because a switch turned the feature on. The switches are named,
    with no line (which one, and who wrote it, only the launch says): the failure is not "upstream code"."""
    found = [leaf for leaf in _deepest(raised, patches_only=True) if leaf in switches()]
    if not found:
        return None
    what = tr("{what}: in the code of the MindSpeed feature {switches}, which runs only when the launch turns it on; "
              "give the launch (--args-file) for the line", what=what, switches=", ".join(found))
    return Verdict("override", what, [Cause(_OTC + leaf) for leaf in found], tuple(found), "possible")


def _checked(found: list[str], what: Msg, launch: Replay, options: dict) -> Optional[Verdict]:
    """A feature the launch turns on by a setting that is no switch (``context_parallel_algo``): ``check``'s errors
    on the launch from the rules that cite that feature's own file (``hybrid-cp-ulysses-degree`` cites
    ``context_parallel_feature.py``, whose feature's module ``model_parallel_utils`` compared a missing
    ``ulysses_degree_in_cp`` with the CP size)."""
    files = sorted({rel.rsplit("/", 1)[-1] for rel, of in _features()[0].items() if set(of) & set(found)})
    return _found_by_check([i for name in files for i in launch.about((), cites=name)], tr(
        "{what}: in MindSpeed's code of the feature {switches}; check finds on the launch what that feature requires",
        what=what, switches=", ".join(found)), "likely")


def _unplaced(raised: Raised, what: Msg, launch: Replay) -> Optional[Verdict]:
    """Megatron's or MindSpeed's code failing where no check and no feature places it (``layers_to_distribute %
    pipeline_stages_left``: the actor's uneven split on the process groups a critic of other sizes built first), on a
    launch ``check`` finds errors in: those errors, the launch's known faults, to fix first (certainty "possible":
    whether this failure remains, only a run after them says)."""
    if not any((relative(path) or "").startswith(("megatron/", "mindspeed/")) for path, _l, _f in raised.frames):
        return None
    return _found_by_check([i for i in launch.issues if i.severity == "error"], tr(
        "{what}: no check raised this, in code the launch's settings drive; check finds errors on the launch, to fix "
        "first", what=what), "possible")


def _found_by_check(issues: list, what: Msg, certainty: str) -> Optional[Verdict]:
    """``check``'s findings on the launch as the causes, each with its line: its finding, not this exception's, so
    never "confirmed"; None where it finds nothing."""
    if not issues:
        return None
    causes = unique([Cause(i.key, i.override) for i in issues])
    return Verdict("override", what, causes, tuple(c.key.rsplit(".", 1)[-1] for c in causes), certainty)


__all__ = ["CODE_ERRORS", "feature_code", "features_of"]
