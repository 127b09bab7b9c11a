#!/usr/bin/env python3
"""Keras's "Simple MNIST convnet" written in PyTorch, the PyTorch peer of memopt's CNN example.

Conv2d(1, 32, 3), ReLU, MaxPool2d(2), Conv2d(32, 64, 3), ReLU, MaxPool2d(2), Flatten,
Dropout(0.5), Linear(1600, 10): the same layer sizes as Keras's model, 34,826 parameters
(checked), in PyTorch's own channels-first layout; cross-entropy on the logits (PyTorch's
idiom for softmax + sparse categorical cross-entropy), Adam with Keras's settings (lr 1e-3,
betas 0.9/0.999, eps 1e-7), Glorot-uniform kernels and zero biases as Keras initialises
them, pixels scaled by 1/255, validated on the 10,000 test images after every epoch; the same
training loop, shuffling DataLoader and output as torch_fashion_mnist.py.

    torch_fashion_mnist_cnn.py [--epochs N] [--policy float32|mixed_float16|mixed_bfloat16]
                               [--data DIR] [--batch N] [--seed N] [--threads N]

--threads 0 (the default) leaves PyTorch's intra-op pool at its default (one thread per
core); --threads N sets it to N threads. mixed_float16 and mixed_bfloat16 both run
torch.autocast(device_type="cpu", dtype=torch.bfloat16).

Prints `Epoch N/M - S steps - T s - ...` per epoch, then `test_accuracy=A`, then one JSON
line with the epoch times, the peak resident memory (ru_maxrss) and the test accuracy.
"""

import sys

from torch import nn

import torch_fashion_mnist as peer

PARAMETERS = 3 * 3 * 1 * 32 + 32 + 3 * 3 * 32 * 64 + 64 + 5 * 5 * 64 * 10 + 10  # 34,826


def convnet():
    return nn.Sequential(
        nn.Conv2d(1, 32, kernel_size=3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, kernel_size=3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Dropout(0.5),
        nn.Linear(5 * 5 * 64, 10),
    )


if __name__ == "__main__":
    sys.exit(peer.main(build=convnet, image_shape=(1, 28, 28), name="pytorch-cnn",
                       params=PARAMETERS, description=__doc__))
