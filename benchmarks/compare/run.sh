#!/usr/bin/env bash
# memopt beside TensorFlow/Keras and PyTorch on this CPU, in one run, and the Eigen floor.
#
#   benchmarks/compare/run.sh [--epochs N] [--rounds N] [--policies "float32 mixed_float16"]
#                             [--peer-threads "0 1"] [--data DIR] [--build DIR] [--out FILE]
#                             [--no-install] [--no-profile] [--append]
#
# 1. Makes (or reuses) the virtual environment .venv and installs the peers from
#    benchmarks/compare/requirements.txt when `import tensorflow, torch` fails there.
# 2. Builds memopt's Fashion-MNIST example and benchmarks/compare/eigen_floor in Release
#    with -O3 -march=native (MEMOPT_NATIVE), in build-compare/ unless --build says otherwise.
# 3. Runs, for each round and policy, memopt's example, Keras and PyTorch one after the other
#    (memopt, TF, PyTorch, memopt, ...; interleaving spreads the machine's other load evenly
#    over the systems), then the floor, all on the same data for the same number of epochs.
#    --peer-threads lists the thread counts for the peers' pools: 0 is the library default
#    (one per core); 1 matches memopt's single thread.
# 4. Writes RESULTS.md (default benchmarks/RESULTS.md): medians over the rounds, memopt's
#    ratios to each peer and to the floor, the targets met or missed, and, unless --no-profile,
#    a perf profile of memopt's epoch. Logs of every run stay in <build>/compare-logs/.
#    Only the part between `<!-- run.sh: begin -->` and `<!-- run.sh: end -->` is replaced;
#    the other scripts' sections and the notes written by hand stay where they are.
#    --append adds this run's tables under a heading at the end of that part instead of
#    replacing it (for instance a float32 run with the peers on one thread after the main
#    run: `--append --policies float32 --peer-threads 1 --no-profile`).
#
# Epoch time: the time between consecutive `Epoch N/M` lines of a program's output (so one
# measure for every system, whatever each prints), over the epochs after the first: one epoch
# of training at batch 32 plus the validation pass on the 10,000 test images that memopt's
# example, Keras's fit and the other two programs all run at the end of each epoch.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

epochs=3
rounds=3
policies="float32 mixed_float16"
peer_threads="0"
data=/usr/share/datasets/fashion-mnist
build=build-compare
out=benchmarks/RESULTS.md
install=1
profile=1
append=0
jobs=${MEMOPT_JOBS:-2}

usage() {
  sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit "${1:-2}"
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --epochs) epochs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --policies) policies=$2; shift 2 ;;
    --peer-threads) peer_threads=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-install) install=0; shift ;;
    --no-profile) profile=0; shift ;;
    --append) append=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
if ! [[ $epochs =~ ^[0-9]+$ && $epochs -ge 2 ]]; then
  echo "run.sh: --epochs must be 2 or more (the first epoch is not timed), found '$epochs'" >&2
  exit 2
fi
if ! [[ $rounds =~ ^[0-9]+$ && $rounds -ge 1 ]]; then
  echo "run.sh: --rounds must be a positive number, found '$rounds'" >&2
  exit 2
fi
# shellcheck source=common.sh  # sets py, among others
source benchmarks/compare/common.sh
require_fashion_mnist "$data" run.sh
ensure_peers "$install" run.sh
configure_release "$build"
cmake --build "$build" -j "$jobs" --target fashion_mnist eigen_floor

echo "==== runs: $rounds rounds x ($policies) x (memopt, keras, pytorch), then the floor ===="
# The driver: runs every program, reads its output as it comes (timestamping the epoch
# lines), takes each one's peak resident memory from wait4, and writes the report.
"$py" - "$root" "$build" "$epochs" "$rounds" "$policies" "$peer_threads" "$data" "$out" \
  "$profile" "$append" <<'PY'
import datetime
import json
import os
import platform
import sys

root, build, epochs, rounds, policies, peer_threads, data, out, profile, append = sys.argv[1:]
epochs, rounds, profile, append = int(epochs), int(rounds), profile == "1", append == "1"
policies = policies.split()
peer_threads = [int(t) for t in peer_threads.split()]
build = os.path.join(root, build)
logs = os.path.join(build, "compare-logs" + ("-appended" if append else ""))
os.makedirs(logs, exist_ok=True)
py = os.path.join(root, ".venv", "bin", "python")
example = os.path.join(build, "examples", "01_fashion_mnist", "fashion_mnist")
floor = os.path.join(build, "benchmarks", "eigen_floor")
compare = os.path.join(root, "benchmarks", "compare")
sys.path.insert(0, compare)
from measure import (commit_of, compiler, cpu_model, fmt, loadavg, med,  # noqa: E402
                     perf_profile, read_text, run_program, section_span,
                     write_section)

