#!/usr/bin/env python3
"""Keras beside examples/03_image_folder: the same model, on the same files, split the same way.

Reads DIR (one folder per class, made by examples/03_image_folder/make_dataset.py) with
``image_dataset_from_directory(DIR, validation_split=0.1, subset="both", seed=1337,
image_size=(S, S), batch_size=B)``, the split image_folder makes for that seed, and trains
image_folder's model, the small Xception of Keras's "Image classification from scratch"
tutorial at image_folder's sizes: RandomFlip("horizontal") and RandomRotation(0.1) inside the
model, Rescaling(1/255), Conv2D(w0, 3, strides 2, same), BatchNormalization, ReLU, three
residual blocks (ReLU, SeparableConv2D, BatchNormalization, ReLU, SeparableConv2D,
BatchNormalization, MaxPooling2D(3, 2, same), plus a strided 1x1 Conv2D shortcut, added),
SeparableConv2D(w4, 3, same), BatchNormalization, ReLU, GlobalAveragePooling2D, Dropout(0.25),
Dense(10, softmax). Sparse categorical cross-entropy, Adam with image_folder's learning rate
and schedule; the parameter count is checked against image_folder's.

    keras_image_folder.py DIR [--epochs N] [--size S] [--batch B] [--widths 16,32,64,96,128]
        [--learning-rate 1e-3] [--decay-epochs N] [--policy float32|mixed_bfloat16]
        [--threads N] [--limit N]

--decay-epochs N: the learning rate follows a cosine from --learning-rate to 0 over N epochs
(0: constant), as image_folder's --decay-epochs. --limit N trains on the first N training
batches' worth of files. --threads N (default 0: TensorFlow's own pools) sets TensorFlow's
intra- and inter-op pools.

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


def parameters(widths):
    """Trainable and non-trainable weights of model(widths), counted by hand."""
    w0, blocks, w4 = widths[0], widths[1:-1], widths[-1]
    conv = lambda k, c, f: k * k * c * f + f  # noqa: E731
    separable = lambda c, f: 9 * c + c * f + f  # noqa: E731 (depthwise 3x3, pointwise, bias)
    bn = lambda c: 4 * c  # noqa: E731 (gamma, beta, moving mean and variance)
    n = conv(3, 3, w0) + bn(w0)
    previous = w0
    for w in blocks:
        n += separable(previous, w) + bn(w) + separable(w, w) + bn(w) + conv(1, previous, w)
        previous = w
    return n + separable(previous, w4) + bn(w4) + (w4 * 10 + 10)


def model(size, widths):
    layers = keras.layers
    inputs = keras.Input(shape=(size, size, 3))
    x = layers.RandomFlip("horizontal")(inputs)
    x = layers.RandomRotation(0.1)(x)
    x = layers.Rescaling(1.0 / 255)(x)
    x = layers.Conv2D(widths[0], 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    previous = x
    for w in widths[1:-1]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(w, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(w, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        shortcut = layers.Conv2D(w, 1, strides=2, padding="same")(previous)
        x = layers.add([x, shortcut])
        previous = x
    x = layers.SeparableConv2D(widths[-1], 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.25)(x)
    outputs = layers.Dense(10, activation="softmax", dtype="float32")(x)
    return keras.Model(inputs, outputs)


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
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--widths", default="16,32,64,96,128")
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--decay-epochs", type=int, default=0)
    p.add_argument("--policy", default="float32", choices=["float32", "mixed_bfloat16"])
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--limit", type=int, default=0)
    a = p.parse_args()
    widths = [int(w) for w in a.widths.split(",")]
    if len(widths) < 3:
        p.error("--widths: the first convolution's, one or more blocks', the last one's")

    if a.threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(a.threads)
        tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    keras.mixed_precision.set_global_policy(a.policy)

    train, val = keras.utils.image_dataset_from_directory(
        a.dir, validation_split=0.1, subset="both", seed=1337, image_size=(a.size, a.size),
        batch_size=a.batch)
    if a.limit > 0:
        train = train.take((a.limit + a.batch - 1) // a.batch)
    steps = int(train.cardinality())
    m = model(a.size, widths)
    assert m.count_params() == parameters(widths), (m.count_params(), parameters(widths))
    rate = a.learning_rate
    if a.decay_epochs > 0:
        rate = keras.optimizers.schedules.CosineDecay(a.learning_rate, a.decay_epochs * steps)
    # Loss and metric objects rather than strings: Keras 3.15 under TensorFlow 2.21 failed to
    # resolve the string "accuracy" on these datasets (dtype 'string' in type promotion).
    m.compile(optimizer=keras.optimizers.Adam(rate),
              loss=keras.losses.SparseCategoricalCrossentropy(),
              metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    times = EpochTimes()
    history = m.fit(train.prefetch(2), validation_data=val, epochs=a.epochs, verbose=2,
                    callbacks=[times])
    last = {k: float(v[-1]) for k, v in history.history.items()}
    print(f"val_accuracy={last['val_accuracy']:.4f}")
    print(json.dumps({
        "system": "keras", "policy": a.policy, "threads": a.threads, "size": a.size,
        "widths": widths, "epoch_seconds": times.seconds, "logs": last,
        "history": {k: [float(x) for x in v] for k, v in history.history.items()},
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


if __name__ == "__main__":
    main()
