"""Memory terms against hand-derived cases, the enumeration's constraints, and the corpus layouts among plan's results."""  # noqa: E501  (a docstring: re-wrapping would change its value)

from __future__ import annotations

import pytest

from helpers import FIXTURES
from verl_mindspeed.model import (
    Layout,
    MemoryOptions,
    ModelSpec,
    _engine,
    estimate_memory,
    load_model_spec,
    plan_layouts,
)
from verl_mindspeed.model._constraints import balanced_pipeline_split, pipeline_splits
from verl_mindspeed.model.activations import layer_parts, logits_bytes
from verl_mindspeed.model.cp import algorithms_of, cp_variants
from verl_mindspeed.model.memory import COMPONENTS
from verl_mindspeed.model.recompute import FULL_UNIFORM_1, NO_RECOMPUTE, Recompute

MODELS = FIXTURES / "models"


def spec_of(name: str) -> ModelSpec:
    return load_model_spec(MODELS / name)[0]


# A GPT-style MHA model whose SwiGLU width 8h/3 stores as much as the paper's 4h GeLU MLP.
GPT = ModelSpec(architecture="LlamaForCausalLM", family="dense", num_layers=8, hidden_size=768,
                ffn_hidden_size=2048, num_attention_heads=12, num_query_groups=12, head_dim=64, vocab_size=32000)


def _bytes(parts, tp=1, sp=False):
    return sum(p.bytes / (tp if (p.sharded or sp) else 1) for p in parts)


def test_layer_activations_follow_korthikanti():
    """Korthikanti et al. 2022: s*b*h*(34 + 5*a*s/h) per layer without recompute, /t with TP and SP.

    With hidden dropout on (1-byte masks) and no flash attention our parts are exactly the
    paper's: norms 4h, attention 11h + 5as, MLP 19h (SwiGLU width 8h/3 stores 16h like GeLU's 4h).
    """
    s, a, h = 1024, 12, 768
    no_fa = layer_parts(GPT, False, flash=False, seq_per_rank=s, dropout=True)
    assert s * _bytes(no_fa) == s * h * (34 + 5 * a * s / h)
    with_sp = layer_parts(GPT, False, tp=4, dropout=True)
    assert s * _bytes(with_sp, tp=4, sp=True) == s * (h * 34 + 64 * a) / 4  # + torch_npu FA softmax stats


def test_full_recompute_with_pipeline_keeps_inputs_per_micro_batch_and_replays_one_layer():
    """Full recompute, uniform/1, PP=4: only layer inputs are multiplied by the micro-batches in flight.

    GPT above: h=768, f=2048, a=12, 8 layers, s=1024 tokens, TP=1, flash attention, no dropout.
    One layer stores per token 2h (input) + 2h (norm out) + 6h (Q, K, V) + 2h (attention out)
    + 2h (MLP norm in) + 2h (MLP norm out) + 6f = 16h (SwiGLU) + 64a (NPU FA stats)
    = 32h + 64a = 25,344 bytes; per micro-batch 25,952,256 bytes. A checkpoint is the layer
    input, 2h*s = 1,572,864 bytes.
    Stage 0 has 2 layers and 4 micro-batches in flight (1F1B): stored = 4 x 2 x 1,572,864
    = 12,582,912. The backward replays one layer (25,952,256) while holding gradients as
    large as one layer (25,952,256): transient 51,904,512. Peak activations 64,487,424.
    The old planner multiplied the whole recomputed layer by the 4 in flight:
    4 x (2 x 1,572,864 + 25,952,256) = 116,391,936, 1.8x too much here and ~4x for DeepSeek-V3.
    """
    opts = MemoryOptions(seq_len=1024, workload="pretrain")
    prof = _engine.build(GPT, Layout(pp=4), 4, opts)
    stored, transient, chunks = _engine._dynamic(prof, prof.stages[0], FULL_UNIFORM_1,
                                                 _engine._layer_bytes(prof, FULL_UNIFORM_1))
    assert prof.layer == 25_952_256 and stored == 12_582_912 and transient == 51_904_512
    assert stored + transient == 64_487_424
    none = _engine._dynamic(prof, prof.stages[0], NO_RECOMPUTE, _engine._layer_bytes(prof, NO_RECOMPUTE))
    assert none[0] == 4 * 2 * 25_952_256  # without recompute every stored layer counts per micro-batch
    block = _engine._dynamic(prof, prof.stages[0], Recompute("full", "block", 1),
                             _engine._layer_bytes(prof, NO_RECOMPUTE))
    assert block[0] == 4 * (1_572_864 + 25_952_256)


