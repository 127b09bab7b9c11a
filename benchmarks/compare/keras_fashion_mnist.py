#!/usr/bin/env python3
"""The guide's program, as the peer memopt is measured against: Keras on the CPU.

tf.keras.Sequential([Dense(128, relu), Dense(10, softmax)]), Adam, sparse categorical
cross-entropy, accuracy, batch 32, trained on the same Fashion-MNIST files that memopt's
example reads, through a tf.data pipeline (shuffle, batch, prefetch(AUTOTUNE)).

    keras_fashion_mnist.py [--epochs N] [--policy float32|mixed_float16|mixed_bfloat16]
                           [--data DIR] [--batch N] [--seed N] [--threads N]

--threads 0 (the default) leaves TensorFlow's thread pools at their defaults (one thread
per core); --threads N sets both its intra-op and inter-op pools to N threads.

Prints one line per epoch in the format of memopt's example
(`Epoch N/M - S steps - T s - loss: L - accuracy: A`), then `test_accuracy=A`, then one
JSON line: the epoch times, the median epoch time after the first, steps per second, the
process's peak resident memory (ru_maxrss) and the final test accuracy.
"""

import argparse
import gzip
import json
import os
import resource
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's start-up chatter off stderr

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def read_idx(path):
    """An IDX file (images or labels) as a numpy array, read with gzip and numpy only."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    ndim = magic & 0xFF
    if magic >> 8 != 0x08 or ndim not in (1, 3):
        raise ValueError(f"{path}: expected an IDX file of unsigned bytes, found magic {magic:#x}")
    shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(shape)


def load(data_dir, split):
    x = read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"))
    return (x.reshape(len(x), -1).astype(np.float32) / 255.0), y.astype(np.int32)


class EpochTimer(tf.keras.callbacks.Callback):
    """Wall time of each epoch: its training batches, then its validation pass (Keras calls
    on_epoch_end after validating, as memopt's fit times its epochs)."""

    def __init__(self, steps, epochs):
        super().__init__()
        self.steps, self.epochs, self.times = steps, epochs, []

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self.start
        self.times.append(seconds)
        logs = logs or {}
        print(
            f"Epoch {epoch + 1}/{self.epochs} - {self.steps} steps - {seconds:.3f}s"
            f" - loss: {logs.get('loss', float('nan')):.4f}"
            f" - accuracy: {logs.get('accuracy', float('nan')):.4f}"
            f" - val_loss: {logs.get('val_loss', float('nan')):.4f}"
            f" - val_accuracy: {logs.get('val_accuracy', float('nan')):.4f}",
            flush=True,
        )


def dense_layers():
    """The guide's model. The mixed-precision guide keeps the softmax in float32 for numerical
    stability; under float32 the dtype argument changes nothing."""
    return [
        tf.keras.Input(shape=(784,)),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10, activation="softmax", dtype="float32"),
    ]


def main(argv=None, layers=dense_layers, image_shape=(784,), name="keras", params=None,
         description=__doc__):
    """Trains Sequential(layers()) on images reshaped to image_shape and prints the report
    described above; keras_fashion_mnist_cnn.py calls it with its convnet."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument(
        "--policy", default="float32", choices=["float32", "mixed_float16", "mixed_bfloat16"]
    )
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args(argv)

    if args.threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    tf.keras.utils.set_random_seed(args.seed)
    tf.keras.mixed_precision.set_global_policy(args.policy)

    x_train, y_train = load(args.data, "train")
    x_test, y_test = load(args.data, "t10k")
    x_train = x_train.reshape((len(x_train),) + tuple(image_shape))
    x_test = x_test.reshape((len(x_test),) + tuple(image_shape))

    train = (
        tf.data.Dataset.from_tensor_slices((x_train, y_train))
        .shuffle(len(x_train), seed=args.seed)
        .batch(args.batch)
        .prefetch(tf.data.AUTOTUNE)
    )
    test = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(256)

    model = tf.keras.Sequential(layers())
    if params is not None and model.count_params() != params:
        raise SystemExit(f"{name}: expected {params} parameters, the model has "
                         f"{model.count_params()}")
    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate=1e-3),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(),
        metrics=["accuracy"],
    )

    steps = -(-len(x_train) // args.batch)
    timer = EpochTimer(steps, args.epochs)
    # Validation on the test split each epoch, as memopt's example does.
    model.fit(train, epochs=args.epochs, validation_data=test, callbacks=[timer], verbose=0)
    _, test_accuracy = model.evaluate(test, verbose=0)
    print(f"test_accuracy={test_accuracy:.4f}", flush=True)

    later = timer.times[1:] or timer.times
    epoch_time = statistics.median(later)
    result = {
        "system": name,
        "parameters": model.count_params(),
        "framework": f"tensorflow-cpu {tf.__version__}",
        "policy": args.policy,
        "compute": args.policy,
        "batch": args.batch,
        "epochs": args.epochs,
        "steps_per_epoch": steps,
        "epoch_times_s": [round(t, 4) for t in timer.times],
        "epoch_time_s": epoch_time,
        "steps_per_s": steps / epoch_time,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "test_accuracy": float(test_accuracy),
        "threads": {
            "intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
            "inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
            "cpus": os.cpu_count(),
        },
    }
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
