#!/usr/bin/env bash
# Builds devplace against a CUDA-enabled LibTorch (the one inside PyTorch's wheel) on a GPU machine that has CUDA,
# PyTorch, CMake, ninja and a C++ compiler but no apt and no network (docs/executor.md, "Building against a CUDA
# LibTorch"). The CPU build (scripts/build.sh) stays the default and is untouched.
#
#   bash scripts/build-cuda.sh fetch          on a Debian 12 machine with apt (this repository's dev machine):
#                                             downloads the .debs of the build dependencies into .cuda-deps/debs
#   bash scripts/build-cuda.sh build [ARGS]   on the GPU machine: extracts them into .cuda-deps/root, configures
#                                             build-cuda against python3's torch and builds; ARGS go to the build
#                                             (e.g. `devplace exec_test`)
#   bash scripts/build-cuda.sh configure      only extracts and configures (checks that every dependency resolves)
#   bash scripts/build-cuda.sh test [ARGS]    runs the CUDA build's test suite (ctest; ARGS go to ctest, e.g. -j 8)
#
# Environment: TORCH_CMAKE_PREFIX overrides where Torch's CMake package is looked up (default: python3's
# torch.utils.cmake_prefix_path); CUDA_DEPS overrides the folder (default .cuda-deps, git-ignored; carry it to the
# GPU machine with the working tree); KEEP_GOING=1 makes the build go on past errors (to see them all at once).
#
# Symbols: the wheel's libtorch.so exports copies of some libstdc++ functions (std::filesystem::remove_all among them)
# that crash when called from outside it; programs list libstdc++ as their first needed library, so that the
# dynamic linker binds those names to libstdc++ itself (DEVPLACE_STDCXX_FIRST below: a directory link option of the
# top-level CMakeLists.txt; ctest's stdcxx_first_test checks the binaries). An earlier version passed it in
# CMAKE_EXE_LINKER_FLAGS, which on the GPU machine did not reach the binaries.
#
# ABI: PyTorch >= 2.6 wheels use the C++11 string ABI, as Debian's libraries do, so the extracted yaml-cpp, GoogleTest,
# benchmark, ONNX and protobuf link with the wheel's LibTorch; older wheels do not (see docs/executor.md). Debian 12's
# libraries need glibc >= 2.36 and libstdc++ from GCC >= 12 at run time.
set -euo pipefail
cd "$(dirname "$0")/.."

deps_dir=${CUDA_DEPS:-.cuda-deps}
root="$PWD/$deps_dir/root"

# Build dependencies and the shared libraries they need at run time; everything else (glibc, libstdc++, zlib, CUDA,
# LibTorch, Python) comes with the GPU machine. pybind11 and Python headers are not needed: the Python module is off
# in this build (the wheel's Python is not the one Debian's NumPy headers are for).
packages=(
  nlohmann-json3-dev libyaml-cpp-dev libyaml-cpp0.7 libcli11-dev
  libgloo-dev libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian libeigen3-dev
  libscotch-dev libscotch-7.0 libmetis-dev libmetis5
  libonnx-dev libonnx1 libonnxifi libprotobuf-dev libprotobuf32 libprotobuf-lite32 protobuf-compiler libprotoc32
  zlib1g-dev
)

fetch() {
  command -v apt-get >/dev/null || { echo "build-cuda: fetch needs apt-get (run it on a Debian 12 machine)" >&2; exit 1; }
  mkdir -p "$deps_dir/debs"
  (cd "$deps_dir/debs" && apt-get download "${packages[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true)
  local got
  got=$(find "$deps_dir/debs" -name '*.deb' | wc -l)
  if [ "$got" -lt "${#packages[@]}" ]; then
    echo "build-cuda: $deps_dir/debs has $got of ${#packages[@]} packages (apt-get update first?)" >&2
    exit 1
  fi
  echo "build-cuda: $got packages in $deps_dir/debs; carry $deps_dir to the GPU machine and run: bash scripts/build-cuda.sh build"
}

extract() {
  ls "$deps_dir"/debs/*.deb >/dev/null 2>&1 || {
    echo "build-cuda: no .debs in $deps_dir/debs: run 'bash scripts/build-cuda.sh fetch' on a machine with apt" >&2
    exit 1
  }
  if [ ! -f "$root/.extracted" ] || [ -n "$(find "$deps_dir/debs" -newer "$root/.extracted" -name '*.deb')" ]; then
    rm -rf "$root" && mkdir -p "$root"
    for deb in "$deps_dir"/debs/*.deb; do dpkg-deb -x "$deb" "$root"; done
    touch "$root/.extracted"
  fi
  # protoc and the test binaries load the extracted shared libraries; the compiler and linker find the headers and
  # libraries that are used without a CMake package (scotch, metis) there too.
  local libdir="$root/usr/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LIBRARY_PATH="$libdir${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export CPATH="$root/usr/include${CPATH:+:$CPATH}"
  export PATH="$root/usr/bin:$PATH"
}

torch_prefix() {
  if [ -n "${TORCH_CMAKE_PREFIX:-}" ]; then echo "$TORCH_CMAKE_PREFIX"; return; fi
  python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || {
    echo "build-cuda: python3 cannot import torch; set TORCH_CMAKE_PREFIX to the folder holding Torch/TorchConfig.cmake" >&2
    exit 1
  }
}

configure() {
  extract
  local torch
  torch=$(torch_prefix)
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$root/usr;$root/usr/lib/x86_64-linux-gnu/cmake;$torch" \
        -DProtobuf_PROTOC_EXECUTABLE="$root/usr/bin/protoc" \
        -DDEVPLACE_STDCXX_FIRST=ON \
        -DCMAKE_INSTALL_RPATH_USE_LINK_PATH=ON \
        -DDEVPLACE_PYTHON=OFF >/dev/null
}

case "${1:-}" in
  fetch) fetch ;;
  configure) configure ;;
  build) shift; configure; cmake --build build-cuda --parallel "$(nproc)" ${1:+--target "$@"} ${KEEP_GOING:+-- -k 0} ;;
  test) shift; extract; ctest --test-dir build-cuda --output-on-failure "$@" ;;
  *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
