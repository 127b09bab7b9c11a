#!/usr/bin/env bash
# Fuzzes the safetensors reader (tests/fuzz/fuzz_safetensors.cpp) with libFuzzer, ASan and
# UBSan for longer than CI does, and reports executions, time and corpus size.
#
#   scripts/fuzz.sh            # 300 seconds
#   scripts/fuzz.sh 3600       # an hour
#
# Environment: CXX_FUZZ (default: clang++), FUZZ_DIR (default: build-fuzz). The corpus in
# $FUZZ_DIR/corpus grows across runs; a failing input is left as $FUZZ_DIR/crash-* (or
# leak-*, timeout-*) and the script exits non-zero.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds=${1:-300}
cxx=${CXX_FUZZ:-clang++}
dir=${FUZZ_DIR:-build-fuzz}

if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz.sh: $cxx not found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 1
fi
mkdir -p "$dir/corpus"

echo "==== build $dir/fuzz_safetensors with $cxx ===="
"$cxx" -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -Iinclude tests/fuzz/fuzz_safetensors.cpp -o "$dir/fuzz_safetensors"

echo "==== fuzz for ${seconds}s ===="
start=$SECONDS
set +e
"$dir/fuzz_safetensors" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -dict=tests/fuzz/safetensors.dict \
  -artifact_prefix="$dir/" "$dir/corpus" tests/fuzz/corpus 2>"$dir/fuzz.log"
status=$?
set -e
tail -n 25 "$dir/fuzz.log"

runs=$(grep -Eo 'Done [0-9]+ runs' "$dir/fuzz.log" | grep -Eo '[0-9]+' | tail -n 1 || true)
files=$(find "$dir/corpus" -type f | wc -l)
bytes=$(du -sb "$dir/corpus" | cut -f1)
echo "==== fuzz.sh: ${runs:-?} executions in $((SECONDS - start)) s; corpus ${files} files," \
  "${bytes} bytes; exit status ${status} ===="
exit "$status"
