"""Rules on what a role's first forward does, after every role is built: MindSpeed's attention mask."""

from __future__ import annotations

from typing import Iterable

from ..errors import Issue
from ..i18n import tr
from ..simulate import MEGATRON_BRIDGE, as_int
from ._base import Context, RoleView, error, release_at_least, rule
from .attention import longest_sequence

_MASK = "mindspeed/core/transformer/flash_attention/generate_mask/"


def mask_crash(role: RoleView, ctx: Context) -> bool:
    """Whether the role's first forward raises in MindSpeed's mask generation: the generate-mask patch wraps the
    attention (the last repatch's namespace has CP < 2), verl hands it no mask, and the config the role built has
    flash attention off, where MindSpeed asks for ``micro_batch_size``, which verl never sets. (Flash attention off
    used to be a warning, the fused attention unregistered: on every release with ``repatch`` it is this crash.)"""
    if not _mask_wrapped(role, ctx):
        return False  # generate_mask_feature.py registers the wrapper only below CP 2
    value = role.built.get("use_flash_attn")
    return value is None or value is False  # another value is refused as a value, and judged no further


@rule("flash-attn-mask-crash", cites=_MASK + "generate_mask.py generate_attention_mask (26.1.0 lines 17-23: "
      "RuntimeError without micro_batch_size, or AttributeError/ValueError on transformer_impl first); "
      + _MASK + "adaptor.py dot_product_attention_forward_wrapper; features_manager/transformer/flash_attention/"
      "generate_mask_feature.py register_patches (context_parallel_size < 2)",
      holds_for="MindSpeed 2.2.0 and later")
def flash_attn_mask_crash(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Every role that is built runs a forward (the actor, the reference model when KL is used, the critic)."""
    if not mask_crash(role, ctx):
        return
    if role.inherits_actor and "actor" in (ctx.builds or {}) and mask_crash(ctx.builds["actor"], ctx):
        return  # the actor's dict, judged and fixed where the user wrote it
    shown = role.built.get("use_flash_attn")
    yield error(role.key("use_flash_attn"), tr(
        "{role} builds its config with use_flash_attn={value}: MindSpeed's attention-mask generation then needs a "
        "micro_batch_size, which verl never sets, and the role stops at its first forward ('Please set "
        "micro_batch_size or set use_flash_attn=True in config.')", role=role.name,
        value="absent" if shown is None else shown), "flash-attn-mask-crash",
        override=role.set_line("use_flash_attn", True))


def _mask_wrapped(role: RoleView, ctx: Context) -> bool:
    """Whether the generate-mask wrapper is on the attention at the role's first forward (see :func:`mask_crash`)."""
    if role.sent is None or not release_at_least(ctx.release, (2, 2, 0)):
        return False
    builds = [b for b in (ctx.builds or {role.name: role}).values() if b.sent is not None]
    last = builds[-1].ns if builds else role.ns
    return (as_int(last.get("context_parallel_size")) or 1) < 2


@rule("mla-mask-seq-length", cites=_MASK + "generate_mask.py get_attention_mask (multi_head_latent_attention: no "
      "compressed mask) and generate_attention_mask (seq_len = config.seq_length, 26.1.0 line 45)",
      holds_for="MindSpeed 2.2.0 and later; mbridge and verl's converter (Megatron-Bridge's provider has seq_length)")
def mla_mask_seq_length(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MindSpeed's MLA takes a full seq_length x seq_length mask, not the compressed 2048 one: from the config's
    seq_length, which only the dict (or the namespace) gives a config built by mbridge or the converter."""
    if not _mask_wrapped(role, ctx) or role.bridge_kind == MEGATRON_BRIDGE:
        return
    if role.built.get("use_flash_attn") is not True or role.built.get("multi_head_latent_attention") is not True:
        return
    if role.built.get("seq_length") is not None:
        return
    if role.inherits_actor and "actor" in (ctx.builds or {}):
        return  # the actor's dict, judged and fixed where the user wrote it
    longest = longest_sequence(ctx)
    yield error(role.key("seq_length"), tr(
        "{role} builds an MLA config without seq_length: at its first forward MindSpeed makes the MLA attention mask "
        "from config.seq_length and the role stops with AttributeError", role=role.name), "mla-mask-seq-length",
        hint=tr("the longest sequence: data.max_prompt_length + data.max_response_length"),
        override=role.set_line("seq_length", longest) if longest else None)
