#!/usr/bin/env bash
# Installs what is missing, builds the Fashion-MNIST example and trains it. Arguments go to
# the example (default: --epochs 5); its last line is test_accuracy=0.XXXX. The CPU backend
# runs the host-only build (fashion_mnist, no CUDA library loaded); --backend cuda builds and
# runs fashion_mnist_cuda (nvcc, cudart, cuBLASLt).
#
#   scripts/example.sh
#   scripts/example.sh --epochs 5 --policy mixed_float16
#   scripts/example.sh --epochs 5 --policy mixed_float16 --backend cuda
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ $# -eq 0 ]]; then
  set -- --epochs 5
fi
jobs=${MEMOPT_JOBS:-2}

echo "==== dependencies ===="
bash scripts/deps.sh

target=fashion_mnist
previous=
for arg in "$@"; do
  if [[ $previous == --backend && $arg == cuda ]]; then
    target=fashion_mnist_cuda
  fi
  previous=$arg
done

echo "==== build $target (Release) ===="
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs" --target "$target"

echo "==== train ===="
exec "./build/examples/01_fashion_mnist/$target" "$@"
