"""Did-you-mean: precision and recall on tables of realistic typos, value fixes, the matcher's tiers.

``TUNED`` is the table the synonyms and spelling variants of ``resolver/_suggest.py`` were written against;
``HELD_OUT`` was written afterwards and never tuned on, so its figures say how the matcher does on typos it
has not seen. Precision: suggestions that name the intended key / suggestions made. Recall: intended keys
suggested / entries that have one. An entry whose intended key is None must get no suggestion (any
suggestion there is a wrong one: it points at another feature).
"""

from __future__ import annotations

import pytest

from verl_mindspeed.catalog import flags, universe
from verl_mindspeed.resolver._suggest import fix_value, nearest, synonyms, value_fix, words

TUNED = [
    # fused attention
    ("use_flash_atn", "use_flash_attn"), ("use_flash_attention", "use_flash_attn"), ("flash_attn", "use_flash_attn"),
    ("use_fa", "use_flash_attn"), ("use_flashattn", "use_flash_attn"), ("enable_flash_attn", "use_flash_attn"),
    ("Use_Flash_Attn", "use_flash_attn"), ("use_flash_attn_", "use_flash_attn"),
    ("attention_backed", "attention_backend"),
    # rmsnorm / swiglu / rope
    ("use_fused_rmsnrom", "use_fused_rmsnorm"), ("use_fused_rms_norm", "use_fused_rmsnorm"),
    ("fused_rmsnorm", "use_fused_rmsnorm"),
    ("use_fusd_rmsnorm", "use_fused_rmsnorm"), ("normalisation", "normalization"),
    ("use_fused_swiglue", "use_fused_swiglu"), ("fused_swiglu", "use_fused_swiglu"),
    ("use_fused_silu", "use_fused_swiglu"),
    ("use_fused_rope", "use_fused_rotary_pos_emb"), ("fused_rope", "use_fused_rotary_pos_emb"),
    ("use_fused_rotary_pos_embed", "use_fused_rotary_pos_emb"), ("use_fused_rotary_emb", "use_fused_rotary_pos_emb"),
    ("position_embeding_type", "position_embedding_type"), ("rope_fusion", "use_fused_rotary_pos_emb"),
    # MoE
    ("use_fused_permute_unpermute", "use_fused_moe_token_permute_and_unpermute"),
    ("use_fused_moe_token_permute_unpermute", "use_fused_moe_token_permute_and_unpermute"),
    ("use_fused_permute", "use_fused_moe_token_permute_and_unpermute"), ("moe_permute_fussion", "moe_permute_fusion"),
    ("moe_grouped_gem", "moe_grouped_gemm"), ("grouped_gemm", "moe_grouped_gemm"),
    ("use_grouped_gemm", "moe_grouped_gemm"),
    ("moe_token_dispatcher", "moe_token_dispatcher_type"), ("moe_token_dispacher_type", "moe_token_dispatcher_type"),
    ("moe_alltoall_overlap_com", "moe_alltoall_overlap_comm"),
    ("moe_permutation_async_communication", "moe_permutation_async_comm"),
    ("moe_tp_extend_ep_", "moe_tp_extend_ep"),
    # MC2
    ("use_ascend_mc", "use_ascend_mc2"), ("use_mc2", "use_ascend_mc2"), ("mc2", "use_ascend_mc2"),
    ("ascend_mc2", "use_ascend_mc2"),
    # parallelism / CP
    ("sequence_paralel", "sequence_parallel"), ("sequence_parallelism", "sequence_parallel"),
    ("context_parallel_algorithm", "context_parallel_algo"), ("cp_algo", "context_parallel_algo"),
    ("context_parallel_algo_", "context_parallel_algo"), ("cp_window", "cp_window_size"),
    ("cp_windows_size", "cp_window_size"),
    ("ulysses_degree_in_context_parallel", "ulysses_degree_in_cp"), ("ulyses_degree_in_cp", "ulysses_degree_in_cp"),
    ("num_layers_in_first_pipeline_stages", "num_layers_in_first_pipeline_stage"),
    ("num_layer_in_last_pipeline_stage", "num_layers_in_last_pipeline_stage"),
    # memory
    ("swap_optimiser", "swap_optimizer"), ("swap_optim", "swap_optimizer"), ("use_swap_optimizer", "swap_optimizer"),
    ("use_distributed_optimiser", "use_distributed_optimizer"), ("use_dist_optimizer", "use_distributed_optimizer"),
    ("distributed_optimizer", "use_distributed_optimizer"),
    ("recompute_granularty", "recompute_granularity"), ("recompute_methd", "recompute_method"),
    ("recompute_num_layer", "recompute_num_layers"), ("recompute_layers", "recompute_num_layers"),
    ("recompute_module", "recompute_modules"), ("noop_layer", "noop_layers"), ("no_op_layers", "noop_layers"),
    # MLA
    ("multi_latent_attn", "multi_latent_attention"), ("multi_head_latent_attn", "multi_head_latent_attention"),
    ("kv_lora_rnk", "kv_lora_rank"), ("qk_rope_head_dimm", "qk_rope_head_dim"), ("v_head_dims", "v_head_dim"),
    ("qk_nope_dim", "qk_nope_head_dim"),
    # nothing fits: a suggestion would point at another feature
    ("use_npu_graph", None), ("enable_turbo_kernels", None), ("my_custom_flag", None), ("use_fast_tokenizer", None),
    ("fused_adam_w", None), ("use_fused_gelu", None), ("enable_profiling", None), ("activation_offload_ratio", None),
]

