"""verl's own refusals that only its workers, its rollout servers or its first step reach, read from each release's
source on the path ``main_ppo`` takes by default: what the launch writes decides each, and none is refused before
Ray starts.

- ``prometheus.enable`` (or ``rl_insight`` among ``trainer.logger``, 0.9.x) with the rollout's ``disable_log_stats``
  on, its default: once every rollout server has launched. 0.7.0 to 0.8.0 say ``PROMETHEUS needs
  disable_log_stats==False`` (0.7.x in the agent loop's manager, 0.8.0 in ``llm_server.py``), 0.9.x ``Metrics
  monitoring requires disable_log_stats=False``; 0.6.1 only in ``rollout.mode=async`` (its default is ``sync``).
- The actor's ``megatron.qat.enable`` with ``vanilla_mbridge`` (0.8.0 on, the engine worker): ``QAT requires
  non-vanilla Megatron bridge`` when the workers build the model. No line: ``vanilla_mbridge=False`` needs a stack
  where Megatron-Bridge imports, which the megatron-core 0.12 line is not (``stack-bridge-import``); the hint says so.
- ``override_transformer_config.calculate_per_token_loss`` (0.9.x, the engine's loss): without
  ``model.use_remove_padding`` (the engine takes the model's, not ``megatron.use_remove_padding``),
  ``calculate_per_token_loss=True requires use_remove_padding=True`` at the first update; on 0.9.0 only, beside the
  actor's ``loss_agg_mode=seq-mean-token-mean`` without ``dynamic_context_parallel``, ``loss_agg_mode=
  'seq-mean-token-mean' is incompatible`` there too (no line: the aggregation is the algorithm's; the hint lists
  what the release accepts).
- ``algorithm.rollout_correction.bypass_mode`` with the rollout's ``calculate_log_probs`` off (0.9.x's v1 trainer,
  ``trainer.use_v1``, the default): the trainer takes the rollout's log-probs as the old ones, and the rollout
  returns none; the first step fails.
- ``adv_estimator`` ``optimal_token_baseline`` or ``tir_optimal_token_baseline`` on a Megatron actor: the advantage
  reads ``sum_pi_squared`` from the actor's log-prob pass (``Step-dependent optimal baseline requires
  sum_pi_squared`` at the first step otherwise). 0.7.1's Megatron workers never compute it; 0.9.x's v1 trainer never
  asks for it, whatever ``calculate_sum_pi_squared`` says; the legacy trainer (0.8.0, or 0.9.x with
  ``trainer.use_v1=False``) asks for it with ``actor.calculate_sum_pi_squared=True``, unless ``bypass_mode`` skips
  that pass. Only that last has a line; the others' hints name what computes it (which trainer or estimator to run
  is the user's choice). That pass refuses ``calculate_sum_pi_squared`` beside ``model.use_fused_kernels`` (unless
  MTP turned the fused kernels off), so the line turns them off too, and the pair alone is refused.
- The legacy Megatron worker (0.6.1 to 0.7.1, ``trainer.use_legacy_worker_impl`` not ``disable``) without
  mbridge: ``fp16 mode requires use_mbridge to be True`` for a role whose dtype is fp16 (the reference takes the
  actor's dtype; 0.6.1 reads the actor's ``use_mbridge`` for both), and on 0.7.1 ``MTP requires use_mbridge to be
  True`` with ``model.mtp.enable``, when the worker starts.
- 0.8.0's vLLM server with MTP drafting (``model.mtp.enable_rollout``) and the rollout's ``disable_log_stats`` on: vLLM
  then keeps no draft statistics, and ``vLLM MTP rollout requires request_spec_decode_stats; set
  disable_log_stats=False.`` at the first generation (0.9.0 warns instead).

Only the releases read are judged; only what the launch writes; through another entry, a warning.
"""

from __future__ import annotations

from typing import Optional, Sequence

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, ListConfig

from .._version import release_tuple
from ..catalog import OTC
from ..eras import LEGACY, era_of, worker_mode
from ..errors import Issue
from ..i18n import tr
from ..model.verl_options import select
from ..rules._base import issue
from ..simulate import active_roles
from ._entry import entry_severity

