"""Oracle: parameter counts per rank against real megatron-core 0.12.1 GPTModels built on CPU.

TP = PP = 1 models are built in this process (a world-1 gloo group) and
compared exactly. Sharded layouts are checked two ways: from the TP = 1 model
using the partition attributes megatron itself puts on each weight
(``tensor_model_parallel``), and by really building TP = 2 / EP = 2 models in
two gloo processes. The MLA fixture (Moonlight) is also built at full size on the
meta device, its megatron config mapped straight from its ``config.json``.
"""

from __future__ import annotations

import json
import os
import socket

import pytest

from helpers import FIXTURES, require
from verl_mindspeed.model import (
    Layout,
    ModelSpec,
    load_model_spec,
    stage_layer_counts,
    stage_parameters,
    total_parameters,
)

DENSE_QWEN2 = ModelSpec(
    architecture="Qwen2ForCausalLM", family="dense", num_layers=3, hidden_size=64, ffn_hidden_size=96,
    num_attention_heads=8, num_query_groups=2, head_dim=16, vocab_size=256, qkv_bias=True,
)
DENSE_QWEN3_TIED = ModelSpec(
    architecture="Qwen3ForCausalLM", family="dense", num_layers=4, hidden_size=64, ffn_hidden_size=128,
    num_attention_heads=4, num_query_groups=2, head_dim=32, vocab_size=128, tied_embeddings=True, qk_layernorm=True,
)
MOE_QWEN3 = ModelSpec(
    architecture="Qwen3MoeForCausalLM", family="moe", num_layers=4, hidden_size=64, ffn_hidden_size=96,
    num_attention_heads=4, num_query_groups=2, head_dim=16, vocab_size=128, qk_layernorm=True,
    num_experts=8, moe_router_topk=2, moe_ffn_hidden_size=32, first_k_dense_replace=1,
    shared_expert_intermediate_size=48,
)
MLA_DEEPSEEK = ModelSpec(
    architecture="DeepseekV3ForCausalLM", family="mla_moe", num_layers=3, hidden_size=64, ffn_hidden_size=96,
    num_attention_heads=4, num_query_groups=4, head_dim=16, vocab_size=128, num_experts=4, moe_router_topk=2,
    moe_ffn_hidden_size=32, shared_expert_intermediate_size=32, first_k_dense_replace=1,
    q_lora_rank=32, kv_lora_rank=24, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
)
MLA_MOONLIGHT = ModelSpec(**{**MLA_DEEPSEEK.__dict__, "q_lora_rank": None})
SPECS = {"qwen2-dense": DENSE_QWEN2, "qwen3-tied": DENSE_QWEN3_TIED, "qwen3-moe": MOE_QWEN3,
         "deepseek-mla": MLA_DEEPSEEK, "moonlight-mla": MLA_MOONLIGHT}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _NoParamCoreAttention:
    def __new__(cls, *args, **kwargs):
        import torch

        return torch.nn.Identity()


def build_gpt(spec: ModelSpec):
    """A megatron-core GPTModel (local spec, no Transformer Engine) for ``spec``, on CPU."""
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_decoder_block_spec
    from megatron.core.transformer import TransformerConfig
    from megatron.core.transformer.transformer_config import MLATransformerConfig

    kw = dict(
        num_layers=spec.num_layers, hidden_size=spec.hidden_size, ffn_hidden_size=spec.ffn_hidden_size,
        num_attention_heads=spec.num_attention_heads, num_query_groups=spec.num_query_groups,
        kv_channels=spec.head_dim, normalization="RMSNorm", gated_linear_unit=True, add_bias_linear=False,
        add_qkv_bias=spec.qkv_bias, qk_layernorm=spec.qk_layernorm or spec.is_mla, use_cpu_initialization=True,
    )
    from megatron.core import parallel_state as ps

    kw["tensor_model_parallel_size"] = ps.get_tensor_model_parallel_world_size()
    kw["expert_model_parallel_size"] = ps.get_expert_model_parallel_world_size()
    kw["expert_tensor_parallel_size"] = ps.get_expert_tensor_parallel_world_size()
    if spec.is_moe:
        kw.update(num_moe_experts=spec.num_experts, moe_router_topk=spec.moe_router_topk,
                  moe_ffn_hidden_size=spec.moe_ffn_hidden_size,
                  moe_shared_expert_intermediate_size=spec.shared_expert_intermediate_size,
                  moe_layer_freq=[int(spec.is_moe_layer(i)) for i in range(spec.num_layers)])
    if spec.is_mla:
        config = MLATransformerConfig(multi_latent_attention=True, q_lora_rank=spec.q_lora_rank,
                                      kv_lora_rank=spec.kv_lora_rank, qk_head_dim=spec.qk_nope_head_dim,
                                      qk_pos_emb_head_dim=spec.qk_rope_head_dim, v_head_dim=spec.v_head_dim,
                                      rotary_base=10000, rope_type="rope", **kw)
    else:
        config = TransformerConfig(**kw)
    block = get_gpt_decoder_block_spec(config, use_transformer_engine=False)
    import torch

    if spec.is_mla:
        # megatron-core 0.12.1's local MLA spec passes k_channels to DotProductAttention, which does
        # not take it; core attention holds no parameters, so a parameter-free stand-in counts the same.
        for layer in block.layer_specs:
            layer.submodules.self_attention.submodules.core_attention = _NoParamCoreAttention

    # megatron-core 0.12.1's MLA builds its rotary table with torch.cuda.current_device()
    # whatever use_cpu_initialization says; on a CPU-only torch point it at the CPU.
    saved, torch.cuda.current_device = torch.cuda.current_device, lambda: "cpu"
    try:
        return GPTModel(config=config, transformer_layer_spec=block, vocab_size=spec.vocab_size,
                        max_sequence_length=64, position_embedding_type="rope",
                        share_embeddings_and_output_weights=spec.tied_embeddings)
    finally:
        torch.cuda.current_device = saved


