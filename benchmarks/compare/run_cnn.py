#!/usr/bin/env python3
"""The driver of benchmarks/compare/run_cnn.sh (run it through that script, which sets up the
.venv and builds memopt's example): runs memopt's convnet example, Keras and PyTorch
interleaved, and writes the convnet section of RESULTS.md."""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import (CNN_BEGIN, CNN_END, commit_of, compiler, cpu_model, fmt,  # noqa: E402
                     loadavg, med, run_program, write_section)

# Issue 10's targets for the convnet, at every batch size.
SPEED_VS_KERAS, SPEED_VS_TORCH, MEMORY_VS_KERAS, ACCURACY_PP = 3.0, 2.0, 3.0, 0.5


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--rounds", type=int, required=True)
    p.add_argument("--batches", required=True)
    p.add_argument("--policies", required=True)
    p.add_argument("--peer-threads", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--profile", default="",
                   help="bench_cnn_steps's path: each step of the schedule timed (empty: none)")
    p.add_argument("--memopt", default="", help="the example's path; empty: skip memopt")
    p.add_argument("--replicas", default="1",
                   help="memopt's --replicas values, each measured (1: one model, oneDNN's "
                        "default threads)")
    p.add_argument("--skipped", default="", help="why memopt is skipped")
    a = p.parse_args()
    a.batches = [int(b) for b in a.batches.split()]
    a.policies = a.policies.split()
    a.peer_threads = [int(t) for t in a.peer_threads.split()]
    a.replicas = [int(r) for r in a.replicas.split()]
    a.build = os.path.join(a.root, a.build)
    a.profile = a.profile if a.memopt else ""
    return a


def label(system, threads):
    """`threads`: the peers' thread count (0: their default pool), memopt's replicas."""
    if system in ("keras", "pytorch"):
        return f"{system} ({'default threads' if threads == 0 else f'{threads} thread'})"
    return system if threads == 1 else f"{system} ({threads} replicas)"