RULE = "verl-late-check"
ROLLOUT, ACTOR = "actor_rollout_ref.rollout", "actor_rollout_ref.actor"
STATS, PROMETHEUS = f"{ROLLOUT}.disable_log_stats", f"{ROLLOUT}.prometheus.enable"
QAT, VANILLA = f"{ACTOR}.megatron.qat.enable", f"{ACTOR}.megatron.vanilla_mbridge"
PER_TOKEN, PADDING = f"{ACTOR}.megatron.{OTC}.calculate_per_token_loss", "actor_rollout_ref.model.use_remove_padding"
AGG, DYNAMIC_CP = f"{ACTOR}.loss_agg_mode", f"{ACTOR}.megatron.dynamic_context_parallel"
BYPASS, LOG_PROBS = "algorithm.rollout_correction.bypass_mode", f"{ROLLOUT}.calculate_log_probs"
ESTIMATOR, OPTIMAL = "algorithm.adv_estimator", ("optimal_token_baseline", "tir_optimal_token_baseline")
SUM_PI, FUSED = f"{ACTOR}.calculate_sum_pi_squared", "actor_rollout_ref.model.use_fused_kernels"
MODEL_MTP = "actor_rollout_ref.model.mtp"

_OLD_METRICS = "PROMETHEUS needs disable_log_stats==False"
_AGENT_LOOP, _SERVER = "verl/experimental/agent_loop/agent_loop.py", "verl/workers/rollout/llm_server.py"
#: Where each release stops the rollout's metrics without their stats, and in which words.
METRICS = {"0.6.1": (_OLD_METRICS, _AGENT_LOOP), "0.7.0": (_OLD_METRICS, _AGENT_LOOP),
           "0.7.1": (_OLD_METRICS, _AGENT_LOOP), "0.8.0": (_OLD_METRICS, _SERVER),
           "0.9.0": ("Metrics monitoring requires disable_log_stats=False", _SERVER),
           "0.9.1": ("Metrics monitoring requires disable_log_stats=False", _SERVER)}
QAT_RELEASES = ("0.8.0", "0.9.0", "0.9.1")
#: The engine's per-token loss check, the v1 trainer's bypass and advantage.
V1_RELEASES = ("0.9.0", "0.9.1")
#: 0.8.0's vLLM server reads the drafts' statistics, which vLLM keeps only with its stats on (0.9.0 warns instead).
MTP_STATS_RELEASES = ("0.8.0",)
#: The legacy Megatron worker (``trainer.use_legacy_worker_impl`` not ``disable``) refuses fp16, and (0.7.1) MTP,
#: without mbridge; the precisions verl reads as fp16 (``PrecisionType``'s ``HALF_LIST``).
FP16_RELEASES, MTP_BRIDGE_RELEASES, HALF = ("0.6.1", "0.7.0", "0.7.1"), ("0.7.1",), ("16", "fp16", "float16")
#: The releases with the optimal token baseline (0.7.1 on; 0.7.0 has no such estimator, ``verl-choice``).
BASELINE_RELEASES = ("0.7.1", "0.8.0", "0.9.0", "0.9.1")
#: 0.9.0's per-token loss refuses this aggregation unless context parallelism is dynamic; the modes it names.
AGG_RELEASES, AGG_REFUSED, AGG_ACCEPTED = ("0.9.0",), "seq-mean-token-mean", \
    "token-mean, seq-mean-token-sum, seq-mean-token-sum-norm"


def _release(version: Optional[str]) -> Optional[str]:
    parsed = (release_tuple(version or "") or ())[:3]
    return ".".join(map(str, parsed)) if len(parsed) == 3 else None