def test_logits_follow_verl_engine():
    """verl 0.9.1 MegatronEngine._lm_head_logits_processor, v=32000, TP=2, 4096 tokens, no SP.

    Logits [4096, 16000] in bf16: 2 bytes per entry. Without entropy, megatron's
    vocab_parallel_cross_entropy makes an fp32 copy kept as the softmax: 2 + 4 = 6 bytes,
    4096 x 16000 x 6 = 393,216,000. With entropy (entropy_coeff != 0): a clone (2) and the
    entropy's softmax (2) as well: 10 bytes, 655,360,000. The log-prob pass always computes
    entropy: 655,360,000, nothing kept for a backward. Plus the final norm input and the output
    layer input, 4h per token: 4096 x 3072 = 12,582,912. Fused kernels: 12 bytes per token per
    1024-entry vocabulary split forward (16 splits: 786,432), a bf16 [4096, 9504] gradient chunk
    (77,856,768) and a bf16 weight gradient 2 x 16000 x 768 (24,576,000).
    """
    stream = 12_582_912
    assert logits_bytes(GPT, 4096, 2, False, fused=False, entropy=False) == (stream + 393_216_000, 655_360_000)
    assert logits_bytes(GPT, 4096, 2, False, fused=False, entropy=True)[0] == stream + 655_360_000
    assert logits_bytes(GPT, 4096, 2, False, fused=True, entropy=True) == (
        stream + 786_432 + 77_856_768 + 24_576_000, 786_432)


def test_megatron_fused_cross_entropy_peaks_at_ten_bytes_per_entry():
    """megatron-core 0.12.1 ``fused_vocab_parallel_cross_entropy`` (pre-training with cross_entropy_loss_fusion):
    its compiled backward writes the gradient into a new fp32 buffer while the fp32 softmax is alive, then casts
    to bf16: 4 + 4 + 2 = 10 bytes per entry, 4096 x 16000 x 10 = 655,360,000 (benchmarks/ce_fusion_probe.py)."""
    stream = 12_582_912
    assert logits_bytes(GPT, 4096, 2, False, fused=False, entropy=False, workload="pretrain", ce_fusion=True) == (
        stream + 655_360_000, 0.0)
    assert logits_bytes(GPT, 4096, 2, False, fused=False, entropy=False, workload="pretrain") == (
        stream + 393_216_000, 0.0)


def test_moe_layer_keeps_no_expert_outputs_for_the_combine():
    """megatron-core 0.12.1 weights the expert outputs inside the experts and unpermutes without probabilities:
    the combine keeps indices only. MindSpeed's ``fused_swiglu(x) * probs`` keeps the unweighted activation."""
    spec = spec_of("Moonlight-16B-A3B-Instruct")
    names = {p.name: p.bytes for p in layer_parts(spec, True)}
    assert "expert_combine" not in names
    assert names["expert_fc1_out"] == 6 * 4 * 1408 and names["expert_act_out"] == 6 * 2 * 1408
    npu = {p.name: p for p in layer_parts(spec, True, probs_keep_act=True)}
    assert npu["expert_act_unweighted"].bytes == 6 * 2 * 1408 and npu["expert_act_unweighted"].module == "moe_act"


def test_etp_gathers_routed_tokens():
    spec = spec_of("Qwen3-30B-A3B")
    one, four = (sum(p.bytes for p in layer_parts(spec, True, etp=e) if p.name == "expert_in") for e in (1, 4))
    assert four == 4 * one


