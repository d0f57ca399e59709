"""Field declarations of the schema, generated from the catalogue. Do not edit:
run ``python -m verl_mindspeed.docs_gen``.
"""

# fmt: off
from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal, Optional, Union

from pydantic import Field
from pydantic.dataclasses import dataclass

from ._base import STRICT, SchemaBase, schema


@schema
@dataclass(kw_only=True, config=STRICT)
class TransformerOverrides(SchemaBase):
    """Keys under ``<role>.megatron.override_transformer_config``."""

    num_layers_in_first_pipeline_stage: Optional[Annotated[int, Field(ge=1)]] = None
    """Layers on the first pipeline stage when the split is uneven. Feeds TransformerConfig.num_layers_in_first_pipeline_stage. Default: unset."""

    num_layers_in_last_pipeline_stage: Optional[Annotated[int, Field(ge=1)]] = None
    """Layers on the last pipeline stage when the split is uneven. Feeds TransformerConfig.num_layers_in_last_pipeline_stage. Default: unset."""

    sequence_parallel: Optional[bool] = None
    """Sequence parallelism in the TP group; needs TP > 1. Feeds TransformerConfig.sequence_parallel. Default: `True`, verl 0.9: megatron.sequence_parallel=True, turned off when TP=1."""

    use_distributed_optimizer: Optional[bool] = None
    """The copy MindSpeed's checks read; the switch that acts is megatron.use_distributed_optimizer. Feeds MindSpeed/megatron --use-distributed-optimizer. Default: copied from megatron.use_distributed_optimizer when swap_optimizer is on."""

    swap_optimizer: Optional[bool] = None
    """Swap optimizer states to the host; needs the distributed optimizer. Feeds MindSpeed --swap-optimizer. Default: unset."""

    swap_optimizer_times: Optional[Annotated[int, Field(ge=1)]] = None
    """Number of slices each swap moves the optimizer states in. Feeds MindSpeed --swap-optimizer-times. Default: `16`, MindSpeed."""

    noop_layers: Optional[Union[str, int, list[int]]] = None
    """Indices of the no-op layers; MindSpeed reads only a digit string such as "0,127". Feeds MindSpeed --noop-layers. Default: unset."""

    num_layers: Optional[Annotated[int, Field(ge=1)]] = None
    """Total layer count including the no-op layers. Feeds TransformerConfig.num_layers. Default: derived from the HF model by verl's bridge."""

    recompute_granularity: Optional[Literal['full', 'selective']] = None
    """full recomputes whole layers; selective recomputes recompute_modules; null = off. Feeds TransformerConfig.recompute_granularity. Default: verl: null (off)."""

    recompute_method: Optional[Literal['uniform', 'block']] = None
    """How full recompute picks layers: uniform chunks or the first N layers of each stage. Feeds TransformerConfig.recompute_method. Default: unset."""

    recompute_num_layers: Optional[Annotated[int, Field(ge=1)]] = None
    """Layers per chunk (uniform) or per stage (block) for full recompute. Feeds TransformerConfig.recompute_num_layers. Default: unset."""

    recompute_modules: Optional[list[Literal['core_attn', 'moe_act', 'layernorm', 'mla_up_proj', 'mlp', 'moe', 'shared_experts']]] = None
    """Submodules recomputed by selective recompute. Feeds TransformerConfig.recompute_modules. Default: `('core_attn',)`, verl's engine/megatron.yaml."""

    context_parallel_size: Optional[Annotated[int, Field(ge=1)]] = None
    """The CP size MindSpeed's patches read; must equal megatron.context_parallel_size. Feeds MindSpeed --context-parallel-size. Default: copied from megatron.context_parallel_size by verl 0.8+ and by this tool."""

    moe_permutation_async_comm: Optional[bool] = None
    """Precondition of moe_tp_extend_ep and the MoE alltoall/allgather overlap features. Feeds MindSpeed --moe-permutation-async-comm. Default: unset."""

    moe_token_dispatcher_type: Optional[Literal['allgather', 'alltoall', 'flex', 'alltoall_seq']] = None
    """MoE token dispatcher. Feeds TransformerConfig.moe_token_dispatcher_type. Default: derived from the HF model by verl's bridge (megatron's own default: allgather)."""

    moe_alltoall_overlap_comm: Optional[bool] = None
    """Overlap alltoall dispatch communication with computation. Feeds MindSpeed --moe-alltoall-overlap-comm. Default: unset."""

    moe_tp_extend_ep: Optional[bool] = None
    """Use the TP group to extend expert parallelism instead of splitting experts. Feeds MindSpeed --moe-tp-extend-ep. Default: unset."""

    multi_head_latent_attention: Optional[bool] = None
    """MindSpeed's MLA switch; needs kv_lora_rank, v_head_dim, qk_rope_head_dim, qk_nope_head_dim. Feeds MindSpeed --multi-head-latent-attention. Default: unset."""

    q_lora_rank: Optional[Annotated[int, Field(ge=1)]] = None
    """Query low-rank dimension (null: no query compression). Feeds MindSpeed --q-lora-rank. Default: unset."""

    kv_lora_rank: Optional[Annotated[int, Field(ge=1)]] = None
    """Key/value low-rank dimension. Feeds MindSpeed --kv-lora-rank. Default: unset."""

    qk_rope_head_dim: Optional[Annotated[int, Field(ge=1)]] = None
    """Per-head dimension that carries RoPE. Feeds MindSpeed --qk-rope-head-dim. Default: unset."""

    qk_nope_head_dim: Optional[Annotated[int, Field(ge=1)]] = None
    """Per-head dimension without RoPE. Feeds MindSpeed --qk-nope-head-dim. Default: unset."""

    v_head_dim: Optional[Annotated[int, Field(ge=1)]] = None
    """Per-head value dimension. Feeds MindSpeed --v-head-dim. Default: unset."""

    use_flash_attn: Optional[bool] = None
    """Fused attention; verl 0.8+ turns it on when unset, this tool always does. Feeds MindSpeed/megatron --use-flash-attn. Default: `True`, verl 0.8+ setdefault; injected by this tool."""

    attention_backend: Optional[Literal['flash', 'fused', 'unfused', 'local', 'auto']] = None
    """Megatron attention backend name; verl maps it to megatron's AttnBackend. Feeds TransformerConfig.attention_backend. Default: `'flash'`, verl's engine/megatron.yaml."""

    use_fused_rmsnorm: Optional[bool] = None
    """Fused RMSNorm kernel. Feeds MindSpeed --use-fused-rmsnorm. Default: unset."""

    normalization: Optional[Literal['LayerNorm', 'RMSNorm']] = None
    """Normalization layer type. Feeds TransformerConfig.normalization. Default: derived from the HF model by verl's bridge."""

    use_fused_swiglu: Optional[bool] = None
    """Fused SwiGLU kernel. Feeds MindSpeed --use-fused-swiglu. Default: unset."""

    swiglu: Optional[bool] = None
    """Gated linear unit with SiLU (what MindSpeed's SwiGLU patch looks for). Feeds megatron --swiglu. Default: unset."""

    bias_activation_fusion: Optional[bool] = None
    """Megatron's fused bias+activation path: the MLP calls the SwiGLU functions MindSpeed's fused kernel replaces only when it is True. Feeds megatron TransformerConfig.bias_activation_fusion. Default: unset."""

    use_fused_moe_token_permute_and_unpermute: Optional[bool] = None
    """Fused MoE token permute/unpermute. Feeds MindSpeed --use-fused-moe-token-permute-and-unpermute. Default: unset."""

    moe_permute_fusion: Optional[bool] = None
    """Megatron's permute-fusion switch, kept equal to the MindSpeed flag. Feeds TransformerConfig.moe_permute_fusion. Default: unset."""

    moe_grouped_gemm: Optional[bool] = None
    """Grouped GEMM for the local experts. Feeds TransformerConfig.moe_grouped_gemm. Default: unset."""

    use_ascend_mc2: Optional[bool] = None
    """MC2 fused matmul-communication kernels. Feeds MindSpeed --use-ascend-mc2. Default: unset."""

    use_fused_rotary_pos_emb: Optional[bool] = None
    """Fused rotary position embedding. Feeds MindSpeed --use-fused-rotary-pos-emb. Default: unset."""

    position_embedding_type: Optional[Literal['learned_absolute', 'rope', 'yarn', 'mrope', 'relative', 'none']] = None
    """Position embedding type. Feeds megatron --position-embedding-type. Default: derived from the HF model by verl's bridge."""

    context_parallel_algo: Optional[Literal['megatron_cp_algo', 'ulysses_cp_algo', 'hybrid_cp_algo', 'kvallgather_cp_algo', 'adaptive_cp_algo', 'hybrid_adaptive_cp_algo']] = None
    """Context-parallel algorithm; kvallgather_cp_algo needs MindSpeed 26.0.0 or later. Feeds MindSpeed --context-parallel-algo. Default: `'megatron_cp_algo'`, MindSpeed."""

    ulysses_degree_in_cp: Optional[Annotated[int, Field(ge=1)]] = None
    """Ulysses degree inside the CP group for hybrid_cp_algo. Feeds MindSpeed --ulysses-degree-in-cp. Default: unset."""

    cp_window_size: Optional[Annotated[int, Field(ge=1)]] = None
    """Ring attention window for megatron_cp_algo; in [1, CP) and a divisor of CP. Feeds MindSpeed --cp-window-size. Default: `1`."""