@pytest.fixture(scope="module")
def world_one():
    torch = require("torch")
    require("megatron.core")
    from megatron.core import parallel_state as ps

    if not torch.distributed.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = str(_free_port())
        torch.distributed.init_process_group("gloo", rank=0, world_size=1)
    ps.initialize_model_parallel(1, 1)
    yield
    ps.destroy_model_parallel()


def _sharded_counts(model, spec: ModelSpec, layout: Layout) -> list[int]:
    """Per-rank counts of each pipeline stage, from a TP=1 model and megatron's partition attributes."""
    counts = stage_layer_counts(spec.num_layers, layout.pp, layout.first_stage_layers, layout.last_stage_layers)
    starts = [sum(counts[:i]) for i in range(len(counts))]
    out = [0] * layout.pp
    local_experts = (spec.num_experts or 1) // layout.ep
    for name, param in model.named_parameters():
        if name.startswith("embedding."):
            stage = 0
        elif name.startswith(("decoder.final_layernorm", "output_layer")):
            stage = layout.pp - 1
        else:
            layer = int(name.split(".")[2])
            stage = max(i for i, s in enumerate(starts) if s <= layer)
        split = getattr(param, "tensor_model_parallel", False)
        if ".mlp.experts.local_experts." in name:
            if int(name.split("local_experts.")[1].split(".")[0]) >= local_experts:
                continue
            out[stage] += param.numel() // (layout.etp if split else 1)
        else:
            out[stage] += param.numel() // (layout.tp if split else 1)
    if spec.tied_embeddings and layout.pp > 1:  # megatron keeps a copy of the table on the last stage
        out[-1] += model.embedding.word_embeddings.weight.numel() // layout.tp
    return out


_MODELS: dict = {}


def _built(name: str):
    if name not in _MODELS:
        _MODELS[name] = build_gpt(SPECS[name])
    return _MODELS[name]


@pytest.mark.parametrize("name", list(SPECS))
def test_total_equals_megatron_model(world_one, name):
    spec = SPECS[name]
    model = _built(name)
    assert total_parameters(spec) == sum(p.numel() for p in model.parameters())
    assert [s.total for s in stage_parameters(spec, Layout())] == [sum(p.numel() for p in model.parameters())]


def build_deepseek_v3_from_hf(hf: dict):
    """megatron-core's GPTModel for a DeepseekV3 ``config.json`` at full size on the meta device (no memory),
    its config mapped key by key from the HF names (as the bridges convert them), not through ``ModelSpec``."""
    import torch
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_decoder_block_spec
    from megatron.core.transformer.transformer_config import MLATransformerConfig

    layers, dense = hf["num_hidden_layers"], hf["first_k_dense_replace"]
    config = MLATransformerConfig(
        num_layers=layers, hidden_size=hf["hidden_size"], ffn_hidden_size=hf["intermediate_size"],
        num_attention_heads=hf["num_attention_heads"], normalization="RMSNorm", gated_linear_unit=True,
        add_bias_linear=False, qk_layernorm=True, use_cpu_initialization=True, multi_latent_attention=True,
        q_lora_rank=hf["q_lora_rank"], kv_lora_rank=hf["kv_lora_rank"], qk_head_dim=hf["qk_nope_head_dim"],
        qk_pos_emb_head_dim=hf["qk_rope_head_dim"], v_head_dim=hf["v_head_dim"], rotary_base=hf["rope_theta"],
        rope_type="rope", num_moe_experts=hf["n_routed_experts"], moe_router_topk=hf["num_experts_per_tok"],
        moe_ffn_hidden_size=hf["moe_intermediate_size"],
        moe_shared_expert_intermediate_size=hf["n_shared_experts"] * hf["moe_intermediate_size"],
        moe_layer_freq=[0] * dense + [1] * (layers - dense))
    block = get_gpt_decoder_block_spec(config, use_transformer_engine=False)
    for layer in block.layer_specs:
        layer.submodules.self_attention.submodules.core_attention = _NoParamCoreAttention
    saved, torch.cuda.current_device = torch.cuda.current_device, lambda: "cpu"
    try:
        with torch.device("meta"):
            return GPTModel(config=config, transformer_layer_spec=block, vocab_size=hf["vocab_size"],
                            max_sequence_length=64, position_embedding_type="rope",
                            share_embeddings_and_output_weights=hf["tie_word_embeddings"])
    finally:
        torch.cuda.current_device = saved


