#!/usr/bin/env python3
"""Peak memory of one PyTorch training step, for comparison with memopt's planned arena.

The same models, batches and precisions as benchmarks/memory.cpp:

  784-128-10, 784-512-512-10 and 64x8-10 (input 64, eight Dense(64, ReLU), Dense(10)),
  at batch 32, 256 and 4096, under float32 and mixed_float16 (autocast to float16 with a
  GradScaler, float32 master weights: Keras's policy); and mnist-convnet, Keras's "Simple
  MNIST convnet" of issue 10 (28x28x1 inputs, Conv2D 32 3x3 relu, MaxPooling2D 2, Conv2D 64
  3x3 relu, MaxPooling2D 2, Flatten, Dropout 0.5, Dense 10; PyTorch's channels-first layout).
  --models and --batches choose among them (the convnet's batches in run_cnn.sh: 32 128).

What is counted is what memopt's arena holds: the batch (features and labels) once on the
device, activations saved for backward, the logits and the loss, every gradient including the
parameter gradients (set to None before the step, so backward allocates them), and whatever
temporaries PyTorch allocates on the way. Parameters and optimizer state are excluded: they
exist before the step begins and are subtracted as the baseline.

  * With a CUDA device: torch.cuda.max_memory_allocated() minus memory_allocated() at the
    start of the step, after two warm-up steps (so Adam's state and cuBLAS's workspace already
    exist). Reported for forward + backward, and for the whole step with optimizer.step().
  * On the CPU: the PyTorch profiler's memory accounting (profile_memory=True), replaying its
    allocation and free events in time order to find the peak of bytes alive.

  python3 benchmarks/compare/torch_memory.py [--device cpu|cuda] [--memopt TABLE] [--json]
      [--models NAME ...] [--batches N ...]

--memopt takes the Markdown table that bench_memory prints and adds memopt's arena and the
ratio PyTorch / memopt to each row.
"""

from __future__ import annotations

import argparse
import json
import sys

def dense(inputs, hidden, classes):
    """(input shape, a builder of Dense(ReLU) layers of the given widths and a linear output)."""

    def build(torch):
        layers = []
        width = inputs
        for units in hidden:
            layers += [torch.nn.Linear(width, units), torch.nn.ReLU()]
            width = units
        layers.append(torch.nn.Linear(width, classes))
        return torch.nn.Sequential(*layers)

    return (inputs,), build


def convnet(torch):
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.5),
                         nn.Linear(5 * 5 * 64, 10))


MODELS = {
    "784-128-10": dense(784, [128], 10),
    "784-512-512-10": dense(784, [512, 512], 10),
    "64x8-10": dense(64, [64] * 8, 10),
    "mnist-convnet": ((1, 28, 28), convnet),
}
CLASSES = 10
BATCHES = (32, 256, 4096)
POLICIES = ("float32", "mixed_float16")


def make_step(torch, model, policy, device):
    """One training step as memopt runs it: forward, softmax cross-entropy, backward, Adam."""
    mixed = policy == "mixed_float16"
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device.type, enabled=mixed) if mixed else None

    def forward_backward(x_host, y_host):
        optimizer.zero_grad(set_to_none=True)
        x = x_host.to(device)
        y = y_host.to(device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=mixed):
            logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.float(), y)
        if scaler is not None:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        return loss

    def update():
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()

    return forward_backward, update


def peak_cuda(torch, forward_backward, update, x, y):
    for _ in range(2):  # Adam's state, cuBLAS's workspace and the scaler exist from here on
        forward_backward(x, y)
        update()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    loss = forward_backward(x, y)
    torch.cuda.synchronize()
    fwd_bwd = torch.cuda.max_memory_allocated() - base
    update()
    torch.cuda.synchronize()
    step = torch.cuda.max_memory_allocated() - base
    del loss
    return fwd_bwd, step


