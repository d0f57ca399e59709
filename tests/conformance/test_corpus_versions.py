"""The corpus of real launch lines, put back the way its authors wrote them: every key the corpus dropped to fit
verl 0.9.1 (its headers say which) is explained with the releases it belongs to, and passes on verl 0.9.0.

Reads the corpus outside the repository (``VERL_MINDSPEED_CORPUS``), so it lives in the conformance layer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import sources

from conftest import unavailable


@pytest.fixture(scope="module")
def corpus() -> Path:
    folder = sources.corpus_dir()
    if folder is None or not folder.is_dir():
        unavailable("no corpus of launch lines: set VERL_MINDSPEED_CORPUS (or VERL_MINDSPEED_UPSTREAM beside it)")
    try:
        import verl  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        unavailable(f"verl is not importable: {exc!r}")
    return folder


def _dropped(path: Path) -> list[str]:
    header = [ln for ln in path.read_text().splitlines() if ln.startswith("# adapted")]
    return re.findall(r"dropped (\S+) \(not in verl 0\.9\.1 config\)", header[0]) if header else []


def _check(capsys, *argv: str) -> dict:
    from verl_mindspeed.cli import main

    main(["check", "--json", *argv])
    return {e["key"]: e for e in json.loads(capsys.readouterr().out)["errors"]}


def test_every_dropped_corpus_key_is_explained_with_its_releases(corpus, capsys):
    """Put back what the corpus dropped to fit verl 0.9.1: the check names the releases the key belongs to."""
    from verl_mindspeed.compose import _trees
    from verl_mindspeed.errors import EvaluationError
    from verl_mindspeed.launch import read_args_file

    drops = [(path, key) for path in sorted(corpus.glob("*.args")) for key in _dropped(path)]
    assert len(drops) >= 2
    try:
        _trees.fetch_tree("0.9.0")
    except EvaluationError as exc:
        unavailable(f"verl 0.9.0's tree: {exc}")
    for path, key in drops:
        argv = [*read_args_file(str(path)), f"{key}=True"]
        err = _check(capsys, *argv)[key]
        assert err["rule"] == "verl-key-removed" and "0.4.1 to 0.9.0" in err["message"], (path.name, err)
        assert key not in _check(capsys, "--verl-version", "0.9.0", *argv), path.name


def test_the_dapo_recipe_entry_is_judged_without_a_checkout(corpus, capsys):
    """The corpus' DAPO lines ran under recipe.dapo.main_dapo, which verl's wheel does not ship: the launch names
    verl's own Megatron trainer config, which is composed as it is, with a note on the entry."""
    import json

    from verl_mindspeed.cli import main
    from verl_mindspeed.launch import read_args_file

    path = corpus / "run_dapo_moonlight-16b_megatron_npu.args"
    entry = path.read_text().splitlines()[0].split("python3 -m ")[1].strip()
    assert main(["check", "--json", "--entry", entry, *read_args_file(str(path))]) == 0
    data = json.loads(capsys.readouterr().out)
    assert any(n["rule"] == "entry-standin" and entry in n["message"] for n in data["notes"])
