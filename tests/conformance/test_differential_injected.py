"""The judge of ``test_differential.py`` on the same launches made through verl-mindspeed (a preset, the callback
or the launcher): the oracle runs verl's code on the config after the project's injection.

A file of its own, so that the test workers (``--dist loadfile``) judge plain and injected launches side by side.
"""

from __future__ import annotations

import pytest
from test_differential import (  # noqa: F401  (the same tests, collected here on the injected launches)
    judge,
    test_matrix_covers_every_release,
    test_no_undocumented_disagreement,
    test_the_projects_upstream_run_raises_only_where_the_oracle_does,
    test_upstream_closes_what_the_hand_rules_only_note,
    test_upstream_never_says_ok_where_the_oracle_errs,
)


@pytest.fixture(scope="module")
def judged(oracle, verl_base):
    return judge(oracle, "injected")
