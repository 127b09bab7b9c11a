#!/usr/bin/env python3
"""tf.data's shuffle | batch over Fashion-MNIST in memory, beside memopt's, in one run.

    .venv/bin/python benchmarks/compare/tfdata_pipeline.py \
        --memopt build/benchmarks/bench_data_pipeline [--epochs 5] [--batch 32]

The pipeline is the one benchmarks/data_pipeline.cpp part (b) times:
``Dataset.from_tensor_slices((x, y)).shuffle(60000, seed).batch(32)`` (and with
``.prefetch(AUTOTUNE)``), iterated for a whole epoch, best of --epochs. Elements per second
count samples. With --memopt it also runs that program's part (b) and prints both side by
side. Needs tensorflow-cpu (``pip install tensorflow-cpu`` into .venv); the dataset is read
with numpy from the Debian package dataset-fashion-mnist.
"""

import argparse
import gzip
import os
import re
import subprocess
import sys
import time

import numpy as np


def read_idx(path):
    """An IDX file of unsigned bytes, plain or .gz, as a numpy array."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def load_fashion_mnist(directory):
    images = read_idx(os.path.join(directory, "train-images-idx3-ubyte"))
    labels = read_idx(os.path.join(directory, "train-labels-idx1-ubyte"))
    x = (images.reshape(len(images), -1).astype(np.float32)) / 255.0
    return x, labels.astype(np.int32)


def time_epochs(dataset, epochs):
    best = float("inf")
    for _ in range(epochs):
        start = time.perf_counter()
        for _xb, _yb in dataset:
            pass
        best = min(best, time.perf_counter() - start)
    return best


def run_memopt(binary, data, epochs, batch):
    out = subprocess.run(
        [binary, "--part", "throughput", "--data", data, "--epochs", str(epochs),
         "--batch", str(batch)],
        check=True, capture_output=True, text=True).stdout
    match = re.search(r"memopt_shuffle_batch_elements_per_s=([0-9.]+)", out)
    if not match:
        raise RuntimeError("no RESULT line in the output of " + binary + ":\n" + out)
    return float(match.group(1)), out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--memopt", help="path of bench_data_pipeline, to run it side by side")
    args = parser.parse_args()

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # after the log level, so that its start-up banner stays quiet

    x, y = load_fashion_mnist(args.data)
    n = len(x)
    bytes_per_epoch = x.nbytes + y.nbytes
    base = tf.data.Dataset.from_tensor_slices((x, y))
    pipelines = {
        "tf.data shuffle(60000) | batch": base.shuffle(60000, seed=1).batch(args.batch),
        "tf.data shuffle(60000) | batch | prefetch(AUTOTUNE)":
            base.shuffle(60000, seed=1).batch(args.batch).prefetch(tf.data.AUTOTUNE),
    }
    print(f"tensorflow {tf.__version__}, {n} samples x {x.shape[1]} floats, batch {args.batch}, "
          f"best of {args.epochs} epochs")
    results = {}
    for name, dataset in pipelines.items():
        seconds = time_epochs(dataset, args.epochs)
        results[name] = n / seconds
        print(f"  {name:52s} {seconds:8.4f} s  {n / seconds:12.0f} elements/s  "
              f"{bytes_per_epoch / seconds / 1e9:6.2f} GB/s")

    if args.memopt:
        memopt_rate, output = run_memopt(args.memopt, args.data, args.epochs, args.batch)
        print("\n" + output.rstrip())
        tf_rate = results["tf.data shuffle(60000) | batch"]
        print(f"\nside by side, shuffle(60000) | batch({args.batch}), elements/s:")
        print(f"  memopt   {memopt_rate:12.0f}")
        print(f"  tf.data  {tf_rate:12.0f}")
        print(f"  memopt / tf.data = {memopt_rate / tf_rate:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
