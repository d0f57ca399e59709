"""A failure a newer release stops: the raise passed through a call that those releases make inside a ``try``.

MindSpeed's ``get_full_args`` called Megatron's ``get_args()`` bare, and verl's Megatron worker, calling
``repatch`` before Megatron's arguments exist, failed with "args is not initialized." (verl#2932). MindSpeed
2.2.0 and every branch since make that call inside ``try: ... except AssertionError`` for that very message. A
traceback is read as (caller, callee) frame pairs, innermost first: where the index (``caught``, built by
``tools/build_raise_index.py``) holds releases of the caller's package that keep the raised type around that call
(and, where their handler tests the message, this message), and every release that makes the call without keeping
it is older than those (or there is none), the package that ran is not one of them, and one of them is the fix. A
raise another exception followed ("During handling of the above exception") was caught: not this. No launch key
is at fault.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Mapping, Optional

from packaging.version import InvalidVersion, Version

from ..i18n import tr
from ._blame import Verdict
from ._log import Raised
from ._sites import index, relative

#: The built-in classes a handler of a base class keeps as well.
_OS = ("OSError",)
_CONNECTION = ("ConnectionError", "OSError")
_BASES = {"ModuleNotFoundError": ("ImportError",), "KeyError": ("LookupError",), "IndexError": ("LookupError",),
          "FileNotFoundError": _OS, "PermissionError": _OS, "TimeoutError": _OS, "IsADirectoryError": _OS,
          "InterruptedError": _OS, "ConnectionError": _OS, "BrokenPipeError": _CONNECTION,
          "ConnectionRefusedError": _CONNECTION, "ConnectionResetError": _CONNECTION,
          "ZeroDivisionError": ("ArithmeticError",), "OverflowError": ("ArithmeticError",),
          "NotImplementedError": ("RuntimeError",), "RecursionError": ("RuntimeError",),
          "UnboundLocalError": ("NameError",), "UnicodeDecodeError": ("UnicodeError", "ValueError")}


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


def _newer(keeping: list[str], others: list[str]) -> bool:
    """Every release that keeps the raise is newer than every one that does not (none, or versions that order)."""
    if not others:
        return True
    try:
        return min(Version(r) for r in keeping) > max(Version(r) for r in others)
    except InvalidVersion:  # branch names (MindSpeed's 26.1.0_core_r0.12.1, master): no order to read
        return False


def _kept(handlers: list, kinds: set[str], message: str) -> bool:
    """Whether the first handler that takes the raise (Python's first match) keeps it: every exception of its
    types, or those whose message holds its text; a handler that may raise again keeps nothing."""
    for types, keeps in handlers:
        if kinds & set(types):
            return keeps is not None and keeps in message
    return False


def _same(release: str, ran: Optional[str]) -> bool:
    if ran is None:
        return False
    try:
        return release == ran or Version(release) == Version(ran)
    except InvalidVersion:
        return False


def fixed_later(raised: Raised, ran: Optional[Mapping[str, str]] = None) -> Optional[Verdict]:
    """The newer releases that keep ``raised`` at a call its traceback passed through, as a version-skew verdict;
    None where none does, where the raise was caught (another followed it), or where the release of that package
    known to have run (``ran``: package -> release, from ``--verl-version``, ``--mindspeed-release``...) is one of
    them."""
    ran = dict(ran or {})
    if raised.handled:
        return None
    kinds = {raised.type, *_BASES.get(raised.type, ())}
    frames = raised.frames
    for (path, _line, function), (_p, _l, callee) in reversed(list(zip(frames, frames[1:]))):
        file = relative(path)
        entries = _by_call().get((file, function, callee), ()) if file else ()
        keep = [e for e in entries if _kept(e["h"], kinds, raised.message)
                and _newer(list(e["r"]), e["n"]) and not any(_same(r, ran.get(e["p"])) for r in e["r"])]
        if not keep:
            continue
        package = keep[0]["p"]
        releases = sorted({r for e in keep if e["p"] == package for r in e["r"]}, key=_order)
        what = tr("{type} passed through {function} ({file}) at its call of {callee}; {package} {releases} keep it "
                  "there: the {package} that ran is not one of them (a build or branch without that fix), and one of "
                  "them fixes this. No launch key is at fault", type=raised.type, function=function,
                  file=file, callee=callee, package=package, releases=", ".join(releases))
        return Verdict("version-skew", what, certainty="likely")
    return None


__all__ = ["fixed_later"]
