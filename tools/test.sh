#!/usr/bin/env bash
# Set up a virtual environment with the full CPU stack and run the whole test suite.
#   bash tools/test.sh            (what .ci/run runs; VENV=path to reuse another venv)
#
# The conformance layer (tests/conformance) runs MindSpeed's and Megatron-LM's own sources as the oracle.
# When those sources are found (VERL_MINDSPEED_UPSTREAM, or ../shared/upstream beside the repository) this
# script also builds the oracle venvs (tools/oracle_env.py) so the layer runs; without them it skips, visibly.
# VERL_MINDSPEED_REQUIRE_CONFORMANCE=1 (set by .ci/run) turns that skip into a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=${PYTHON:-python3}

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# torch is pinned to the CPU wheel: an unpinned torch (pulled in by verl) is a multi-GB CUDA build.
"$VENV/bin/python" -m pip install -q "torch==2.13.0" "verl==0.9.1" "megatron-core==0.12.1"
"$VENV/bin/python" -m pip install -q -e ".[test]"
# The config trees of verl 0.4.1 to 0.9.1, for the era and key-history tests (PyPI wheels, extracted once).
"$VENV/bin/python" tools/fetch_verl_trees.py all

if [ -z "${VERL_MINDSPEED_UPSTREAM:-}" ] && [ -d ../shared/upstream ]; then
  export VERL_MINDSPEED_UPSTREAM="$(cd ../shared/upstream && pwd)"
fi
if [ -n "${VERL_MINDSPEED_UPSTREAM:-}" ] || [ "${VERL_MINDSPEED_REQUIRE_CONFORMANCE:-}" = 1 ]; then
  start=$(date +%s)
  "$PY" tools/oracle_env.py
  echo "oracle venvs ready in $(( $(date +%s) - start )) s" >&2
fi

# Under CI every real-component test must run: a missing verl/megatron/ray is a failure, not a skip.
export VERL_MINDSPEED_FULL_STACK=1
set +e
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$status"
