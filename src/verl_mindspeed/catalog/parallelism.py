"""Catalogue rows for the parallel layouts: TP, PP, EP, ETP, SP, CP and the CP algorithm."""

from __future__ import annotations

from ._types import Feature, Flag, From, Injection

A = "actor_rollout_ref.actor.megatron"
R = "actor_rollout_ref.ref.megatron"
O = "override_transformer_config"


def _size(name: str, help: str, feeds: str, *, nullable: bool = False, default=1, note="") -> Flag:
    return Flag(
        name=name, where="megatron", type="int", minimum=1, nullable=nullable, default=default,
        default_note=note or "verl's engine/megatron.yaml", help=help, feeds=feeds,
    )


TP = Feature(
    id="tp", name="Tensor parallelism (TP)", kind="feature", status="Preview", source="seed",
    description="Splits each layer's weight matrices across devices.",
    seed_keys=(f"{A}.tensor_model_parallel_size", f"{R}.tensor_model_parallel_size"),
    flags=(_size("tensor_model_parallel_size", "Number of devices each layer's matrices are split across.", "megatron --tensor-model-parallel-size"),),
    rules=("model-parallel-divides-world", "role-sizes-agree", "dict-sizes-agree", "sp-requires-tp",
           "mc2-requires-sp-tp"),
)

PP = Feature(
    id="pp", name="Pipeline parallelism (PP)", kind="feature", status="Preview", source="seed",
    description="Splits the layers into consecutive stages on different devices.",
    seed_keys=(f"{A}.pipeline_model_parallel_size", f"{R}.pipeline_model_parallel_size"),
    flags=(
        _size("pipeline_model_parallel_size", "Number of pipeline stages.",
              "megatron --pipeline-model-parallel-size"),
        _size("virtual_pipeline_model_parallel_size", "Model chunks per pipeline stage (interleaved schedule); null = off.",
              "megatron --virtual-pipeline-model-parallel-size", nullable=True, default=None),
        Flag(name="num_layers_in_first_pipeline_stage", where="otc", type="int", minimum=1, nullable=True,
             help="Layers on the first pipeline stage when the split is uneven.", feeds="TransformerConfig.num_layers_in_first_pipeline_stage"),
        Flag(name="num_layers_in_last_pipeline_stage", where="otc", type="int", minimum=1, nullable=True,
             help="Layers on the last pipeline stage when the split is uneven.", feeds="TransformerConfig.num_layers_in_last_pipeline_stage"),
    ),
    rules=("model-parallel-divides-world", "role-sizes-agree", "mbridge-vpp", "vpp-requires-pp",
           "uneven-pp-needs-middle", "model-layers-pp"),
)

EP = Feature(
    id="ep", name="Expert parallelism (EP)", kind="feature", status="Preview", source="seed",
    description="Places different MoE experts on different devices.",
    seed_keys=(f"{A}.expert_model_parallel_size", f"{R}.expert_model_parallel_size"),
    flags=(_size("expert_model_parallel_size", "Number of devices the experts are spread across.", "megatron --expert-model-parallel-size"),),
    rules=("expert-parallel-divides-world",),
)

ETP = Feature(
    id="etp", name="Expert tensor parallelism (ETP)", kind="feature", status="Preview",
    source="seed",
    description="Splits each expert's matrices across devices; null means the same as TP.",
    seed_keys=(f"{A}.expert_tensor_parallel_size", f"{R}.expert_tensor_parallel_size"),
    flags=(_size("expert_tensor_parallel_size", "Tensor-parallel size inside each expert; null = TP.", "megatron --expert-tensor-parallel-size",
                 nullable=True, default=None, note="null: megatron uses TP"),),
    rules=("expert-parallel-divides-world",),
)

