"""MoE router replay on the trees of verl 0.6.1, 0.7.1, 0.8.0, 0.9.0 (their wheels) and 0.9.1 (installed): the key
each release's trainer reads, R3 without the rollout's routes, and R2 beside them.

What each release does with these was read from its source: 0.7.x's legacy Megatron worker (its default) reads
``actor.router_replay.mode``, the engine worker (0.8.0 on) ``actor.megatron.router_replay.mode``; R3 without
``enable_rollout_routing_replay`` fails in the actor's first log-prob pass on every release; R2 beside it stops at
the first step on 0.7.x and 0.8.0 (``Detected conflicting router replay configuration``), and 0.9's trainer
raises nothing there. None of it is refused before the first rollout.
"""

from __future__ import annotations

import pytest
from _verl_cases import BASE, run

ACTOR = "actor_rollout_ref.actor"
MEGATRON_KEY, ACTOR_KEY = f"{ACTOR}.megatron.router_replay.mode", f"{ACTOR}.router_replay.mode"
ROUTES = "actor_rollout_ref.rollout.enable_rollout_routing_replay"
RULE = "verl-router-replay"
#: The key each release's PPO trainer reads (0.6.1 has no router replay).
READ = {"0.7.1": ACTOR_KEY, "0.8.0": MEGATRON_KEY, "0.9.0": MEGATRON_KEY, "0.9.1": MEGATRON_KEY}


def _replay(argv: list[str], tree) -> list:
    return [i for i in run([*BASE, *argv], str(tree)).comp.issues if i.rule == RULE]


def _pasted(argv: list[str], line: str) -> list[str]:
    keys = {word.split("=", 1)[0] for word in line.split()}
    return [a for a in argv if a.split("=", 1)[0] not in keys] + line.split()


def test_r3_without_the_rollouts_routes_is_refused_with_the_switch_on(verl_tree):
    version, tree = verl_tree
    if version not in READ:
        pytest.skip("no router replay in this release")
    argv = [f"{READ[version]}=R3"]
    (found,) = _replay(argv, tree)
    assert (found.severity, found.key, found.override) == ("error", READ[version], f"{ROUTES}=True")
    assert not _replay(_pasted(argv, found.override), tree)


def test_r2_beside_the_rollouts_routes_where_the_trainer_stops(verl_tree):
    version, tree = verl_tree
    if version not in READ:
        pytest.skip("no router replay in this release")
    argv = [f"{READ[version]}=R2", f"{ROUTES}=True"]
    found = _replay(argv, tree)
    if version in ("0.9.0", "0.9.1"):  # verl 0.9's trainer raises nothing there
        assert found == []
        return
    (conflict,) = found
    assert (conflict.severity, conflict.key, conflict.override) == ("error", ROUTES, f"{ROUTES}=False")
    assert "first step" in conflict.message
    assert not _replay(_pasted(argv, conflict.override), tree)


def test_a_mode_on_the_key_the_trainer_does_not_read_is_a_warning_whose_line_moves_it(verl_tree):
    version, tree = verl_tree
    if version not in ("0.7.1", "0.8.0", "0.9.0"):
        pytest.skip("one router replay key only")
    unread = MEGATRON_KEY if READ[version] == ACTOR_KEY else ACTOR_KEY
    argv = [f"{unread}=R3"]
    (found,) = _replay(argv, tree)
    assert (found.severity, found.key) == ("warning", unread)
    assert found.override == f"{READ[version]}=R3 {ROUTES}=True"  # with what R3 then needs
    assert not _replay([*argv, *found.override.split()], tree)


def test_the_engine_worker_on_07_reads_the_megatron_key(verl_trees):
    """0.7.x with ``trainer.use_legacy_worker_impl=disable`` builds the engine worker, which reads the other key."""
    argv = ["trainer.use_legacy_worker_impl=disable", f"{MEGATRON_KEY}=R3"]
    (found,) = _replay(argv, verl_trees["0.7.1"])
    assert (found.severity, found.key) == ("error", MEGATRON_KEY)
