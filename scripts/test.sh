#!/usr/bin/env bash
# Installs what is missing, builds everything with -Werror (Release, GCC, CUDA) and runs every
# test through ctest; then builds the unit tests with clang 16 under AddressSanitizer + UBSan
# and runs them and the compile_fail tests there; then the data pipeline's (threaded) tests
# under ThreadSanitizer.
#
#   scripts/test.sh                  # all three passes
#   scripts/test.sh --no-sanitize    # the clang pass without sanitizers, no TSan pass
#                                    # (or MEMOPT_SKIP_SANITIZE=1)
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
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
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

# The second supported compiler, clang 16 with libstdc++, builds the unit tests once more with
# AddressSanitizer + UBSan (-O1, line tables only: the slow part of a sanitized build is debug
# info) and runs them, and checks that every compile_fail program fails under clang too.
# One clang build serves both checks: GCC's sanitized build took three times as long.
# The self_contained, cmake and python tests check the build system: the first pass covers them.
if [[ $sanitize == 1 ]]; then
  sanitize_flag=ON
  section "configure build-clang (clang 16, AddressSanitizer + UBSan, -O1, no CUDA)"
else
  sanitize_flag=OFF
  section "configure build-clang (clang 16, -O1, no CUDA)"
fi
clang_start=$SECONDS
cmake -S . -B build-clang -G Ninja \
  -DCMAKE_CXX_COMPILER=clang++-16 \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
  -DMEMOPT_WERROR=ON -DMEMOPT_ENABLE_CUDA=OFF -DMEMOPT_SANITIZE=$sanitize_flag \
  -DMEMOPT_BUILD_TESTS=ON -DMEMOPT_BUILD_EXAMPLES=OFF -DMEMOPT_BUILD_BENCHMARKS=OFF

section "build-clang (memopt_unit_tests)"
cmake --build build-clang -j "$jobs" --target memopt_unit_tests

section "ctest (build-clang: unit and compile_fail)"
ctest --test-dir build-clang --output-on-failure -j "$jobs" -L 'unit|compile_fail'
echo "clang pass: $((SECONDS - clang_start)) s"

if [[ $sanitize == 1 ]]; then
  # ThreadSanitizer over the data tests only (prefetch's and the parallel map's worker
  # threads): memopt_data_tests is their own executable, so nothing else is built for it.
  section "configure build-tsan (clang 16, ThreadSanitizer, -O1, data tests only)"
  cmake -S . -B build-tsan -G Ninja \
    -DCMAKE_CXX_COMPILER=clang++-16 \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS="-fsanitize=thread" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
    -DMEMOPT_SANITIZE=OFF -DMEMOPT_ENABLE_CUDA=OFF -DMEMOPT_WERROR=ON \
    -DMEMOPT_BUILD_TESTS=ON -DMEMOPT_BUILD_EXAMPLES=OFF -DMEMOPT_BUILD_BENCHMARKS=OFF

  section "build-tsan (memopt_data_tests)"
  cmake --build build-tsan -j "$jobs" --target memopt_data_tests

  section "build-tsan: memopt_data_tests"
  # One OpenMP thread: libgomp is not instrumented, so TSan cannot see its barriers and would
  # report the writes of oneDNN's worker threads as races with the thread that called oneDNN.
  # The threads under test are memopt's own (prefetch, parallel map, replicas); tsan.supp
  # says why the interceptors that libdnnl calls are ignored.
  OMP_NUM_THREADS=1 \
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/unit/tsan.supp" \
    build-tsan/tests/unit/memopt_data_tests --no-version
else
  section "ThreadSanitizer pass skipped"
fi

section "all tests passed in $((SECONDS - start)) s"
