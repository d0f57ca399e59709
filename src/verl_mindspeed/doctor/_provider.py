"""A key the model's config class lacks: verl hands a role's ``override_transformer_config`` to the class it builds the
model with, and that class refuses a name it has no field for.

- Megatron-Bridge's provider (verl 0.9.1's default path): ``apply_overrides_and_finalize`` raises
  ``AttributeError: GPTModelProvider has no attribute 'x'.``
- megatron-core's config (mbridge's ``set_extra_args``, verl's converter): ``TypeError:
  MLATransformerConfig.__init__() got an unexpected keyword argument 'x'``.

The name is the key as the launch wrote it under ``override_transformer_config``: where the launch (given, or the
override list Hydra printed) writes it, that key is at fault, with ``check``'s line for it (a near miss's name, or the
deletion). verl's own code passes keys too (verl#1944: the converter's misspelled ``rotary_type``), so where the
launch writes no such key, no launch key is blamed. Without the launch, the provider's refusal is not placed (a
typo'd key and a key verl's code passes read the same); megatron-core's stays a version mismatch, which is what every
public report of it here was.
"""

from __future__ import annotations

import re
from typing import Optional

from ..i18n import Msg, tr
from ._blame import Cause, Verdict
from ._log import Raised
from ._replay import Replay, checked_cause, replay

_NO_ATTRIBUTE = re.compile(r"(?P<cls>\w+Provider) has no attribute '(?P<name>\w+)'\.?\s*$")
_NO_KEYWORD = re.compile(r"(?P<cls>\w*TransformerConfig)\.__init__\(\) got an unexpected keyword argument "
                         r"'(?P<name>\w+)'")
SECTION = "override_transformer_config"


def lacked(raised: Raised) -> Optional[tuple[str, str]]:
    """(the class, the name) where the model's config class refused a name it was given."""
    first = raised.message.strip().split("\n")[0] if raised.message else ""
    hit = (_NO_ATTRIBUTE.match(first) if raised.type == "AttributeError" else
           _NO_KEYWORD.search(first) if raised.type == "TypeError" else None)
    return (hit.group("cls"), hit.group("name")) if hit else None


def provider_field(raised: Raised, what: Msg, launch: Optional[Replay], appends: dict[str, str],
                   options: dict) -> Optional[Verdict]:
    """The launch's ``override_transformer_config`` key the model's config class refused, with ``check``'s line;
    ``unknown`` without the launch; None where the launch writes no such key (verl's code passed it)."""
    hit = lacked(raised)
    if hit is None:
        return None
    cls, name = hit
    written = list(launch.keys()) if launch is not None else []
    written += [k for k in appends if k not in written]
    keys = [k for k in dict.fromkeys(written) if k.endswith(f"{SECTION}.{name}")]
    if not keys:  # megatron-core's refusal without the launch stays what it was: two packages' versions (verl#1944,
        # slime#1702: each a key a package's code passed, none a user's)
        if launch is None and not appends and raised.type == "AttributeError":
            return Verdict("unknown", tr(
                "{what}: {cls}, the class verl builds the model's config with, has no field {name}: a key written "
                "in a role's {section}, or one verl's own code passes (a version mismatch); give the launch "
                "(--args-file) to tell which", what=what, cls=cls, name=name, section=SECTION), [], (name,))
        return None
    causes = [_cause(key, launch, appends, options) for key in keys]
    return Verdict("override", tr(
        "{what}: the launch writes {name} in {section}, which verl hands to {cls} as it stands, and {cls} has no "
        "such field", what=what, name=name, section=SECTION, cls=cls), causes, (name,),
        "confirmed" if all(c.confirmed for c in causes) else "likely")


def _cause(key: str, launch: Optional[Replay], appends: dict[str, str], options: dict) -> Cause:
    """``check``'s line on the key (a near miss, or its deletion), on the launch or, where only Hydra's list holds
    the argument, on that argument alone; else the argument deleted."""
    probe = launch if launch is not None and key in launch.keys() else replay(
        ["--config-name=ppo_megatron_trainer", appends[key]], None, **options) if key in appends else None
    return checked_cause(key, probe, launch, options, delete=True)


__all__ = ["lacked", "provider_field"]