def test_memory_levers_move_the_estimate_the_right_way():
    spec, world = spec_of("Qwen3-30B-A3B"), 16
    lay = Layout(tp=4, ep=4, etp=1)
    base = estimate_memory(spec, lay, world)
    assert sum(base.breakdown()[k] for k in COMPONENTS) == base.peak
    assert estimate_memory(spec, lay, world, MemoryOptions(distributed_optimizer=False)).optimizer > base.optimizer
    assert estimate_memory(spec, lay, world, MemoryOptions(full_recompute=True)).activations < base.activations
    assert estimate_memory(spec, Layout(tp=4, cp=2, ep=4), world).activations < base.activations
    # megatron's HybridDeviceOptimizer: without the precision-aware optimizer the distributed optimizer's fp32
    # master shards (4 of the 12 bytes) stay on the device whatever the fraction; with it the kept share holds
    # an fp32 master, two moments and an fp32 gradient copy (16)
    for aware, half, host in ((False, 8 / 12, 4 / 12), (True, 8 / 12, 0.0)):
        def adam(fraction, aware=aware):
            return estimate_memory(spec, lay, world, MemoryOptions(
                optimizer_offload_fraction=fraction, hybrid_optimizer=True, precision_aware_optimizer=aware)).optimizer
        assert adam(0.5) == pytest.approx(base.optimizer * half, rel=1e-6)
        assert adam(1.0) == pytest.approx(base.optimizer * host, rel=1e-6, abs=1)
        assert adam(0.0) == pytest.approx(base.optimizer * (16 / 12 if aware else 1), rel=1e-6)
    assert estimate_memory(spec, lay, world, MemoryOptions(precision_aware_optimizer=True)).optimizer \
        == base.optimizer  # without the HybridDeviceOptimizer: 12 bytes either way
    assert estimate_memory(spec, lay, world, MemoryOptions(use_fused_kernels=True)).logits < base.logits
    offload = estimate_memory(spec, lay, world, MemoryOptions(param_offload=True, optimizer_offload=True))
    assert offload.peak == base.peak and offload.resident_outside_update < base.resident_outside_update
    ref_off = estimate_memory(spec, lay, world, MemoryOptions(ref_param_offload=True))
    assert ref_off.resident_outside_update < base.resident_outside_update
    # the ref's pass loads its weights while the actor (not offloaded) keeps everything: that pass is the peak
    assert ref_off.phase == "ref_log_prob" and ref_off.ref_weights == base.ref_weights
    both = estimate_memory(spec, lay, world, MemoryOptions(ref_param_offload=True, param_offload=True,
                                                           optimizer_offload=True))
    assert both.phase == "update" and both.ref_weights == 0 and both.peak < base.peak
    assert estimate_memory(spec, lay, world, MemoryOptions(ref_model=False)).ref_weights == 0
    assert estimate_memory(spec, lay, world, MemoryOptions(grad_reduce_in_fp32=False)).gradients \
        == base.gradients // 2


@pytest.mark.parametrize("layers,pp,split", [(27, 4, (7, 6)), (28, 2, (None, None)), (27, 2, (14, None)),
                                             (61, 8, (7, 6)), (61, 32, None), (4, 8, None)])
def test_balanced_pipeline_split(layers, pp, split):
    assert balanced_pipeline_split(layers, pp) == split


@pytest.mark.parametrize("layers,pp", [(61, 2), (61, 4), (61, 8), (61, 16), (27, 4), (28, 2), (64, 8), (48, 4)])
def test_pipeline_splits_are_valid_for_megatron(layers, pp):
    from verl_mindspeed.model import stage_layer_counts

    splits = pipeline_splits(layers, pp)
    assert splits and all(stage_layer_counts(layers, pp, *s) for s in splits)
    assert ((None, None) in splits) == (layers % pp == 0)
    if pp == 2:  # megatron-core 0.12.1 divides by zero when both sizes are set with PP=2
        assert all(last is None for _, last in splits)


def test_cp_variants_follow_mindspeed_constraints():
    spec = spec_of("Qwen3-30B-A3B")  # 32 heads
    got = set(cp_variants(spec, 2, 8, 4096, algorithms_of("26.1.0_core_r0.12.1")))
    assert ("ulysses_cp_algo", None) in got  # 32 % (8 x 2) == 0
    assert {("hybrid_cp_algo", 2), ("hybrid_cp_algo", 4)} <= got and ("hybrid_cp_algo", 8) not in got
    assert ("kvallgather_cp_algo", None) in got
    assert ("ulysses_cp_algo", None) not in set(cp_variants(spec, 8, 8, 4096, algorithms_of(None)))  # 32 % 64
    assert ("kvallgather_cp_algo", None) not in set(cp_variants(spec, 2, 8, 4096, algorithms_of("2.3.0_core_r0.12.1")))
    odd = set(cp_variants(spec, 1, 4, 4100, algorithms_of(None)))  # 4100 % 4 == 0 but 4100 % 8 != 0
    assert ("megatron_cp_algo", None) not in odd and ("ulysses_cp_algo", None) in odd


