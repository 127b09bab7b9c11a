#!/usr/bin/env python3
"""The driver of benchmarks/compare/run_images.sh (run it through that script, which sets up
the .venv and builds bench_image_decode): decode + resize + batch throughput of memopt,
tf.data and PyTorch on the same files, interleaved, and the images section of RESULTS.md."""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import commit_of, compiler, cpu_model, loadavg, write_section  # noqa: E402

# Issue 11's target: memopt's images per core at least twice tf.data's.
PER_CORE_VS_TFDATA = 2.0
BEGIN = "<!-- run_images.sh: begin -->"
END = "<!-- run_images.sh: end -->"
SYSTEMS = ["memopt", "tf.data", "pytorch"]


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", required=True)
    p.add_argument("--memopt", required=True, help="bench_image_decode's path")
    p.add_argument("--dir", required=True)
    p.add_argument("--size", type=int, default=128)
    p.add_argument("--limit", type=int, default=2000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", default="1 2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", required=True)
    p.add_argument("--logs", required=True)
    p.add_argument("--command", default="benchmarks/compare/run_images.sh")
    a = p.parse_args()
    a.threads = [int(t) for t in a.threads.split()]
    return a


def command(a, system, threads):
    common = ["--dir", a.dir, "--size", str(a.size), "--limit", str(a.limit), "--batch",
              str(a.batch), "--threads", str(threads)]
    if system == "memopt":
        return [a.memopt] + common + ["--stages", "0", "--json", "1"]
    py = os.path.join(a.root, ".venv", "bin", "python")
    script = "tfdata_images.py" if system == "tf.data" else "torch_images.py"
    return [py, os.path.join(a.root, "benchmarks", "compare", script), "--json"] + common


def run(a, system, threads, tag):
    """One process measuring one system at one thread count: its JSON line, with the load
    average before it started, or None when it failed."""
    cmd = command(a, system, threads)
    load = loadavg()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=a.root)
    with open(os.path.join(a.logs, tag + ".log"), "w") as f:
        f.write("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    rows = [r for r in rows if r.get("threads") == threads]
    if proc.returncode != 0 or not rows:
        print(f"  {tag}: FAILED (exit {proc.returncode}); see {a.logs}/{tag}.log", flush=True)
        return None
    r = rows[0]
    r.update({"per_s": r["images"] / r["wall_s"], "per_cpu_s": r["images"] / r["cpu_s"],
              "cores": r["cpu_s"] / r["wall_s"], "loadavg": load, "system": system,
              "command": " ".join(cmd)})
    print(f"  {tag}: {r['per_s']:.0f} images/s, {r['per_cpu_s']:.0f} images per CPU-second "
          f"({r['cores']:.2f} cores busy), load {load}", flush=True)
    return r


def med(rows, key):
    return statistics.median(r[key] for r in rows) if rows else float("nan")


def report(a, runs, started, finished):
    lines = [BEGIN, "",
             "## Images from disk: decode + resize + batch throughput (issue 11)", "",
             f"Written by `{a.command}` on {finished} (started {started}).", "",
             f"- Machine: {cpu_model()}, {os.cpu_count()} logical CPUs, "
             f"{platform.system()} {platform.release()}; load average at the start of each "
             f"run in the table below (this machine is shared with other builds).",
             f"- memopt: {commit_of(a.root)}, {compiler()}, `bench_image_decode` (Release, "
             f"-O3 -march=native); peers from the .venv (`tfdata_images.py`, `torch_images.py`).",
             f"- Files: the first {a.limit} of `{a.dir}` (sorted classes, sorted names), "
             f"resized to {a.size}x{a.size} rgb, batches of {a.batch}; every system reads the "
             f"same files, once untimed (page cache, warm-up) and then timed.",
             f"- {a.rounds} rounds; in each, every thread count, and at each the three "
             f"systems in an order that rotates by round. Medians below.",
             "- images/s: images over the wall time of the timed pass. **Images per "
             "CPU-second**: images over the CPU time (user + system) of every thread of the "
             "process over that pass, and for PyTorch of its worker processes too: what one "
             "core buys, whatever the machine's other load does to wall time. This is the "
             "per-core figure the target is checked on.",
             "", "### Medians", "",
             "| system | threads | images/s | images per CPU-second | cores busy |",
             "| --- | ---: | ---: | ---: | ---: |"]
    medians = {}
    for t in a.threads:
        for s in SYSTEMS:
            rows = [r for r in runs if r["system"] == s and r["threads"] == t]
            m = (med(rows, "per_s"), med(rows, "per_cpu_s"), med(rows, "cores"))
            medians[(s, t)] = m
            lines.append(f"| {s} | {t} | {m[0]:.0f} | {m[1]:.0f} | {m[2]:.2f} |")
    lines += ["", "### memopt's ratios and the target", "",
              "| threads | vs tf.data, per CPU-second | vs tf.data, images/s | "
              "vs PyTorch, per CPU-second | vs PyTorch, images/s | target (>= "
              f"{PER_CORE_VS_TFDATA:.0f}x tf.data per core) |",
              "| ---: | ---: | ---: | ---: | ---: | --- |"]
    for t in a.threads:
        mo, tf, pt = medians[("memopt", t)], medians[("tf.data", t)], medians[("pytorch", t)]
        ratio = mo[1] / tf[1]
        verdict = "met" if ratio >= PER_CORE_VS_TFDATA else "missed"
        lines.append(f"| {t} | {ratio:.2f}x | {mo[0] / tf[0]:.2f}x | {mo[1] / pt[1]:.2f}x | "
                     f"{mo[0] / pt[0]:.2f}x | {verdict} |")
    lines += ["", "### Every run", "",
              "| round | system | threads | images | wall s | CPU s | images/s | "
              "per CPU-second | load average |",
              "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in runs:
        lines.append(f"| {r['round']} | {r['system']} | {r['threads']} | {r['images']} | "
                     f"{r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['per_s']:.0f} | "
                     f"{r['per_cpu_s']:.0f} | {r['loadavg']} |")
    lines += ["", "Commands (one per system and thread count, as run):", "", "```"]
    seen = set()
    for r in runs:
        if (r["system"], r["threads"]) not in seen:
            seen.add((r["system"], r["threads"]))
            lines.append(r["command"])
    lines += ["```", "", END, ""]
    return "\n".join(lines)


def main():
    a = parse()
    os.makedirs(a.logs, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    runs = []
    for r in range(1, a.rounds + 1):
        print(f"==== round {r}/{a.rounds} ====", flush=True)
        for t in a.threads:
            k = (r - 1) % len(SYSTEMS)
            for s in SYSTEMS[k:] + SYSTEMS[:k]:
                row = run(a, s, t, f"r{r}-{s}-t{t}")
                if row is not None:
                    row["round"] = r
                    runs.append(row)
    finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = report(a, runs, started, finished)
    write_section(a.out, BEGIN, END, section)
    print(section)
    missing = [(s, t) for s in SYSTEMS for t in a.threads
               if not any(r["system"] == s and r["threads"] == t for r in runs)]
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