commit = commit_of(root)


# Read now, next to the build, not at the end: others may edit the tree while this runs.
with open(os.path.join(root, "examples", "01_fashion_mnist", "main.cpp")) as f:
    example_shuffles = "shuffle(" in f.read()

def label(system, threads):
    if system in ("keras", "pytorch"):
        return f"{system} ({'default threads' if threads == 0 else f'{threads} thread'})"
    return system


def command(system, policy, threads, seed):
    common = ["--epochs", str(epochs), "--data", data, "--seed", str(seed)]
    if system == "memopt":
        return [example, "--policy", policy] + common
    if system == "floor":
        return [floor] + common
    script = os.path.join(compare, f"{'keras' if system == 'keras' else 'torch'}_fashion_mnist.py")
    return [py, script, "--policy", policy, "--threads", str(threads)] + common


def run(system, policy, threads, tag, seed):
    """Runs one program; returns what it measured, or None when it failed."""
    cmd = command(system, policy, threads, seed)
    result = run_program(cmd, os.path.join(logs, f"{tag}.log"), tag, root)
    if result is None:
        return None
    peer = result.pop("peer")
    result.update({"system": system, "label": label(system, threads), "policy": policy,
                   "seed": seed, "threads": threads, "compute": peer.get("compute", policy)})
    print(f"  {tag}: {result['epoch_time_s']:.3f} s/epoch, {result['steps_per_s']:.0f} steps/s, "
          f"{result['peak_rss_mib']:.0f} MiB, test accuracy {result['test_accuracy']:.4f}",
          flush=True)
    return result


load_before = loadavg()
results = []
for r in range(1, rounds + 1):
    # One seed per round, the same for every system: accuracy after a few epochs moves by
    # tenths of a point with the seed, so its median over rounds is over different seeds.
    seed = 41 + r
    print(f"-- round {r}/{rounds} (seed {seed})", flush=True)
    for policy in policies:
        jobs = [("memopt", 0)] + [(s, t) for t in peer_threads for s in ("keras", "pytorch")]
        for system, threads in jobs:
            tag = f"r{r}-{system}-{policy}" + (f"-t{threads}" if system != "memopt" else "")
            res = run(system, policy, threads, tag, seed)
            if res:
                results.append(res)
    res = run("floor", "float32", 0, f"r{r}-floor", seed)
    if res:
        results.append(res)
load_after = loadavg()
with open(os.path.join(logs, "results.json"), "w") as f:
    json.dump(results, f, indent=1)


# --- profile ---------------------------------------------------------------------------------

def example_profile(policy):
    """The hottest symbols of memopt's example over two epochs, from perf record."""
    return perf_profile([example, "--policy", policy, "--epochs", "2", "--data", data],
                        os.path.join(logs, f"perf-{policy}.data"))


profiles = {}
if profile:
    print("-- perf profile of memopt's example", flush=True)
    for policy in policies:
        rows = example_profile(policy)
        if rows:
            profiles[policy] = rows


# --- report ----------------------------------------------------------------------------------

groups = {}
for res in results:
    groups.setdefault((res["label"], res["policy"]), []).append(res)

order = ["memopt"] + [label(s, t) for t in peer_threads for s in ("keras", "pytorch")]
summary = {}
for (lab, policy), rs in groups.items():
    summary[(lab, policy)] = {
        "epoch": med([x["epoch_time_s"] for x in rs]),
        "epoch_min": min(x["epoch_time_s"] for x in rs),
        "epoch_max": max(x["epoch_time_s"] for x in rs),
        "steps_per_s": med([x["steps_per_s"] for x in rs]),
        "rss": med([x["peak_rss_mib"] for x in rs]),
        "accuracy": med([x["test_accuracy"] for x in rs]),
        "compute": rs[0]["compute"], "n": len(rs),
        "framework": rs[0]["framework"],
    }
floor_s = summary.get(("floor", "float32"))


frameworks = sorted({x["framework"] for x in results if x["framework"]})


