"""Rules on the stack itself (:mod:`verl_mindspeed.stack`): a bridge that cannot import on the megatron-core line,
MindSpeed's adaptor, and what the real Megatron-Bridge providers do with the dict.

They run only when the launch is judged on a stack (``check``, the guard, ``plan``); ``resolve()`` without one
judges the release's rules alone.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from omegaconf import OmegaConf

from ..catalog import universe
from ..errors import Issue
from ..i18n import tr
from ..simulate import MBRIDGE, MEGATRON_BRIDGE
from ..stack import (
    ADAPTOR_RELEASES,
    BRIDGE_CORE_LINES,
    Stack,
    argument_namespace,
    bridge_facts,
    core_facts,
    line_of,
    provider_fields,
)
from ._base import Context, RoleView, error, note, rule, warning

_VERL_BRIDGE = ("verl 0.9.1 verl/workers/engine/megatron/transformer_impl.py _build_tf_config (line 341); "
                "verl/models/mcore/bridge.py lines 16-20; verl/models/mcore/mbridge.py lines 17-24")
_MB_REFUSES = "Megatron-Bridge 0.5.1 models/model_provider.py apply_overrides_and_finalize (line 128)"


@rule("stack-bridge-import", scope="run", cites=_VERL_BRIDGE + "; Megatron-Bridge 0.3.1 "
      "models/conversion/model_bridge.py line 39 (ModuleNotFoundError on megatron-core 0.12.1)",
      holds_for="verl 0.9+ (vanilla_mbridge=False builds through Megatron-Bridge); every MindSpeed release")
def bridge_import(roles: Mapping[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """A role whose config path needs a bridge package the stack cannot import: the worker stops with ImportError
    in ``init_model`` -> ``engine.initialize()`` -> ``_build_tf_config``, minutes after the launch."""
    stack = ctx.stack
    if stack is None:
        return
    for role in roles.values():
        if role.bridge_kind == MEGATRON_BRIDGE and not stack.bridge_usable():
            if _inherited(ctx, role, "vanilla_mbridge"):
                continue  # the ref follows the actor's choice: the actor's fix moves both
            moved = [role] + [r for r in roles.values() if r is not role and _inherited(ctx, r, "vanilla_mbridge")]
            lines = [role.mset_line("vanilla_mbridge", True)] + [line for r in moved for line in _mbridge_needs(r)]
            yield error(role.mkey("vanilla_mbridge"), _why_no_bridge(stack), "stack-bridge-import", hint=tr(
                "vanilla_mbridge=True builds the role through mbridge, which imports with megatron-core "
                "{core}: install it on every node (pip install mbridge)", core=stack.megatron_core),
                override=" ".join(dict.fromkeys(lines)))
        elif role.bridge_kind == MBRIDGE and stack.mbridge is None and not _inherited(ctx, role, "vanilla_mbridge"):
            yield error(role.mkey("vanilla_mbridge"), tr(
                "vanilla_mbridge=True builds the role through mbridge, which this stack does not have: the worker "
                "stops with ImportError when it builds its model"), "stack-bridge-import",
                hint=tr("install mbridge on every node (pip install mbridge), or say so with --bridge "
                        "mbridge==VERSION"))


def _mbridge_needs(role: RoleView) -> list[str]:
    """What the role's dict must carry once mbridge builds it instead of Megatron-Bridge: mbridge leaves out
    ``position_embedding_type``, which MindSpeed's fused RoPE asserts (rule fused-rope-position-embedding)."""
    if role.inherits_actor or not role.on("use_fused_rotary_pos_emb"):
        return []
    if role.given.get("position_embedding_type") is not None or role.ns.get("position_embedding_type") is not None:
        return []
    return [role.set_line("position_embedding_type", "rope")]


def _why_no_bridge(stack: Stack) -> Any:
    if stack.megatron_bridge is None:
        return tr("verl {verl} builds this role through Megatron-Bridge (megatron.vanilla_mbridge=False, verl's "
                  "default), and no Megatron-Bridge release imports with megatron-core {core}, the line MindSpeed "
                  "{release} runs on: the worker stops with ImportError in init_model", verl=stack.verl,
                  core=stack.megatron_core, release=stack.mindspeed)
    lines = BRIDGE_CORE_LINES.get(line_of(stack.megatron_bridge) or (0, 0), ())
    return tr("verl {verl} builds this role through Megatron-Bridge (megatron.vanilla_mbridge=False), and Megatron-"
              "Bridge {bridge} does not import with megatron-core {core} (it needs {lines}): the worker stops with "
              "ImportError in init_model", verl=stack.verl, bridge=stack.megatron_bridge, core=stack.megatron_core,
              lines=" or ".join(f"{a}.{b}" for a, b in lines))


