"""The two record types of the feature catalogue: a flag, and a feature made of flags."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional

OTC = "override_transformer_config"

#: Where verl keeps each role's Megatron settings.
ROLE_PREFIXES = {
    "actor": "actor_rollout_ref.actor.megatron",
    "ref": "actor_rollout_ref.ref.megatron",
    "critic": "critic.megatron",
}

Where = Literal["otc", "megatron"]
ValueType = Literal["bool", "int", "str", "layers", "str_list"]


@dataclass(frozen=True, kw_only=True)
class Flag:
    """One key a user can set, and what MindSpeed or Megatron does with it."""

    name: str
    """Key name as verl carries it (under ``megatron.`` or its ``override_transformer_config``)."""
    where: Where
    """``otc`` for ``megatron.override_transformer_config.<name>``, ``megatron`` for ``megatron.<name>``."""
    type: ValueType
    """Value type. ``layers`` is a set of layer indices that MindSpeed reads as the digit string ``"0,7"``."""
    help: str
    """One English sentence: what the flag does (translated through the message catalogue, like all text)."""
    feeds: str
    """The MindSpeed or Megatron argument the key ends up in, e.g. ``MindSpeed --use-flash-attn``."""
    choices: tuple[str, ...] = ()
    """Allowed values for ``str`` and ``str_list`` flags; empty when free."""
    nullable: bool = False
    """Whether ``null`` is a legal value (it then means 'unset')."""
    minimum: Optional[int] = None
    """Smallest legal value for ``int`` flags."""
    default: Any = None
    """What takes effect when the user does not set the key (documentation; ``None`` = unset)."""
    default_note: str = ""
    """Who supplies that default, e.g. 'verl 0.8+ sets it' or 'derived from the HF model'."""
    process_wide: bool = False
    """A MindSpeed patch switch: patches are process-wide, so roles sharing a process share it."""
    aliases: tuple[str, ...] = ()
    """Other spellings users type (from docs that got the name wrong); mapped to ``name`` with a warning."""
    synonyms: tuple[str, ...] = ()
    """Other names users give this flag that no typo matcher reaches (``use_fa``, ``fused_rope``): not accepted,
    but "did you mean" points here."""
    value_synonyms: tuple[tuple[str, str], ...] = ()
    """(name users give a choice, the choice it is) for names no typo matcher reaches (``ring_attention`` is
    MindSpeed's ``megatron_cp_algo``): refused as a value, with the choice as its fix."""

    def path(self, role_prefix: str) -> str:
        """Full dotted key for one role, e.g. ``actor_rollout_ref.actor.megatron.override_transformer_config.x``."""
        if self.where == "otc":
            return f"{role_prefix}.{OTC}.{self.name}"
        return f"{role_prefix}.{self.name}"


#: Where an injected value is read when verl-mindspeed writes a role's dict (``resolver/_finalize.py`` reads each).
SOURCES = {
    "engine.tp": "the role's megatron.tensor_model_parallel_size",
    "engine.cp": "the role's megatron.context_parallel_size",
    "engine.sequence_parallel": "the role's megatron.sequence_parallel (verl turns it off at TP=1)",
    "engine.use_distributed_optimizer": "the role's megatron.use_distributed_optimizer",
    "bridge.moe_token_dispatcher_type": "the dispatcher the model bridge sets, else alltoall",
    "model.num_experts": "the model's config.json",
    "model.mla_dims": "the model's config.json (each MLA dimension)",
    "dict.not_batch_invariant": "on, unless use_flash_attn_npu_batch_invariant is on",
}
#: Conditions an injection may need besides its switches (``resolver/_finalize.py`` decides each).
CONDITIONS = {
    "engine.cp>1": "context_parallel_size > 1",
    "model": "a model config is known",
    "model.moe": "the model is a MoE model",
    "bridge.not_megatron_bridge": "the role's bridge is not Megatron-Bridge (which sets it)",
    "bridge.permute_fusion": "a MoE model whose bridge sets rope, and neither permute switch in the dict",
    "bridge.not_converter": "the role's bridge is Megatron-Bridge or mbridge (which may leave it False), not verl's "
                            "converter (which sets it)",
}


@dataclass(frozen=True)
class From:
    """An injected value read at build time from a :data:`SOURCES` entry."""

    source: str


@dataclass(frozen=True, kw_only=True)
class Injection:
    """A key that a launch through verl-mindspeed (preset, callback, launcher) writes into a role's
    ``override_transformer_config`` because MindSpeed reads it from there; never over a value the dict has."""

    key: Optional[str]
    """The dict key written; ``None`` when the source gives several keys (``model.mla_dims``)."""
    value: Any
    """A constant, or :class:`From` naming where the value is read."""
    why: str
    """One English sentence: why MindSpeed needs it in the dict (the note says it; translated like all text)."""
    when: tuple[str, ...] = ()
    """Dict switches any one of which, on, calls for it (an injected switch counts); empty: always."""
    requires: tuple[str, ...] = ()
    """:data:`CONDITIONS` that must all hold, judged on the dict as the user wrote it."""

    def __post_init__(self) -> None:
        unknown = [c for c in self.requires if c not in CONDITIONS]
        if isinstance(self.value, From) and self.value.source not in SOURCES:
            unknown.append(self.value.source)
        if unknown:
            raise ValueError(f"injection {self.key}: unknown source or condition {unknown}")


@dataclass(frozen=True, kw_only=True)
class Feature:
    """One row of the feature guide: a feature or a fused operator and the flags that switch it."""

    id: str
    """Stable identifier used by the CLI, the docs and rule references."""
    name: str
    """The feature's name in English; this, the description, the notes and each flag's help are translated
    through the message catalogue (``verl_mindspeed/i18n/locale``), like every other text."""
    kind: Literal["feature", "fused_op"]
    status: Literal["Preview", "Released", "Dev"]
    source: Literal["seed", "mindspeed-verl-guide"]
    """``seed``: a row of the verl feature guide; ``mindspeed-verl-guide``: a row MindSpeed's own verl guide adds."""
    description: str
    seed_keys: tuple[str, ...]
    """The full config keys exactly as the guide writes them (actor, and ref where listed)."""
    flags: tuple[Flag, ...]
    companions: tuple[str, ...] = ()
    """Settings the feature needs alongside, as ``key=value`` (``key`` relative to the role's dict)."""
    notes: tuple[str, ...] = ()
    rules: tuple[str, ...] = field(default=())
    """Ids of the cross-field rules that guard this feature (see ``verl_mindspeed.rules``)."""
    shown_otherwise: str = ""
    """Where the feature table reads the state when the dict verl builds does not set the primary flag:
    ``megatron.<key>``, ``dict.<key>`` (another key of that dict), or ``engine.sequence_parallel`` (SP as verl
    applies it: on only with TP > 1)."""
    injects: tuple[Injection, ...] = ()
    """What a launch through verl-mindspeed writes into the dict for this feature (a plain launch gets none)."""

    @property
    def keys(self) -> tuple[tuple[str, Optional[str]], ...]:
        """Each of the guide's keys as ``check`` accepts it: (key, the guide's own spelling when that is an alias
        of the real flag, else None)."""
        out = []
        for key in self.seed_keys:
            head, _, last = key.rpartition(".")
            real = next((f.name for f in self.flags if last in f.aliases), None)
            out.append((f"{head}.{real}", last) if real else (key, None))
        return tuple(out)

    @property
    def aliases(self) -> tuple[str, ...]:
        return tuple(a for f in self.flags for a in f.aliases)

    @property
    def primary(self) -> Flag:
        return self.flags[0]

    def companion_values(self) -> tuple[tuple[str, Any], ...]:
        """:attr:`companions` as (key, value), each value typed as its flag declares (``True``, ``"RMSNorm"``)."""
        out = []
        for text in self.companions:
            key, _, raw = text.partition("=")
            flag = next((f for f in self.flags if f.name == key), None)
            value: Any = raw
            if flag is not None and flag.type == "bool":
                value = raw == "True"
            elif flag is not None and flag.type == "int":
                value = int(raw)
            out.append((key, value))
        return tuple(out)
