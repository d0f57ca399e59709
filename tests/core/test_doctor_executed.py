"""Logs of the exceptions verl's and MindSpeed's own code raised on generated launches (the round trip of
``tests/conformance/roundtrip.py``), each a shape the doctor misread before: their tracebacks as Python printed them.
"""

from __future__ import annotations

from helpers import BASIC, require
from verl_mindspeed.doctor import diagnose

M = "actor_rollout_ref.actor.megatron"
OTC = f"{M}.override_transformer_config"
VERL = "/usr/local/lib/python3.11/site-packages/verl"
MINDSPEED = "/opt/MindSpeed/mindspeed"


def _worker(process: str, trace: str) -> str:
    return "".join(f"({process}) {line}\n" for line in trace.splitlines())


def test_a_message_its_site_binds_beats_a_line_number_another_release_gives_another_assert():
    """verl 0.9.1's n_gpus check stands at line 109-110 of ``verl/utils/config.py``; in verl 0.5.0 line 110 is the
    batch-size assert two statements down. The message binds the first site only: the context-parallel size it
    prints is named, not ``data.train_batch_size`` and ``rollout.n``."""
    log = _worker("TaskRunner pid=2715", f"""Traceback (most recent call last):
  File "{VERL}/utils/config.py", line 110, in validate_config
    n_gpus % (model_parallel_size * config.actor_rollout_ref.actor.megatron.context_parallel_size) == 0
AssertionError: n_gpus (8) must be divisible by model_parallel_size (4) times context_parallel_size (4)""")
    keys = {c.key for c in diagnose(log).causes}
    assert f"{M}.context_parallel_size" in keys, keys
    assert not keys & {"data.train_batch_size", "actor_rollout_ref.rollout.n"}, keys


INSTANTIATE = f"""Traceback (most recent call last):
  File "{VERL}/utils/config.py", line 50, in omega_conf_to_dataclass
    return instantiate(config, _convert_="partial")
  File "/usr/local/lib/python3.11/site-packages/hydra/_internal/instantiate/_instantiate2.py", line 138, in _call_target
    raise InstantiationException(_with_full_key(msg, full_key)) from e
InstantiationException: Error in call to target 'verl.workers.config.engine.McoreEngineConfig':
TypeError("McoreEngineConfig.__init__() got an unexpected keyword argument 'expert_model_arallel_size'")
full_key: actor_rollout_ref.actor.megatron"""


def test_a_field_a_verl_config_class_lacks_is_the_launchs_key_not_a_version_skew():
    """Hydra's instantiate calls the section's dataclass with every key the section holds: a key it lacks is one the
    launch wrote (a typo here), under the section Hydra's ``full_key`` names. Before, "unexpected keyword argument"
    read as two packages' versions not matching, and no key was blamed."""
    found = diagnose(_worker("TaskRunner pid=2715", INSTANTIATE))
    (cause,) = found.causes
    assert cause.key == f"{M}.expert_model_arallel_size"
    assert found.failures[0].verdict.kind == "override"
    require("verl")
    launch = ["--config-name=ppo_megatron_trainer", *BASIC, f"++{M}.expert_model_arallel_size=1"]
    (cause,) = diagnose(_worker("TaskRunner pid=2715", INSTANTIATE), launch).causes
    assert cause.confirmed and f"{M}.expert_model_parallel_size=1" in cause.fix


def test_a_packages_own_function_given_an_unknown_keyword_is_still_a_version_skew():
    """The rule takes only a class verl converts a config section into: a package's function (vLLM's, torch's)
    called with a keyword it lacks is the versions' mismatch it always was."""
    log = "TypeError: LLM.__init__() got an unexpected keyword argument 'disable_log_stats'\n"
    found = diagnose(log)
    assert not found.causes and found.failures[0].verdict.kind == "version-skew"


