"""A matched raise -> the launch keys (or environment variables) at fault and a fix, or what failed instead.

The site's condition fields are mapped to what a launch writes: a parallel size to the role's ``megatron.*`` key,
a MindSpeed or megatron option to ``override_transformer_config``, a verl key by its path, Hydra's quoted key as
it is. A model fact (heads, layers, hidden size) is never blamed: the launch cannot change the model. Where no field
is the launch's, the failure is named for what it is (a package's version, the environment, the machine's memory
or network, upstream code) and no key is blamed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

from .. import catalog, eras
from ..catalog import OTC, universe, verl_keys
from ..i18n import Msg, tr
from ._log import CHATTER, Raised
from ._paths import verl_leaves, verl_sections
from ._sites import Match, Site, in_file, releases_of, same_message
from ._solve import raises, value_of

ACTOR = "actor_rollout_ref.actor.megatron."
#: What the model decides, not the launch: never blamed.
MODEL_FIELDS = frozenset({
    "num_attention_heads", "num_query_groups", "num_key_value_heads", "num_layers", "hidden_size",
    "ffn_hidden_size", "num_moe_experts", "num_experts", "vocab_size", "kv_channels", "padded_vocab_size",
    "max_position_embeddings", "moe_ffn_hidden_size", "first_k_dense_replace", "num_hidden_layers", "head_dim",
    "decoder_num_layers",
    "intermediate_size", "num_key_value_groups", "world_size", "data_parallel_size", "rank",
    # the architecture's own: experts per token, latent attention and its ranks, the shared experts' width
    "moe_router_topk", "multi_latent_attention", "q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim",
    "v_head_dim", "moe_shared_expert_intermediate_size", "is_hybrid_model", "multi_head_latent_attention",
    "moe_router_enable_expert_bias", "moe_router_group_topk", "moe_router_num_groups", "rotary_interleaved",
    # its activation, normalization and positions (Megatron-LM's and MindSpeed's names; verl's build reads the model)
    "swiglu", "normalization", "position_embedding_type"})
#: A variable a message tells the user to set, with its value where it gives one (``export HCCL_BUFFSIZE=400``,
#: ``set environment variable X to 1``); a word of prose after "to" is no value ("set environment variable
#: VLLM_PLUGINS to control which plugins to load", vLLM's own log line).
_ENV = re.compile(r"(?i:environment variable|env var(?:iable)?|export)\s+`?(?P<var>[A-Z][A-Z0-9_]{2,})\b`?"
                  r"(?:[^.\n]*?(?:\b(?i:to)\b|=)\s*`?(?P<value>[\w./:-]+)(?![\w./:-]))?")
_MODULE = re.compile(r"No module named '(?P<mod>[\w.]+)'|cannot import name '(?P<name>\w+)' from '(?P<from>[\w.]+)'"
                     r"|(?:module|type object) '(?P<amod>[\w.]+)' has no attribute '(?P<attr>\w+)'")


@dataclass
class Cause:
    key: str
    """The launch key (full dotted path) or environment variable at fault."""
    fix: Optional[str] = None
    """The line to paste (an override, or ``export VAR=value``), when one is known."""
    confirmed: bool = False
    """``check`` on the given launch reproduces the failure on this key, and the fix clears it."""
    delete: bool = False
    """The fix is to delete the launch's argument for ``key`` (no line to paste: a key the release refuses)."""


@dataclass
class Verdict:
    kind: str
    """``override``, ``env``, ``version-skew``, ``resource``, ``upstream`` or ``unknown``."""
    what: Msg
    """What the failure is, in a sentence."""
    causes: list[Cause] = field(default_factory=list)
    fields: tuple[str, ...] = ()
    """The settings the raise's condition reads (for a launch not given: which keys to look at)."""
    certainty: str = "possible"
    """``confirmed`` (the replay reproduces it), ``likely`` (bound values name the key) or ``possible``."""


@lru_cache(maxsize=1)
def engine_keys() -> frozenset[str]:
    return frozenset({f.name for f in catalog.flags("megatron")} | set(eras.PARALLEL_SIZES))


#: Packages whose fields are megatron's or MindSpeed's settings (the engine's sizes, override_transformer_config).
MEGATRON_SIDE = ("megatron-core", "megatron-training", "mindspeed", "megatron-bridge", "mbridge")


#: Sections of verl's config a chain of attributes can name (``self.config.rollout.x``, ``critic_config.x``).
_SECTIONS = ("rollout", "critic", "ref", "actor", "data", "trainer", "algorithm", "reward")


