#!/usr/bin/env bash
# Fetches scikit-learn's "diabetes" data set (442 rows, 10 unscaled features, 1 target) for
# examples/04_regression, from Debian's python3-sklearn package, without installing it (it
# would pull in scipy and more): the .deb is downloaded, unpacked in a temporary folder, and
# only the two data files are copied into DIR.
#
#   scripts/fetch-diabetes.sh [DIR]     (default: data/diabetes, which git ignores)
#
# Needs apt-get (Debian or a derivative) and the network; no root.
set -euo pipefail
# DIR is taken relative to where the script is run from; the default lives in the repository.
if [[ $# -ge 1 ]]; then
  dest=$(realpath -m "$1")
else
  dest=$(realpath -m "$(dirname "${BASH_SOURCE[0]}")/../data/diabetes")
fi
files=(diabetes_data_raw.csv.gz diabetes_target.csv.gz)
inside=usr/lib/python3/dist-packages/sklearn/datasets/data

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"  # apt-get downloads as the _apt user where it can

# apt-get download writes into the current folder; a stale package list gives a 404, so
# refresh it once when the first try fails (that needs root).
if ! (cd "$work" && apt-get download python3-sklearn); then
  echo "apt-get download failed; refreshing the package lists and trying again" >&2
  sudo=
  [[ $(id -u) -ne 0 ]] && sudo=sudo
  $sudo apt-get update
  (cd "$work" && apt-get download python3-sklearn)
fi
dpkg -x "$work"/python3-sklearn_*.deb "$work/root"

mkdir -p "$dest"
for f in "${files[@]}"; do
  cp "$work/root/$inside/$f" "$dest/$f"
done
echo "wrote ${files[*]} to $dest"