RESET = _worker("WorkerDict pid=3388", f"""Traceback (most recent call last):
  File "{MINDSPEED}/features_manager/features_manager.py", line 63, in validate_features_args
    feature.validate_args(args)
  File "{MINDSPEED}/features_manager/distributed/reset_bucket_group_order_feature.py", line 22, in validate_args
    raise AssertionError('overlap param gather is compatible with reset bucket group order')
AssertionError: overlap param gather is compatible with reset bucket group order""")


def test_a_switch_read_through_a_local_getattr_gets_its_off_line_where_the_launch_turns_it_on():
    """MindSpeed reads ``reset_bucket_group_order = getattr(args, "reset_bucket_group_order", False)`` and tests the
    local: the index keeps the local as that setting, so the condition is run on it. The launch turns the MindSpeed
    switch on in override_transformer_config (verl hands it to MindSpeed as written): off is its line. The other
    way out, overlap_param_gather, is no key the launch writes: named, no line."""
    require("verl")
    launch = ["--config-name=ppo_megatron_trainer", *BASIC, f"++{OTC}.reset_bucket_group_order=True"]
    causes = {c.key: c.fix for c in diagnose(RESET, launch).causes}
    assert causes[f"{OTC}.reset_bucket_group_order"] == f"++{OTC}.reset_bucket_group_order=False"
    assert causes.get(f"{OTC}.overlap_param_gather", "absent") is None
    alone = {c.key: c.fix for c in diagnose(RESET).causes}  # without the launch: who wrote the switch is unknown
    assert alone and not any(alone.values()), alone


def test_the_replays_finding_for_this_check_goes_before_another_rules_on_the_same_key():
    """The launch sets the engine's TP to 4 and the dict's copy to 1 beside CP 4 on 8 devices: check finds three
    errors on the TP keys (the product against the devices, the dict's copy against the engine's, mc2's TP). verl's
    driver raised the product's: its rule's line (both TP keys to 2) is the fix, not the dict's copy set to 4 and
    to 2 in two lines that undo each other."""
    require("verl")
    log = _worker("TaskRunner pid=2715", f"""Traceback (most recent call last):
  File "{VERL}/utils/config.py", line 110, in validate_config
    n_gpus % (model_parallel_size * config.actor_rollout_ref.actor.megatron.context_parallel_size) == 0
AssertionError: n_gpus (8) must be divisible by model_parallel_size (4) times context_parallel_size (4)""")
    launch = ["--config-name=ppo_megatron_trainer", *BASIC, f"{M}.tensor_model_parallel_size=4",
              f"{M}.context_parallel_size=4", f"++{OTC}.tensor_model_parallel_size=1", f"++{OTC}.use_ascend_mc2=True",
              "trainer.n_gpus_per_node=8"]
    (cause,) = diagnose(log, launch).causes
    assert cause.confirmed and cause.key == f"{M}.tensor_model_parallel_size"
    assert cause.fix == f"{M}.tensor_model_parallel_size=2 ++{OTC}.tensor_model_parallel_size=2"


EXTEND_EP = _worker("WorkerDict pid=3388", f"""Traceback (most recent call last):
  File "{MINDSPEED}/core/megatron_basic/arguments_basic.py", line 83, in wrapper
    MindSpeedFeaturesManager.validate_features_args(args=self)
  File "{MINDSPEED}/features_manager/features_manager.py", line 63, in validate_features_args
    feature.validate_args(args)
  File "{MINDSPEED}/features_manager/moe/tp_extend_ep.py", line 22, in validate_args
    if args.num_experts % (args.tensor_model_parallel_size * args.expert_model_parallel_size) != 0:
AttributeError: 'TransformerConfig' object has no attribute 'num_experts'""")


