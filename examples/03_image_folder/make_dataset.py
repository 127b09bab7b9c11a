#!/usr/bin/env python3
"""Generates the image-folder dataset of issue 11: JPEG photos-to-be in one folder per class.

Each image is a Fashion-MNIST item (training split) upscaled, coloured and alpha-blended at a
random place, size and tint onto a noisy, smoothly coloured background, so that the task is
neither trivially separable nor a copy of Fashion-MNIST. Class folders are named
"<index>_<name>" so that their sorted order is Fashion-MNIST's label order.

    python3 examples/03_image_folder/make_dataset.py OUT [--count 100000] [--size 512]
        [--seed 0] [--jobs N] [--quality 90] [--mnist /usr/share/datasets/fashion-mnist]

The same --seed and --count give the same files, byte for byte, whatever --jobs: image i
draws from its own generator, seeded with (seed, i). Needs numpy and Pillow.
"""
import argparse
import gzip
import multiprocessing as mp
import os
import struct
import sys
import time

import numpy as np
from PIL import Image

MIN_CONTRAST = 120.0  # least RGB distance between an item's tint and the background behind it

CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat",
           "sandal", "shirt", "sneaker", "bag", "ankle-boot"]


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


_items = None
_labels = None


def _init(mnist):
    global _items, _labels
    _items = read_idx(os.path.join(mnist, "train-images-idx3-ubyte.gz"))
    _labels = read_idx(os.path.join(mnist, "train-labels-idx1-ubyte.gz"))


def folder_of(label):
    return f"{label}_{CLASSES[label]}"


def make_image(args):
    index, seed, size, quality, out = args
    rng = np.random.default_rng([seed, index])
    k = index % len(_items)  # items in order: every class about equally often
    item, label = _items[k], int(_labels[k])

    # Background: a smooth gradient between two random colours plus Gaussian noise.
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    angle = rng.uniform(0, 2 * np.pi)
    t = (np.cos(angle) * x + np.sin(angle) * y)
    t = (t - t.min()) / max(1e-6, float(t.max() - t.min()))
    c0, c1 = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    bg = c0[None, None, :] * (1 - t[..., None]) + c1[None, None, :] * t[..., None]
    bg += rng.normal(0, rng.uniform(3, 12), (size, size, 3))

    # The item: upscaled to 45-85% of the image, tinted, blended with its own intensity. The
    # tint stands out from the background where the item goes (at least MIN_CONTRAST apart in
    # RGB): a tint near the background's colour would hide the item, and no model could learn
    # such an image's class (the first version drew tints freely and items from 30% of the
    # image, and Keras's tutorial model plateaued near 0.7 accuracy on it).
    side = int(size * rng.uniform(0.45, 0.85))
    alpha = np.asarray(Image.fromarray(item).resize((side, side), Image.BICUBIC),
                       dtype=np.float32) / 255.0
    top, left = rng.integers(0, size - side + 1, 2)
    region = bg[top:top + side, left:left + side]
    behind = region.reshape(-1, 3).mean(axis=0)
    tint = rng.uniform(0, 255, 3)
    while np.linalg.norm(tint - behind) < MIN_CONTRAST:
        tint = rng.uniform(0, 255, 3)
    a = alpha[..., None] * rng.uniform(0.7, 1.0)
    region[:] = region * (1 - a) + tint[None, None, :] * a

    img = Image.fromarray(bg.clip(0, 255).astype(np.uint8), "RGB")
    path = os.path.join(out, folder_of(label), f"{index:06d}.jpg")
    img.save(path, quality=quality)
    return label


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--count", type=int, default=100_000)
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quality", type=int, default=90)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--mnist", default="/usr/share/datasets/fashion-mnist")
    a = p.parse_args()
    if a.size < 64:
        sys.exit("make_dataset: expected --size >= 64")
    for label in range(len(CLASSES)):
        os.makedirs(os.path.join(a.out, folder_of(label)), exist_ok=True)
    start = time.time()
    jobs = [(i, a.seed, a.size, a.quality, a.out) for i in range(a.count)]
    counts = [0] * len(CLASSES)
    with mp.Pool(a.jobs, initializer=_init, initargs=(a.mnist,)) as pool:
        for done, label in enumerate(pool.imap_unordered(make_image, jobs, chunksize=64), 1):
            counts[label] += 1
            if done % 1000 == 0 or done == a.count:
                rate = done / max(1e-9, time.time() - start)
                print(f"\r{done}/{a.count} images, {rate:.0f}/s", end="", flush=True)
    print(f"\n{a.count} images of {a.size}x{a.size} in {a.out}: per class {counts}")


if __name__ == "__main__":
    main()
