"""The doctor on failures only the message places: the rollout engine's refusals (a prompt longer than its model
length, a rollout verl has no class for), Ray's view of the NPUs on Ascend, and what verl's FAQ answers with a
setting (Ray's raylet; triton's build, the environment's on a Megatron launch). Each line is pasted into a launch and
``check`` judges it: verl 0.9.1 accepts every key it proposes."""

from __future__ import annotations

import shlex

import pytest

from verl_mindspeed.doctor import diagnose
from verl_mindspeed.launch import evaluate

R = "actor_rollout_ref.rollout"
NEUTRAL = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo",
           "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1", f"{R}.log_prob_micro_batch_size_per_gpu=1",
           "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1", f"{R}.name=vllm"]
WORKER = "\x1b[36m(WorkerDict pid=3001, ip=10.0.0.1)\x1b[0m "


def _log(line: str) -> str:
    return (f"{WORKER}Traceback (most recent call last):\n"
            f'{WORKER}  File "/usr/lib/python3.10/site-packages/vllm/engine/llm_engine.py", line 2049, in _validate\n'
            f"{WORKER}    raise ValueError(\n{WORKER}{line}\n")


def _causes(found) -> dict[str, str | None]:
    (failure,) = found.failures
    return {c.key: c.fix for c in failure.verdict.causes}


def _accepted(lines) -> None:
    """Pasted after a launch verl 0.9.1 runs, ``check`` has no error: no key it refuses, no value it rejects."""
    argv = [*NEUTRAL, *(word for line in lines for word in shlex.split(line))]
    errors = evaluate(argv).errors
    assert not errors, [(i.key, str(i.message)) for i in errors]


@pytest.mark.parametrize("message", [
    "ValueError: Prompt length of 4178 is longer than the maximum model length of 4096.",
    "ValueError: The decoder prompt (length 4178) is longer than the maximum model length of 4096. Make sure that",
    "ValueError: The input (4178 tokens) is longer than the model's context length (4096 tokens).",
])
def test_a_prompt_longer_than_the_engines_model_length_filters_prompts_or_raises_the_length(message):
    alone = _causes(diagnose(_log(message)))
    assert alone == {"data.filter_overlong_prompts": "data.filter_overlong_prompts=True", f"{R}.max_model_len": None}
    _accepted(["data.filter_overlong_prompts=True"])
    # with the launch, the model length that holds this prompt and the launch's response; a filter already on stays
    launch = [*NEUTRAL, "data.max_response_length=3072", "data.filter_overlong_prompts=True"]
    given = _causes(diagnose(_log(message), launch))
    assert given == {f"{R}.max_model_len": f"{R}.max_model_len={4178 + 3072}"}
    _accepted(given.values())


@pytest.mark.parametrize("message, expected", [
    ("Rollout hf with mode sync not found", {f"{R}.name": f"{R}.name=vllm", f"{R}.mode": f"{R}.mode=async"}),
    ("Rollout vllm with mode sync not found", {f"{R}.mode": f"{R}.mode=async"}),
    ("Rollout naive with mode async not found", {f"{R}.name": f"{R}.name=vllm"}),
])
def test_a_rollout_verls_registry_lacks_gets_the_name_or_mode_it_holds(message, expected):
    log = ('Traceback (most recent call last):\n  File "/verl/verl/workers/rollout/base.py", line 106, in '
           f'get_rollout_class\n    assert (rollout_name, mode) in _ROLLOUT_REGISTRY\nAssertionError: {message}\n')
    assert _causes(diagnose(log)) == expected
    _accepted(expected.values())


def test_a_rollout_some_release_registers_is_not_blamed_on_its_name_or_mode():
    """trtllm in async mode is registered from verl 0.7.1: on 0.6.1 the release, not the launch, lacks it."""
    log = "AssertionError: Rollout trtllm with mode async not found\n"
    assert not {f"{R}.name", f"{R}.mode"} & set(_causes(diagnose(log)))


@pytest.mark.parametrize("message", [
    "AssertionError: Expects tensor to be on the compute device npu:15, was on npu:0",
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, npu:0 and npu:3!",
])
def test_a_tensor_on_npu0_beside_the_workers_own_npu_is_rays_view_of_the_devices(message):
    found = diagnose(f"{WORKER}{message}\n")
    assert _causes(found) == {"RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES":
                              "unset RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"}
    assert found.failures[0].verdict.kind == "env" and found.exit_code == 0


@pytest.mark.parametrize("message", [
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:3!",
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, npu:1 and npu:2!",
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, npu:0 and cpu!",
])
def test_other_device_mismatches_do_not_blame_rays_variable(message):
    assert "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES" not in _causes(diagnose(f"{message}\n"))


