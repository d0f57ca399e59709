"""``verl-mindspeed doctor``: from a failed run's log to the launch key at fault and the line that fixes it.

:func:`diagnose` reads the log (:mod:`._log`), takes each first raise, matches it to its upstream raise site
(:mod:`._sites`, an index generated from every release's sources), binds the values its message printed to the
expressions the site formats and maps the fields its condition reads to launch keys (:mod:`._blame`,
:mod:`._settings`). With the launch given, ``check`` replays it (:mod:`._replay`): a cause is *confirmed* when
``check`` reproduces the failure on that key and its fix clears it. Without it, the site's own condition, run on the
printed values, gives the nearest value that would not have raised (:mod:`._fix`), or the flag its message advises
(:mod:`._advice`). A failure no launch key caused (a package's version, the environment, memory or network,
upstream code) blames no key and says what it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional, Sequence

from ..i18n import Msg, tr
from ..launch import LaunchFile
from ._ascend import npu_devices
from ._blame import (
    Cause,
    Verdict,
    environment,
    fields_of,
    lifted_after,
    not_the_launch,
    paths_for,
)
from ._choice import verl_choice
from ._chosen import chosen
from ._config import (
    accessed,
    appended,
    hydra_advice,
    hydra_key,
    logged_arguments,
    logged_launch,
    parent_missing,
    refused,
    refused_override,
)
from ._cut import cut_raise
from ._engines import rollout_refusal
from ._faq import faq_answer
from ._feature import feature_code
from ._fix import helpless
from ._later import fixed_later
from ._log import Raised, exceptions, roots
from ._match import generic, match
from ._memory import with_estimate
from ._own import OWN, REPORT, guard_verdict, joined, own_report, own_verdict
from ._preload import static_tls
from ._provider import provider_field
from ._replay import Replay, issue_causes, replay
from ._said import named, pointed
from ._schedule import schedule_groups
from ._settings import movable, settings, unique, written_keys
from ._sites import Match
from ._stack import code_access, dataclass_refusal, explain, full_key, unexpected_field
from ._stated import stated
from ._switch import switched
from ._untyped import error_lines, known_lines, quoted
from ._verl import written_as
from ._zero import divided_by_zero

#: At most this many distinct first raises are explained (a log of a thousand workers repeats one).
MOST = 8


@dataclass
class Failure:
    raised: Raised
    site: Optional[Match]
    verdict: Verdict


@dataclass
class Diagnosis:
    failures: list[Failure] = field(default_factory=list)
    lines: int = 0
    raised: int = 0
    """How many exceptions the log shows (every worker's, wrappers included)."""
    launch_given: bool = False
    launch_from_log: bool = False
    """The launch replayed is the override list Hydra printed in the log (none was given)."""

    @property
    def causes(self) -> list[Cause]:
        return unique(joined([c for f in self.failures if f.raised.type in OWN for c in f.verdict.causes])
                      + [cause for f in self.failures if f.raised.type not in OWN for cause in f.verdict.causes])

    @property
    def exit_code(self) -> int:
        if not self.failures:
            return 2
        return 1 if all(f.verdict.kind == "unknown" for f in self.failures) else 0


def diagnose(text: str, argv: Optional[Sequence[str]] = None, source: Optional[LaunchFile] = None,
             upstream: Optional[Callable] = None, **options: Any) -> Diagnosis:
    """The diagnosis of a log; ``argv``/``source`` the launch that failed (replayed by ``check`` with ``options``:
    ``verl_version``, ``release``, ``model_config``...; ``upstream`` adds ``check --upstream``'s run to the replay)."""
    found = exceptions(text) or own_report(text) or known_lines(text) or quoted(text) or cut_raise(text) \
        or error_lines(text)
    logged = logged_launch(text) if argv is None and found else None
    if logged is not None:  # Hydra printed the launch's overrides: replay them (a Megatron key: verl's Megatron config)
        argv = (["--config-name=ppo_megatron_trainer"] if any(".megatron." in a or a.endswith("strategy=megatron")
                                                              for a in logged) else []) + logged
    launch = replay(list(argv), source, upstream, **options) if argv is not None else None
    own = bool(found) and all(r.type == REPORT for r in found)  # check's report: every error, each its own line
    firsts = roots(found)[:None if own else MOST]
    appends = {**appended(found), **logged_arguments(text)}  # the list Hydra printed holds them as written
    path = source.path if source is not None else None
    return Diagnosis([_one(r, launch, options, appends, path) for r in firsts], len(text.splitlines()), len(found),
                     argv is not None, logged is not None)


def _ran(options: dict) -> dict[str, str]:
    """The release of each package the user said ran (``--verl-version``, ``--mindspeed-release`` in any of its
    forms, ``--megatron-core``, ``--bridge``): a release that keeps a raise is never told it lacks the fix."""
    from ..catalog.universe import canonical_release

    out = {"verl": options.get("verl_version"), "megatron-core": options.get("megatron_core"),
           "mindspeed": canonical_release(options["release"]) or options["release"] if options.get("release") else None,
           **(options.get("bridge") or {})}
    return {package: str(version) for package, version in out.items() if version}


def _one(raised: Raised, launch: Optional[Replay], options: dict, appends: dict[str, str],
         path: Optional[str] = None) -> Failure:
    site = match(raised)
    verdict = with_estimate(_verdict(raised, site, launch, options, appends), raised, launch, path)
    if _composition(raised, site):  # Hydra's or OmegaConf's: the key is the argument the user wrote
        return Failure(raised, site, verdict)
    return Failure(raised, site, replace(verdict, causes=_aswritten(verdict.causes, launch, appends, options)))


def _aswritten(causes: list[Cause], launch: Optional[Replay], appends: dict[str, str],
                options: dict) -> list[Cause]:
    """Each cause a raise's fields gave, under the key a user writes: a key verl's config copies from another (the
    rollout's prompt_length is data.max_prompt_length) is that other key, unless the launch (or the override list
    the log shows) writes the copy itself. A copy whose source is named too stays (the ref's use_mbridge beside the
    actor's: releases that do not copy it need both); a deletion, or a line that is not ``key=value``, stays."""
    out, named = [], {c.key for c in causes}
    written = set(launch.keys() if launch is not None else ()) | set(appends)
    for cause in causes:
        key = written_as(cause.key, options.get("verl_version")) if "." in cause.key else cause.key
        plain = cause.fix is None or cause.fix.startswith(cause.key + "=")
        if key == cause.key or key in named or cause.key in written or cause.delete or not plain:
            out.append(cause)
            continue
        fix = f"{key}={cause.fix.split('=', 1)[1]}" if cause.fix else None
        out.append(replace(cause, key=key, fix=fix))
    return unique(out)


def _verdict(raised: Raised, site: Optional[Match], launch: Optional[Replay], options: dict,
             appends: Optional[dict[str, str]] = None) -> Verdict:
    what = _what(raised, site)
    own = own_verdict(raised, what, launch, options) or guard_verdict(raised, what)
    if own is not None:  # this project's check stopped the launch (the callback, the launcher) or the API refused it
        return own
    reproduced = _reproduced(raised, launch)
    if reproduced:  # the replay raised the log's own message (check --upstream runs MindSpeed's code on the launch)
        return Verdict("override", what, issue_causes(launch, reproduced, **options), (), "confirmed")
    hydra = hydra_key(raised, site) if _composition(raised, site) else None
    advice = hydra_advice(raised) if hydra is not None else None
    if advice is not None:  # Hydra's own line: the override without the '+' its key already has
        return Verdict("override", tr("{what}: the config already has {key}; Hydra's own advice is the line without "
                                      "the '+'", what=what, key=advice[0]), [Cause(advice[0], advice[1])],
                       (advice[0].rsplit(".", 1)[-1],), "likely")
    if hydra is not None:
        access = code_access(raised)
        if access is not None:
            return accessed(full_key(raised, hydra[0]), *access, what, options)
        key = full_key(raised, hydra[0])
        dataclass = dataclass_refusal(raised)
        by_override = refused_override(raised.message) or raised.type == "ConfigCompositionException" or any(
            fn == "_apply_overrides_to_config" for _f, _l, fn in raised.frames) or dataclass
        return refused(key, (appends or {}).get(key) or hydra[1], what, launch, options, by_override,
                       raised.type == "MissingMandatoryValue", parent_missing(raised, key), dataclass)
    lacking = provider_field(raised, what, launch, appends or {}, options)
    if lacking is not None:  # a key of override_transformer_config the model's config class has no field for
        return lacking
    alone = static_tls(raised) or npu_devices(raised, what, launch) \
        or rollout_refusal(raised, what, launch, options.get("verl_version")) \
        or schedule_groups(raised, what, launch, options) \
        or verl_choice(raised, what, launch, options.get("verl_version")) \
        or faq_answer(raised, what, options.get("verl_version"))
    if alone is not None:  # the loader's, Ray's, the rollout engine's, verl's FAQ: the message alone says it
        return alone
    env = environment(raised, site)
    if env is not None:
        return Verdict("env", tr("{what}: the environment variable {var} decides it", what=what, var=env.key), [env],
                       certainty="likely")
    fields = fields_of(site) if site is not None else []
    package = site.site.package if site is not None else "verl"
    chains = site.site.chains if site is not None else ()
    settable = [f for f in fields
                if paths_for(f, package, chains) or (launch and written_keys(launch, f) and paths_for(f))]
    settable = [f for f in settable if site is None or not helpless(site, f)]  # no value of it passes: not its fault
    settable = [f for f in settable if movable(f, launch)]
    if site is not None and settable:
        verdict = settings(site, settable, _lifted(what, site), launch, options)
        if verdict.certainty == "confirmed" or any(c.fix for c in verdict.causes):
            return verdict  # otherwise the message's own values, or the switch the check sits under, may be the way out
        said = stated(raised, site, verdict.what, launch, options)
        if said is not None and any(c.fix for c in said.causes):
            leaves = {c.key.rsplit(".", 1)[-1] for c in said.causes}  # the message's role for a name it states
            rest = [c for c in verdict.causes if c.key.rsplit(".", 1)[-1] not in leaves]
            return replace(said, causes=unique(said.causes + rest), fields=verdict.fields + said.fields)
        return switched(site, verdict.what, launch, options, verdict.causes, verdict.fields) or verdict
    verdict = explain(raised, site, launch) or not_the_launch(raised, site)
    if verdict.kind == "upstream" and site is not None and generic(site):  # a helper's words: whose values, unknown
        verdict = named(raised, None, options.get("verl_version")) or Verdict("unknown", _what(raised, None))
    if verdict.kind == "upstream":  # a condition on values verl derives, where the message states the settings
        verdict = stated(raised, site, what, launch, options) or pointed(raised, site) or verdict
    if verdict.kind == "upstream" and site is not None:  # or the switch it sits under, which the message names
        verdict = switched(site, _lifted(what, site), launch, options, message=raised.message[:2000]) or verdict
    if verdict.kind == "upstream":  # a condition on its own arguments, one of which prints a setting's choice
        verdict = chosen(site, what, raised.message) or verdict
    if verdict.kind == "upstream":  # reached through the code of a feature the launch turns on
        verdict = feature_code(raised, what, launch, options, upstream=True) or verdict
    if verdict.kind in ("upstream", "unknown"):  # a call later releases make inside a try that keeps this raise
        verdict = fixed_later(raised, _ran(options)) or verdict
    # what a raise no index holds prints of verl's settings, where it is not a version, memory or network failure
    if verdict.kind == "unknown":  # a feature's own code failing (not a check), where the launch turns it on
        verdict = feature_code(raised, what, launch, options) or verdict
    if verdict.kind == "unknown":
        verdict = named(raised, site, options.get("verl_version")) or divided_by_zero(raised) or verdict
    return verdict


def _lifted(what: Msg, site: Match) -> Msg:
    """The failure's words, and where a later release of the package dropped or relaxed the check, that release:
    the setting is at fault on this one, and upgrading also removes it."""
    lifted = lifted_after(site)
    if lifted is None:
        return what
    return tr("{what} ({package} {release} relaxes this check to accept these values: upgrading also removes it)",
              what=what, package=site.site.package, release=lifted[0]) if lifted[1] else \
        tr("{what} (a check {package} {release} no longer has: upgrading also removes it)", what=what,
           package=site.site.package, release=lifted[0])


def _reproduced(raised: Raised, launch: Optional[Replay]) -> list:
    """The replay's errors whose message holds the log's exception message (at least a sentence of it)."""
    first = " ".join(raised.message.split("\n")[0].split())
    if launch is None or len(first) < 24:
        return []
    return [i for i in launch.issues if i.severity == "error" and first in " ".join(str(i.message).split())]


def _composition(raised: Raised, site: Optional[Match]) -> bool:
    return raised.type in ("ConfigCompositionException", "ConfigKeyError", "ConfigAttributeError",
                           "MissingMandatoryValue") or (site is not None and site.site.package in ("hydra-core",
                                                                                                   "omegaconf")) \
        or unexpected_field(raised) is not None


def _what(raised: Raised, site: Optional[Match]) -> Msg:
    first = raised.first_line[:240]
    if raised.cut:  # the frame's statement stands for the message the log lost
        first = str(tr("{code} (the log ends at this line: the raise is shown, its message is not)",
                       code=first))
    if site is None:
        return tr("{type}: {message}", type=raised.type, message=first)
    releases = ", ".join(site.releases[:4]) + (" ..." if len(site.releases) > 4 else "")
    return tr("{type} raised at {file} ({package} {releases}, {function}): {message}", type=raised.type,
              file=site.site.file, package=site.site.package, releases=releases, function=site.site.function,
              message=first)


__all__ = ["Cause", "Diagnosis", "Failure", "Verdict", "diagnose"]
