"""Composing verl's tree at C speed: the same YAML reading and override parsing Hydra does, done once and fast.

Two thirds of a composition is PyYAML's pure-Python scanner reading some thirty files, and Hydra parses every
override again after we did. Inside :func:`accelerated`:

- OmegaConf reads YAML with PyYAML's libyaml parser (``yaml.cyaml.CParser``) under OmegaConf's own loader class:
  its duplicate-key check, float resolver and missing timestamps are kept, because only the scanner and parser
  are swapped. ``tests/core/test_compose_fast.py`` loads every YAML file of every verl release both ways and
  requires equal results. Without libyaml (a PyYAML built without it) nothing changes.
- Hydra's ``OverridesParser.parse_overrides`` returns the :class:`Override` already parsed for the same text, in
  this process (Hydra reads, never changes, a parsed override).

Outside the context nothing is touched: a launch through verl's own ``main_ppo`` composes as verl does.
"""

from __future__ import annotations

import contextlib
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Optional

import omegaconf._utils as omegaconf_utils
import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

_PLAIN_LOADER = omegaconf_utils.get_yaml_loader


@lru_cache(maxsize=None)
def libyaml_loader() -> Optional[type]:
    """OmegaConf's loader class with libyaml's scanner and parser, or ``None`` when PyYAML has no libyaml."""
    if not getattr(yaml, "__with_libyaml__", False):
        return None
    from yaml.constructor import SafeConstructor
    from yaml.cyaml import CParser
    from yaml.resolver import Resolver

    class OmegaConfCLoader(CParser, _PLAIN_LOADER()):
        """CParser first: its C methods replace the reader, scanner, parser and composer; OmegaConf's constructor
        and resolver methods are inherited as they are."""

        def __init__(self, stream: Any) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    return OmegaConfCLoader


def read_yaml(path: Path) -> Any:
    """A YAML file as the plain data ``OmegaConf.load`` holds (interpolations left as text), through libyaml
    when PyYAML has it: for files read only for their keys and values, not composed."""
    loader = libyaml_loader()
    if loader is None:
        return OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=loader)  # noqa: S506 - OmegaConf's own safe loader, libyaml's parser


#: Each override text parsed once per process (check-files reads many launches sharing most of their lines).
_PARSED: dict[str, Any] = {}


@contextlib.contextmanager
def accelerated() -> Iterator[None]:
    """YAML through libyaml and each override parsed once, for the compositions made inside."""
    loader = libyaml_loader()
    parsed = _PARSED
    plain_parse = OverridesParser.parse_overrides

    def parse_once(self: OverridesParser, overrides: list[str]) -> list:
        out = []
        for text in overrides:
            if text not in parsed:
                if len(parsed) > 20_000:  # a long check-files run: keep memory bounded
                    parsed.clear()
                parsed[text] = plain_parse(self, [text])
            out.extend(parsed[text])
        return out

    saved = omegaconf_utils.get_yaml_loader
    OverridesParser.parse_overrides = parse_once  # type: ignore[method-assign]
    if loader is not None:
        omegaconf_utils.get_yaml_loader = lambda: loader
    try:
        yield
    finally:
        OverridesParser.parse_overrides = plain_parse  # type: ignore[method-assign]
        omegaconf_utils.get_yaml_loader = saved


__all__ = ["accelerated", "libyaml_loader", "read_yaml"]
