"""Random keys, values and override strings never crash the resolver or the check; issues carry key paths."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from verl_mindspeed import catalog
from verl_mindspeed.errors import EvaluationError
from verl_mindspeed.launch import evaluate
from verl_mindspeed.resolver import resolve

PREFIXES = [
    "actor_rollout_ref.actor.megatron.override_transformer_config",
    "actor_rollout_ref.actor.megatron",
    "actor_rollout_ref.ref.megatron.override_transformer_config",
    "critic.megatron.override_transformer_config",
]
known = [f.name for f in catalog.flags()] + list(catalog.aliases())
names = st.one_of(st.sampled_from(known), st.from_regex(r"[a-z][a-z_]{0,30}", fullmatch=True))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 300), st.text(max_size=12),
                    st.sampled_from(["full", "selective", "none", "alltoall", "0,7", "0, 7", "uniform"]))
values = st.one_of(scalars, st.lists(st.one_of(st.integers(-2, 40), st.text(max_size=4)), max_size=4))
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SLOW
@given(st.dictionaries(st.tuples(st.sampled_from(PREFIXES), names), values, max_size=6))
def test_resolver_never_raises(base_cfg, entries):
    cfg = copy.deepcopy(base_cfg.cfg)
    for (prefix, name), value in entries.items():
        try:
            OmegaConf.update(cfg, f"{prefix}.{name}", value, force_add=True)
        except OmegaConfBaseException:
            assume(False)  # OmegaConf refuses the value itself (['${'] does not parse): no launch can hold it
    result = resolve(cfg, known_megatron_keys=base_cfg.tree.known_megatron_keys, injected=True)
    for issue in result.issues:
        assert issue.key and issue.message
        assert issue.key.split(".")[0] in ("actor_rollout_ref", "critic", "trainer", "mindspeed")
    for (prefix, name), _value in entries.items():
        if prefix.endswith("override_transformer_config") and prefix.startswith("actor_rollout_ref.actor"):
            canonical = catalog.aliases().get(name, name)
            reported = any(i.key.endswith(f".{name}") for i in result.issues)
            assert canonical in result.roles["actor"]["override_transformer_config"] or reported, name


override_values = st.one_of(st.from_regex(r"[A-Za-z0-9_.,\[\]'\" -]{0,12}", fullmatch=True), st.just("True"))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["", "+", "++", "~"]), st.sampled_from(PREFIXES), names,
                          override_values), max_size=4))
def test_check_never_tracebacks(base_cfg, overrides):
    argv = ["--config-name=ppo_megatron_trainer"]
    for plus, prefix, name, value in overrides:
        argv.append(f"{plus}{prefix}.{name}" + ("" if plus == "~" else f"={value}"))
    try:
        result = evaluate(argv)
    except EvaluationError as exc:
        assert str(exc)
        return
    for issue in result.issues:
        assert issue.key and "." in issue.key or issue.key in ("mindspeed",)
