"""The Chinese message catalogue: English template -> Chinese template (same ``{placeholders}``).

Keep it complete: ``tests/core/test_i18n.py`` fails when a template passed to ``tr`` has no entry,
when an entry's placeholders differ from the English ones, or when an entry is no longer used.
"""

MESSAGES: dict[str, str] = {
    # -- eras ----------------------------------------------------------------------------------------------------
    "verl 0.6.0 to 0.7.x": "verl 0.6.0 至 0.7.x",
    "verl 0.7.x with trainer.use_legacy_worker_impl=disable": "verl 0.7.x（trainer.use_legacy_worker_impl=disable）",
    "verl 0.8.0 and later": "verl 0.8.0 及以后",
    # -- runtime guard (integrations/guard.py, guard_checks.py) -----------------------------------------------
    "{role} asked for {asked} but the process groups were already built with {live} before any "
    "verl engine of this process; verl builds them once per process":
        "{role} 要求 {asked}，但本进程在任何 verl 引擎构建之前就已按 {live} 建好了进程组；verl 每个进程只建一次进程组",
    "{role} asked for {asked} but megatron built the process groups with {live}":
        "{role} 要求 {asked}，但 megatron 按 {live} 建好了进程组",
    "{role} asked for {asked} but the process groups were built with {live} by the {owner}, which was "
    "built first (verl builds them once per process): set {fix}":
        "{role} 要求 {asked}，但进程组已由先构建的 {owner} 按 {live} 建好（verl 每个进程只建一次进程组）：请设置 {fix}",
    "{role}: after its repatch MindSpeed's namespace holds {found}, but verl handed MindSpeed {asked}":
        "{role}：repatch 之后 MindSpeed 的命名空间中为 {found}，但 verl 传给 MindSpeed 的是 {asked}",
    "the {earlier} asked for {asked}, but the {role}'s repatch set {now} for the whole "
    "process (MindSpeed's patches are process-wide; the last build wins)":
        "{earlier} 要求 {asked}，但 {role} 的 repatch 为整个进程设置了 {now}（MindSpeed 的补丁作用于整个进程，"
        "以最后构建的角色为准）",
    "{role} runs with {keys} although its dict does not set them: an earlier build's repatch set "
    "them and MindSpeed's namespace keeps them":
        "{role} 的字典未设置 {keys}，却带着它们运行：它们由更早构建的角色的 repatch 设置，并保留在 MindSpeed 的命名空间中",
    "{role} runs with the layout it asked for ({sizes})": "{role} 按其要求的并行布局运行（{sizes}）",
    "{env} is set but the guard could not be installed: {error}": "已设置 {env}，但无法安装运行时守卫：{error}",
    # -- resolver ------------------------------------------------------------------------------------------------
    "strategy={strategy}: the Megatron/MindSpeed settings {keys} have no effect":
        "strategy={strategy}：Megatron/MindSpeed 设置 {keys} 不会生效",
    "set {key}=megatron (or use the megatron trainer config)": "设置 {key}=megatron（或使用 megatron 训练配置）",
    "+mindspeed={value} added a plain key instead of loading a preset":
        "+mindspeed={value} 只添加了一个普通键，没有加载预设",
    "the mindspeed preset group is not on Hydra's search path: install verl-mindspeed in the Python that runs verl, "
    "or check the preset name with 'verl-mindspeed presets'":
        "mindspeed 预设组不在 Hydra 的搜索路径中：请在运行 verl 的 Python 环境中安装 verl-mindspeed，"
        "或用 'verl-mindspeed presets' 核对预设名",
    "write True or False (Hydra reads yes/no/1/0 as strings or numbers)":
        "请写 True 或 False（Hydra 会把 yes/no/1/0 读成字符串或数字）",
    "{name} {problem}": "{name} {problem}",
    "must be one of {choices}; got {value}": "必须是 {choices} 之一；实际为 {value}",
    "must be one of {choices}; got {value}; did you mean {near}?": "必须是 {choices} 之一；实际为 {value}；是否想写 {near}？",
    "must be an integer, got {value}": "必须是整数，实际为 {value}",
    "must be a number, got {value}": "必须是数字，实际为 {value}",
    "must not be null": "不能为 null",
    "must be True or False, got {value}": "必须是 True 或 False，实际为 {value}",
    "must be an integer >= {minimum}, got {value}": "必须是 >= {minimum} 的整数，实际为 {value}",
    "must be a string, got {value}": "必须是字符串，实际为 {value}",
    "must be a list such as [core_attn], got {value}": "必须是列表，例如 [core_attn]，实际为 {value}",
    "must hold strings": "必须由字符串组成",
    "entry {item} {problem}": "元素 {item} {problem}",
    # -- injection -----------------------------------------------------------------------------------------------
    "added {key}={value}: {why}": "已添加 {key}={value}：{why}",
    "MindSpeed registers its attention patch only when it is on (verl 0.8+ sets the same default)":
        "只有开启时 MindSpeed 才注册注意力补丁（verl 0.8+ 也设置同样的默认值）",
    "MindSpeed's CP patches read the size from the dict": "MindSpeed 的 CP 补丁从字典中读取大小",
    "MindSpeed's MC2 patch reads TP from the dict": "MindSpeed 的 MC2 补丁从字典中读取 TP",
    "MindSpeed's MC2 patch reads SP from the dict": "MindSpeed 的 MC2 补丁从字典中读取 SP",
    "MindSpeed's swap-optimizer check reads it from the dict": "MindSpeed 的 swap-optimizer 检查从字典中读取它",
    "MindSpeed applies its MoE overlap and dispatcher-specific permute patches only when the dispatcher is in the dict":
        "只有字典中带有 dispatcher 时 MindSpeed 才应用 MoE 通信掩盖补丁及与 dispatcher 相关的 permute 补丁",
    "Megatron-Bridge turns permute fusion on for this MoE model; MindSpeed registers its NPU permute only when the "
    "switch is in the dict":
        "Megatron-Bridge 会为该 MoE 模型开启 permute 融合；只有字典中带有该开关时 MindSpeed 才注册 NPU permute",
    "fused permute/unpermute is only partly applied: MindSpeed registers its alltoall-dispatcher patches only when "
    "moe_token_dispatcher_type is in override_transformer_config":
        "融合 permute/unpermute 只生效了一部分：只有 override_transformer_config 中带有 moe_token_dispatcher_type 时 "
        "MindSpeed 才注册 alltoall dispatcher 的补丁",
    "Megatron-Bridge turns moe_permute_fusion on for this MoE model, but MindSpeed registers its NPU permute/unpermute "
    "only when the switch is in override_transformer_config; set it there, True or False":
        "Megatron-Bridge 会为该 MoE 模型开启 moe_permute_fusion，但只有 override_transformer_config 中带有该开关时 "
        "MindSpeed 才注册 NPU permute/unpermute；请在那里明确设置 True 或 False",
    "MindSpeed's tp-extend-ep check reads num_experts from the dict; taken from the model's config.json":
        "MindSpeed 的 tp-extend-ep 检查从字典中读取 num_experts；取自模型的 config.json",
    "MindSpeed's fused RoPE check reads it, and this model bridge does not set it":
        "MindSpeed 的融合 RoPE 检查会读取它，而当前模型 bridge 不会设置它",
    "MindSpeed's MLA needs the dimension in the dict; taken from the model's config.json":
        "MindSpeed 的 MLA 需要字典中的维度；取自模型的 config.json",
    "{role} gets the MindSpeed switches {keys} of the roles it shares a process with (process-wide patches)":
        "{role} 获得同进程其他角色的 MindSpeed 开关 {keys}（补丁作用于整个进程）",
    # -- normalization -------------------------------------------------------------------------------------------
    'must be layer indices such as "0,7", got {value}': '必须是层下标，例如 "0,7"，实际为 {value}',
    'is empty; remove the key or list layer indices such as "0,7"': '为空；请删除该键或列出层下标，例如 "0,7"',
    "holds {item}, not a layer index": "包含 {item}，它不是层下标",
    'holds {item}, not a layer index (digits only, such as "0,7")': '包含 {item}，它不是层下标（只能是数字，例如 "0,7"）',
    "noop_layers {problem}": "noop_layers {problem}",
    "noop_layers={value}: MindSpeed reads only a comma-separated digit string and silently ignores a list or an int, "
    "so no layer becomes a no-op layer":
        "noop_layers={value}：MindSpeed 只识别逗号分隔的数字字符串，会静默忽略列表或整数，因此不会有任何层成为空操作层",
    "noop_layers={value} rewritten as {text}: MindSpeed reads only a comma-separated digit string":
        "noop_layers={value} 已改写为 {text}：MindSpeed 只识别逗号分隔的数字字符串",
    "noop_layers={value}: MindSpeed converts only a comma-separated digit string without spaces and raises on this one":
        "noop_layers={value}：MindSpeed 只能转换不含空格的逗号分隔数字字符串，遇到这个值会报错",
    "recompute_granularity={value} requires null instead: megatron's TransformerConfig accepts only full, selective "
    "or null": "recompute_granularity={value} 应改为 null：megatron 的 TransformerConfig 只接受 full、selective 或 null",
    "{value} rewritten as null: megatron rejects the string and treats null as 'no recompute'":
        "{value} 已改写为 null：megatron 不接受该字符串，null 表示不重计算",
    "'{alias}'={a} and '{canonical}'={b} contradict each other": "'{alias}'={a} 与 '{canonical}'={b} 互相矛盾",
    "'{alias}' does not exist in MindSpeed; verl-mindspeed writes it as '{canonical}' (and megatron's '{twin}', "
    "which MindSpeed keeps equal)":
        "MindSpeed 中没有 '{alias}'；verl-mindspeed 会把它写成 '{canonical}'（以及 MindSpeed 保持一致的 megatron 开关 '{twin}'）",
    "unknown key '{alias}'; did you mean '{canonical}'? MindSpeed never reads '{alias}', so a plain verl launch runs "
    "without the fused operator":
        "未知键 '{alias}'；是否想写 '{canonical}'？MindSpeed 从不读取 '{alias}'，直接用 verl 启动时不会使用该融合算子",
    "quote it on the command line: '+...noop_layers=\"0,7\"'": "在命令行中加引号：'+...noop_layers=\"0,7\"'",
    "keep only {canonical}": "只保留 {canonical}",
    "the feature guide names a flag MindSpeed does not have": "特性指南写的是一个 MindSpeed 中不存在的开关",
    "{a}={va} and {b}={vb} disagree; MindSpeed turns both on": "{a}={va} 与 {b}={vb} 不一致；MindSpeed 会把两者都打开",
    # -- rules: attention ----------------------------------------------------------------------------------------
    "use_flash_attn=False": "use_flash_attn=False",
    "use_flash_attn is not in the dict verl passes to MindSpeed ({era} adds no default)":
        "verl 传给 MindSpeed 的字典中没有 use_flash_attn（{era} 不会添加默认值）",
    "{reason}: MindSpeed then never registers its fused attention patch (the guide: FA must be on)":
        "{reason}：MindSpeed 因此不会注册融合注意力补丁（指南：FA 必须开启）",
    "use_flash_attn=False is overridden: with context_parallel_size={cp} MindSpeed's CP algorithm turns flash attention "
    "on itself": "use_flash_attn=False 会被覆盖：context_parallel_size={cp} 时 MindSpeed 的 CP 算法会自行开启 flash attention",
    "context_parallel_algo={algo} has no effect: context_parallel_size is 1":
        "context_parallel_algo={algo} 不会生效：context_parallel_size 为 1",
    "set megatron.context_parallel_size > 1": "设置 megatron.context_parallel_size > 1",
    "context_parallel_algo={algo} requires MindSpeed 26.0.0 or later (checking against {release}, which has no code "
    "for it)": "context_parallel_algo={algo} 需要 MindSpeed 26.0.0 及以上（当前按 {release} 检查，该版本没有此算法）",
    "use megatron_cp_algo or ulysses_cp_algo, or check with --mindspeed-release of your cluster":
        "请使用 megatron_cp_algo 或 ulysses_cp_algo，或用 --mindspeed-release 指定集群上的版本再检查",
    "cp_window_size={window} requires a divisor of the ring size {ring} in [1, {ring}) "
    "(context_parallel_algo={algo})":
        "cp_window_size={window} 必须是环大小 {ring} 的因数且位于 [1, {ring})（context_parallel_algo={algo}）",
    "context_parallel_algo={algo} requires ulysses_degree_in_cp": "context_parallel_algo={algo} 需要设置 ulysses_degree_in_cp",
    "a divisor of context_parallel_size={cp}, smaller than it": "取 context_parallel_size={cp} 的一个小于它的因数",
    "context_parallel_algo={algo} requires context_parallel_size / ulysses_degree_in_cp to be an integer > 1 "
    "(got {cp} / {degree})":
        "context_parallel_algo={algo} 要求 context_parallel_size / ulysses_degree_in_cp 为大于 1 的整数（实际为 {cp} / {degree}）",
    "context_parallel_algo={algo} requires num_attention_heads divisible by ulysses_degree_in_cp x "
    "tensor_model_parallel_size = {degree} x {tp} = {size} (the model has {heads})":
        "context_parallel_algo={algo} 要求 num_attention_heads 能被 ulysses_degree_in_cp x tensor_model_parallel_size = "
        "{degree} x {tp} = {size} 整除（模型为 {heads}）",
    "context_parallel_algo={algo} requires seq_length in override_transformer_config: MindSpeed reads it unguarded "
    "and fails inside the worker without it":
        "context_parallel_algo={algo} 需要在 override_transformer_config 中设置 seq_length：MindSpeed 直接读取它，缺失时会在 worker 内报错",
    "the longest sequence: data.max_prompt_length + data.max_response_length, rounded up to a multiple of {cp}":
        "取最长序列长度：data.max_prompt_length + data.max_response_length，向上取整为 {cp} 的倍数",
    "context_parallel_algo={algo} requires seq_length divisible by {factor} (got {seq})":
        "context_parallel_algo={algo} 要求 seq_length 能被 {factor} 整除（实际为 {seq}）",
    "multi_head_latent_attention=True requires {keys} in override_transformer_config: MindSpeed's MLA reads them "
    "there, not from the model's config.json":
        "multi_head_latent_attention=True 需要在 override_transformer_config 中设置 {keys}：MindSpeed 的 MLA 从这里读取，而不是从模型的 config.json",
    "give the model's config.json (check --model-config PATH, or a local actor_rollout_ref.model.path) to get the "
    "values": "提供模型的 config.json（check --model-config PATH，或本地的 actor_rollout_ref.model.path）即可得到这些值",
    "use_fused_rotary_pos_emb=True requires position_embedding_type=rope in override_transformer_config: this model "
    "bridge does not set it, and MindSpeed's check fails with AttributeError":
        "use_fused_rotary_pos_emb=True 需要在 override_transformer_config 中设置 position_embedding_type=rope：当前模型 bridge "
        "不会设置它，MindSpeed 的检查会报 AttributeError",
    "use_fused_rotary_pos_emb=True requires position_embedding_type=rope (got {value})":
        "use_fused_rotary_pos_emb=True 要求 position_embedding_type=rope（实际为 {value}）",
    "{switch}=True requires {companion}={wanted} (got {value}); the fused kernel does not match this model":
        "{switch}=True 要求 {companion}={wanted}（实际为 {value}）；融合算子与该模型不匹配",
    # -- rules: memory -------------------------------------------------------------------------------------------
    "swap_optimizer=True requires megatron.use_distributed_optimizer=True":
        "swap_optimizer=True 需要 megatron.use_distributed_optimizer=True",
    "swap_optimizer=True requires use_distributed_optimizer=True in override_transformer_config: MindSpeed {release} "
    "checks the copy in the dict, and verl does not put megatron.use_distributed_optimizer there":
        "swap_optimizer=True 需要在 override_transformer_config 中设置 use_distributed_optimizer=True：MindSpeed {release} "
        "检查的是字典中的副本，而 verl 不会把 megatron.use_distributed_optimizer 放进去",
    "swap_optimizer=True and {other}={value} cannot be combined": "swap_optimizer=True 与 {other}={value} 不能同时使用",
    "drop {other} or swap_optimizer": "去掉 {other} 或 swap_optimizer",
    "noop_layers={text} requires every index in [0, num_layers={num_layers}); out of range: {bad}":
        "noop_layers={text} 的每个下标都必须在 [0, num_layers={num_layers}) 内；越界：{bad}",
    "num_layers counts the no-op layers too ({real} real + {noop} no-op = {total})":
        "num_layers 也包含空操作层（{real} 个真实层 + {noop} 个空操作层 = {total}）",
    "noop_layers and pipeline_model_parallel_layout cannot be combined": "noop_layers 与 pipeline_model_parallel_layout 不能同时使用",
    "recompute_granularity=full requires recompute_method=uniform or block":
        "recompute_granularity=full 需要 recompute_method=uniform 或 block",
    "recompute_granularity=full requires recompute_num_layers between 1 and the layers per pipeline rank":
        "recompute_granularity=full 需要 recompute_num_layers 在 1 与每个流水线阶段的层数之间",
    "recompute_granularity=selective requires recompute_num_layers=null (got {value})":
        "recompute_granularity=selective 要求 recompute_num_layers=null（实际为 {value}）",
    "{name}={value} has no effect: recompute_granularity is null": "{name}={value} 不会生效：recompute_granularity 为 null",
    "set recompute_granularity=full to recompute": "设置 recompute_granularity=full 才会重计算",
    "recompute_modules with moe_act requires moe_grouped_gemm=True": "recompute_modules 含 moe_act 时需要 moe_grouped_gemm=True",
    "recompute_modules with mla_up_proj requires multi_latent_attention=True":
        "recompute_modules 含 mla_up_proj 时需要 multi_latent_attention=True",
    "distribute_saved_activations=True and sequence_parallel=True cannot be combined":
        "distribute_saved_activations=True 与 sequence_parallel=True 不能同时使用",
    # -- rules: model --------------------------------------------------------------------------------------------
    "tensor_model_parallel_size={tp} requires num_attention_heads divisible by {tp} (the model has {heads})":
        "tensor_model_parallel_size={tp} 要求 num_attention_heads 能被 {tp} 整除（模型为 {heads}）",
    "tensor_model_parallel_size={tp} requires num_query_groups (num_key_value_heads) a multiple of {tp} (the model has "
    "{groups}; megatron-core 0.16 also accepts a divisor)":
        "tensor_model_parallel_size={tp} 要求 num_query_groups（num_key_value_heads）为 {tp} 的倍数（模型为 {groups}；megatron-core 0.16 也接受其因数）",
    "tensor_model_parallel_size={tp} requires num_query_groups (num_key_value_heads) to be a multiple or a divisor of "
    "{tp} (the model has {groups})":
        "tensor_model_parallel_size={tp} 要求 num_query_groups（num_key_value_heads）为 {tp} 的倍数或因数（模型为 {groups}）",
    "{name}={size} requires {ffn} divisible by {size} (the model has {width})":
        "{name}={size} 要求 {ffn} 能被 {size} 整除（模型为 {width}）",
    "choose a pipeline size of at most the layer count": "流水线并行大小不能超过层数",
    "pipeline_model_parallel_size={pp} requires the {total} layers to split evenly over {pp} stages, or "
    "num_layers_in_first_pipeline_stage/num_layers_in_last_pipeline_stage with an even middle":
        "pipeline_model_parallel_size={pp} 要求 {total} 层能均分到 {pp} 个阶段，或设置 num_layers_in_first_pipeline_stage/"
        "num_layers_in_last_pipeline_stage 使中间阶段均分",
    "{given} with pipeline_model_parallel_size={pp} require the remaining {middle} of {total} layers to split evenly "
    "over {stages} middle stage(s), at least one layer each":
        "{given} 且 pipeline_model_parallel_size={pp} 时，{total} 层中剩余的 {middle} 层必须均分到 {stages} 个中间阶段，每个至少一层",
    "virtual_pipeline_model_parallel_size={vpp} requires the layers of every pipeline stage ({counts}) divisible by "
    "{vpp}": "virtual_pipeline_model_parallel_size={vpp} 要求每个流水线阶段的层数（{counts}）都能被 {vpp} 整除",
    "recompute_method=uniform with recompute_num_layers={count} requires it to divide the layers of every pipeline "
    "stage and model chunk ({chunks}): megatron's uniform recompute then indexes past the chunk (IndexError)":
        "recompute_method=uniform 且 recompute_num_layers={count} 时，它必须整除每个流水线阶段和模型块的层数（{chunks}）："
        "否则 megatron 的 uniform 重计算会越界（IndexError）",
    "values that divide every chunk: {values}; or recompute_method=block": "能整除所有块的取值：{values}；或使用 recompute_method=block",
    "noop_layers={text} requires num_layers={wanted} in override_transformer_config (the model's {layers} layers plus "
    "the no-op layers){extra}":
        "noop_layers={text} 需要在 override_transformer_config 中设置 num_layers={wanted}（模型的 {layers} 层加上空操作层）{extra}",
    "; out of range now: {bad}": "；当前越界：{bad}",
    "without it MindSpeed replaces real layers of the checkpoint by no-op layers":
        "不设置时 MindSpeed 会用空操作层替换检查点中的真实层",
    "noop_layers={text} requires num_layers={wanted} (the model's {layers} layers plus {n} no-op), got {declared}":
        "noop_layers={text} 要求 num_layers={wanted}（模型的 {layers} 层加 {n} 个空操作层），实际为 {declared}",
    "expert_model_parallel_size={ep} requires a MoE model ({arch} has no experts)":
        "expert_model_parallel_size={ep} 需要 MoE 模型（{arch} 没有专家）",
    "expert_model_parallel_size={ep} requires num_experts divisible by {ep} (the model has {experts})":
        "expert_model_parallel_size={ep} 要求 num_experts 能被 {ep} 整除（模型为 {experts}）",
    "context_parallel_algo=ulysses_cp_algo requires num_attention_heads divisible by context_parallel_size x "
    "tensor_model_parallel_size = {cp} x {tp} = {size} (the model has {heads})":
        "context_parallel_algo=ulysses_cp_algo 要求 num_attention_heads 能被 context_parallel_size x tensor_model_parallel_size "
        "= {cp} x {tp} = {size} 整除（模型为 {heads}）",
    "{switch}=True and the model {arch} cannot be combined (it has no multi-head latent attention)":
        "{switch}=True 不能用于模型 {arch}（该模型没有 MLA）",
    "{name}={given} requires the model's value {name}={wanted}": "{name}={given} 必须等于模型的取值 {name}={wanted}",
    "data-parallel size {dp} = {world} devices / (TP x PP x CP = {tp} x {pp} x {cp})":
        "数据并行大小 {dp} = {world} 个设备 / (TP x PP x CP = {tp} x {pp} x {cp})",
    "data.train_batch_size x actor_rollout_ref.rollout.n = {train} x {n} = {total} requires a multiple of "
    "data-parallel size x actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu = {dp} x {micro} = {unit}":
        "data.train_batch_size x actor_rollout_ref.rollout.n = {train} x {n} = {total} 必须是 数据并行大小 x "
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu = {dp} x {micro} = {unit} 的倍数",
    "actor_rollout_ref.actor.ppo_mini_batch_size={mini} requires data.train_batch_size >= {mini} (got {train})":
        "actor_rollout_ref.actor.ppo_mini_batch_size={mini} 要求 data.train_batch_size >= {mini}（实际为 {train}）",
    "actor_rollout_ref.actor.ppo_mini_batch_size x actor_rollout_ref.rollout.n = {mini} x {n} = {total} requires a "
    "multiple of the actor's data-parallel size {dp}":
        "actor_rollout_ref.actor.ppo_mini_batch_size x actor_rollout_ref.rollout.n = {mini} x {n} = {total} 必须是 actor "
        "数据并行大小 {dp} 的倍数",
    # -- rules: MoE and MC2 --------------------------------------------------------------------------------------
    "fused permute/unpermute and moe_token_dispatcher_type=allgather cannot be combined":
        "融合 permute/unpermute 与 moe_token_dispatcher_type=allgather 不能同时使用",
    "fused permute/unpermute with moe_expert_capacity_factor requires moe_pad_expert_input_to_capacity=True":
        "融合 permute/unpermute 与 moe_expert_capacity_factor 同时使用时需要 moe_pad_expert_input_to_capacity=True",
    "moe_pad_expert_input_to_capacity=True requires moe_expert_capacity_factor":
        "moe_pad_expert_input_to_capacity=True 需要设置 moe_expert_capacity_factor",
    "moe_token_dispatcher_type=alltoall_seq requires expert_tensor_parallel_size equal to tensor_model_parallel_size "
    "(got {etp} and {tp})":
        "moe_token_dispatcher_type=alltoall_seq 要求 expert_tensor_parallel_size 等于 tensor_model_parallel_size（实际为 {etp} 和 {tp}）",
    "moe_permutation_async_comm=True has no effect on its own: it is a precondition of moe_tp_extend_ep, "
    "moe_alltoall_overlap_comm and moe_allgather_overlap_comm":
        "moe_permutation_async_comm=True 单独使用不会生效：它只是 moe_tp_extend_ep、moe_alltoall_overlap_comm 和 "
        "moe_allgather_overlap_comm 的前置条件",
    "with moe_token_dispatcher_type=alltoall, add e.g. moe_alltoall_overlap_comm=True (needs moe_grouped_gemm=True)":
        "在 moe_token_dispatcher_type=alltoall 下，可再加上 moe_alltoall_overlap_comm=True（需要 moe_grouped_gemm=True）",
    "{switch}=True has no effect: MindSpeed applies it only when moe_token_dispatcher_type is in "
    "override_transformer_config, and the model bridge sets the dispatcher elsewhere":
        "{switch}=True 不会生效：只有 override_transformer_config 中带有 moe_token_dispatcher_type 时 MindSpeed 才应用它，"
        "而模型 bridge 在别处设置 dispatcher",
    "moe_alltoall_overlap_comm=True requires moe_token_dispatcher_type=alltoall or alltoall_seq (got {value})":
        "moe_alltoall_overlap_comm=True 需要 moe_token_dispatcher_type=alltoall 或 alltoall_seq（实际为 {value}）",
    "moe_alltoall_overlap_comm=True requires expert_model_parallel_size > 1":
        "moe_alltoall_overlap_comm=True 需要 expert_model_parallel_size > 1",
    "moe_alltoall_overlap_comm=True requires moe_grouped_gemm=True": "moe_alltoall_overlap_comm=True 需要 moe_grouped_gemm=True",
    "moe_alltoall_overlap_comm=True with moe_token_dispatcher_type=alltoall and moe_tp_extend_ep=True cannot be "
    "combined (use alltoall_seq)":
        "moe_alltoall_overlap_comm=True、moe_token_dispatcher_type=alltoall 与 moe_tp_extend_ep=True 不能同时使用（请用 alltoall_seq）",
    "moe_alltoall_overlap_comm=True with moe_token_dispatcher_type=alltoall_seq requires moe_permutation_async_comm=True":
        "moe_alltoall_overlap_comm=True 且 moe_token_dispatcher_type=alltoall_seq 时需要 moe_permutation_async_comm=True",
    "moe_alltoall_overlap_comm=True with moe_token_dispatcher_type=alltoall_seq and tensor_model_parallel_size > 1 "
    "requires moe_tp_extend_ep=True":
        "moe_alltoall_overlap_comm=True、moe_token_dispatcher_type=alltoall_seq 且 tensor_model_parallel_size > 1 时需要 "
        "moe_tp_extend_ep=True",
    "moe_allgather_overlap_comm=True requires moe_token_dispatcher_type=allgather (got {value}, which the model bridge "
    "sets unless the dict says otherwise)":
        "moe_allgather_overlap_comm=True 需要 moe_token_dispatcher_type=allgather（实际为 {value}，除非字典另行指定，模型 bridge 会设置它）",
    "moe_token_dispatcher_type={value} requires moe_shared_expert_overlap=False (verl turns it on for this "
    "model): megatron-core allows the overlap only with alltoall":
        "moe_token_dispatcher_type={value} 需要 moe_shared_expert_overlap=False（verl 会为该模型开启它）："
        "megatron-core 只允许在 alltoall 下使用该重叠",
    "moe_allgather_overlap_comm=True requires moe_permutation_async_comm=True":
        "moe_allgather_overlap_comm=True 需要 moe_permutation_async_comm=True",
    "moe_allgather_overlap_comm=True requires moe_grouped_gemm=True": "moe_allgather_overlap_comm=True 需要 moe_grouped_gemm=True",
    "moe_tp_extend_ep=True requires num_experts in override_transformer_config: MindSpeed reads it there and fails "
    "with AttributeError without it":
        "moe_tp_extend_ep=True 需要在 override_transformer_config 中设置 num_experts：MindSpeed 从这里读取，缺失时报 AttributeError",
    "moe_tp_extend_ep=True requires num_experts divisible by tensor_model_parallel_size x expert_model_parallel_size = "
    "{size} (got {experts})":
        "moe_tp_extend_ep=True 要求 num_experts 能被 tensor_model_parallel_size x expert_model_parallel_size = {size} 整除（实际为 {experts}）",
    "moe_tp_extend_ep=True requires moe_permutation_async_comm=True": "moe_tp_extend_ep=True 需要 moe_permutation_async_comm=True",
    "moe_tp_extend_ep=True requires moe_grouped_gemm=True": "moe_tp_extend_ep=True 需要 moe_grouped_gemm=True",
    "moe_tp_extend_ep=True requires moe_expert_capacity_factor=null": "moe_tp_extend_ep=True 要求 moe_expert_capacity_factor=null",
    "use_ascend_mc2=True requires {keys} in override_transformer_config: MindSpeed's MC2 patch reads them there and "
    "fails with AttributeError without them":
        "use_ascend_mc2=True 需要在 override_transformer_config 中设置 {keys}：MindSpeed 的 MC2 补丁从这里读取，缺失时报 AttributeError",
    "use_ascend_mc2=True requires tensor_model_parallel_size > 1": "use_ascend_mc2=True 需要 tensor_model_parallel_size > 1",
    "use_ascend_mc2=True requires sequence_parallel=True": "use_ascend_mc2=True 需要 sequence_parallel=True",
    "use_ascend_mc2=True and {other}=True cannot be combined": "use_ascend_mc2=True 与 {other}=True 不能同时使用",
    "use_ascend_mc2=True on a MoE model: MindSpeed's documentation says MC2 is not for MoE models":
        "在 MoE 模型上使用 use_ascend_mc2=True：MindSpeed 文档说明 MC2 不适用于 MoE 模型",
    # -- rules: parallel -----------------------------------------------------------------------------------------
    "sequence_parallel=True requires tensor_model_parallel_size > 1 (got 1)":
        "sequence_parallel=True 需要 tensor_model_parallel_size > 1（实际为 1）",
    "megatron raises 'Can not use sequence parallelism without tensor parallelism'; raise TP or drop the key":
        "megatron 会报错 'Can not use sequence parallelism without tensor parallelism'；请增大 TP 或删除该键",
    "expert_model_parallel_size={ep} with tensor_model_parallel_size={tp} requires sequence_parallel=True":
        "expert_model_parallel_size={ep} 且 tensor_model_parallel_size={tp} 时需要 sequence_parallel=True",
    "tensor_model_parallel_size x pipeline_model_parallel_size x context_parallel_size = {tp} x {pp} x {cp} = {size} "
    "must divide the device count trainer.nnodes x trainer.n_gpus_per_node = {world}":
        "tensor_model_parallel_size x pipeline_model_parallel_size x context_parallel_size = {tp} x {pp} x {cp} = {size} "
        "必须整除设备数 trainer.nnodes x trainer.n_gpus_per_node = {world}",
    "change a parallel size or the number of devices": "请调整并行大小或设备数",
    "expert_tensor_parallel_size x expert_model_parallel_size x pipeline_model_parallel_size = {etp} x {ep} x {pp} = "
    "{size} must divide the device count {world}{assumed}":
        "expert_tensor_parallel_size x expert_model_parallel_size x pipeline_model_parallel_size = {etp} x {ep} x {pp} = "
        "{size} 必须整除设备数 {world}{assumed}",
    "use_mbridge=True and virtual_pipeline_model_parallel_size={vpp} cannot be combined on NPU":
        "在 NPU 上 use_mbridge=True 与 virtual_pipeline_model_parallel_size={vpp} 不能同时使用",
    "set the VPP size to null, or use_mbridge=False with a dist checkpoint":
        "将 VPP 大小设为 null，或使用 use_mbridge=False 加分布式检查点",
    "virtual_pipeline_model_parallel_size={vpp} requires pipeline_model_parallel_size > 1":
        "virtual_pipeline_model_parallel_size={vpp} 需要 pipeline_model_parallel_size > 1",
    "{key} requires pipeline_model_parallel_size > 1 (got 1)": "{key} 需要 pipeline_model_parallel_size > 1（实际为 1）",
    "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage together require "
    "pipeline_model_parallel_size > 2 (got 2)":
        "同时设置 num_layers_in_first_pipeline_stage 与 num_layers_in_last_pipeline_stage 时需要 pipeline_model_parallel_size > 2（实际为 2）",
    "megatron-core 0.12.1 divides the remaining layers by PP - 2 and fails at PP=2; set only one of them":
        "megatron-core 0.12.1 会用 PP - 2 去除剩余层数，PP=2 时出错；请只设置其中一个",
    # -- rules: roles --------------------------------------------------------------------------------------------
    "{role} would run with the parallel sizes of {owner} ({sizes}): in {era} the {owner} is built first and "
    "initializes Megatron's parallel state, and later roles reuse it without checking":
        "{role} 实际会使用 {owner} 的并行大小（{sizes}）：在 {era} 中 {owner} 最先构建并初始化 Megatron 的并行状态，"
        "之后的角色直接复用且不做检查",
    "verl never asserts that the roles agree; give every role the same sizes": "verl 从不检查各角色是否一致；请为所有角色设置相同的并行大小",
    "{role}'s parallel sizes are ignored ({sizes}): in {era} the actor's worker initializes Megatron's parallel state "
    "and {role} reuses it":
        "{role} 的并行大小会被忽略（{sizes}）：在 {era} 中由 actor 的 worker 初始化 Megatron 的并行状态，{role} 直接复用",
    "critic tensor_model_parallel_size={tp} disagrees with the actor's process groups (TP={actor_tp}); with "
    "vanilla_mbridge=False the critic's model is sized from its own config":
        "critic 的 tensor_model_parallel_size={tp} 与 actor 的进程组（TP={actor_tp}）不一致；vanilla_mbridge=False 时 critic "
        "按自己的配置构建模型",
    "{role} sets {key}={value}, which has no effect: in {era} MindSpeed only ever receives the actor's dict "
    "(actor: {actor_value})":
        "{role} 设置的 {key}={value} 不会生效：在 {era} 中 MindSpeed 只接收 actor 的字典（actor：{actor_value}）",
    "{role} sets {key}={value} but the actor sets {actor_value}; MindSpeed's repatch merges every build's dict into "
    "one process-wide namespace in the order {order}, so the last value wins for every role at run time":
        "{role} 设置 {key}={value}，而 actor 设置为 {actor_value}；MindSpeed 的 repatch 按 {order} 的顺序把每次构建的字典合并"
        "到同一个进程级命名空间，运行时所有角色都使用最后一次的值",
    "writing under ref's override_transformer_config replaced the dict ref inherits from the actor; ref lost: {keys}":
        "写入 ref 的 override_transformer_config 会替换 ref 从 actor 继承的字典；ref 丢失了：{keys}",
    "set them for ref too, or drop the ref line (ref inherits the actor's dict)":
        "请也为 ref 设置这些键，或删除 ref 的那一行（ref 会继承 actor 的字典）",
    "trainer.use_legacy_worker_impl=disable and a Megatron critic cannot be combined in verl 0.7 (init_workers raises "
    "NotImplementedError)":
        "在 verl 0.7 中 trainer.use_legacy_worker_impl=disable 与 Megatron critic 不能同时使用（init_workers 会抛出 NotImplementedError）",
    "MindSpeed {release} cannot build verl's model config: its TransformerConfig.__post_init__ wrapper calls "
    "megatron.training's get_args(), which verl never initializes (AssertionError: args is not initialized); it also "
    "has no repatch, so verl would ignore the switches {keys}":
        "MindSpeed {release} 无法构建 verl 的模型配置：它的 TransformerConfig.__post_init__ 包装会调用 megatron.training 的 "
        "get_args()，而 verl 从不初始化它（AssertionError: args is not initialized）；该版本也没有 repatch，verl 会忽略开关 {keys}",
    "use MindSpeed 2.2.0 or later": "请使用 MindSpeed 2.2.0 及以上版本",
    # --- verl-mindspeed plan and the model config reader ---
    "{arch}: {total:.2f}B parameters ({active:.2f}B active per token), {world} devices of {device:g} GiB "
    "({memory:.1f} usable: --headroom {headroom:g}), {tokens} tokens per micro-batch ({seq} x {micro}), "
    "MindSpeed {release}":
        "{arch}：参数 {total:.2f}B（每个 token 激活 {active:.2f}B），{world} 张卡，每卡 {device:g} GiB"
        "（可用 {memory:.1f}：--headroom {headroom:g}），每个微批 {tokens} 个 token（{seq} x {micro}），MindSpeed {release}",
    "{valid} valid layouts, {fit} fit ({seconds:.2f}s)": "有效布局 {valid} 个，放得下 {fit} 个（{seconds:.2f} 秒）",
    "memory bar: W {w}, G {g}, O {o}, R {r}, A {a}, L {l}, S {s}, . {rest}; | is the device limit":
        "显存条：W {w}，G {g}，O {o}，R {r}，A {a}，L {l}，S {s}，. {rest}；| 为单卡显存上限",
    "estimates, not measurements: see docs/model-checks.md for every term and its calibration":
        "以上为估算而非实测：各项公式与校准见 docs/model-checks.md",
    "{flag} must be a whole number >= {minimum} (got {value})": "{flag} 必须是 >= {minimum} 的整数（收到 {value}）",
    "{flag} must be at most {maximum} (got {value})": "{flag} 不能大于 {maximum}（收到 {value}）",
    "{flag} must be a number in {interval} (got {value})": "{flag} 必须是 {interval} 内的数（收到 {value}）",
    "{devices} devices: plan handles at most {maximum}": "{devices} 张卡：plan 最多处理 {maximum} 张",
    "the model has {layers} layers: plan handles at most {maximum}": "模型有 {layers} 层：plan 最多处理 {maximum} 层",
    "step time {relative:.2f}x the fastest (compute {compute}%, recompute {recompute}%, bubble {bubble}%, "
    "communication {comm}%: TP {tp}%, CP {cp}%, EP {ep}%, PP {pp}%, DP {dp}%); peak {peak:.1f} GiB on "
    "stage {stage} in the {phase} phase, {headroom:.1f} GiB left":
        "步时为最快布局的 {relative:.2f} 倍（计算 {compute}%，重计算 {recompute}%，流水线气泡 {bubble}%，"
        "通信 {comm}%：TP {tp}%，CP {cp}%，EP {ep}%，PP {pp}%，DP {dp}%）；峰值 {peak:.1f} GiB，"
        "出现在第 {stage} 级的 {phase} 阶段，余量 {headroom:.1f} GiB",
    "no layout passes the layout rules on this cluster": "此集群上没有布局满足布局规则",
    "ranked by peak memory per device; 'step' is the step-time proxy relative to the fastest fitting layout":
        "按单卡峰值显存排序；“步时”为相对最快可行布局的步时代理值",
    "ranked by a step-time proxy (compute, recompute, pipeline bubble, communication volume; not a "
    "measurement), then peak memory; 'step' is relative to the fastest fitting layout":
        "按步时代理值排序（计算、重计算、流水线气泡、通信量；并非实测），其次按峰值显存；“步时”相对最快可行布局",
    "nothing fits in {memory:g} GiB (lowest estimate {lowest:.1f} GiB), so no overrides are shown; more "
    "devices, --optimizer-offload-fraction, --ref-param-offload, --use-fused-kernels or a shorter "
    "--seq-len may help":
        "没有布局放得下 {memory:g} GiB（最低估算 {lowest:.1f} GiB），因此不给出覆盖参数；"
        "可尝试更多卡、--optimizer-offload-fraction、--ref-param-offload、--use-fused-kernels 或更短的 --seq-len",
    "{arch} on {world} devices: peak memory per device by layout": "{arch}，{world} 张卡：各布局的单卡峰值显存",
    "yes": "是",
    "no": "否",
    "CP algorithm": "CP 算法",
    "first/last": "首/末级层数",
    "recompute": "重计算",
    "GiB/device": "GiB/卡",
    "step": "步时",
    "fits": "放得下",
    "memory": "显存",
    "runtime, buffers, allocator slack": "运行时、通信缓冲、分配器余量",
    "chart written to {path}": "图已写入 {path}",
    "layout": "布局",
    "cannot write the chart: {error}": "无法写出图：{error}",
    "cannot plan this model: {error}": "无法为此模型规划：{error}",
    "weights": "权重",
    "gradients": "梯度",
    "optimizer states": "优化器状态",
    "ref weights": "ref 模型权重",
    "activations": "激活值",
    "logits": "logits",
    "optimizer step": "优化器更新临时量",
    "runtime": "运行时",
    "communication buffers": "通信缓冲区",
    "allocator slack": "分配器余量",
    "GiB per device": "每卡 GiB",
    "usable limit {gib:g} GiB": "单卡可用上限 {gib:g} GiB",
    "config.json: {key} is {value}; a whole number >= {minimum} is needed":
        "config.json：{key} 为 {value}；需要 >= {minimum} 的整数",
    "config.json: architectures must be a list such as [\"{name}\"], not a string":
        "config.json：architectures 必须是列表，例如 [\"{name}\"]，而不是字符串",
    "config.json: architectures must be a list of names, not {value}": "config.json：architectures 必须是名称列表，而不是 {value}",
    "config.json has no {key}; a whole number is needed": "config.json 缺少 {key}；需要一个整数",
    # -- memory estimate in check ------------------------------------------------------------------------------
    "estimated peak {peak:.1f} GiB per device for the actor's update ({seq} tokens x {micro} per micro-batch, "
    "{world} devices); the device has {limit:g} GiB":
        "actor 更新阶段估计每卡峰值 {peak:.1f} GiB（每个 micro-batch {seq} 个 token x {micro}，{world} 张卡）；每卡显存 {limit:g} GiB",
    "{text}: above 90% of it, the run may run out of memory": "{text}：超过显存的 90%，运行可能显存不足",
    "an estimate (docs/model-checks.md): verl-mindspeed plan --model ... lists layouts that fit":
        "这是估计值（见 docs/model-checks.md）：verl-mindspeed plan --model ... 会列出放得下的并行布局",
    # -- release choice -----------------------------------------------------------------------------------------
    "unknown MindSpeed release {release!r}; known: {known}": "未知的 MindSpeed 版本 {release!r}；已知版本：{known}",
    "checking against MindSpeed {release}, the release installed here ({seen})":
        "按本机安装的 MindSpeed {release} 检查（{seen}）",
    "{seen} is installed here but names no known release branch; checking against {release} (pass "
    "--mindspeed-release to choose)":
        "本机安装了 {seen}，但它不对应已知的发布分支；按 {release} 检查（可用 --mindspeed-release 指定）",
    # --- compose/: verl's tree, entries, launch files, Hydra errors ---
    "{name} needs a value": "{name} 需要一个值",
    "cannot parse override {text!r}: {error}": "无法解析覆盖项 {text!r}：{error}",
    "gave up after {n} failing overrides": "已有 {n} 个覆盖项失败，停止重试",
    "config dir {path}": "配置目录 {path}",
    "verl config directory not found: {path}": "找不到 verl 配置目录：{path}",
    "{path} does not exist here; checked against verl {version}'s {folder}":
        "{path} 在本机不存在；已改用 verl {version} 的 {folder} 检查",
    "--verl-config-dir and --verl-version choose the tree two ways; give one":
        "--verl-config-dir 与 --verl-version 都在指定配置树，只能给一个",
    "config name {name!r} not found in {folder}; available: {options}":
        "{folder} 中没有配置 {name!r}；可用：{options}",
    "verl is not installed in this Python; install it, pass --verl-version to check against a release from PyPI, "
    "or pass --verl-config-dir pointing at verl/trainer/config":
        "当前 Python 未安装 verl；请安装，或用 --verl-version 按 PyPI 上的某个版本检查，"
        "或用 --verl-config-dir 指向 verl/trainer/config",
    "Hydra could not compose the config: {error}": "Hydra 无法组合配置：{error}",
    " (recipes are not part of verl's wheel: check against a verl source checkout that has them)":
        "（recipe 不在 verl 的 wheel 中：请对照包含它们的 verl 源码检出检查）",
    "entry module {module} is not part of verl {version}{hint}; Megatron entries there: {known}":
        "入口模块 {module} 不属于 verl {version}{hint}；其中的 Megatron 入口：{known}",
    "{module} ({path}) declares no @hydra.main entry": "{module}（{path}）没有声明 @hydra.main 入口",
    "'{key}' is not in verl's config": "verl 的配置中没有 '{key}'",
    "available: {options}": "可用：{options}",
    "no config '{value}' in group '{group}'; did you mean '{near}'?":
        "配置组 '{group}' 中没有 '{value}'；是否想写 '{near}'？",
    "no config '{value}' in group '{group}'": "配置组 '{group}' 中没有 '{value}'",
    "{value} is a Hydra sweep (several runs), not one value": "{value} 是 Hydra 的多值扫描（会运行多次），不是单个值",
    "'{arg}' adds a second '{key}': the config already selects one": "'{arg}' 会再添加一个 '{key}'：配置已选择了一个",
    "'{key}' already exists, so '+' cannot add it": "'{key}' 已存在，不能用 '+' 添加",
    "'~{key}' removes a key that does not exist": "'~{key}' 删除的是一个不存在的键",
    "unknown key '{leaf}'; did you mean '{near}'?": "未知键 '{leaf}'；是否想写 '{near}'？",
    "Hydra: to append to your config use +key=value (check the spelling first: verl may reject it later)":
        "Hydra：向配置追加键请用 +key=value（请先核对拼写：verl 之后可能拒绝它）",
    "quote the value so that the shell hands Hydra one string (Hydra's advice: key='value1,value2')":
        "给值加引号，让 shell 把它作为一个字符串交给 Hydra（Hydra 的建议：key='value1,value2'）",
    "Hydra: write {key}=value to change a config group's selection": "Hydra：修改配置组的选择请写 {key}=value",
    "Hydra: use key=value to override an existing key, or ++key=value to add or override":
        "Hydra：覆盖已有键用 key=value，添加或覆盖用 ++key=value",
    "delete the argument '{arg}' instead": "请改为删除参数 '{arg}'",
    "'{leaf}' is not in verl's default override_transformer_config, so it needs '+'":
        "verl 默认的 override_transformer_config 中没有 '{leaf}'，因此需要 '+'",
    "Hydra: to append to your config use +key=value": "Hydra：向配置追加键请用 +key=value",
    "{path}: no 'python3 -m <module> ...' launch line found": "{path}：找不到 'python3 -m <模块> ...' 启动命令行",
    "${name} is not set (no value in the script or the environment, no default): the argument becomes '{arg}'":
        "${name} 未设置（脚本和环境中都没有值，也没有默认值）：参数变成了 '{arg}'",
    "set {name} in the environment or give it a default in the script: ${{{name}:-value}}":
        "请在环境中设置 {name}，或在脚本中给出默认值：${{{name}:-value}}",
    "{text} is not run by the check; the argument is checked as '{arg}'": "检查不会执行 {text}；按 '{arg}' 检查该参数",
    "cannot read {path}: {error}": "无法读取 {path}：{error}",
    "verl {version} is not in the cache ({cache}) and could not be downloaded from PyPI: {detail}":
        "缓存（{cache}）中没有 verl {version}，且无法从 PyPI 下载：{detail}",
    "cannot create the verl tree cache {path}: {error}": "无法创建 verl 配置树缓存 {path}：{error}",
    "verl {version}'s wheel has no verl/trainer/config": "verl {version} 的 wheel 中没有 verl/trainer/config",
    # --- resolver/_history.py: keys of other verl releases ---
    "verl's MindSpeed-LLM engine": "verl 的 MindSpeed-LLM 引擎",
    "delete the argument '{arg}' (a '~' removal fails too: the key does not exist)":
        "删除参数 '{arg}'（用 '~' 删除同样会失败：该键不存在）",
    "verl {version} has no '{key}'; verl {releases} have it": "verl {version} 没有 '{key}'；verl {releases} 有",
    "{drop}; or check and run with one of those releases (--verl-version)": "{drop}；或改用这些版本之一检查和运行（--verl-version）",
    "delete these arguments ({args}) and configure the engine this release has (model_engine=megatron keeps its "
    "settings under actor_rollout_ref.actor.megatron); or check and run with verl {last} (--verl-version {last})":
        "删除这些参数（{args}），改为配置本版本提供的引擎（model_engine=megatron 的设置位于 "
        "actor_rollout_ref.actor.megatron 下）；或改用 verl {last} 检查和运行（--verl-version {last}）",
    "'{label}' exists in verl {releases}, not in verl {version}": "'{label}' 存在于 verl {releases}，verl {version} 中没有",
    "verl {version} converts '{parent}' into {target}, which has no field '{leaf}': verl stops with TypeError "
    "(unexpected keyword argument) before training":
        "verl {version} 会把 '{parent}' 转换为 {target}，而它没有字段 '{leaf}'：训练开始前 verl 会因 "
        "TypeError（unexpected keyword argument）停止",
    "{n} arguments belong to the config {label} of the entry {entry} (verl {releases}), not to {config}":
        "{n} 个参数属于入口 {entry} 的配置 {label}（verl {releases}），不属于 {config}",
    "verl {version} has no '{key}': it exists in verl {releases} and was removed after {last}":
        "verl {version} 没有 '{key}'：它存在于 verl {releases}，在 {last} 之后被移除",
    "{drop}; or check and run with verl {last} (--verl-version {last})":
        "{drop}；或改用 verl {last} 检查和运行（--verl-version {last}）",
    "verl {version} has no '{key}': it was added in verl {first}": "verl {version} 没有 '{key}'：它在 verl {first} 中才加入",
    "{drop}; or check and run with verl {first} or later (--verl-version {first})":
        "{drop}；或改用 verl {first} 及以后的版本检查和运行（--verl-version {first}）",
    "verl {version} has '{key}' in {base}, not in the config checked ({config})":
        "verl {version} 的 {base} 中有 '{key}'，但所检查的配置（{config}）中没有",
    "{drop}; or compose the Megatron trainer config (--config-name={base})":
        "{drop}；或组合 Megatron 训练配置（--config-name={base}）",
    "'{key}' belongs to {about} ({label}), which exists in verl {releases}, not in verl {version}":
        "'{key}' 属于{about}（{label}），它存在于 verl {releases}，verl {version} 中没有",
    "'{key}' belongs to the config {label} of the entry {entry} (verl {releases}), not to {config}":
        "'{key}' 属于入口 {entry} 的配置 {label}（verl {releases}），不属于 {config}",
    "check with --entry {entry} --config-name={label}, or {drop}": "请用 --entry {entry} --config-name={label} 检查，或{drop}",
    "'{label}' ({about}) exists in verl {releases}, not in verl {version}; available: {options}":
        "'{label}'（{about}）存在于 verl {releases}，verl {version} 中没有；可用：{options}",
    "{n} arguments belong to {about} ({label}), which exists in verl {releases}, not in verl {version}":
        "{n} 个参数属于{about}（{label}），它存在于 verl {releases}，verl {version} 中没有",
    "verl {version} has no '{key}': it moved to '{target}' in verl {since}":
        "verl {version} 没有 '{key}'：它在 verl {since} 中移到了 '{target}'",
    " and {n} more": " 以及另外 {n} 个",
    "{drop}; or check and run with verl {release} (--verl-version {release})":
        "{drop}；或改用 verl {release} 检查和运行（--verl-version {release}）",
    "{message}; did you mean '{near}'?": "{message}；是否想写 '{near}'？",
    "{drop}; verl/utils/config.py omega_conf_to_dataclass instantiates {target} with every key of the section":
        "{drop}；verl/utils/config.py 的 omega_conf_to_dataclass 会用该段的每个键实例化 {target}",
    "check with --entry {entry} --config-name={label}": "请用 --entry {entry} --config-name={label} 检查",
    "verl {since} and later read it at the new place; for verl {last} and older keep the old key (check with "
    "--verl-version {last})":
        "verl {since} 及以后在新位置读取它；verl {last} 及更早版本请保留旧键（用 --verl-version {last} 检查）",
    "verl/utils/config.py omega_conf_to_dataclass instantiates {target} with every key of the section":
        "verl/utils/config.py 的 omega_conf_to_dataclass 会用该段的每个键实例化 {target}",
    "{n} arguments set keys under '{at}', but verl {version} converts '{parent}' into {target}, which has no field "
    "'{leaf}': verl stops with TypeError (unexpected keyword argument) before training":
        "{n} 个参数设置了 '{at}' 下的键，但 verl {version} 会把 '{parent}' 转换为 {target}，而它没有字段 '{leaf}'："
        "训练开始前 verl 会因 TypeError（unexpected keyword argument）停止",
    "delete these arguments ({args})": "删除这些参数（{args}）",
    # --- resolver/_keys.py: unknown keys ---
    "'{leaf}' is not a key of verl's '{parent}' section (verl does not read it); did you mean '{near}'?":
        "'{leaf}' 不是 verl 的 '{parent}' 段中的键（verl 不会读取它）；是否想写 '{near}'？",
    "unknown key '{name}'; did you mean '{near}'?": "未知键 '{name}'；是否想写 '{near}'？",
    "'{name}' is not a MindSpeed, Megatron-LM or TransformerConfig option; passed through as is":
        "'{name}' 不是 MindSpeed、Megatron-LM 或 TransformerConfig 的选项；按原样传递",
    "MindSpeed and Megatron would never read '{name}'": "MindSpeed 和 Megatron 都不会读取 '{name}'",
    "check the spelling, or ignore if a newer release added it": "请核对拼写；若是新版本加入的选项，可忽略",
    "verl fails when it turns this section into McoreEngineConfig": "verl 把这一段转换为 McoreEngineConfig 时会失败",
    "'{name}' belongs in override_transformer_config, not directly under megatron":
        "'{name}' 应放在 override_transformer_config 中，而不是直接放在 megatron 下",
    "'{name}' is not a setting of verl's megatron engine config": "'{name}' 不是 verl megatron 引擎配置的设置项",
    "write +{target}={value}": "请写 +{target}={value}",
    "verl fails when it turns this section into McoreEngineConfig; the key may belong to another verl version":
        "verl 把这一段转换为 McoreEngineConfig 时会失败；该键可能属于其他 verl 版本",
    "'{key}' belongs to {about}, which this launch does not select ({label})":
        "'{key}' 属于{about}，但本次启动没有选择它（{label}）",
    "add the argument {label}, or {drop}": "请添加参数 {label}，或{drop}",
    "{n} arguments belong to {about}, which this launch does not select ({label})":
        "{n} 个参数属于{about}，但本次启动没有选择它（{label}）",
    "add the argument {label}, or delete these arguments ({args})": "请添加参数 {label}，或删除这些参数（{args}）",
    # -- command line, report, launcher, schema (cli/, report.py, launch.py, integrations/, schema/) ---------
    "Pre-flight checks and normalization of MindSpeed options for verl on Ascend NPUs.":
        "在昇腾 NPU 上运行 verl 之前，检查并规范化 MindSpeed 配置项。",
    "print the version of verl-mindspeed and exit": "打印 verl-mindspeed 的版本后退出",
    "cannot evaluate this command: {reason}": "无法评估此命令：{reason}",
    "internal error: {error}; run again with VERL_MINDSPEED_DEBUG=1 for the traceback and report it":
        "内部错误：{error}；请设置 VERL_MINDSPEED_DEBUG=1 重新运行以查看调用栈，并报告此问题",
    "invalid value {value!r}; choose from {choices}": "无效的取值 {value!r}；可选：{choices}",
    "positional arguments": "位置参数",
    "options": "选项",
    "invalid value {value!r}; did you mean {near!r}? (choose from {choices})":
        "无效的取值 {value!r}；您是不是想用 {near!r}？（可选：{choices}）",
    "language of every message (default: from LC_ALL / LANG)": "所有输出信息的语言（默认取自 LC_ALL / LANG）",
    "python3 -m verl.trainer.main_ppo rejects this command line: {problem}":
        "python3 -m verl.trainer.main_ppo 会拒绝这条命令行：{problem}",
    "{arg}: verl's entry (Hydra) rejects an override that a flag separates from the other overrides ('unrecognized "
    "arguments'); keep the overrides together":
        "{arg}：此覆盖项与其他覆盖项之间隔着一个选项，verl 的入口（Hydra）会拒绝它（'unrecognized arguments'）"
        "；请把所有覆盖项写在一起",
    "show this help and exit": "显示此帮助后退出",
    "usage: ": "用法：",
    "unknown option {arg}; did you mean {near}?": "未知选项 {arg}；您是不是想用 {near}？",
    "unknown option {arg}: neither verl's entry (Hydra) nor this command accepts it":
        "未知选项 {arg}：verl 的入口（Hydra）和本命令都不接受它",
    "verl-mindspeed check: {n_err} error(s), {n_warn} warning(s)": "verl-mindspeed check：{n_err} 个错误，{n_warn} 个警告",
    "give the launch arguments (what follows 'python3 -m verl.trainer.main_ppo') or --args-file FILE":
        "请给出启动参数（即 'python3 -m verl.trainer.main_ppo' 之后的部分）或 --args-file FILE",
    "check the MindSpeed options of a verl launch command, before launching": "在启动之前检查 verl 启动命令中的 MindSpeed 配置项",
    "Give exactly the arguments that follow 'python3 -m verl.trainer.main_ppo'; the options of check may come "
    "anywhere. Exit 0: no errors; 1: the configuration has errors; 2: it could not be evaluated.":
        "给出 'python3 -m verl.trainer.main_ppo' 之后的全部参数；check 自身的选项可以放在任意位置。退出码 0：没"
        "有错误；1：配置有错误；2：无法评估。",
    "read the launch argv from a file: one argument per line ('#' comments), or a shell script whose 'python3 -m "
    "MODULE ...' line is the launch (MODULE sets --entry)":
        "从文件读取启动参数：每行一个参数（'#' 为注释），或一个 shell 脚本，其中 'python3 -m MODULE ...' 一行即"
        "启动命令（MODULE 即 --entry）",
    "the launch arguments (after an optional --)": "启动参数（可放在 -- 之后）",
    "print one JSON object (same as --format json)": "输出一个 JSON 对象（等同于 --format json）",
    "output: the text report, one JSON object, SARIF 2.1.0, or GitHub annotations":
        "输出格式：文本报告、一个 JSON 对象、SARIF 2.1.0 或 GitHub 注释",
    "exit 1 on errors (default), or on warnings too": "有错误时退出码为 1（默认），或有警告时也为 1",
    "unknown keys far from any known key are errors too": "与任何已知参数都相差较远的未知参数也视为错误",
    "verl's trainer/config directory (default: the installed verl's)": "verl 的 trainer/config 目录（默认：已安装的 verl 的目录）",
    "a HF config.json, or a directory holding one, for model-aware checks": "HF 的 config.json 或包含它的目录，用于模型相关的检查",
    "MindSpeed release to check against: a branch ({branches}) or its short name (26.1, 2.3); default: the "
    "installed MindSpeed's, else {release}":
        "用于检查的 MindSpeed 版本：分支名（{branches}）或其简称（26.1、2.3）；默认：已安装的 MindSpeed 的版本"
        "，否则为 {release}",
    "check against this verl release's config tree instead of the installed verl's (downloaded from PyPI once, then "
    "cached)":
        "按该 verl 版本的配置树检查，而不是已安装的 verl 的（从 PyPI 下载一次后缓存）",
    "the module the arguments are given to (default: verl.trainer.main_ppo), e.g. "
    "verl.experimental.fully_async_policy.fully_async_main":
        "接收这些参数的模块（默认：verl.trainer.main_ppo），例如 verl.experimental.fully_async_policy.fully_as"
        "ync_main",
    "the launch goes through 'verl-mindspeed run' / 'python3 -m verl_mindspeed.main_ppo', which injects the "
    "companions MindSpeed needs (a +mindspeed=<preset> says so by itself)":
        "启动经由 'verl-mindspeed run' / 'python3 -m verl_mindspeed.main_ppo'，它会注入 MindSpeed 需要的配套设"
        "置（带 +mindspeed=<preset> 时自动视为如此）",
    "memory of one device, for the estimated peak with a model config (default 64)": "单卡显存（GiB），用于有模型配置时估算峰值（默认 64）",
    "{value!r} is not a positive number": "{value!r} 不是正数",
    "{n} file(s) checked: {n_fail} with errors, {n_bad} not evaluated; {n_skip} skipped (no verl launch)":
        "已检查 {n} 个文件：{n_fail} 个有错误，{n_bad} 个无法评估；跳过 {n_skip} 个（不启动 verl）",
    "check launch files (*.args, launch *.sh scripts): for pre-commit and CI":
        "检查启动文件（*.args、启动用的 *.sh 脚本）：用于 pre-commit 和 CI",
    "Check each file as 'check --args-file FILE' would; files that launch no verl entry are skipped. Exit status: "
    "the worst of the files.":
        "按 'check --args-file FILE' 的方式检查每个文件；不启动 verl 入口的文件将被跳过。退出码取所有文件中最差"
        "的结果。",
    "launch files to check": "要检查的启动文件",
    "id": "标识",
    "name": "名称",
    "kind": "类型",
    "status": "状态",
    "keys": "配置参数",
    "feature": "特性",
    "fused operator": "融合算子",
    "Preview": "预览",
    "Released": "已发布",
    "Dev": "开发中",
    "list every MindSpeed feature and fused operator, with its keys": "列出所有 MindSpeed 特性和融合算子及其配置参数",
    "output format (default: table)": "输出格式（默认：table）",
    "and installs the verl-mindspeed Hydra callback (validation and injection before Ray starts).":
        "并安装 verl-mindspeed 的 Hydra 回调（在 Ray 启动前校验并注入）。",
    "list the +mindspeed=<name> presets, or show what one of them sets": "列出 +mindspeed=<name> 预设，或显示某个预设设置的内容",
    "a preset name (default: list them all)": "预设名称（默认：全部列出）",
    "print JSON": "输出 JSON",
    "no preset {name!r}; did you mean {near!r}? (available: {names})": "没有预设 {name!r}；您是不是想用 {near!r}？（可用：{names}）",
    "no preset {name!r} (available: {names})": "没有预设 {name!r}（可用：{names}）",
    "+mindspeed={name} sets:": "+mindspeed={name} 设置了：",
    "+mindspeed={name} sets no flag.": "+mindspeed={name} 不设置任何开关。",
    "use: {command}": "用法：{command}",
    "launch verl's main_ppo with these arguments, after validating and injecting them":
        "校验并注入这些参数之后，用它们启动 verl 的 main_ppo",
    "Same as 'python3 -m verl_mindspeed.main_ppo ARGV...': give exactly the arguments that follow 'python3 -m "
    "verl.trainer.main_ppo'; the options of run may come anywhere. Exits 1 before Ray starts when the MindSpeed "
    "configuration has errors. VERL_MINDSPEED_ENTRY=<module> runs another @hydra.main entry (a recipe) instead of "
    "verl.trainer.main_ppo.":
        "与 'python3 -m verl_mindspeed.main_ppo ARGV...' 相同：给出 'python3 -m verl.trainer.main_ppo' 之后的全"
        "部参数；run 自身的选项可以放在任意位置。MindSpeed 配置有错误时，在 Ray 启动前以退出码 1 结束。VERL_MI"
        "NDSPEED_ENTRY=<module> 运行另一个 @hydra.main 入口（例如某个 recipe），而不是 verl.trainer.main_ppo。",
    "read the launch argv from a file: one argument per line ('#' comments), or the 'python3 -m ...' line of a "
    "shell script":
        "从文件读取启动参数：每行一个参数（'#' 为注释），或 shell 脚本中的 'python3 -m ...' 一行",
    "{n} MindSpeed configuration error(s):": "{n} 个 MindSpeed 配置错误：",
    "{name}.main is not a @hydra.main entry; this verl is not supported by the launcher: use +mindspeed=validate "
    "with 'python3 -m {name}' instead":
        "{name}.main 不是 @hydra.main 入口；启动器不支持这个版本的 verl：请改用 'python3 -m {name}' 加 +mindsp"
        "eed=validate",
    "cannot import the entry {name}: {error}": "无法导入入口 {name}：{error}",
    "--multirun: the per-job configs are not checked; check each command with 'verl-mindspeed check ...'":
        "--multirun：不会检查每个作业的配置；请用 'verl-mindspeed check ...' 逐条检查命令",
    "{n} MindSpeed configuration error(s); stopping before Ray starts (fix the overrides above, or check again with "
    "'verl-mindspeed check ...')":
        "{n} 个 MindSpeed 配置错误；在 Ray 启动前停止（请修正上面的覆盖项，或用 'verl-mindspeed check ...' 再次"
        "检查）",
    "could not check this launch: {error}; stopping before Ray starts": "无法检查这次启动：{error}；在 Ray 启动前停止",
    "{key} does not resolve: {reason}": "{key} 无法解析：{reason}",
    "mlp_only_layers={value!r} in the model config is not a list of layer indices":
        "模型配置中的 mlp_only_layers={value!r} 不是层号列表",
    "--verl-config-dir {path} is not a directory": "--verl-config-dir {path} 不是目录",
    "set the variable, or write the value itself instead of the interpolation": "请设置该变量，或直接写出取值而不用插值",
    "{field}={value!r} in the model config is not an integer >= {least}": "模型配置中的 {field}={value!r} 不是 >= {least} 的整数",
    "{field}={value!r} in the model config is larger than {most}, beyond any real model":
        "模型配置中的 {field}={value!r} 大于 {most}，超出任何真实模型的规模",
    "cannot read {path}: {reason}": "无法读取 {path}：{reason}",
    "model-aware checks skipped: {reason}": "已跳过模型相关的检查：{reason}",
    "model-aware checks skipped: the model path {path} does not exist on this machine, nor in the Hugging Face "
    "cache (give its config.json with --model-config)":
        "已跳过模型相关的检查：模型路径 {path} 在本机上不存在，Hugging Face 缓存中也没有（可用 --model-config 指定它的 config.json）",
    "model-aware checks use {architecture} from {path}": "模型相关的检查使用 {path} 中的 {architecture}",
    "model-aware checks skipped: the model path does not resolve ({error})": "已跳过模型相关的检查：模型路径无法解析（{error}）",
    "Errors": "错误",
    "Warnings": "警告",
    "Notes": "提示",
    "hint": "说明",
    "fix": "修正",
    "on": "开",
    "off": "关",
    "OK": "通过",
    "FAILED": "未通过",
    "Injected into the dicts MindSpeed reads": "已写入 MindSpeed 读取的字典",
    "{n_err} error(s), {n_warn} warning(s); roles checked: {roles}": "{n_err} 个错误，{n_warn} 个警告；检查的角色：{roles}",
    "Preset mindspeed={name} sets:": "预设 mindspeed={name} 设置了：",
    "override_transformer_config must be a TransformerOverrides or a dict, got {type}":
        "override_transformer_config 必须是 TransformerOverrides 或 dict，实际为 {type}",
    "{name}={value!r}: {reason}": "{name}={value!r}：{reason}",
    "{name}={value!r}: must be an integer >= {minimum}": "{name}={value!r}：必须是 >= {minimum} 的整数",
    "{name}={value!r}: must be one of {choices}": "{name}={value!r}：必须是 {choices} 之一",
    "{name}={value!r}: must be True or False": "{name}={value!r}：必须是 True 或 False",
    "{name}={value!r}: must be an integer": "{name}={value!r}：必须是整数",
    "unknown field {name!r} of {cls}": "{cls} 没有字段 {name!r}",
    "{name!r} is not a field of {cls}: it belongs in {home}": "{name!r} 不是 {cls} 的字段：它应写在 {home} 中",
    "unknown field {name!r} of {cls}; did you mean {near!r}?": "{cls} 没有字段 {name!r}；您是不是想用 {near!r}？",
    "  (the guide's {alias} is an alias)":
        '  （指南中的 {alias} 是别名）',
    'moe_token_dispatcher_type={value} requires variable_seq_lengths=False, but verl builds every model with variable_seq_lengths=True: megatron-core raises ValueError on a MoE model; use alltoall':
        'moe_token_dispatcher_type={value} 要求 variable_seq_lengths=False，但 verl 构建每个模型时都设置 variable_seq_lengths=True：在 MoE 模型上 megatron-core 会抛出 ValueError；请使用 alltoall',
    'the model is unknown here: a model without experts passes (give --model-config to decide)':
        '此处不知道模型：没有专家的模型可以通过（用 --model-config 给出模型以判定）',
    'moe_alltoall_mc2 and {other} cannot be combined (MindSpeed asserts it)':
        'moe_alltoall_mc2 与 {other} 不能同时使用（MindSpeed 会断言失败）',
    'moe_alltoall_mc2=True requires moe_token_dispatcher_type=alltoall or alltoall_seq (got {value})':
        'moe_alltoall_mc2=True 要求 moe_token_dispatcher_type=alltoall 或 alltoall_seq（当前为 {value}）',
    'moe_alltoall_mc2=True with moe_token_dispatcher_type=alltoall_seq requires tensor_model_parallel_size=1 (got {tp})':
        'moe_alltoall_mc2=True 配合 moe_token_dispatcher_type=alltoall_seq 时要求 tensor_model_parallel_size=1（当前为 {tp}）',
    'moe_alltoall_mc2=True with moe_token_dispatcher_type=alltoall requires expert_tensor_parallel_size=1 (got {etp}{assumed})':
        'moe_alltoall_mc2=True 配合 moe_token_dispatcher_type=alltoall 时要求 expert_tensor_parallel_size=1（当前为 {etp}{assumed}）',
    'moe_alltoall_mc2=True requires a dropless MoE: moe_expert_capacity_factor must be unset':
        'moe_alltoall_mc2=True 要求 dropless MoE：不能设置 moe_expert_capacity_factor',
    ', which is TP when unset':
        '，未设置时等于 TP',
    "override_transformer_config.{name}={value} and megatron.{name}={engine} must be equal: verl copies the dict over the engine's size in the model's config, while the process groups use the engine's":
        'override_transformer_config.{name}={value} 与 megatron.{name}={engine} 必须相等：verl 用该字典覆盖模型配置中引擎的大小，而进程组使用引擎的大小',
    "override_transformer_config.sequence_parallel={value} overrides the engine's sequence_parallel={engine}: the model is built with the dict's value":
        'override_transformer_config.sequence_parallel={value} 覆盖了引擎的 sequence_parallel={engine}：模型按字典中的值构建',
    'set the VPP size to null: this verl release asserts use_mbridge=True':
        '将 VPP 大小设为 null：此 verl 版本断言 use_mbridge=True',
    "use_mbridge=False cannot run on {era}: verl's Megatron engine asserts 'use_mbridge must be True' when each worker starts":
        "use_mbridge=False 无法在 {era} 上运行：每个 worker 启动时 verl 的 Megatron 引擎会断言 'use_mbridge must be True'",
    'without a bridge there is no VPP on NPU for this verl release':
        '此 verl 版本不使用 bridge 就无法运行，因此在 NPU 上不能使用 VPP',
    "no 'python3 -m <module> ...' launch line":
        "没有 'python3 -m <module> ...' 启动行",
    'launches {module}, not a verl entry':
        '启动的是 {module}，不是 verl 的入口',
    'skipped {path}: {why}':
        '已跳过 {path}：{why}',
    'skipped: {why}':
        '已跳过：{why}',
    ' (expert_tensor_parallel_size is unset: megatron takes TP)':
        '（expert_tensor_parallel_size 未设置：megatron 取 TP 的值）',
    "{name}={value} is a MindSpeed {release} switch outside the feature guide that no check here covers: MindSpeed's own checks on it run only inside each worker":
        '{name}={value} 是 MindSpeed {release} 在特性指南之外的开关，这里没有检查覆盖它：MindSpeed 自己对它的检查只会在每个 worker 内部运行',
    'moe_tp_extend_ep=True requires a MoE model ({arch} has no experts)':
        'moe_tp_extend_ep=True 需要 MoE 模型（{arch} 没有专家）',
    "give the model's config.json (check --model-config PATH) to get the value":
        '给出模型的 config.json（check --model-config PATH）以获得该值',
    'or a pipeline size that divides {total}':
        '或者选择能整除 {total} 的流水线大小',
    '{a}; {b}':
        '{a}；{b}',
    '{n} problems with the command line: {all}':
        '命令行有 {n} 个问题：{all}',
    'text report: only the errors, the warnings and the verdict line':
        '文本报告：只显示错误、告警和结论行',
    'the whole text report of each file (default: only its problems and verdict, as --quiet)':
        '每个文件的完整文本报告（默认：与 --quiet 一样，只显示问题和结论）',
    '{first} to {last}':
        '{first} 至 {last}',
    '{release}':
        '{release}',
    '{a}, {b}':
        '{a}、{b}',
    "also run MindSpeed's and megatron-core's own Python on the launch, in a subprocess on CPU (a few seconds; repeated launches come from a cache)":
        '同时在 CPU 上的子进程中对本次启动运行 MindSpeed 和 megatron-core 自己的 Python 代码（几秒钟；重复的启动来自缓存）',
    'with --upstream: a MindSpeed source folder or release archive (.tar.gz); default: the installed mindspeed':
        '与 --upstream 一起使用：MindSpeed 源码目录或发布包（.tar.gz）；默认：已安装的 mindspeed',
    "with --upstream: Megatron-LM's source (folder or archive holding megatron/training); default: one named megatron-lm-training-core_v<line> beside --mindspeed-src, else the installed megatron.training":
        '与 --upstream 一起使用：Megatron-LM 源码（包含 megatron/training 的目录或发布包）；默认：--mindspeed-src 旁边名为 megatron-lm-training-core_v<line> 的源码，否则为已安装的 megatron.training',
    'with --upstream: the megatron-core line the MindSpeed source pairs with (0.12.1, 0.16.1); default: from its name (core_r0.12.1), else 0.12.1':
        '与 --upstream 一起使用：与该 MindSpeed 源码配套的 megatron-core 版本线（0.12.1、0.16.1）；默认：取自其名称（core_r0.12.1），否则为 0.12.1',
    "with --upstream: the interpreter to run upstream in (an NPU host's own python, with torch_npu); default: this one if it has the right megatron-core, else an environment built once in the cache folder":
        '与 --upstream 一起使用：运行上游代码的解释器（NPU 主机自己带 torch_npu 的 python）；默认：若当前解释器的 megatron-core 合适则用它，否则用在缓存目录中一次性构建的环境',
    '--mindspeed-src, --megatron-src, --megatron-core and --upstream-python need --upstream':
        '--mindspeed-src、--megatron-src、--megatron-core 和 --upstream-python 需要与 --upstream 一起使用',
    'build (once) the environment check --upstream runs MindSpeed in, per megatron-core line':
        '（一次性）构建 check --upstream 运行 MindSpeed 所用的环境，每个 megatron-core 版本线一个',
    "One virtual environment per megatron-core line in the cache folder ({path}): torch's CPU wheel, megatron-core and what Megatron-LM's megatron/training imports. Reused while its requirements are unchanged; your own environment is never touched. Prints each line's python.":
        '在缓存目录（{path}）中为每个 megatron-core 版本线建一个虚拟环境：torch 的 CPU wheel、megatron-core 以及 Megatron-LM 的 megatron/training 所需的依赖。依赖不变时复用；绝不改动你自己的环境。打印每个版本线的 python。',
    'megatron-core lines to prepare ({choices}; default: all)':
        '要准备的 megatron-core 版本线（{choices}；默认：全部）',
    'unknown megatron-core line {line!r}; choose from {choices}':
        '未知的 megatron-core 版本线 {line!r}；可选：{choices}',
    'running MindSpeed {release} on this launch (a few seconds)':
        '正在对本次启动运行 MindSpeed {release}（几秒钟）',
    'building the upstream environment for megatron-core {line} in {path} (once, a few minutes)':
        '正在 {path} 中为 megatron-core {line} 构建上游环境（仅一次，需几分钟）',
    'upstream environment ready in {seconds} s':
        '上游环境已就绪，用时 {seconds} 秒',
    'no upstream environment for megatron-core {line}; known: {choices}':
        '没有 megatron-core {line} 的上游环境；已知：{choices}',
    '--upstream-python {path} does not exist':
        '--upstream-python {path} 不存在',
    'repatch, parallel state, config build, layer assignment and recompute':
        'repatch、并行状态、配置构建、层分配和重计算',
    "repatch and parallel state only (no model config: the config build, layer assignment and recompute need the model's config.json, --model-config)":
        '仅 repatch 和并行状态（没有模型配置：配置构建、层分配和重计算需要模型的 config.json，即 --model-config）',
    'see the finding above':
        '见上面的结果',
    'upstream: MindSpeed {release} with megatron-core {line} ran {ran} for {roles}: {verdict} ({seconds} s{cached}); {agree}':
        '上游：MindSpeed {release} 与 megatron-core {line} 为 {roles} 运行了{ran}：{verdict}（{seconds} 秒{cached}）；{agree}',
    'the hand rules report errors too ({rules})':
        '手写规则也报告了错误（{rules}）',
    'upstream is stricter here: no hand rule of verl-mindspeed sees this':
        '此处上游更严格：verl-mindspeed 没有任何手写规则能发现这一点',
    'it agrees with the hand rules':
        '与手写规则一致',
    'MindSpeed {release} refuses this launch in {stage} ({role}): {exc_type}: {message}':
        'MindSpeed {release} 在{stage}（{role}）中拒绝了本次启动：{exc_type}: {message}',
    'raised at {where} (MindSpeed {release}, megatron-core {line}); {stricter}':
        '抛出位置 {where}（MindSpeed {release}，megatron-core {line}）；{stricter}',
    'MindSpeed {release} registers no patch of its feature {feature} for this launch, although the launch switches it on: the feature is silently not applied':
        'MindSpeed {release} 没有为本次启动注册特性 {feature} 的任何补丁，尽管启动参数打开了它：该特性被静默地未应用',
    'patches it would register: {patches}':
        '它本应注册的补丁：{patches}',
    'MindSpeed {release} logged: {text}':
        'MindSpeed {release} 日志：{text}',
    'the upstream run could not judge this launch: {exc_type}: {message}':
        '上游运行无法判定本次启动：{exc_type}: {message}',
    "a failure of verl-mindspeed's harness, not a verdict on the launch; rerun with VERL_MINDSPEED_ORACLE_DEBUG=1 to see the worker's output":
        '这是 verl-mindspeed 运行框架的故障，不是对启动配置的判定；设置 VERL_MINDSPEED_ORACLE_DEBUG=1 重新运行以查看工作进程的输出',
    ', cached':
        '，来自缓存',
    '{what} {path} does not exist':
        '{what} {path} 不存在',
    '{what} {path} holds no {marker}':
        '{what} {path} 中没有 {marker}',
    '--megatron-core {value}: choose one of {choices}':
        '--megatron-core {value}：请从 {choices} 中选择',
    'no MindSpeed is installed here: give --mindspeed-src with a MindSpeed source folder or release archive':
        '本机没有安装 MindSpeed：请用 --mindspeed-src 给出 MindSpeed 源码目录或发布包',
    "Megatron-LM's megatron/training is not installed here: give --megatron-src with a Megatron-LM source folder or archive of megatron-core {line}":
        '本机没有安装 Megatron-LM 的 megatron/training：请用 --megatron-src 给出 megatron-core {line} 对应的 Megatron-LM 源码目录或发布包',
    '{what} {path} is not a readable .tar.gz archive: {reason}':
        '{what} {path} 不是可读的 .tar.gz 发布包：{reason}',
    "MindSpeed's repatch":
        'MindSpeed 的 repatch',
    "megatron's parallel state":
        'megatron 的并行状态',
    'the config build':
        '配置构建',
    "megatron's layer assignment":
        'megatron 的层分配',
    'the recompute forward':
        '重计算前向',
    "MindSpeed's import":
        'MindSpeed 的导入',
    'upstream accepts what the hand rules refuse; the hand rules are stricter: {reasons}':
        '上游接受了手写规则拒绝的内容；手写规则更严格：{reasons}',
    '{rule}: {reason}':
        '{rule}：{reason}',
    'no recorded reason: the hand rule may be wrong here, please report it':
        '没有记录的理由：此处手写规则可能有误，请报告',
    'a key nothing reads (a typo): MindSpeed keeps it silently and the run silently lacks the option':
        '没有任何代码读取的键（拼写错误）：MindSpeed 静默保留它，运行时静默地缺少该选项',
    'verl refuses it later, when the section becomes a dataclass, after Ray starts':
        'verl 稍后在把该节转换为 dataclass 时拒绝它，那时 Ray 已经启动',
    "verl's trainer asserts batch sizes against the device count at run time, outside the config path upstream runs":
        'verl 的 trainer 在运行时根据设备数断言批大小，不在上游运行的配置路径之内',
    'device counts: the upstream run builds the smallest world the sizes allow':
        '设备数量：上游运行只构建并行大小所允许的最小进程规模',
    "verl's own NPU restriction (mbridge with VPP), raised by verl's engine, not by MindSpeed":
        'verl 自己的 NPU 限制（mbridge 与 VPP），由 verl 的引擎抛出，而不是 MindSpeed',
    'megatron floors num_layers / PP silently: the model built has fewer layers than the checkpoint':
        'megatron 静默地对 num_layers / PP 向下取整：构建出的模型层数少于检查点',
    "no-op layers that the model's num_layers does not count replace layers of the checkpoint: the weight loader fails or loads the wrong layers, after the config is built":
        '模型 num_layers 未计入的空操作层会顶替检查点中的层：配置构建之后，权重加载失败或加载到错误的层',
    "MLA switches or dimensions that differ from config.json build a model the checkpoint's weights cannot be loaded into (the weight loader, after the config is built)":
        '与 config.json 不一致的 MLA 开关或维度会构建出无法加载检查点权重的模型（在配置构建之后的权重加载阶段）',
    "verl reuses the first engine's parallel state for every later role without a check: the silent layout change is the failure, and nothing raises":
        'verl 不加检查地让之后的每个角色复用第一个引擎的并行状态：静默的布局变化就是故障，且不会抛出任何异常',
    "verl copies a parallel size of the dict over the engine's on the model's config while the process groups keep the engine's: no config check sees it, and the model is split for one size and run on another":
        'verl 把字典中的并行大小覆盖到模型配置上，而进程组仍用引擎的大小：没有任何配置检查能发现，模型按一种大小切分却按另一种运行',
    'the release has no code for the algorithm: MindSpeed accepts the string without argparse and registers no CP attention for it':
        '该版本没有这个算法的代码：MindSpeed 不经 argparse 接受这个字符串，也不为它注册任何 CP 注意力',
    'context_parallel_algo only selects among CP patches, which need context_parallel_size > 1':
        'context_parallel_algo 只在 CP 补丁之间做选择，而这些补丁需要 context_parallel_size > 1',
    'megatron reads recompute_method and recompute_num_layers only under a granularity':
        'megatron 只有在设置了重计算粒度时才读取 recompute_method 和 recompute_num_layers',
    'use_flash_attn=False (or absent where verl adds no default): MindSpeed never registers its fused attention; a legal setting with a cost':
        'use_flash_attn=False（或在 verl 不加默认值时缺省）：MindSpeed 从不注册其融合注意力；合法但有代价的设置',
    'moe_permutation_async_comm=True without a feature that reads it: a legal key with no effect':
        'moe_permutation_async_comm=True 但没有读取它的特性：合法但不生效的键',
    'as a warning (2.2.0, 2.3.0, core_r0.16.0): MindSpeed itself warns in mc2.py validate_args and runs without MC2':
        '作为告警（2.2.0、2.3.0、core_r0.16.0）：MindSpeed 自己在 mc2.py 的 validate_args 中告警，并在没有 MC2 的情况下运行',
    "as a warning, MC2 on a MoE model: MindSpeed's MC2 documentation says it is not for MoE models; no code path checks it":
        '作为告警，MoE 模型上的 MC2：MindSpeed 的 MC2 文档说明它不适用于 MoE 模型；没有代码路径检查这一点',
    "as a warning, sequence_parallel in the dict overriding the engine's: legal, the model is built with the dict's value, which no config check compares":
        '作为告警，字典中的 sequence_parallel 覆盖引擎的取值：合法，模型按字典中的值构建，没有配置检查会比较它们',
    'as a warning, when the model is unknown: megatron refuses the dispatcher on a MoE model only, and without a model the check cannot tell':
        '作为告警，在模型未知时：megatron 只在 MoE 模型上拒绝该分发器，没有模型时无法判断',
    "the planner's estimate of the peak device memory against the device's capacity: nothing upstream checks it; the failure is an out-of-memory after the weights are loaded":
        '规划器对设备峰值显存的估计与设备容量的比较：上游没有任何检查；故障表现为权重加载之后的显存不足',
    'Hydra or verl refuses it before MindSpeed is called: the upstream run starts where verl hands MindSpeed the dicts':
        'Hydra 或 verl 在调用 MindSpeed 之前就拒绝了它：上游运行从 verl 把字典交给 MindSpeed 的地方开始',
    'a number read from the environment is a string: verl passes it on as one; decode it, quoted for Hydra, e.g. {example}':
        '从环境变量读取的数字是字符串：verl 会原样传下去；请解码，并按 Hydra 的要求加引号，例如 {example}',
    '{key}={raw} does not resolve: the environment variable {name} is not set, and verl resolves the whole config in its TaskRunner, after Ray starts':
        '{key}={raw} 无法解析：环境变量 {name} 未设置，而 verl 会在 Ray 启动之后于其 TaskRunner 中解析整个配置',
    "set {name} in the launch's environment, or give a default: ${{oc.env:{name},<default>}}":
        '在启动环境中设置 {name}，或给出默认值：${{oc.env:{name},<默认值>}}',
    '{key}={raw} does not resolve: there is no key {name}, and verl resolves the whole config in its TaskRunner, after Ray starts':
        '{key}={raw} 无法解析：不存在键 {name}，而 verl 会在 Ray 启动之后于其 TaskRunner 中解析整个配置',
    'point the interpolation at an existing key, or write the value itself':
        '让插值指向已存在的键，或直接写出取值',
    '{key}={raw} does not resolve: {reason}':
        '{key}={raw} 无法解析：{reason}',
    'write the value itself instead of the interpolation':
        '直接写出取值，而不是使用插值',
    '{hint}; keys that refer to it fail too: {keys}':
        '{hint}；引用它的键也会失败：{keys}',
    '{n} interpolation(s) use a resolver this check does not have (registered by Hydra or verl at run time) and are not judged: {keys}':
        '{n} 个插值使用了本检查没有的解析器（由 Hydra 或 verl 在运行时注册），未做判定：{keys}',
    'the script sources {files}, not found here, so what it sets is unknown to the check: run the check where that file is, or set {name} in the environment':
        '脚本 source 了 {files}，但在本机找不到，因此检查无法得知它设置的内容：请在该文件所在的机器上运行检查，或在环境中设置 {name}',
    'overrides shown for the first {n} fitting layouts of the table; --top K shows them for each of the first K rows':
        '只显示了表中前 {n} 个放得下的布局的覆盖参数；--top K 会为前 K 行中的每一行显示',
    '--{flag} is needed (or --args-file with a launch that sets it)':
        '需要 --{flag}（或用 --args-file 给出设置了它的启动）',
    "the launch's model path {path} is not on this machine: give --model":
        '启动中的模型路径 {path} 不在本机上：请给出 --model',
    "your launch's layout {layout} is not among the {n} layouts listed (pinned away, or refused by the layout rules: 'verl-mindspeed check' says why)":
        "你的启动所用的布局 {layout} 不在列出的 {n} 个布局之中（被固定维度排除，或被布局规则拒绝：'verl-mindspeed check' 会说明原因）",
    "your launch's layout {layout} is row {row} of {n}: {gib:.1f} GiB per device, step {step:.2f}x, {fits}":
        '你的启动所用的布局 {layout} 排在 {n} 个中的第 {row} 行：每卡 {gib:.1f} GiB，步时 {step:.2f} 倍，{fits}',
    'does not fit':
        '放不下',
}