def _inherited(ctx: Context, role: RoleView, key: str) -> bool:
    """Whether the role's ``megatron.<key>`` is an interpolation (verl's ref config selects the actor's)."""
    node = OmegaConf.select(ctx.config, role.prefix, default=None) if ctx.config is not None else None
    return role.name != "actor" and node is not None and key in node and OmegaConf.is_interpolation(node, key)


@rule("stack-adaptor", scope="run", cites="MindSpeed core_r0.17.0/core_r0.18.0 mindspeed/__init__.py line 3 "
      "(import megatron_adaptor)", holds_for="MindSpeed core_r0.17.0 and core_r0.18.0")
def adaptor(roles: Mapping[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """MindSpeed core_r0.17/0.18 import ``megatron_adaptor`` first thing: without it nothing of MindSpeed loads."""
    stack = ctx.stack
    if stack is None or stack.mindspeed not in ADAPTOR_RELEASES or not roles:
        return
    site = (universe.stack_facts()["mindspeed_adaptor"].get(stack.mindspeed) or {})
    where = f"{site.get('file', 'mindspeed/__init__.py')}:{site.get('line', '?')}"
    if stack.adaptor is False:
        yield error("--mindspeed-release", tr(
            "MindSpeed {release} imports megatron_adaptor ({where}), and it is not installed here: every worker "
            "stops with ModuleNotFoundError when it imports MindSpeed", release=stack.mindspeed, where=where),
            "stack-adaptor", hint=tr("install MegatronAdaptor (published with MindSpeed's three-layer stack) on "
                                     "every node, or use a MindSpeed release that does not need it (core_r0.16.0)"))
    elif stack.adaptor is None:
        yield note("--mindspeed-release", tr(
            "MindSpeed {release} imports megatron_adaptor ({where}), which is not on the package index: every node "
            "needs it installed; no check here ran MegatronAdaptor, so what it patches is not judged",
            release=stack.mindspeed, where=where), "stack-adaptor")


@rule("fused-swiglu-inert", cites="megatron-core 0.16.1 megatron/core/transformer/mlp.py lines 171-204 "
      "(bias_swiglu_impl only under bias_activation_fusion); MindSpeed features_manager/fusions/fused_bias_swiglu.py "
      "(patches SwiGLUFunction, BiasSwiGLUFunction); Megatron-Bridge 0.3.1/0.5.1 model bridges' provider_bridge; "
      "mbridge 0.15.1 models/*.py (bias_activation_fusion=True only for the MoE models)",
      holds_for="the Megatron-Bridge (verl 0.9+ default) and mbridge config paths; not verl's converter, which sets it")
def fused_swiglu_inert(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MindSpeed's fused SwiGLU replaces megatron's fused bias-SwiGLU functions, which the MLP calls only with
    ``bias_activation_fusion=True``; Megatron-Bridge's provider leaves it False for most architectures, mbridge for
    its dense models (both executed on CPU: ``tests/conformance/test_bridge_executed.py``)."""
    stack = ctx.stack
    if stack is None or not role.on("use_fused_swiglu") or role.given.get("bias_activation_fusion") is not None:
        return  # the dict decides (True: the fused path; False: the user's choice)
    if role.bridge_kind == MEGATRON_BRIDGE and stack.bridge_usable():
        value, arch = _provider_value(stack, ctx.model, "bias_activation_fusion")
        setters = sorted(a for a, v in _architectures(stack).items() if v.get("bias_activation_fusion") is True
                         and a.endswith("ForCausalLM"))
        name, of = tr("Megatron-Bridge {version}'s provider", version=stack.megatron_bridge), arch
    elif role.bridge_kind == MBRIDGE and stack.mbridge is not None:
        types = _mbridge_types(stack)
        model_type = getattr(ctx.model, "model_type", None)
        value = types.get(model_type, {}).get("bias_activation_fusion", False) if model_type else False
        setters = sorted(t for t, v in types.items() if v.get("bias_activation_fusion") is True)
        name, of = tr("mbridge {version}'s config", version=stack.mbridge), model_type
    else:
        return
    if value is True:
        return
    where = tr("{bridge} for {arch}", bridge=name, arch=of) if of else \
        tr("{bridge} for most models (it is True only for {archs})", bridge=name, archs=", ".join(setters) or "none")
    yield warning(role.key("use_fused_swiglu"), tr(
        "use_fused_swiglu=True has no effect: {where} leaves bias_activation_fusion False, and megatron's MLP calls "
        "the fused SwiGLU MindSpeed patches only when it is True", where=where), "fused-swiglu-inert",
        override=role.set_line("bias_activation_fusion", True))


def _mbridge_types(stack: Stack) -> dict[str, dict[str, Any]]:
    data = universe.stack_facts()["mbridge"]
    same = [v for v in data if line_of(v) == line_of(stack.mbridge)] or list(data)
    return data[same[-1]].get("model_types", {}) if same else {}


def _architectures(stack: Stack) -> dict[str, dict[str, Any]]:
    data = bridge_facts(stack.megatron_bridge)
    return data["architectures"] if data else {}


def _provider_value(stack: Stack, model: Any, key: str) -> tuple[Any, Optional[str]]:
    """What the stack's Megatron-Bridge provider holds for ``key`` (for the model's architecture when known)."""
    data = bridge_facts(stack.megatron_bridge)
    core = core_facts(stack.megatron_core) or {"fields": {}}
    value = core["fields"].get(key)
    arch = getattr(model, "architecture", None)
    if data is None:
        return value, arch
    value = data["provider_defaults"].get(key, value)
    if arch and arch in data["architectures"]:
        value = data["architectures"][arch].get(key, value)
    return value, arch


@rule("bridge-refuses-unknown", cites=_MB_REFUSES + "; verl 0.9.1 _build_tf_config (every dict key is an override)",
      holds_for="Megatron-Bridge 0.5.0 and later (earlier releases set any key silently)")
def bridge_refuses_unknown(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Megatron-Bridge 0.5+ raises AttributeError for an override its provider has no attribute for; MindSpeed
    releases that patch ``TransformerConfig.__init_subclass__`` give the provider the keys MindSpeed registers."""
    stack = ctx.stack
    if stack is None or role.bridge_kind != MEGATRON_BRIDGE or not stack.bridge_refuses_unknown():
        return
    if core_facts(stack.megatron_core) is None or bridge_facts(stack.megatron_bridge) is None:
        return
    # the MLA fields belong to the MLA providers only (DeepSeek's); without a model config the class is unknown
    provider = provider_fields(stack.megatron_core, stack.megatron_bridge, ctx.model is None or ctx.model.is_mla)
    known = universe.known_otc_keys()
    if role.inherits_actor and "actor" in (ctx.builds or {}):
        return  # the actor's dict, judged (and fixed) where the user wrote it
    for name in role.given:
        if name not in provider and name not in known:  # no release of anything registers it
            yield error(role.key(name), tr(
                "'{name}' is not a MindSpeed, Megatron-LM or TransformerConfig option, nor a field of Megatron-Bridge "
                "{bridge}'s provider, which refuses it: AttributeError in apply_overrides_and_finalize when the role "
                "builds its model", name=name, bridge=stack.megatron_bridge), "bridge-refuses-unknown",
                override=f"~{role.key(name)}")
    outside = [name for name in role.given if name not in provider and name in known]
    adaptor = stack.mindspeed in ADAPTOR_RELEASES
    # MindSpeed's __init_subclass__ patch gives subclasses every key of its argument namespace
    # (core/megatron_basic/arguments_basic.py transformer_config_init_subclass); on the three-layer releases whether
    # the provider gets them is megatron_adaptor's business, which never ran here: a note
    namespace = argument_namespace(stack.mindspeed) if adaptor or _registers_fields(stack.mindspeed) else frozenset()
    held = [name for name in outside if name in namespace]
    if adaptor and held:
        yield note(role.otc_path, tr(
            "{keys}: not fields of Megatron-Bridge {bridge}'s provider, which refuses unknown overrides; whether "
            "MindSpeed {release} adds them to the provider depends on megatron_adaptor, which no check here ran",
            keys=", ".join(held), bridge=stack.megatron_bridge, release=stack.mindspeed), "bridge-refuses-unknown")
    for name in outside:
        if name in namespace:
            continue
        yield error(role.key(name), tr(
            "Megatron-Bridge {bridge}'s provider has no attribute '{name}' and refuses it: AttributeError in "
            "apply_overrides_and_finalize when the role builds its model", name=name, bridge=stack.megatron_bridge),
            "bridge-refuses-unknown", override=f"~{role.key(name)}")


def _registers_fields(release: str) -> bool:
    """Whether the release patches ``TransformerConfig.__init_subclass__`` so that subclasses (the provider) carry
    every key of MindSpeed's argument namespace: 26.0.0+, core_r0.16.0 and master (``features_manager/megatron_basic``
    registers ``transformer_config_init_subclass``)."""
    from ._base import release_at_least

    return release_at_least(release, (26, 0, 0))
