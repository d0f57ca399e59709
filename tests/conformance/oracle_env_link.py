"""``tools/oracle_env.py`` importable from the tests (the tools folder is not a package)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from oracle_env import LINES, ensure, python_of, ready  # noqa: E402,F401
