#!/usr/bin/env bash
# Installs the Debian packages memopt needs, if any are missing. Safe to run again: with
# everything present it changes nothing and touches no network.
#
# Optional extras, whose failure only warns (their tests then report "skipped" or are not
# added): clang and its libFuzzer runtime for tests/fuzz, ONNX's protobuf library for ONNX
# export (memopt::onnx), and the Python packages safetensors, numpy, onnx, onnxruntime and
# tensorboard (from PyPI) for tests/python.
set -euo pipefail

packages=(
  build-essential cmake ninja-build
  libeigen3-dev libfmt-dev nlohmann-json3-dev zlib1g-dev
  doctest-dev libbenchmark-dev
  libdnnl-dev
  libturbojpeg0-dev libpng-dev libstb-dev
  libopenmpi-dev openmpi-bin  # data parallelism across processes (memopt::mpi, tests/mpi)
  libhdf5-dev  # Keras .h5 weight files (memopt::hdf5, tests/unit/test_keras_weights.cpp)
  dataset-fashion-mnist
  clang-format
  clang-16  # the second supported compiler: scripts/test.sh builds the unit tests with it
  libclang-rt-16-dev  # its sanitizer runtimes (the ASan/UBSan and TSan passes)
)
optional_packages=(clang libclang-rt-14-dev)
# ONNX export (memopt::onnx, tests/unit/test_onnx_export.cpp, tests/python/test_onnx.py).
onnx_packages=(libonnx-dev libprotobuf-dev)

installed() {
  dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed$'
}

missing=()
for pkg in "${packages[@]}"; do
  installed "$pkg" || missing+=("$pkg")
done

optional_missing=()
for pkg in "${optional_packages[@]}"; do
  installed "$pkg" || optional_missing+=("$pkg")
done

sudo=()
if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
fi
can_install() { [[ $(id -u) -eq 0 || ${#sudo[@]} -gt 0 ]]; }
updated=0
apt_install() {
  if [[ $updated -eq 0 ]]; then
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    updated=1
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "deps: all ${#packages[@]} packages present"
else
  echo "deps: installing ${missing[*]}"
  if ! can_install; then
    echo "deps: missing packages (${missing[*]}) and not root, and sudo is not available" >&2
    exit 1
  fi
  apt_install "${missing[@]}"
fi

if [[ ${#optional_missing[@]} -gt 0 ]]; then
  echo "deps: installing optional ${optional_missing[*]} (fuzzing)"
  if ! can_install || ! apt_install "${optional_missing[@]}"; then
    echo "deps: warning: could not install ${optional_missing[*]}; the fuzz test is left out" >&2
  fi
fi

onnx_missing=()
for pkg in "${onnx_packages[@]}"; do
  installed "$pkg" || onnx_missing+=("$pkg")
done
if [[ ${#onnx_missing[@]} -gt 0 ]]; then
  echo "deps: installing optional ${onnx_missing[*]} (ONNX export)"
  if ! can_install || ! apt_install "${onnx_missing[@]}"; then
    echo "deps: warning: could not install ${onnx_missing[*]}; no memopt::onnx, and the ONNX" \
      "tests are left out" >&2
  fi
fi

# Python packages for the safetensors interop test, checked by importing them so that a
# second run touches no network.
if command -v python3 >/dev/null 2>&1; then
  if python3 -c "import safetensors, numpy" >/dev/null 2>&1; then
    echo "deps: python3 has safetensors and numpy"
  else
    echo "deps: pip installing safetensors numpy (for tests/python)"
    python3 -m pip install --quiet safetensors numpy ||
      echo "deps: warning: could not install safetensors and numpy; the Python interop test" \
        "will report skipped" >&2
  fi
  # The ONNX export test's checker and runtime.
  if python3 -c "import onnx, onnxruntime" >/dev/null 2>&1; then
    echo "deps: python3 has onnx and onnxruntime"
  else
    echo "deps: pip installing onnx onnxruntime (for tests/python/test_onnx.py)"
    python3 -m pip install --quiet onnx onnxruntime ||
      echo "deps: warning: could not install onnx and onnxruntime; the ONNX export test" \
        "will report skipped" >&2
  fi
else
  echo "deps: warning: no python3; the Python interop test is left out" >&2
fi

# TensorBoard (PyPI), whose own reader the TensorBoard callback's test reads the logs with.
if command -v python3 >/dev/null 2>&1; then
  if python3 -c "import tensorboard" >/dev/null 2>&1; then
    echo "deps: python3 has tensorboard"
  else
    echo "deps: pip installing tensorboard (for tests/python/test_tensorboard.py)"
    python3 -m pip install --quiet tensorboard ||
      echo "deps: warning: could not install tensorboard; python.tensorboard will report" \
        "skipped" >&2
  fi
fi
