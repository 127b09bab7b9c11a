#!/usr/bin/env python3
"""The guide's program written in PyTorch, as the second peer: eager mode on the CPU.

nn.Sequential(Linear(784, 128), ReLU, Linear(128, 10)) trained with cross-entropy on the
logits (PyTorch's idiom for a softmax output with sparse categorical cross-entropy),
Adam with Keras's settings (lr 1e-3, betas 0.9/0.999, eps 1e-7), Glorot-uniform kernels
and zero biases as Keras initialises them, batch 32, on the same Fashion-MNIST files,
through a shuffling DataLoader over in-memory tensors.

    torch_fashion_mnist.py [--epochs N] [--policy float32|mixed_float16|mixed_bfloat16]
                           [--data DIR] [--batch N] [--seed N] [--threads N]

--threads 0 (the default) leaves PyTorch's intra-op pool at its default (one thread per
core); --threads N sets it to N threads.

PyTorch has no float16 autocast on the CPU: --policy mixed_float16 and mixed_bfloat16
both run torch.autocast(device_type="cpu", dtype=torch.bfloat16), and the JSON line says
so in its "compute" field.

Prints one line per epoch in the format of memopt's example
(`Epoch N/M - S steps - T s - loss: L - accuracy: A`), then `test_accuracy=A`, then one
JSON line: the epoch times, the median epoch time after the first, steps per second, the
process's peak resident memory (ru_maxrss) and the final test accuracy.
"""

import argparse
import contextlib
import gzip
import json
import os
import resource
import statistics
import sys
import time

import numpy as np
import torch
from torch import nn


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
    x = torch.from_numpy(x.reshape(len(x), -1).astype(np.float32) / 255.0)
    return x, torch.from_numpy(y.astype(np.int64))


def evaluate(model, loss_fn, x, y, autocast, batch=256):
    """Mean loss and accuracy over (x, y) in batches of 256, as Keras's evaluate does."""
    model.eval()
    loss_sum, correct = 0.0, 0
    with torch.no_grad(), autocast():
        for first in range(0, len(y), batch):
            logits = model(x[first : first + batch])
            target = y[first : first + batch]
            loss_sum += loss_fn(logits.float(), target).item() * len(target)
            correct += (logits.argmax(1) == target).sum().item()
    model.train()
    return loss_sum / len(y), correct / len(y)


def dense_model():
    """The guide's model; the softmax is in the loss (cross-entropy on the logits)."""
    return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def main(argv=None, build=dense_model, image_shape=(784,), name="pytorch", params=None,
         description=__doc__):
    """Trains build() on images reshaped to image_shape and prints the report described
    above; torch_fashion_mnist_cnn.py calls it with its convnet."""
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
        torch.set_num_threads(args.threads)

    torch.manual_seed(args.seed)
    x_train, y_train = load(args.data, "train")
    x_test, y_test = load(args.data, "t10k")
    x_train = x_train.reshape((len(x_train),) + tuple(image_shape))
    x_test = x_test.reshape((len(x_test),) + tuple(image_shape))
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x_train, y_train), batch_size=args.batch, shuffle=True
    )

    model = build()
    parameters = sum(p.numel() for p in model.parameters())
    if params is not None and parameters != params:
        raise SystemExit(f"{name}: expected {params} parameters, the model has {parameters}")
    # Keras's defaults: Glorot-uniform kernels (PyTorch's fan-in and fan-out of a convolution
    # are Keras's, kh * kw * channels), zero biases.
    for layer in model.modules():
        if isinstance(layer, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()

    if args.policy == "float32":
        compute = "float32"

        def autocast():
            return contextlib.nullcontext()

    else:
        compute = "bfloat16 autocast (no float16 autocast on CPU)"

        def autocast():
            return torch.autocast(device_type="cpu", dtype=torch.bfloat16)

    steps = len(loader)
    times = []
    model.train()
    for epoch in range(args.epochs):
        start = time.perf_counter()
        loss_sum = torch.zeros((), dtype=torch.float64)
        correct = torch.zeros((), dtype=torch.int64)
        for x, y in loader:
            with autocast():
                logits = model(x)
                loss = loss_fn(logits, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            # The running loss and accuracy that Keras's and memopt's epoch lines show.
            with torch.no_grad():
                loss_sum += loss.detach().double() * len(y)
                correct += (logits.argmax(1) == y).sum()
        # Validation on the test split inside the epoch's time, as Keras and memopt do.
        val_loss, val_accuracy = evaluate(model, loss_fn, x_test, y_test, autocast)
        seconds = time.perf_counter() - start
        times.append(seconds)
        n = len(x_train)
        print(
            f"Epoch {epoch + 1}/{args.epochs} - {steps} steps - {seconds:.3f}s"
            f" - loss: {loss_sum.item() / n:.4f} - accuracy: {correct.item() / n:.4f}"
            f" - val_loss: {val_loss:.4f} - val_accuracy: {val_accuracy:.4f}",
            flush=True,
        )

    _, test_accuracy = evaluate(model, loss_fn, x_test, y_test, autocast)
    print(f"test_accuracy={test_accuracy:.4f}", flush=True)

    later = times[1:] or times
    epoch_time = statistics.median(later)
    result = {
        "system": name,
        "parameters": parameters,
        "framework": f"torch {torch.__version__}",
        "policy": args.policy,
        "compute": compute,
        "batch": args.batch,
        "epochs": args.epochs,
        "steps_per_epoch": steps,
        "epoch_times_s": [round(t, 4) for t in times],
        "epoch_time_s": epoch_time,
        "steps_per_s": steps / epoch_time,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "test_accuracy": test_accuracy,
        "threads": {"intra_op": torch.get_num_threads(), "cpus": os.cpu_count()},
    }
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
