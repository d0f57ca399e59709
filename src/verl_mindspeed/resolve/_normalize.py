"""Turn what the user wrote into what MindSpeed really reads (mindspeed/megatron_adaptor.py repatch: setattr of every key, no type check).

Every change is reported: aliases become canonical keys with a warning, and a
value rewritten into MindSpeed's form (``noop_layers``, ``"none"``) gets a note.
"""

from __future__ import annotations

from typing import Any, Optional

from .. import catalog
from ..errors import Issue
from ..rules._base import error, fmt, issue, warning

PERMUTE = "use_fused_moe_token_permute_and_unpermute"
PERMUTE_MEGATRON = "moe_permute_fusion"


def noop_layers_string(value: Any) -> tuple[Optional[str], Optional[str]]:
    """(digit string, None) for a valid layer set, or (None, reason).

    Accepts what users type: ``"0,7"``, ``"0, 7"``, ``[0, 7]``, ``7``.
    """
    if isinstance(value, bool):
        return None, f"must be layer indices such as \"0,7\", got {value!r}"
    if isinstance(value, int):
        items: list[Any] = [value]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, str):
        items = [p.strip() for p in value.split(",")] if value.strip() else []
    else:
        return None, f"must be layer indices such as \"0,7\", got {value!r}"
    out = []
    for item in items:
        if isinstance(item, bool):
            return None, f"holds {item!r}, not a layer index"
        if isinstance(item, int) and item >= 0:
            out.append(item)
        elif isinstance(item, str) and item.isdigit():
            out.append(int(item))
        else:
            return None, f"holds {item!r}, not a layer index (digits only, such as \"0,7\")"
    if not out:
        return None, "is empty; remove the key or list layer indices such as \"0,7\""
    return ",".join(str(i) for i in out), None


def normalize(prefix: str, raw: dict[str, Any]) -> tuple[dict[str, Any], list[Issue]]:
    """Canonical keys and MindSpeed-readable values for one role's ``override_transformer_config``."""
    issues: list[Issue] = []
    out: dict[str, Any] = {}
    alias_map = catalog.aliases()
    key = lambda name: f"{prefix}.{catalog.OTC}.{name}"  # noqa: E731
    for name, value in raw.items():
        canonical = alias_map.get(name)
        if canonical is None:
            out.setdefault(name, value)
            continue
        issues.append(warning(
            key(name), f"'{name}' does not exist in MindSpeed; it is read as '{canonical}' (and megatron's "
            f"'{PERMUTE_MEGATRON}', which MindSpeed keeps equal)", "alias",
            hint="the feature guide names a flag MindSpeed does not have", suggestion=key(canonical),
        ))
        if canonical in raw and raw[canonical] != value:
            issues.append(error(
                key(name), f"'{name}'={fmt(value)} and '{canonical}'={fmt(raw[canonical])} contradict each other",
                "alias", hint=f"keep only {canonical}",
            ))
            continue
        out[canonical] = value
    # MindSpeed keeps its permute flag and megatron's equal: write both when either is set.
    if PERMUTE in out and PERMUTE_MEGATRON not in out:
        out[PERMUTE_MEGATRON] = out[PERMUTE]
    elif PERMUTE_MEGATRON in out and PERMUTE not in out and isinstance(out[PERMUTE_MEGATRON], bool):
        out[PERMUTE] = out[PERMUTE_MEGATRON]

    if "noop_layers" in out and out["noop_layers"] is not None:
        text, problem = noop_layers_string(out["noop_layers"])
        if problem:
            issues.append(error(key("noop_layers"), problem, "noop-layers-format",
                                hint='quote it on the command line: \'+...noop_layers="0,7"\''))
        elif text != out["noop_layers"]:
            issues.append(issue(
                "note", key("noop_layers"), f"{out['noop_layers']!r} rewritten as {text!r}: MindSpeed reads only a "
                "comma-separated digit string (a list or an int is silently ignored, spaces raise)", "noop-layers-format",
            ))
            out["noop_layers"] = text

    gran = out.get("recompute_granularity")
    if isinstance(gran, str) and gran.strip().lower() in ("none", "null", ""):
        issues.append(issue(
            "note", key("recompute_granularity"), f"{gran!r} rewritten as null: megatron rejects the string "
            "and treats null as 'no recompute'", "recompute-none-string",
            hint=f"write {key('recompute_granularity')}=null",
        ))
        out["recompute_granularity"] = None
    return out, issues
