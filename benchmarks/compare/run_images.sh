#!/usr/bin/env bash
# Images from disk: decode + resize + batch throughput of memopt, tf.data and PyTorch on the
# same files, in one run (issue 11).
#
#   benchmarks/compare/run_images.sh [--dir DIR] [--limit 2000] [--size 128] [--batch 32]
#       [--threads "1 2"] [--rounds 3] [--build DIR] [--memopt PATH] [--out FILE] [--no-install]
#
# memopt: <build>/benchmarks/bench_image_decode (built here in Release, -O3 -march=native, as
# run.sh builds its programs), or --memopt PATH; tf.data: tfdata_images.py
# (image_dataset_from_directory, AUTOTUNE map, a private pool of N threads); PyTorch:
# torch_images.py (DataLoader, N worker processes, PIL decode and bilinear resize). For each
# round and thread count the three run as separate processes, in an order that rotates by
# round; each reports images/s and images per CPU-second (its CPU time over the timed pass).
# DIR (default /tmp/bench-images-2000) is made by examples/03_image_folder/make_dataset.py
# DIR --count 2000 when missing. The report (medians, memopt's ratios, the target, every run
# with the load average) replaces the images section of RESULTS.md (between its
# `run_images.sh` markers), or is added at its end; the rest of the file is kept.
# Logs: <build>/compare-images-logs/.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
given="$*"  # for the report's command line

dir=/tmp/bench-images-2000
limit=2000
size=128
batch=32
threads="1 2"
rounds=3
build="build-compare"
memopt=
out=benchmarks/RESULTS.md
install=1
jobs=${MEMOPT_JOBS:-2}

usage() {
  sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit "${1:-2}"
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --memopt) memopt=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-install) install=0; shift ;;
    -h|--help) usage 0 ;;
    *) echo "run_images.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
for n in "$limit" "$size" "$batch" "$rounds" $threads; do
  if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
    echo "run_images.sh: --limit, --size, --batch, --rounds and --threads take positive" \
         "numbers, found '$n'" >&2
    exit 2
  fi
done

# shellcheck source=common.sh  # sets py, among others
source benchmarks/compare/common.sh
ensure_peers "$install" run_images.sh

if [[ ! -d $dir ]]; then
  echo "==== dataset: $limit images into $dir (make_dataset.py) ===="
  "$py" examples/03_image_folder/make_dataset.py "$dir" --count "$limit"
fi

if [[ -n $memopt ]]; then
  if [[ ! -x $memopt ]]; then
    echo "run_images.sh: --memopt $memopt is not an executable file" >&2
    exit 1
  fi
  memopt=$(cd "$(dirname "$memopt")" && pwd)/$(basename "$memopt")
else
  configure_release "$build"
  cmake --build "$build" -j "$jobs" --target bench_image_decode
  memopt=$root/$build/benchmarks/bench_image_decode
fi

echo "==== runs: $rounds rounds x threads ($threads) x (memopt, tf.data, pytorch) ===="
"$py" benchmarks/compare/run_images.py --root "$root" --memopt "$memopt" --dir "$dir" \
  --size "$size" --limit "$limit" --batch "$batch" --threads "$threads" --rounds "$rounds" \
  --out "$out" --logs "$root/$build/compare-images-logs" \
  --command "benchmarks/compare/run_images.sh${given:+ $given}"
