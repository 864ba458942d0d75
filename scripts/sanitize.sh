#!/usr/bin/env bash
# Builds the LibTorch-free test binaries with ASan + UBSan (-DDEVPLACE_SANITIZE=ON, GCC, no recovery) into
# ./build-sanitize and runs them; any sanitizer finding fails the run. TESTS="core_test sim_test" picks a subset;
# extra arguments go to every test binary (e.g. --gtest_filter=...). docs/reliability.md lists what it covers.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a tests <<< "${TESTS:-core_test config_test datasets_test sim_test env_test agents_test}"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=g++ \
  -DDEVPLACE_SANITIZE=ON "${launcher[@]}" >/dev/null
cmake --build build-sanitize --parallel "$(nproc)" --target "${tests[@]}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
for t in "${tests[@]}"; do
  dir=${t%_test}
  echo "== $t"
  if ! "build-sanitize/tests/$dir/$t" --gtest_brief=1 "$@"; then failed+=("$t"); fi
done
if ((${#failed[@]})); then
  echo "sanitizer run failed: ${failed[*]}" >&2
  exit 1
fi
echo "sanitizer run passed: ${tests[*]}"