def main():
    a = parse()
    logs = os.path.join(a.build, "compare-cnn-logs")
    os.makedirs(logs, exist_ok=True)
    compare = os.path.join(a.root, "benchmarks", "compare")
    py = os.path.join(a.root, ".venv", "bin", "python")
    commit = commit_of(a.root)

    def command(system, policy, batch, threads, seed):
        common = ["--epochs", str(a.epochs), "--batch", str(batch), "--data", a.data,
                  "--seed", str(seed), "--policy", policy]
        if system == "memopt":
            return [a.memopt] + common + (["--replicas", str(threads)] if threads != 1 else [])
        script = "keras_fashion_mnist_cnn.py" if system == "keras" else "torch_fashion_mnist_cnn.py"
        return [py, os.path.join(compare, script), "--threads", str(threads)] + common

    def run(system, policy, batch, threads, seed, tag):
        result = run_program(command(system, policy, batch, threads, seed),
                             os.path.join(logs, f"{tag}.log"), tag, a.root)
        if result is None:
            return None
        peer = result.pop("peer")
        result.update({"system": system, "label": label(system, threads), "policy": policy,
                       "batch": batch, "seed": seed, "threads": threads,
                       "compute": peer.get("compute", policy)})
        print(f"  {tag}: {result['epoch_time_s']:.3f} s/epoch, {result['steps_per_s']:.0f} "
              f"steps/s, {result['peak_rss_mib']:.0f} MiB, test accuracy "
              f"{result['test_accuracy']:.4f}", flush=True)
        return result

    systems = ([("memopt", r) for r in a.replicas] if a.memopt else []) + [
        (s, t) for t in a.peer_threads for s in ("keras", "pytorch")]
    load_before = loadavg()
    results, failed = [], []
    for r in range(1, a.rounds + 1):
        seed = 41 + r  # one seed per round, shared by every system
        print(f"-- round {r}/{a.rounds} (seed {seed})", flush=True)
        for batch in a.batches:
            for policy in a.policies:
                for system, threads in systems:
                    tag = f"r{r}-b{batch}-{system}-{policy}" + (
                        f"-t{threads}" if system != "memopt" else
                        f"-r{threads}" if threads != 1 else "")
                    res = run(system, policy, batch, threads, seed, tag)
                    if res:
                        results.append(res)
                    else:
                        failed.append(tag)
    load_after = loadavg()
    with open(os.path.join(logs, "results.json"), "w") as f:
        json.dump(results, f, indent=1)

    profiles = {}
    if a.profile:
        # One replica's step, on one thread, at the rows each replica trains on.
        replicas = a.replicas[-1]
        print(f"-- step profile of memopt's convnet ({label('memopt', replicas)})", flush=True)
        for batch in a.batches:
            for policy in a.policies:
                rows = max(1, batch // replicas)
                out = subprocess.run([a.profile, "--profile", str(rows), policy],
                                     capture_output=True, text=True,
                                     env=dict(os.environ, OMP_NUM_THREADS="1"))
                if out.returncode == 0:
                    profiles[(batch, policy, rows)] = out.stdout.rstrip("\n")
                else:
                    print(f"bench_cnn_steps failed: {out.stderr}", file=sys.stderr)

    lines = report(a, results, failed, profiles, commit, load_before, load_after)
    path = os.path.join(a.root, a.out)
    write_section(path, CNN_BEGIN, CNN_END, "\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nwrote the convnet section of {a.out}; logs in {logs}")
    return 1 if failed else 0


def report(a, results, failed, profiles, commit, load_before, load_after):
    groups = {}
    for x in results:
        groups.setdefault((x["batch"], x["policy"], x["label"]), []).append(x)
    summary = {
        key: {
            "epoch": med([x["epoch_time_s"] for x in rs]),
            "epoch_min": min(x["epoch_time_s"] for x in rs),
            "epoch_max": max(x["epoch_time_s"] for x in rs),
            "steps_per_s": med([x["steps_per_s"] for x in rs]),
            "rss": med([x["peak_rss_mib"] for x in rs]),
            "accuracy": med([x["test_accuracy"] for x in rs]),
            "compute": rs[0]["compute"],
        }
        for key, rs in groups.items()
    }
    mine = [label("memopt", r) for r in a.replicas]
    peers = [label(s, t) for t in a.peer_threads for s in ("keras", "pytorch")]
    order = mine + peers
    frameworks = sorted({x["framework"] for x in results if x["framework"]})
    default_memopt = os.path.join(a.build, "examples", "02_fashion_mnist_cnn",
                                  "fashion_mnist_cnn")
    invocation = "benchmarks/compare/run_cnn.sh --epochs {} --rounds {} --batches \"{}\" " \
        "--policies \"{}\" --peer-threads \"{}\"{}".format(
            a.epochs, a.rounds, " ".join(map(str, a.batches)), " ".join(a.policies),
            " ".join(map(str, a.peer_threads)),
            (f" --replicas \"{' '.join(map(str, a.replicas))}\"" if a.replicas != [1] else "")
            + (f" --data {a.data}" if a.data != "/usr/share/datasets/fashion-mnist" else "")
            + (f" --memopt {a.memopt}" if a.memopt and a.memopt != default_memopt else "")
            + (" --memopt none" if not a.memopt else ""))

    lines = [CNN_BEGIN]
    add = lines.append
    add("## The convnet: memopt beside Keras and PyTorch (issue 10)")
    add("")
    add(f"Generated by `{invocation}`; do not edit by hand (run_cnn.sh rewrites this section "
        "and keeps the rest of the file).")
    add("")
    add(f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    add(f"- CPU: {cpu_model()}, {os.cpu_count()} cores; load average {load_before} before the "
        f"runs, {load_after} after (the machine is shared; the runs are interleaved so that "
        "its other load falls on every system alike)")
    add(f"- Software: {platform.system()} {platform.release()}, {compiler()}; "
        f"{'; '.join(frameworks)}; memopt {commit}"
        + (" (as built for this run)" if a.memopt else ""))
    if not a.memopt:
        add(f"- **memopt was not measured**: {a.skipped}. The tables hold the peers alone.")
    add("- Model: Keras's \"Simple MNIST convnet\" on 28x28x1 inputs: Conv2D(32, 3, relu), "
        "MaxPooling2D(2), Conv2D(64, 3, relu), MaxPooling2D(2), Flatten, Dropout(0.5), "
        "Dense(10, softmax); 34,826 parameters; Adam (lr 1e-3), sparse categorical "
        f"cross-entropy, accuracy, pixels / 255; batches {', '.join(map(str, a.batches))}, "
        f"{a.epochs} epochs, Fashion-MNIST from `{a.data}`")
    add("- Epoch time: the time between consecutive `Epoch N/M` lines of each program's "
        "output, over the epochs after the first, median over the rounds (min-max in "
        "brackets); an epoch is its training steps plus the validation pass over the test "
        "split (10,000 images). Peak RSS: `ru_maxrss` of the process (wait4). Test accuracy: "
        "after the last epoch, median over the rounds, each round with its own seed (42, 43, "
        "...) shared by all systems; after few epochs it differs by tenths of a point from "
        "seed to seed.")
    add("")
    add("### Medians")
    add("")
    add("| batch | system | policy | computes in | epoch (s) | steps/s | peak RSS (MiB) "
        "| test accuracy |")
    add("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for batch in a.batches:
        for policy in a.policies:
            for lab in order:
                s = summary.get((batch, policy, lab))
                if s:
                    add(f"| {batch} | {lab} | {policy} | {s['compute']} | {s['epoch']:.3f} "
                        f"({s['epoch_min']:.3f}-{s['epoch_max']:.3f}) | "
                        f"{fmt(s['steps_per_s'], '.0f')} | {s['rss']:.0f} | "
                        f"{s['accuracy']:.4f} |")
    add("")

    checks = []
    if a.memopt:
        add("### memopt's ratios")
        add("")
        add(f"Speed-up: the peer's epoch time over memopt's (targets: >= {SPEED_VS_KERAS:g} "
            f"against Keras, >= {SPEED_VS_TORCH:g} against PyTorch). Memory: the peer's peak "
            f"RSS over memopt's (target >= {MEMORY_VS_KERAS:g} against Keras). Accuracy: "
            "memopt's minus the peer's, in percentage points (target: within "
            f"{ACCURACY_PP:g} of Keras's).")
        add("")
        add("| batch | policy | memopt | peer | speed-up | memory | accuracy (pp) |")
        add("| --- | --- | --- | --- | --- | --- | --- |")
        for batch, policy, me in [(b, p, m) for b in a.batches for p in a.policies for m in mine]:
            m = summary.get((batch, policy, me))
            if not m:
                continue
            for lab in peers:
                p = summary.get((batch, policy, lab))
                if not p:
                    continue
                speed, memory = p["epoch"] / m["epoch"], p["rss"] / m["rss"]
                acc = 100 * (m["accuracy"] - p["accuracy"])
                add(f"| {batch} | {policy} | {me} | {lab} | {speed:.2f}x | {memory:.2f}x | "
                    f"{acc:+.2f} |")
                goal = SPEED_VS_KERAS if lab.startswith("keras") else SPEED_VS_TORCH
                where = f"batch {batch}, {policy}, {me}"
                checks.append((f"{where}: epoch >= {goal:g}x shorter than {lab}'s",
                               speed >= goal, f"{speed:.2f}x" + (
                                   "" if speed >= goal else
                                   f"; memopt would need {p['epoch'] / goal:.3f} s, it "
                                   f"took {m['epoch']:.3f} s")))
                if lab.startswith("keras"):
                    checks.append((f"{where}: peak RSS <= 1/{MEMORY_VS_KERAS:g} of {lab}'s",
                                   memory >= MEMORY_VS_KERAS, f"{memory:.2f}x"))
                    checks.append((f"{where}: test accuracy within {ACCURACY_PP:g} pp of "
                                   f"{lab}'s", acc >= -ACCURACY_PP,
                                   f"{acc:+.2f} pp"))
        add("")
        add("### Targets")
        add("")
        for name, ok, detail in checks:
            add(f"- [{'x' if ok else ' '}] {name}: {detail}")
        add("")

    if profiles:
        add("### Where memopt's time goes")
        add("")
        add(f"`OMP_NUM_THREADS=1 bench_cnn_steps --profile ROWS POLICY`: one training step of "
            f"{label('memopt', a.replicas[-1])} as one replica runs it (ROWS = batch / "
            "replicas), driven without the data pipeline, each step of the plan's schedule "
            "timed (median of 30), the Conv2D and Dense passes beside this core's peak "
            "(measured by the benchmark on chains of independent AVX-512 float32 FMAs and "
            "bfloat16 dot products). At the peak, the products alone would take the last "
            "line's floor: the bound on any library's step on this core.")
        add("")
        for (batch, policy, rows), text in profiles.items():
            add(f"batch {batch}, {policy} ({rows} rows a replica):")
            add("")
            add("```")
            add(text)
            add("```")
            add("")

    add("### Every run")
    add("")
    add("| run | epoch times after the first (s) | as printed (s) | peak RSS (MiB) | CPU (s) "
        "| wall (s) | test accuracy |")
    add("| --- | --- | --- | --- | --- | --- | --- |")
    for x in results:
        printed = x["printed_epoch_times_s"][1:]
        add(f"| {x['tag']} | {', '.join(f'{t:.3f}' for t in x['epoch_times_s'])} | "
            f"{', '.join(fmt(t, '.3f') for t in printed)} | {x['peak_rss_mib']:.0f} | "
            f"{x['cpu_s']:.1f} | {x['wall_s']:.1f} | {x['test_accuracy']:.4f} |")
    add("")
    add("### Notes")
    add("")
    if failed:
        add(f"- Runs that failed or were stopped, left out of the tables: {', '.join(failed)} "
            "(their logs are in the build folder's compare-cnn-logs/).")
    add("- The peers use their default thread pools (one thread per core) at `--peer-threads` "
        "0 and one thread at 1; the CPU (s) column of every run shows how many cores each "
        "process kept busy.")
    add("- PyTorch runs the same layer sizes in its own channels-first layout, with "
        "Keras's Glorot-uniform kernels and zero biases and Adam with Keras's epsilon (1e-7); "
        "its mixed policies run `torch.autocast(device_type=\"cpu\", dtype=torch.bfloat16)`.")
    add("- Keras and PyTorch shuffle every epoch (tf.data `shuffle`, DataLoader "
        "`shuffle=True`) and apply Dropout(0.5) in training only.")
    add(CNN_END)
    return lines


if __name__ == "__main__":
    sys.exit(main())
