#!/usr/bin/env python3
"""tf.data's image_dataset_from_directory beside memopt's image_directory, in one run.

    .venv/bin/python benchmarks/compare/tfdata_images.py --dir DIR \
        [--memopt build/benchmarks/bench_image_decode] [--size 128] [--limit 2000] \
        [--batch 32] [--threads 1,2] [--json]

For each thread count t: Keras's ``image_dataset_from_directory(DIR, image_size=(size, size),
batch_size, shuffle=False)`` (tf.io.read_file, decode_image, tf.image.resize bilinear, its map
at AUTOTUNE parallelism), run on a private thread pool of t threads
(``tf.data.Options().threading.private_threadpool_size = t``, intra-op parallelism 1), over
the first --limit files, iterated once to warm the page cache and then timed. Prints images/s,
images/s per thread and images per CPU-second (the process's CPU time over the timed pass, all
its threads), with --json also one JSON line per thread count (for run_images.py), and with
--memopt runs bench_image_decode on the same files and prints its lines after. DIR is made
by examples/03_image_folder/make_dataset.py. Needs tensorflow-cpu.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def cpu_seconds():
    """User + system CPU seconds of every thread of this process so far."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


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

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    print(f"tensorflow {tf.__version__}; {a.dir}, {a.size}x{a.size} rgb, limit {a.limit}")
    for t in [int(x) for x in a.threads.split(",")]:
        ds = tf.keras.utils.image_dataset_from_directory(
            a.dir, image_size=(a.size, a.size), batch_size=a.batch, shuffle=False,
            verbose=False)
        ds = ds.take((a.limit + a.batch - 1) // a.batch)
        options = tf.data.Options()
        options.threading.private_threadpool_size = t
        ds = ds.with_options(options)
        for _ in ds:  # warm the page cache and tf.data's first-pass costs
            pass
        images = 0
        cpu0 = cpu_seconds()
        start = time.perf_counter()
        for x, _ in ds:
            images += int(x.shape[0])
        s = time.perf_counter() - start
        cpu = cpu_seconds() - cpu0
        print(f"tf.data image_dataset_from_directory (threads={t}) | batch({a.batch}): "
              f"{images} images in {s:.2f} s = {images / s:.0f} images/s, "
              f"{images / s / t:.0f} images/s/thread; {cpu:.2f} CPU s = "
              f"{images / cpu:.0f} images per CPU-second")
        if a.json:
            print(json.dumps({"system": "tf.data", "threads": t, "images": images,
                              "wall_s": round(s, 4), "cpu_s": round(cpu, 4)}))
        sys.stdout.flush()

    if a.memopt:
        subprocess.run([a.memopt, "--dir", a.dir, "--size", str(a.size), "--limit",
                        str(a.limit), "--batch", str(a.batch), "--threads", a.threads],
                       check=True)


if __name__ == "__main__":
    main()