def late_issues(version: Optional[str], entry: Optional[str], cfg: DictConfig,
                parsed: Sequence[Override]) -> list[Issue]:
    release = _release(version)
    if release is None:
        return []
    written = {o.key_or_group for o in parsed if not o.is_delete()}
    severity = entry_severity(entry)
    on = lambda key: select(cfg, key) is True  # noqa: E731
    site = lambda file: f"verl {release} {file}"  # noqa: E731
    v1 = release in V1_RELEASES and select(cfg, "trainer.use_v1") is not False  # 0.9.x's default trainer
    out: list[Issue] = []
    out += _metrics(release, cfg, written, severity, on, site)
    if release in QAT_RELEASES and on(QAT) and on(VANILLA) and written & {QAT, VANILLA}:
        out.append(issue(severity, VANILLA, tr(
            "{qat}=True builds through Megatron-Bridge, and {vanilla}=True selects mbridge: {site} stops with 'QAT "
            "requires non-vanilla Megatron bridge' when the workers build the model", qat=QAT, vanilla=VANILLA,
            site=site("MegatronEngine.__init__")), RULE,
            # no line: on the megatron-core 0.12 line no Megatron-Bridge imports (stack-bridge-import), and this layer
            # does not know the stack; the hint says where the line holds
            hint=tr("{vanilla}=False on a stack whose megatron-core imports Megatron-Bridge (the 0.16 and 0.18 "
                    "lines); on the 0.12 line QAT cannot run: {qat}=False", vanilla=VANILLA, qat=QAT)))
    out += _baseline(release, v1, cfg, written, severity, on)
    out += _legacy_worker(release, cfg, written, severity)
    if release in MTP_STATS_RELEASES and select(cfg, f"{ROLLOUT}.name") == "vllm" and on(STATS) \
            and on(f"{MODEL_MTP}.enable") and on(f"{MODEL_MTP}.enable_rollout") \
            and written & {STATS, f"{MODEL_MTP}.enable", f"{MODEL_MTP}.enable_rollout"}:
        out.append(issue(severity, STATS, tr(
            "{stats} is on ({value}) while the rollout drafts with MTP ({mtp}.enable_rollout=True): {site} stops at "
            "the first generation with 'vLLM MTP rollout requires request_spec_decode_stats; set "
            "disable_log_stats=False.'", stats=STATS, value="True", mtp=MODEL_MTP,
            site=site("verl/workers/rollout/vllm_rollout/vllm_async_server.py")), RULE, override=f"{STATS}=False"))
    if release not in V1_RELEASES:
        return out
    if on(PER_TOKEN) and select(cfg, PADDING) is False and written & {PER_TOKEN, PADDING}:
        out.append(issue(severity, PADDING, tr(
            "{per_token}=True needs the padding removed ({padding}=False here; the engine takes the model's key, not "
            "megatron.use_remove_padding): {site} stops at the first update", per_token=PER_TOKEN, padding=PADDING,
            site=site("postprocess_micro_batch_func")), RULE, override=f"{PADDING}=True"))
    if release in AGG_RELEASES and on(PER_TOKEN) and select(cfg, AGG) == AGG_REFUSED and not on(DYNAMIC_CP) \
            and written & {PER_TOKEN, AGG}:
        out.append(issue(severity, AGG, tr(
            "{agg}={value} beside {per_token}=True without dynamic context parallelism: {site} stops at the first "
            "update (\"loss_agg_mode='{value}' is incompatible with calculate_per_token_loss=True\")", agg=AGG,
            value=AGG_REFUSED, per_token=PER_TOKEN, site=site("postprocess_micro_batch_func")), RULE,
            hint=tr("{agg} one of {accepted}, or {per_token}=False", agg=AGG, accepted=AGG_ACCEPTED,
                    per_token=PER_TOKEN)))
    if v1 and on(BYPASS) and select(cfg, LOG_PROBS) is False and written & {BYPASS, LOG_PROBS}:
        out.append(issue(severity, LOG_PROBS, tr(
            "{bypass}=True takes the rollout's log-probs as the old ones, and {log_probs}=False has the rollout return "
            "none: {site}'s v1 trainer fails in the first step, after the first rollout", bypass=BYPASS,
            log_probs=LOG_PROBS, site=site("verl/trainer/ppo/v1/trainer_base.py")), RULE,
            override=f"{LOG_PROBS}=True"))
    return out


def _baseline(release: str, v1: bool, cfg: DictConfig, written: set, severity: str, on) -> list[Issue]:
    """The optimal token baseline, which reads ``sum_pi_squared`` from the actor's log-prob pass, on a Megatron actor;
    and that pass's own refusal of it beside the fused kernels (the legacy trainer's ``_compute_old_log_prob``)."""
    if select(cfg, f"{ACTOR}.strategy") != "megatron" or release not in BASELINE_RELEASES:
        return []
    legacy = release != "0.7.1" and not v1  # 0.8.0, or 0.9.x with trainer.use_v1=False: asks for it when set
    fused_on = on(FUSED) and not on(f"{MODEL_MTP}.enable")  # MTP turns the engine's fused kernels off
    fused = legacy and on(SUM_PI) and fused_on and not on(BYPASS)
    out: list[Issue] = []
    if fused and written & {SUM_PI, FUSED}:
        out.append(issue(severity, FUSED, tr(
            "{sum_pi}=True beside {fused}=True: verl {release}'s Megatron engine refuses it in the actor's first "
            "log-prob pass ('calculate_sum_pi_squared=True is not supported with use_fused_kernels=True')",
            sum_pi=SUM_PI, fused=FUSED, release=release), RULE, override=f"{FUSED}=False"))
    estimator = select(cfg, ESTIMATOR)
    if estimator not in OPTIMAL or not written & {ESTIMATOR, SUM_PI, BYPASS, "trainer.use_v1"}:
        return out
    said = "('Step-dependent optimal baseline requires sum_pi_squared')"
    if release == "0.7.1":
        out.append(issue(severity, ESTIMATOR, tr(
            "{key}={value} needs sum_pi_squared from the actor's log-prob pass, which verl 0.7.1's Megatron workers "
            "never compute (its FSDP actor does): the first step stops at the advantage {said}", key=ESTIMATOR,
            value=estimator, said=said), RULE,
            hint=tr("another estimator, or verl 0.8.0 or later with {sum_pi}=True", sum_pi=SUM_PI)))
    elif v1:
        out.append(issue(severity, ESTIMATOR, tr(
            "{key}={value} needs sum_pi_squared from the actor's log-prob pass, which verl {release}'s v1 trainer "
            "(verl/trainer/ppo/v1; trainer.use_v1, the default) never asks for, whatever {sum_pi} says: the first "
            "step stops at the advantage {said}", key=ESTIMATOR, value=estimator, sum_pi=SUM_PI, release=release,
            said=said), RULE,
            hint=tr("the legacy trainer (trainer.use_v1=False with {sum_pi}=True) computes it; or another estimator",
                    sum_pi=SUM_PI)))
    elif on(BYPASS):
        out.append(issue(severity, ESTIMATOR, tr(
            "{key}={value} needs sum_pi_squared from the actor's log-prob pass, which {bypass}=True skips (the "
            "rollout's log-probs are the old ones): verl {release}'s first step stops at the advantage {said}",
            key=ESTIMATOR, value=estimator, bypass=BYPASS, release=release, said=said), RULE,
            hint=tr("{bypass}=False, or another estimator", bypass=BYPASS)))
    elif not on(SUM_PI):
        line = f"{SUM_PI}=True" + (f" {FUSED}=False" if fused_on else "")
        out.append(issue(severity, SUM_PI, tr(
            "{key}={value} needs sum_pi_squared from the actor's log-prob pass, which verl {release}'s trainer asks "
            "for only with {sum_pi}=True: the first step stops at the advantage {said}", key=ESTIMATOR,
            value=estimator, sum_pi=SUM_PI, release=release, said=said), RULE, override=line))
    return out


