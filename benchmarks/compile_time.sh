#!/usr/bin/env bash
# Compile time is a feature (issue 10): the CPU seconds (user + system) that one compiler run
# takes for each of
#   plan_only   tests/self_contained/plan_only.cpp: two models defined and planned, no backend
#   mlp         examples/01_fashion_mnist/main.cpp: the Dense example, three policies
#   cnn         examples/02_fashion_mnist_cnn/main.cpp: the convnet example, two policies
# with the flags CMake gives the examples (Release, -O3 -march=native unless MEMOPT_NATIVE is
# off), read from BUILD/compile_commands.json, without ccache, to an object file in a
# temporary folder. Prints one line per run, then the median of each as a Markdown table.
#
#   benchmarks/compile_time.sh [--build DIR (default build-rel)] [--rounds N (default 3)]
#                              [--cxx COMPILER (default: the one CMake chose)]
#
# DIR is configured (Release, examples on, tests off, no CUDA) when it has no
# compile_commands.json. Run it on an idle machine: a second job on the cores slows the
# compiler through shared caches even though CPU time, not wall time, is what is counted.
set -euo pipefail
command -v /usr/bin/time >/dev/null || { echo "compile_time.sh: needs GNU time (apt-get install time)" >&2; exit 2; }
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=build-rel
rounds=3
cxx=
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --cxx) cxx=$2; shift 2 ;;
    *) echo "compile_time.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [[ ! -f $build/compile_commands.json ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DMEMOPT_BUILD_EXAMPLES=ON -DMEMOPT_BUILD_TESTS=OFF -DMEMOPT_BUILD_BENCHMARKS=OFF \
    -DMEMOPT_ENABLE_CUDA=OFF >/dev/null
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The CNN example's command, split into words, with its launcher, output and source removed:
# every program below is compiled with exactly these flags.
mapfile -t flags < <(python3 - "$build/compile_commands.json" "$cxx" <<'EOF'
import json, shlex, sys
commands = json.load(open(sys.argv[1]))
entry = next((c for c in commands if c["file"].endswith("examples/02_fashion_mnist_cnn/main.cpp")),
             None)
if entry is None:
    sys.exit("compile_time.sh: the CNN example is not in compile_commands.json "
             "(configure with -DMEMOPT_BUILD_EXAMPLES=ON)")
words = entry.get("arguments") or shlex.split(entry["command"])
while words and words[0].endswith("ccache"):
    words.pop(0)
kept, skip = [], False
for w in words:
    if skip:
        skip = False
        continue
    if w in ("-o", "-c"):
        skip = True
        continue
    kept.append(w)
if sys.argv[2]:
    kept[0] = sys.argv[2]
print("\n".join(kept))
EOF
)

declare -A sources=(
  [plan_only]=tests/self_contained/plan_only.cpp
  [mlp]=examples/01_fashion_mnist/main.cpp
  [cnn]=examples/02_fashion_mnist_cnn/main.cpp
)
names=(plan_only mlp cnn)

echo "compiler: $("${flags[0]}" --version | head -1)"
echo "flags: ${flags[*]:1}"
declare -A runs
for ((r = 1; r <= rounds; ++r)); do
  for name in "${names[@]}"; do
    # GNU time's %U and %S: the compiler's own CPU seconds, its subprocesses (cc1plus, as)
    # included.
    if ! /usr/bin/time -o "$out/time" -f '%U %S' "${flags[@]}" -c "${sources[$name]}" \
           -o "$out/$name.o" >"$out/log" 2>&1; then
      cat "$out/log" >&2
      echo "compile_time.sh: ${sources[$name]} did not compile" >&2
      exit 1
    fi
    t=$(tail -1 "$out/time")
    cpu=$(awk '{ printf "%.2f", $1 + $2 }' <<<"$t")
    echo "round $r $name user_s=${t% *} sys_s=${t#* } cpu_s=$cpu"
    runs[$name]+="$cpu "
  done
done

median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END {
  print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo
echo "| program | CPU seconds, median of $rounds (user + sys) | runs |"
echo "| --- | ---: | --- |"
for name in "${names[@]}"; do
  echo "| $name (\`${sources[$name]}\`) | $(median "${runs[$name]}") | ${runs[$name]% } |"
done