def test_a_features_own_code_failing_names_its_switch_where_the_launch_turns_it_on(tmp_path):
    """No check raised: MindSpeed's moe_tp_extend_ep validation read ``num_experts``, which verl's config lacks. The
    frame is that feature's file (the index reads every release's features_manager): its switch, which the launch
    turns on, is at fault and off is its line. A launch of verl's one-step-off entry is replayed on that entry's
    config (the line's check ran on main_ppo's before, failed to compose, and the line was dropped)."""
    require("verl")
    key = f"{OTC}.moe_tp_extend_ep"
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.experimental.one_step_off_policy.main_ppo \\\n    "
                      + " \\\n    ".join(["--config-name=one_step_off_ppo_megatron_trainer", *BASIC, f"++{key}=True"])
                      + "\n")
    from verl_mindspeed.launch import read_launch_file

    source = read_launch_file(str(script))
    found = diagnose(EXTEND_EP, source.argv, source)
    assert [(c.key, c.fix) for c in found.causes] == [(key, f"++{key}=False")]
    assert "moe_tp_extend_ep" in str(found.failures[0].verdict.what)


def test_a_features_code_failing_blames_no_switch_the_launch_leaves_off():
    """validate_args runs for every feature: where the launch does not turn the switch on (or is unknown), the
    feature's code failing is not placed on it."""
    require("verl")
    assert not diagnose(EXTEND_EP, ["--config-name=ppo_megatron_trainer", *BASIC]).causes
    assert not diagnose(EXTEND_EP).causes


def test_an_option_the_check_runs_under_which_the_launch_sets_is_deleted():
    """MindSpeed's ``context parallel size must larger than 1 when --context-parallel-kv-cache-policy is set`` sits
    under ``if args.context_parallel_kv_cache_policy:``; the option has no default and no off value to write: the
    line deletes the launch's argument. CP is named too, with no line (a layout moved blind meets the next check)."""
    require("verl")
    log = _worker("WorkerDict pid=3388", f"""Traceback (most recent call last):
  File "{MINDSPEED}/features_manager/context_parallel/context_parallel_kv_cache.py", line 33, in validate_args
    raise AssertionError(
AssertionError: context parallel size must larger than 1 when --context-parallel-kv-cache-policy is set.""")
    key = f"{OTC}.context_parallel_kv_cache_policy"
    causes = {c.key: c for c in diagnose(log, ["--config-name=ppo_megatron_trainer", *BASIC, f"++{key}=full"]).causes}
    assert causes[key].delete and causes[key].fix is None
    assert not diagnose(log, ["--config-name=ppo_megatron_trainer", *BASIC]).causes[0].delete  # nothing to delete


HYBRID = "initialize_context_parallel_group_for_hybrid_cp"


def test_code_a_feature_of_a_chosen_setting_runs_takes_checks_finding_from_the_rules_citing_that_feature():
    """The hybrid CP algorithm without ``ulysses_degree_in_cp``: MindSpeed's CP group code compares None with the CP
    size (a TypeError, no check). The module is the context-parallel feature's; check's rule citing that feature's
    file finds the missing degree on the launch, and its line is the fix (not confirmed: check found the
    requirement, not this exception)."""
    require("verl")
    log = _worker("WorkerDict pid=3388", f"""Traceback (most recent call last):
  File "{MINDSPEED}/core/context_parallel/model_parallel_utils.py", line 280, in wrapper
    initialize_context_parallel_group_for_hybrid_cp(
  File "{MINDSPEED}/core/context_parallel/model_parallel_utils.py", line 76, in {HYBRID}
    if not (context_parallel_size > ulysses_degree and context_parallel_size % ulysses_degree == 0):
TypeError: '>' not supported between instances of 'int' and 'NoneType'""")
    launch = ["--config-name=ppo_megatron_trainer", *BASIC, f"{M}.context_parallel_size=2",
              f"++{OTC}.context_parallel_algo=hybrid_adaptive_cp_algo"]
    (cause,) = diagnose(log, launch).causes
    assert cause.key == f"{OTC}.ulysses_degree_in_cp" and cause.fix and not cause.confirmed


