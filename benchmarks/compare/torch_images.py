#!/usr/bin/env python3
"""PyTorch's DataLoader with torchvision-style PIL decoding, the second peer of memopt's
image_directory (issue 11), measured the way tfdata_images.py measures tf.data.

    .venv/bin/python benchmarks/compare/torch_images.py --dir DIR \
        [--memopt build/benchmarks/bench_image_decode] [--size 128] [--limit 2000] \
        [--batch 32] [--threads 1,2] [--json]

The dataset is what torchvision's ImageFolder reads: one folder per class, sorted, their
files sorted, the first --limit files kept (the files tf.data's image_dataset_from_directory
takes with shuffle=False). Each item is decoded as torchvision's default loader does
(PIL ``Image.open(path).convert("RGB")``), resized to size x size with PIL's bilinear filter
(what ``transforms.Resize((size, size))`` does on a PIL image; PIL's filter antialiases when
downscaling, tf.image.resize's bilinear does not), and returned as a float32 HxWx3 tensor with
its label, as tf.data yields them; the default collate stacks batches of --batch in the
workers. For each thread count t: a DataLoader with num_workers=t worker processes
(persistent, each with torch.set_num_threads(1)), iterated once to warm the page cache and
start the workers, then timed. Prints images/s, images/s per worker and images per CPU-second
(the CPU time of this process and of its worker processes over the timed pass), with --json
also one JSON line per worker count (for run_images.py), and with --memopt runs
bench_image_decode on the same files and prints its lines after. DIR is made by
examples/03_image_folder/make_dataset.py. Needs torch, numpy and Pillow.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import torch
from PIL import Image

EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif")


def list_images(root, limit):
    """(path, label) of the first `limit` images, classes and files in sorted order."""
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    items = []
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        for f in sorted(os.listdir(folder)):
            if f.lower().endswith(EXTENSIONS):
                items.append((os.path.join(folder, f), label))
    return items[:limit]


class ImageFiles(torch.utils.data.Dataset):
    def __init__(self, items, size):
        self.items, self.size = items, size

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, label = self.items[i]
        with open(path, "rb") as f:
            img = Image.open(f).convert("RGB")
        img = img.resize((self.size, self.size), Image.BILINEAR)
        return torch.from_numpy(np.asarray(img, dtype=np.float32)), label


def one_thread_each(_):
    torch.set_num_threads(1)


def worker_pids(loader):
    """The process ids of a persistent DataLoader's workers (none without workers)."""
    it = getattr(loader, "_iterator", None)
    return [w.pid for w in getattr(it, "_workers", [])]


def cpu_seconds(pids):
    """User + system CPU seconds so far of this process and of the live processes `pids`
    (workers are not reaped until they stop, so RUSAGE_CHILDREN would miss them)."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    total = u.ru_utime + u.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            # Fields after the command name, which may hold spaces: utime, stime are 14, 15.
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--memopt", default=None)
    p.add_argument("--size", type=int, default=128)
    p.add_argument("--limit", type=int, default=2000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()

    torch.set_num_threads(1)
    items = list_images(a.dir, a.limit)
    if not items:
        sys.exit(f"torch_images.py: no images under {a.dir}")
    import PIL

    print(f"torch {torch.__version__}, Pillow {PIL.__version__}; {a.dir}, {a.size}x{a.size} "
          f"rgb, limit {a.limit}")
    for t in [int(x) for x in a.threads.split(",")]:
        loader = torch.utils.data.DataLoader(
            ImageFiles(items, a.size), batch_size=a.batch, shuffle=False, num_workers=t,
            persistent_workers=t > 0, worker_init_fn=one_thread_each)
        for _ in loader:  # warm the page cache and start the workers
            pass
        images = 0
        workers = worker_pids(loader)
        cpu0 = cpu_seconds(workers)
        start = time.perf_counter()
        for x, _ in loader:
            images += int(x.shape[0])
        s = time.perf_counter() - start
        cpu = cpu_seconds(workers) - cpu0
        print(f"torch DataLoader + PIL (num_workers={t}) | batch({a.batch}): "
              f"{images} images in {s:.2f} s = {images / s:.0f} images/s, "
              f"{images / s / max(t, 1):.0f} images/s/thread; {cpu:.2f} CPU s = "
              f"{images / cpu:.0f} images per CPU-second")
        if a.json:
            print(json.dumps({"system": "pytorch", "threads": t, "images": images,
                              "wall_s": round(s, 4), "cpu_s": round(cpu, 4)}))
        sys.stdout.flush()
        del loader  # stops the persistent workers before the next count starts its own

    if a.memopt:
        subprocess.run([a.memopt, "--dir", a.dir, "--size", str(a.size), "--limit",
                        str(a.limit), "--batch", str(a.batch), "--threads", a.threads],
                       check=True)


if __name__ == "__main__":
    main()
