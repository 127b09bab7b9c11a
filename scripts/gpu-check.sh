#!/usr/bin/env bash
# memopt's checks on a GPU machine, in one run of at most 8 minutes that always ends with its
# summary table. The machine has nvcc, CMake, ninja and PyTorch but no package registry: the
# dependencies come from .deps/root (scripts/fetch-deps.sh, run first on a machine with apt;
# carry .deps/debs along with the tree, and this script extracts it into .deps/root).
#
#   scripts/fetch-deps.sh          # first, on a machine with apt
#   scripts/gpu-check.sh           # on the GPU machine: logs and summary.md under $OUT
#
# What it checks first, before building anything (a missing piece stops the run at once,
# exit 2): nvidia-smi lists a GPU; nvcc, compute-sanitizer, cmake and ninja are on PATH (or
# nvcc and compute-sanitizer in /usr/local/cuda/bin); .deps/root exists, and the shared
# libraries in it ({fmt}, zlib, oneDNN, built for the Debian release that fetch-deps.sh ran on)
# need no newer glibc or libstdc++ than this machine has (Google Benchmark's only warns: the
# tests do not link it). It records the
# driver, nvcc, glibc, libstdc++, CMake and Python versions in machine.txt. Everything is
# built here, on the GPU machine, with its own toolchain: a binary built elsewhere may need a
# newer glibc, libstdc++ or CUDA driver than this machine has.
#
# Then, in this order, each step with its own time limit, and all of them within a budget:
#   configure    cmake for sm_90, tests, examples and benchmarks
#   build        memopt_cuda_tests, the CUDA example and bench_cuda_steps in one build (their
#                translation units compile side by side), going on past a failure so that
#                the tests run even if the others do not build
#   gpu-tests    ctest -L gpu --timeout (a test skipped for want of a GPU counts as a failure)
#   memcheck, racecheck, initcheck
#                the GPU tests again under compute-sanitizer (the slow ones left out)
#   example      the Fashion-MNIST example with --backend cuda, 2 epochs (when the data is there)
#   bench-cuda   benchmarks/cuda_steps
#   torch        benchmarks/compare/torch_mlp.py
# A step that would start past the budget is skipped and says so; a step's limit is cut to
# what is left of the budget. summary.md (the step table, then the benchmark tables) is
# rewritten after every step, so a run cut short still leaves it.
#
# Environment:
#   OUT                   log folder (default ./gpu-check-out)
#   MEMOPT_CHECK_BUDGET   seconds for all steps (default 420: 7 minutes, leaving 1 for the
#                         checks, the table and the copy back)
#   MEMOPT_JOBS           build jobs (default: all cores)
#   MEMOPT_GPU_BUILD      build folder (default build-gpu)
#   MEMOPT_DEPS_ROOT      the extracted packages (default .deps/root)
#   MEMOPT_GPU_CHECK_DRY_RUN=1
#                         every step only says what it would run (no build, no GPU): the
#                         script's own logic, budget and summary, checked on any machine
#                         (tests/scripts). With it, MEMOPT_GPU_CHECK_DRY_SLEEP=S makes each
#                         step take S seconds and MEMOPT_GPU_CHECK_DRY_FAIL=STEP makes STEP fail.
# Exit status: 0 when every step ran and passed, 1 when one failed, 2 when a prerequisite is
# missing, 3 when none failed but some were skipped (the budget ran out).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
root=$PWD
out=${OUT:-$root/gpu-check-out}
mkdir -p "$out"
build=${MEMOPT_GPU_BUILD:-build-gpu}
jobs=${MEMOPT_JOBS:-$(nproc)}
budget=${MEMOPT_CHECK_BUDGET:-420}
deps=${MEMOPT_DEPS_ROOT:-$root/.deps/root}
dry=${MEMOPT_GPU_CHECK_DRY_RUN:-0}
begin=$SECONDS
start=$SECONDS  # the budget's clock; restarted when the steps begin

echo "gpu-check: first the prerequisites (GPU, nvcc, compute-sanitizer, cmake, ninja," \
  ".deps/root), then configure, build, gpu-tests, memcheck, racecheck, initcheck," \
  "example, bench-cuda, torch within ${budget}s; summary in $out/summary.md" \
  "$([[ $dry == 1 ]] && echo '(DRY RUN: nothing is built or run)')"

names=() results=() times=()
record() { names+=("$1"); results+=("$2"); times+=("$3"); }

