"""verl 0.9.1's own refusals that only its workers, its rollout servers or its first step reach, read from its
source on the path ``main_ppo`` takes by default (``trainer.use_v1``, the engine workers): what the launch writes
decides each, and none is refused before Ray starts.

- ``prometheus.enable`` (or ``rl_insight`` among ``trainer.logger``) with the rollout's ``disable_log_stats`` on, its
  default: ``Metrics monitoring requires disable_log_stats=False`` once every vLLM server has launched.
- The actor's ``megatron.qat.enable`` with ``vanilla_mbridge``: ``QAT requires non-vanilla Megatron bridge`` when the
  workers build the model. No line: ``vanilla_mbridge=False`` needs a stack where Megatron-Bridge imports, which the
  megatron-core 0.12 line is not (``stack-bridge-import``); the hint says so.
- ``override_transformer_config.calculate_per_token_loss`` without ``model.use_remove_padding`` (the engine takes the
  model's, not ``megatron.use_remove_padding``): ``calculate_per_token_loss=True requires use_remove_padding=True`` at
  the first update.
- ``algorithm.rollout_correction.bypass_mode`` with the rollout's ``calculate_log_probs`` off: the v1 trainer takes
  the rollout's log-probs as the old ones, and the rollout returns none; the first step fails.
- ``adv_estimator`` ``optimal_token_baseline`` or ``tir_optimal_token_baseline`` under the v1 trainer: its log-prob
  pass never asks for ``sum_pi_squared``, so ``Step-dependent optimal baseline requires sum_pi_squared`` at the first
  step, whatever ``calculate_sum_pi_squared`` says (the legacy trainer, ``trainer.use_v1=False``, computes it). No
  line: which trainer to run is the user's choice.

Only verl 0.9.1 is judged (the release read); only what the launch writes; through another entry, a warning.
"""

from __future__ import annotations

from typing import Optional, Sequence

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, ListConfig

from .._version import release_tuple
from ..catalog import OTC
from ..errors import Issue
from ..i18n import tr
from ..model.verl_options import select
from ..rules._base import issue
from ._entry import entry_severity

RELEASE = "0.9.1"
RULE = "verl-late-check"
ROLLOUT, ACTOR = "actor_rollout_ref.rollout", "actor_rollout_ref.actor"
STATS, PROMETHEUS = f"{ROLLOUT}.disable_log_stats", f"{ROLLOUT}.prometheus.enable"
QAT, VANILLA = f"{ACTOR}.megatron.qat.enable", f"{ACTOR}.megatron.vanilla_mbridge"
PER_TOKEN, PADDING = f"{ACTOR}.megatron.{OTC}.calculate_per_token_loss", "actor_rollout_ref.model.use_remove_padding"
BYPASS, LOG_PROBS = "algorithm.rollout_correction.bypass_mode", f"{ROLLOUT}.calculate_log_probs"
ESTIMATOR, OPTIMAL = "algorithm.adv_estimator", ("optimal_token_baseline", "tir_optimal_token_baseline")
_SITE = f"verl {RELEASE} {{file}}"


def late_issues(version: Optional[str], entry: Optional[str], cfg: DictConfig,
                parsed: Sequence[Override]) -> list[Issue]:
    if (release_tuple(version or "") or ())[:3] != release_tuple(RELEASE):
        return []
    written = {o.key_or_group for o in parsed if not o.is_delete()}
    severity = entry_severity(entry)
    on = lambda key: select(cfg, key) is True  # noqa: E731
    v1 = select(cfg, "trainer.use_v1") is not False
    out: list[Issue] = []

    loggers = select(cfg, "trainer.logger")
    insight = isinstance(loggers, (list, tuple, ListConfig)) and "rl_insight" in [str(x) for x in loggers]
    if on(STATS) and (on(PROMETHEUS) or insight) and written & {STATS, PROMETHEUS, "trainer.logger"}:
        out.append(issue(severity, STATS, tr(
            "{stats} is on ({value}) while {what} reads the rollout's metrics: {site} stops with 'Metrics monitoring "
            "requires disable_log_stats=False' once every vLLM server has launched", stats=STATS, value="True",
            what=PROMETHEUS if on(PROMETHEUS) else "trainer.logger=rl_insight",
            site=_SITE.format(file="verl/workers/rollout/llm_server.py")), RULE, override=f"{STATS}=False"))
    if on(QAT) and on(VANILLA) and written & {QAT, VANILLA}:
        out.append(issue(severity, VANILLA, tr(
            "{qat}=True builds through Megatron-Bridge, and {vanilla}=True selects mbridge: {site} stops with 'QAT "
            "requires non-vanilla Megatron bridge' when the workers build the model", qat=QAT, vanilla=VANILLA,
            site=_SITE.format(file="MegatronEngine.__init__")), RULE,
            # no line: on the megatron-core 0.12 line no Megatron-Bridge imports (stack-bridge-import), and this layer
            # does not know the stack; the hint says where the line holds
            hint=tr("{vanilla}=False on a stack whose megatron-core imports Megatron-Bridge (the 0.16 and 0.18 "
                    "lines); on the 0.12 line QAT cannot run: {qat}=False", vanilla=VANILLA, qat=QAT)))
    if on(PER_TOKEN) and select(cfg, PADDING) is False and written & {PER_TOKEN, PADDING}:
        out.append(issue(severity, PADDING, tr(
            "{per_token}=True needs the padding removed ({padding}=False here; the engine takes the model's key, not "
            "megatron.use_remove_padding): {site} stops at the first update", per_token=PER_TOKEN, padding=PADDING,
            site=_SITE.format(file="postprocess_micro_batch_func")), RULE, override=f"{PADDING}=True"))
    if v1 and on(BYPASS) and select(cfg, LOG_PROBS) is False and written & {BYPASS, LOG_PROBS}:
        out.append(issue(severity, LOG_PROBS, tr(
            "{bypass}=True takes the rollout's log-probs as the old ones, and {log_probs}=False has the rollout return "
            "none: {site}'s v1 trainer fails in the first step, after the first rollout", bypass=BYPASS,
            log_probs=LOG_PROBS, site=_SITE.format(file="verl/trainer/ppo/v1/trainer_base.py")), RULE,
            override=f"{LOG_PROBS}=True"))
    estimator = select(cfg, ESTIMATOR)
    if v1 and estimator in OPTIMAL and ESTIMATOR in written:
        out.append(issue(severity, ESTIMATOR, tr(
            "{key}={value} needs sum_pi_squared from the actor's log-prob pass, which verl {release}'s v1 trainer "
            "(verl/trainer/ppo/v1; trainer.use_v1, the default) never asks for, whatever "
            "{actor}.calculate_sum_pi_squared says: the first step stops at the advantage ('Step-dependent optimal "
            "baseline requires sum_pi_squared')", key=ESTIMATOR, value=estimator, actor=ACTOR, release=RELEASE), RULE,
            hint=tr("the legacy trainer (trainer.use_v1=False with {actor}.calculate_sum_pi_squared=True) computes "
                    "it; or another estimator", actor=ACTOR)))
    return out


__all__ = ["late_issues"]
