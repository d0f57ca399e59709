"""Fixtures of the conformance layer: the upstream sources, the oracle workers, verl's composed base config.

Without the sources (``VERL_MINDSPEED_UPSTREAM``, or ``../shared/upstream``) or the oracle venvs
(``verl-mindspeed upstream-env``) every test here skips and says why; with ``VERL_MINDSPEED_REQUIRE_CONFORMANCE=1``
(CI) each of those is a failure instead, and so is a session in which no conformance test ran.
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import sources  # noqa: E402

SMALL = {"num_layers": 4, "hidden_size": 64, "num_attention_heads": 4, "add_bias_linear": False}
A = "actor_rollout_ref.actor.megatron"
O = f"{A}.override_transformer_config"
_RAN: list[str] = []


def unavailable(message: str):
    if sources.required():
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def upstream():
    """Every source is present (archives extracted once) and the oracle venvs exist."""
    from verl_mindspeed import upstream as up

    gone = sources.missing()
    if gone:
        where = sources.upstream_dir()
        unavailable(f"upstream sources missing ({', '.join(gone)}) in {where or 'no folder'}: "
                    "set VERL_MINDSPEED_UPSTREAM or run tools/fetch_upstream.py")
    lines = sorted(set(sources.RELEASES.values()))
    absent = [line for line in lines if not up.ready(line)]
    if absent:
        unavailable(f"upstream environments missing for megatron-core {', '.join(absent)}: run "
                    "verl-mindspeed upstream-env")
    for release in sources.RELEASES:
        sources.release_sources(release)
    return True


@pytest.fixture(scope="session")
def bridge_18(upstream):
    """The Python 3.12 environment of Megatron-Bridge 0.5.1 on megatron-core 0.18.2, built once; the tests that need
    it skip visibly where no Python 3.12 runs."""
    from verl_mindspeed.upstream import SourceError, _bridge_layer

    try:
        _bridge_layer.python_of_version(_bridge_layer.BRIDGE_ONLY["0.18.2"][0])
    except SourceError as exc:
        pytest.skip(f"Megatron-Bridge 0.5.1 needs Python 3.12: {exc}")
    return _bridge_layer.ensure_layer("0.18.2", print)


@pytest.fixture(scope="session")
def oracle(upstream):
    import pool

    with pool.OraclePool() as p:
        yield p


@pytest.fixture(scope="session")
def verl_base(upstream):
    """verl's ppo_megatron_trainer composed once (GRPO, no KL: the actor alone) and the tree's dict defaults."""
    try:
        from verl_mindspeed.compose import compose_argv
    except Exception as exc:  # noqa: BLE001
        unavailable(f"the project is not importable: {exc!r}")
    try:
        import verl  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        unavailable(f"verl is not importable: {exc!r}")
    from differential import BASIC

    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC]
    return compose_argv(argv), argv


@pytest.fixture
def launch(verl_base, oracle):
    """``launch(release, settings, model=...)`` -> the oracle's verdict for verl's base plus ``settings``."""
    import verl_side
    from omegaconf import OmegaConf

    comp, _ = verl_base

    def run(release: str, settings: dict, model: str | None = "Qwen3-0.6B", probe=()):
        cfg = copy.deepcopy(comp.cfg)
        for key, value in settings.items():
            OmegaConf.update(cfg, key, value, force_add=True)
        model_dir = str(verl_side.fixture_models()[model]) if model else None
        up = verl_side.upstream_of(cfg, model_dir, comp.tree.otc_defaults)
        assert up.verl_error is None, up.verl_error
        case = up.case()
        for step in case["steps"]:
            if step["op"] == "build" and probe:
                step["probe"] = list(probe)
        _RAN.append(release)
        return oracle.run(release, [case])[0]

    return run


@pytest.fixture
def raw(oracle):
    """``raw(release, repatch_dict, kwargs, sizes=None, probe=())``: MindSpeed and megatron without verl."""

    def run(release: str, args: dict | None, kwargs: dict | None = None, sizes: dict | None = None, probe=()):
        steps = [] if args is None else [{"op": "repatch", "args": args}]
        if sizes is not None:
            steps.append({"op": "parallel", "sizes": sizes})
        if kwargs is not None:
            steps.append({"op": "build", "cls": kwargs.pop("__cls__", "TransformerConfig"),
                          "kwargs": {**SMALL, **kwargs}, "probe": list(probe),
                          "forward": False})  # no verl: nothing runs a forward without an attention mask
        _RAN.append(release)
        return oracle.run(release, [{"steps": steps, "switches": sorted(k for k, v in (args or {}).items() if v)}])[0]

    return run


_EXECUTED: list[str] = []


def pytest_runtest_logreport(report):
    """The conformance tests this process ran (under pytest-xdist a worker runs only its share)."""
    if report.when == "call" and HERE in Path(str(report.fspath)).resolve().parents:
        _EXECUTED.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    """Under CI a conformance session that ran no oracle case is a failure, not a quiet pass.

    Judged in a whole session only: a pytest-xdist worker runs a share of the files, and a share of oracle-free
    conformance tests (the seed, the key history) is no sign of a skip; there every unavailable source or
    environment already fails its test (``unavailable``)."""
    if not sources.required() or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if _EXECUTED and not _RAN:
        session.exitstatus = 1
        sys.stderr.write("\nVERL_MINDSPEED_REQUIRE_CONFORMANCE=1 but no conformance case ran against the oracle\n")
