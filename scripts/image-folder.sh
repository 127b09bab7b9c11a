#!/usr/bin/env bash
# The guide's case end to end: installs what is missing, generates the image folder once
# (examples/03_image_folder/make_dataset.py: 512x512 JPEGs in 10 class folders, reproducible
# from its seed), builds image_folder and trains on the folder. Arguments after `--` go to
# image_folder (default: none, so its 20 epochs).
#
#   scripts/image-folder.sh                                   # 20,000 images in /tmp/memopt-images-20000
#   scripts/image-folder.sh --count 100000 --dir /data/images -- --epochs 10 --limit 20000
#
# Generating takes about 20 images a second per core here (20,000: about 17 minutes on 2
# cores; 100,000: about 6 GB). A folder that already holds `count` images is reused, never
# removed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

count=20000
dir=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --count) count=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "image-folder.sh: unknown argument '$1' (image_folder's go after --)" >&2; exit 2 ;;
  esac
done
dir=${dir:-/tmp/memopt-images-$count}
jobs=${MEMOPT_JOBS:-2}

echo "==== dependencies ===="
bash scripts/deps.sh
python3 -c 'import numpy, PIL' 2>/dev/null || python3 -m pip install --quiet numpy pillow

have=$(find "$dir" -name '*.jpg' 2>/dev/null | wc -l)
if [[ $have -eq 0 ]]; then
  echo "==== generate $count images in $dir ===="
  python3 examples/03_image_folder/make_dataset.py "$dir" --count "$count" --jobs "$jobs"
elif [[ $have -ne $count ]]; then
  echo "image-folder.sh: $dir holds $have images, not $count: pass --count $have, or remove it" >&2
  exit 2
fi

echo "==== build image_folder (Release) ===="
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs" --target image_folder

echo "==== train ===="
exec ./build/examples/03_image_folder/image_folder "$dir" "$@"