def test_code_no_check_or_feature_places_names_the_launchs_errors_to_fix_first():
    """megatron's layer split dividing by zero stages (the actor's uneven split on the process groups a critic of
    other sizes built first): no site, no feature. With the launch, check's errors on it are what to fix first, at
    "possible"; without a launch, or on a launch check passes, nothing is named."""
    require("verl")
    block = "/usr/lib/python3.10/site-packages/megatron/core/transformer/transformer_block.py"
    log = _worker("WorkerDict pid=3388", f"""Traceback (most recent call last):
  File "{block}", line 87, in get_num_layers_to_build
    layers_to_distribute % pipeline_stages_left == 0
ZeroDivisionError: integer modulo by zero""")
    launch = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=gae", *BASIC,
              f"{M}.pipeline_model_parallel_size=2"]
    found = diagnose(log, launch)
    assert found.causes and found.failures[0].verdict.certainty == "possible"
    assert "critic.megatron.pipeline_model_parallel_size=2" in " ".join(c.fix or "" for c in found.causes)
    assert not diagnose(log).causes
    assert not diagnose(log, ["--config-name=ppo_megatron_trainer", *BASIC]).causes


def test_a_check_on_state_no_launch_key_sets_reached_through_a_features_code_names_that_feature():
    """MindSpeed core_r0.16.0's HCCL buffer patch calls Megatron-LM's ``get_args()``, which verl never initialises:
    "args is not initialized" is a check on no launch key, reached through the code of a feature the launch turns
    on. Off is the line; where check says what the feature requires (swap_optimizer: the dict's
    use_distributed_optimizer, which verl does not copy there), that line keeps the feature instead."""
    require("verl")
    training = "/opt/Megatron-LM/megatron/training/global_vars.py"
    hccl = _worker("WorkerDict pid=3388", f"""Traceback (most recent call last):
  File "{MINDSPEED}/core/hccl_buffer/adaptor.py", line 30, in wrapper
    config = get_args()
  File "{training}", line 29, in get_args
    _ensure_var_is_initialized(_GLOBAL_ARGS, 'args')
  File "{training}", line 279, in _ensure_var_is_initialized
    assert var is not None, '{{}} is not initialized.'.format(name)
AssertionError: args is not initialized.""")
    key = f"{OTC}.hccl_group_buffer_adaptive"
    base = ["--config-name=ppo_megatron_trainer", *BASIC]
    assert [(c.key, c.fix) for c in diagnose(hccl, [*base, f"++{key}=True"]).causes] == [(key, f"++{key}=False")]
    assert not diagnose(hccl, base).causes  # the switch off: a check on upstream state, no launch key
    alone = diagnose(hccl)  # no launch: the patch ran, so a switch of its feature is on; which, the launch says
    assert alone.failures[0].verdict.kind == "override" and not any(c.fix for c in alone.causes)
    assert f"{OTC}.hccl_group_buffer_adaptive" in {c.key for c in alone.causes}
    swap = _worker("WorkerDict pid=3388", f"""Traceback (most recent call last):
  File "{MINDSPEED}/features_manager/optimizer/swap_optimizer_feature.py", line 19, in validate_args
    self.dependency_check(args, 'use_distributed_optimizer')
  File "{MINDSPEED}/features_manager/feature.py", line 68, in dependency_check
    raise AssertionError('{{}} requires {{}}.'.format(self.feature_name, check_args))
AssertionError: swap_optimizer requires use_distributed_optimizer.""")
    found = diagnose(swap, [*base, f"++{OTC}.swap_optimizer=True"], release="core_r0.16.0")
    assert [(c.key, c.fix) for c in found.causes] == [
        (f"{OTC}.use_distributed_optimizer", f"++{OTC}.use_distributed_optimizer=True")]


BRIDGE = "/usr/local/lib/python3.12/site-packages/megatron/bridge/models/model_provider.py"
NO_FIELD = f"""Traceback (most recent call last):
  File "{VERL}/workers/engine/megatron/transformer_impl.py", line 402, in _build_tf_config
    provider.apply_overrides_and_finalize(override_transformer_config)
  File "{BRIDGE}", line 128, in apply_overrides_and_finalize
    raise AttributeError(f"{{type(self).__name__}} has no attribute {{name!r}}.")
AttributeError: GPTModelProvider has no attribute 'use_flah_attn'."""


