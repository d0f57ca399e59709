"""``verl-mindspeed doctor``: a failed run's log -> its first raise, the raise site, the key at fault and its fix.

The logs here are written the way verl's driver prints them (Ray's process prefixes, colours, chained tracebacks,
Ray's re-raise of a worker's exception); the raise sites and messages are the real ones of megatron-core, MindSpeed,
verl and Hydra, read from the generated index. A launch given with the log is replayed by the real ``check``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import BASIC, FIXTURES, require
from verl_mindspeed.cli import main
from verl_mindspeed.doctor import diagnose
from verl_mindspeed.doctor._cut import cut_raise
from verl_mindspeed.doctor._log import exceptions, roots
from verl_mindspeed.doctor._match import match

TP = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"
MCORE = "/usr/local/lib/python3.10/site-packages/megatron/core/transformer/transformer_config.py"
HEADS = "num_attention_heads (32) must be a multiple of tensor_model_parallel_size (3)."
#: verl's driver prints a worker's exception twice: the worker's own traceback, then Ray's re-raise in the driver.
RAY_LOG = f"""\x1b[36m(TaskRunner pid=2411)\x1b[0m Traceback (most recent call last):
\x1b[36m(WorkerDict pid=3001, ip=10.0.0.1)\x1b[0m Traceback (most recent call last):
\x1b[36m(WorkerDict pid=3001, ip=10.0.0.1)\x1b[0m   File "{MCORE}", line 560, in __post_init__
\x1b[36m(WorkerDict pid=3001, ip=10.0.0.1)\x1b[0m     raise ValueError(
\x1b[36m(TaskRunner pid=2411)\x1b[0m   File "/verl/verl/trainer/main_ppo.py", line 317, in run
\x1b[36m(WorkerDict pid=3001, ip=10.0.0.1)\x1b[0m ValueError: {HEADS}
\x1b[36m(TaskRunner pid=2411)\x1b[0m ray.exceptions.RayTaskError(ValueError): \
ray::WorkerDict.actor_rollout_init_model() (pid=3001, ip=10.0.0.1)
\x1b[36m(TaskRunner pid=2411)\x1b[0m ValueError: {HEADS} [repeated 7x across cluster]
"""
QWEN3_8B = str(FIXTURES / "models" / "Qwen3-8B")


def test_the_first_raise_is_found_across_interleaved_workers():
    """Prefixes and colours are taken off, each worker's traceback is read whole, Ray's re-raise is a wrapper and
    the driver's copy of the message is the same failure: one root, the worker's, with its frame."""
    found = exceptions(RAY_LOG)
    assert {r.type for r in found} == {"ValueError", "RayTaskError"}
    (root,) = roots(found)
    assert (root.stream, root.message, root.frames[-1][:2]) == ("WorkerDict pid=3001", HEADS, (MCORE, 560))


def test_a_log_cut_at_the_frame_that_raised_is_read_from_that_frames_statement():
    """ms-swift#5737 as posted: the frame's opening and the exception line are cut away, the frame's prefix lost and
    the next line's kept (``[rank14]:``). The ``assert`` the frame prints is Megatron-LM's (its condition, in a
    release whose line the index lacks): the pipeline size is named, and the text says the message is not in the
    log. Anything after the statement other than a cut mark or its own message means the log was not cut there."""
    cut = ('Megatron-LM/megatron/training/arguments.py", line 561, in validate_args\n'
           "[rank14]:     assert num_layers % args.transformer_pipeline_model_parallel_size == 0, \\\n"
           "[rank14]:\n[...]\n")
    found = diagnose(cut)
    assert found.exit_code == 0 and [c.key for c in found.causes] == [
        "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size"]
    assert "the log ends at this line" in str(found.failures[0].verdict.what)
    assert diagnose(cut.replace("[...]", "[rank14]: Saving checkpoint to /ckpt")).exit_code == 2  # not cut there
    # Ray's re-raise is no raise of a class; a raise of one in a function the index has once is that site
    assert diagnose('  File "/ray/_private/worker.py", line 2771, in get\n    raise value.as_instanceof_cause()\n'
                    ).exit_code == 2
    raise_frame = ('  File "/site-packages/megatron/core/parallel_state.py", line 9999, in get_nccl_options\n'
                   "    raise RuntimeError(\n")
    assert not exceptions(raise_frame)
    (root,) = cut_raise(raise_frame)
    site = match(root)
    assert (root.type, root.cut, site.site.function) == ("RuntimeError", True, "get_nccl_options")


def test_a_launchers_tag_before_each_line_is_the_process_and_the_traceback_reads_whole():
    """NeMo-Run prints ``<task>/<rank> `` before each line (a paste may cut its first letters), srun ``--label``
    ``<rank>: ``: where one tag opens three lines or more, it is the process, so the frame and the exception line
    are read as with no tag. A tag that opens one line is text."""
    plain = ('Traceback (most recent call last):\n'
             '  File "/opt/megatron/core/parallel_state.py", line 701, in initialize_model_parallel\n'
             '    raise RuntimeError(\n'
             "RuntimeError: decoder world_size (128) is not divisible by expert_tensor_model_pipeline_parallel size "
             "(512)\n")
    want = [(r.type, r.message, r.frames) for r in roots(exceptions(plain))]
    for tag in ("epseeknemo/0 ", "0: "):
        tagged = "".join(tag + line + "\n" for line in plain.splitlines())
        assert [(r.type, r.message, r.frames) for r in roots(exceptions(tagged))] == want, tag
        assert {r.stream for r in exceptions(tagged)} == {tag.strip()}
        for prefix in ("(WorkerDict pid=7) ", "[rank3]: "):  # a tag after Ray's or torchrun's prefix, and before
            for order in (prefix + tag, tag + prefix):
                again = "".join(order + line + "\n" for line in plain.splitlines())
                assert [(r.type, r.message, r.frames) for r in roots(exceptions(again))] == want, order
    assert not exceptions("0: " + plain.splitlines()[-1] + "\n")  # one line: no tag, and no exception line


def test_hydras_instantiation_error_is_a_wrapper_of_the_exception_it_prints_as_a_repr():
    """``InstantiationException: Error in call to target 'X':`` prints the target's exception as its repr on the next
    line: that exception is the root, matched to its own site (megatron-core's sequence-parallel check, whose advice
    is the line); the wrapper is not a failure of its own."""
    log = ("megatron.bridge.utils.instantiate_utils.InstantiationException: Error in call to target "
           "'megatron.bridge.models.qwen.qwen_provider.Qwen3MoEModelProvider':\n"
           "ValueError('When using expert parallelism and tensor parallelism, sequence parallelism must be used')\n")
    (root,) = roots(exceptions(log))
    assert (root.type, root.message) == (
        "ValueError", "When using expert parallelism and tensor parallelism, sequence parallelism must be used")
    escaped = log.replace("must be used')", "can\\'t\\tbe\\\\not used')")  # read as Python reads the literal
    assert roots(exceptions(escaped))[0].message.endswith("can't\tbe\\not used")
    key = "actor_rollout_ref.actor.megatron.override_transformer_config.sequence_parallel"
    assert [(c.key, c.fix) for c in diagnose(log).causes] == [(key, f"++{key}=True")]


def test_a_helpers_plain_message_is_never_upstream_code_and_a_fixed_one_is_read_after_a_tag_not_inside_a_sentence():
    """``{} is not divisible by {}`` (megatron-core's ``divide`` helper, whose condition reads only its arguments)
    fills any sentence with those words: by the message alone it is never "upstream code, no launch key" (verl's words
    name the verl key they print; bare numbers are not placed). A fixed message is read after a tag (``Exception: ``,
    a list's ``- ``, a logger's prefix), not inside another sentence: Python's ``f() got an unexpected keyword
    argument`` is no Megatron-Bridge raise."""
    found = diagnose("AssertionError: train_batch_size (10) is not divisible by world size 4\n")
    assert [c.key for c in found.causes] == ["data.train_batch_size"]
    bare = diagnose("ValueError: 10 is not divisible by 4\n")
    assert bare.exit_code == 1 and bare.failures[0].verdict.kind == "unknown"
    sp = "actor_rollout_ref.actor.megatron.override_transformer_config.sequence_parallel"
    for line in ("- When using expert parallelism and tensor parallelism, sequence parallelism must be used",
                 "[2025-07-01 13:15:06] ERROR train.py:88: When using expert parallelism and tensor parallelism, "
                 "sequence parallelism must be used"):
        assert [(c.key, c.fix) for c in diagnose(line + "\n").causes] == [(sp, f"++{sp}=True")], line
    fp16 = "actor_rollout_ref.actor.megatron.override_transformer_config.fp16"
    assert [(c.key, c.fix) for c in diagnose("Exception: muon with fp16 is not supported.\n").causes] == [
        (fp16, f"++{fp16}=False")]
    python = "TypeError: FSDPEngineConfig.__init__() got an unexpected keyword argument 'mixed_precision'\n"
    (root,) = roots(exceptions(python))
    assert match(root) is None and diagnose(python).failures[0].verdict.kind == "version-skew"


def test_an_exception_line_as_an_item_of_a_markdown_list_is_read():
    """A thread listing its failures as ``- `TypeError: ...``` items: each is an exception line."""
    log = "   - `KeyError: 'mtp.layers.0.mlp.experts.gate_up_proj'`\n[...]\n   - **TypeError: f() got an x**\n"
    assert [r.type for r in exceptions(log)] == ["KeyError", "TypeError"]


def test_a_chained_traceback_has_its_first_raise_as_root():
    log = ("Traceback (most recent call last):\n  File \"/x/megatron/core/parallel_state.py\", line 10, in f\n"
           "KeyError: 'tp'\n\nThe above exception was the direct cause of the following exception:\n\n"
           "Traceback (most recent call last):\n  File \"/x/y.py\", line 3, in g\nRuntimeError: wrapped\n")
    assert [r.type for r in roots(exceptions(log))] == ["KeyError"]


def test_the_site_is_matched_by_frame_and_the_message_binds_its_values():
    """megatron-core's heads check: the frame's line says the release, the message binds both sizes."""
    (root,) = roots(exceptions(RAY_LOG))
    site = match(root)
    assert site.site.file == "megatron/core/transformer/transformer_config.py" and site.by_frame
    assert site.releases == ("0.12.1",)
    assert site.bound == {"self.num_attention_heads": "32", "self.tensor_model_parallel_size": "3"}
    assert "tensor_model_parallel_size" in site.site.fields


def test_without_the_launch_the_sites_own_condition_gives_the_fix():
    """The condition megatron-core raises on, run on the printed values: TP 1 is the largest size that divides both
    32 and the 3 the world size is a multiple of (TP 2, nearer, would not divide that world size)."""
    found = diagnose(RAY_LOG)
    (failure,) = found.failures
    assert failure.verdict.kind == "override" and found.exit_code == 0
    assert [(c.key, c.fix) for c in found.causes] == [(TP, f"{TP}=1")]
    heads = RAY_LOG.replace("(32)", "(28)").replace("(3)", "(8)")
    assert [c.fix for c in diagnose(heads).causes] == [f"{TP}=4"]  # never 7 on a world of 8s


def test_with_the_launch_check_replays_it_and_confirms_the_fix(tmp_path):
    require("verl")
    argv = ["--config-name=ppo_megatron_trainer", f"{TP}=3", *BASIC]
    found = diagnose(RAY_LOG, argv, model_config=QWEN3_8B)
    (cause,) = found.causes
    assert (cause.key, cause.confirmed) == (TP, True)
    assert cause.fix.startswith(f"{TP}=") and found.failures[0].verdict.certainty == "confirmed"


def test_a_key_hydra_refuses_gets_checks_fix():
    """Hydra's refusal names the key; check's did-you-mean gives the line (a word dropped from the key)."""
    require("verl")
    log = ("Error executing job with overrides: ['actor_rollout_ref.actor.megatron.tensor_parallel_size=2']\n"
           "Could not override 'actor_rollout_ref.actor.megatron.tensor_parallel_size'.\n"
           "To append to your config use +actor_rollout_ref.actor.megatron.tensor_parallel_size=2\n"
           "Key 'tensor_parallel_size' is not in struct\n")
    (cause,) = diagnose(log).causes
    # the launch of the log's overrides runs verl's default GAE: set as meant, TP 2 needs the critic's too
    assert (cause.key, cause.fix) == ("actor_rollout_ref.actor.megatron.tensor_parallel_size",
                                      f"{TP}=2 ++critic.megatron.tensor_model_parallel_size=2")


@pytest.mark.parametrize("log, kind", [
    ("ModuleNotFoundError: No module named 'megatron.bridge'", "version-skew"),
    ("AttributeError: type object 'ModelType' has no attribute 'encoder_and_decoder'", "version-skew"),
    ("RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB", "resource"),
    ("RuntimeError: HCCL function error: HcclAllreduce(...), error code is 6 (EI0006: socket timeout)", "resource"),
])
def test_no_blame_without_a_fault(log, kind):
    found = diagnose(log)
    assert (found.failures[0].verdict.kind, found.causes, found.exit_code) == (kind, [], 0)


def test_an_environment_variable_at_fault_is_named_with_its_line():
    log = ("AssertionError: Using tensor model parallelism or context parallelism require setting the environment "
           "variable CUDA_DEVICE_MAX_CONNECTIONS to 1")
    (cause,) = diagnose(log).causes
    assert (cause.key, cause.fix) == ("CUDA_DEVICE_MAX_CONNECTIONS", "export CUDA_DEVICE_MAX_CONNECTIONS=1")


def test_exit_codes_and_the_cli(tmp_path, capsys):
    """0: a cause; 1: a failure no cause is found for; 2: no failure in the log, or no log. JSON has ``causes``
    with ``key`` and ``fix``; Chinese has the same content."""
    log = tmp_path / "run.log"
    log.write_text(RAY_LOG)
    assert main(["doctor", str(log), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["causes"] == [{"key": TP, "fix": f"{TP}=1", "confirmed": False, "delete": False}]
    assert data["failures"][0]["site"]["lines"]["0.16.1"] == 925
    assert main(["doctor", str(log), "--lang", "zh"]) == 0
    text = capsys.readouterr().out
    assert f"{TP}=1" in text and "修复" in text
    unknown = tmp_path / "unknown.log"
    unknown.write_text("RuntimeError: something nobody wrote\n")
    assert main(["doctor", str(unknown)]) == 1
    text = capsys.readouterr().out  # a failure not placed acquits nothing: it says what would place it
    assert "not placed" in text and "--args-file" in text and "no launch key is at fault" not in text
    empty = tmp_path / "empty.log"
    empty.write_text("step 1 done\nstep 2 done\n")
    assert main(["doctor", str(empty)]) == 2
    assert main(["doctor", str(tmp_path / "missing.log")]) == 2


def test_a_switch_the_message_does_not_print_gets_its_other_state():
    """megatron-core 0.12.1 raises on ``self.sequence_parallel is False`` with EP and TP: the condition reads the
    switch alone, so the state that does not raise is the fix."""
    log = ("ValueError: When using expert parallelism and tensor parallelism, sequence parallelism must be used")
    (cause,) = diagnose(log).causes
    key = "actor_rollout_ref.actor.megatron.override_transformer_config.sequence_parallel"
    assert (cause.key, cause.fix) == (key, f"++{key}=True")


def test_an_and_with_one_false_operand_is_false_whatever_the_rest_reads():
    """The condition is decided where what it leaves unread does not matter, as Python decides it; else unknown."""
    from verl_mindspeed.doctor._solve import raises

    both = "self.cpu_offloading and self.pipeline_model_parallel_size > 1"
    assert raises(both, False, {"self.cpu_offloading": False}) is False
    assert raises(both, False, {"self.pipeline_model_parallel_size": 1}) is False
    assert raises(both, False, {"self.cpu_offloading": True}) is None
    assert raises("a or b", True, {"b": True}) is False and raises("a or b", True, {"b": False}) is None
    assert raises(both, False, {"self.cpu_offloading": True, "self.pipeline_model_parallel_size": 2}) is True


def test_each_unprinted_setting_that_can_clear_the_condition_is_an_alternative_with_its_one_value():
    """megatron-core's "no support for Pipeline parallelism with CPU offloading" prints neither setting; its
    condition (``cpu_offloading and pipeline_model_parallel_size > 1``) passes with the switch off whatever the
    pipeline size is (the line), or with a pipeline size of 0 or 1 (two values: named, no line). megatron-core's own
    TransformerConfig raises without the line and builds with it."""
    config, torch = require("megatron.core.transformer.transformer_config"), require("torch")
    base = dict(num_layers=4, hidden_size=64, num_attention_heads=4, cpu_offloading=True, cpu_offloading_num_layers=1,
                pipeline_model_parallel_size=2, pipeline_dtype=torch.bfloat16)
    with pytest.raises(ValueError) as raised:
        config.TransformerConfig(**base)
    key = "actor_rollout_ref.actor.megatron.override_transformer_config.cpu_offloading"
    found = diagnose(f"ValueError: {raised.value}\n")
    assert [(c.key, c.fix) for c in found.causes] == [
        (key, f"++{key}=False"), ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size", None)]
    assert found.failures[0].verdict.certainty == "possible"  # alternatives read without values: not "likely"
    config.TransformerConfig(**{**base, "cpu_offloading": False})


@pytest.mark.parametrize("message", [
    # two switches could each clear it: both are lines, neither is chosen for the user
    "enable_cuda_graph and external_cuda_graph cannot be enabled at the same time.",
    # the precision verl sets itself (bf16) could clear it too: no line sets fp16 for the user
    "overlap_moe_expert_parallel_comm is only supported with bf16 or fp16 model",
    # a mode with two passing values (0 and 2) and the switch: the switch is one alternative, the mode no line
    "When use_flash_attn, only supports sparse modes 0 and 2",
    # the architecture's own (latent attention) is never turned off by a line
    "rotary_interleaved does not work with multi_latent_attention."])
def test_an_unprinted_condition_gives_lines_only_for_settings_the_launch_owns_one_value_of(message):
    lines = {c.key.rsplit(".", 1)[-1]: c.fix for c in diagnose(f"AssertionError: {message}\n").causes}
    assert lines.get("fp16") is None and "multi_latent_attention" not in lines and lines.get("sparse_mode") is None
    assert all(fix is None or fix.endswith(("=False", "=True")) for fix in lines.values())
    if "enable_cuda_graph" in lines:
        assert lines["enable_cuda_graph"].endswith("=False") and lines["external_cuda_graph"].endswith("=False")


def test_an_integer_the_condition_wants_a_multiple_of_is_never_given_zero_as_its_only_value():
    """A size that must be a multiple of 256 passes for 0 and for 256, 512...: probed beyond 64, 0 is not the only
    value; one that must be at most 1 passes for 0 and 1. Only a value the condition pins (``== 4``) is one."""
    from dataclasses import replace

    from verl_mindspeed.doctor._fix import passing_values

    found = match(roots(exceptions("ValueError: Currently there is no support for Pipeline parallelism with CPU "
                                   "offloading\n"))[0])
    pp = "pipeline_model_parallel_size"
    def passing(condition):  # noqa: E306 - the same site, its condition swapped
        return passing_values(replace(found, site=replace(found.site, condition=condition)), pp)

    assert passing("self.pipeline_model_parallel_size % 256 != 0")[:3] == [0, 256, 512]
    assert passing("self.cpu_offloading and self.pipeline_model_parallel_size > 1") == [0, 1]
    assert passing("self.pipeline_model_parallel_size != 4") == [4]


def test_the_messages_own_advice_goes_before_a_value_read_from_an_unprinted_condition():
    """"Please set --moe-router-score-function sigmoid" is the fix, though turning expert bias off would also pass
    ``moe_router_enable_expert_bias and moe_router_score_function != 'sigmoid'``."""
    log = ("ValueError: Expert bias for aux-loss-free routing only supports sigmoid score function.Please set "
           "--moe-router-score-function sigmoid for sigmoid score function.\n")
    key = "actor_rollout_ref.actor.megatron.override_transformer_config.moe_router_score_function"
    assert [(c.key, c.fix) for c in diagnose(log).causes] == [(key, f"++{key}=sigmoid")]


def test_a_layer_split_gets_the_largest_stage_count_that_divides_the_layers_and_the_old_one():
    """PP 6 divides 60 layers but not a world size of 8s; PP 4 divides both. VPP splits layers, not devices: its
    nearest value stands (20 layers per rank, VPP 12 -> 10)."""
    log = ("AssertionError: num_layers=60 should be divisible by config.pipeline_model_parallel_size=8")
    (cause,) = diagnose(log).causes
    assert cause.fix == f"{TP.replace('tensor', 'pipeline')}=4"
    vpp = diagnose("AssertionError: num_layers_per_pipeline_rank 20 should be divisible by vp_size 12")
    assert [c.fix for c in vpp.causes] == [f"{TP.replace('tensor', 'virtual_pipeline')}=10"]


VERL_PROTOCOL = "/verl/verl/protocol.py"


def test_a_range_no_value_of_the_setting_can_enter_blames_neither_it_nor_the_pipeline_size_alone():
    """megatron-core's interleaved schedule raises when ``microbatch_group_size_per_vp_stage`` is outside
    ``[PP, M]``; with PP=2 and M=1 that range is empty, so no value of the group passes: it is not blamed. The way
    out is the count M (the micro batch sizes, ``doctor/_schedule.py``) or no interleaving; before, the pipeline size
    that bounds the range was named alone, with no line."""
    log = ("ValueError: The number of contiguous micro-batches in a virtual pipeline stageshould range in "
           "[PP=2 , M=1]")
    found = diagnose(log)
    keys = [c.key for c in found.causes]
    assert not [k for k in keys if k.endswith("microbatch_group_size_per_vp_stage")]
    assert "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size" not in keys
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu" in keys
    assert found.failures[0].verdict.certainty == "possible"


def test_an_unequal_chunk_of_the_batch_blames_the_batch_with_a_divisible_value():
    """verl's ``DataProto.chunk`` splits the batch over the worker group's ranks: the batch key is at fault, the fix
    the nearest batch the rank count divides; the generation entry's batch is ``data.batch_size``, and a written
    value is scaled as the log's batch is to it."""
    log = "AssertionError: only support equal chunk. Got size of DataProto 16 and chunk 32."
    (cause,) = diagnose(log).causes
    assert (cause.key, cause.fix) == ("data.train_batch_size", "data.train_batch_size=32")
    gen = ("Traceback (most recent call last):\n"
           '  File "/verl/verl/trainer/main_generation.py", line 120, in main\n'
           "    output = wg.generate_sequences(data)\n"
           f'  File "{VERL_PROTOCOL}", line 699, in chunk\n'
           "AssertionError: only support equal chunk. Got size of DataProto 2 and chunk 4.\n")
    (cause,) = diagnose(gen).causes
    assert (cause.key, cause.fix) == ("data.batch_size", "data.batch_size=4")
    from verl_mindspeed.doctor._stack import divisible_batch

    assert divisible_batch(2, 4, 1) == 2  # batch_size=1 made a DataProto of 2: 2 makes 4
    assert divisible_batch(24, 16, None) == 16


def test_a_failure_inside_a_path_a_switch_selects_names_the_switch():
    """verl's legacy weight loader runs with use_mbridge off; a failure raised in it (not below it in megatron) is
    avoided by mbridge. The fused-kernel forward likewise runs with use_fused_kernels on."""
    legacy = ("Traceback (most recent call last):\n"
              '  File "/verl/verl/utils/model.py", line 494, in load_megatron_gptmodel_weights\n'
              '  File "/verl/verl/models/mcore/loader.py", line 441, in load_state_dict_to_megatron_gptmodel\n'
              '  File "/env/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1928, in __getattr__\n'
              "AttributeError: 'MoELayer' object has no attribute 'linear_fc1'\n")
    causes = {c.key: c.fix for c in diagnose(legacy).causes}
    roles = ("actor_rollout_ref.actor.megatron.use_mbridge", "actor_rollout_ref.ref.megatron.use_mbridge")
    assert causes == {key: f"{key}=True" for key in roles}
    fused = ("Traceback (most recent call last):\n"
             '  File "/verl/verl/models/mcore/model_forward_fused.py", line 201, in _fused_GPTModel_forward\n'
             '  File "/verl/verl/utils/kernel/kernels.py", line 518, in efficient_entropy_forward\n'
             "AttributeError: 'NoneType' object has no attribute 'is_cuda'\n")
    (cause,) = diagnose(fused).causes
    assert cause.fix == "actor_rollout_ref.model.use_fused_kernels=False"
    below = fused.replace('  File "/verl/verl/utils/kernel/kernels.py"',
                          '  File "/x/megatron/core/tensor_parallel/mappings.py"')
    assert diagnose(below).causes == []  # raised below it, in megatron: the switch is not named
    network = legacy.replace("AttributeError: 'MoELayer' object has no attribute 'linear_fc1'",
                             "RuntimeError: create_config:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:102 HCCL "
                             "function error: hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config)")
    found = diagnose(network)  # a collective failing while the loader runs is the network's, not the loader's
    assert not found.causes and found.failures[0].verdict.kind == "resource"


def test_an_unassigned_engine_in_build_rollout_names_the_rollout_name():
    log = ("Traceback (most recent call last):\n"
           '  File "/root/verl/verl/workers/megatron_workers.py", line 285, in _build_rollout\n'
           "    return rollout, sharding_manager\n"
           "UnboundLocalError: local variable 'rollout' referenced before assignment\n")
    (cause,) = diagnose(log).causes
    assert cause.key == "actor_rollout_ref.rollout.name"


def test_arguments_a_parser_does_not_know_are_the_ones_at_fault():
    log = "ValueError: remaining_argv: ['--use_fused_rmsnorm', '--use_fused_swiglu']"
    assert [c.key for c in diagnose(log).causes] == ["--use_fused_rmsnorm", "--use_fused_swiglu"]
    usage = "usage: train.py [-h] [--lr LR]\ntrain.py: error: unrecognized arguments: --foo-bar 3 --baz\n"
    found = diagnose(usage)  # argparse's own exit line, no Python type printed
    assert found.exit_code == 0 and [c.key for c in found.causes] == ["--foo-bar", "--baz"]


def test_a_megatron_lm_source_module_not_found_is_the_pythonpath():
    """megatron-core ships ``megatron.core`` only: ``megatron.optimizer`` missing means Megatron-LM's tree is not
    on PYTHONPATH; a missing ``megatron.core`` module stays a version mismatch."""
    (cause,) = diagnose("ModuleNotFoundError: No module named 'megatron.optimizer'").causes
    assert cause.key == "PYTHONPATH" and cause.fix.startswith("export PYTHONPATH=")
    found = diagnose("ModuleNotFoundError: No module named 'megatron.core.distributed.custom_fsdp'")
    assert found.causes == [] and found.failures[0].verdict.kind == "version-skew"


def test_an_untyped_out_of_memory_line_of_the_rollout_allocator_is_read():
    """``[torch_memory_saver.cpp] CUresult error: 2 (out of memory)`` has no Python type: it is a failure, and the
    rollout allocator's memory share is the setting; an OOM elsewhere blames no key."""
    line = "[torch_memory_saver.cpp] CUresult error: 2 (out of memory) file=csrc/utils.h func=cu_mem_create line=187"
    found = diagnose(line)
    assert found.exit_code == 0 and found.failures[0].verdict.kind == "resource"
    assert [c.key for c in found.causes] == ["actor_rollout_ref.rollout.gpu_memory_utilization"]
    plain = diagnose("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert plain.causes == [] and plain.failures[0].verdict.kind == "resource"


def test_a_struct_key_verls_own_code_writes_is_verls_fault_not_the_launchs():
    """A ``not in struct`` raised under a verl function that assigns into the config blames no key; the same key
    refused at composition is the launch's, named by OmegaConf's ``full_key`` line."""
    written = ("omegaconf.errors.ConfigKeyError: Key 'rollout_correction' is not in struct\n"
               "    full_key: actor_rollout_ref.actor.policy_loss.rollout_correction\n\n"
               'File "/apps/verl/verl/trainer/ppo/rollout_corr_helper.py", line 940, in apply_rollout_correction\n'
               '    policy_loss_config["rollout_correction"] = rollout_corr_config\n'
               'File "/usr/lib/python3.10/site-packages/omegaconf/dictconfig.py", line 310, in __setitem__\n'
               "    self._format_and_raise(\n"
               "...\n"
               "omegaconf.errors.ConfigKeyError: Key 'ro\n")
    found = diagnose(written)
    assert found.causes == [] and [f.verdict.kind for f in found.failures] == ["upstream"]
    assert "apply_rollout_correction" in str(found.failures[0].verdict.what)
    composed = written.split("\n\n")[0]  # the same message with no verl frame under it: a composition refusal
    (cause,) = diagnose(composed).causes
    assert cause.key == "actor_rollout_ref.actor.policy_loss.rollout_correction"


def test_a_bare_struct_key_takes_the_one_verl_path_with_that_name_and_no_guessed_fix():
    (cause,) = diagnose("omegaconf.errors.ConfigAttributeError: Key 'format' is not in struct").causes
    assert cause.key == "actor_rollout_ref.rollout.multi_turn.format"
    assert cause.fix is None or cause.fix.split("=", 1)[0].lstrip("+") == cause.key


def test_a_raise_printed_again_cut_short_lends_its_frames_to_the_whole_one():
    log = ("ValueError: pipeline stages must be even here\n\n"
           'File "/verl/verl/workers/megatron_workers.py", line 10, in build\n'
           "ValueError: pipeline st\n")
    (root,) = roots(exceptions(log))
    assert root.message.startswith("pipeline stages must be even") and root.frames[0][2] == "build"


def test_a_ray_prefix_with_an_ipv6_address_is_taken_off():
    log = "\n".join(f"(TaskRunner pid=8143, ip=[2605:340:cdb1:6400::a7c:2d2c]) {line}" for line in (
        "Traceback (most recent call last):",
        '  File "/verl/verl/trainer/main_ppo.py", line 10, in run',
        "RuntimeError: The expanded size of the tensor (2) must match the existing size (0)"))
    (root,) = roots(exceptions(log))
    assert (root.type, root.stream, root.frames[0][2]) == ("RuntimeError", "TaskRunner pid=8143", "run")


def test_a_number_a_poster_annotated_still_binds_and_gets_its_fix():
    (cause,) = diagnose("- num_layers=46 should be divisible by config.pipeline_model_parallel_size=4 (two recipes)"
                        ).causes
    assert cause.fix == "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2"


def test_a_key_the_release_refuses_gets_delete_as_its_fix(capsys):
    log = ("hydra.errors.ConfigCompositionException: Could not override 'actor_rollout_ref.actor.fsdp_config."
           "grad_offload'.\nTo append to your config use +actor_rollout_ref.actor.fsdp_config.grad_offload=True\n"
           "Key 'grad_offload' is not in struct\n")
    (cause,) = diagnose(log).causes
    assert (cause.key, cause.fix, cause.delete) == ("actor_rollout_ref.actor.fsdp_config.grad_offload", None, True)


def test_a_field_verls_build_sets_itself_is_not_the_launchs_fault():
    """pipeline_dtype comes from verl's converter (or the provider's finalize), never from a launch key the launch did
    not write: the raise blames none."""
    found = diagnose("ValueError: When using pipeline parallelism, pipeline_dtype must be specified")
    assert found.causes == [] and found.failures[0].verdict.kind == "upstream"


def test_a_check_a_later_release_relaxes_keeps_the_key_and_says_upgrading_also_works():
    """megatron-core 0.16.1 words it "a multiple or divisor" and its condition, run on the printed 2 and 8, passes."""
    found = diagnose("ValueError: num_query_groups (2) must be a multiple of tensor_model_parallel_size (8).")
    (cause,) = found.causes
    assert cause.fix == "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"
    assert "0.16.1 relaxes this check" in str(found.failures[0].verdict.what)
    still = diagnose("ValueError: num_query_groups (3) must be a multiple of tensor_model_parallel_size (2).")
    assert "0.16.1" not in str(still.failures[0].verdict.what)  # 0.16.1 refuses 3 and 2 too
    gone = diagnose("ValueError: When using expert parallelism and tensor parallelism, sequence parallelism must be "
                    "used")
    assert "no longer has" in str(gone.failures[0].verdict.what)


def test_a_check_reworded_in_later_releases_is_not_called_dropped():
    """verl 0.5.0's "not divisible by infer_tp" is "infer_world_size" from 0.6.1 on: the same check, still there;
    the condition reads the setting through a local name, so the setting is not ruled out either."""
    found = diagnose("AssertionError: rollout world_size: 1 is not divisible by infer_tp: 2")
    assert [c.key for c in found.causes] == ["actor_rollout_ref.rollout.tensor_model_parallel_size"]
    assert "no longer" not in str(found.failures[0].verdict.what)


def test_the_launch_hydra_printed_in_the_log_is_replayed():
    """With no launch given, the overrides of Hydra's "Error executing job with overrides" line are the launch:
    check reproduces the failure on them and its fix clears it. A cut list is not replayed."""
    require("verl")
    overrides = ["data.train_batch_size=16", "actor_rollout_ref.actor.ppo_mini_batch_size=8",
                 "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1",
                 "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
                 "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1",
                 "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1",
                 "actor_rollout_ref.rollout.tensor_model_parallel_size=2", "trainer.n_gpus_per_node=1"]
    tail = ("ray.exceptions.RayTaskError(AssertionError): ray::TaskRunner.run() (pid=1234, ip=10.0.0.1)\n"
            "AssertionError: rollout world_size: 1 is not divisible by infer_tp: 2\n")
    found = diagnose(f"Error executing job with overrides: {overrides!r}\n" + tail)
    (cause,) = found.causes
    assert found.launch_from_log and cause.confirmed
    assert cause.fix == "actor_rollout_ref.rollout.tensor_model_parallel_size=1"
    cut = diagnose(f"Error executing job with overrides: {overrides!r}"[:200] + "\n[...]\n" + tail)
    assert not cut.launch_from_log and not cut.causes[0].confirmed


def test_a_key_a_later_verl_has_is_deleted_and_one_verl_reads_is_added_with_its_value():
    """Hydra refusing a key the verl here has: the release that ran predates it, the argument goes. verl's code
    reading a key its config lacks: added with '+' and the value verl's own config gives it."""
    require("verl")
    refused = diagnose("Could not override 'actor_rollout_ref.model.lora_rank'.\n"
                       "To append to your config use +actor_rollout_ref.model.lora_rank=32\n"
                       "Key 'lora_rank' is not in struct\n    full_key: actor_rollout_ref.model.lora_rank\n")
    (cause,) = refused.causes
    assert (cause.key, cause.fix, cause.delete) == ("actor_rollout_ref.model.lora_rank", None, True)
    assert "0.7.0" in str(refused.failures[0].verdict.what)
    (read,) = diagnose("omegaconf.errors.ConfigAttributeError: Key 'format' is not in struct").causes
    assert read.fix == "+actor_rollout_ref.rollout.multi_turn.format=hermes"


def test_an_engine_name_the_worker_does_not_build_gets_one_of_verls_registry():
    require("verl")
    log = ('  File "/root/verl/verl/workers/megatron_workers.py", line 285, in _build_rollout\n'
           "    return rollout, sharding_manager\n"
           "UnboundLocalError: local variable 'rollout' referenced before assignment\n")
    (cause,) = diagnose(log).causes
    assert cause.fix == "actor_rollout_ref.rollout.name=vllm"


def test_fix_values_in_the_wrong_unit_or_direction_are_not_offered():
    from verl_mindspeed.doctor._stack import divisible_batch

    assert divisible_batch(500, 64, 32) is None  # 500 samples from a written 32 prompts: no trustworthy value
    assert divisible_batch(64, 48, 32) == 24  # 2 samples a prompt: 24 x 2 = 48
    oom = ("[torch_memory_saver.cpp] CUresult error: 2 (out of memory) file=csrc/utils.h func=cu_mem_create\n"
           "  File \"/x/sglang/srt/mem_cache/memory_pool.py\", line 10, in alloc\n")
    from verl_mindspeed.doctor._replay import Replay

    low = Replay(["actor_rollout_ref.rollout.gpu_memory_utilization=0.05"], [])
    (cause,) = diagnose(oom).causes
    assert cause.key.endswith("gpu_memory_utilization")
    from verl_mindspeed.doctor._stack import _memory

    verdict = _memory(roots(exceptions(oom))[0], None, low)
    assert verdict.causes[0].fix is None  # 0.05 cannot go lower than the 0.1 floor: no line that raises it


def test_a_cut_copy_printed_before_the_whole_raise_is_one_failure():
    log = ("AssertionError: num_attention_heads (28) must be a multiple of\n...\n\n"
           "Traceback (most recent call last):\n"
           '  File "/x/megatron/core/transformer/transformer_config.py", line 500, in __post_init__\n'
           "AssertionError: num_attention_heads (28) must be a multiple of tensor_model_parallel_size (8)\n")
    (root,) = roots(exceptions(log))
    assert root.message.endswith("(8)") and root.frames


def test_a_local_that_is_a_setting_binds_its_printed_value():
    """``vp_size = get_virtual_pipeline_model_parallel_world_size()``: the index keeps the local as the setting, so
    the printed 12 moves VPP to the nearest size that divides the stage's 20 layers."""
    (cause,) = diagnose("AssertionError: num_layers_per_pipeline_rank 20 should be divisible by vp_size 12").causes
    assert cause.fix == "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=10"


def test_a_mandatory_value_left_unset_gets_checks_line():
    require("verl")
    log = ("(TaskRunner pid=...) omegaconf.errors.MissingMandatoryValue: Missing mandatory value: "
           "actor_rollout_ref.rollout.name\n(TaskRunner pid=...)     full_key: actor_rollout_ref.rollout.name\n")
    found = diagnose(log)
    (cause,) = found.causes
    assert (cause.key, cause.fix) == ("actor_rollout_ref.rollout.name", "actor_rollout_ref.rollout.name=vllm")
    assert found.failures[0].raised.stream == "TaskRunner pid=..."  # a pid the poster elided is still a prefix


def test_a_key_a_config_dataclass_refuses_is_placed_in_its_section():
    """OmegaConf names the dataclass, not the path: verl converts actor_rollout_ref.model into HFModelConfig. The
    value is not in the log, so check's near miss is told in words and the argument is the fix, never a line
    carrying a value the launch did not write."""
    require("verl")
    log = ("omegaconf.errors.ConfigKeyError: Key 'enable_activation_offloading' not in 'HFModelConfig'\n"
           "    full_key: enable_activation_offloading\n    object_type=HFModelConfig\n")
    found = diagnose(log)
    (cause,) = found.causes
    assert (cause.key, cause.fix, cause.delete) == ("actor_rollout_ref.model.enable_activation_offloading", None,
                                                    True)
    assert "did you mean 'enable_activation_offload'" in str(found.failures[0].verdict.what)


def test_a_cut_override_list_still_gives_the_argument_the_user_wrote():
    """Hydra's override list cut short is not replayed, but each item it shows whole is the argument as written:
    the near miss of a dataclass field becomes the line that keeps the value under the right name, and its '+'."""
    require("verl")
    from verl_mindspeed.doctor._config import logged_arguments

    listed = ("Error executing job with overrides: ['algorithm.adv_estimator=grpo', \"data.prompt_key='q'\", "
              "'+actor_rollout_ref.model.enable_activation_offloading=True', 'actor_rollout_ref.rollout.n=8', "
              "'actor_rollout_ref.rollout.gpu_memory_ut")
    assert logged_arguments(listed) == {
        "algorithm.adv_estimator": "algorithm.adv_estimator=grpo", "data.prompt_key": "data.prompt_key='q'",
        "actor_rollout_ref.model.enable_activation_offloading":
            "+actor_rollout_ref.model.enable_activation_offloading=True",
        "actor_rollout_ref.rollout.n": "actor_rollout_ref.rollout.n=8"}  # the cut item is not an argument
    log = ("omegaconf.errors.ConfigKeyError: Key 'enable_activation_offloading' not in 'HFModelConfig'\n"
           "    full_key: enable_activation_offloading\n    object_type=HFModelConfig\n")
    found = diagnose(log + listed + "\n[...]\n")
    (cause,) = found.causes
    assert not found.launch_from_log
    assert cause.fix == ("~actor_rollout_ref.model.enable_activation_offloading "
                         "++actor_rollout_ref.model.enable_activation_offload=True")
    assert "did you mean 'enable_activation_offload'" in str(found.failures[0].verdict.what)
    # pasted at the end of the launch, the line leaves no error about either key
    from verl_mindspeed.doctor._replay import pasted, replay

    argv = ["--config-name=ppo_megatron_trainer", *BASIC, "+actor_rollout_ref.model.enable_activation_offloading=True"]
    after = replay(pasted(argv, cause.fix))
    assert not [i for i in after.issues if i.severity == "error" and "activation_offload" in i.key]
    assert replay(argv).about(["actor_rollout_ref.model.enable_activation_offloading"])


def test_the_engine_arguments_verl_passes_its_rollout_settings_as_are_read_from_its_servers():
    require("verl")
    from verl_mindspeed.doctor._verl import engine_arguments

    rollout = "actor_rollout_ref.rollout."
    found = engine_arguments()
    assert found["tensor_parallel_size"] == rollout + "tensor_model_parallel_size"  # vLLM's
    assert found["mem_fraction_static"] == rollout + "gpu_memory_utilization"  # SGLang's
    assert found["max_num_batched_tokens"] == rollout + "max_num_batched_tokens"
    assert "seed" not in found  # verl passes replica_rank + seed: no one setting


@pytest.mark.parametrize("message, causes", [
    # vLLM's, in words: the divisor set to the largest value that divides both (28 and the 8 devices it divided)
    ("ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8).",
     [("actor_rollout_ref.rollout.tensor_model_parallel_size", "actor_rollout_ref.rollout.tensor_model_parallel_size"
                                                                "=4")]),
    ("ValueError: Total number of attention heads (32) must be divisible by tensor parallel size (8).", None),
    ("ValueError: ppo_mini_batch_size (32) must be divisible by ppo_micro_batch_size_per_gpu (12)",
     [("actor_rollout_ref.actor.ppo_mini_batch_size", None),
      ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"
                                                                "=4")]),
    # quoted without a value, and in words with a fraction: named, no line (the value written is not in the log)
    ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in "
     "KV cache (20000). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
     "engine.", [("actor_rollout_ref.rollout.max_model_len", None),
                 ("actor_rollout_ref.rollout.gpu_memory_utilization", None)]),
    ("ValueError: Free memory on device (30.5/79.1 GiB) on startup is less than desired GPU memory utilization (0.9, "
     "71.2 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
     [("actor_rollout_ref.rollout.gpu_memory_utilization", None)]),
])
def test_a_rollout_engines_message_names_the_verl_key_it_prints(message, causes):
    require("verl")
    found = diagnose(f"(WorkerDict pid=2222) {message}\n")
    if causes is None:  # 8 divides 32: nothing printed is wrong, so no value is offered
        assert all(c.fix is None for c in found.causes)
        return
    assert [(c.key, c.fix) for c in found.causes] == causes
    in_vllm = diagnose(f'Traceback (most recent call last):\n  File "/env/vllm/config.py", line 9, in f\n{message}\n')
    assert [(c.key, c.fix) for c in in_vllm.causes] == causes


def test_an_engines_argument_names_are_the_rollouts_only_where_the_engine_raised():
    """"data parallel size" raised in megatron is megatron's, not the rollout's data_parallel_size."""
    require("verl")
    log = ('Traceback (most recent call last):\n  File "/env/megatron/core/parallel_state.py", line 9, in f\n'
           "RuntimeError: world size (8) must be divisible by tensor parallel size (3)\n")
    assert not [c for c in diagnose(log).causes if ".rollout." in c.key]


def test_hydras_own_advice_for_a_plus_on_a_key_the_config_has_is_the_fix():
    """"Could not append ... An item is already at": Hydra prints the line without the '+', even in an excerpt that
    opens mid-advice."""
    whole = ("Could not append to config. An item is already at 'trainer.val_before_train'.\n"
             "Either remove + prefix: 'trainer.val_before_train=False'\n"
             "Or add a second + to add or override 'trainer.val_before_train': '++trainer.val_before_train=False'\n")
    (cause,) = diagnose(whole).causes
    assert (cause.key, cause.fix) == ("trainer.val_before_train", "trainer.val_before_train=False")
    cut = ("Either remove + prefix: 'actor_rollout_ref.model.enable_activation_of…\n"
           "…fload=True' Or add a second + to add or override 'actor_rollout_ref.model.enable_activation_offload': "
           "'++actor_rollout_ref.model.enable_activation_offload=True'\n")
    (cause,) = diagnose(cut).causes
    assert cause.fix == "actor_rollout_ref.model.enable_activation_offload=True"


def test_a_refused_key_every_release_has_gets_hydras_plus_line_not_a_deletion():
    """Every verl release here has rollout.n: the config the run composed was not verl's own, and deleting the
    argument would lose the value; Hydra's '+' line keeps it."""
    require("verl")
    log = ("Could not override 'actor_rollout_ref.rollout.n'.\nTo append to your config use "
           "+actor_rollout_ref.rollout.n=16\nKey 'n' is not in struct\n    full_key: actor_rollout_ref.rollout.n\n")
    (cause,) = diagnose(log).causes
    assert (cause.fix, cause.delete) == ("+actor_rollout_ref.rollout.n=16", False)


def test_a_message_that_quotes_the_override_gives_it():
    log = ("ValueError: Rollout mode 'sync' has been removed. Please set `actor_rollout_ref.rollout.mode=async` to "
           "use the native server rollout.")
    (cause,) = diagnose(log).causes
    assert (cause.key, cause.fix) == ("actor_rollout_ref.rollout.mode", "actor_rollout_ref.rollout.mode=async")
    assert diagnose("ValueError: set `foo.bar=1` first").causes == []  # not a verl key: no advice taken


def test_a_raise_no_index_holds_names_the_verl_settings_it_prints():
    """vLLM's check, printed through a colour code whose escape a copy lost: the two rollout keys, and the smaller
    one moved up to the larger (the message's own advice)."""
    log = ("[36m(main_task pid=3523385) ValueError: max_num_batched_tokens (8192) is smaller than max_model_len "
           "(9216). Please increase max_num_batched_tokens or decrease max_model_len.")
    found = diagnose(log)
    assert found.failures[0].raised.stream == "main_task pid=3523385"
    assert [(c.key, c.fix) for c in found.causes] == [
        ("actor_rollout_ref.rollout.max_num_batched_tokens", "actor_rollout_ref.rollout.max_num_batched_tokens=9216"),
        ("actor_rollout_ref.rollout.max_model_len", None)]


def test_abbreviated_sizes_are_named_only_where_the_message_prints_their_values():
    found = diagnose("ValueError: world size must be divisible by ETP * EP * PP (1 * 32 * 4 = 128)")
    assert {c.key.rsplit(".", 1)[-1] for c in found.causes} == {
        "expert_tensor_parallel_size", "expert_model_parallel_size", "pipeline_model_parallel_size"}
    assert diagnose("RuntimeError: DSv4 THD CP path requires boundary_hidden from the boundary exchange").causes == []


def test_what_a_review_found_gives_no_wrong_line():
    """Each of these once printed a line that would not clear the failure, or blamed a key for ordinary text."""
    require("verl")
    full = ('  File "/x/hydra/_internal/config_loader_impl.py", line 381, in _apply_overrides_to_config\n'
            "    OmegaConf.update(cfg, key, value, merge=True)\n"
            "omegaconf.errors.ConfigAttributeError: Key 'use_dist_checkpointing' is not in struct\n"
            "    full_key: actor_rollout_ref.actor.megatron.use_dist_checkpointing\n\n"
            "The above exception was the direct cause of the following exception:\n\n"
            "hydra.errors.ConfigCompositionException: Could not override "
            "'actor_rollout_ref.actor.megatron.use_dist_checkpointing'.\n"
            "To append to your config use +actor_rollout_ref.actor.megatron.use_dist_checkpointing=True\n")
    (cause,) = diagnose(full).causes  # HYDRA_FULL_ERROR's root is OmegaConf's: still the launch's refused override
    assert cause.fix == "+actor_rollout_ref.actor.megatron.use_dist_checkpointing=True"
    (cause,) = diagnose("omegaconf.errors.ConfigKeyError: Key 'use_remove_padding' not in 'HFModelConfig'\n").causes
    assert (cause.fix, cause.delete) == (None, True)  # never "add" a key the section holds
    fsdp = ("Could not override 'actor_rollout_ref.actor.megatron.param_offload'.\nTo append to your config use "
            "+actor_rollout_ref.actor.megatron.param_offload=True\nKey 'megatron' is not in struct\n")
    (cause,) = diagnose(fsdp).causes  # the FSDP config composed: the Megatron config is the fix
    assert cause.fix == "--config-name=ppo_megatron_trainer"
    (cause,) = diagnose("omegaconf.errors.MissingMandatoryValue: Missing mandatory value: data.train_files\n").causes
    assert cause.fix is None  # no placeholder path from verl's example config
    assert diagnose("subprocess.CalledProcessError: Command '['python3', '-m', 'verl.trainer.main_ppo', "
                    "'algorithm.adv_estimator=grpo']' returned non-zero exit status 1.").causes == []
    (cause,) = diagnose("Could not append to config. An item is already at 'trainer.experiment_name'.\n"
                        "Either remove + prefix: 'trainer.experiment_name='my run''\n").causes
    assert cause.fix == "trainer.experiment_name='my run'"
    assert diagnose("[36m(TaskRunner pid=1)[0m ValueError: torch says use num_workers=0 or max_length=8192").causes \
        == []  # generic names other libraries print are not verl's settings
    assert diagnose("Error executing job with overrides: [" + "1+" * 5000 + "1]\nValueError: x").exit_code == 1


def test_a_dataset_file_not_found_names_its_data_key_and_a_pasted_frame_keeps_its_frames():
    log = ('  File "/x/verl/trainer/main_ppo.py", line 219, in create_rl_dataset\n'
           "    dataset = dataset_cls(\n"
           '  File "/x/datasets/data_files.py", line 383, in resolve_pattern\n'
           "    raise FileNotFoundError(error_msg)\n"
           "FileNotFoundError: Unable to find '/root/data/gsm8k/test.parquet'\n")
    (cause,) = diagnose(log).causes
    assert (cause.key, cause.fix) == ("data.val_files", None)  # the file must exist: no line makes it
    fused = ('File "/w/verl/utils/experimental/torch_functional.py", line 25, in _fused_linear_for_ppo_fwd\n'
             "logits = (hidden_states @ vocab_weights.t()) / temperature\n"  # the code line, its indent lost
             "RuntimeError: setStorage: sizes [896, 151936] are out of bounds for storage of size 0\n")
    (cause,) = diagnose(fused).causes
    assert cause.fix == "actor_rollout_ref.model.use_fused_kernels=False"


def test_a_raise_printed_without_a_message_is_read():
    """``AssertionError`` alone (a bare ``assert``) has no first line to quote: the doctor still answers."""
    found = diagnose("Traceback (most recent call last):\n  File \"/x/y.py\", line 3, in f\nAssertionError\n")
    assert found.exit_code in (0, 1) and len(found.failures) == 1


def test_a_log_pasted_as_a_markdown_quote_is_read_and_a_debug_variable_is_never_the_cause(tmp_path, capsys):
    """A thread's log quoted with '> ' is read as the log (its frames, the message's end); a variable a message names
    only to print more (Hydra's HYDRA_FULL_ERROR, OmegaConf's OC_CAUSE) is never what failed. A launch script that
    runs another one leaves the log to be read alone, and says so."""
    quoted = ("> Traceback (most recent call last):\n"
              ">   File \"/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py\", line 3728, in "
              "all_gather\n>     work = group.allgather([tensor_list], [tensor])\n"
              "> RuntimeError: Tensors must be contiguous\n> \n"
              "> Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n")
    found = diagnose(quoted)
    (failure,) = found.failures
    assert failure.raised.frames and failure.raised.message == "Tensors must be contiguous"
    assert not found.causes
    assert not diagnose("RuntimeError: Tensors must be contiguous (set env var OC_CAUSE=1 for full trace)\n").causes
    log, wrapper = tmp_path / "log.txt", tmp_path / "run.sh"
    log.write_text(quoted)
    wrapper.write_text("bash recipe/dapo/run_dapo_qwen2.5_7b.sh\n")
    assert main(["doctor", str(log), "--args-file", str(wrapper), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert "no 'python3 -m <module> ...' launch line found" in out["launch_unread"] and not out["launch_replayed"]
    assert main(["doctor", str(log), "--args-file", str(tmp_path / "missing.sh")]) == 2  # a wrong path stays an error


def test_a_bare_assert_is_matched_by_the_line_its_frame_prints():
    """A bare ``assert`` prints no message: the code line under its frame says which assert failed. One the index
    does not hold (a later release's) is not taken for another assert of the same file, whose setting it would
    blame; one it holds is found by that line."""
    def log(line: int, code: str) -> str:
        return ("Traceback (most recent call last):\n"
                f'  File "/env/megatron/core/optimizer_param_scheduler.py", line {line}, in __init__\n'
                f"    {code}\nAssertionError\n")

    later = diagnose(log(159, "assert self.lr_decay_steps > 0"))
    assert later.failures[0].site is None and not later.causes  # min_lr's assert (line 64) is not this one
    assert "assert self.lr_decay_steps > 0" in str(later.failures[0].verdict.what)
    held = diagnose(log(64, "assert self.min_lr >= 0.0"))
    assert held.failures[0].site is not None and held.failures[0].site.site.condition == "self.min_lr >= 0.0"


def test_a_key_verls_config_copies_from_another_is_named_as_the_user_writes_it():
    """verl's rollout.prompt_length is ${oc.select:data.max_prompt_length,512}: a failure reading it names the data
    key the launch writes. A copy whose source is named as well stays (the ref's use_mbridge beside the actor's)."""
    require("verl")
    from verl_mindspeed.doctor._verl import written_as

    assert written_as("actor_rollout_ref.rollout.prompt_length") == "data.max_prompt_length"
    assert written_as("critic.ppo_micro_batch_size_per_gpu") == "critic.ppo_micro_batch_size_per_gpu"  # own legacy
    found = diagnose("Traceback (most recent call last):\n"
                     '  File "/verl/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", line 177, in __init__\n'
                     "AssertionError: model context length should be greater than total sequence length\n")
    keys = [c.key for c in found.causes]
    assert "data.max_prompt_length" in keys and "data.max_response_length" in keys
    assert "actor_rollout_ref.rollout.prompt_length" not in keys


def test_a_verl_config_classs_own_field_is_its_sections_key_and_export_is_no_variable():
    """ActorConfig.validate reads self.ppo_mini_batch_size: the actor's key, not the critic's field of that name
    (verl converts the actor's section into a class derived from ActorConfig, read from verl's source). The word
    'export' before a lowercase word in a message is no environment variable."""
    require("verl")
    from verl_mindspeed.doctor._verl import sections_of

    assert sections_of("ActorConfig", derived=True)[:2] == ("actor_rollout_ref.actor", "actor_rollout_ref.ref")
    assert sections_of("ActorConfig") == () and sections_of("CriticConfig", derived=True)[0] == "critic"
    found = diagnose("(TaskRunner pid=1) ValueError: train_batch_size (16) must be >= actor.ppo_mini_batch_size "
                     "(32)\n")
    assert [(c.key, c.fix) for c in found.causes] == [
        ("actor_rollout_ref.actor.ppo_mini_batch_size", "actor_rollout_ref.actor.ppo_mini_batch_size=16")]
    assert not diagnose("ValueError: the sharded delta export does not support pipeline parallelism\n").causes


def test_a_chain_that_spells_the_key_out_is_that_key_and_the_sections_it_passes_are_none():
    """verl's _validate_config reads config.actor_rollout_ref.actor.megatron.tensor_model_parallel_size: the actor's
    engine size (not the rollout's of that name), and never the section 'actor_rollout_ref' itself."""
    require("verl")
    found = diagnose("(TaskRunner pid=1) AssertionError: n_gpus (4) must be divisible by model_parallel_size (8) "
                     "times context_parallel_size (1)\n")
    keys = {c.key for c in found.causes}
    assert "actor_rollout_ref.actor.megatron.tensor_model_parallel_size" in keys
    assert "actor_rollout_ref.actor.megatron.context_parallel_size" in keys
    assert not [k for k in keys if k == "actor_rollout_ref" or ".rollout." in k]


def test_vllms_sleep_mode_allocator_running_out_lowers_the_rollouts_memory_share():
    """vLLM's cumem allocator prints its failure untyped, under the frame of wake_up: it is not that frame's code
    line, and it is the rollout's static share of the device. The line lowers the launch's share by a tenth; with no
    launch, verl's own default (and the report says the line starts from it)."""
    require("verl")
    from verl_mindspeed.doctor._verl import default

    log = ('(main_task pid=1)   File "/env/vllm/entrypoints/llm.py", line 1244, in wake_up\n'
           "(main_task pid=1) cuda error: out of memory at /workspace/csrc/cumem_allocator.cpp:62\n")
    key = "actor_rollout_ref.rollout.gpu_memory_utilization"
    (failure,) = diagnose(log).failures
    share = float(default(key))
    assert failure.raised.frames and [(c.key, c.fix) for c in failure.verdict.causes] == [
        (key, f"{key}={round(share - 0.1, 2)}")]
    assert f"default {share}" in failure.verdict.what
    (failure,) = diagnose(log, ["--config-name=ppo_megatron_trainer", f"{key}=0.3"]).failures
    assert [(c.key, c.fix) for c in failure.verdict.causes] == [(key, f"{key}=0.2")]
    assert "default" not in failure.verdict.what


def test_an_outer_frame_is_never_the_raise_site_of_an_assert_its_inner_frame_prints():
    """The innermost frame prints the assert that failed (a verl release the index lacks): an outer frame's line is a
    call, so a site there (an assert of fsdp_workers.py at that line in another release) is not this raise."""
    log = ('Traceback (most recent call last):\n'
           '  File "/verl/verl/workers/fsdp_workers.py", line 147, in __init__\n'
           "    self.rollout = vLLMRollout(config=self.config.rollout)\n"
           '  File "/verl/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", line 79, in __init__\n'
           "    assert not (not config.enforce_eager and config.free_cache_engine), \\\\\n"
           "AssertionError: disable CUDA graph (enforce_eager = False) if free cache engine\n")
    (failure,) = diagnose(log).failures
    assert failure.site is None or failure.site.site.file != "verl/workers/fsdp_workers.py"
    assert "actor_rollout_ref.rollout.enforce_eager" in {c.key for c in failure.verdict.causes}


def test_a_keyword_verls_converter_gets_twice_is_the_override_to_delete(tmp_path):
    """verl's config converter sets moe_router_bias_update_rate itself and passes override_transformer_config as
    keyword arguments on top (verl#1996): the override goes. A name the message cuts short is the written key it
    begins."""
    log = ("TypeError: verl.models.mcore.config_converter._get_mla_transformer_config() got multiple values for "
           "keyword argument 'moe_router_bias_update_r'\n")
    otc = "actor_rollout_ref.actor.megatron.override_transformer_config"
    argv = ["--config-name=ppo_megatron_trainer", *BASIC, f"+{otc}.moe_router_bias_update_rate=0.001"]
    (cause,) = diagnose(log, argv).causes
    assert (cause.key, cause.fix, cause.delete) == (f"{otc}.moe_router_bias_update_rate", None, True)
    elsewhere = log.replace("verl.models.mcore.config_converter.", "")
    assert not diagnose(elsewhere).causes  # another function's duplicate keyword is not the converter's


def test_a_message_quoted_alone_without_its_type_is_read_but_a_log_is_not_its_sentences():
    """A thread that quotes only the message (no type, no frame): a line that states a failed requirement with a
    value is the failure, and the sizes it prints are named. In a log of many lines, such a sentence is not a raise."""
    quote = ("The expert-parallel grid is incompatible with requested 128 GPUs: the world size must be divisible by "
             "ETP * EP * PP (1 * 64 * 4 = 256).\n")
    found = diagnose(quote)
    assert found.exit_code == 0
    assert "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size" in {c.key for c in found.causes}
    chatter = "".join(f"(TaskRunner pid=1) step {n}: the batch size must be divisible by 8 (ok)\n" for n in range(20))
    assert diagnose(chatter).exit_code == 2


def test_a_log_that_reports_an_error_without_an_exception_holds_a_failure():
    """A device's or Ray's error line with no Python exception (a cut log): the log holds a failure the doctor cannot
    place (exit 1), not an unusable log (2); a log that reports no error is still unusable."""
    for line in ("CUDA error: an illegal memory access was encountered",
                 "[rank0]: RuntimeError copy_d2d NPU function error: ... error code is 507001"):
        found = diagnose(f"INFO start\n{line}\nINFO stop\n")
        assert found.exit_code == 1 and not found.causes and found.failures[0].raised.type == "Error"
    # Ray's raylet line is read the same way, and verl's FAQ places it (test_doctor_engines.py)
    found = diagnose("INFO start\n(raylet) [2025-01-01 00:00:00] Unable to register worker with raylet\nINFO stop\n")
    assert found.failures[0].raised.type == "Error"
    assert [c.key for c in found.causes] == ["ray_kwargs.ray_init.num_cpus"]
    assert diagnose("INFO step 1 loss 0.3\nINFO step 2 loss 0.2\n").exit_code == 2
    for line in ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0",
                 "pretrain_gpt.py: error: argument --x: invalid int value: 'x'",
                 "fatal error: cuda_runtime.h: No such file or directory", "[ERROR] worker died unexpectedly"):
        assert diagnose(line + "\n").exit_code == 1, line  # logging's, argparse's, a compiler's, a launcher's
    for chatter in ("INFO the error rate is falling", "WARNING: apex is not available, using torch",
                    "[HCCL] init done, error code: 0", "No error: all fine", "step:1 - val/error: 0.25",
                    "[W compiler_depend.ts:51] Warning: CUDA error: unknown error", "Error: 0 failures detected",
                    "INFO: CUDA is not available, running on NPU via torch_npu", "| step 10 | TrainError: 0.3 |"):
        assert diagnose(chatter + "\n").exit_code == 2, chatter  # a warning, a success code, a metric, info
    # the run's fatal line comes last, after start-up warnings and a long log
    log = "apex is not available\nERROR: Transformer Engine missing\n" + "INFO step\n" * 20005 + \
        "CUDA error: an illegal memory access was encountered\n"
    assert diagnose(log).failures[-1].raised.message.startswith("CUDA error")


def test_what_the_second_review_found_gives_no_wrong_line(tmp_path, capsys):
    """Each of these once gave a wrong key or line, or lost the diagnosis."""
    require("verl")
    rollout = "actor_rollout_ref.rollout"
    # a key Hydra refused is the argument the user wrote, never the key verl copies it from
    refused = (f"Could not override '{rollout}.n_gpus_per_node'.\nTo append to your config use "
               f"+{rollout}.n_gpus_per_node=8\nKey 'n_gpus_per_node' is not in struct\n")
    assert [c.key for c in diagnose(refused).causes] == [f"{rollout}.n_gpus_per_node"]
    # an assert printed with double quotes is the index's condition, written with single quotes
    quoted = ('Traceback (most recent call last):\n  File "/verl/verl/experimental/one_step_off_policy/ray_trainer.py",'
              ' line 180, in f\n    assert self.config.actor_rollout_ref.rollout.mode == "async"\nAssertionError\n')
    assert [c.key for c in diagnose(quoted).causes] == [f"{rollout}.mode"]
    # a Markdown quote before a colour code and Ray's prefix, and a quote within a quote
    message = "ValueError: max_num_batched_tokens (8192) is smaller than max_model_len (9216).\n"
    for log in (f"> \x1b[36m(TaskRunner pid=1)\x1b[0m {message}", f"> [36m(TaskRunner pid=1)[0m {message}",
                f"> > {message}"):
        assert f"{rollout}.max_num_batched_tokens=9216" in [c.fix for c in diagnose(log).causes], log
    # the override written exactly as the duplicate keyword, not one it only begins
    otc = "actor_rollout_ref.actor.megatron.override_transformer_config"
    argv = ["--config-name=ppo_megatron_trainer", *BASIC, f"+{otc}.num_layers_in_first_pipeline_stage=3",
            f"+{otc}.num_layers=28"]
    twice = ("TypeError: verl.models.mcore.config_converter._get_base_transformer_config() got multiple values for "
             "keyword argument 'num_layers'\n")
    assert [c.key for c in diagnose(twice, argv).causes] == [f"{otc}.num_layers"]
    # a sampling argument's short name in a MoE raise is not the rollout's sampling setting
    moe = ('Traceback (most recent call last):\n  File "/env/vllm/model_executor/layers/fused_moe/layer.py", line 9, '
           "in f\nValueError: top_k 8 exceeds the number of experts 4\n")
    assert not diagnose(moe).causes
    # a launch file that cannot be read is an error, not a launch left out
    log, binary = tmp_path / "log.txt", tmp_path / "run.sh"
    log.write_text(message)
    binary.write_bytes(b"\xff\xfe\x00binary")
    assert main(["doctor", str(log), "--args-file", str(binary)]) == 2


def test_a_method_a_condition_calls_is_no_field_of_the_site():
    """The index keeps the fields a raise's condition reads; ``s.split(",")`` calls a method, which is no setting
    (Megatron-LM's training args have a --split, so it once named override_transformer_config.split)."""
    from verl_mindspeed.doctor._sites import sites

    called = [s for s in sites() if s.condition and ".split(" in s.condition and "split" in s.fields]
    assert not called, [(s.file, s.condition) for s in called[:3]]
    assert any(s.condition and ".split(" in s.condition for s in sites())  # such conditions are in the index


@pytest.mark.parametrize("name, key", [("tensor_model_parallel_size", TP),
                                       ("pipeline_model_parallel_size", TP.replace("tensor", "pipeline"))])
def test_a_setting_the_message_names_in_a_variable_is_the_one_at_fault(name, key):
    """Megatron-LM's checkpoint check reads ``getattr(args, arg_name)`` and prints ``arg_name``: the printed name is
    the setting, and the checkpoint's value is its fix (the value the launch gave it is what raised)."""
    log = ("Traceback (most recent call last):\n"
           '  File "/ws/megatron/training/checkpointing.py", line 87, in _compare\n'
           "    assert checkpoint_value == args_value, error_message\n"
           f"AssertionError: {name} value from checkpoint (1) is not equal to the input argument value (2).\n")
    assert [(c.key, c.fix) for c in diagnose(log).causes] == [(key, f"{key}=1")]
    unnamed = log.replace(name, "some value")  # a printed name that is no identifier names no setting
    assert not diagnose(unnamed).causes


def test_a_printed_product_of_sizes_with_the_world_size_moves_each_size_to_a_divisor_that_fits():
    """``ETP * EP * PP (1 * 64 * 4 = 256)`` on 128 GPUs: EP 32 or PP 2 each makes the product divide the world;
    ETP, already 1, cannot move and is not blamed. Without the world size printed, no value is guessed."""
    megatron = "actor_rollout_ref.actor.megatron."
    log = ("ValueError: The expert-parallel grid is incompatible with requested 128 GPUs: the world size must be "
           "divisible by ETP * EP * PP (1 * 64 * 4 = 256).\n")
    assert [(c.key, c.fix) for c in diagnose(log).causes] == [
        (megatron + "expert_model_parallel_size", megatron + "expert_model_parallel_size=32"),
        (megatron + "pipeline_model_parallel_size", megatron + "pipeline_model_parallel_size=2")]
    alone = "ValueError: world size must be divisible by ETP * EP * PP (1 * 64 * 4 = 256)\n"
    assert [(c.key.rsplit(".", 1)[-1], c.fix) for c in diagnose(alone).causes] == [
        ("expert_tensor_parallel_size", None), ("expert_model_parallel_size", None),
        ("pipeline_model_parallel_size", None)]


@pytest.mark.parametrize("message, fix", [
    ("Number of layers should be divisible by the pipeline-model-parallel size", None),  # Megatron-LM's
    ("number of layers should be divisible by the pipeline parallel size", None),  # MindSpeed's, on the same copy
    ("The number of hybrid pipeline segments described by --hybrid-layer-pattern must be evenly divisible by "
     "--pipeline-model-parallel-size. Got 6 segments and 4 pipeline parallel size.", "=2")])
def test_a_check_on_the_copy_validate_args_makes_of_the_pipeline_size_blames_the_pipeline_size(message, fix):
    """Megatron-LM's ``validate_args`` copies the pipeline size to ``transformer_pipeline_model_parallel_size``, which
    its checks and MindSpeed's read: the pipeline size is at fault (not "a condition no launch key sets"), and a
    value printed for the copy is the pipeline size's (6 segments on 4 stages: 2, the largest divisor of 4 that
    divides 6). No value is guessed where the message prints none."""
    pp = "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size"
    found = diagnose(f"AssertionError: {message}\n")
    assert found.exit_code == 0 and [(c.key, c.fix) for c in found.causes] == [(pp, fix and pp + fix)]
    assert found.failures[0].verdict.kind == "override"


def test_a_product_printed_with_each_value_after_its_name_is_read_the_same_way():
    """``PP(2)*CP(4)*TP(2) = 16`` on a world of 8: each size moves to its largest divisor that makes the product
    divide 8 (PP 1, CP 2, TP 1); ``2 * 4 * 2`` checked by hand is 16, and each line brings it to 8."""
    megatron = "actor_rollout_ref.actor.megatron."
    log = "ValueError: World size (8) is insufficient. Required minimum world size: PP(2)*CP(4)*TP(2) = 16\n"
    fixes = {c.key.removeprefix(megatron): c.fix for c in diagnose(log).causes}
    assert fixes == {"pipeline_model_parallel_size": megatron + "pipeline_model_parallel_size=1",
                     "context_parallel_size": megatron + "context_parallel_size=2",
                     "tensor_model_parallel_size": megatron + "tensor_model_parallel_size=1"}
    assert not any(c.fix for c in diagnose(log.replace("World size (8)", "The world")).causes)  # no world: no value
    # two products: the one the world size divides (EP * ETP, 8 on 16) is not at fault, whichever form comes first
    for mixed in ("ValueError: world size 16: EP(8)*ETP(1) = 8 per group, but TP(2)*PP(4)*CP(4) = 32 does not "
                  "divide it\n",
                  "ValueError: TP(2)*PP(4)*CP(4) = 32 does not divide world size 16; EP * ETP (8 * 1)\n"):
        assert {c.key.removeprefix(megatron): c.fix.rsplit("=", 1)[-1] for c in diagnose(mixed).causes} == {
            "tensor_model_parallel_size": "1", "pipeline_model_parallel_size": "2", "context_parallel_size": "2"}


@pytest.mark.parametrize("overrides, leaf, value", [
    ({"moe_router_topk": 1}, "moe_router_pre_softmax", "True"),
    ({"moe_router_topk": 2, "moe_router_enable_expert_bias": True}, "moe_router_score_function", "sigmoid")])
def test_the_flag_a_megatron_check_advises_is_the_fix_and_clears_megatron_cores_own_check(overrides, leaf, value):
    """megatron-core's checks tell the user the flag to set ("Please use --moe-router-pre-softmax when topk is 1",
    "Please set --moe-router-score-function sigmoid"): the doctor gives that setting's override line, and
    megatron-core's own TransformerConfig, built with the line's value, no longer raises."""
    config = require("megatron.core.transformer.transformer_config")
    base = dict(num_layers=2, hidden_size=64, num_attention_heads=4, num_moe_experts=4, add_bias_linear=False,
                **overrides)
    with pytest.raises(ValueError) as raised:
        config.TransformerConfig(**base)
    log = ("Traceback (most recent call last):\n"
           f'  File "{config.__file__}", line 1, in __post_init__\n'
           f"ValueError: {raised.value}\n")
    key = f"actor_rollout_ref.actor.megatron.override_transformer_config.{leaf}"
    assert [(c.key, c.fix) for c in diagnose(log).causes] == [(key, f"++{key}={value}")]
    config.TransformerConfig(**{**base, leaf: {"True": True}.get(value, value)})  # the line's value: no raise


@pytest.mark.parametrize("extra, leaf", [
    ({"bias_activation_fusion": True, "activation_func": "relu"}, "bias_activation_fusion"),
    ({"apply_rope_fusion": True}, "apply_rope_fusion"),  # neither Transformer Engine nor Apex here
    ({"sequence_parallel": True}, "sequence_parallel")])  # with TP 1: the pipeline's size is named, no line
def test_a_check_under_a_feature_switch_is_cleared_by_the_switch_off_and_megatron_core_agrees(extra, leaf):
    """megatron-core checks under ``if self.bias_activation_fusion:`` that the activation suits the fusion (the
    condition reads the activation, a model fact), under ``if self.sequence_parallel:`` that TP is above 1: the
    switch the check sits under, turned off, is the line, and megatron-core's own TransformerConfig built with it no
    longer raises. Where megatron-core 0.15.3 drops the check, the verdict says so too."""
    config = require("megatron.core.transformer.transformer_config")
    import torch

    base = dict(num_layers=2, hidden_size=64, num_attention_heads=4,
                **{k: getattr(torch.nn.functional, v) if k == "activation_func" else v for k, v in extra.items()})
    try:
        config.TransformerConfig(**base)
        pytest.skip("this megatron-core does not raise here (a fused kernel is installed)")
    except ValueError as raised:
        log = f"ValueError: {raised}\n"
    key = f"actor_rollout_ref.actor.megatron.override_transformer_config.{leaf}"
    found = diagnose(log)
    assert [(c.key, c.fix) for c in found.causes][0] == (key, f"++{key}=False")
    assert not any(c.fix for c in found.causes[1:])  # what the condition itself reads: named, no line
    what = str(found.failures[0].verdict.what)
    assert f"runs only under {leaf}" in what
    assert "megatron-core 0.15.3" in what or leaf == "sequence_parallel"  # the later release that drops the check
    config.TransformerConfig(**{**base, leaf: False})  # the line's value: no raise


@pytest.mark.parametrize("message, leaf", [
    ("--use-fused-rmsnorm must enable with --normalization=RMSNorm, but got normalization=LayerNorm.",
     "use_fused_rmsnorm"),
    ("--use-fused-swiglu must enable with --swiglu, but --swiglu=False.", "use_fused_swiglu")])
def test_a_mindspeed_check_under_its_fused_operator_switch_turns_the_operator_off(message, leaf):
    """MindSpeed checks ``if args.use_fused_rmsnorm: if args.normalization != "RMSNorm": raise`` (no launch key in
    the condition itself: the model's normalization): it was "upstream code"; the operator's switch, which the
    message names, is the line, and ``check`` on a real verl launch takes it without an error or a warning."""
    key = f"actor_rollout_ref.actor.megatron.override_transformer_config.{leaf}"
    found = diagnose(f"AssertionError: {message}\n")
    assert found.causes[0].key == key and found.causes[0].fix == f"++{key}=False"
    require("verl")
    from verl_mindspeed.doctor._replay import pasted, replay

    after = replay(pasted(["--config-name=ppo_megatron_trainer", *BASIC], found.causes[0].fix))
    assert not [i for i in after.issues if i.severity in ("error", "warning")], after.issues


@pytest.mark.parametrize("log, named", [
    # the pipeline is no fault where verl sets pipeline_dtype itself: the layout is never moved blind
    ("ValueError: When using pipeline parallelism, pipeline_dtype must be specified", None),
    # a check of versions under a switch the message does not name is upstream's
    ("AssertionError: A2A Overlap encounters hang issue with torch version < 2.6.0", None),
    # verl's build sets qk_layernorm from the model: never a line, unless the launch writes it
    ("ValueError: qk_layernorm requires Transformer Engine (for TENorm) or q_layernorm/k_layernorm set in the spec.",
     None),
    # the message's own advice (an environment variable, a setting to give a value) goes before a switch turned off
    ("RuntimeError: deterministic_mode is on and we are using DotProductAttention from Transformer Engine, but "
     "NVTE_ALLOW_NONDETERMINISTIC_ALGO is not 0. Currently set to: 1.", None),
    ("AssertionError: 1F1B overlap with FSDP does not support per-layer CUDA graphs (cuda_graph_impl=local). Use "
     "cuda_graph_impl='full_iteration' or disable CUDA graphs (cuda_graph_impl='none').", "cuda_graph_impl"),
    # an integer's off value is 0 or unset, which the sources do not say: the MTP depth is never moved
    ("AssertionError: Multi-Token Prediction (MTP) is not supported with Context Parallelism.",
     "context_parallel_size"),
    # MindSpeed sets use_flash_attn itself before the check: no switch a line can turn off
    ("AssertionError: Only supports sparse modes 0 and 2", "sparse_mode")])
def test_a_switch_gives_no_line_where_the_check_is_upstreams_the_models_or_the_messages_advice_says_otherwise(
        log, named):
    """Each guard of the switch rule, on a check that does sit under a switch: none gives a line, and where the
    condition reads a launch key, that key alone is named."""
    found = diagnose(log + "\n")
    assert not any(c.fix for c in found.causes), [c.fix for c in found.causes]
    assert [c.key.rsplit(".", 1)[-1] for c in found.causes] == ([named] if named else [])


def test_a_switch_line_check_refuses_is_never_given():
    """A switch turned off is pasted into the launch, or verl's Megatron defaults, and ``check`` must take it:
    ``use_flash_attn=False`` leaves MindSpeed's attention mask needing a micro batch size verl never sets (check's
    error), ``use_fused_rmsnorm=False`` is taken; ``bias_activation_fusion=False`` is taken on the defaults, not
    where the launch has ``use_fused_swiglu`` on (check warns of the mismatch)."""
    require("verl")
    from verl_mindspeed.doctor._switch import accepted

    otc = "actor_rollout_ref.actor.megatron.override_transformer_config."
    assert not accepted(f"++{otc}use_flash_attn=False", otc + "use_flash_attn", None)
    assert accepted(f"++{otc}use_fused_rmsnorm=False", otc + "use_fused_rmsnorm", None)
    # with the launch given, a line check warns about there (a new mismatch with a fused kernel it has on) is none
    from verl_mindspeed.doctor._replay import neutral, replay

    fusion = otc + "bias_activation_fusion"
    assert accepted(f"++{fusion}=False", fusion, replay(neutral()))
    assert not accepted(f"++{fusion}=False", fusion, replay([*neutral(), f"++{otc}use_fused_swiglu=True"]))
    # judged on the megatron-core line that raised: fp8_output_proj is a field of 0.18.2 only (check warns that the
    # default stack's 0.16.1 reads nothing of it), and megatron-core 0.18.2's own check is what the line clears
    proj = otc + "fp8_output_proj"
    assert not accepted(f"++{proj}=False", proj, None)
    assert accepted(f"++{proj}=False", proj, None, {"megatron_core": "0.18.2"})
    found = diagnose("ValueError: fp8_output_proj requires fp8_recipe='mxfp8', got 'tensorwise'.\n")
    assert found.causes[0].fix == f"++{proj}=False"


def test_a_value_the_message_prints_that_one_setting_takes_names_that_setting():
    """MindSpeed's TE attention checks ``strategy_type not in CPStrategyFactory._STRATEGY_MAP``, an argument of its
    own: "upstream code" by the condition alone. The message prints ``megatron_cp_algo``, a choice of one setting
    only (``--context-parallel-algo``): that setting is named, with no line (the list the message prints and the
    setting's choices need not agree on which other value this path takes). A value many settings take names none."""
    otc = "actor_rollout_ref.actor.megatron.override_transformer_config."
    log = ("ValueError: Unsupported CP strategy: megatron_cp_algo. Available strategies: ['kvallgather_cp_algo']\n")
    found = diagnose(log)
    assert [(c.key, c.fix) for c in found.causes] == [(otc + "context_parallel_algo", None)]
    assert "a value of context_parallel_algo" in str(found.failures[0].verdict.what)
    assert not diagnose(log.replace("megatron_cp_algo", "unknown_algo")).causes
    assert not diagnose(log.replace("['kvallgather_cp_algo']", "['x']")).causes  # no other choice: not that setting
    # a package's name that is also a choice (transformer_impl's transformer_engine) is printed for other reasons
    assert not diagnose("ValueError: Unknown MXFP8 quantization backend: 'transformer_engine'. Must be 'triton' or "
                        "'flashinfer'.\n").causes


@pytest.mark.parametrize("text, advice", [
    ("Please use --moe-router-pre-softmax when topk is 1.", {"moe_router_pre_softmax": True}),
    ("Please set --moe-router-score-function sigmoid for sigmoid score function.",
     {"moe_router_score_function": "sigmoid"}),
    ("Set --attention-backend to unfused or leave it to be default", {"attention_backend": "unfused"}),
    ("Invalid backend: Please set --moe-flex-dispatcher-backend=deepep or --moe-flex-dispatcher-backend=hybridep",
     {"moe_flex_dispatcher_backend": "deepep"}),
    ("Do not set --moe-layer-recompute with full recompute granularity.", {"moe_layer_recompute": False}),
    ("ampipe only supports flash attention, please enable '--use-flash-attn'.", {"use_flash_attn": True}),
    ("quant_grads is incompatible with it. Please use --no-gradient-accumulation-fusion or",
     {"gradient_accumulation_fusion": False}),
    ("bias not supported in Grouped GEMM yet, please set '--disable-bias-linear' instead.", {"add_bias_linear": False}),
    ("Specify --no-load-optim or --finetune to prevent attempting to load it", {"no_load_optim": True}),
    ("To use the DSA fusion operator, you must simultaneously enable `--use-dsa-absorb`, `--use-fused-lightning-"
     "indexer`, and `--use-fused-sparse-flash-attention`.",
     {"use_dsa_absorb": True, "use_fused_lightning_indexer": True, "use_fused_sparse_flash_attention": True}),
    ("Please set --tensor-model-parallel-size 2 and --pipeline-model-parallel-size 4.",
     {"tensor_model_parallel_size": "2", "pipeline_model_parallel_size": "4"}),
    ("You must not use --use-flash-attn here", {"use_flash_attn": False}),
    ("please set --lr 1e-5", {"lr": "1e-5"}),
    ("Please enable --use-flash-attn first.", {"use_flash_attn": True}),  # a switch takes no word as its value
    ("Please set --micro-batch-size smaller.", {}),  # a number's value is a number
    ("Do not use --enable-cuda-graph or --external-cuda-graph with --cuda-graph-impl.", {}),
    # not advice: a condition, a purpose, a renamed flag, a flag that needs another, a value not given
    ("Pipeline model parallel size must be larger than 0 when enable --standalone-embedding-stage", {}),
    ("Please install or upgrade it to use --optimizer lion.", {}),
    ("--hybrid-override-pattern is deprecated; use --hybrid-layer-pattern instead.", {}),
    ("use '--moe-alltoall-overlap-comm' should open '--moe-grouped-gemm'.", {}),
    ("Must use --overlap-param-gather with --overlap-grad-reduce", {}),
    ("please use --num-virtual-stages-per-pipeline-rank to specify virtual pipeline parallel degree", {}),
    ("Please do not use --cuda-graph-scope moe_router moe_preprocess alongside inference.", {})])
def test_a_messages_advice_by_flag_is_read_as_the_setting_and_value_it_names(text, advice):
    from verl_mindspeed.doctor._advice import advised_flags

    assert advised_flags(text) == advice


def test_a_number_the_condition_counts_is_never_given_a_switchs_state():
    """``pipeline_model_parallel_size > 0`` passes with True as it would with 1: no line sets a size to True. A
    switch tested for truth still gets its other state."""
    from verl_mindspeed.doctor._fix import switch_in

    assert not switch_in("args.pipeline_model_parallel_size > 0", "args.pipeline_model_parallel_size")
    assert not switch_in("args.hybrid_layer_pattern is None", "args.hybrid_layer_pattern")
    assert not switch_in("args.x * 2 == args.y", "args.x")
    assert switch_in("args.overlap_param_gather and not args.overlap_grad_reduce", "args.overlap_grad_reduce")
    assert switch_in("self.sequence_parallel is False", "self.sequence_parallel")


def test_a_printed_switch_gets_its_other_state_when_that_passes():
    """MindSpeed prints both switches of ``distribute_saved_activations and sequence_parallel``: the first the
    condition reads is turned off, the message's own 'must be false'."""
    log = ("Traceback (most recent call last):\n"
           '  File "/py/site-packages/mindspeed/core/transformer/transformer_config.py", line 117, in __post_init__\n'
           "ValueError: distribute_saved_activations: True must be false when sequence parallel is enabled: True\n")
    key = "actor_rollout_ref.actor.megatron.override_transformer_config.distribute_saved_activations"
    assert [(c.key, c.fix) for c in diagnose(log).causes] == [(key, f"++{key}=False")]
    assert not any(c.fix for c in diagnose(log.replace(": True\n", ": False\n")).causes)  # would not have raised


def test_a_time_stamp_before_rays_prefix_and_a_collapsed_traceback_are_read():
    """A logger's time stamp before ``(WorkerDict pid=…)`` is taken off with the prefix, so one worker's lines are
    one stream; the CUDA driver's code 2 from the rollout's allocator is out of memory; a traceback pasted with its
    line breaks lost still gives its exception."""
    stamped = ("[2025-05-09 17:37:48] (WorkerDict pid=60511) [torch_memory_saver.cpp] CUresult error  result=2 "
               "file=csrc/torch_memory_saver.cpp func=cu_mem_create line=103\n") * 2
    (root,) = roots(exceptions(stamped))
    assert (root.type, root.stream) == ("OutOfMemoryError", "WorkerDict pid=60511")
    assert [c.key for c in diagnose(stamped).causes] == ["actor_rollout_ref.rollout.gpu_memory_utilization"]
    collapsed = ('File "/x/vllm/core/scheduler.py", line 1, in _swap_out raise RuntimeError( RuntimeError: Aborted '
                 "due to the lack of CPU swap space. Please increase the swap space to avoid this error\n")
    (raised,) = exceptions(collapsed)
    assert (raised.type, raised.message[:7], raised.code) == ("RuntimeError", "Aborted", "raise RuntimeError(")


@pytest.mark.parametrize("log", [
    "INFO start\nWARNING utils.py:12 passing a list here will raise a TypeError: pass a tuple instead\nINFO done\n",
    "# this would raise ValueError: train_batch_size must be a multiple of it\n",
    "DEBUG payload raise " + "ab12" * 5000 + "\n"])
def test_a_line_that_only_mentions_a_raise_is_no_exception(log):
    """A collapsed traceback is a raise of a type followed by that type's own exception line; a log line that
    speaks of raising is not one."""
    assert exceptions(log) == [] and diagnose(log).exit_code == 2


def test_the_last_raise_of_a_collapsed_traceback_is_read_with_its_call():
    line = ('File "/a/verl/z.py", line 3, in h raise RuntimeError("first") RuntimeError: first File "/a/verl/y.py", '
            'line 9, in g raise ValueError("bad") ValueError: bad\n')
    (raised,) = exceptions(line)
    assert (raised.type, raised.message, raised.code) == ("ValueError", "bad", 'raise ValueError("bad")')


@pytest.mark.parametrize("message", [
    "requested 128 GPUs: world size must be divisible by TP * PP (0 * 4 = 0)",  # a size of 0
    "requested 64 GPUs: world size must be divisible by EP * PP (3000000000 * 4 = 12000000000)",  # no run has it
    "16 GPUs requested, 64 GPUs found: world size must be divisible by TP * PP (4 * 8 = 32)"])  # which?
def test_a_printed_product_gives_no_value_where_the_world_or_the_sizes_are_not_clear(message):
    found = diagnose(f"ValueError: {message}\n")
    assert found.causes and not any(c.fix for c in found.causes)


@pytest.mark.parametrize("checkpoint, launch", [(1, 2), (4, 2), (8, 4)])
def test_a_checkpoint_saved_at_another_size_gets_that_size_larger_or_smaller(checkpoint, launch):
    """The check compares the launch with the checkpoint for equality: the one value that passes is the
    checkpoint's, even where it is larger than the launch's (a divisor search would find nothing)."""
    log = ("Traceback (most recent call last):\n"
           '  File "/ws/megatron/training/checkpointing.py", line 87, in _compare\n'
           "    assert checkpoint_value == args_value, error_message\n"
           f"AssertionError: tensor_model_parallel_size value from checkpoint ({checkpoint}) is not equal to the "
           f"input argument value ({launch}).\n")
    assert [c.fix for c in diagnose(log).causes] == [f"{TP}={checkpoint}"]


def test_only_whole_words_say_a_message_is_the_network_or_memory():
    from verl_mindspeed.doctor._blame import the_machine

    assert the_machine("HCCL function error: hcclCommInitRootInfoConfig") and the_machine("socket closed")
    assert not any(the_machine(m) for m in ("runtime output", "datetime outside", "wei2048", "websocket: x",
                                             "hccl_buffer is None"))


def test_a_message_that_names_a_setting_by_path_names_the_key_its_releases_keep():
    """verl's bucket check reads a size it derives, and its message says which setting to raise, under the name it
    had before 0.7.1 moved it under checkpoint_engine: the key of the releases that raise there. The log breaks the
    line where the source runs two sentences together, and the check, moved to another file in 0.9.1, is not called
    dropped."""
    log = ("AssertionError: Weight model.embed_tokens.weight(torch.Size([151936, 4096]), torch.float32) is too large "
           "to fit in the bucket.\nPlease increase rollout.update_weights_bucket_megabytes(2048 MB).\n")
    found = diagnose(log)
    (failure,) = found.failures
    assert failure.site.site.file == "verl/workers/rollout/vllm_rollout/bucketed_weight_transfer.py"
    key = "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes"
    # 151936 x 4096 float32 is 2374 MiB: the next power of two holds it
    assert [(c.key, c.fix) for c in found.causes] == [(key, f"{key}=4096")]
    hccl = log.split("\n")[0] + "\n"  # the same first sentence, in the checkpoint engines' files
    assert "no longer has" not in str(diagnose(hccl).failures[0].verdict.what)


def test_a_bucket_in_megabytes_holds_the_tensor_the_message_prints():
    from verl_mindspeed.doctor._values import bucket_fix, tensor_megabytes

    key = "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes"
    assert tensor_megabytes("w(torch.Size([151936, 4096]), torch.bfloat16)") == 1187.0
    assert bucket_fix(key, "w(torch.Size([151936, 4096]), torch.bfloat16) is too large") == f"{key}=2048"
    assert bucket_fix(key, "w(torch.Size([1024, 1024]), torch.float32) is too large") == f"{key}=4"
    assert bucket_fix(key, "a(torch.Size([8]), torch.float32) b(torch.Size([9]), torch.float32)") is None
    assert bucket_fix(key, "too large to fit in the bucket") is None  # no tensor printed: no size to hold
    assert bucket_fix("actor_rollout_ref.rollout.gpu_memory_utilization", "w(torch.Size([8]), torch.int8)") is None


def test_a_limit_reached_is_lifted_by_the_value_verls_config_documents_as_no_limit():
    """DAPO's cap on generation batches (verl#1108): verl's ppo_trainer.yaml documents "non-positive values mean no
    upper limit", so the line is 0; a message that prints the limit without reaching it gets no line."""
    require("verl")
    from verl_mindspeed.doctor._values import unlimited

    key = "algorithm.filter_groups.max_num_gen_batches"
    assert unlimited(key) == "0"
    assert unlimited("actor_rollout_ref.rollout.multi_turn.max_assistant_turns") == "null"
    assert unlimited("actor_rollout_ref.rollout.gpu_memory_utilization") is None
    log = "ValueError: num_gen_batches=10 >= max_num_gen_batches=10. Generated too many. Please check your data.\n"
    assert [(c.key, c.fix) for c in diagnose(log).causes] == [(key, f"{key}=0")]
    assert [c.fix for c in diagnose("ValueError: bad data shape with max_num_gen_batches=10\n").causes] == [None]
    # a limit that is too large, or a comparison of other counts, is not the limit reached
    assert [c.fix for c in diagnose("ValueError: max_num_gen_batches=10 is more than the number of batches in the "
                                    "dataset (4)\n").causes] == [None]
    for reached in ("RuntimeError: max_num_gen_batches (10) reached without a full batch",
                    "RuntimeError: Reached max_num_gen_batches=10 without a full batch"):
        assert [c.fix for c in diagnose(reached + "\n").causes] == [f"{key}=0"], reached
    assert [c.fix for c in diagnose("ValueError: num_gen_batches=3 -> max_num_gen_batches=10 mapping is "
                                    "invalid\n").causes] == [None]  # an arrow is no comparison


def test_verls_comments_say_no_limit_in_their_own_words():
    from verl_mindspeed.doctor._values import _NO_LIMIT

    said = {text: hit.group("what") if hit else None for text in (
        "non-positive values mean no upper limit", "-1 means unlimited", "Set to -1 for no limit", "0 = no limit",
        "null for no limit (default max_length // 3)", "1.0 means no limit", "0 for the limit set by vllm")
        for hit in [_NO_LIMIT.search(text)]}
    assert said == {"non-positive values mean no upper limit": "non-positive", "-1 means unlimited": "-1",
                    "Set to -1 for no limit": "-1", "0 = no limit": "0",
                    "null for no limit (default max_length // 3)": "null", "1.0 means no limit": None,
                    "0 for the limit set by vllm": None}


def test_a_dotted_name_that_is_no_verl_setting_points_at_nothing():
    """Only a path that ends one verl key is a pointer: a module path or a file name in a message is not."""
    from verl_mindspeed.doctor._said import pointed
    from verl_mindspeed.doctor._sites import Match, Site

    def site(text: str) -> Match:
        return Match(Site("verl", "verl/x.py", "f", "AssertionError", (text,), (), (), (("0.9.1", 1),)),
                     releases=("0.9.1",))

    raised = exceptions("AssertionError: x\n")[0]
    assert pointed(raised, site("see torch.cuda.memory_summary and config.json")) is None
    assert pointed(raised, site("before setting tensor.data or storing it")) is None  # "data" is a section
    megatron = Match(Site("megatron-core", "megatron/core/utils.py", "f", "AssertionError",
                          ("Please increase rollout.update_weights_bucket_megabytes",), (), (), (("0.12.1", 1),)))
    assert pointed(raised, megatron) is None  # another package's dotted words are its code
    found = pointed(raised, site("Please increase rollout.update_weights_bucket_megabytes"))
    key = "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes"
    assert [c.key for c in found.causes] == [key]


def test_a_library_the_loader_cannot_load_late_is_preloaded_with_the_path_the_message_prints(tmp_path):
    """glibc's "cannot allocate memory in static TLS block" (libgomp on aarch64 hosts): the library it names is
    loaded first with LD_PRELOAD, the environment's fault, no launch key's. The line, pasted into a shell as printed,
    keeps what LD_PRELOAD held and starts a process with that library loaded."""
    lib = next((p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6", "/lib64/libm.so.6")
                if os.path.exists(p)), None)
    if lib is None:
        pytest.skip("no libm.so.6 at a known path on this machine")
    log = ("Traceback (most recent call last):\n  File \"/x/transformers/utils/import_utils.py\", line 1, in _get\n"
           f"ImportError: {lib}: cannot allocate memory in static TLS block\n")
    found = diagnose(log)
    assert found.failures[0].verdict.kind == "env"
    (cause,) = found.causes
    assert (cause.key, cause.fix) == ("LD_PRELOAD", f"export LD_PRELOAD={lib}${{LD_PRELOAD:+:$LD_PRELOAD}}")
    maps = "grep -c libm /proc/self/maps"  # grep links no libm of its own: mapped only when preloaded
    assert subprocess.run(["bash", "-c", maps], capture_output=True, text=True).stdout.strip() == "0"
    shell = f'export LD_PRELOAD=/kept.so\n{cause.fix}\necho "$LD_PRELOAD"; {maps}'
    held, mapped = subprocess.run(["bash", "-c", shell], capture_output=True, text=True).stdout.split()
    assert held == f"{lib}:/kept.so" and int(mapped) > 0
    unset = subprocess.run(["bash", "-c", f'set -u; unset LD_PRELOAD; {cause.fix}; echo "$LD_PRELOAD"'],
                           capture_output=True, text=True)  # a launch script under set -u, nothing preloaded yet
    assert (unset.returncode, unset.stdout.strip()) == (0, lib)
    assert not diagnose(log.replace("static TLS block", "the heap")).causes  # another failure: no LD_PRELOAD


@pytest.mark.parametrize("path, line", [
    ("/home/u/envs/rl(py310)/lib/libgomp.so.1", "export LD_PRELOAD='/home/u/envs/rl(py310)/lib/libgomp.so.1'"),
    ("libgomp.so.1", "export LD_PRELOAD=libgomp.so.1"),
    ("./vendor/libgomp.so.1", None),  # relative to the raising worker's directory, not the launch's
    ("/opt/my libs/libgomp.so.1", None)])  # a space: where the path starts is not known
def test_the_preloaded_library_is_the_whole_path_quoted_for_the_shell(path, line):
    (cause,) = diagnose(f"OSError: {path}: cannot allocate memory in static TLS block\n").causes
    assert cause.key == "LD_PRELOAD"
    assert cause.fix == (line + "${LD_PRELOAD:+:$LD_PRELOAD}" if line else None)
    if line:  # the shell reads the path back whole, '(' and all
        out = subprocess.run(["bash", "-c", f'unset LD_PRELOAD; {cause.fix}; echo "$LD_PRELOAD"'],
                             capture_output=True, text=True)
        assert out.stdout.strip() == path


@pytest.mark.parametrize("line, kind", [
    ("**TypeError: get_cpu_offload_context() takes from 0 to 4 positional arguments but 5 were given**",
     "TypeError"),
    ('"KeyError: decoder.layers.0.self_attention.q_layernorm.weight"', "KeyError"),
    ("`ValueError: bad value`", "ValueError")])
def test_an_exception_line_set_in_bold_or_in_quotes_is_read(line, kind):
    log = f"Traceback (most recent call last):\n  File \"/x/y.py\", line 3, in f\n{line}\n"
    (root,) = roots(exceptions("".join(f"[rank1]: {x}" for x in log.splitlines(True))))  # torchrun's prefix too
    assert root.type == kind and root.frames and not root.message.endswith(("*", '"', "`"))
    assert not exceptions('"a quoted sentence, not an exception"\n**bold words**\n')


@pytest.mark.parametrize("text, kind, verdict", [
    ("cannot import name 'AutoModelForVision2Seq' from 'transformers'", "ImportError", "version-skew"),
    ("No module named 'megatron.core.extensions'", "ModuleNotFoundError", "version-skew"),
    ("unexpected keyword argument 'mtp_kwargs'", "TypeError", "version-skew"),
    ("unsupported operand type(s) for %: 'int' and 'NoneType'", "TypeError", "unknown"),
    ("an illegal memory access was encountered", "Error", "unknown"),
    ("ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'", "Error", "unknown")])
def test_pythons_own_message_quoted_without_its_type_is_given_it(text, kind, verdict):
    """A thread that quotes Python's message alone: the type that message always has, so a package mismatch is one
    (no key blamed); a device's or a compiler's fatal line is a failure not placed (exit 1), never an unusable log."""
    found = diagnose(text + "\n")
    (failure,) = found.failures
    assert (failure.raised.type, failure.verdict.kind, found.causes) == (kind, verdict, [])
    assert found.exit_code == (0 if verdict == "version-skew" else 1)


def test_a_runtime_variable_the_message_calls_too_small_is_set_to_the_size_it_states_is_needed():
    """CANN's MoE dispatch on Ascend: "HCCL_BUFFSIZE is too SMALL ... NEEDED_HCCL_BUFFSIZE(...) = 609MB,
    HCCL_BUFFSIZE=200MB" is the environment's, with the needed size in the unit the variable is read in. Without
    the needed size, the variable is named with no line."""
    log = ("RuntimeError: npu_moe_distribute_dispatch_v2: NPU function error: call aclnnMoeDistributeDispatchV3 failed,"
           " error code is 561002\n"
           "EZ9999[PID: 1] (EZ9999):  HCCL_BUFFSIZE is too SMALL, maxBs = 512, h = 2048, NEEDED_HCCL_BUFFSIZE(((maxBs *"
           " tokenNeedSizeDispatch) + (maxBs * k)) * 2) = 609MB, HCCL_BUFFSIZE=200MB.[FUNC:Tiling]\n")
    found = diagnose(log)
    assert found.failures[0].verdict.kind == "env"
    assert [(c.key, c.fix) for c in found.causes] == [("HCCL_BUFFSIZE", "export HCCL_BUFFSIZE=609")]
    unstated = log.replace(" = 609MB, HCCL_BUFFSIZE=200MB", "")
    assert [(c.key, c.fix) for c in diagnose(unstated).causes] == [("HCCL_BUFFSIZE", None)]
    other_units = log.replace("= 609MB", "= 609KB")  # the needed size in another unit than the variable's
    assert [c.fix for c in diagnose(other_units).causes] == [None]


@pytest.mark.parametrize("log", [
    "(TaskRunner pid=11) fatal: not a git repository (or any of the parent directories): .git\nstep 1\n",
    "No module named 'megatron.training' (WARNING: optional; continuing with megatron.core)\nstep 1/100 loss=0.5\n",
    "**KeyboardInterrupt**\nI stopped the run by hand; config was ppo_micro_batch_size_per_gpu=4\n",
    "a non-fatal: retrying the download\n"])
def test_lines_that_only_look_like_failures_are_no_failure(log):
    """git's own "fatal:" on a run's start, Python's message inside a warning, a bold word that is a type with no
    message: nothing the run failed of, so nothing placed and no key blamed."""
    found = diagnose(log)
    assert (found.exit_code, found.causes) == (2, [])


def test_a_product_printed_twice_is_one_and_a_per_node_count_is_no_world_size():
    megatron = "actor_rollout_ref.actor.megatron."
    twice = ("ValueError: world size 16: EP(8)*ETP(1) = 8 per group, but TP(2)*PP(4)*CP(4) = 32 does not divide it "
             "(TP(2)*PP(4)*CP(4) = 32)\n")
    assert {c.key.removeprefix(megatron): c.fix.rsplit("=", 1)[-1] for c in diagnose(twice).causes} == {
        "tensor_model_parallel_size": "1", "pipeline_model_parallel_size": "2", "context_parallel_size": "2"}
    forms = "ValueError: requested 128 GPUs: ETP * EP * PP (1 * 64 * 4 = 256); ETP(1)*EP(64)*PP(4) = 256\n"
    assert [c.fix.rsplit(".", 1)[-1] for c in diagnose(forms).causes] == [
        "expert_model_parallel_size=32", "pipeline_model_parallel_size=2"]
    per_node = "ValueError: 8 GPUs per node: TP(2)*PP(4)*CP(4) = 32 does not divide the world size\n"
    assert not any(c.fix for c in diagnose(per_node).causes)  # 8 is a node's, not the world's
    both = "ValueError: using 8 GPUs per node, 16 GPUs in total: world size must be divisible by TP * PP (4 * 8 = 32)\n"
    assert [c.fix.rsplit(".", 1)[-1] for c in diagnose(both).causes] == [  # 16 in all: TP 2 or PP 4 fit it
        "tensor_model_parallel_size=2", "pipeline_model_parallel_size=4"]


@pytest.mark.parametrize("message, switch", [
    ("--use-torch-fsdp2 is not supported with pipeline parallelism", None),
    ("`async_tensor_model_parallel_allreduce` and `sequence_parallel` cannot be enabled at the same time.",
     "async_tensor_model_parallel_allreduce")])
def test_an_unprinted_condition_never_moves_the_layout_blind(message, switch):
    """A size or sequence parallelism the message does not print is named with no line: the check may sit under a
    feature's switch the index does not hold, and turning sequence parallelism off under MoE with TP meets
    megatron-core's next check. A feature's own switch keeps its line."""
    kind = "RuntimeError" if switch else "AssertionError"
    causes = {c.key.rsplit(".", 1)[-1]: c.fix for c in diagnose(f"{kind}: {message}\n").causes}
    layout = {"pipeline_model_parallel_size", "sequence_parallel"} & set(causes)
    assert layout and all(causes[leaf] is None for leaf in layout)
    assert (switch is None) or causes[switch].endswith(f"{switch}=False")


def test_a_division_by_a_setting_that_is_zero_names_that_setting_in_the_frames_section(tmp_path):
    """Python's own traceback of verl's critic check with a micro batch size of 0 (one verl derived by dividing by
    the devices): the code line divides by the critic's field, so ``critic.ppo_micro_batch_size`` is named, with no
    line (the positive value the run wants is not in the log). A division by a model fact names nothing."""
    critic = tmp_path / "verl" / "workers" / "critic" / "dp_critic.py"
    critic.parent.mkdir(parents=True)
    critic.write_text("from types import SimpleNamespace\n\n\nclass DataParallelPPOCritic:\n"
                      "    def __init__(self, config):\n        self.config = config\n"
                      "        assert self.config.ppo_mini_batch_size % self.config.ppo_micro_batch_size == 0\n\n\n"
                      "DataParallelPPOCritic(SimpleNamespace(ppo_mini_batch_size=8, ppo_micro_batch_size=0))\n")
    run = subprocess.run([sys.executable, str(critic)], capture_output=True, text=True)
    assert "ZeroDivisionError" in run.stderr
    found = diagnose(run.stderr)
    assert [(c.key, c.fix) for c in found.causes] == [("critic.ppo_micro_batch_size", None)]
    heads = run.stderr.replace("self.config.ppo_micro_batch_size ==", "self.config.num_attention_heads ==")
    assert not diagnose(heads).causes


@pytest.mark.parametrize("path, code, key", [
    ("/x/verl/workers/actor/dp_actor.py", "n = a // self.critic_config.ppo_micro_batch_size",
     "critic.ppo_micro_batch_size"),  # the config's own name says the section
    ("/x/verl/trainer/ppo/ray_trainer.py", "foo(1, self.total // self.config.trainer.save_freq)", "trainer.save_freq"),
    ("/x/verl/trainer/ppo/ray_trainer.py", "self.n //= self.config.trainer.save_freq", "trainer.save_freq"),
    ("/x/megatron/training/arguments.py", "assert args.global_batch_size % args.micro_batch_size == 0", None),
    ("/home/u/my_reward.py", "return correct / self.max_length", None),  # the user's code: no verl config
    ("/x/verl/workers/engine_factory.py", "n = a // self.config.ppo_micro_batch_size_per_gpu", None),  # "factory"
    ("/x/verl/workers/actor_critic_utils.py", "n = a // self.config.ppo_micro_batch_size", None),  # two sections
    ("/x/verl/workers/actor/dp_actor.py",
     "assert a % cfg.ppo_micro_batch_size == 0 and b % cfg.ppo_micro_batch_size_per_gpu == 0", None),  # which one?
    ("/x/verl/trainer/ppo/ray_trainer.py", 'log("step %d" % self.config.trainer.save_freq)', None)])  # formatting
def test_a_division_by_zero_names_a_verl_config_field_only_where_the_line_and_the_frame_say_which(path, code, key):
    log = (f'Traceback (most recent call last):\n  File "{path}", line 5, in f\n    {code}\n'
           "ZeroDivisionError: integer division or modulo by zero\n")
    assert [c.key for c in diagnose(log).causes] == ([key] if key else [])


@pytest.mark.parametrize("line, fix", [
    ("HCCL_BUFFSIZE is too small; export HCCL_BUFFSIZE=1024", "export HCCL_BUFFSIZE=1024"),  # its own advice
    ("HCCL_BUFFSIZE is too SMALL, NEEDED_HCCL_BUFFSIZE(x) = 608.5MB, HCCL_BUFFSIZE=200.0MB",
     "export HCCL_BUFFSIZE=609"),
    ("HCCL_BUFFSIZE is too SMALL, NEEDED_HCCL_BUFFSIZE(x) = 2GB, HCCL_BUFFSIZE=200MB", "export HCCL_BUFFSIZE=2048"),
    ("HCCL_BUFFSIZE is too SMALL, NEEDED_HCCL_BUFFSIZE(x) = 2GB, HCCL_BUFFSIZE=1GB", None),  # the variable's unit?
    ("HCCL_DEBUG is too low; HCCL_BUFFSIZE is too small, NEEDED_HCCL_BUFFSIZE(x) = 609MB, HCCL_BUFFSIZE=200MB",
     "export HCCL_BUFFSIZE=609")])
def test_a_runtime_variable_gets_the_needed_size_in_megabytes_rounded_up_or_its_messages_own_line(line, fix):
    assert [(c.key, c.fix) for c in diagnose(f"RuntimeError: dispatch failed\n{line}\n").causes] == [
        ("HCCL_BUFFSIZE", fix)]


@pytest.mark.parametrize("message", ["MAX_TOKENS is too small for this prompt", "BLOCK_SIZE is too large for this GPU"])
def test_an_upper_case_name_too_small_is_no_environment_variable_unless_a_runtimes(message):
    assert all(not c.key.isupper() for c in diagnose(f"ValueError: {message}\n").causes)


def test_another_packages_config_error_is_not_read_as_this_projects():
    """Only this project's ConfigError (its "N MindSpeed configuration errors:" lines) names keys: a ConfigError of
    another package's names no key from its message's first words."""
    other = ('Traceback (most recent call last):\n  File "/x/mmengine/config.py", line 3, in f\n'
             "ConfigError: bad value: 3\n")
    assert not diagnose(other).causes
    ours = ("verl_mindspeed.errors.ConfigError: 1 MindSpeed configuration error:\n"
            "  - actor_rollout_ref.actor.megatron.tensor_model_parallel_size: must divide 8\n")
    assert [c.key for c in diagnose(ours).causes] == ["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"]


def test_pythons_has_no_attribute_is_a_package_mismatch_never_another_modules_raise_site():
    """verl's NPU patches log "Failed to apply NPU patches: module '...' has no attribute '...'" (verl#5788) with no
    exception line: Python's message is read from it. A module's ``__getattr__`` in Megatron-Bridge prints the same
    words for its own module only: a message naming another module is not that raise, and no site is claimed."""
    line = ("Failed to apply NPU patches: module 'transformers.models.qwen2_5_vl.modeling_qwen2_5_vl' has no attribute "
            "'Qwen2RMSNorm'")
    found = diagnose(line + "\n")
    (failure,) = found.failures
    assert failure.raised.type == "AttributeError" and failure.site is None
    assert failure.verdict.kind == "version-skew" and not found.causes and found.exit_code == 0
    own = diagnose("AttributeError: module 'megatron.bridge.models.megatron_mimo' has no attribute 'Foo'\n")
    assert own.failures[0].site.site.file == "megatron/bridge/models/megatron_mimo/__init__.py"


@pytest.mark.parametrize("line, file", [
    ("AttributeError: HuggingFaceTokenizer has no attribute 'eod', 'eod_id', 'eos', or 'eos_id'",
     "abstract_tokenizer"),
    ("AttributeError: HybridModelConfig has no attribute 'foo'", "models/hybrid.py"),
])
def test_sites_in_their_own_words_about_a_missing_attribute_still_match_by_message(line, file):
    """Only sites whose fixed words are Python's own are held to naming their module: these keep their site."""
    site = diagnose(line + "\n").failures[0].site
    assert site is not None and file in site.site.file, site

