#!/usr/bin/env python3
"""A PyTorch training step beside memopt's CUDA step (benchmarks/cuda_steps.cu), same cases.

Cases: 784-128-10 at batch 32, 256, 4096 and 65536; 4096-4096-4096-10 at batch 8192. Each is
a Sequential of Linear + ReLU layers and a last Linear, trained with CrossEntropyLoss (softmax
and cross-entropy, as memopt's fused loss) and Adam (lr 1e-3, Keras's epsilon 1e-7), on a batch
already on the device (memopt's `resident` source).

Modes:
  eager   the usual loop: zero_grad, forward, backward, step. Mixed precision is autocast to
          float16 with a GradScaler (dynamic loss scaling, as Keras's mixed_float16 and memopt).
  graphs  the whole step (forward, backward, optimizer) captured once as a CUDA graph with
          torch.cuda.graph and replayed (Adam(capturable=True)). A GradScaler cannot be
          captured (it synchronises to check for inf), so under mixed_float16 the graph uses a
          static loss scale of 2**15 and unscales the gradients by hand, with no finite check:
          less work than memopt's step does, so the comparison is conservative for memopt.

Timing, as memopt's benchmark: 20 warm-up steps, then 200 steps queued back to back with a
CUDA event between each two; the median, 10th and 90th percentile intervals. Memory:
torch.cuda.max_memory_allocated() over the model's creation, warm-up and timed steps (batch,
parameters, gradients, optimizer state, activations, cuBLAS workspace).

  python3 benchmarks/compare/torch_mlp.py [--policy float32 mixed_float16 ...]
      [--mode eager graphs] [--cases 784-128-10:32,256 ...] [--steps N] [--json FILE]

Prints a Markdown table; --json writes one record per row.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

DEFAULT_CASES = ["784-128-10:32,256,4096,65536", "4096-4096-4096-10:8192"]


def parse_case(text: str) -> tuple[list[int], list[int]]:
    dims, _, batches = text.partition(":")
    widths = [int(w) for w in dims.split("-")]
    if len(widths) < 2 or not batches:
        raise SystemExit(f"--cases: expected WIDTHS:BATCHES such as 784-128-10:32,256, found {text!r}")
    return widths, [int(b) for b in batches.split(",")]


def build(torch, widths: list[int]):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).cuda()


def percentiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    at = lambda q: ordered[int(q * (len(ordered) - 1) + 0.5)]  # noqa: E731
    return statistics.median(ordered), at(0.1), at(0.9)


def time_steps(torch, step, steps: int) -> list[float]:
    events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
    events[0].record()
    for k in range(steps):
        step()
        events[k + 1].record()
    events[-1].synchronize()
    return [1e3 * events[k].elapsed_time(events[k + 1]) for k in range(steps)]


def run_case(torch, widths, batch, policy, mode, warmup, steps):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(0)
    model = build(torch, widths)
    x = torch.rand(batch, widths[0], device="cuda")
    y = torch.randint(0, widths[-1], (batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()
    mixed = policy == "mixed_float16"
    graphs = mode == "graphs"
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7, capturable=graphs)

    if not graphs:
        scaler = torch.amp.GradScaler("cuda", enabled=mixed)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16, enabled=mixed):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

    else:
        scale = 2.0**15 if mixed else 1.0
        params = [p for p in model.parameters()]

        def body():
            with torch.autocast("cuda", dtype=torch.float16, enabled=mixed):
                loss = loss_fn(model(x), y)
            (loss * scale).backward()
            if mixed:
                torch._foreach_mul_([p.grad for p in params], 1.0 / scale)
            opt.step()

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                body()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            body()

        def step():
            graph.replay()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    intervals = time_steps(torch, step, steps)
    median, p10, p90 = percentiles(intervals)
    return {
        "case": "-".join(str(w) for w in widths),
        "batch": batch,
        "policy": policy,
        "mode": mode,
        "median_us": median,
        "p10_us": p10,
        "p90_us": p90,
        "max_memory_bytes": torch.cuda.max_memory_allocated(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", nargs="+", default=["float32", "mixed_float16"],
                        choices=["float32", "mixed_float16"])
    parser.add_argument("--mode", nargs="+", default=["eager", "graphs"], choices=["eager", "graphs"])
    parser.add_argument("--cases", nargs="+", default=DEFAULT_CASES)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--json", help="also write the rows as a JSON list to this file")
    args = parser.parse_args()

    try:
        import torch
    except ImportError:
        print("torch_mlp: PyTorch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_mlp: [skipped: no GPU] torch.cuda.is_available() is False", file=sys.stderr)
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False  # memopt's float32 is true float32
    torch.backends.cudnn.allow_tf32 = False

    rows = []
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}")
    print("| case | batch | policy | mode | median us | p10 us | p90 us | peak MiB |")
    print("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: |")
    for text in args.cases:
        widths, batches = parse_case(text)
        for batch in batches:
            for policy in args.policy:
                if widths[1] >= 4096 and policy == "float32":
                    continue  # GEMM-bound case: mixed precision only, as memopt's benchmark
                for mode in args.mode:
                    r = run_case(torch, widths, batch, policy, mode, args.warmup, args.steps)
                    rows.append(r)
                    print(f"| {r['case']} | {batch} | {policy} | {mode} | {r['median_us']:.1f} | "
                          f"{r['p10_us']:.1f} | {r['p90_us']:.1f} | "
                          f"{r['max_memory_bytes'] / 2**20:.1f} |", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
