#!/usr/bin/env bash
# Installs what is missing, builds everything with -Werror (Release) and runs every test through
# ctest, then the unit tests with clang 16; then builds the tests again with AddressSanitizer +
# UBSan and runs them there, and the unit tests with ThreadSanitizer to run the data
# pipeline's (threaded) tests there.
#
#   scripts/test.sh                  # both passes
#   scripts/test.sh --no-sanitize    # the first pass only (or MEMOPT_SKIP_SANITIZE=1)
#
# Environment: MEMOPT_JOBS (parallel jobs, default 2), MEMOPT_SKIP_SANITIZE=1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

sanitize=1
[[ ${MEMOPT_SKIP_SANITIZE:-0} == 1 ]] && sanitize=0
for arg in "$@"; do
  case "$arg" in
    --no-sanitize) sanitize=0 ;;
    --sanitize) sanitize=1 ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
jobs=${MEMOPT_JOBS:-2}

section() { printf '\n==== %s ====\n' "$*"; }
start=$SECONDS

section "dependencies"
bash scripts/deps.sh

# Release (-O3) because it is what users type first, and GCC's -O3 warns where -O2 does not.
section "configure build (Release, tests + examples + benchmarks)"
cmake -S . -B build -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DMEMOPT_WERROR=ON \
  -DMEMOPT_BUILD_TESTS=ON -DMEMOPT_BUILD_EXAMPLES=ON -DMEMOPT_BUILD_BENCHMARKS=ON \
  -DMEMOPT_SANITIZE=OFF

section "build"
cmake --build build -j "$jobs"

section "ctest (build)"
ctest --test-dir build --output-on-failure -j "$jobs"

# The second supported compiler, with libstdc++: the unit tests only (the other tests check
# the build system or CUDA, which the first pass covers). -O1 without debug info keeps it
# short: about 10 minutes on 2 cores.
section "configure build-clang (clang 16, libstdc++, -O1, unit tests only)"
clang_start=$SECONDS
cmake -S . -B build-clang -G Ninja \
  -DCMAKE_CXX_COMPILER=clang++-16 \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1" \
  -DMEMOPT_WERROR=ON -DMEMOPT_ENABLE_CUDA=OFF -DMEMOPT_SANITIZE=OFF \
  -DMEMOPT_BUILD_TESTS=ON -DMEMOPT_BUILD_EXAMPLES=OFF -DMEMOPT_BUILD_BENCHMARKS=OFF

section "build-clang (memopt_unit_tests)"
cmake --build build-clang -j "$jobs" --target memopt_unit_tests

section "ctest (build-clang: unit)"
ctest --test-dir build-clang --output-on-failure -j "$jobs" -L unit
echo "clang pass: $((SECONDS - clang_start)) s"

if [[ $sanitize == 1 ]]; then
  section "configure build-asan (AddressSanitizer + UBSan, -O1, no CUDA)"
  cmake -S . -B build-asan -G Ninja \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
    -DMEMOPT_SANITIZE=ON -DMEMOPT_ENABLE_CUDA=OFF -DMEMOPT_WERROR=ON \
    -DMEMOPT_BUILD_TESTS=ON -DMEMOPT_BUILD_EXAMPLES=OFF -DMEMOPT_BUILD_BENCHMARKS=OFF

  section "build-asan"
  cmake --build build-asan -j "$jobs"

  # The self_contained and cmake tests check the build system, not run-time behaviour:
  # the first pass covers them.
  section "ctest (build-asan: unit and compile_fail)"
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -L 'unit|compile_fail'

  # Only the unit test executable is built here, and only the data tests (prefetch's and the
  # parallel map's worker threads) run: TSan slows everything else for nothing.
  section "configure build-tsan (ThreadSanitizer, -O1, unit tests only)"
  cmake -S . -B build-tsan -G Ninja \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
    -DCMAKE_CXX_FLAGS="-fsanitize=thread" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
    -DMEMOPT_SANITIZE=OFF -DMEMOPT_ENABLE_CUDA=OFF -DMEMOPT_WERROR=ON \
    -DMEMOPT_BUILD_TESTS=ON -DMEMOPT_BUILD_EXAMPLES=OFF -DMEMOPT_BUILD_BENCHMARKS=OFF

  section "build-tsan (memopt_unit_tests)"
  cmake --build build-tsan -j "$jobs" --target memopt_unit_tests

  section "ctest (build-tsan: unit.data_*)"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ctest --test-dir build-tsan --output-on-failure -j "$jobs" -R '^unit\.data_'
else
  section "sanitizer pass skipped"
fi

section "all tests passed in $((SECONDS - start)) s"
