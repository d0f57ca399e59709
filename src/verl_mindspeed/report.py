"""Text renderers shared by the CLI and the Hydra callback: the feature table per role, issues with their fixes,
and the whole report of one check."""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Any, Iterable, Optional

from . import catalog
from .errors import Issue
from .i18n import Msg, render, tr, trn

if TYPE_CHECKING:
    from .resolver import Resolution

ROLE_ORDER = ("actor", "ref", "critic")
#: The note on a MindSpeed switch outside the feature guide that no hand rule covers.
UNCHECKED = "no-hand-rule"
#: Notes on what the user wrote that the check could not judge: quiet reports keep them.
KEPT_WHEN_QUIET = frozenset({UNCHECKED, "bare-config-dir"})

#: JSON output's layout version: bumped when a field changes meaning or disappears (new fields do not bump it).
SCHEMA_VERSION = 1

#: Fixed words of the text report (render with ``render(LABELS[name], lang)``).
LABELS = {
    "errors": tr("Errors"), "warnings": tr("Warnings"), "notes": tr("Notes"), "hint": tr("hint"), "fix": tr("fix"),
    "feature": tr("feature"), "on": tr("on"), "off": tr("off"), "ok": tr("OK"), "failed": tr("FAILED"),
    "injected": tr("Injected into the dicts MindSpeed reads"),
}


def feature_state(feature: catalog.Feature, settings: dict[str, dict[str, Any]]) -> str:
    """What a role's resolved settings say about one feature: a size, a value, on, off or '-'."""
    flag = feature.primary
    # the dict as verl builds it: what the role's engine hands to repatch (verl 0.8+ adds FA and the CP size)
    built = {**settings["override_transformer_config"], **(settings.get("repatch") or {})}
    source = settings["megatron"] if flag.where == "megatron" else built
    value = source.get(flag.name)
    if value is None and feature.shown_otherwise == "engine.sequence_parallel":
        tp = settings["megatron"].get("tensor_model_parallel_size")
        value = bool(settings["megatron"].get("sequence_parallel")) and _int(tp) > 1
    elif value is None and feature.shown_otherwise.startswith("megatron."):
        value = settings["megatron"].get(feature.shown_otherwise.partition(".")[2])
    elif value is None and feature.shown_otherwise.startswith("dict."):
        value = built.get(feature.shown_otherwise.partition(".")[2])
    if value is None:
        return "-"
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)