@schema
@dataclass(kw_only=True, config=STRICT)
class MegatronSettings(SchemaBase):
    """Keys directly under ``<role>.megatron``."""

    tensor_model_parallel_size: Optional[Annotated[int, Field(ge=1)]] = None
    """Number of devices each layer's matrices are split across. Feeds megatron --tensor-model-parallel-size. Default: `1`, verl's engine/megatron.yaml."""

    pipeline_model_parallel_size: Optional[Annotated[int, Field(ge=1)]] = None
    """Number of pipeline stages. Feeds megatron --pipeline-model-parallel-size. Default: `1`, verl's engine/megatron.yaml."""

    virtual_pipeline_model_parallel_size: Optional[Annotated[int, Field(ge=1)]] = None
    """Model chunks per pipeline stage (interleaved schedule); null = off. Feeds megatron --virtual-pipeline-model-parallel-size. Default: verl's engine/megatron.yaml."""

    expert_model_parallel_size: Optional[Annotated[int, Field(ge=1)]] = None
    """Number of devices the experts are spread across. Feeds megatron --expert-model-parallel-size. Default: `1`, verl's engine/megatron.yaml."""

    expert_tensor_parallel_size: Optional[Annotated[int, Field(ge=1)]] = None
    """Tensor-parallel size inside each expert; null = TP. Feeds megatron --expert-tensor-parallel-size. Default: null: megatron uses TP."""

    use_distributed_optimizer: Optional[bool] = None
    """verl's switch for Megatron's distributed optimizer. Feeds megatron OptimizerConfig.use_distributed_optimizer. Default: `True`, verl's engine/megatron.yaml."""

    context_parallel_size: Optional[Annotated[int, Field(ge=1)]] = None
    """Number of devices one sequence is split across (verl's process groups). Feeds megatron --context-parallel-size. Default: `1`, verl's engine/megatron.yaml."""

    use_mbridge: Optional[bool] = None
    """Build the Megatron model through a bridge from the HF config and weights. Feeds verl McoreEngineConfig.use_mbridge. Default: `True`, verl's engine/megatron.yaml (0.9)."""


@schema
@dataclass(kw_only=True, config=STRICT)
class MindSpeedConfigFields(MegatronSettings):
    """A role's ``megatron`` section: its settings and its ``override_transformer_config``."""

    override_transformer_config: TransformerOverrides = field(default_factory=TransformerOverrides)
    """MindSpeed and Megatron keys verl hands to MindSpeed's ``repatch`` and to ``TransformerConfig``."""