def test_a_key_megatron_bridges_provider_lacks_is_the_launchs_override_transformer_config_key():
    """verl 0.9.1 hands a role's override_transformer_config to Megatron-Bridge's provider as it stands; the
    provider refuses a name it has no field for. The name is the launch's key (the third stack's round trip: a
    typo'd key read as "upstream code, no launch key" before), with check's line for it."""
    require("verl")
    launch = ["--config-name=ppo_megatron_trainer", *BASIC, f"++{OTC}.use_flah_attn=True"]
    found = diagnose(_worker("WorkerDict pid=3388", NO_FIELD), launch)
    (cause,) = found.causes
    assert cause.key == f"{OTC}.use_flah_attn" and found.failures[0].verdict.kind == "override"
    assert cause.fix and f"{OTC}.use_flash_attn=True" in cause.fix, cause


def test_a_field_megatron_cores_config_lacks_blames_only_a_key_the_launch_writes():
    """The same refusal from megatron-core's config class (mbridge's extra arguments, verl's converter): the
    launch's key where it writes one; verl's own code passes keys too (verl#1944's misspelled ``rotary_type``), so
    a launch that writes none is not blamed, and without the launch it stays two packages' versions."""
    log = "TypeError: MLATransformerConfig.__init__() got an unexpected keyword argument 'rotary_type'\n"
    found = diagnose(log)
    assert not found.causes and found.failures[0].verdict.kind == "version-skew"
    bridge = diagnose(_worker("WorkerDict pid=3388", NO_FIELD))  # the provider's: a typo reads the same, not placed
    assert not bridge.causes and bridge.failures[0].verdict.kind == "unknown"
    require("verl")
    assert not diagnose(log, ["--config-name=ppo_megatron_trainer", *BASIC]).causes
    launch = ["--config-name=ppo_megatron_trainer", *BASIC, f"++{OTC}.rotary_type=rope"]
    (cause,) = diagnose(log, launch).causes
    assert cause.key == f"{OTC}.rotary_type" and (cause.fix or cause.delete)


OOM = """Traceback (most recent call last):
  File "/usr/local/python3.10/site-packages/megatron/core/pipeline_parallel/schedules.py", line 400, in backward_step
    torch.autograd.backward(output_tensor[0], grad_tensors=output_tensor_grad[0])
RuntimeError: NPU out of memory. Tried to allocate 2.32 GiB (NPU 3; 60.96 GiB total capacity; 55.12 GiB already \
allocated; 1.02 GiB free)"""


def test_out_of_memory_with_the_launch_says_checks_estimate_and_the_planners_command(tmp_path):
    """No key is blamed for running out of memory; with the launch, check's memory model says what it estimates
    for it, and the planner's command on the same launch file is given."""
    require("verl")
    from helpers import FIXTURES
    from verl_mindspeed.i18n import render
    from verl_mindspeed.launch import read_launch_file

    launch = tmp_path / "run.sh"
    launch.write_text("python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer "
                      + " ".join([*BASIC, "data.max_prompt_length=4096", "data.max_response_length=8192"]) + "\n")
    source = read_launch_file(str(launch))
    model = str(FIXTURES / "models" / "Qwen3-8B")
    found = diagnose(_worker("WorkerDict pid=51234", OOM), source.argv, source, model_config=model)
    (failure,) = found.failures
    what = render(failure.verdict.what)
    assert not found.causes and failure.verdict.kind == "resource"
    assert "estimate for this launch: estimated peak" in what, what
    assert f"verl-mindspeed plan --args-file {launch}" in what, what
    alone = render(diagnose(_worker("WorkerDict pid=51234", OOM)).failures[0].verdict.what)
    assert "for this launch" not in alone and "plan --args-file" not in alone
