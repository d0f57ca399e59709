"""A division by a setting that is zero: the code line the log prints divides by a config's field.

``ZeroDivisionError: integer division or modulo by zero`` names nothing; its frame's code line often does:
``assert self.config.ppo_mini_batch_size % self.config.ppo_micro_batch_size == 0`` in verl's critic divides by the
critic's micro batch size, so that setting is 0 in this run (often one verl derived by dividing a batch by the
number of devices). The key is named, with no line: which positive value the run wants, the log does not say.
"""

from __future__ import annotations

import ast
from typing import Optional

from ..i18n import tr
from ._blame import MODEL_FIELDS, Cause, Verdict, verl_leaves
from ._log import Raised

#: Where a verl file's config is a section's own: the frame's file says which section's key a field is.
_SECTIONS = (("critic", "critic."), ("reward", "reward_model."), ("rollout", "actor_rollout_ref.rollout."),
             ("ref", "actor_rollout_ref.ref."), ("actor", "actor_rollout_ref.actor."))


def divided_by_zero(raised: Raised) -> Optional[Verdict]:
    """The settings the failing code line divides by (``% self.config.x``, ``/ config.x``, ``// args.x``): each is 0
    here. None for another exception, a line not shown, or a divisor that is no setting verl has."""
    if raised.type != "ZeroDivisionError" or not raised.code or not raised.frames:
        return None
    divisors = [leaf for leaf in _divisors(raised.code) if leaf not in MODEL_FIELDS]
    where = raised.frames[-1][0].replace("\\", "/").rsplit("/", 1)[-1]
    keys = [key for leaf in dict.fromkeys(divisors) for key in [_key(leaf, where)] if key]
    if not keys:
        return None
    return Verdict("override", tr(
        "ZeroDivisionError at {code}: it divides by {keys}, which is 0 in this run (set it, or the sizes verl derives "
        "it from, to a positive value)", code=raised.code.strip()[:160], keys=", ".join(keys)),
        [Cause(key) for key in keys], tuple(divisors), "possible")


def _divisors(code: str) -> list[str]:
    """The fields a code line divides by: the right side of ``%``, ``/`` and ``//`` where it is ``x.y.field``."""
    text = code.strip().rstrip(":")
    for head in ("assert ", "if ", "elif ", "while ", "return "):
        if text.startswith(head):
            text = text[len(head):]
            break
    text = text.split(", ", 1)[0] if text.count("(") == text.count(")") else text  # an assert's message
    try:
        tree = ast.parse(text.split("=", 1)[-1] if _assigns(text) else text, mode="eval")
    except SyntaxError:
        return []
    return [node.right.attr for node in ast.walk(tree) if isinstance(node, ast.BinOp)
            and isinstance(node.op, (ast.Mod, ast.Div, ast.FloorDiv)) and isinstance(node.right, ast.Attribute)]


def _assigns(text: str) -> bool:
    """``x = a // b`` (not ``a == b``, ``a <= b``, ``a != b``)."""
    head, sep, _rest = text.partition("=")
    return bool(sep) and head.strip().replace(".", "").replace("_", "").isalnum() and not _rest.startswith("=")


def _key(leaf: str, file: str) -> Optional[str]:
    """The verl key of a field the frame's file divides by: the section its file name says (``dp_critic.py``:
    the critic's), else its only path."""
    paths = verl_leaves().get(leaf, ())
    for word, section in _SECTIONS:
        if word in file:
            return next((p for p in paths if p.startswith(section)), None)
    return paths[0] if len(paths) == 1 else None


__all__ = ["divided_by_zero"]