def section_paths(leaf: str, chains: tuple[str, ...]) -> list[str]:
    """verl's paths of ``leaf`` under the section the raise reads it from (``rollout_config.tensor_model_parallel_size``
    -> ``actor_rollout_ref.rollout.tensor_model_parallel_size``); empty when no chain names one."""
    keys = verl_keys._data()["keys"]
    whole = [tail for c in chains if c.rsplit(".", 1)[-1] == leaf for parts in [c.split(".")]
             for tail in (".".join(parts[n:]) for n in range(len(parts) - 1)) if tail in keys]
    if whole:  # the chain spells the key out (config.actor_rollout_ref.actor.megatron.tensor_model_parallel_size)
        return whole[:1]
    named = {w for c in chains if c.rsplit(".", 1)[-1] == leaf for w in _SECTIONS
             if re.search(rf"(?:^|[._]){w}(?:[._]|$)", c.rsplit(".", 1)[0])}
    paths = [p for p in verl_leaves().get(leaf, ()) if any(f".{w}." in f".{p}" for w in named)]
    ends = [c.split(".") for c in chains if c.rsplit(".", 1)[-1] == leaf]

    def spelled(path: str) -> int:  # how much of the chain's end the path spells (``prometheus.enable``)
        parts = path.split(".")
        return max((next((n for n in range(1, min(len(e), len(parts)) + 1) if e[-n] != parts[-n]),
                          min(len(e), len(parts)) + 1) - 1 for e in ends), default=0)

    return sorted(paths, key=lambda p: (-spelled(p), not p.startswith("actor_rollout_ref."), len(p)))[:1]


def paths_for(leaf: str, package: str = "verl", chains: tuple[str, ...] = ()) -> list[str]:
    """The launch paths a setting named ``leaf`` of a ``package`` raise is written at when the launch is not given
    (the actor's first). The stack decides: megatron's and MindSpeed's fields are the engine's sizes or
    override_transformer_config keys; verl's are verl's keys of that name, when the name says which (a generic name,
    ``name`` or ``device``, says nothing)."""
    if leaf in MODEL_FIELDS:
        return []
    in_section = section_paths(leaf, chains) if package == "verl" else []
    if in_section:
        return in_section
    if leaf in engine_keys():
        return [ACTOR + leaf]
    if package in MEGATRON_SIDE:
        return [f"{ACTOR}{OTC}.{leaf}"] if leaf in universe.known_otc_keys() else []
    if package == "verl" and "_" in leaf and len(leaf) >= 8:  # a section of that name holds settings, is none
        return [p for p in verl_leaves().get(leaf, ()) if p not in verl_sections()][:2]
    return []


#: Variables a message names only to print more (a full trace, a debug log): never what failed.
_DIAGNOSTIC = frozenset({"HYDRA_FULL_ERROR", "OC_CAUSE", "TORCH_SHOW_CPP_STACKTRACES", "CUDA_LAUNCH_BLOCKING",
                         "ASCEND_LAUNCH_BLOCKING", "NCCL_DEBUG", "HCCL_DEBUG", "TORCH_DISTRIBUTED_DEBUG",
                         "RAY_IGNORE_UNHANDLED_ERRORS", "RAY_BACKEND_LOG_LEVEL", "ASCEND_GLOBAL_LOG_LEVEL"})


#: A runtime's own variable the message says is too small or too large (CANN's ``HCCL_BUFFSIZE is too SMALL, ...
#: NEEDED_HCCL_BUFFSIZE(...) = 609MB, HCCL_BUFFSIZE=200MB``): that variable, where its name is a runtime's (or the
#: message states the size it needs); the needed size, in megabytes as the current one is printed, is its line.
_SIZED = re.compile(r"\b(?P<var>[A-Z][A-Z0-9]*_[A-Z0-9_]{2,})\b (?:is|was) too (?i:small|large|big|low)\b")
_RUNTIME = ("HCCL_", "NCCL_", "ASCEND_", "ACL_", "PYTORCH_", "TORCH_", "CUDA_", "VLLM_", "RAY_", "OMP_", "GLOO_")
_MB = {"KB": 1 / 1024, "MB": 1, "GB": 1024}


