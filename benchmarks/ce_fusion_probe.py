"""Count the bytes per logit entry megatron-core's vocab-parallel cross entropy allocates, on CPU.

    python benchmarks/ce_fusion_probe.py            # both: fused (cross_entropy_loss_fusion) and unfused

Runs one forward and backward of ``fused_vocab_parallel_cross_entropy`` (``torch.compile``d) and of
``vocab_parallel_cross_entropy`` on bf16 logits ``[s, 1, v]`` in a world-1 gloo group, and follows
every allocation and free the torch profiler records. Prints the peaks in bytes per entry. In a
GPTModel the bf16 logits are freed when the forward returns (the output layer keeps its input, not
its output), so the backward's figure is the peak of the logits phase: the fused loss writes the
gradient into a new fp32 buffer while its saved fp32 softmax is alive (10 bytes per entry), the
unfused one works in place (6). Measured with megatron-core 0.12.1: fused 6 / 4 / 10, unfused 6 / 4 / 6.
Needs torch, megatron-core and a C++ compiler (inductor's CPU backend).
"""

from __future__ import annotations

import os
import socket

import torch


def _allocations(prof) -> list[tuple[int, int]]:
    """(time, bytes) of every allocation (+) and free (-) in the profile, in order."""
    from torch._C._profiler import _EventType

    found, stack = [], list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        node = stack.pop()
        if node.tag == _EventType.Allocation:
            found.append((node.start_time_ns, node.extra_fields.alloc_size))
        stack.extend(node.children)
    return sorted(found)


def probe(fused: bool, s: int = 2048, v: int = 16384) -> dict[str, float]:
    """Peak bytes per entry of the logits phase: the forward with the bf16 logits, the backward without them."""
    from megatron.core import parallel_state as ps
    from megatron.core.fusions.fused_cross_entropy import fused_vocab_parallel_cross_entropy
    from megatron.core.tensor_parallel import vocab_parallel_cross_entropy
    from torch.profiler import ProfilerActivity, profile

    def step():
        logits = torch.randn(s, 1, v, dtype=torch.bfloat16, requires_grad=True)
        target = torch.randint(0, v, (s, 1))
        if fused:
            loss = fused_vocab_parallel_cross_entropy(logits, target, ps.get_tensor_model_parallel_group())
        else:
            loss = vocab_parallel_cross_entropy(logits, target)
        return logits, loss

    step()[1].sum().backward()  # compile outside the profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as fwd:
        logits, loss = step()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as bwd:
        loss.sum().backward()
    unit, current, peak = s * v, 0, 0
    for _, size in _allocations(fwd):  # opens with the bf16 logits themselves (2 bytes per entry)
        current += size
        peak = max(peak, current)
    forward, kept = peak / unit, current / unit - 2  # kept for the backward: the saved softmax
    current = peak = 0
    for _, size in _allocations(bwd):  # the input's .grad is the gradient a GPTModel hands to the output layer
        current += size
        peak = max(peak, current)
    return {"forward": forward, "kept": kept, "backward": kept + peak / unit}


def main() -> int:
    if not torch.distributed.is_initialized():
        with socket.socket() as so:
            so.bind(("127.0.0.1", 0))
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ["MASTER_PORT"] = str(so.getsockname()[1])
        torch.distributed.init_process_group("gloo", rank=0, world_size=1)
    from megatron.core import parallel_state as ps

    ps.initialize_model_parallel(1, 1)
    for fused in (True, False):
        found = probe(fused)
        print(f"{'fused' if fused else 'unfused':8} bytes per logit entry: forward peak {found['forward']:.1f} "
              f"(bf16 logits included), kept for the backward {found['kept']:.1f}, "
              f"backward peak {found['backward']:.1f} (bf16 logits gone)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
