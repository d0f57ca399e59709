"""The doctor on verl's own messages that state settings with their values, where the raise's condition reads none
of them (a tensor in the batch, a value verl derives).

Before, ``Detected conflicting router replay configuration: router_replay.mode='R2' and
enable_rollout_routing_replay=True cannot be enabled simultaneously`` got "no launch key is at fault (upstream
code)"; ``Metrics monitoring requires disable_log_stats=False`` was not placed; and a setting several roles have was
named as the critic's (the shortest path) before the actor's.
"""

from __future__ import annotations

import pytest

from verl_mindspeed.doctor import diagnose

W = "(TaskRunner pid=4242) "
RR = "actor_rollout_ref.rollout.enable_rollout_routing_replay"


def _causes(log: str, argv=None) -> list[tuple[str, object]]:
    found = diagnose(W + log if "\n" not in log else log, argv)
    assert found.exit_code == 0, found
    return [(c.key, c.fix) for c in found.causes]


@pytest.mark.parametrize("log, wanted", [
    # verl 0.7.1-0.9.1's trainer: R2 records routes itself; the rollout's are R3's
    ("ValueError: Detected conflicting router replay configuration: router_replay.mode='R2' and "
     "enable_rollout_routing_replay=True cannot be enabled simultaneously. The enable_rollout_routing_replay option "
     "is only used in R3 mode; it should not be set when using R2 mode.",
     [("actor_rollout_ref.actor.megatron.router_replay.mode", None), (RR, RR + "=False")]),
    # a value asked for after "requires" / "Ensure ... configured to", and the switch that asks for it turned off
    ("ValueError: bypass_mode=True requires rollout_log_probs in batch. Ensure rollout worker is configured to "
     "calculate_log_probs=true.",
     [("algorithm.rollout_correction.bypass_mode", "algorithm.rollout_correction.bypass_mode=False"),
      ("actor_rollout_ref.rollout.calculate_log_probs", "actor_rollout_ref.rollout.calculate_log_probs=True")]),
    # the condition's other setting stays named, with no line (``prometheus.enable or RLInsightLogger.enabled()``)
    ("ValueError: Metrics monitoring requires disable_log_stats=False, but it is currently True.",
     [("actor_rollout_ref.rollout.disable_log_stats", "actor_rollout_ref.rollout.disable_log_stats=False"),
      ("actor_rollout_ref.rollout.prometheus.enable", None)]),
    ("AssertionError: Step-dependent optimal baseline requires sum_pi_squared from actor. Please set "
     "actor.calculate_sum_pi_squared=True in config.",
     [("actor_rollout_ref.actor.calculate_sum_pi_squared", "actor_rollout_ref.actor.calculate_sum_pi_squared=True")]),
    # a TransformerConfig field, not one of verl's keys: the actor's override_transformer_config
    ("NotImplementedError: Dynamic CP router replay requires moe_router_fusion=False",
     [("actor_rollout_ref.actor.megatron.override_transformer_config.moe_router_fusion",
       "++actor_rollout_ref.actor.megatron.override_transformer_config.moe_router_fusion=False")]),
])
def test_the_settings_the_message_states_are_named_with_their_lines(log, wanted):
    assert _causes(log) == wanted


def test_a_raise_in_the_rollouts_code_names_the_rollouts_setting():
    """vLLM's PD replica reads the rollout's config: its ``pipeline_model_parallel_size`` is the rollout's, not the
    actor's Megatron size of the same name."""
    causes = _causes("NotImplementedError: pipeline_model_parallel_size=1 only (got 2); PD path does not model PP yet")
    assert causes[0] == ("actor_rollout_ref.rollout.pipeline_model_parallel_size",
                         "actor_rollout_ref.rollout.pipeline_model_parallel_size=1")
    assert all(not key.startswith("actor_rollout_ref.actor.") for key, _fix in causes)


def test_a_setting_every_role_has_is_the_actors_first():
    causes = _causes("ValueError: dynamic_context_parallel requires use_remove_padding=True")
    assert causes and all(key.startswith("actor_rollout_ref.") for key, _fix in causes)
    assert causes[0][1] == causes[0][0] + "=True"


def test_the_condition_decides_a_switch_the_message_gets_backwards():
    """verl 0.5.0: ``assert not (not config.enforce_eager and config.free_cache_engine), "disable CUDA graph
    (enforce_eager = False) if free cache engine"``. The message asks for False; the assert passes with True."""
    log = "\n".join([W + "Traceback (most recent call last):",
                     W + '  File "/verl/verl/workers/rollout/vllm_rollout/vllm_rollout.py", line 80, in __init__',
                     W + "    assert not (not config.enforce_eager and config.free_cache_engine), "
                         '"disable CUDA graph (enforce_eager = False) if free cache engine"',
                     W + "AssertionError: disable CUDA graph (enforce_eager = False) if free cache engine"])
    causes = dict(_causes(log))
    assert causes["actor_rollout_ref.rollout.enforce_eager"] == "actor_rollout_ref.rollout.enforce_eager=True"


