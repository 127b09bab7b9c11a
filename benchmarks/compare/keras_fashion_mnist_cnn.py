#!/usr/bin/env python3
"""Keras's "Simple MNIST convnet" on Fashion-MNIST, the Keras peer of memopt's CNN example.

Input(28, 28, 1), Conv2D(32, 3, relu), MaxPooling2D(2), Conv2D(64, 3, relu), MaxPooling2D(2),
Flatten, Dropout(0.5), Dense(10, softmax): 34,826 parameters (checked), Adam (lr 1e-3),
sparse categorical cross-entropy, accuracy, pixels scaled by 1/255, validated on the 10,000
test images after every epoch; the same training loop, data pipeline and output as
keras_fashion_mnist.py (shuffle, batch, prefetch(AUTOTUNE)).

    keras_fashion_mnist_cnn.py [--epochs N] [--policy float32|mixed_float16|mixed_bfloat16]
                               [--data DIR] [--batch N] [--seed N] [--threads N]

--threads 0 (the default) leaves TensorFlow's thread pools at their defaults (one thread
per core); --threads N sets both its intra-op and inter-op pools to N threads.

Prints `Epoch N/M - S steps - T s - ...` per epoch, then `test_accuracy=A`, then one JSON
line with the epoch times, the peak resident memory (ru_maxrss) and the test accuracy.
"""

import sys

import keras_fashion_mnist as peer
from keras_fashion_mnist import tf

PARAMETERS = 3 * 3 * 1 * 32 + 32 + 3 * 3 * 32 * 64 + 64 + 5 * 5 * 64 * 10 + 10  # 34,826


def convnet_layers():
    """The convnet of https://keras.io/examples/vision/mnist_convnet/, softmax in float32 as
    the mixed-precision guide advises (no change under float32)."""
    layers = tf.keras.layers
    return [
        tf.keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(10, activation="softmax", dtype="float32"),
    ]


if __name__ == "__main__":
    sys.exit(peer.main(layers=convnet_layers, image_shape=(28, 28, 1), name="keras-cnn",
                       params=PARAMETERS, description=__doc__))
