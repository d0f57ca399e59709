"""docs/conformance.md (en and zh) names every check the conformance judge accepts as deliberately stricter than
MindSpeed (``verl_mindspeed.rules.beyond``), so a reader sees each exception the agreement table allows, with its
reason."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _exceptions() -> set[str]:
    from verl_mindspeed.rules import beyond

    return set(beyond.ERRORS) | set(beyond.WARNINGS)


def test_every_check_beyond_upstream_names_its_upstream_code():
    """Each check stricter than upstream cites the upstream code it mirrors or relies on."""
    from verl_mindspeed.rules import beyond

    assert sorted(n for n in _exceptions() if not beyond.cites(n)) == []


@pytest.mark.parametrize("doc", ["docs/conformance.md", "docs/zh/conformance.md"])
def test_every_deliberate_exception_is_documented(doc):
    names = _exceptions()
    assert len(names) > 10
    text = (ROOT / doc).read_text()
    assert sorted(n for n in names if f"`{n}`" not in text) == []
