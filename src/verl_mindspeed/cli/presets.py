"""``verl-mindspeed presets [NAME]``: the ``+mindspeed=<name>`` presets and exactly what each one sets."""

from __future__ import annotations

import argparse
import json

from .. import presets
from ..i18n import render, tr
from ._args import UsageError, add_common


def add_parser(sub: argparse._SubParsersAction, lang: str = "en") -> argparse.ArgumentParser:
    p = sub.add_parser("presets", allow_abbrev=False,
                       help=render(tr("list the +mindspeed=<name> presets, or show what one of them sets"), lang))
    p.add_argument("name", nargs="?", help=render(tr("a preset name (default: list them all)"), lang))
    p.add_argument("--json", action="store_true", help=render(tr("print JSON"), lang))
    add_common(p, lang)
    p.set_defaults(run=run)
    return p


def summary(name: str, lang: str) -> str:
    """The preset's one-line summary, without its ``mindspeed=<name>:`` head."""
    text = presets.description(name, lang)
    first = text.splitlines()[0] if text else name
    return first.split("：", 1)[-1] if lang == "zh" and "：" in first else first.split(": ", 1)[-1]


def run(ns: argparse.Namespace) -> int:
    say = lambda text: render(text, ns.lang)  # noqa: E731
    if ns.name is None:
        data = {n: summary(n, ns.lang) for n in presets.names()}
        if ns.json:
            print(json.dumps(data, indent=2, ensure_ascii=False))
        else:
            width = max(map(len, data))
            print("\n".join(f"{n.ljust(width)}  {line}" for n, line in data.items()))
            print("\n" + say(tr("use: {command}", command="python3 -m verl.trainer.main_ppo "
                                 "--config-name=ppo_megatron_trainer +mindspeed=<name> ...")))
        return 0
    if ns.name not in presets.names():
        from ..resolver._suggest import nearest

        near = nearest(ns.name, presets.names())
        raise UsageError(
            tr("no preset {name!r}; did you mean {near!r}? (available: {names})", name=ns.name, near=near,
               names=", ".join(presets.names())) if near else
            tr("no preset {name!r} (available: {names})", name=ns.name, names=", ".join(presets.names())))
    settings = presets.settings(ns.name)
    if ns.json:
        print(json.dumps({"name": ns.name, "description": presets.description(ns.name, ns.lang), "summary":
                          summary(ns.name, ns.lang), "sets": settings}, indent=2, ensure_ascii=False))
        return 0
    print(presets.description(ns.name, ns.lang), "\n")
    print(say(tr("+mindspeed={name} sets:", name=ns.name) if settings else
              tr("+mindspeed={name} sets no flag.", name=ns.name)))
    for key, value in settings.items():
        print(f"  {key}={value}")
    print(say(tr("and installs the verl-mindspeed Hydra callback (validation and injection before Ray starts).")))
    return 0