def _legacy_worker(release: str, cfg: DictConfig, written: set, severity: str) -> list[Issue]:
    """The legacy Megatron worker's refusals without mbridge, each read with the ``use_mbridge`` its worker takes."""
    if release not in FP16_RELEASES or worker_mode(cfg, era_of(release)) != LEGACY:
        return []
    roles = active_roles(cfg)
    # (role, the dtype its worker reads, the use_mbridge it reads): the actor's dtype serves the reference; 0.6.1
    # reads the actor's use_mbridge for both
    read = [("actor", f"{ACTOR}.megatron.dtype", f"{ACTOR}.megatron.use_mbridge")]
    if "ref" in roles and release != "0.6.1" and "actor_rollout_ref.ref.megatron.use_mbridge" in written:
        # unwritten, it is the actor's (an interpolation): the actor's issue and line cover it
        read.append(("ref", f"{ACTOR}.megatron.dtype", "actor_rollout_ref.ref.megatron.use_mbridge"))
    if "critic" in roles:
        read.append(("critic", "critic.megatron.dtype", "critic.megatron.use_mbridge"))
    mtp = release in MTP_BRIDGE_RELEASES and select(cfg, f"{MODEL_MTP}.enable") is True
    out: list[Issue] = []
    for role, dtype, bridge in read:
        if select(cfg, bridge) is not False or not written & {dtype, bridge, f"{MODEL_MTP}.enable"}:
            continue
        half = str(select(cfg, dtype)) in HALF
        if half:
            said = "fp16 mode requires use_mbridge to be True"
        elif mtp and role != "critic":
            said = "MTP requires use_mbridge to be True"
        else:
            continue
        out.append(issue(severity, bridge, tr(
            "{bridge}=False while {why}: verl {release}'s legacy Megatron worker stops with '{said}' when the "
            "{role}'s worker starts", bridge=bridge, why=f"{dtype}={select(cfg, dtype)}" if half else
            f"{MODEL_MTP}.enable=True", release=release, said=said, role=role), RULE, override=f"{bridge}=True"))
    return out


def _metrics(release: str, cfg: DictConfig, written: set, severity: str, on, site) -> list[Issue]:
    """The rollout's metrics read with their stats off, where the release's rollout servers are started."""
    if release not in METRICS or not on(STATS) or not written & {STATS, PROMETHEUS, "trainer.logger"}:
        return []
    if release == "0.6.1" and select(cfg, f"{ROLLOUT}.mode") != "async":
        return []  # 0.6.1's sync mode starts no server, and reads neither
    said, file = METRICS[release]
    loggers = select(cfg, "trainer.logger")
    insight = said != _OLD_METRICS and isinstance(loggers, (list, tuple, ListConfig)) \
        and "rl_insight" in [str(x) for x in loggers]
    if not (on(PROMETHEUS) or insight):
        return []
    return [issue(severity, STATS, tr(
        "{stats} is on ({value}) while {what} reads the rollout's metrics: {site} stops with '{said}' once every "
        "rollout server has launched", stats=STATS, value="True",
        what=PROMETHEUS if on(PROMETHEUS) else "trainer.logger=rl_insight", said=said, site=site(file)), RULE,
        override=f"{STATS}=False")]


__all__ = ["late_issues"]
