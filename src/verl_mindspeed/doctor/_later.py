"""A failure a later release stops: the raise passed through a call that those releases make inside a ``try``.

MindSpeed's ``get_full_args`` called Megatron's ``get_args()`` bare, and verl's Megatron worker, calling
``repatch`` before Megatron's arguments exist, failed with "args is not initialized." (verl#2932). MindSpeed
2.2.0 and every branch since make that call inside ``try: ... except AssertionError`` for that very message. A
traceback is read as (caller, callee) frame pairs, innermost first: where the index (``caught``, built by
``tools/build_raise_index.py``) holds releases of the caller's package that keep the raised type around that call
(and, where their handler tests the message, this message), the package that ran is not one of them, and one of
them is the fix. No launch key is at fault.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

from ..i18n import tr
from ._blame import Verdict
from ._log import Raised
from ._sites import index, relative

#: The built-in classes a handler of a base class keeps as well.
_BASES = {"ModuleNotFoundError": ("ImportError",), "KeyError": ("LookupError",), "IndexError": ("LookupError",),
          "FileNotFoundError": ("OSError",), "PermissionError": ("OSError",), "TimeoutError": ("OSError",),
          "ConnectionError": ("OSError",), "ZeroDivisionError": ("ArithmeticError",),
          "OverflowError": ("ArithmeticError",), "NotImplementedError": ("RuntimeError",),
          "RecursionError": ("RuntimeError",), "UnicodeDecodeError": ("UnicodeError", "ValueError")}


@lru_cache(maxsize=1)
def _by_call() -> dict[tuple[str, str, str], list[dict]]:
    """(file, function's own name, callee) -> the index's entries."""
    out: dict[tuple[str, str, str], list[dict]] = {}
    for entry in index().get("caught", ()):
        out.setdefault((entry["f"], entry["fn"].rsplit(".", 1)[-1], entry["call"]), []).append(entry)
    return out


def _order(release: str) -> tuple:
    """Releases by name (MindSpeed's ``2.2.0_core_r0.12.1`` ... ``26.1.0_...``, then ``core_r0.16.0`` ...), a
    branch without a number (``master``) last."""
    return (not re.search(r"\d", release), release)


def fixed_later(raised: Raised) -> Optional[Verdict]:
    """The releases that keep ``raised`` at a call its traceback passed through, as a version-skew verdict; None
    where no release here does."""
    kinds = {raised.type, *_BASES.get(raised.type, ())}
    frames = raised.frames
    for (path, _line, function), (_p, _l, callee) in reversed(list(zip(frames, frames[1:]))):
        file = relative(path)
        entries = _by_call().get((file, function, callee), ()) if file else ()
        keep = [e for e in entries if kinds & set(e["x"]) and e.get("m", "") in raised.message]
        if not keep:
            continue
        package = keep[0]["p"]
        releases = sorted({r for e in keep if e["p"] == package for r in e["r"]}, key=_order)
        what = tr("{type} passed through {function} ({file}) at its call of {callee}; {package} {releases} keep it "
                  "there: the {package} that ran is not one of them (an older build, or a branch without that fix), "
                  "and one of them fixes this. No launch key is at fault", type=raised.type, function=function,
                  file=file, callee=callee, package=package, releases=", ".join(releases))
        return Verdict("version-skew", what, certainty="likely")
    return None


__all__ = ["fixed_later"]
