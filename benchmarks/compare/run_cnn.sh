#!/usr/bin/env bash
# memopt's convnet example beside Keras and PyTorch on this CPU, in one run (issue 10).
#
#   benchmarks/compare/run_cnn.sh [--epochs N] [--rounds N] [--batches "32 128"]
#       [--policies "float32 mixed_bfloat16"] [--peer-threads "0 1"] [--data DIR]
#       [--replicas "1 2"] [--build DIR] [--memopt PATH|none] [--out FILE] [--no-install]
#       [--no-profile]
#
# Keras's "Simple MNIST convnet" (Conv2D 32, MaxPooling2D, Conv2D 64, MaxPooling2D, Flatten,
# Dropout 0.5, Dense 10 softmax; 34,826 parameters) trained on Fashion-MNIST by
#   memopt:  <build>/examples/02_fashion_mnist_cnn/fashion_mnist_cnn (built here in Release
#            with -O3 -march=native, as run.sh builds the Dense example), or --memopt PATH;
#            when the checkout has no examples/02_fashion_mnist_cnn yet (or --memopt none),
#            memopt is skipped with a message and the peers are measured alone;
#   Keras:   keras_fashion_mnist_cnn.py;  PyTorch: torch_fashion_mnist_cnn.py.
# --replicas: memopt's example at each --replicas count (1, the default: one model on
# oneDNN's default threads; N: N replicas on N threads, batch / N rows each per step).
# For each round, batch and policy: memopt, then Keras and PyTorch at each --peer-threads
# count (0 = the library's default pool, one thread per core), interleaved so that the
# machine's other load falls on every system alike. Epoch time, peak RSS and test accuracy
# are measured as run.sh measures them (benchmarks/compare/measure.py). The report (medians,
# memopt's ratios, issue 10's targets, the time of each step of one replica's training step
# beside the core's peak (bench_cnn_steps --profile, built beside the example) unless --no-profile,
# every run) replaces the convnet section of RESULTS.md (default benchmarks/RESULTS.md), or is
# added at its end; run.sh's Dense-model tables there are kept. Logs: <build>/compare-cnn-logs/.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

epochs=3
rounds=3
batches="32 128"
policies="float32"
peer_threads="0"
replicas="1"
data=/usr/share/datasets/fashion-mnist
build=build-compare
memopt=
out=benchmarks/RESULTS.md
install=1
profile=1
jobs=${MEMOPT_JOBS:-2}

usage() {
  sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit "${1:-2}"
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --epochs) epochs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --policies) policies=$2; shift 2 ;;
    --peer-threads) peer_threads=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --memopt) memopt=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-install) install=0; shift ;;
    --no-profile) profile=0; shift ;;
    -h|--help) usage 0 ;;
    *) echo "run_cnn.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
if ! [[ $epochs =~ ^[0-9]+$ && $epochs -ge 2 ]]; then
  echo "run_cnn.sh: --epochs must be 2 or more (the first epoch is not timed), found '$epochs'" >&2
  exit 2
fi
if ! [[ $rounds =~ ^[0-9]+$ && $rounds -ge 1 ]]; then
  echo "run_cnn.sh: --rounds must be a positive number, found '$rounds'" >&2
  exit 2
fi
for b in $batches; do
  if ! [[ $b =~ ^[1-9][0-9]*$ ]]; then
    echo "run_cnn.sh: --batches takes positive numbers, found '$b'" >&2
    exit 2
  fi
done
for r in $replicas; do
  if ! [[ $r =~ ^[1-9][0-9]*$ ]]; then
    echo "run_cnn.sh: --replicas takes positive numbers, found '$r'" >&2
    exit 2
  fi
done

# shellcheck source=common.sh  # sets py, among others
source benchmarks/compare/common.sh
require_fashion_mnist "$data" run_cnn.sh
ensure_peers "$install" run_cnn.sh

skipped=
if [[ $memopt == none ]]; then
  memopt=
  skipped="--memopt none was given"
elif [[ -n $memopt ]]; then
  if [[ ! -x $memopt ]]; then
    echo "run_cnn.sh: --memopt $memopt is not an executable file" >&2
    exit 1
  fi
  memopt=$(cd "$(dirname "$memopt")" && pwd)/$(basename "$memopt")
elif [[ -f examples/02_fashion_mnist_cnn/CMakeLists.txt ]]; then
  configure_release "$build"
  cmake --build "$build" -j "$jobs" --target fashion_mnist_cnn \
    $( ((profile)) && echo bench_cnn_steps)
  memopt=$root/$build/examples/02_fashion_mnist_cnn/fashion_mnist_cnn
else
  skipped="this checkout has no examples/02_fashion_mnist_cnn yet"
fi
steps_bench=
if ((profile)); then
  steps_bench=$root/$build/benchmarks/bench_cnn_steps
  if [[ ! -x $steps_bench ]]; then
    echo "run_cnn.sh: no $steps_bench (built with the example unless --memopt is given):" \
      "no step profile" >&2
    steps_bench=
  fi
fi
if [[ -n $skipped ]]; then
  echo "run_cnn.sh: SKIPPING memopt ($skipped): measuring Keras and PyTorch only" >&2
fi

echo "==== runs: $rounds rounds x batches ($batches) x ($policies) x" \
     "(${memopt:+memopt, }keras, pytorch at threads $peer_threads) ===="
"$py" benchmarks/compare/run_cnn.py --root "$root" --build "$build" --epochs "$epochs" \
  --rounds "$rounds" --batches "$batches" --policies "$policies" --peer-threads "$peer_threads" \
  --replicas "$replicas" --data "$data" --out "$out" --profile "$steps_bench" --memopt "$memopt" --skipped "$skipped"
