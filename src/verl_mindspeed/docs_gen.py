"""Everything generated from the catalogue and the rules: the feature, rule and deliberate-check pages and the
schema's field declarations.

    python -m verl_mindspeed.docs_gen          # rewrite the generated files
    python -m verl_mindspeed.docs_gen --check  # exit 1 when a generated file drifted
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from . import catalog
from .catalog import Flag, From, Injection
from .i18n import render, text, tr

ROOT = Path(__file__).resolve().parents[2]
HEADER = ("<!-- Generated from src/verl_mindspeed/catalog and rules by `python -m verl_mindspeed.docs_gen`. "
          "Do not edit. -->\n")


def annotation(flag: Flag) -> str:
    """The Python type of a flag, as written in the generated schema (constraints as pydantic ``Field``)."""
    base = {
        "bool": "bool",
        "int": f"Annotated[int, Field(ge={flag.minimum})]" if flag.minimum is not None else "int",
        "str": f"Literal[{', '.join(repr(c) for c in flag.choices)}]" if flag.choices else "str",
        "layers": "Union[str, int, list[int]]",
        "str_list": f"list[Literal[{', '.join(repr(c) for c in flag.choices)}]]",
    }[flag.type]
    return f"Optional[{base}]"


def _default_text(flag: Flag) -> str:
    if flag.default is None and not flag.default_note:
        return "unset"
    value = "" if flag.default is None else f"`{flag.default!r}`"
    return ", ".join(p for p in (value, flag.default_note) if p)


def schema_source() -> str:
    lines = [
        '"""Field declarations of the schema, generated from the catalogue. Do not edit:',
        "run ``python -m verl_mindspeed.docs_gen``.",
        '"""',
        "",
        "# fmt: off",
        "from __future__ import annotations",
        "",
        "from dataclasses import field",
        "from typing import Annotated, Literal, Optional, Union",
        "",
        "from pydantic import Field",
        "from pydantic.dataclasses import dataclass",
        "",
        "from ._base import STRICT, SchemaBase, schema",
        "",
        "",
    ]
    sections = (
        ("TransformerOverrides", "otc", "Keys under ``<role>.megatron.override_transformer_config``."),
        ("MegatronSettings", "megatron", "Keys directly under ``<role>.megatron``."),
    )
    for cls, where, doc in sections:
        lines += ["@schema", "@dataclass(kw_only=True, config=STRICT)", f"class {cls}(SchemaBase):", f'    """{doc}"""',
                  ""]
        for flag in catalog.flags(where):
            lines.append(f"    {flag.name}: {annotation(flag)} = None")
            lines.append(f'    """{flag.help} Feeds {flag.feeds}. Default: {_default_text(flag)}."""')
            lines.append("")
        lines.append("")
    lines += [
        "@schema",
        "@dataclass(kw_only=True, config=STRICT)",
        "class MindSpeedConfigFields(MegatronSettings):",
        '    """A role\'s ``megatron`` section: its settings and its ``override_transformer_config``."""',
        "",
        "    override_transformer_config: TransformerOverrides = field(default_factory=TransformerOverrides)",
        '    """MindSpeed and Megatron keys verl hands to MindSpeed\'s ``repatch`` and to ``TransformerConfig``."""',
        "",
    ]
    return "\n".join(lines)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _injection(inj: Injection, say: Callable[[Any], str]) -> str:
    """One injection of a feature, as its line of the feature pages."""
    key = f"`{inj.key}`" if inj.key else say(tr("each dimension"))
    value = say(text(catalog.SOURCES[inj.value.source])) if isinstance(inj.value, From) else f"`{inj.value}`"
    switches = ", ".join(f"`{s}`" for s in inj.when)
    when = [say(tr("{switch} is on", switch=switches) if len(inj.when) == 1 else
                tr("any of {switches} is on", switches=switches))] if inj.when else []
    when += [say(text(catalog.CONDITIONS[c])) for c in inj.requires]
    condition = say(tr(", when {conditions}", conditions="; ".join(when))) if when else ""
    return say(tr("Injected by a launch through verl-mindspeed: {key} = {value}{when}. {why}", key=key, value=value,
                  when=condition, why=text(inj.why)))


