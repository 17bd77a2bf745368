#!/usr/bin/env bash
# Set-up, then the main job on local Spark. Arguments go to the job (see --help).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
bash dev/bootstrap.sh >&2
exec .venv/bin/python -m jetspark.demo "$@"