def test_a_local_variable_printed_by_name_is_no_setting():
    """``f"{sequence_length=} is larger than {max_length=}"`` prints two locals of verl's tokenizer helper; the
    setting ``reward_model.max_length`` is not what failed."""
    found = diagnose(W + "NotImplementedError: sequence_length=5393 is larger than max_length=4096")
    assert all(c.key.rsplit(".", 1)[-1] != "max_length" for c in found.causes)


def test_the_union_of_two_batches_holding_the_routes_is_rollout_routing_replay():
    """verl 0.7.0 (verl#4973): the rollout returns ``routed_experts`` and the R2 log-prob pass records them too."""
    log = "\n".join([W + "Traceback (most recent call last):",
                     W + '  File "verl/protocol.py", line 117, in union_tensor_dict',
                     W + "    assert tensor_dict1[key].equal(tensor_dict2[key]), (",
                     W + "AssertionError: routed_experts in tensor_dict1 and tensor_dict2 are not the same object"])
    assert _causes(log) == [(RR, RR + "=False")]
    other = W + "AssertionError: input_ids in tensor_dict1 and tensor_dict2 are not the same object"
    assert all(c.key != RR for c in diagnose(other).causes)


def test_the_key_the_launch_writes_and_a_line_check_accepts():
    argv = ["--config-name=ppo_megatron_trainer", "actor_rollout_ref.actor.megatron.router_replay.mode=R2",
            f"{RR}=True"]
    log = ("ValueError: Detected conflicting router replay configuration: router_replay.mode='R2' and "
           "enable_rollout_routing_replay=True cannot be enabled simultaneously. The enable_rollout_routing_replay "
           "option is only used in R3 mode; it should not be set when using R2 mode.")
    causes = dict(_causes(log, argv))
    assert causes == {"actor_rollout_ref.actor.megatron.router_replay.mode": None, RR: RR + "=False"}


def test_every_verl_message_that_states_a_setting_names_one():
    """Every raise of verl 0.5.0 to 0.9.1 whose own words state one of verl's settings with a value (``name=value``)
    is formatted (each placeholder an ``X``) and read alone, as a worker's log line: the doctor names a setting the
    message states, or one its condition reads, and never calls it upstream's code. The self-check that found 13 of
    them placed nowhere."""
    from verl_mindspeed.doctor._paths import verl_leaves
    from verl_mindspeed.doctor._sites import sites
    from verl_mindspeed.doctor._stated import _STATED

    def stated(text: str) -> set[str]:
        names = {m.group("name") for m in _STATED.finditer(text)}
        return {n for n in names if ("." in n or "_" in n)
                and any(k == n or k.endswith("." + n) for k in verl_leaves().get(n.rsplit(".", 1)[-1], ()))}

    seen, checked, missed = set(), 0, []
    for site in sites():
        text = "\x00".join(site.parts)
        if site.package != "verl" or "/veomni/" in site.file or text in seen or not stated(text):
            continue
        seen.add(text)
        found = diagnose(f"{W}{site.exception}: {'X'.join(site.parts)}")
        named = {c.key.rsplit(".", 1)[-1] for f in found.failures for c in f.verdict.causes}
        kinds = {f.verdict.kind for f in found.failures}
        checked += 1
        if not named or "upstream" in kinds:
            missed.append((site.file, site.function, text[:80]))
    assert checked >= 30
    assert missed == [], "\n".join(map(str, missed))


def test_a_message_only_verl_090_raises_is_placed_there_and_upgrading_named():
    """verl 0.9.0's engine refuses the per-sequence mean beside the per-token loss; 0.9.1 dropped that check. The
    index holds 0.9.0's sources, so the raise is placed at its site, with the settings it states."""
    found = diagnose(W + "ValueError: loss_agg_mode='seq-mean-token-mean' is incompatible with "
                     "calculate_per_token_loss=True (auto-enabled by Megatron-Bridge under CP>1). The per-sequence "
                     "inner division by n_s requires local-shard counts that diverge from global under CP. Use one of: "
                     "'token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm'.")
    (failure,) = found.failures
    assert failure.site is not None and [r for r, _line in failure.site.site.releases] == ["0.9.0"]
    assert "0.9.1 no longer has" in str(failure.verdict.what)
    keys = [c.key for c in found.causes]
    assert "actor_rollout_ref.actor.loss_agg_mode" in keys
    assert "actor_rollout_ref.actor.megatron.override_transformer_config.calculate_per_token_loss" in keys