HELD_OUT = [
    ("use_flsh_attn", "use_flash_attn"), ("useflash_attn", "use_flash_attn"), ("use_flash_attn_v2", None),
    ("flash_attention", "use_flash_attn"), ("use_fused_rms_norm_", "use_fused_rmsnorm"),
    ("fused_rms_norm", "use_fused_rmsnorm"),
    ("use_fused_swig_lu", "use_fused_swiglu"), ("swi_glu", "swiglu"),
    ("use_fused_rotary_position_embedding", "use_fused_rotary_pos_emb"),
    ("position_embedding", "position_embedding_type"), ("moe_grouped_gemms", "moe_grouped_gemm"),
    ("moe_token_dispatch_type", "moe_token_dispatcher_type"), ("moe_alltoall_overlap", "moe_alltoall_overlap_comm"),
    ("moe_tp_extended_ep", "moe_tp_extend_ep"), ("use_ascend_mc_2", "use_ascend_mc2"),
    ("sequence_parallel_", "sequence_parallel"),
    ("seq_parallel", "sequence_parallel"), ("context_parallel_algo_type", "context_parallel_algo"),
    ("cp_windowsize", "cp_window_size"), ("ulysses_degree", "ulysses_degree_in_cp"),
    ("swap_optimzer", "swap_optimizer"),
    ("swap_optimizer_time", "swap_optimizer_times"), ("use_distributed_optimzer", "use_distributed_optimizer"),
    ("recompute_granularity_", "recompute_granularity"), ("recomputation_method", "recompute_method"),
    ("recompute_num_layes", "recompute_num_layers"), ("noop_layer_ids", None),
    ("multi_latent_attention_", "multi_latent_attention"),
    ("q_lora_rnak", "q_lora_rank"), ("qk_rope_dim", "qk_rope_head_dim"), ("v_head_dimension", "v_head_dim"),
    ("use_fused_gelu_kernel", None), ("enable_graph_mode", None), ("npu_deterministic_mode", None),
]



def _score(table):
    known = universe.known_otc_keys()
    preferred = [f.name for f in flags("otc")]
    made = correct = 0
    misses = []
    for typed, meant in table:
        assert typed not in known, f"{typed} is a real key, not a typo"
        got = nearest(typed, known, preferred)
        made += got is not None
        correct += got is not None and got == meant
        if got != meant:
            misses.append((typed, meant, got))
    expected = sum(1 for _, meant in table if meant)
    return correct / max(made, 1), correct / expected, misses


