#!/usr/bin/env bash
# The whole test run: set-up, the JVM tests (sbt test), the import-cycle check, then pytest. Arguments go to pytest.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
# One seed for the run's random tests, the JVM's and Hypothesis's, printed so that a failing run can be
# repeated: JETSPARK_TEST_SEED=<seed> bash dev/test.sh.
export JETSPARK_TEST_SEED=${JETSPARK_TEST_SEED:-$(( (RANDOM << 15) | RANDOM ))}
echo "test.sh: random tests seeded with JETSPARK_TEST_SEED=$JETSPARK_TEST_SEED" >&2
bash dev/bootstrap.sh test
# No import cycle among jetspark's Python modules nor among the JVM's packages (issue 23).
.venv/bin/python dev/check_imports.py
exec .venv/bin/python -m pytest --hypothesis-seed="$JETSPARK_TEST_SEED" "$@"
