#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs every test binary through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure "$@"
