"""A raise site's settings as causes: the launch keys of the fields its condition reads, each with the value that
passes the site's condition (:mod:`._fix`) or the flag its message advises (:mod:`._advice`), or ``check``'s own
finding where the launch is replayed.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any, Optional

from .. import catalog, eras
from ..catalog import verl_keys
from ..catalog.universe import arguments, core_line_fields, mindspeed_arguments
from ..i18n import Msg
from ._advice import advised_flags
from ._blame import Cause, Verdict, engine_keys, fields_of, paths_for
from ._fix import passing_values, solve
from ._paths import code_role
from ._replay import Replay, issue_causes
from ._sites import Match
from ._verl import sections_of


@lru_cache(maxsize=1)
def stack_set() -> frozenset[str]:
    """Fields verl's build sets itself and no feature flag of the catalogue writes: a raise on one of them, which the
    launch does not write, is the stack's (the converter's or the provider's), not a launch key's."""
    from .. import catalog
    from ..upstream._case import converter_fields

    return converter_fields() - {f.name for f in catalog.flags()}


def settings(site: Match, settable: list[str], what: Msg, launch: Optional[Replay], options: dict) -> Verdict:
    causes: list[Cause] = []
    if launch is not None:
        keys = [k for f in settable for k in written_keys(launch, f)]
        causes = issue_causes(launch, launch.about(keys, settable, cites=os.path.basename(site.site.file),
                                                   function=site.site.function), **options)
        if causes:
            return Verdict("override", what, unique(causes), tuple(settable), "confirmed")
    for leaf in settable:
        value = solve(site, leaf)
        keys = keys_of(site, leaf, launch, options)
        if value is not None:  # the setting the condition moves: the others it reads are context
            return Verdict("override", what, [Cause(k, line(k, value)) for k in keys], tuple(settable), "likely")
        causes += [Cause(k) for k in keys]
    # where the condition cannot be run, the upstream code's own advice by flag ("Please set
    # --moe-router-score-function sigmoid"), on a setting the launch can write
    advised = advised_flags(site.site.template())
    advice = {leaf: value for leaf, value in advised.items() if leaf in settable or (
        leaf not in stack_set() and paths_for(leaf, site.site.package))}
    if advice and len(advice) == len(advised):  # every flag it asks for, or no line: a part of the way out is none
        return Verdict("override", what, [Cause(k, line(k, value)) for leaf, value in advice.items()
                                          for k in keys_of(site, leaf, launch, options)], tuple(advice), "likely")
    unread = _unread(site, settable, launch)
    if unread:  # settings the message did not print, each of which can clear the condition whatever the rest reads
        return Verdict("override", what, [Cause(k, line(k, value) if value is not None else None)
                                          for leaf, value in unread for k in keys_of(site, leaf, launch, options)],
                       tuple(settable), "possible")
    certainty = "likely" if any(c.fix for c in causes) else "possible"
    return Verdict("override", what, unique(causes), tuple(settable), certainty)


def _unread(site: Match, settable: list[str], launch: Optional[Replay]) -> list[tuple[str, Any]]:
    """Where the message printed none of the settings its condition reads, and each is a switch or an integer: every
    setting some value of which clears the condition whatever the others read, each an alternative, with its line
    where exactly one value does (``cpu_offloading and pipeline_model_parallel_size > 1``: ``cpu_offloading=False``,
    or a pipeline size of 0 or 1, no line). Nothing where one of them is of another type (a string that could clear
    it too), where one the launch does not write could clear it (``bf16 or fp16``: verl sets the precision), where
    no alternative has a line, or for a verl class's field without the launch (which section's key it is, the message
    does not say)."""
    if site.site.package == "verl" and launch is None:
        return []
    fields = fields_of(site)
    passing = {leaf: passing_values(site, leaf) for leaf in fields}
    if not fields or any((values is None and (leaf in settable or _setting(leaf))) or (values and leaf not in settable)
                         for leaf, values in passing.items()):
        return []  # a setting of another type, or one the launch does not write (bf16, which verl sets), may clear it
    out = [(leaf, values[0] if len(values) == 1 and (writable(leaf) or _handed(leaf, launch)) and leaf not in _LAYOUT
            else None) for leaf, values in passing.items() if values and leaf in settable]
    return out if any(value is not None for _leaf, value in out) else []


#: The layout: a size the message did not print, or sequence parallelism, is named but given no line where the
#: condition alone is read. The check may sit under a feature's switch the index does not hold (its releases differ
#: on it: ``--use-torch-fsdp2 is not supported with pipeline parallelism``), and a layout moved blind meets the next
#: check (MoE with TP needs sequence parallelism).
_LAYOUT = frozenset(eras.PARALLEL_SIZES) | {"sequence_parallel"}


@lru_cache(maxsize=1)
def _core_fields() -> frozenset[str]:
    """Every field of megatron-core's config, in any of its lines."""
    return frozenset(name for fields in core_line_fields().values() for name in fields)


