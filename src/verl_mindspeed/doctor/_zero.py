"""A division by a setting that is zero: the code line the log prints divides by a config's field.

``ZeroDivisionError: integer division or modulo by zero`` names nothing; its frame's code line often does:
``assert self.config.ppo_mini_batch_size % self.config.ppo_micro_batch_size == 0`` in verl's critic divides by the
critic's micro batch size, so that setting is 0 in this run (often one verl derived by dividing a batch by the
number of devices). The key is named, with no line: which positive value the run wants, the log does not say.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from ..i18n import tr
from ._blame import MODEL_FIELDS, Cause, Verdict
from ._log import Raised
from ._paths import verl_leaves

#: Where a verl file's config is a section's own: a whole word of the frame's file name, or of the config's name in
#: the chain (``self.critic_config``), says which section's key a field is.
_SECTIONS = {"critic": "critic.", "reward": "reward_model.", "rollout": "actor_rollout_ref.rollout.",
             "ref": "actor_rollout_ref.ref.", "actor": "actor_rollout_ref.actor."}
#: A chain that is a verl config's: ``self.config.x``, ``config.x``, ``self.critic_config.x``.
_CONFIG = re.compile(r"^(?:self\.)?(?:(?P<own>\w+)_)?config\.(?:\w+\.)*?(?P<leaf>\w+)$")


def divided_by_zero(raised: Raised) -> Optional[Verdict]:
    """The setting the failing code line divides by (``% self.config.x``, ``/ config.x``, ``// self.critic_config.x``)
    in a verl frame: 0 here. None for another exception, a line not shown, a frame not verl's (megatron's arguments
    and user code are not a verl config), or a line with more than one divisor (which one was 0 is not said)."""
    if raised.type != "ZeroDivisionError" or not raised.code or not raised.frames:
        return None
    path = raised.frames[-1][0].replace("\\", "/")
    if "/verl/" not in path or any(f"/{other}/" in path for other in ("megatron", "mindspeed", "site-packages/vllm")):
        return None
    divisors = _divisors(raised.code)
    if len(divisors) != 1 or divisors[0] is None:
        return None
    found = _CONFIG.match(divisors[0])
    leaf = found.group("leaf") if found else None
    if leaf is None or leaf in MODEL_FIELDS:
        return None
    key = _key(leaf, path.rsplit("/", 1)[-1], found.group("own"))
    if key is None:
        return None
    return Verdict("override", tr(
        "ZeroDivisionError at {code}: it divides by {keys}, which is 0 in this run (set it, or the sizes verl derives "
        "it from, to a positive value)", code=raised.code.strip()[:160], keys=key), [Cause(key)], (leaf,), "possible")


def _divisors(code: str) -> list[Optional[str]]:
    """What a code line divides by (``%``, ``/``, ``//``, and their ``op=``): each divisor's source where it is an
    attribute chain, None where it is another expression (a sum, a call); a string's ``%`` formatting is none."""
    text = code.strip()
    text = text + " pass" if text.endswith(":") else text
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    out: list[Optional[str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, _DIVIDE):
            if isinstance(node.op, ast.Mod) and isinstance(node.left, (ast.Constant, ast.JoinedStr)):
                continue  # "step %d" % x formats a string
            out.append(_chain(node.right))
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, _DIVIDE):
            out.append(_chain(node.value))
    return out


_DIVIDE = (ast.Mod, ast.Div, ast.FloorDiv)


def _chain(node: ast.expr) -> Optional[str]:
    return ast.unparse(node) if isinstance(node, ast.Attribute) else None


def _key(leaf: str, file: str, own: Optional[str]) -> Optional[str]:
    """The verl key of a config field: the section the config's own name says (``critic_config``), else the one
    whole word of the frame's file name says (``dp_critic.py``; none where two do, or ``factory`` says nothing),
    else the field's only path."""
    paths = verl_leaves().get(leaf, ())
    words = set(re.split(r"[_.]", file))
    sections = [_SECTIONS[own]] if own in _SECTIONS else [v for k, v in _SECTIONS.items() if k in words]
    if len(sections) == 1:
        return next((p for p in paths if p.startswith(sections[0])), None)
    return paths[0] if not sections and len(paths) == 1 else None


__all__ = ["divided_by_zero"]