def _int(value: Any) -> int:
    """A size as an int (a string or list the checks report elsewhere counts as 1 here)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def width(text: str) -> int:
    """Columns a string takes in a terminal: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def table(rows: list[list[str]]) -> str:
    widths = [max(width(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell + " " * (w - width(cell)) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def feature_table(roles: dict[str, dict[str, dict[str, Any]]], lang: str = "en") -> str:
    names = [r for r in ROLE_ORDER if r in roles]
    rows = [[render(LABELS["feature"], lang), *names]]
    for feature in catalog.FEATURES:
        label = render(feature.name, lang)
        states = (feature_state(feature, roles[r]) for r in names)
        rows.append([label, *(render(LABELS[s], lang) if s in ("on", "off") else s for s in states)])
    return table(rows)


def in_place_of(arg: str) -> Msg:
    """What a fix line that replaces an argument Hydra refuses (``Issue.replaces``) says under it."""
    return tr("(in place of '{arg}': Hydra stops at that argument as written)", arg=arg)


def fix_line(issue: Issue, argv: Iterable[str]) -> Optional[str]:
    """A corrected override for the issue: the rule's own, or the user's line under the suggested key."""
    from .resolver import suggested_line

    return issue.override or suggested_line(issue, argv)


def issues_block(title: str, mark: str, issues: list[Issue], argv: list[str], lang: str = "en") -> list[str]:
    if not issues:
        return []
    out = [f"{title} ({len(issues)})"]
    for i in issues:
        out.append(f"  {mark} {i.key}" + (f"  ({i.location})" if i.location else ""))
        out.append(f"      {render(i.message, lang)}")
        if i.hint:
            out.append(f"      {render(LABELS['hint'], lang)}: {render(i.hint, lang)}")
        fix = fix_line(i, argv)
        if i.deletes:
            shown = ", ".join(f"'{a}'" for a in i.deletes[:4]) + (" ..." if len(i.deletes) > 4 else "")
            out.append(f"      {render(LABELS['fix'], lang)}:  " + render(trn(
                "delete the argument {args}", "delete the arguments {args}", len(i.deletes), args=shown), lang)
                + (f"; {fix}" if fix else ""))
        elif fix:
            out.append(f"      {render(LABELS['fix'], lang)}:  {fix}")
            if i.replaces:
                out.append(f"      {render(in_place_of(i.replaces), lang)}")
    return out


def failed(res: "Resolution", fail_on: str = "error") -> bool:
    """Whether the check fails: errors, or with ``fail_on="warning"`` warnings too."""
    return bool(res.errors or (fail_on == "warning" and res.warnings))


def report(res: "Resolution", argv: list[str], elapsed: float, lang: str = "en", fail_on: str = "error",
           quiet: bool = False) -> str:
    """The text report; ``quiet``: only the problems (errors and warnings) and the verdict line."""
    v = res.versions
    lines = [] if quiet else [
        f"verl-mindspeed check  |  verl {v.get('verl')}  |  MindSpeed {res.release}  |  {v.get('verl_config')}",
        *([stack_line(res.stack, lang)] if res.stack is not None else []), ""]
    for name, settings in ({} if quiet else res.presets).items():
        lines.append(render(tr("Preset mindspeed={name} sets:", name=name), lang))
        lines += [f"  {key}={value}" for key, value in settings.items()]
        lines.append("")
    if res.roles and not quiet:
        lines += [feature_table(res.roles, lang), ""]
    lines += issues_block(render(LABELS["errors"], lang), "✗", res.errors, argv, lang)
    lines += issues_block(render(LABELS["warnings"], lang), "!", res.warnings, argv, lang)
    # quiet keeps the switches the user wrote that no check here judged: a bare OK would hide them
    notes = [i for i in res.notes if i.rule != "inject" and (not quiet or i.rule in KEPT_WHEN_QUIET)]
    lines += issues_block(render(LABELS["notes"], lang), "·", notes, argv, lang)
    injected = sorted({i.key.rsplit(".", 1)[-1] for i in res.notes if i.rule == "inject" and "added" in i.message})
    if injected and not quiet:
        lines.append(f"{render(LABELS['injected'], lang)}: {', '.join(injected)}")
    roles = ", ".join(r for r in ROLE_ORDER if r in res.roles) or "-"
    verdict = render(LABELS["failed"] if failed(res, fail_on) else LABELS["ok"], lang)
    summary = tr("{counts}; roles checked: {roles}", counts=counts(len(res.errors), len(res.warnings)), roles=roles)
    unchecked = sum(i.rule == UNCHECKED for i in res.notes)
    if unchecked:
        summary = tr("{summary}; {switches}", summary=summary, switches=trn(
            "{n} switch not checked here", "{n} switches not checked here", unchecked, n=unchecked))
    lines.append(f"{verdict}: {render(summary, lang)}; {elapsed:.2f} s")
    return "\n".join(lines)


def stack_line(stack: Any, lang: str) -> str:
    """The stack judged, each layer marked assumed where it was neither found here nor given by an option."""
    def layer(name: str, text: str) -> str:
        assumed = render(tr("assumed"), lang)
        return text + (f" ({assumed})" if stack.source.get(name) == "assumed" else "")

    parts = [f"verl {stack.verl}",
             layer("megatron-bridge", f"Megatron-Bridge {stack.megatron_bridge}" if stack.megatron_bridge
                   else render(tr("no Megatron-Bridge"), lang)),
             layer("mbridge", f"mbridge {stack.mbridge}" if stack.mbridge else render(tr("no mbridge"), lang)),
             layer("megatron_core", f"megatron-core {stack.megatron_core}"),
             layer("mindspeed", f"MindSpeed {stack.mindspeed}")]
    text = render(tr("stack: {layers}", layers=" · ".join(parts)), lang)
    if stack.assumed:
        text += "  " + render(tr("(say what your cluster runs: --mindspeed-release, --megatron-core, --bridge)"), lang)
    return text


def counts(n_err: int, n_warn: int) -> Msg:
    """``2 errors, 1 warning`` in the reader's language."""
    return tr("{errors}, {warnings}", errors=trn("{n} error", "{n} errors", n_err, n=n_err),
              warnings=trn("{n} warning", "{n} warnings", n_warn, n=n_warn))


def json_report(res: "Resolution", lang: str = "en", fail_on: str = "error") -> dict[str, Any]:
    """The JSON object of one check: the resolution, its messages in ``lang``, the exit status it gives."""
    data = res.to_json()
    code = 1 if failed(res, fail_on) else 0
    data.update({
        "ok": code == 0,
        "errors": [i.to_json(lang) for i in res.errors],
        "warnings": [i.to_json(lang) for i in res.warnings],
        "notes": [i.to_json(lang) for i in res.notes],
    })
    return {"schema_version": SCHEMA_VERSION, "exit_code": code, "lang": lang, **data}