@lru_cache(maxsize=1)
def _writable() -> frozenset[str]:
    return frozenset(eras.PARALLEL_SIZES) | _core_fields() | {f.name for f in catalog.flags()}


def _setting(leaf: str) -> bool:
    """A name megatron-core, Megatron-LM or MindSpeed configures (not a module's own flag such as
    ``_grad_accum_fusion_available``)."""
    return leaf in arguments() or leaf in _core_fields()


def _handed(leaf: str, launch: Optional[Replay]) -> bool:
    """A MindSpeed argument the launch writes in ``override_transformer_config``: verl's repatch hands it to
    MindSpeed as written, so a line there reaches the check."""
    return leaf in mindspeed_arguments() and any(".override_transformer_config." in k
                                                 for k in written_keys(launch, leaf))


def writable(leaf: str) -> bool:
    """A setting a verl launch writes as itself: megatron-core's config field, a parallel size, or a MindSpeed
    feature of the catalogue (not a Megatron-LM training argument verl sets in its own way)."""
    return leaf in _writable()


def keys_of(site: Match, leaf: str, launch: Optional[Replay], options: dict, chains: tuple[str, ...] = ()) -> list[str]:
    """The launch keys of the field ``leaf`` a site reads: the ones the launch writes (the one with the printed
    value first), else the config class's own section, else every path of that name in the stack (two at most)."""
    written = written_keys(launch, leaf) if launch is not None else []
    bound = [e for e in site.bound if e.rsplit(".", 1)[-1] in site.site.names(leaf)]
    if bound and written:  # the argument whose value the message printed
        printed = str(site.bound[bound[0]]).strip()
        written = [k for k in written if launch.value(k) == printed] or written
    return (written or _of_class(site, leaf, options.get("verl_version")) or _of_role(site, leaf) or
            paths_for(leaf, site.site.package, chains or site.site.chains))[:2]


def _of_role(site: Match, leaf: str) -> list[str]:
    """A setting verl's rollout code reads (``self.config.pipeline_model_parallel_size`` in the PD replica): the
    rollout's key of that name, not the actor's Megatron size."""
    role = code_role(site.site.file) if site.site.package == "verl" else None
    key = f"{role}{leaf}" if role and role.endswith(".") else None
    return [key] if key and key in verl_keys._data()["keys"] else []


def _of_class(site: Match, leaf: str, verl_version: Optional[str] = None) -> list[str]:
    """A verl config class's own field (``self.ppo_mini_batch_size`` in ``ActorConfig.validate``): the key of the
    first section verl converts into that class (the actor's, not the critic's field of the same name)."""
    cls, _, _method = site.site.function.rpartition(".")
    if site.site.package != "verl" or not cls or not any(c == f"self.{name}" for c in site.site.chains
                                                          for name in site.site.names(leaf)):
        return []
    keys = verl_keys._data()["keys"]
    return [path for section in sections_of(cls, verl_version, derived=True) for path in [f"{section}.{leaf}"]
            if path in keys][:1]


def movable(leaf: str, launch: Optional[Replay]) -> bool:
    """Not a field verl's build sets itself (:func:`stack_set`), unless the launch writes it."""
    return leaf not in stack_set() or bool(launch is not None and written_keys(launch, leaf))


def written_keys(launch: Optional[Replay], leaf: str) -> list[str]:
    if launch is None:
        return []
    return [k for k in launch.keys() if k.rsplit(".", 1)[-1] == leaf]


def line(key: str, value: Any) -> str:
    leaf = key.rsplit(".", 1)[-1]
    return f"{key}={value}" if leaf in engine_keys() or ".override_transformer_config." not in key \
        else f"++{key}={value}"


def unique(causes: list[Cause]) -> list[Cause]:
    """One cause per key, the one with a fix line kept."""
    seen: dict[str, Cause] = {}
    for cause in causes:
        if cause.key not in seen or (cause.fix and not seen[cause.key].fix):
            seen[cause.key] = cause
    return list(seen.values())


__all__ = ["keys_of", "line", "movable", "settings", "stack_set", "unique", "writable", "written_keys"]