def features_markdown(lang: str = "en") -> str:
    """The feature pages in ``lang``: every text through the message catalogue, as the CLI prints it."""
    say = lambda text: render(text, lang)  # noqa: E731
    out = [HEADER, say(tr("# MindSpeed features and fused operators")) + "\n"]
    for kind, title in (("feature", tr("Features")), ("fused_op", tr("Fused operators"))):
        out.append(f"\n## {say(title)}\n")
        out.append(say(tr("| Feature | Config keys | Status | What it does |")))
        out.append("|---|---|---|---|")
        for f in (x for x in catalog.FEATURES if x.kind == kind):
            keys = "<br>".join(f"`{k}`" + (say(tr(" (the guide's `{alias}` is an alias)", alias=g)) if g else "")
                               for k, g in f.keys)
            desc = say(f.description)
            if f.source != "seed":
                desc += say(tr(" (row from MindSpeed's own verl guide)"))
            out.append(f"| {say(f.name)} | {keys} | {f.status} | {_md_cell(desc)} |")
    out.append("\n" + say(tr("## Every key")) + "\n")
    for f in catalog.FEATURES:
        out.append(f"\n### {say(f.name)} (`{f.id}`)\n")
        out.append(say(tr("| Key | Type | Values | Default | Feeds | Meaning |")))
        out.append("|---|---|---|---|---|---|")
        for fl in f.flags:
            where = "megatron." if fl.where == "megatron" else "megatron.override_transformer_config."
            values = ", ".join(f"`{c}`" for c in fl.choices) or (f">= {fl.minimum}" if fl.minimum else "")
            if fl.nullable:
                values += ", `null`" if values else "`null`"
            help_text = say(fl.help)
            if fl.aliases:
                help_text += say(tr(" Aliases: {aliases}", aliases=", ".join(f"`{a}`" for a in fl.aliases)))
            out.append(f"| `{where}{fl.name}` | {fl.type} | {values} | {_md_cell(_default_text(fl))} | "
                       f"{_md_cell(fl.feeds)} | {_md_cell(help_text)} |")
        extra = []
        if f.companions:
            extra.append(say(tr("Companion settings: {keys}", keys=", ".join(f"`{c}`" for c in f.companions))))
        extra += [say(n) for n in f.notes]
        if f.rules:
            extra.append(say(tr("Checked by rules: {rules}", rules=", ".join(f"`{r}`" for r in f.rules))))
        extra += [_injection(inj, say) for inj in f.injects]
        out += ["", *(f"- {e}" for e in extra)] if extra else []
    out.append("")
    return "\n".join(out)


def rules_markdown() -> str:
    """One section per cross-field rule (the anchor CI annotations link to): what it checks, the upstream code it
    mirrors, the releases it holds for, and the features it guards."""
    from .rules import RULES

    guards: dict[str, list[str]] = {}
    for f in catalog.FEATURES:
        for r in f.rules:
            guards.setdefault(r, []).append(f.name)
    out = [HEADER, "# Cross-field rules\n",
           "Every rule `check` runs after the single-key checks, in registration order. A SARIF result links here "
           "by its `ruleId`.\n"]
    for r in RULES:
        out.append(f"## {r.id}\n")
        if r.doc:
            out.append(" ".join(r.doc.split()) + "\n")
        out.append(f"- Mirrors: {r.cites}")
        out.append(f"- Holds for: {r.holds_for}")
        out.append(f"- Scope: {'once per launch' if r.scope == 'run' else 'each role'}")
        if r.id in guards:
            out.append(f"- Guards: {', '.join(guards[r.id])}")
        out.append("")
    return "\n".join(out)


def deliberate_markdown(lang: str = "en") -> str:
    """The checks where ``check`` is stricter than the executed upstream code, each with its reason and the upstream
    source it answers to (``rules.beyond``: the list the conformance judge accepts)."""
    from .rules import beyond

    say = lambda text: render(text, lang)  # noqa: E731
    out = [HEADER, say(tr("# Deliberate checks: where check is stricter than upstream")) + "\n",
           say(tr("The conformance judge accepts exactly these differences from what verl's, MindSpeed's and "
                  "megatron-core's own code do on verl's config path; any other difference is a bug of the rules. "
                  "Each row names the upstream source it answers to.")) + "\n"]
    for title, table in ((tr("## Errors upstream does not raise"), beyond.ERRORS),
                         (tr("## Warnings upstream cannot give"), beyond.WARNINGS)):
        out += [say(title) + "\n", say(tr("| Rule | Why | Source |")), "|---|---|---|"]
        out += [f"| `{rule_id}` | {_md_cell(say(why))} | {_md_cell(beyond.cites(rule_id))} |"
                for rule_id, why in table.items()]
        out.append("")
    return "\n".join(out)


def generated_files() -> dict[Path, str]:
    return {
        ROOT / "docs" / "deliberate.md": deliberate_markdown("en"),
        ROOT / "docs" / "zh" / "deliberate.md": deliberate_markdown("zh"),
        ROOT / "docs" / "rules.md": rules_markdown(),
        ROOT / "docs" / "features.md": features_markdown("en"),
        ROOT / "docs" / "zh" / "features.md": features_markdown("zh"),
        Path(__file__).resolve().parent / "schema" / "_generated.py": schema_source(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate (or --check) the files made from the catalogue.")
    parser.add_argument("--check", action="store_true")
    ns = parser.parse_args(argv)
    drift = []
    for path, content in generated_files().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == content:
            continue
        if ns.check:
            drift.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
            print(f"wrote {path}")
    for path in drift:
        print(f"out of date: {path} (run python -m verl_mindspeed.docs_gen)", file=sys.stderr)
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
