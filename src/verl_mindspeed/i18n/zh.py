"""The Chinese message catalogue: English template -> Chinese template (same ``{placeholders}``).

Keep it complete: ``tests/core/test_i18n.py`` fails when a template passed to ``tr`` has no entry,
when an entry's placeholders differ from the English ones, or when an entry is no longer used.
"""

MESSAGES: dict[str, str] = {
    # --- verl-mindspeed plan and the model config reader ---
    "{arch}: {total:.2f}B parameters ({active:.2f}B active per token), {world} devices of {memory:g} GiB, "
    "{tokens} tokens per micro-batch ({seq} x {micro}), MindSpeed {release}":
        "{arch}：参数 {total:.2f}B（每个 token 激活 {active:.2f}B），{world} 张卡，每卡 {memory:g} GiB，"
        "每个微批 {tokens} 个 token（{seq} x {micro}），MindSpeed {release}",
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
    "device limit {gib:g} GiB": "单卡上限 {gib:g} GiB",
    "config.json: {key} is {value}; a whole number >= {minimum} is needed":
        "config.json：{key} 为 {value}；需要 >= {minimum} 的整数",
    "config.json: architectures must be a list such as [\"{name}\"], not a string":
        "config.json：architectures 必须是列表，例如 [\"{name}\"]，而不是字符串",
    "config.json: architectures must be a list of names, not {value}": "config.json：architectures 必须是名称列表，而不是 {value}",
    "config.json has no {key}; a whole number is needed": "config.json 缺少 {key}；需要一个整数",
}
