"""``verl-mindspeed upstream-env [LINE...]``: build ahead of time the environments ``check --upstream`` runs in."""

from __future__ import annotations

import argparse
import sys

from .. import upstream
from ..i18n import render, tr
from ._args import UsageError, add_common


def add_parser(sub: argparse._SubParsersAction, lang: str = "en") -> argparse.ArgumentParser:
    p = sub.add_parser("upstream-env", allow_abbrev=False, help=render(tr(
        "build (once) the environment check --upstream runs MindSpeed in, per megatron-core line"), lang),
        description=render(tr(
            "One virtual environment per megatron-core line in the cache folder ({path}): torch's CPU wheel, "
            "megatron-core and what Megatron-LM's megatron/training imports. Reused while its requirements are "
            "unchanged; your own environment is never touched. Prints each line's python.",
            path=upstream.envs_dir()), lang))
    p.add_argument("lines", nargs="*", metavar="LINE", help=render(tr(
        "megatron-core lines to prepare ({choices}; default: the MindSpeed lines; {bridge_only}: Megatron-Bridge's "
        "Python 3.12 environment, about 7 GB)", choices=", ".join([*upstream.LINES.values(), *upstream.BRIDGE_ONLY]),
        bridge_only=", ".join(upstream.BRIDGE_ONLY)), lang))
    add_common(p, lang)
    p.set_defaults(run=run)
    return p


def run(ns: argparse.Namespace) -> int:
    known = [*upstream.LINES.values(), *upstream.BRIDGE_ONLY]
    for line in ns.lines:
        if line not in known:
            raise UsageError(tr("unknown megatron-core line {line!r}; choose from {choices}", line=line,
                                choices=", ".join(known)))

    def progress(text) -> None:
        print(f"verl-mindspeed: {render(text, ns.lang)}", file=sys.stderr, flush=True)

    for line in ns.lines or upstream.LINES.values():
        print(f"{line} {upstream.prepare(line, progress)}")
    return 0