def sized(raised: Raised) -> Optional[Cause]:
    for hit in _SIZED.finditer(raised.message):
        var = hit.group("var")
        name = re.escape(var)
        need = re.search(rf"\bNEEDED_{name}\b[^=\n]*=\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]*)", raised.message)
        if var in _DIAGNOSTIC or not (need or var.startswith(_RUNTIME)):
            continue
        have = re.search(rf"(?<![\w(]){name}\s*=\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]*)", raised.message)
        scale = _MB.get(need.group("unit").upper()) if need else None
        needed = math.ceil(float(need.group("n")) * scale) if need and scale else None
        if needed and have and have.group("unit").upper() == "MB" and needed > float(have.group("n")):
            return Cause(var, f"export {var}={needed}")  # read in megabytes, and more than it holds
        return None  # named, no stated size: the message's own advice (``export VAR=...``), if any, decides
    return None


def environment(raised: Raised, found: Optional[Match]) -> Optional[Cause]:
    runtime = sized(raised)
    if runtime is not None:
        return runtime
    too = next((h.group("var") for h in _SIZED.finditer(raised.message)
                if h.group("var").startswith(_RUNTIME) and h.group("var") not in _DIAGNOSTIC), None)
    hit = next((h for h in _ENV.finditer(raised.message) if h.group("var").upper() not in _DIAGNOSTIC
                and not CHATTER.search(_line_of(raised.message, h.start()))), None)
    condition = found.site.condition if found and found.site.condition else ""
    if hit is None:
        env = re.search(r"environ(?:\.get)?\(?\[?['\"](?P<var>[A-Z][A-Z0-9_]+)['\"]", condition)
        if env is None and raised.type == "KeyError" and re.fullmatch(r"'[A-Z][A-Z0-9_]{2,}'", raised.message.strip()):
            return Cause(raised.message.strip().strip("'"))
        return Cause(env.group("var")) if env else Cause(too) if too else None
    value = hit.group("value")
    if value and value.isalpha() and value.islower() and re.match(r"\s+[a-z]", raised.message[hit.end():]):
        value = None  # a word of a sentence, not a value
    return Cause(hit.group("var"), f"export {hit.group('var')}={value}" if value else None)


def _line_of(text: str, at: int) -> str:
    return text[text.rfind("\n", 0, at) + 1:(text.find("\n", at) + 1 or len(text) + 1) - 1]


def fields_of(found: Match) -> list[str]:
    """The settings the site's condition reads: not a model fact, nor a section the chains pass through
    (``actor_rollout_ref`` of ``config.actor_rollout_ref.actor.megatron.context_parallel_size``)."""
    chains = found.site.chains
    passed = {p for c in chains for p in c.split(".")[:-1]} - {c.rsplit(".", 1)[-1] for c in chains}
    return [f for f in found.site.fields if f not in MODEL_FIELDS and f not in passed]


#: ``megatron.*`` namespaces a pip package ships (megatron-core, Megatron-Bridge, Megatron-Energon); any other
#: ``megatron.x`` (``optimizer``, ``training``, ``legacy``...) is only in a Megatron-LM source tree.
_PIP_MEGATRON = ("core", "bridge", "hub", "energon")


def source_tree(raised: Raised) -> Optional[Cause]:
    """A module only Megatron-LM's source tree has, not found: that tree is not on ``PYTHONPATH``."""
    hit = re.search(r"No module named '(megatron\.(\w+)[\w.]*)'", raised.message)
    if raised.type != "ModuleNotFoundError" or hit is None or hit.group(2) in _PIP_MEGATRON:
        return None
    return Cause("PYTHONPATH", "export PYTHONPATH=$PYTHONPATH:/path/to/Megatron-LM")


_MEMORY = re.compile(r"out of memory|OutOfMemory|\bOOM\b|内存不足|NPU memory", re.I)
_NETWORK = re.compile(r"\btimed? ?out\b|\btimeout\b|\bHCCL\b|\bNCCL\b|\bsocket\b|\bconnection (?:refused|reset)\b|"
                      r"(?-i:\bEI\d{4}\b)", re.I)


def the_machine(message: str) -> bool:
    """The message is the device's memory running out, or a collective or connection between processes failing:
    where it was raised says nothing of the code path a switch selected."""
    return bool(_MEMORY.search(message) or _NETWORK.search(message))