# The step table, as markdown, into summary.md (rewritten after every step).
write_summary() {
  {
    echo "# gpu-check $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$([[ $dry == 1 ]] && echo ' (dry run)')"
    echo
    head -n 1 "$out/machine.txt" 2>/dev/null
    echo
    echo "| step | result | seconds |"
    echo "| --- | --- | ---: |"
    for i in "${!names[@]}"; do
      echo "| ${names[$i]} | ${results[$i]} | ${times[$i]} |"
    done
    echo
    echo "$((SECONDS - start)) s of a ${budget} s budget so far."
    if [[ -f $out/benchmarks.md ]]; then
      echo
      cat "$out/benchmarks.md"
    fi
  } >"$out/summary.md.tmp" && mv "$out/summary.md.tmp" "$out/summary.md"
}

# run NAME LIMIT_SECONDS COMMAND...: runs COMMAND with its output in $out/NAME.log, within
# LIMIT_SECONDS and what is left of the budget; records and summarises the result.
run() {
  local name=$1 limit=$2
  shift 2
  local left=$((budget - (SECONDS - start)))
  if ((left < 5)); then
    record "$name" "skipped (past the ${budget}s budget)" 0
    write_summary
    return 1
  fi
  ((limit > left)) && limit=$left
  local t0=$SECONDS
  printf '==== %s (up to %ss) ====\n' "$name" "$limit"
  if [[ $dry == 1 ]]; then
    # shellcheck disable=SC2016  # expanded by the inner bash
    set -- bash -c 'printf "[dry run]"; printf " %q" "$@"; echo
      sleep "${MEMOPT_GPU_CHECK_DRY_SLEEP:-0}"
      [[ ${MEMOPT_GPU_CHECK_DRY_FAIL:-} != "$0" ]]' "$name" "$@"
  fi
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  tail -n 15 "$out/$name.log"
  local verdict=pass
  if ((rc == 124 || rc == 137)); then
    verdict="FAIL (timed out after ${limit}s)"
  elif ((rc != 0)); then
    verdict="FAIL (exit $rc)"
  fi
  record "$name" "$verdict" $((SECONDS - t0))
  write_summary
  return $rc
}

# ---- prerequisites: fail fast ------------------------------------------------------------
PATH=$PATH:/usr/local/cuda/bin
missing=()
for tool in nvidia-smi nvcc compute-sanitizer cmake ninja; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
  echo "gpu-check: missing on PATH (and in /usr/local/cuda/bin): ${missing[*]}; nothing was run" >&2
  exit 2
fi
if ! nvidia-smi -L >"$out/gpus.txt" 2>&1 || ! grep -q '^GPU ' "$out/gpus.txt"; then
  echo "gpu-check: nvidia-smi lists no GPU: $(head -c 300 "$out/gpus.txt"); nothing was run" >&2
  exit 2
fi
# Carried as .deb files (half the size): extract them here, where there is no apt.
if [[ ! -d $deps/usr && $dry != 1 && -z ${MEMOPT_DEPS_ROOT:-} ]] &&
  compgen -G "$root/.deps/debs/*.deb" >/dev/null; then
  bash scripts/fetch-deps.sh --extract-only >"$out/fetch-deps.log" 2>&1 ||
    echo "gpu-check: scripts/fetch-deps.sh --extract-only failed: $(tail -n 3 "$out/fetch-deps.log")" >&2
fi
if [[ ! -d $deps/usr ]]; then
  echo "gpu-check: $deps is missing: run scripts/fetch-deps.sh on a machine with apt first" \
    "(and carry .deps/debs or .deps/root)" >&2
  exit 2
