"""The catalogue covers every row of the user's feature guide (``VERL_MINDSPEED_SEED``, or ``seed/`` beside the
upstream folder): one entry per row, with exactly the guide's keys and status."""

from __future__ import annotations

import sources

from conftest import unavailable
from verl_mindspeed import catalog


def seed_rows() -> list[tuple[str, list[str], str]]:
    """(name, keys, status) of every table row in the guide."""
    path = sources.seed_file()
    if path is None:
        unavailable("no feature guide: set VERL_MINDSPEED_SEED (or VERL_MINDSPEED_UPSTREAM beside it)")
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and "." in cells[1]:
            rows.append((cells[0], [k.strip() for k in cells[1].split("<br>")], cells[2]))
    return rows


def test_every_seed_row_is_a_catalogue_entry():
    rows = seed_rows()
    assert len(rows) == 18  # 12 features + 6 fused operators
    for name, keys, status in rows:
        matches = [f for f in catalog.FEATURES if f.source == "seed" and list(f.seed_keys) == keys]
        assert len(matches) == 1, f"{name}: no catalogue entry with exactly the keys {keys}"
        assert matches[0].status == status, name
