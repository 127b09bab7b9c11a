#!/usr/bin/env bash
# Prepares memopt's build dependencies for a machine with a compiler, CMake and ninja but no
# package registry (a GPU machine that runs scripts/gpu-check.sh): downloads the Debian
# packages with `apt-get download` into .deps/debs (no root needed, nothing installed) and
# extracts them into .deps/root; .gitignore leaves both out. The packages take 40 MB as .deb
# files and 82 MB extracted, so carry .deps/debs to that machine and extract it there.
#
#   scripts/fetch-deps.sh                 # download and extract: headers, libraries, data set
#   scripts/fetch-deps.sh --no-data       # without the data set (30 MB; the GPU training test
#                                         # then reports itself skipped)
#   scripts/fetch-deps.sh --extract-only  # no download: extract what .deps/debs holds (on the
#                                         # GPU machine; needs only dpkg-deb or ar and tar)
#
# Packages: Eigen, {fmt} (headers and its shared library), doctest, nlohmann-json, Google
# Benchmark (headers and library), zlib (headers and library), oneDNN (headers and library,
# with the OpenCL loader that its Debian build links), and dataset-fashion-mnist.
# Absolute symlinks inside the packages are made relative, and CMake files that name /usr are
# pointed at .deps/root, so the tree works wherever it is copied.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

with_data=1
download=1
for arg in "$@"; do
  case "$arg" in
    --no-data) with_data=0 ;;
    --extract-only) download=0 ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "fetch-deps.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

packages=(
  libeigen3-dev
  libfmt-dev libfmt9
  doctest-dev
  nlohmann-json3-dev
  libbenchmark-dev libbenchmark1debian
  zlib1g-dev zlib1g
  libdnnl-dev libdnnl2 ocl-icd-libopencl1
)
if [[ $download == 0 ]]; then
  # Whatever an earlier download left, the data set included.
  compgen -G "$PWD/.deps/debs/dataset-fashion-mnist_*.deb" >/dev/null || with_data=0
fi
[[ $with_data == 1 ]] && packages+=(dataset-fashion-mnist)

deps=$PWD/.deps
debs=$deps/debs
root=$deps/root
mkdir -p "$debs"

if [[ $download == 1 ]]; then
  echo "fetch-deps: downloading ${packages[*]}"
  (cd "$debs" && apt-get download "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
fi
for pkg in "${packages[@]}"; do
  if ! compgen -G "$debs/${pkg}_*.deb" >/dev/null; then
    if [[ $download == 1 ]]; then
      echo "fetch-deps: apt-get download did not fetch $pkg (is the package index current? try apt-get update)" >&2
    else
      echo "fetch-deps: $debs has no $pkg package: run scripts/fetch-deps.sh where apt works" >&2
    fi
    exit 1
  fi
done

# dpkg -x where there is dpkg; else the .deb's own layout (an ar archive holding data.tar.*).
extract() {
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$2"
    return
  fi
  local tmp member
  tmp=$(mktemp -d)
  (cd "$tmp" && ar x "$1")
  member=$(compgen -G "$tmp/data.tar.*" | head -n 1)
  tar -xf "$member" -C "$2"
  rm -rf "$tmp"
}

rm -rf "$root"
mkdir -p "$root"
for deb in "$debs"/*.deb; do
  pkg=$(basename "$deb" | cut -d_ -f1)
  # Only the packages asked for this time (an earlier run with data may have left its .deb).
  if [[ " ${packages[*]} " == *" $pkg "* ]]; then
    extract "$deb" "$root"
  fi
done
rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/lintian"

# Absolute symlinks (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13) point into the copy.
while IFS= read -r -d '' link; do
  target=$(readlink "$link")
  if [[ $target == /* ]]; then
    ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$root$target")" "$link"
  fi
done < <(find "$root" -type l -print0)

# doctest's exported targets name /usr literally; make them relative to their own location.
for f in "$root"/usr/lib/cmake/doctest/doctestTargets.cmake; do
  [[ -f $f ]] && sed -i \
    's|^set(_IMPORT_PREFIX "/usr")|get_filename_component(_IMPORT_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)|' \
    "$f"
done

echo "fetch-deps: $(du -sh "$root" | cut -f1) in $root"
echo "fetch-deps: use it with CMAKE_PREFIX_PATH=$root/usr (scripts/gpu-check.sh does)"