def peak_cpu(torch, forward_backward, update, x, y):
    from torch.profiler import ProfilerActivity, profile

    for _ in range(2):
        forward_backward(x, y)
        update()

    def replay(prof):
        events = []
        # Each op carries the bytes it allocated or freed itself (self_*: children not
        # counted twice); frees outside any op come as "[memory]" events.
        for e in prof.events():
            delta = e.self_cpu_memory_usage
            if delta:
                events.append((e.time_range.start, delta))
        events.sort(key=lambda t: t[0])
        live = peak = 0
        for _, delta in events:
            live += delta
            peak = max(peak, live)
        return peak, len(events)

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        loss = forward_backward(x, y)
    fwd_bwd, n = replay(prof)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        loss = forward_backward(x, y)
        update()
    step, m = replay(prof)
    del loss
    if n == 0 or m == 0:
        raise RuntimeError("the profiler recorded no memory events")
    return fwd_bwd, step


def read_memopt_table(path):
    """{(model, batch, policy): arena bytes} from bench_memory's Markdown table (MiB)."""
    arenas = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 4 or not cells[1].isdigit():
                continue
            try:
                arenas[(cells[0], int(cells[1]), cells[2])] = float(cells[3]) * 2**20
            except ValueError:
                continue
    return arenas


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None,
                        help="default: cuda when available, else cpu")
    parser.add_argument("--memopt", help="bench_memory's output, to add memopt's arena")
    parser.add_argument("--json", action="store_true", help="print JSON lines, not a table")
    parser.add_argument("--batches", type=int, nargs="*", default=list(BATCHES))
    parser.add_argument("--models", nargs="*", choices=list(MODELS), default=list(MODELS))
    args = parser.parse_args(argv)

    try:
        import torch
    except ImportError:
        print("torch_memory.py: PyTorch is not installed (pip install torch)", file=sys.stderr)
        return 2

    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("torch_memory.py: --device cuda but no CUDA device", file=sys.stderr)
        return 2
    memopt = read_memopt_table(args.memopt) if args.memopt else {}
    method = ("torch.cuda.max_memory_allocated" if device.type == "cuda"
              else "torch.profiler memory events")

    if not args.json:
        print(f"PyTorch {torch.__version__} on {device.type} ({method}); MiB = 2^20 bytes")
        print("| model                    | batch | policy        | torch f+b | torch step "
              "|  memopt | torch/memopt |")
        print("|--------------------------|-------|---------------|-----------|------------"
              "|---------|--------------|")
    torch.manual_seed(0)
    for name in args.models:
        shape, build = MODELS[name]
        for batch in args.batches:
            for policy in POLICIES:
                model = build(torch).to(device)
                forward_backward, update = make_step(torch, model, policy, device)
                x = torch.rand(batch, *shape) * 2 - 1
                y = torch.randint(0, CLASSES, (batch,))
                try:
                    if device.type == "cuda":
                        fwd_bwd, step = peak_cuda(torch, forward_backward, update, x, y)
                    else:
                        fwd_bwd, step = peak_cpu(torch, forward_backward, update, x, y)
                except (RuntimeError, NotImplementedError) as e:  # e.g. float16 autocast on CPU
                    print(f"| {name:<24} | {batch:>5} | {policy:<13} | skipped: {e}")
                    continue
                arena = memopt.get((name, batch, policy))
                if args.json:
                    print(json.dumps({"model": name, "batch": batch, "policy": policy,
                                      "device": device.type, "method": method,
                                      "torch_forward_backward_bytes": fwd_bwd,
                                      "torch_step_bytes": step, "memopt_arena_bytes": arena}))
                    continue
                ratio = f"{fwd_bwd / arena:>11.2f}x" if arena else f"{'':>12}"
                shown = f"{arena / 2**20:7.3f}" if arena else f"{'':>7}"
                print(f"| {name:<24} | {batch:>5} | {policy:<13} | {fwd_bwd / 2**20:9.3f} | "
                      f"{step / 2**20:10.3f} | {shown} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
