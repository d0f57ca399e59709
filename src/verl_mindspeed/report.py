"""Text renderers shared by the CLI and the Hydra callback: the feature table per role, issues with their fixes,
and the whole report of one check."""

from __future__ import annotations

import unicodedata
from typing import Any, Iterable, Optional

from typing import TYPE_CHECKING

from . import catalog
from .errors import Issue

if TYPE_CHECKING:
    from .resolver import Resolution

ROLE_ORDER = ("actor", "ref", "critic")

#: Fixed words of the text report. Issue messages stay in English: they quote keys and upstream checks.
LABELS = {
    "en": {"errors": "Errors", "warnings": "Warnings", "notes": "Notes", "hint": "hint", "fix": "fix",
           "preset": "Preset mindspeed={name} sets:", "injected": "Injected into the dicts MindSpeed reads",
           "ok": "OK", "failed": "FAILED", "summary": "{n_err} error(s), {n_warn} warning(s); roles checked: {roles}"},
    "zh": {"errors": "错误", "warnings": "警告", "notes": "提示", "hint": "说明", "fix": "修正",
           "preset": "预设 mindspeed={name} 设置了：", "injected": "已写入 MindSpeed 读取的字典",
           "ok": "通过", "failed": "未通过", "summary": "{n_err} 个错误，{n_warn} 个警告；检查的角色：{roles}"},
}


def feature_state(feature: catalog.Feature, settings: dict[str, dict[str, Any]]) -> str:
    """What a role's resolved settings say about one feature: a size, a value, on, off or '-'."""
    flag = feature.primary
    source = settings["megatron"] if flag.where == "megatron" else settings["override_transformer_config"]
    value = source.get(flag.name)
    if feature.id == "cp":
        value = settings["megatron"].get("context_parallel_size", value)
    if feature.id == "recompute":
        value = source.get("recompute_granularity")
    if feature.id == "sp" and value is None:
        tp = settings["megatron"].get("tensor_model_parallel_size") or 1
        value = bool(settings["megatron"].get("sequence_parallel")) and tp > 1
    if feature.id == "distributed_optimizer" and value is None:
        value = settings["megatron"].get("use_distributed_optimizer")
    if value is None:
        return "-"
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)


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
    rows = [["feature" if lang == "en" else "特性", *names]]
    for feature in catalog.FEATURES:
        label = feature.name if lang == "en" else feature.name_zh
        rows.append([label, *(feature_state(feature, roles[r]) for r in names)])
    return table(rows)


def fix_line(issue: Issue, argv: Iterable[str]) -> Optional[str]:
    """A corrected override for the issue: the rule's own, or the user's line with the suggested key."""
    if issue.override:
        return issue.override
    if not issue.suggestion:
        return None
    for arg in argv:
        prefix = arg[: len(arg) - len(arg.lstrip("+~"))]
        key, eq, value = arg[len(prefix):].partition("=")
        if key == issue.key and eq:
            return f"{prefix}{issue.suggestion}={value}"
    return None


def issues_block(title: str, mark: str, issues: list[Issue], argv: list[str], lang: str = "en") -> list[str]:
    if not issues:
        return []
    words = LABELS[lang]
    out = [f"{title} ({len(issues)})"]
    for i in issues:
        out.append(f"  {mark} {i.key}")
        out.append(f"      {i.message}")
        if i.hint:
            out.append(f"      {words['hint']}: {i.hint}")
        fix = fix_line(i, argv)
        if fix:
            out.append(f"      {words['fix']}:  {fix}")
    return out


def report(res: "Resolution", argv: list[str], elapsed: float, lang: str = "en") -> str:
    words = LABELS[lang]
    v = res.versions
    lines = [f"verl-mindspeed check  |  verl {v.get('verl')}  |  MindSpeed {res.release}  |  {v.get('verl_config')}", ""]
    for name, settings in res.presets.items():
        lines.append(words["preset"].format(name=name))
        lines += [f"  {key}={value}" for key, value in settings.items()]
        lines.append("")
    if res.roles:
        lines += [feature_table(res.roles, lang), ""]
    lines += issues_block(words["errors"], "✗", res.errors, argv, lang)
    lines += issues_block(words["warnings"], "!", res.warnings, argv, lang)
    notes = [i for i in res.notes if i.rule != "inject"]
    lines += issues_block(words["notes"], "·", notes, argv, lang)
    injected = sorted({i.key.rsplit(".", 1)[-1] for i in res.notes if i.rule == "inject" and "added" in i.message})
    if injected:
        lines.append(f"{words['injected']}: {', '.join(injected)}")
    roles = ", ".join(r for r in ROLE_ORDER if r in res.roles) or "-"
    verdict = words["ok"] if res.ok else words["failed"]
    summary = words["summary"].format(n_err=len(res.errors), n_warn=len(res.warnings), roles=roles)
    lines.append(f"{verdict}: {summary}; {elapsed:.2f} s")
    return "\n".join(lines)
