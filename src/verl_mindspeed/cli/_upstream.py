"""``--upstream`` and its options, shared by ``check`` and ``check-files``: MindSpeed's own verdict on the launch."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from ..errors import EvaluationError
from ..i18n import render, tr


def add_options(p: argparse.ArgumentParser, lang: str) -> None:
    say = lambda text: render(text, lang)  # noqa: E731
    p.add_argument("--upstream", action="store_true", help=say(tr(
        "also run MindSpeed's and megatron-core's own Python on the launch, in a subprocess on CPU (a few seconds; "
        "repeated launches come from a cache)")))
    p.add_argument("--mindspeed-src", metavar="PATH", help=say(tr(
        "with --upstream: a MindSpeed source folder or release archive (.tar.gz); default: the installed mindspeed")))
    p.add_argument("--megatron-src", metavar="PATH", help=say(tr(
        "with --upstream: Megatron-LM's source (folder or archive holding megatron/training); default: one named "
        "megatron-lm-training-core_v<line> beside --mindspeed-src, else the installed megatron.training")))
    p.add_argument("--upstream-python", metavar="PYTHON", help=say(tr(
        "with --upstream: the interpreter to run upstream in (an NPU host's own python, with torch_npu); default: "
        "this one if it has the right megatron-core, else an environment built once in the cache folder")))


def _used(ns: argparse.Namespace) -> bool:
    return any(getattr(ns, name, None) for name in ("mindspeed_src", "megatron_src", "upstream_python"))


def sources_of(ns: argparse.Namespace) -> Optional[Any]:
    """The upstream sources for ``--upstream`` (``None`` without it); a usage problem is an EvaluationError.
    Without ``--mindspeed-release`` the hand rules judge the release the sources name, when it is a known one."""
    if not getattr(ns, "upstream", False):
        if _used(ns):
            raise EvaluationError(tr("--mindspeed-src, --megatron-src and --upstream-python need --upstream"))
        return None
    from .. import upstream  # the oracle's machinery, imported only for --upstream

    try:
        src = upstream.locate(ns.mindspeed_src, ns.megatron_src, ns.megatron_core)
    except upstream.SourceError as exc:
        raise EvaluationError(exc.args[0]) from exc
    ns.mindspeed_release = ns.mindspeed_release or src.known_release
    return src


def judge(res: Any, ns: argparse.Namespace, src: Any) -> None:
    """Add upstream's findings to ``res`` (nothing without ``--upstream``)."""
    if src is None:
        return
    from .. import upstream

    lang = ns.lang

    def progress(text: Any) -> None:
        print(f"verl-mindspeed: {render(text, lang)}", file=sys.stderr, flush=True)

    try:
        upstream.judge(res, sources=src, python=ns.upstream_python, progress=progress)
    except upstream.SourceError as exc:
        raise EvaluationError(exc.args[0]) from exc