lines = []
add = lines.append
invocation = "benchmarks/compare/run.sh --epochs {} --rounds {} --policies \"{}\" " \
    "--peer-threads \"{}\"{}".format(epochs, rounds, " ".join(policies),
                                      " ".join(map(str, peer_threads)),
                                      " --append" if append else "")
if append:
    add(f"# Another run: `{invocation}`")
else:
    add("# memopt beside TensorFlow/Keras and PyTorch on the CPU")
    add("")
    add(f"Generated by `{invocation}`; do not edit by hand.")
add("")
add(f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
add(f"- CPU: {cpu_model()}, {os.cpu_count()} cores; load average {load_before} before the "
    f"runs, {load_after} after (the machine is shared; the runs are interleaved so that "
    "its other load falls on every system alike)")
add(f"- Software: {platform.system()} {platform.release()}, {compiler()}; "
    f"{'; '.join(frameworks)}; memopt {commit} (as built for this run)")
add("- Model: `Sequential<Dense<128, ReLU>, Dense<10, Softmax>>` on 784 inputs, Adam "
    "(lr 1e-3), sparse categorical cross-entropy, accuracy, batch 32 (1875 steps per epoch), "
    f"{epochs} epochs, Fashion-MNIST from `{data}`")
add("- Epoch time: the time between consecutive `Epoch N/M` lines of each program's output, "
    "over the epochs after the first, median over the rounds (min-max in brackets). An "
    "epoch is its 1875 training steps plus the validation pass over the 10,000 test images "
    "that each program runs at the end of every epoch. Peak RSS: `ru_maxrss` of the process "
    "(wait4). Test accuracy: after the last epoch, median over the rounds, each round with its "
    "own seed (42, 43, ...) shared by all systems.")
add("")
add("## Medians")
add("")
add("| system | policy | computes in | epoch (s) | steps/s | peak RSS (MiB) | test accuracy |")
add("| --- | --- | --- | --- | --- | --- | --- |")
for policy in policies:
    for lab in order:
        s = summary.get((lab, policy))
        if not s:
            continue
        add(f"| {lab} | {policy} | {s['compute']} | {s['epoch']:.3f} "
            f"({s['epoch_min']:.3f}-{s['epoch_max']:.3f}) | {s['steps_per_s']:.0f} | "
            f"{s['rss']:.0f} | {s['accuracy']:.4f} |")
if floor_s:
    add(f"| Eigen floor | float32 | float32 | {floor_s['epoch']:.3f} "
        f"({floor_s['epoch_min']:.3f}-{floor_s['epoch_max']:.3f}) | "
        f"{floor_s['steps_per_s']:.0f} | {floor_s['rss']:.0f} | {floor_s['accuracy']:.4f} |")
add("")
add("## memopt's ratios")
add("")
add("Speed-up: the peer's epoch time over memopt's (target >= 5). Floor: memopt's epoch time "
    "over the Eigen floor's (target <= 2). Memory: the peer's peak RSS over memopt's (target "
    ">= 3 against Keras). Accuracy: memopt's minus the peer's, in percentage points (target: "
    "no more than 0.5 below Keras).")
add("")
add("| policy | peer | speed-up | memory | accuracy (pp) |")
add("| --- | --- | --- | --- | --- |")
checks = []
for policy in policies:
    m = summary.get(("memopt", policy))
    if not m:
        continue
    for lab in order[1:]:
        p = summary.get((lab, policy))
        if not p:
            continue
        speed = p["epoch"] / m["epoch"]
        memory = p["rss"] / m["rss"]
        acc = 100 * (m["accuracy"] - p["accuracy"])
        add(f"| {policy} | {lab} | {speed:.2f}x | {memory:.2f}x | {acc:+.2f} |")
        checks.append((f"{policy}: epoch >= 5x shorter than {lab}'s", speed >= 5,
                       f"{speed:.2f}x" + ("" if speed >= 5 else
                                          f"; memopt would need {p['epoch'] / 5:.3f} s, "
                                          f"it took {m['epoch']:.3f} s")))
        if lab.startswith("keras"):
            checks.append((f"{policy}: peak RSS >= 3x below {lab}'s", memory >= 3,
                           f"{memory:.2f}x"))
            checks.append((f"{policy}: test accuracy within 0.5 pp of {lab}'s", acc >= -0.5,
                           f"{acc:+.2f} pp"))
    if floor_s:
        ratio = m["epoch"] / floor_s["epoch"]
        add(f"| {policy} | Eigen floor | {1 / ratio:.2f}x (memopt takes {ratio:.2f}x the "
            f"floor's time) | {floor_s['rss'] / m['rss']:.2f}x | "
            f"{100 * (m['accuracy'] - floor_s['accuracy']):+.2f} |")
        checks.append((f"{policy}: epoch within 2x of the Eigen floor", ratio <= 2,
                       f"{ratio:.2f}x the floor's {floor_s['epoch']:.3f} s"))
add("")
add("## Targets")
add("")
for name, ok, detail in checks:
    add(f"- [{'x' if ok else ' '}] {name}: {detail}")
add("")
if profiles:
    add("## Where memopt's time goes")
    add("")
    add("`perf record -F 999` of the example over 2 epochs (data loading, training, "
        "validation), self time by symbol (template arguments elided), entries above 1.5%:")
    add("")
    for policy, rows in profiles.items():
        add(f"{policy}:")
        add("")
        add("| self | symbol |")
        add("| --- | --- |")
        for pct, name in rows:
            add(f"| {pct:.1f}% | `{name.replace('|', '/')}` |")
        add("")
add("## Every run")
add("")
add("| run | epoch times after the first (s) | as printed (s) | peak RSS (MiB) | CPU (s) "
    "| wall (s) | test accuracy |")
add("| --- | --- | --- | --- | --- | --- | --- |")
for x in results:
    printed = [t for t in x["printed_epoch_times_s"][1:]]
    add(f"| {x['tag']} | {', '.join(f'{t:.3f}' for t in x['epoch_times_s'])} | "
        f"{', '.join(fmt(t, '.3f') for t in printed)} | {x['peak_rss_mib']:.0f} | "
        f"{x['cpu_s']:.1f} | {x['wall_s']:.1f} | {x['test_accuracy']:.4f} |")
add("")
add("## Notes")
add("")
add("- memopt's Dense products run on oneDNN's matmul: on OpenMP's threads (one per core) "
    "from 2^21 multiply-adds a product, on the calling thread below (784-128-10 at batch 32: "
    "the first layer's three products on both cores, the second's on one); the rest of its "
    "step runs on one thread. The peers use their default thread pools (one thread per core) "
    "unless `--peer-threads` says otherwise.")
add("- PyTorch has no float16 autocast on the CPU: its `mixed_float16` rows run "
    "`torch.autocast(device_type=\"cpu\", dtype=torch.bfloat16)`, as the \"computes in\" "
    "column says. Keras runs `mixed_float16` as its policy says.")
add("- The Eigen floor (`benchmarks/compare/eigen_floor.cpp`) does the same products, "
    "softmax cross-entropy and Adam update written directly against Eigen, in float32, "
    "with subnormals flushed to zero (as TensorFlow does on its threads); it reads the "
    "batches in order, without shuffling.")
add("- Keras and PyTorch shuffle every epoch (tf.data `shuffle`, DataLoader `shuffle=True`); "
    + ("memopt's example shuffles too (`data::shuffle`)." if example_shuffles else
       "memopt's example, as built for this run, does not shuffle (`train | data::batch(32)`), "
       "which costs it accuracy after few epochs."))
add("- The machine's other load slows the multi-threaded peers most: a pool of one thread per "
    "core stalls whenever another process holds a core. The CPU (s) column of every run "
    "shows how much of the wall time each process really computed.")

if append:
    # One level deeper, so that the appended run sits under the main run's title.
    lines = ["#" + x if x.startswith("#") else x for x in lines]
    lines = [""] + lines
BEGIN, END = "<!-- run.sh: begin -->", "<!-- run.sh: end -->"
path = os.path.join(root, out)
section = "\n".join(lines) + "\n"
if append:
    # The appended run goes at the end of the main run's part, under its title.
    text = read_text(path)
    span = section_span(text, BEGIN, END)
    if span:
        section = text[span[0] + len(BEGIN):span[1]].strip("\n") + "\n" + section
write_section(path, BEGIN, END, BEGIN + "\n" + section.rstrip("\n") + "\n" + END + "\n")
print("\n".join(lines))
print(f"\nwrote {out}; logs in {logs}")
failed = rounds * (len(policies) * (1 + 2 * len(peer_threads)) + 1) - len(results)
sys.exit(1 if failed else 0)
PY