@pytest.mark.parametrize("name, table, floor_precision, floor_recall", [
    ("tuned", TUNED, 0.97, 0.95),
    ("held-out", HELD_OUT, 0.9, 0.75),
])
def test_precision_and_recall(name, table, floor_precision, floor_recall, capsys):
    precision, recall, misses = _score(table)
    with capsys.disabled():
        print(f"\ndid-you-mean on {len(table)} {name} typos: precision {precision:.2f}, recall {recall:.2f}")
        for typed, meant, got in misses:
            print(f"    {typed!r}: meant {meant!r}, suggested {got!r}")
    assert precision >= floor_precision and recall >= floor_recall
    assert not [m for m in misses if m[2] is not None], "a wrong suggestion is worse than none"


def test_tables_are_large_enough():
    assert len(TUNED) >= 60 and len(HELD_OUT) >= 30


def test_the_four_keys_that_used_to_get_only_a_warning_or_a_wrong_hint():
    known, preferred = universe.known_otc_keys(), [f.name for f in flags("otc")]
    assert nearest("flash_attn", known, preferred) == "use_flash_attn"
    assert nearest("use_fused_rope", known, preferred) == "use_fused_rotary_pos_emb"
    assert nearest("context_parallel_algorithm", known, preferred) == "context_parallel_algo"
    assert nearest("use_fa", known, preferred) == "use_flash_attn"  # not use_ema


def test_synonyms_live_on_the_catalogue_flags():
    table = synonyms()
    assert table["use_fa"] == "use_flash_attn" and table["fused_rope"] == "use_fused_rotary_pos_emb"
    assert table["fused_permute_and_unpermute"] == "use_fused_moe_token_permute_and_unpermute"  # aliases too
    for name in table.values():
        assert name in {f.name for f in flags()}


def test_words_even_out_spelling_variants():
    assert words("use_dist_optimiser") == words("use_distributed_optimizer") == ("distributed", "optimizer")
    assert words("context_parallel_algorithm") == ("cp", "algo")


def test_a_tie_across_features_gives_no_suggestion():
    # one edit from each, equally similar, and not the same feature: no guess
    assert nearest("abcd_e", ["abcd_f", "abcd_g"]) is None
    assert nearest("recompute_x", ["recompute_a", "recompute_b"]) is None
    assert nearest("use_flash_atn", ["use_flash_attn", "attention_backend"]) == "use_flash_attn"


@pytest.mark.parametrize("raw, kind, choices, fixed", [
    ("yes", "bool", (), "True"), ("no", "bool", (), "False"), ("1", "bool", (), "True"), ("0", "bool", (), "False"),
    ("on", "bool", (), "True"), ("Ture", "bool", (), "True"), ("flase", "bool", (), "False"),
    ("fulll", "str", ("full", "selective"), "full"), ("selectve", "str", ("full", "selective"), "selective"),
    ("unifrom", "str", ("uniform", "block"), "uniform"), ("alltoal", "str", ("allgather", "alltoall"), "alltoall"),
    ("megatron_cp_algorithm", "str", ("ulysses_cp_algo", "megatron_cp_algo"), "megatron_cp_algo"),
    ("2.0", "int", (), "2"), ("banana", "bool", (), None), ("yess", "bool", (), "True"), ("fals", "bool", (), "False"),
    ("full", "str", ("full", "selective"), None),
])
def test_value_fixes(raw, kind, choices, fixed):
    assert fix_value(raw, kind, choices) == fixed


def test_value_fix_keeps_the_users_prefix():
    key = "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity"
    assert value_fix(key, [f"++{key}=fulll"]) == f"++{key}=full"
    flash = "actor_rollout_ref.actor.megatron.override_transformer_config.use_flash_attn"
    assert value_fix(flash, [f"+{flash}=yes"]) == f"+{flash}=True"
