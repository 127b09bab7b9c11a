# shellcheck shell=bash disable=SC2154  # root is set by the script that sources this
# Shell functions shared by benchmarks/compare/run.sh and run_cnn.sh; sourced, not run.
# Each expects `root` (the repository root, the current directory) to be set.

# require_fashion_mnist DIR SCRIPT: stops SCRIPT unless DIR holds Fashion-MNIST's four files.
require_fashion_mnist() {
  local f
  for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz \
           t10k-labels-idx1-ubyte.gz; do
    if [[ ! -f $1/$f ]]; then
      echo "$2: expected Fashion-MNIST in $1, found no $f (Debian: apt-get install" \
           "dataset-fashion-mnist, or pass --data DIR)" >&2
      exit 1
    fi
  done
}

# ensure_peers INSTALL SCRIPT: makes (or reuses) $root/.venv and, when `import tensorflow,
# torch, PIL` fails there and INSTALL is 1, installs benchmarks/compare/requirements.txt into it.
# Sets `py` to the venv's Python.
ensure_peers() {
  echo "==== Python peers (.venv) ===="
  local venv=$root/.venv
  if [[ ! -x $venv/bin/python ]]; then
    python3 -m venv "$venv"
  fi
  py=$venv/bin/python
  if ! "$py" -c "import tensorflow, torch, PIL" >/dev/null 2>&1; then
    if [[ $1 -eq 0 ]]; then
      echo "$2: tensorflow, torch or Pillow is missing from $venv and --no-install was given" >&2
      exit 1
    fi
    "$py" -m pip install -r benchmarks/compare/requirements.txt
  fi
  "$py" -c "import tensorflow, torch, PIL" >/dev/null 2>&1
}

# configure_release BUILD: configures BUILD for the benchmarks: Release, -O3 -march=native
# (MEMOPT_NATIVE), CPU only, examples and benchmarks on, tests off.
configure_release() {
  echo "==== build (Release, -O3 -march=native) in $1 ===="
  local generator=()
  if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  cmake -S . -B "$1" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DMEMOPT_NATIVE=ON \
    -DMEMOPT_ENABLE_CUDA=OFF -DMEMOPT_BUILD_TESTS=OFF -DMEMOPT_BUILD_EXAMPLES=ON \
    -DMEMOPT_BUILD_BENCHMARKS=ON >/dev/null
}