def test_planned_layouts_satisfy_the_rules():
    spec = spec_of("Qwen3-30B-A3B")
    plans = plan_layouts(spec, 2, 8, options=MemoryOptions(seq_len=8192))
    for p in plans:
        lay = p.layout
        assert spec.num_attention_heads % lay.tp == 0 and 16 % (lay.tp * lay.pp * lay.cp) == 0
        assert 16 % (lay.ep * lay.etp * lay.pp) == 0 and lay.tp % lay.etp == 0
        if lay.cp_algo == "ulysses_cp_algo" and lay.cp > 1:
            assert spec.num_attention_heads % (lay.cp * lay.tp) == 0
        if lay.ulysses_degree:
            assert lay.cp % lay.ulysses_degree == 0 and lay.cp // lay.ulysses_degree > 1
        if lay.recompute.full and lay.recompute.method == "block":
            assert 1 <= lay.recompute.num_layers
    assert {p.layout.cp_algo for p in plans if p.layout.cp > 1} >= {"megatron_cp_algo", "ulysses_cp_algo",
                                                                    "hybrid_cp_algo", "kvallgather_cp_algo"}


CORPUS_LAYOUTS = [  # (model, nnodes, gpus per node, layout) from ../shared/corpus/real-scripts
    ("Moonlight-16B-A3B-Instruct", 1, 8, Layout(pp=4, cp=2, ep=2, etp=1, first_stage_layers=7, last_stage_layers=6)),
    ("Qwen3-30B-A3B", 1, 16, Layout(tp=4, ep=4, etp=4)),
    ("Qwen3-30B-A3B", 1, 16, Layout(tp=2, ep=8, etp=1)),
    ("Qwen3-0.6B", 1, 8, Layout(tp=2, pp=2)),
]


@pytest.mark.parametrize("name,nnodes,gpus,layout", CORPUS_LAYOUTS, ids=lambda v: str(v))
def test_corpus_layouts_are_among_the_valid_layouts(name, nnodes, gpus, layout):
    """Same sizes (the planner picks its own stage split and recompute for them)."""
    sizes = lambda lay: (lay.tp, lay.pp, lay.cp, lay.ep, lay.etp, lay.vpp)  # noqa: E731
    assert sizes(layout) in {sizes(p.layout) for p in plan_layouts(spec_of(name), nnodes, gpus)}
    assert (layout.first_stage_layers, layout.last_stage_layers) in pipeline_splits(spec_of(name).num_layers,
                                                                                    layout.pp) + [(None, None)]


def test_overrides_cover_actor_ref_and_every_dict_key():
    spec = spec_of("Moonlight-16B-A3B-Instruct")
    plans = plan_layouts(spec, 1, 8, options=MemoryOptions(seq_len=8192))
    plan = next(p for p in plans if p.layout.cp > 1 and p.layout.cp_algo == "ulysses_cp_algo" and p.layout.pp > 1
                and p.layout.first_stage_layers)
    lines = plan.overrides
    otc = "++actor_rollout_ref.actor.megatron.override_transformer_config"
    for side in ("actor", "ref"):
        assert f"actor_rollout_ref.{side}.megatron.context_parallel_size={plan.layout.cp}" in lines
    assert f"{otc}.context_parallel_algo=ulysses_cp_algo" in lines and f"{otc}.seq_length=8192" in lines
    assert f"{otc}.num_layers_in_first_pipeline_stage={plan.layout.first_stage_layers}" in lines
    assert not any("ref.megatron.override_transformer_config" in line for line in lines)
    hybrid = next(p for p in plans if p.layout.cp_algo == "hybrid_cp_algo")
    assert f"{otc}.ulysses_degree_in_cp={hybrid.layout.ulysses_degree}" in hybrid.overrides
    full = next(p for p in plan_layouts(spec, 1, 8, options=MemoryOptions(full_recompute=True)))
    assert {f"{otc}.recompute_granularity=full", f"{otc}.recompute_method=uniform",
            f"{otc}.recompute_num_layers=1"} <= set(full.overrides)


def test_ranking_puts_fitting_layouts_first():
    plans = plan_layouts(spec_of("Qwen3-30B-A3B"), 1, 16)
    fits = [p.fits for p in plans]
    assert fits == sorted(fits, reverse=True) and any(fits)
    times = [p.time.total for p in plans if p.fits]
    assert times == sorted(times)


def test_deepseek_v3_fits_on_1024_devices_with_recompute_where_needed():
    spec = spec_of("DeepSeek-V3")
    plans = plan_layouts(spec, 128, 8)
    assert plans[0].fits and all(p.layout.tp * p.layout.pp * p.layout.cp <= 1024 for p in plans)
    assert any(p.fits and p.layout.recompute.granularity for p in plans)