SP = Feature(
    id="sp", name="Sequence parallelism (SP)", kind="feature", status="Preview", source="seed",
    description="Splits LayerNorm and dropout activations along the sequence across the TP group.",
    seed_keys=(f"{A}.{O}.sequence_parallel",),
    flags=(Flag(name="sequence_parallel", where="otc", type="bool", default=True,
                default_note="verl 0.9: megatron.sequence_parallel=True, turned off when TP=1",
                help="Sequence parallelism in the TP group; needs TP > 1.", feeds="TransformerConfig.sequence_parallel"),),
    rules=("sp-requires-tp", "mc2-requires-sp-tp"),
    shown_otherwise="engine.sequence_parallel",
)

CP = Feature(
    id="cp", name="Context parallelism (CP)", kind="feature", status="Preview", source="seed",
    description="Splits long sequences across devices; the size must be set for verl and in the dict MindSpeed reads.",
    seed_keys=(f"{A}.context_parallel_size", f"{A}.{O}.context_parallel_size"),
    flags=(
        _size("context_parallel_size", "Number of devices one sequence is split across (verl's process groups).", "megatron --context-parallel-size"),
        Flag(name="context_parallel_size", where="otc", type="int", minimum=1,
             default_note="copied from megatron.context_parallel_size by verl 0.8+ and by this tool",
             help="The CP size MindSpeed's patches read; must equal megatron.context_parallel_size.",
             feeds="MindSpeed --context-parallel-size"),
    ),
    rules=("dict-sizes-agree", "model-parallel-divides-world", "cp-forces-flash-attn"),
    injects=(Injection(key="context_parallel_size", value=From("engine.cp"), requires=("engine.cp>1",),
                       why="MindSpeed's CP patches read the size from the dict"),),
)

CP_ALGO = Feature(
    id="cp_algo", name="CP algorithm", kind="feature", status="Preview",
    source="mindspeed-verl-guide",
    description="Which context-parallel algorithm MindSpeed uses: ring (megatron_cp_algo), Ulysses, or hybrid.",
    seed_keys=(f"{A}.{O}.context_parallel_algo",),
    flags=(
        Flag(name="context_parallel_algo", where="otc", type="str", process_wide=True,
             choices=("megatron_cp_algo", "ulysses_cp_algo", "hybrid_cp_algo", "kvallgather_cp_algo",
                      "adaptive_cp_algo", "hybrid_adaptive_cp_algo"),
             default="megatron_cp_algo", default_note="MindSpeed",
             # MindSpeed's context-parallel docs: megatron_cp_algo is Ring Attention, ulysses_cp_algo Ulysses,
             # hybrid_cp_algo both, kvallgather_cp_algo the KV all-gather
             value_synonyms=(("ring_attention", "megatron_cp_algo"), ("ring", "megatron_cp_algo"),
                             ("ring_attn", "megatron_cp_algo"), ("ringattention", "megatron_cp_algo"),
                             ("ulysses_attention", "ulysses_cp_algo"), ("hybrid", "hybrid_cp_algo"),
                             ("kv_allgather", "kvallgather_cp_algo"), ("allgather", "kvallgather_cp_algo")),
             help="Context-parallel algorithm; kvallgather_cp_algo needs MindSpeed 26.0.0 or later.",
             feeds="MindSpeed --context-parallel-algo"),
        Flag(name="ulysses_degree_in_cp", where="otc", type="int", minimum=1, nullable=True, process_wide=True,
             help="Ulysses degree inside the CP group for hybrid_cp_algo.", feeds="MindSpeed --ulysses-degree-in-cp"),
        Flag(name="cp_window_size", where="otc", type="int", minimum=1, default=1, process_wide=True,
             help="Ring attention window for megatron_cp_algo; in [1, CP) and a divisor of CP.", feeds="MindSpeed --cp-window-size"),
    ),
    rules=("cp-algo-release", "cp-window-size", "hybrid-cp-ulysses-degree", "cp-seq-length", "cp-forces-flash-attn"),
)

FEATURES = (TP, PP, EP, ETP, SP, CP, CP_ALGO)
