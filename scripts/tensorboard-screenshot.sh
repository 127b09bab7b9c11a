#!/usr/bin/env bash
# docs/tensorboard.png: TensorBoard's scalar dashboard over a real run. Builds the
# Fashion-MNIST example (Release, build-screenshot/), trains it with --log-dir, serves the logs
# with `tensorboard` on 127.0.0.1 and photographs the page with headless Chromium. Not part of
# CI: it needs the dataset, `tensorboard` (PyPI) and `chromium` (Debian), and a few minutes.
#
#   scripts/tensorboard-screenshot.sh                 # 8 epochs, port 6006
#   EPOCHS=3 PORT=6007 scripts/tensorboard-screenshot.sh
#
# Environment: EPOCHS, PORT, LOG_DIR (default /tmp/memopt-tensorboard-screenshot, removed
# first), OUT (default docs/tensorboard.png), MEMOPT_JOBS (build parallelism, default 2).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

epochs=${EPOCHS:-8}
port=${PORT:-6006}
log_dir=${LOG_DIR:-/tmp/memopt-tensorboard-screenshot}
out=${OUT:-docs/tensorboard.png}
jobs=${MEMOPT_JOBS:-2}

for tool in tensorboard chromium curl; do
  if ! command -v "$tool" >/dev/null; then
    echo "tensorboard-screenshot.sh: '$tool' not found (tensorboard: python3 -m pip install" \
      "tensorboard; chromium, curl: apt-get install chromium curl)" >&2
    exit 1
  fi
done

echo "==== build fashion_mnist (Release) ===="
cmake -S . -B build-screenshot -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMOPT_BUILD_EXAMPLES=ON \
  -DMEMOPT_BUILD_TESTS=OFF -DMEMOPT_BUILD_BENCHMARKS=OFF -DMEMOPT_ENABLE_CUDA=OFF >/dev/null
cmake --build build-screenshot -j "$jobs" --target fashion_mnist

echo "==== train $epochs epochs, logs in $log_dir ===="
rm -rf "$log_dir"
./build-screenshot/examples/01_fashion_mnist/fashion_mnist --epochs "$epochs" --log-dir "$log_dir"

echo "==== tensorboard on 127.0.0.1:$port ===="
tensorboard --logdir "$log_dir" --port "$port" --host 127.0.0.1 >"$log_dir/tensorboard.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
# Ready when the server lists both runs (it reads the event files after it starts answering).
for _ in $(seq 120); do
  if runs=$(curl -sf "http://127.0.0.1:$port/data/runs") &&
    [[ $runs == *train* && $runs == *validation* ]]; then
    break
  fi
  if ! kill -0 "$server" 2>/dev/null; then
    echo "tensorboard exited:" >&2
    cat "$log_dir/tensorboard.log" >&2
    exit 1
  fi
  sleep 0.5
done
echo "runs: ${runs:-none}"

echo "==== screenshot: $out ===="
mkdir -p "$(dirname "$out")"
# The Scalars dashboard (#scalars) draws every chart of its first tag groups at once; the
# filter puts the epoch curves, train beside validation, first (epoch_(loss|accuracy), URL-
# encoded), unsmoothed. Virtual time lets its data requests finish before the picture.
url="http://127.0.0.1:$port/#scalars&tagFilter=epoch_%28loss%7Caccuracy%29&_smoothingWeight=0"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,900 \
  --virtual-time-budget=20000 --screenshot="$out" "$url" \
  2> >(grep -v -e 'dbus' -e 'Fontconfig' >&2 || true)
ls -l "$out"
