#!/usr/bin/env bash
# Installs the Debian packages memopt needs, if any are missing. Safe to run again: with
# everything present it changes nothing and touches no network.
set -euo pipefail

packages=(
  build-essential cmake ninja-build
  libeigen3-dev libfmt-dev nlohmann-json3-dev zlib1g-dev
  doctest-dev libbenchmark-dev
  dataset-fashion-mnist
  clang-format
)

installed() {
  dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed$'
}

missing=()
for pkg in "${packages[@]}"; do
  installed "$pkg" || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "deps: missing packages (${missing[*]}) and not root, and sudo is not available" >&2
    exit 1
  fi
  sudo=(sudo)
fi
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}"
