#!/usr/bin/env bash
# scripts/gpu-check.sh in dry-run mode (MEMOPT_GPU_CHECK_DRY_RUN=1), on a machine without a
# GPU: fake nvidia-smi, nvcc and compute-sanitizer on PATH, a fake .deps/root, and checks of
# what the script prints, writes and returns. Usage: gpu_check_dry_run.sh SOURCE_DIR
set -uo pipefail
src=${1:?usage: gpu_check_dry_run.sh SOURCE_DIR}
script=$src/scripts/gpu-check.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Fake tools: what the script asks nvidia-smi, nvcc and compute-sanitizer, answered.
mkdir -p "$work/bin" "$work/deps/usr"
cat >"$work/bin/nvidia-smi" <<'SH'
#!/usr/bin/env bash
case "$*" in
  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-00000000-fake)" ;;
  *driver_version*) echo "570.00.fake" ;;
  *) echo "fake nvidia-smi" ;;
esac
SH
cat >"$work/bin/nvcc" <<'SH'
#!/usr/bin/env bash
echo "Cuda compilation tools, release 12.8, V12.8.fake"
SH
cat >"$work/bin/compute-sanitizer" <<'SH'
#!/usr/bin/env bash
echo "NVIDIA (R) Compute Sanitizer Version 2025.1.fake"
SH
chmod +x "$work/bin/"*
# cmake, ninja, bash and coreutils come from this machine; nothing else of CUDA may be found.
base_path=$work/bin:/usr/local/bin:/usr/bin:/bin

# run_check NAME ENV...: runs the script with ENV, output in $work/NAME.txt, OUT in
# $work/NAME; sets $rc.
run_check() {
  local name=$1
  shift
  env -i HOME="$HOME" PATH="$base_path" OUT="$work/$name" MEMOPT_DEPS_ROOT="$work/deps" \
    MEMOPT_GPU_CHECK_DRY_RUN=1 "$@" bash "$script" >"$work/$name.txt" 2>&1
  rc=$?
}
expect() {  # expect NAME PATTERN FILE: FILE (relative to $work) contains PATTERN
  grep -q -- "$2" "$work/$3" || fail "$1: '$2' not in $3: $(tail -n 20 "$work/$3")"
}
steps=(configure build gpu-tests memcheck racecheck initcheck example bench-cuda torch)

# 1. Every step passes: says what it checks first, records the machine, exits 0, and the
#    summary lists every step as passed.
run_check all
((rc == 0)) || fail "all: exit $rc, expected 0: $(tail -n 30 "$work/all.txt")"
head -n 1 "$work/all.txt" | grep -q "first the prerequisites" ||
  fail "all: the first line does not say what is checked first"
expect all "DRY RUN" all.txt
expect all "570.00.fake" all/machine.txt
expect all "release 12.8" all/machine.txt
for s in "${steps[@]}"; do
  expect all "| $s | pass |" all/summary.md
  [[ -f $work/all/$s.log ]] || fail "all: no $s.log"
done
# One build of the three CUDA targets, going on past a failure; ctest with a per-test timeout.
expect all "\[dry run\] cmake --build build-gpu -j [0-9]* -- -k 0 memopt_cuda_tests bench_cuda_steps fashion_mnist_cuda\$" \
  all/build.log
expect all "ctest.*--test-dir.*-L.*gpu.*--timeout" all/gpu-tests.log

# 2. A failing step fails the run (exit 1) and the later steps still run.
run_check failing MEMOPT_GPU_CHECK_DRY_FAIL=memcheck
((rc == 1)) || fail "failing: exit $rc, expected 1"
expect failing "| memcheck | FAIL (exit 1) |" failing/summary.md
expect failing "| torch | pass |" failing/summary.md

# 3. The budget: steps of 8 s in a 14 s budget. The second step is cut to the 5 or 6 s left
#    and times out; the rest are skipped; the table and summary are still there (exit 1).
run_check budget MEMOPT_GPU_CHECK_DRY_SLEEP=8 MEMOPT_CHECK_BUDGET=14
((rc == 1)) || fail "budget: exit $rc, expected 1: $(tail -n 20 "$work/budget.txt")"
expect budget "| configure | pass |" budget/summary.md
expect budget "| build | FAIL (timed out after [56]s) |" budget/summary.md
expect budget "| torch | skipped (past the 14s budget) |" budget/summary.md
expect budget "==== gpu-check:" budget.txt

# 4. Only skips, no failure: exit 3 (a budget too small for any step).
run_check skipped MEMOPT_CHECK_BUDGET=4
((rc == 3)) || fail "skipped: exit $rc, expected 3"
expect skipped "| configure | skipped" skipped/summary.md

# 5. Missing prerequisites stop the run before any step, exit 2, naming what is missing.
rm "$work/bin/compute-sanitizer"
run_check nosanitizer
((rc == 2)) || fail "nosanitizer: exit $rc, expected 2"
expect nosanitizer "missing on PATH.*compute-sanitizer" nosanitizer.txt
[[ ! -f $work/nosanitizer/configure.log ]] || fail "nosanitizer: a step ran"
printf '#!/usr/bin/env bash\necho "NVIDIA (R) Compute Sanitizer"\n' >"$work/bin/compute-sanitizer"
printf '#!/usr/bin/env bash\necho "No devices were found"; exit 6\n' >"$work/bin/nvidia-smi"
chmod +x "$work/bin/"*
run_check nogpu
((rc == 2)) || fail "nogpu: exit $rc, expected 2"
expect nogpu "lists no GPU" nogpu.txt
[[ ! -f $work/nogpu/configure.log ]] || fail "nogpu: a step ran"

# 6. Libraries in .deps/root that need a newer glibc than the machine's stop the run (a fake
#    ldd reports glibc 2.3; this machine's own libz, which needs more, is the library).
printf '#!/usr/bin/env bash\necho "GPU 0: NVIDIA H200 (UUID: GPU-fake)"\n' >"$work/bin/nvidia-smi"
printf '#!/usr/bin/env bash\necho "ldd (GNU libc) 2.3"\n' >"$work/bin/ldd"
chmod +x "$work/bin/"*
lib=$(find /usr/lib /lib -name 'libz.so.1*' -type f 2>/dev/null | head -n 1)
if [[ -n $lib ]] && command -v readelf >/dev/null; then
  mkdir -p "$work/deps/usr/lib/x86_64-linux-gnu"
  cp "$lib" "$work/deps/usr/lib/x86_64-linux-gnu/"
  run_check oldglibc
  ((rc == 2)) || fail "oldglibc: exit $rc, expected 2: $(tail -n 5 "$work/oldglibc.txt")"
  expect oldglibc "libz.so.1[0-9.]* needs glibc [0-9.]*, this machine has 2.3" oldglibc.txt
  rm "$work/bin/ldd"
  run_check newglibc  # the machine's own glibc is new enough for its own libz
  ((rc == 0)) || fail "newglibc: exit $rc, expected 0: $(tail -n 5 "$work/newglibc.txt")"
else
  echo "gpu_check_dry_run: no libz or readelf here, the glibc check is not exercised"
fi

if ((failures)); then
  echo "gpu_check_dry_run: $failures failures" >&2
  exit 1
fi
echo "gpu_check_dry_run: all checks passed"
