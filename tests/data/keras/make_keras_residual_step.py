#!/usr/bin/env python3
"""Writes what tests/unit/test_keras_residual_step.cpp holds memopt's training step to: one
SGD step of real Keras on a model with the residual block of Keras's "Image classification
from scratch" tutorial (keras.io/examples/vision/image_classification_from_scratch), scaled
down:

    Input(12, 12, 3) -> Conv2D(4, 3, strides=2, same) -> BatchNormalization -> Activation(relu)
    -> [Activation(relu) -> SeparableConv2D(8, 3, same) -> BatchNormalization
        -> Activation(relu) -> SeparableConv2D(8, 3, same) -> BatchNormalization
        -> MaxPooling2D(3, strides=2, same)]  +  Conv2D(8, 1, strides=2, same)  (the shortcut)
    -> SeparableConv2D(8, 3, same) -> BatchNormalization -> Activation(relu)
    -> GlobalAveragePooling2D -> Dense(3, softmax)

built with the functional API in the tutorial's order, so that Keras names the layers as memopt
does (the block's layers, then the shortcut's, then `add`). Weights are make_keras_weights.py's
deterministic pattern; the batch is 8 seeded normal images with seeded classes; the step is
train_on_batch with SGD(learning_rate=0.1) and SparseCategoricalCrossentropy, in float32, so
BatchNormalization normalizes by the batch's statistics and moves its moving ones.

    residual_step.safetensors         the weights before the step, by Keras 3's variable paths
                                      ("separable_conv2d/depthwise_kernel"), which are memopt's
    residual_step.after.safetensors   the same weights after it
    residual_step.batch.safetensors   x [8, 12, 12, 3], y [8] (classes as floats), loss [1]

    tests/data/keras/make_keras_residual_step.py [--out DIR]   # default: this folder

Exits with 77 (CTest's "skipped") when Keras is not importable.
"""
import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

try:
    import numpy as np
    import keras
except ImportError as e:
    print(f"make_keras_residual_step: skipped ({e})")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_keras_weights import HERE, save_safetensors, set_weights  # noqa: E402

BATCH, SHAPE, CLASSES = 8, (12, 12, 3), 3


def model():
    L = keras.layers
    inputs = keras.Input(SHAPE)
    x = L.Conv2D(4, 3, strides=2, padding="same")(inputs)
    x = L.BatchNormalization()(x)
    x = L.Activation("relu")(x)
    previous = x
    x = L.Activation("relu")(x)
    x = L.SeparableConv2D(8, 3, padding="same")(x)
    x = L.BatchNormalization()(x)
    x = L.Activation("relu")(x)
    x = L.SeparableConv2D(8, 3, padding="same")(x)
    x = L.BatchNormalization()(x)
    x = L.MaxPooling2D(3, strides=2, padding="same")(x)
    residual = L.Conv2D(8, 1, strides=2, padding="same")(previous)
    x = L.add([x, residual])
    x = L.SeparableConv2D(8, 3, padding="same")(x)
    x = L.BatchNormalization()(x)
    x = L.Activation("relu")(x)
    x = L.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, L.Dense(CLASSES, activation="softmax")(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=HERE)
    out = p.parse_args().out
    os.makedirs(out, exist_ok=True)
    keras.backend.clear_session()  # names start again at "conv2d"
    net = model()
    set_weights(net)
    net.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                loss=keras.losses.SparseCategoricalCrossentropy())
    rng = np.random.default_rng(11)
    x = rng.standard_normal((BATCH,) + SHAPE).astype(np.float32)
    y = rng.integers(0, CLASSES, BATCH).astype(np.float32)
    save_safetensors(os.path.join(out, "residual_step.safetensors"),
                     {v.path: v.numpy() for v in net.weights})
    loss = float(net.train_on_batch(x, y))
    save_safetensors(os.path.join(out, "residual_step.after.safetensors"),
                     {v.path: v.numpy() for v in net.weights})
    save_safetensors(os.path.join(out, "residual_step.batch.safetensors"),
                     {"x": x, "y": y, "loss": np.array([loss], np.float32)})
    print(f"make_keras_residual_step: wrote {out} (Keras {keras.__version__}, loss {loss:.6f}, "
          f"{len(net.weights)} weights: {', '.join(v.path for v in net.weights[:3])}, ...)")


if __name__ == "__main__":
    main()
