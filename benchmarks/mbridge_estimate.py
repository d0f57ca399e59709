"""Run mbridge 0.15.1's memory_estimator on CPU for one layout and print its per-rank report as JSON.

mbridge's PyPI wheel does not ship ``memory_estimator/``; it lives in the mbridge repository
(tag v0.15.1). This script imports its ``estimate_013.estimate_from_config`` from
``--estimator-dir`` and builds the model config with mbridge's ``AutoBridge``, the way the
estimator's web UI does. Needs megatron-core 0.13 (the estimator's API), mbridge 0.15.1,
transformers and termcolor; no GPU. Two stand-ins let it import on a CPU-only machine:
``megatron.training`` (imported at module top, unused on this path) and the names of
Transformer Engine's layer classes (the estimator maps spec classes by name to its own mocks).
"""
import argparse
import contextlib
import io
import json
import sys
import types
import warnings


def _stub_megatron_training() -> None:
    """megatron.training is imported at module top but unused on the estimate_from_config path: stub it."""
    for name in ["megatron.training", "megatron.training.arguments", "megatron.training.initialize",
                 "megatron.training.utils", "megatron.training.yaml_arguments"]:
        m = types.ModuleType(name)
        for attr in ["get_args", "get_timers", "get_tokenizer", "pretrain", "print_rank_0",
                     "core_transformer_config_from_args", "initialize_megatron", "get_batch_on_this_cp_rank",
                     "get_batch_on_this_tp_rank", "core_transformer_config_from_yaml"]:
            setattr(m, attr, lambda *a, **k: None)
        sys.modules[name] = m


def _stub_transformer_engine() -> None:
    """No Transformer Engine on this CPU machine: megatron's TE layer spec only needs classes with TE's names, which
    the estimator's build_module maps by __name__ to its own mock modules. Stub those names, nothing else."""
    import megatron.core  # noqa: F401  before the stubs: fp8_utils probes TE at import

    assert "megatron.core.models.gpt.gpt_layer_specs" not in sys.modules
    te = types.ModuleType("transformer_engine")
    te.__version__ = "2.4.0"
    te.pytorch = types.SimpleNamespace(RMSNorm=object)
    sys.modules["transformer_engine"] = te
    ext = types.ModuleType("megatron.core.extensions.transformer_engine")
    for cls in ["TEColumnParallelGroupedLinear", "TEColumnParallelLinear", "TEDotProductAttention",
                "TELayerNormColumnParallelLinear", "TENorm", "TERowParallelGroupedLinear", "TERowParallelLinear",
                "TEFusedMLP", "TELinear", "TEDelayedScaling"]:
        setattr(ext, cls, type(cls, (), {}))
    ext._get_extra_te_kwargs = lambda config: {"params_dtype": config.params_dtype}
    ext.condition_init_method = lambda config, init_method: init_method
    ext.get_expert_parallel_rng_tracker_name = lambda: "expert-parallel-rng"
    ext.te = te
    sys.modules["megatron.core.extensions.transformer_engine"] = ext
    import megatron.core.utils as _mu

    _mu.is_te_min_version = lambda *a, **k: True
    _mu.get_te_version = lambda: "2.4.0"
    import megatron.core.transformer.transformer_block as _tb

    _tb.LayerNormImpl = ext.TENorm  # what a TE install selects
    import megatron

    megatron.training = sys.modules["megatron.training"]


warnings.filterwarnings("ignore")
_pre = argparse.ArgumentParser(add_help=False)
_pre.add_argument("--estimator-dir", required=True)
_known, _ = _pre.parse_known_args()
sys.path.insert(0, _known.estimator_dir)
_stub_megatron_training()
_stub_transformer_engine()

# These need --estimator-dir on sys.path and the stubs above.
from estimate_013 import estimate_from_config  # noqa: E402
from mbridge import AutoBridge  # noqa: E402
from mbridge.core.parallel_states import ParallelStates  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--estimator-dir")
p.add_argument("--model")
p.add_argument("--world", type=int)
for k in ["tp", "pp", "ep", "cp", "etp", "mbs", "seq"]:
    p.add_argument("--" + k, type=int, default=1)
p.add_argument("--vpp", type=int, default=None)
p.add_argument("--first", type=int, default=None)
p.add_argument("--last", type=int, default=None)
p.add_argument("--recompute", default="none")  # none | full | selective:mod1,mod2
p.add_argument("--recompute-method", default="uniform")
p.add_argument("--recompute-num-layers", type=int, default=1)
p.add_argument("--no-dist-opt", action="store_true")
p.add_argument("--no-sp", action="store_true")
a = p.parse_args()
ParallelStates.get_default_parallel_states = lambda: ParallelStates(tp_size=a.tp, pp_size=a.pp, ep_size=a.ep,
    cp_size=a.cp, vpp_size=a.vpp, etp_size=a.etp)
with contextlib.redirect_stdout(io.StringIO()):
    bridge = AutoBridge.from_pretrained(a.model)
tf = bridge.config
hf = bridge.hf_config
tf.tensor_model_parallel_size = a.tp
tf.pipeline_model_parallel_size = a.pp
tf.expert_model_parallel_size = a.ep
tf.context_parallel_size = a.cp
tf.expert_tensor_parallel_size = a.etp
tf.sequence_parallel = a.tp > 1 and not a.no_sp
if a.recompute == "full":
    tf.recompute_granularity = "full"
    tf.recompute_method = a.recompute_method
    tf.recompute_num_layers = a.recompute_num_layers
    tf.recompute_modules = []
elif a.recompute.startswith("selective"):
    tf.recompute_granularity = "selective"
    tf.recompute_method = None
    tf.recompute_num_layers = None
    tf.recompute_modules = a.recompute.split(":", 1)[1].split(",")
else:
    tf.recompute_granularity = None
    tf.recompute_method = None
    tf.recompute_num_layers = None
    tf.recompute_modules = []
tf.account_for_embedding_in_pipeline_split = False
tf.account_for_loss_in_pipeline_split = False
tf.num_layers_per_virtual_pipeline_stage = None
if a.vpp:
    tf.virtual_pipeline_model_parallel_size = a.vpp
tf.num_layers_in_first_pipeline_stage = a.first
tf.num_layers_in_last_pipeline_stage = a.last
args = argparse.Namespace(micro_batch_size=a.mbs, seq_length=a.seq, use_distributed_optimizer=not a.no_dist_opt,
    data_parallel_size=a.world // (a.tp * a.pp * a.cp), expert_tensor_parallel_size=a.etp,
    transformer_impl="transformer_engine", fp8=False, num_experts=getattr(tf, "num_moe_experts", None),
    moe_grouped_gemm=True, qk_layernorm=tf.qk_layernorm,
    multi_latent_attention="deepseek" in getattr(hf, "model_type", ""), padded_vocab_size=hf.vocab_size,
    max_position_embeddings=hf.max_position_embeddings, tie_word_embeddings=getattr(hf, "tie_word_embeddings", False),
    world_size=a.world, virtual_pipeline_model_parallel_size=a.vpp)
with contextlib.redirect_stdout(io.StringIO()):
    reports, _ = estimate_from_config(tf, args)
out = [{k: r[k] for k in ("pp_rank", "parameters_b", "activation_b", "weight_grad_gb", "weight_grad_optim_gb",
                          "activation_gb", "total_gb")} for r in reports]
print(json.dumps({"peak_gib": max(r["total_gb"] for r in out), "ranks": out}))
