#!/usr/bin/env bash
# The conformance layer: build (or reuse) the upstream environments, then run tests/conformance against the upstream
# sources, with every skip turned into a failure.
#   bash tools/conformance.sh                       (what CI runs after tools/test.sh)
#   VERL_MINDSPEED_DIFFERENTIAL_CASES=300 bash tools/conformance.sh -k differential
# VENV: the project's venv (verl, megatron-core 0.12.1, pytest), as tools/test.sh builds it.
# VERL_MINDSPEED_UPSTREAM: the folder of upstream archives/folders (default ../shared/upstream).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=${PYTHON:-python3}
start=$(date +%s)
"$VENV/bin/python" -m verl_mindspeed upstream-env
echo "upstream environments ready in $(( $(date +%s) - start )) s" >&2
export VERL_MINDSPEED_UPSTREAM=${VERL_MINDSPEED_UPSTREAM:-$(cd .. && pwd)/shared/upstream}
export VERL_MINDSPEED_REQUIRE_CONFORMANCE=1
export VERL_MINDSPEED_DIFFERENTIAL_CASES=${VERL_MINDSPEED_DIFFERENTIAL_CASES:-150}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
set +e
"$VENV/bin/python" -m pytest -q -p no:cacheprovider -W ignore tests/conformance "$@"
status=$?
set -e
echo "conformance run: $(( $(date +%s) - start )) s" >&2
if [ "$status" -eq 5 ]; then
  echo "no conformance test collected: failing" >&2
  exit 1
fi
exit "$status"
