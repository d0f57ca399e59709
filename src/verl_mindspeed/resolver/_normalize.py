"""Turn what the user wrote into what MindSpeed really reads.

``mindspeed/megatron_adaptor.py`` ``repatch`` ``setattr``s every key as it is, with no type check. A
launch through verl-mindspeed gets the dict rewritten into the form MindSpeed reads, each rewrite
reported as a note; a plain verl launch passes the dict as written, so the same spellings are reported
as what they will do there: ignored (a warning) or raised (an error), with the line that fixes them.
"""

from __future__ import annotations

from typing import Any, Optional

from .. import catalog
from ..catalog import PERMUTE, PERMUTE_MEGATRON
from ..errors import Issue
from ..i18n import tr
from ..rules._base import error, fmt, note, warning


def noop_layers_string(value: Any) -> tuple[Optional[str], Optional[str]]:
    """(digit string, None) for a valid layer set, or (None, reason).

    Accepts what users type: ``"0,7"``, ``"0, 7"``, ``[0, 7]``, ``7``. Indices form a set, as
    MindSpeed's no-op layer feature reads them; the string lists each once, in order.
    """
    if isinstance(value, bool):
        return None, tr('must be layer indices such as "0,7", got {value}', value=repr(value))
    if isinstance(value, int):
        items: list[Any] = [value]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, str):
        items = [p.strip() for p in value.split(",")] if value.strip() else []
    else:
        return None, tr('must be layer indices such as "0,7", got {value}', value=repr(value))
    out: list[int] = []
    for item in items:
        if isinstance(item, bool):
            return None, tr("holds {item}, not a layer index", item=repr(item))
        if isinstance(item, int) and item >= 0:
            index = item
        elif isinstance(item, str) and item.isdigit():
            index = int(item)
        else:
            return None, tr('holds {item}, not a layer index (digits only, such as "0,7")', item=repr(item))
        if index not in out:
            out.append(index)
    if not out:
        return None, tr('is empty; remove the key or list layer indices such as "0,7"')
    return ",".join(str(i) for i in out), None


def _digits_of(value: Any) -> Optional[str]:
    """The layer indices a malformed ``noop_layers`` still holds (``'a,1'`` -> ``'1'``), or None."""
    items = value if isinstance(value, (list, tuple)) else str(value).split(",") if isinstance(value, str) else []
    found: list[str] = []
    for item in items:
        text = str(item).strip()
        if not isinstance(item, bool) and text.isdigit() and str(int(text)) not in found:
            found.append(str(int(text)))
    return ",".join(found) or None


def normalize(prefix: str, raw: dict[str, Any], *, injected: bool = True) -> tuple[dict[str, Any], list[Issue]]:
    """Canonical keys and MindSpeed-readable values for one role's ``override_transformer_config``."""
    issues: list[Issue] = []
    out: dict[str, Any] = {}
    alias_map = catalog.aliases()

    def key(name: str) -> str:
        return f"{prefix}.{catalog.OTC}.{name}"

    for name, value in raw.items():
        canonical = alias_map.get(name)
        if canonical is None:
            out.setdefault(name, value)
            continue
        if canonical in raw and raw[canonical] != value:
            issues.append(error(key(name), tr("'{alias}'={a} and '{canonical}'={b} contradict each other",
                                              alias=name, a=fmt(value), canonical=canonical, b=fmt(raw[canonical])),
                                "alias", hint=tr("keep only {canonical}", canonical=canonical)))
            continue
        if injected:
            issues.append(warning(key(name), tr(
                "'{alias}' does not exist in MindSpeed; verl-mindspeed writes it as '{canonical}' (and megatron's "
                "'{twin}', which MindSpeed keeps equal)", alias=name, canonical=canonical, twin=PERMUTE_MEGATRON),
                "alias", hint=tr("the feature guide names a flag MindSpeed does not have"),
                suggestion=key(canonical)))
        else:
            issues.append(error(key(name), tr(
                "unknown key '{alias}'; did you mean '{canonical}'? MindSpeed never reads '{alias}', so a plain "
                "verl launch runs without the fused operator", alias=name, canonical=canonical),
                "alias", hint=tr("the feature guide names a flag MindSpeed does not have"),
                suggestion=key(canonical)))
        out[canonical] = value
    # MindSpeed's fused-permute feature turns both switches on when either is on.
    if isinstance(out.get(PERMUTE), bool) or isinstance(out.get(PERMUTE_MEGATRON), bool):
        either = out.get(PERMUTE) is True or out.get(PERMUTE_MEGATRON) is True
        for name in (PERMUTE, PERMUTE_MEGATRON):
            if name in out and isinstance(out[name], bool) and out[name] != either:
                issues.append(note(key(name), tr(
                    "{a}={va} and {b}={vb} disagree; MindSpeed turns both on", a=PERMUTE, va=fmt(out.get(PERMUTE)),
                    b=PERMUTE_MEGATRON, vb=fmt(out.get(PERMUTE_MEGATRON))), "permute-fusion-flags-agree"))
                break
        out[PERMUTE] = out[PERMUTE_MEGATRON] = either
    issues += _noop_layers(out, key, injected)
    issues += _recompute_none(out, key, injected)
    return out, issues


def _noop_layers(out: dict[str, Any], key, injected: bool) -> list[Issue]:
    value = out.get("noop_layers")
    if value is None:
        return []
    text, problem = noop_layers_string(value)
    if problem:
        digits = _digits_of(value)
        return [error(key("noop_layers"), tr("noop_layers {problem}", problem=problem), "noop-layers-format",
                      hint=tr("quote it on the command line: '+...noop_layers=\"0,7\"'"),
                      override=f"'++{key('noop_layers')}=\"{digits}\"'" if digits else None)]
    if text == value:
        return []
    out["noop_layers"] = text
    if injected:
        return [note(key("noop_layers"), tr(
            "noop_layers={value} rewritten as {text}: MindSpeed reads only a comma-separated digit string",
            value=repr(value), text=repr(text)), "noop-layers-format")]
    fix = f"'++{key('noop_layers')}=\"{text}\"'"  # quoted for the shell: Hydra reads 0,7 unquoted as a sweep
    if isinstance(value, str):  # digits with spaces: MindSpeed's int() conversion raises
        return [error(key("noop_layers"), tr(
            "noop_layers={value}: MindSpeed converts only a comma-separated digit string without spaces and raises "
            "on this one", value=repr(value)), "noop-layers-format", override=fix)]
    return [warning(key("noop_layers"), tr(
        "noop_layers={value}: MindSpeed reads only a comma-separated digit string and silently ignores a list or "
        "an int, so no layer becomes a no-op layer", value=repr(value)), "noop-layers-format", override=fix)]


def _recompute_none(out: dict[str, Any], key, injected: bool) -> list[Issue]:
    gran = out.get("recompute_granularity")
    if not (isinstance(gran, str) and gran.strip().lower() in ("none", "null", "")):
        return []
    out["recompute_granularity"] = None
    fix = f"++{key('recompute_granularity')}=null"
    if injected:
        return [note(key("recompute_granularity"), tr(
            "{value} rewritten as null: megatron rejects the string and treats null as 'no recompute'",
            value=repr(gran)), "recompute-none-string", override=fix)]
    return [error(key("recompute_granularity"), tr(
        "recompute_granularity={value} requires null instead: megatron's TransformerConfig accepts only full, "
        "selective or null", value=repr(gran)), "recompute-none-string", override=fix)]