def not_the_launch(raised: Raised, found: Optional[Match]) -> Verdict:
    """What a failure no launch key caused is: a package's version, the machine, or upstream code."""
    message = raised.message
    module = _MODULE.search(message)
    tree = source_tree(raised)
    if tree is not None:
        return Verdict("env", tr(
            "{type}: {name} is in Megatron-LM's source tree, which no pip package ships: that tree is not on "
            "PYTHONPATH", type=raised.type, name=module.group("mod") if module else message[:80]), [tree],
            certainty="likely")
    if raised.type in ("ImportError", "ModuleNotFoundError") or (raised.type == "AttributeError" and module and
                                                                  module.group("amod")) or (
            raised.type == "AttributeError" and "type object" in message):
        name = module.group("mod") or module.group("from") or module.group("amod") if module else message[:80]
        return Verdict("version-skew", tr(
            "{type}: the installed {name} does not match what the code importing it expects (a package missing, too "
            "old or too new for the others): no launch key is at fault", type=raised.type, name=name),
            certainty="likely")
    if re.search(r"unexpected keyword argument|missing \d+ required positional|"
                 r"takes (?:from \d+ to )?\d+ positional argument", message) and raised.type == "TypeError":
        return Verdict("version-skew", tr(
            "TypeError between two packages' functions ({message}): their versions do not match; no launch key is at "
            "fault", message=raised.first_line[:160]), certainty="possible")
    if _MEMORY.search(message):
        return Verdict("resource", tr(
            "the device ran out of memory ({message}): no launch key is wrong as such; the memory the layout needs "
            "is the question (verl-mindspeed plan, or check with --model-config for the estimated peak)",
            message=raised.first_line[:160]), certainty="likely")
    if _NETWORK.search(message):
        return Verdict("resource", tr(
            "a collective or connection between processes failed ({message}): the network or a peer process, not a "
            "launch key", message=raised.first_line[:160]), certainty="possible")
    if found is not None:
        lifted = lifted_after(found)
        where = f"{found.site.file} ({found.site.package} {', '.join(found.releases[:4])})"
        if lifted:
            return Verdict("upstream", tr(
                "raised by {where}, a check that {package} {release} relaxes to accept these values: upgrading "
                "removes it; no launch key is at fault", where=where, package=found.site.package, release=lifted[0])
                if lifted[1] else tr(
                "raised by {where}, a check that {package} {release} no longer has: upgrading removes it; no "
                "launch key is at fault", where=where, package=found.site.package, release=lifted[0]),
                certainty="likely")
        return Verdict("upstream", tr("raised by {where} on a condition no launch key sets: {condition}", where=where,
                                      condition=found.site.condition or "-"), certainty="possible")
    return Verdict("unknown", tr("{type}: {message}", type=raised.type, message=raised.first_line[:200]),
                   certainty="none")


def lifted_after(found: Match) -> Optional[tuple[str, bool]]:
    """(the first later release of the site's package that does not raise on the printed values, whether it still
    has the check in other words and only relaxes it): ``num_query_groups (2) must be a multiple of ... (8)`` in
    megatron-core 0.15.3 is ``a multiple or divisor`` in 0.16.1, whose condition passes on 2 and 8. None when the
    later release raises there too, or cannot be told (MindSpeed's branches are not one line of releases)."""
    if found.site.package == "mindspeed":
        return None
    have = {r for same in same_message(found.site) or [found.site] for r, _ in same.releases}  # moved files too
    order = releases_of(found.site.package)
    last = max((order.index(r) for r in have if r in order), default=None)
    gone = next((r for r in order[last + 1:] if r not in have), None) if last is not None else None
    if gone is None:
        return None
    again = _reworded(found.site, gone)
    if again is None:
        return gone, False
    values = {expr: value_of(text) for expr, text in found.bound.items()}
    return (gone, True) if again.condition and raises(again.condition, again.raises_when_false, values) is False \
        else None


def _reworded(site: Site, release: str) -> Optional[Site]:
    """The site of ``release`` that raises the same check in other words: the same function and exception type, a
    message that opens the same way (``... not divisible by infer_tp`` -> ``... infer_world_size``)."""
    head = site.parts[0].strip() if site.parts else ""
    if len(head) < 8:
        return None
    return next((other for other in in_file(site.file) if other.function == site.function and
                 other.exception == site.exception and other.parts and other.parts[0].strip() == head and
                 release in dict(other.releases)), None)


__all__ = ["ACTOR", "Cause", "MODEL_FIELDS", "Verdict", "engine_keys", "environment", "fields_of", "lifted_after",
           "not_the_launch", "paths_for", "sized", "source_tree", "the_machine", "verl_leaves"]
