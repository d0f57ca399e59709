"""Paths and the ``require`` helper shared by every test module (import as ``from helpers import ...``).

Tests that need the heavy stack (verl, megatron-core, torch, ray) call
``require("module")``: on a developer laptop without it they skip, but under
``tools/test.sh`` (``VERL_MINDSPEED_FULL_STACK=1``) a missing module is a failure, so
CI can never pass by skipping the real-component tests.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
from pathlib import Path

import pytest

from verl_mindspeed.doctor._replay import neutral

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
#: What every real verl launch sets besides its own settings (the micro batch size of each pass, rule
#: verl-micro-batch; the rollout engine, rule verl-mandatory-value): the doctor's neutral launch, without its
#: ``--config-name``.
BASIC = neutral()[1:]


def full_stack() -> bool:
    return os.environ.get("VERL_MINDSPEED_FULL_STACK") == "1"


def require(module: str):
    """Import ``module``; skip when absent, except under CI where absence fails the test."""
    try:
        return importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        if full_stack():
            pytest.fail(f"{module} must be importable under tools/test.sh: {exc!r}")
        pytest.skip(f"{module} not importable here: {exc!r}")


def deep_copy(cfg):
    """A deep copy of a composed config: a pickle round trip, five times faster than ``copy.deepcopy``."""
    import pickle

    return pickle.loads(pickle.dumps(cfg))


@contextlib.contextmanager
def interpolations_parsed_once():
    """OmegaConf parses an interpolation's text (``${...}``) with its ANTLR grammar each time it resolves one:
    resolving verl's whole config (``OmegaConf.resolve``, as verl's ``main_ppo`` does) parses the same hundred
    strings for every launch, 60% of the verl side's time in the conformance layer. Inside, each text is parsed
    once; the parse tree is read, never changed, by the resolver, and its tokens keep their own input."""
    import omegaconf.base
    import omegaconf.grammar_parser

    plain = omegaconf.base.parse
    omegaconf.base.parse = _parse_once(omegaconf.grammar_parser.parse)
    try:
        yield
    finally:
        omegaconf.base.parse = plain


@functools.lru_cache(maxsize=None)
def _parse_once(parse):
    return functools.lru_cache(maxsize=4096)(parse)