fi
# The highest version of symbol set $1 (GLIBC_, GLIBCXX_) that the files $2... need or define.
highest() {
  local prefix=$1
  shift
  readelf -V "$@" 2>/dev/null | grep -o "${prefix}[0-9][0-9.]*" | sed "s/^$prefix//" |
    sort -V | tail -n 1
}
at_most() { [[ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" == "$1" ]]; }
if command -v readelf >/dev/null; then
  have_glibc=$(ldd --version 2>&1 | head -n 1 | grep -o '[0-9][0-9.]*$')
  have_glibcxx=$(highest GLIBCXX_ "$(g++ -print-file-name=libstdc++.so.6)")
  while IFS= read -r lib; do
    need_glibc=$(highest GLIBC_ "$lib") need_glibcxx=$(highest GLIBCXX_ "$lib")
    problem=""
    if [[ -n $need_glibc ]] && ! at_most "$need_glibc" "${have_glibc:-0}"; then
      problem="needs glibc $need_glibc, this machine has ${have_glibc:-none}"
    elif [[ -n $need_glibcxx ]] && ! at_most "$need_glibcxx" "${have_glibcxx:-0}"; then
      problem="needs GLIBCXX_$need_glibcxx, this machine's libstdc++ has ${have_glibcxx:-none}"
    fi
    [[ -z $problem ]] && continue
    if [[ $(basename "$lib") == libbenchmark* ]]; then
      # Only bench_cuda_steps links it: the tests can still run.
      echo "gpu-check: warning: $lib $problem; the benchmark will not build"
    else
      echo "gpu-check: $lib $problem: run fetch-deps.sh on an older Debian/Ubuntu;" \
        "nothing was run" >&2
      exit 2
    fi
  done < <(find "$deps" -name '*.so*' -type f)
else
  echo "gpu-check: no readelf: the glibc/libstdc++ needs of $deps are not checked"
fi
{
  echo "$(head -n 1 "$out/gpus.txt"), driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
  echo "nvcc: $(nvcc --version | grep -o 'release [0-9.]*, V[0-9.]*')"
  echo "compute-sanitizer: $(compute-sanitizer --version 2>&1 | grep -o 'Version [0-9.]*' | head -n 1)"
  echo "glibc: $(ldd --version 2>&1 | head -n 1)"
  echo "libstdc++: $(strings "$(g++ -print-file-name=libstdc++.so.6 2>/dev/null)" 2>/dev/null | grep -o '^GLIBCXX_[0-9.]*' | sort -V | tail -n 1)"
  echo "host compiler: $(g++ --version 2>&1 | head -n 1)"
  echo "cmake: $(cmake --version | head -n 1), ninja $(ninja --version)"
  echo "python: $(python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n 1)"
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"
start=$SECONDS
write_summary

export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [[ -d $deps/usr/share/datasets/fashion-mnist ]]; then
  export MEMOPT_FASHION_MNIST=$deps/usr/share/datasets/fashion-mnist
fi
data=${MEMOPT_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}

# ---- build and test ------------------------------------------------------------------------
# Warnings stay errors in CI (scripts/test.sh); here a newer host compiler must not stop the
# run, so -Werror is off. Headers come from .deps/root first.
run configure 90 cmake -S . -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DMEMOPT_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DMEMOPT_WERROR=OFF -DMEMOPT_NATIVE=ON \
  -DMEMOPT_BUILD_TESTS=ON -DMEMOPT_BUILD_EXAMPLES=ON -DMEMOPT_BUILD_BENCHMARKS=ON \
  -DCMAKE_PREFIX_PATH="$deps/usr" \
  -DCMAKE_CXX_FLAGS="-isystem $deps/usr/include" \
  -DCMAKE_CUDA_FLAGS="-isystem=$deps/usr/include"
configured=$?

tests_bin=$build/tests/cuda/memopt_cuda_tests
if ((configured == 0)); then
  run build 240 cmake --build "$build" -j "$jobs" -- -k 0 memopt_cuda_tests bench_cuda_steps \
    fashion_mnist_cuda
fi

if [[ $dry == 1 || -x $tests_bin ]]; then
  # Every GPU test must run: a skip means the GPU was not usable, which is a failure here.
  run gpu-tests 150 bash -c "ctest --test-dir '$build' -L gpu --timeout 120 \
    --output-on-failure -j 1 && ! grep -q 'skipped: no GPU' '$build/Testing/Temporary/LastTest.log'"
  # The sanitizers slow kernels down a lot: the end-to-end training and the test that
  # exhausts device memory on purpose stay out, racecheck and initcheck take a sample
  # (racecheck: the kernels with shared memory, the loss kernel's two layouts among them).
  # initcheck takes float32 models only. On the H200 (compute-sanitizer 2025.3.1, CUDA 13.0)
  # it reported every read of a float32 product that cuBLASLt had written from 16-bit inputs
  # as uninitialized: the logits in the loss kernel, the products in the epilogue fallback.
  # Those writers are cuBLASLt's Hopper GEMMs (nvjet_sm90_hss_* kernels, as ncu named them in
  # the 784-128-10 case), whose stores initcheck evidently does not track: the same values
  # match the CPU backend in gpu-tests, which they could not if nothing had written them.
  run memcheck 120 compute-sanitizer --tool memcheck --error-exitcode 99 --report-api-errors no \
    --leak-check no "$tests_bin" --no-version \
    "--test-case-exclude=*Fashion-MNIST*,*larger than the device*"
  run racecheck 60 compute-sanitizer --tool racecheck --error-exitcode 99 \
    --report-api-errors no "$tests_bin" --no-version \
    "--test-case=*784-128-10 matches*float32*,*every activation*float32*,*inf*,*wide outputs*"
  run initcheck 60 compute-sanitizer --tool initcheck --error-exitcode 99 \
    --report-api-errors no "$tests_bin" --no-version \
    "--test-case=*784-128-10 matches*float32*,*every activation*float32*"
else
  record gpu-tests "skipped (memopt_cuda_tests did not build)" 0
  write_summary
fi

example=$build/examples/01_fashion_mnist/fashion_mnist_cuda
if [[ $dry == 1 || (-x $example && -d $data) ]]; then
  run example 90 "$example" --backend cuda --policy mixed_float16 --epochs 2 --data "$data"
else
  record example "skipped (no example binary or no data in $data)" 0
  write_summary
fi
if [[ $dry == 1 || -x $build/benchmarks/bench_cuda_steps ]]; then
  run bench-cuda 120 "$build/benchmarks/bench_cuda_steps" \
    --benchmark_out="$out/bench_cuda.json" --benchmark_out_format=json
else
  record bench-cuda "skipped (no bench_cuda_steps binary)" 0
  write_summary
fi
run torch 120 python3 benchmarks/compare/torch_mlp.py --json "$out/torch_mlp.json"

# ---- the benchmark tables (from whatever JSON the steps left) --------------------------------
if [[ -f $out/bench_cuda.json || -f $out/torch_mlp.json ]]; then
  python3 - "$out" >"$out/benchmarks.md" 2>&1 <<'EOF'
import json, os, re, sys
out = sys.argv[1]

def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

bench = load("bench_cuda.json")
torch_rows = load("torch_mlp.json") or []
ours = {}
for b in (bench or {}).get("benchmarks", []):
    m = re.match(r"(step|matmuls)/([\d-]+)/(\w+?)(?:/(resident|host))?/batch:(\d+)", b["name"])
    if m and "error_occurred" not in b:
        kind, case, policy, source, batch = m.groups()
        ours[(kind, case, policy, source or "resident", int(batch))] = b
peer = {(r["case"], r["policy"], r["mode"], r["batch"]): r for r in torch_rows}

def us(x):
    return f"{x:.1f}" if x is not None else "-"

def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"

print("## memopt (CUDA graph per step) vs PyTorch, median step time in microseconds")
print()
print("| case | batch | policy | memopt | memopt from host | torch eager | torch graphs "
      "| eager/memopt | graphs/memopt | memopt MiB | torch MiB | torch/memopt memory |")
print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
keys = sorted({(k[1], k[2], k[4]) for k in ours if k[0] == "step"},
              key=lambda k: (len(k[0]), k[0], k[2], k[1]))
for case, policy, batch in keys:
    s = ours.get(("step", case, policy, "resident", batch))
    h = ours.get(("step", case, policy, "host", batch))
    e = peer.get((case, policy, "eager", batch))
    g = peer.get((case, policy, "graphs", batch))
    m = s["median_us"] if s else None
    mem = s["device_bytes"] / 2**20 if s else None
    tmem = e["max_memory_bytes"] / 2**20 if e else None
    print(f"| {case} | {batch} | {policy} | {us(m)} | {us(h['median_us'] if h else None)} "
          f"| {us(e['median_us'] if e else None)} | {us(g['median_us'] if g else None)} "
          f"| {ratio(e['median_us'] if e else None, m)} | {ratio(g['median_us'] if g else None, m)} "
          f"| {us(mem)} | {us(tmem)} | {ratio(tmem, mem)} |")
print()
print("## the GEMM-bound step against its cuBLASLt products alone")
print()
print("| case | batch | policy | step us | matmuls alone us | step / matmuls |")
print("| --- | ---: | --- | ---: | ---: | ---: |")
for (kind, case, policy, source, batch), b in sorted(ours.items()):
    if kind != "matmuls":
        continue
    s = ours.get(("step", case, policy, "resident", batch))
    st = s["median_us"] if s else None
    print(f"| {case} | {batch} | {policy} | {us(st)} | {us(b['median_us'])} | "
          f"{ratio(st, b['median_us'])} |")
print()
print("Targets (issue 5): 784-128-10 at batch 256 at least 5x faster than torch eager and 1.5x "
      "faster than torch graphs; GEMM-bound step within 1.10x of its matmuls; memory at least "
      "2x below torch's peak.")
EOF
fi
write_summary

echo
echo "==== gpu-check: $((SECONDS - begin)) s, logs in $out ===="
printf '| %-12s | %-40s | %6s |\n' step result seconds
printf '| %-12s | %-40s | %6s |\n' ------------ ---------------------------------------- ------
status=0
for i in "${!names[@]}"; do
  printf '| %-12s | %-40s | %6s |\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
  case ${results[$i]} in
    FAIL*) status=1 ;;
    skipped*) ((status == 0)) && status=3 ;;
  esac
done
[[ -f $out/benchmarks.md ]] && cat "$out/benchmarks.md"
exit $status
