#!/usr/bin/env python3
"""Keras beside examples/03_image_folder: the same model, on the same files, split the same way.

Reads DIR (one folder per class, made by examples/03_image_folder/make_dataset.py) with
``image_dataset_from_directory(DIR, validation_split=0.1, subset="both", seed=1337,
image_size=(128, 128), batch_size=32)``, the split image_folder makes for that seed, and
trains image_folder's model: Rescaling(1/255), Conv2D(16, 3, strides 2, same, relu),
MaxPooling2D(2), Conv2D(32, 3, same, relu), MaxPooling2D(2), Conv2D(64, 3, same, relu),
GlobalAveragePooling2D, Dense(10, softmax) (24,234 parameters, checked), Adam 1e-3, sparse
categorical cross-entropy.

    keras_image_folder.py DIR [--epochs N] [--policy float32|mixed_bfloat16] [--threads N]

--threads N (default 1) sets TensorFlow's intra- and inter-op pools; 0 keeps its defaults.

Prints Keras's line per epoch, then `val_accuracy=A` and one JSON line with the epoch times,
the final logs and the peak resident memory (ru_maxrss).
"""

import argparse
import json
import os
import resource
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

PARAMETERS = (3 * 3 * 3 * 16 + 16) + (3 * 3 * 16 * 32 + 32) + (3 * 3 * 32 * 64 + 64) + (64 * 10 + 10)


def model():
    layers = keras.layers
    return keras.Sequential([
        keras.Input(shape=(128, 128, 3)),
        layers.Rescaling(1 / 255),
        layers.Conv2D(16, 3, strides=2, padding="same", activation="relu"),
        layers.MaxPooling2D(2),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(2),
        layers.Conv2D(64, 3, padding="same", activation="relu"),
        layers.GlobalAveragePooling2D(),
        layers.Dense(10, activation="softmax", dtype="float32"),
    ])


class EpochTimes(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self.start)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--policy", default="float32", choices=["float32", "mixed_bfloat16"])
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()

    if a.threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(a.threads)
        tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    keras.mixed_precision.set_global_policy(a.policy)

    train, val = keras.utils.image_dataset_from_directory(
        a.dir, validation_split=0.1, subset="both", seed=1337, image_size=(128, 128),
        batch_size=32)
    m = model()
    assert m.count_params() == PARAMETERS, m.count_params()
    # Loss and metric objects rather than strings: Keras 3.15 under TensorFlow 2.21 failed to
    # resolve the string "accuracy" on these datasets (dtype 'string' in type promotion).
    m.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(),
              metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    times = EpochTimes()
    history = m.fit(train.prefetch(2), validation_data=val, epochs=a.epochs, verbose=2,
                    callbacks=[times])
    last = {k: float(v[-1]) for k, v in history.history.items()}
    print(f"val_accuracy={last['val_accuracy']:.4f}")
    print(json.dumps({
        "system": "keras", "policy": a.policy, "threads": a.threads,
        "epoch_seconds": times.seconds, "logs": last,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


if __name__ == "__main__":
    main()
