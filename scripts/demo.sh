#!/usr/bin/env bash
# Sets up, builds and runs the main demo (the README's first command).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
.venv/bin/python examples/demo.py
# The benchmark report on its small suite: eager against compiled, kiln against torch (python/kiln/bench/).
.venv/bin/python -m kiln.bench --quick --out build/kiln-bench-report
