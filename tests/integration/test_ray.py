"""The injected config crosses a real local Ray the way verl ships it, and workers read the normalized dicts."""

from __future__ import annotations

import os
from pathlib import Path

import _ray_side
import pytest
from _verl_cases import BASE, CASE_IDS, CASES, run

from helpers import require

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


@pytest.fixture(scope="module")
def ray_session():
    ray = require("ray")
    old = os.environ.get("PYTHONPATH")
    # workers import _ray_side (and omegaconf) by name: give them absolute paths
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), str(SRC), *([old] if old else [])])
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    try:
        runner = ray.remote(num_cpus=0)(_ray_side.TaskRunner).remote()
        worker = ray.remote(num_cpus=1)(_ray_side.worker_view)
        yield ray, runner, worker
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_workers_see_normalized_dicts(ray_session, case):
    ray, runner, worker = ray_session
    r = run([*BASE, *case.overrides], None)
    seen = ray.get(runner.run.remote(r.cfg, worker), timeout=120)  # the unresolved DictConfig, pickled
    for role in ("actor", "ref", "critic"):
        assert seen[role] == case.expected(role, r.defaults), role
    assert seen["legacy_repatch"] == case.expected("actor", r.defaults)


def test_without_injection_workers_see_raw_dicts(ray_session):
    ray, runner, worker = ray_session
    case = next(c for c in CASES if c.name == "mc2")
    r = run([*BASE, *case.overrides], None, do_inject=False)
    seen = ray.get(runner.run.remote(r.cfg, worker), timeout=120)
    assert seen["actor"] == seen["ref"] == {**r.defaults, **case.user}  # ref interpolated the raw actor dict
    assert seen["critic"] == r.defaults
