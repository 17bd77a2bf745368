#!/usr/bin/env bash
# The whole test run: set-up, the JVM tests (sbt test), then pytest. Arguments go to pytest.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
bash dev/bootstrap.sh test
exec .venv/bin/python -m pytest "$@"