def test_no_npu_visible_names_the_visible_devices_and_lists_the_launchs_cards():
    log = "RuntimeError: torch_npu detected, but NPU device is not available or visible\n"
    assert _causes(diagnose(log)) == {"ASCEND_RT_VISIBLE_DEVICES": None}
    given = _causes(diagnose(log, [*NEUTRAL, "trainer.n_gpus_per_node=4"]))
    assert given == {"ASCEND_RT_VISIBLE_DEVICES": "export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3"}


@pytest.mark.parametrize("verl_version, key", [(None, "ray_kwargs.ray_init.num_cpus"),
                                                ("0.9.1", "ray_kwargs.ray_init.num_cpus"),
                                                ("0.5.0", "ray_init.num_cpus")])
def test_rays_raylet_refusing_workers_names_the_cpus_verl_gives_ray_in_that_release(verl_version, key):
    """verl's FAQ: Slurm's core limits keep workers from the raylet; ray_init.num_cpus (under ray_kwargs from 0.6)
    is the setting. No line: the number is the node's."""
    log = "(raylet) [2025-01-01 00:00:00,000 E 1 1] Unable to register worker with raylet. No such file or directory\n"
    found = diagnose(log, verl_version=verl_version) if verl_version else diagnose(log)
    assert _causes(found) == {key: None}


TRITON = "/opt/conda/lib/python3.10/site-packages/triton"


def _cut_at_subprocess(frames: list[tuple[str, int, str]]) -> str:
    body = "".join(f'  File "{path}", line {line}, in {fn}\n    x = f()\n' for path, line, fn in frames)
    return ("Traceback (most recent call last):\n" + body +
            '  File "/opt/conda/lib/python3.10/subprocess.py", line 369, in check_call\n'
            "    raise CalledProcessError(retcode, cmd)\n[...]\n")


def test_triton_failing_to_build_a_kernel_is_the_environments_not_a_launch_key():
    """The log ends at subprocess's raise; the frames above it (kept now for a cut raise) are triton's build. verl's
    FAQ turns use_torch_compile off, a key only its FSDP engines read: verl's Megatron engine compiles the entropy
    whatever it says, so no key is named on a launch of this project's."""
    log = _cut_at_subprocess([("/verl/verl/utils/megatron/tensor_parallel.py", 112, "forward"),
                              (f"{TRITON}/backends/nvidia/driver.py", 57, "compile_module_from_src"),
                              (f"{TRITON}/runtime/build.py", 48, "_build")])
    found = diagnose(log)
    (failure,) = found.failures
    assert failure.verdict.kind == "env" and not found.causes and found.exit_code == 0
    assert "triton" in str(failure.verdict.what)


def test_another_subprocess_failing_is_not_put_on_triton():
    log = _cut_at_subprocess([("/verl/examples/data_preprocess/gsm8k.py", 40, "main")])
    assert "triton" not in str(diagnose(log).failures[0].verdict.what)


@pytest.mark.parametrize("log", [
    "ValueError: Prompt length of " + "9" * 5000 + " is longer than the maximum model length of 4096.\n",
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, npu:0 and npu:"
    + "9" * 5000 + "!\n",
])
def test_numbers_past_what_int_reads_do_not_crash_the_doctor(log):
    assert diagnose(log).exit_code in (0, 1)


@pytest.mark.parametrize("count", ["-1", "0", "10000000"])
def test_no_npu_visible_lists_no_cards_for_a_count_no_node_has(count):
    log = "RuntimeError: torch_npu detected, but NPU device is not available or visible\n"
    assert _causes(diagnose(log, [*NEUTRAL, f"trainer.n_gpus_per_node={count}"])) == {"ASCEND_RT_VISIBLE_DEVICES": None}


def test_a_filter_the_launch_already_turns_on_in_another_spelling_is_not_proposed_again():
    message = "ValueError: Prompt length of 4178 is longer than the maximum model length of 4096."
    launch = [*NEUTRAL, "data.filter_overlong_prompts=1"]
    assert set(_causes(diagnose(_log(message), launch))) == {f"{R}.max_model_len"}


_MLA = ("[rank0]: RuntimeError: EZ9999: Inner Error!\n[rank0]: EZ9999: [PID: 62938] 2025-05-27-06:52:12.455.807 "
        "numHeads / numKvHeads = {n}, MLA only support {{32, 64, 128}}.[FUNC:CheckMlaAttrs]"
        "[FILE:incre_flash_attention_tiling_check.cc][LINE:1218]\n")


