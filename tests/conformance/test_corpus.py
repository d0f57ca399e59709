"""The corpus of real launch lines (``VERL_MINDSPEED_CORPUS``, or ``corpus/real-scripts`` beside the upstream
folder): valid configurations written by others, so ``check`` must accept each without errors, also with the
real model each one trains. Moved here from tests/core and tests/model so that only this layer reads outside
the repository."""

from __future__ import annotations

import json

import pytest
import sources

from conftest import unavailable

CORPUS_MODELS = {
    "run_dapo_moonlight-16b_megatron_npu.args": "Moonlight-16B-A3B-Instruct",
    "run_gspo_qwen3_30b_megatron_npu.args": "Qwen3-30B-A3B",
    "run_qwen3_06b_grpo_mindspeed.args": "Qwen3-0.6B",
    "run_qwen3_0_6b_megatron_vllm_ascend.args": "Qwen3-0.6B",
    "run_qwen3_30b_a3b_megatron.args": "Qwen3-30B-A3B",
}


@pytest.fixture(scope="module")
def corpus():
    folder = sources.corpus_dir()
    if folder is None or not folder.is_dir():
        unavailable("no corpus of launch lines: set VERL_MINDSPEED_CORPUS (or VERL_MINDSPEED_UPSTREAM beside it)")
    try:
        import verl  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        unavailable(f"verl is not importable: {exc!r}")
    return folder


def test_corpus_present(corpus):
    assert len(list(corpus.glob("*.args"))) >= 5


@pytest.mark.parametrize("name", sorted(CORPUS_MODELS))
def test_real_launch_lines_pass(corpus, capsys, name):
    from verl_mindspeed.cli import main
    from verl_mindspeed.launch import read_args_file

    code = main(["check", "--json", *read_args_file(str(corpus / name))])
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == [] and code == 0 and data["ok"] is True
    actor = data["mindspeed_receives"]["builds"][-1]
    assert actor["role"] == "actor" and actor["repatch"]["use_flash_attn"] is True  # verl 0.9.1's own default


@pytest.mark.parametrize("name", sorted(CORPUS_MODELS))
def test_real_launch_lines_have_no_model_errors(corpus, name):
    from verl_mindspeed.launch import evaluate, read_args_file

    model = sources.ROOT / "tests" / "fixtures" / "models" / CORPUS_MODELS[name]
    resolution = evaluate(read_args_file(str(corpus / name)), model_config=str(model))
    assert [i.line() for i in resolution.errors] == []
