"""The generated data files the catalogue ships (``data/*.json``), read once each."""

from __future__ import annotations

import json
from importlib import resources
from typing import Optional


def read_json(name: str, missing: Optional[dict] = None) -> dict:
    """``data/<name>`` parsed; ``missing`` where the file is absent and the caller has a stand-in (else it raises)."""
    try:
        text = resources.files(__package__).joinpath("data", name).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        if missing is None:
            raise
        return missing
    return json.loads(text)