@pytest.mark.parametrize("n, launch, expected", [
    (8, [f"{R}.tensor_model_parallel_size=16", "trainer.nnodes=2"], {f"{R}.tensor_model_parallel_size": "4"}),
    (256, [f"{R}.tensor_model_parallel_size=1"], {f"{R}.tensor_model_parallel_size": "2"}),  # more heads: split more
    (8, [], {f"{R}.enforce_eager": "True"}),  # verl's default TP 2: 16 heads, no size gives 32 per rank
    (8, [f"{R}.tensor_model_parallel_size={'9' * 40}"], {f"{R}.tensor_model_parallel_size": None}),
    (0, [f"{R}.tensor_model_parallel_size=4"], {f"{R}.tensor_model_parallel_size": None}),
    (24, [f"{R}.tensor_model_parallel_size=4"], {f"{R}.tensor_model_parallel_size": None}),  # TP 3: not of 8 cards
    (8, [f"{R}.tensor_model_parallel_size=2.0"], {f"{R}.tensor_model_parallel_size": None}),  # unread: no guess
    (8, [f"{R}.tensor_model_parallel_size=${{actor_rollout_ref.actor.megatron.tensor_model_parallel_size}}"],
     {f"{R}.tensor_model_parallel_size": None}),
])
def test_vllm_ascends_mla_heads_per_rank_sets_the_rollouts_tensor_parallel_size(n, launch, expected):
    """vllm-ascend's FAQ: DeepSeek-V3 (128 heads) at rollout TP 16 leaves 8 per rank, and its MLA kernel in graph mode
    takes 32, 64 or 128: TP 4 does. The message alone names the size, without a line (the launch's size is not
    known); each line is pasted into a launch and check accepts it."""
    assert _causes(diagnose(_MLA.format(n=n))) == {f"{R}.tensor_model_parallel_size": None}
    given = _causes(diagnose(_MLA.format(n=n), [*NEUTRAL, *launch]))
    assert {k: v and v.partition("=")[2] for k, v in given.items()} == expected
    _accepted([line for line in given.values() if line])


@pytest.mark.parametrize("log", [
    "OSError: You are trying to access a gated repo.\nMake sure to have access to it at <URL>",
    f"{WORKER}huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url "
    "https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json.",
])
def test_a_gated_model_names_the_token_and_no_launch_key(log):
    found = diagnose(log)
    assert found.exit_code == 0
    assert _causes(found) == {"HF_TOKEN": None}
    assert found.failures[0].verdict.kind == "env"


def test_vllm_ascends_allocator_missing_from_the_asserts_code_line_alone():
    """vllm-ascend#556 posts only the assert's code line: read as its AssertionError, the build's variable named."""
    found = diagnose('[rank12]:     assert camem_available, "camem allocator is not available"\n')
    assert found.exit_code == 0
    assert _causes(found) == {"COMPILE_CUSTOM_KERNELS": None}
    assert diagnose("assert x > 0\n").exit_code == 2  # an assert with no message of its own is no failure read


@pytest.mark.parametrize("given, size", [(None, 16), ("8", 16)])
def test_vllms_cpu_swap_space_exhausted_raises_the_swap_space(given, size):
    key = f"{R}.engine_kwargs.vllm.swap_space"
    log = ("RuntimeError: Aborted due to the lack of CPU swap space. Please increase the swap space to avoid this "
           "error.")
    argv = NEUTRAL + ([f"{key}={given}"] if given else [])
    found = diagnose(log, argv, verl_version="0.5.0")
    assert _causes(found) == {key: f"{key}={size}"}


def test_the_swap_space_of_an_unknown_release_is_given_under_both_of_its_names():
    """Neither a launch nor a release: the key verl 0.4 and 0.5 read, and the one before (verl#960's own)."""
    found = diagnose("RuntimeError: Aborted due to the lack of CPU swap space. Please increase the swap space.")
    assert list(_causes(found)) == [f"{R}.engine_kwargs.vllm.swap_space", f"{R}.engine_kwargs.swap_space"]


def test_an_npu_opened_past_the_ones_the_process_sees_is_rays_narrowing():
    """vllm-ascend#167: each Ray worker sees its own NPU only, and the code opens NPU 1 by its rank."""
    line = ("(RayWorkerWrapper pid=118835) ERROR 02-26 09:45:37 worker_base.py:572]         The argument is invalid."
            "Reason: Set visible device failed, invalid device=1, input visible devices:1")
    assert _causes(diagnose(line + "\n")) == {
        "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES": "export RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1"}
    inside = line.replace("invalid device=1, input visible devices:1", "invalid device=1, input visible devices:0,1")
    assert "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES" not in _causes(diagnose(inside + "\n"))


def test_a_loggers_info_line_that_mentions_a_variable_is_no_cause():
    """vllm-ascend#540: vLLM's plugin loader logs "set environment variable VLLM_PLUGINS to control which plugins to
    load" under the failure; read as advice it gave ``export VLLM_PLUGINS=control``."""
    log = "\n".join(["RuntimeError: Failed to infer device type",
                     "INFO 04-16 13:55:44 __init__.py:36] set environment variable VLLM_PLUGINS to control which "
                     "plugins to load."])
    assert all(c.key != "VLLM_PLUGINS" for f in diagnose(log).failures for c in f.verdict.causes)
    advice = "RuntimeError: the buffer is too small: set environment variable HCCL_BUFFSIZE to 400 and retry"
    assert _causes(diagnose(advice)) == {"HCCL_BUFFSIZE": "export HCCL_BUFFSIZE=400"}
