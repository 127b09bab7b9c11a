#!/usr/bin/env bash
# Installs what is missing, builds the Fashion-MNIST example and trains it. Arguments go to
# the example (default: --epochs 5); its last line is test_accuracy=0.XXXX.
#
#   scripts/example.sh
#   scripts/example.sh --epochs 5 --policy mixed_float16
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ $# -eq 0 ]]; then
  set -- --epochs 5
fi
jobs=${MEMOPT_JOBS:-2}

echo "==== dependencies ===="
bash scripts/deps.sh

echo "==== build fashion_mnist (Release) ===="
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs" --target fashion_mnist

echo "==== train ===="
exec ./build/examples/01_fashion_mnist/fashion_mnist "$@"
