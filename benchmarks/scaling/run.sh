#!/usr/bin/env bash
# The scaling benchmark of data parallelism (issue 14): the MLP and the convnet, 1 rank alone
# and 2 ranks (one thread each), with the buckets' all-reduces overlapped with backward and
# run blocking after it. Prints each run's line, then per model and caps: the 2-rank/1-rank
# ratio of samples per second and the fraction of the all-reduce time hidden,
#   hidden = 1 - exposed(overlap) / exposed(blocking)
# where exposed is the time a rank spends in the communicator's test and wait calls.
#
#   benchmarks/scaling/run.sh [build dir, default build] [steps, default 400]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${1:-build}
steps=${2:-400}
exe=$build/benchmarks/scaling/bench_data_parallel
[[ -x $exe ]] || { echo "run.sh: build $exe first (ninja -C $build bench_data_parallel)" >&2; exit 2; }
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

for model in mlp cnn; do
  alone=$(OMP_NUM_THREADS=1 "${mpirun[@]}" -np 1 "$exe" --model "$model" --mode alone --steps "$steps")
  echo "$alone"
  for caps in ddp small; do
    overlap=$("${mpirun[@]}" -np 2 "$exe" --model "$model" --caps "$caps" --mode overlap --steps "$steps")
    blocking=$("${mpirun[@]}" -np 2 "$exe" --model "$model" --caps "$caps" --mode blocking --steps "$steps")
    echo "$overlap"
    echo "$blocking"
    awk -v m="$model" -v c="$caps" -v one="$(field samples_per_second "$alone")" \
        -v two="$(field samples_per_second "$overlap")" \
        -v eo="$(field exposed_s "$overlap")" -v eb="$(field exposed_s "$blocking")" \
        'BEGIN { printf "SUMMARY model=%s caps=%s speedup_2_over_1=%.2f hidden_fraction=%.2f\n",
                 m, c, two / one, (eb > 0 ? 1 - eo / eb : 0) }'
  done
done
