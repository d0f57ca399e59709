#!/usr/bin/env bash
# Set up a virtual environment with the full CPU stack (once) and run the whole test suite.
#   bash tools/test.sh            (what .ci/run runs; VENV=path to use another venv; extra arguments go to pytest)
#
# The environment is reused while it is up to date: a stamp in the venv records a digest of what decides its
# contents (pyproject.toml, this script, the tree fetcher); any change to them sets it up again.
#
# The conformance layer (tests/conformance) runs MindSpeed's and Megatron-LM's own sources as the oracle.
# When those sources are found (VERL_MINDSPEED_UPSTREAM, or ../shared/upstream beside the repository) this
# script also builds the upstream environments (verl-mindspeed upstream-env, reused the same way) so the layer runs; without them
# it skips, visibly. VERL_MINDSPEED_REQUIRE_CONFORMANCE=1 (set by .ci/run) turns that skip into a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=${PYTHON:-python3}
STAMP="$VENV/.verl-mindspeed-test-env"
want=$(cat pyproject.toml tools/test.sh tools/fetch_verl_trees.py | "$PY" -c "import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())")

if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "test environment $VENV is up to date: reused" >&2
else
  start=$(date +%s)
  echo "setting up $VENV: torch 2.13 (CPU), verl 0.9.1, megatron-core 0.12.1, the test tools (once, a few minutes)" >&2
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  pip=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
  "${pip[@]}" --upgrade pip
  # torch's CPU wheel, asked for by name: a plain torch==2.13.0 (or one pulled in by verl) is a multi-GB CUDA
  # build. An index or wheel folder that already offers the +cpu build is used first; else PyTorch's CPU index.
  "${pip[@]}" "torch==2.13.0+cpu" 2>/dev/null \
    || "${pip[@]}" "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu
  "${pip[@]}" "torch==2.13.0+cpu" "verl==0.9.1" "megatron-core==0.12.1"
  "${pip[@]}" -e ".[test]"
  # The config trees of verl 0.4.1 to 0.9.1, for the era and key-history tests (PyPI wheels, extracted once).
  "$VENV/bin/python" tools/fetch_verl_trees.py all >/dev/null
  echo "$want" > "$STAMP"
  echo "test environment ready in $(( $(date +%s) - start )) s" >&2
fi

if [ -z "${VERL_MINDSPEED_UPSTREAM:-}" ] && [ -d ../shared/upstream ]; then
  export VERL_MINDSPEED_UPSTREAM="$(cd ../shared/upstream && pwd)"
fi
if [ -n "${VERL_MINDSPEED_UPSTREAM:-}" ] || [ "${VERL_MINDSPEED_REQUIRE_CONFORMANCE:-}" = 1 ]; then
  "$VENV/bin/python" -m verl_mindspeed upstream-env >/dev/null
fi

# Under CI every real-component test must run: a missing verl/megatron/ray is a failure, not a skip.
export VERL_MINDSPEED_FULL_STACK=1
# Two workers (pytest-xdist): the tiers spread over both cores; each conformance module keeps its oracle workers.
set +e
"$VENV/bin/python" -m pytest -q -p no:cacheprovider -n "${TEST_WORKERS:-2}" --dist loadfile "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$status"
