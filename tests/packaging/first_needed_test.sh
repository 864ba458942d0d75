#!/usr/bin/env bash
# Checks that LIB is the first needed library (DT_NEEDED) of every BINARY: a build with DEVPLACE_STDCXX_FIRST
# (CUDA builds on PyTorch's wheel, scripts/build-cuda.sh) must list libstdc++ first, or names that the wheel's
# libtorch.so also exports (std::filesystem::remove_all) bind to its copies and crash.
#   first_needed_test.sh LIB BINARY...
set -euo pipefail
lib=$1
shift
status=0
for binary in "$@"; do
  first=$(readelf -d "$binary" | awk '/\(NEEDED\)/ { gsub(/[][]/, "", $NF); print $NF; exit }')
  if [ "$first" != "$lib" ]; then
    echo "first_needed_test: $binary: first needed library is '$first', expected '$lib'" >&2
    status=1
  fi
done
exit $status
