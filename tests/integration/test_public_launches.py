"""Every launch others wrote gets a verdict (exit 0 or 1, never 2), and docs/launches.md says which.

The launches are public Ascend launches kept as written (``tests/fixtures/public``: verl's examples and nightly jobs,
recipes, forks, unmerged pull requests; their sources in SOURCES.md), the script fixtures, the examples and, when it
is beside the repository, the real-script corpus. Each is read as ``check --args-file`` reads it and judged against
the installed verl; the page's table is what ``tools/public_launches.py`` writes from those verdicts and from each
launch's own release.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from helpers import FIXTURES, ROOT, require
from verl_mindspeed.launch import evaluate, read_launch_file

CORPUS = ROOT.parent / "shared" / "corpus" / "real-scripts"
LAUNCHES = sorted([*(FIXTURES / "public").glob("*.sh"), *(FIXTURES / "scripts").glob("*"),
                   *(ROOT / "examples").glob("*.args"), *(CORPUS.glob("*.args") if CORPUS.is_dir() else [])])


def _tool():
    spec = importlib.util.spec_from_file_location("public_launches", ROOT / "tools" / "public_launches.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", LAUNCHES, ids=lambda p: p.name)
def test_every_launch_gets_a_verdict(path: Path):
    """No launch is left unjudged: composition, the entry, the config name and every argument give issues, not an
    evaluation failure. A launch that ran on NPUs written for a verl with repatch is not refused for flash
    attention (the first-forward crash) when it never switched it off."""
    require("verl")
    source = read_launch_file(str(path), {"HOME": "/home/user"})
    res = evaluate(source.argv, source=source)
    assert res.versions["verl"]
    assert not [i for i in res.errors if i.rule == "flash-attn-mask-crash"
                and not any("use_flash_attn=False" in a for a in source.argv)], path.name


def test_the_public_launches_page_is_what_the_launches_give():
    require("verl")
    tool = _tool()
    assert len(tool.sources()) == len(list((FIXTURES / "public").glob("*.sh"))) >= 20
    for lang, page in tool.PAGES.items():
        assert page.read_text(encoding="utf-8") == tool.table(lang), \
            f"{page.relative_to(ROOT)} drifted: run python tools/public_launches.py"


#: Launches whose errors have no fix to write: an engine of another verl release (deleting its arguments would make
#: another launch), and MLA switched on for a model the check cannot read (its dimensions come from config.json).
NO_FIX = {"qwen3_8b_mindspeedllm_npu.sh": "verl-engine-other-release",
          "pr3628_qwen3_ascend_235b_r1_ascend_entry_npu.sh": "mla-dimensions"}


def test_check_fix_turns_the_failing_launches_into_ones_with_no_error(tmp_path, monkeypatch, capsys):
    """Each launch others wrote, copied and fixed in place by ``check --fix`` (twice at most), as a user would run
    it: the variables the script expects from the environment set, the model's config.json given where the check
    has the model. Every failing launch ends with no error but those with no fix to write."""
    import json
    import shutil

    from verl_mindspeed.cli import main

    require("verl")
    models = {"deepseek": "DeepSeek-V3", "moonlight": "Moonlight-16B-A3B-Instruct", "30b": "Qwen3-30B-A3B"}
    failing, left = 0, {}
    for path in [p for p in LAUNCHES if p.suffix == ".sh"]:
        copy = tmp_path / path.name
        shutil.copy(path, copy)
        for issue in read_launch_file(str(copy), {"HOME": "/home/user"}).issues:
            if issue.rule == "unset-variable":  # a path, or verl's default where the key takes a switch or a number
                monkeypatch.setenv(issue.message.params["name"], _placeholder(issue.key))
        text = path.read_text().lower()
        model = next((m for hint, m in models.items() if hint in text), None)
        given = ["--model-config", str(FIXTURES / "models" / model)] if model else []
        if main(["check", "--args-file", str(copy), *given, "--json"]) == 0:
            capsys.readouterr()
            continue
        failing += 1
        capsys.readouterr()
        for _ in range(2):
            code = main(["check", "--args-file", str(copy), *given, "--fix", "--json"])
            data = json.loads(capsys.readouterr().out)
            if code == 0:
                break
        if code:
            left[path.name] = sorted({e["rule"] for e in data["errors"]})
    assert failing >= 20
    assert {name: NO_FIX.get(name) in rules for name, rules in left.items()} == {n: True for n in left}, left
    assert set(left) <= set(NO_FIX)


def _placeholder(key: str) -> str:
    from omegaconf import OmegaConf

    from verl_mindspeed.compose import compose_argv

    default = OmegaConf.select(compose_argv(["--config-name=ppo_megatron_trainer"]).cfg, key or "", default=None)
    return str(default) if isinstance(default, (bool, int, float)) else "/data/placeholder"