@pytest.mark.parametrize("layout", [Layout(pp=2, ep=4, etp=1, last_stage_layers=13), Layout(tp=2, ep=4, etp=2),
                                    Layout(pp=3, tp=2, ep=8, etp=1)],
                         ids=["pp2-ep4-last13", "tp2-ep4-etp2", "tp2-pp3-ep8-etp1"])
def test_moonlight_full_size_matches_megatron(world_one, layout):
    """The MLA fixture at its real size (15.96e9 parameters, q_lora_rank null), from its config.json: the whole
    model and each stage of the calibration layout (benchmarks/data/measured_peaks.json) and two others."""
    path = FIXTURES / "models" / "Moonlight-16B-A3B-Instruct"
    if "moonlight" not in _MODELS:
        _MODELS["moonlight"] = build_deepseek_v3_from_hf(json.loads((path / "config.json").read_text()))
    model, spec = _MODELS["moonlight"], load_model_spec(path)[0]
    assert total_parameters(spec) == sum(p.numel() for p in model.parameters()) == 15_960_108_544
    assert [s.total for s in stage_parameters(spec, layout)] == _sharded_counts(model, spec, layout)


LAYOUTS = [
    Layout(tp=2), Layout(tp=4), Layout(pp=2), Layout(tp=2, pp=2), Layout(pp=3, first_stage_layers=2),
    Layout(tp=2, ep=2, etp=1), Layout(tp=2, ep=4, etp=2), Layout(tp=4, pp=2, ep=2, etp=2),
]


def _applies(spec, layout) -> bool:
    """Layouts that exist for the model: EP only on MoE, query groups split over TP, layers split over PP."""
    if not spec.is_moe and (layout.ep > 1 or layout.etp > 1):
        return False
    if spec.num_query_groups % layout.tp:
        return False
    return stage_layer_counts(spec.num_layers, layout.pp, layout.first_stage_layers,
                              layout.last_stage_layers) is not None


PAIRS = [(name, layout) for name in SPECS for layout in LAYOUTS if _applies(SPECS[name], layout)]


def test_every_model_gets_several_layouts():
    assert {name for name, _ in PAIRS} == set(SPECS)
    assert len(PAIRS) >= 2 * len(SPECS)


@pytest.mark.parametrize("name, layout", PAIRS, ids=[f"{n}-{lay}" for n, lay in PAIRS])
def test_per_rank_matches_megatron_shard_attributes(world_one, name, layout):
    spec = SPECS[name]
    assert [s.total for s in stage_parameters(spec, layout)] == _sharded_counts(_built(name), spec, layout)


# EP > 1 with TP > 1 needs sequence parallelism, which megatron's torch norms (no TE/Apex here) refuse:
# the two-rank builds cover TP and EP separately; the shard-attribute test covers them combined.
TWO_RANK = [("qwen2-dense", 2, 1, 2), ("qwen3-moe", 1, 2, 1), ("deepseek-mla", 1, 2, 1)]


def _two_rank_worker(rank: int, port: int, queue) -> None:
    """One of two gloo ranks: each layout of :data:`TWO_RANK` in turn, its parallel state set up and torn down
    (one pair of processes for all: starting one costs more than the builds)."""
    import torch
    from megatron.core import parallel_state as ps

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.distributed.init_process_group("gloo", rank=rank, world_size=2)
    for name, tp, ep, etp in TWO_RANK:
        ps.initialize_model_parallel(tensor_model_parallel_size=tp, expert_model_parallel_size=ep,
                                     expert_tensor_parallel_size=etp)
        model = build_gpt(SPECS[name])
        queue.put(((name, tp, ep, etp), rank, sum(p.numel() for p in model.parameters())))
        torch.distributed.barrier()
        ps.destroy_model_parallel()
    torch.distributed.destroy_process_group()


@pytest.fixture(scope="module")
def two_rank_counts():
    """Parameters per rank of each :data:`TWO_RANK` layout, really built by megatron in two processes."""
    torch = require("torch")
    require("megatron.core")
    ctx = torch.multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_two_rank_worker, args=(r, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    counts: dict = {}
    for _ in range(2 * len(TWO_RANK)):
        layout, rank, count = queue.get(timeout=180)
        counts.setdefault(layout, {})[rank] = count
    for p in procs:
        p.join(timeout=60)
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("name,tp,ep,etp", TWO_RANK)
def test_per_rank_matches_a_real_two_rank_build(two_rank_counts, name, tp, ep, etp):
    expected = stage_parameters(SPECS[name], Layout(tp=tp, ep=ep, etp=etp))[0].total
    assert two_rank_counts[(name, tp, ep, etp)] == {0: expected, 1: expected}
