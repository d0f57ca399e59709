"""Shared fixtures: Hydra state reset, and verl's real composed config for resolver tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers import BASIC, full_stack


def _hypothesis_profiles() -> None:
    """Under CI (``.ci/run`` sets VERL_MINDSPEED_REQUIRE_CONFORMANCE) the property tests draw the same examples
    on every run, so a landing never depends on a random draw; a developer's run explores new ones each time and
    prints the blob that reproduces a failure."""
    try:
        from hypothesis import settings
    except ImportError:
        return
    import os

    settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
    settings.register_profile("dev", print_blob=True)
    settings.load_profile("ci" if os.environ.get("VERL_MINDSPEED_REQUIRE_CONFORMANCE") == "1" or os.environ.get("CI")
                          else "dev")


_hypothesis_profiles()


def pytest_collection_modifyitems(config, items):
    """Tiers as markers. ``integration`` (verl's whole stack, wheels, Ray) is ``slow``; ``conformance`` runs the
    upstream oracle; ``-m "not slow and not conformance"`` is the unit tier. ``tools/test.sh`` spreads whole files
    over its workers (``--dist loadfile``): a file's module fixtures (a megatron build, a wheel, an oracle pool)
    are made once; a per-test spread measured slower (those fixtures and the caches behind them made twice)."""
    for item in items:
        path = Path(str(item.fspath))
        if "integration" in path.parts:
            item.add_marker(pytest.mark.slow)
        if "conformance" in path.parts:
            item.add_marker(pytest.mark.conformance)


@pytest.fixture(autouse=True, scope="session")
def _compose_each_launch_once():
    """Every composition in the suite goes through :class:`verl_mindspeed.compose._memo.ComposeMemo` (what
    ``check-files`` uses): verl's tree composed once per worker for each set of top-level overrides, the launch's
    dotted overrides applied by Hydra's own code. Yields Hydra's plain compose, for the test that compares the two."""
    from verl_mindspeed.compose import _hydra_run
    from verl_mindspeed.compose._memo import ComposeMemo

    plain = _hydra_run.compose
    memo = ComposeMemo(plain)
    mp = pytest.MonkeyPatch()
    for module in (_hydra_run, sys.modules["verl_mindspeed.compose"]):
        mp.setattr(module, "compose", memo)
    yield plain
    mp.undo()


@pytest.fixture(autouse=True)
def _reset_hydra():
    """Hydra keeps global state; clear it around every test."""
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    yield
    GlobalHydra.instance().clear()


def _need_verl():
    import importlib.util

    if importlib.util.find_spec("verl") is None:
        if full_stack():
            pytest.fail("verl must be installed under .ci/run")
        pytest.skip("verl is not installed here")


@pytest.fixture(scope="session")
def base_cfg():
    """verl's real ppo_megatron_trainer config, composed once by Hydra (GRPO with a KL loss: actor + ref)."""
    _need_verl()
    from verl_mindspeed.compose import compose_argv

    comp = compose_argv(["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo",
                         "actor_rollout_ref.actor.use_kl_loss=True", *BASIC])
    return comp


@pytest.fixture
def make_cfg(base_cfg):
    """A fresh copy of the composed config with ``{dotted_key: value}`` applied like ``++key=value``."""
    from omegaconf import OmegaConf

    from helpers import deep_copy

    def build(settings: dict | None = None):
        cfg = deep_copy(base_cfg.cfg)
        for key, value in (settings or {}).items():
            OmegaConf.update(cfg, key, value, force_add=True)
        return cfg

    return build


@pytest.fixture
def resolve_cfg(base_cfg, make_cfg):
    """Resolve ``{key: value}`` settings against verl's real tree (known keys and defaults included)."""
    from verl_mindspeed.resolver import resolve

    def run(settings: dict | None = None, **kw):
        kw.setdefault("injected", True)  # most unit tests judge the dicts verl-mindspeed writes
        tree = base_cfg.tree
        return resolve(make_cfg(settings), known_megatron_keys=tree.known_megatron_keys,
                       otc_defaults=tree.otc_defaults, **kw)

    return run
