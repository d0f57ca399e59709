"""Generated documentation pages, one per language: write them, or (``--check``) say which differ."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]


def main(doc: str, pages: dict[str, Path], render: Callable[[str], str], tool: str) -> int:
    """The command line of a page generator: ``render(lang)`` is each page's text; exit 1 when one differs."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a page differs from what it says now")
    check = parser.parse_args().check
    drift = False
    for lang, path in pages.items():
        body = render(lang)
        if not check:
            path.write_text(body, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
        elif not path.is_file() or path.read_text(encoding="utf-8") != body:
            print(f"{path.relative_to(ROOT)} differs: run python {tool}")
            drift = True
    return 1 if drift else 0
