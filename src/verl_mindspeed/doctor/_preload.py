"""A shared library the loader cannot load this late: glibc's static TLS block, full.

``libgomp.so.1: cannot allocate memory in static TLS block`` (common on aarch64 hosts, Ascend's among them, where
scikit-learn's or torch's OpenMP is opened after the block fills) is the environment's: the library, loaded first
through ``LD_PRELOAD``, gets its thread-local storage before the others.
"""

from __future__ import annotations

import re
import shlex
from typing import Optional

from ..i18n import tr
from ._blame import Cause, Verdict
from ._log import Raised

#: glibc's loader refusing a shared library a late ``dlopen`` loads (common on aarch64, for OpenMP's libgomp): the
#: library named, loaded first through ``LD_PRELOAD``, gets its thread-local storage before the block fills.
_STATIC_TLS = re.compile(r"cannot allocate memory in static TLS block|cannot load any more object with static TLS")
#: The library's path, whole: at the start of a line or after ``Type: `` (a path with a space is not read).
_TLS_LIB = re.compile(r"(?:^|(?<=: ))(?P<lib>[^\s:'\"]+\.so(?:\.[\w.-]+)?): cannot allocate memory in static TLS block",
                      re.M)


def static_tls(raised: Raised) -> Optional[Verdict]:
    """A library the loader cannot load this late: ``LD_PRELOAD`` loads it first, in every process it starts. The
    line quotes the path for the shell and keeps what ``LD_PRELOAD`` held (unset or not, under ``set -u`` too)."""
    if not _STATIC_TLS.search(raised.message):
        return None
    hit = _TLS_LIB.search(raised.message)
    lib = hit.group("lib") if hit else None
    # a relative path is the raising process's (a Ray worker's working directory): a soname or an absolute path only
    fix = f"export LD_PRELOAD={shlex.quote(lib)}${{LD_PRELOAD:+:$LD_PRELOAD}}" \
        if lib and (lib.startswith("/") or "/" not in lib) else None
    return Verdict("env", tr(
        "{type}: {lib} cannot be loaded this late (the loader's static TLS block is full): load it first with "
        "LD_PRELOAD, exported before Ray starts its workers", type=raised.type,
        lib=lib or tr("the library the message names")), [Cause("LD_PRELOAD", fix)], certainty="likely")


__all__ = ["static_tls"]
