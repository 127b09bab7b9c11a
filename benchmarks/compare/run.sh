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
#    --append adds this run's tables under a heading at the end of an existing RESULTS.md
#    instead of replacing it (for instance a float32 run with the peers on one thread after
#    the main run: `--append --policies float32 --peer-threads 1 --no-profile`).
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
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz \
         t10k-labels-idx1-ubyte.gz; do
  if [[ ! -f $data/$f ]]; then
    echo "run.sh: expected Fashion-MNIST in $data, found no $f (Debian: apt-get install" \
         "dataset-fashion-mnist, or pass --data DIR)" >&2
    exit 1
  fi
done

echo "==== Python peers (.venv) ===="
venv=$root/.venv
if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv"
fi
py=$venv/bin/python
if ! "$py" -c "import tensorflow, torch" >/dev/null 2>&1; then
  if [[ $install -eq 0 ]]; then
    echo "run.sh: tensorflow or torch is missing from $venv and --no-install was given" >&2
    exit 1
  fi
  "$py" -m pip install -r benchmarks/compare/requirements.txt
fi
"$py" -c "import tensorflow, torch" >/dev/null 2>&1

echo "==== build (Release, -O3 -march=native) in $build ===="
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DMEMOPT_NATIVE=ON \
  -DMEMOPT_ENABLE_CUDA=OFF -DMEMOPT_BUILD_TESTS=OFF -DMEMOPT_BUILD_EXAMPLES=ON \
  -DMEMOPT_BUILD_BENCHMARKS=ON >/dev/null
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
import re
import shutil
import statistics
import subprocess
import sys
import time

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

def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=root).stdout.strip()
    except OSError:
        return ""


commit = sh(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
if sh(["git", "status", "--porcelain", "--untracked-files=no"]):
    commit += " with uncommitted changes"


# Read now, next to the build, not at the end: others may edit the tree while this runs.
with open(os.path.join(root, "examples", "01_fashion_mnist", "main.cpp")) as f:
    example_shuffles = "shuffle(" in f.read()

EPOCH = re.compile(r"^\s*Epoch\s+(\d+)/(\d+)\b(.*)$")
TEST_ACCURACY = re.compile(r"test_accuracy\s*=\s*([0-9.]+)")
STEPS = re.compile(r"(\d+)\s+steps\b|-\s*(\d+)/(\d+)\s*-")
PER_STEP = re.compile(r"([0-9.]+)\s*(us|ms|s)/step")
SECONDS = re.compile(r"-\s*([0-9]+(?:\.[0-9]+)?)s\b")


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
    log = os.path.join(logs, f"{tag}.log")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    start = time.perf_counter()
    stamps, printed, steps, accuracy, peer = [], [], None, None, {}
    with open(log, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, cwd=root, env=env)
        for line in proc.stdout:
            now = time.perf_counter()
            f.write(line)
            m = EPOCH.match(line)
            if m:
                stamps.append(now)
                rest = m.group(3)
                s = STEPS.search(rest)
                if s:
                    steps = int(s.group(1) or s.group(2))
                p = PER_STEP.search(rest)
                if p and steps:
                    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0}[p.group(2)]
                    printed.append(steps * float(p.group(1)) * scale)
                else:
                    t = SECONDS.search(rest)
                    printed.append(float(t.group(1)) if t else float("nan"))
            m = TEST_ACCURACY.search(line)
            if m:
                accuracy = float(m.group(1))
            if line.startswith("{"):
                try:
                    peer = json.loads(line)
                except ValueError:
                    pass
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0 or len(stamps) < 2 or accuracy is None:
        print(f"  {tag}: FAILED (exit {proc.returncode}, {len(stamps)} epoch lines); see {log}",
              flush=True)
        return None
    deltas = [b - a for a, b in zip(stamps, stamps[1:])]
    epoch_time = statistics.median(deltas)
    result = {
        "system": system, "label": label(system, threads), "policy": policy, "seed": seed,
        "threads": threads, "compute": peer.get("compute", policy), "tag": tag,
        "epoch_times_s": deltas, "epoch_time_s": epoch_time,
        "printed_epoch_times_s": printed, "steps": steps,
        "steps_per_s": steps / epoch_time if steps else float("nan"),
        "peak_rss_mib": usage.ru_maxrss / 1024.0, "test_accuracy": accuracy,
        "cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": wall,
        "framework": peer.get("framework", ""),
    }
    print(f"  {tag}: {epoch_time:.3f} s/epoch, {result['steps_per_s']:.0f} steps/s, "
          f"{result['peak_rss_mib']:.0f} MiB, test accuracy {accuracy:.4f}", flush=True)
    return result


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


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

def short_symbol(name):
    """A C++ symbol with its template arguments and parameters elided: `ns::Model<>::fit<>`."""
    out, depth = [], 0
    for c in re.sub(r"(\s+-)+\s*$", "", name):
        if c in "<(":
            if depth == 0:
                out.append(c)
            depth += 1
        elif c in ">)" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(c)
        elif depth == 0:
            out.append(c)
    return "".join(out).strip()


def perf_profile(policy):
    """The hottest symbols of memopt's example over two epochs, from perf record."""
    if not shutil.which("perf"):
        return None
    data_file = os.path.join(logs, f"perf-{policy}.data")
    rec = subprocess.run(["perf", "record", "-F", "999", "-o", data_file, "--", example,
                          "--policy", policy, "--epochs", "2", "--data", data],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if rec.returncode != 0:
        return None
    rep = subprocess.run(["perf", "report", "-i", data_file, "--stdio", "--no-children",
                          "--sort", "symbol", "--percent-limit", "1.5"],
                         capture_output=True, text=True)
    rows = []
    for line in rep.stdout.splitlines():
        m = re.match(r"^\s*([0-9.]+)%\s+\[[.k]\]\s+(.*)$", line)
        if m:
            name = short_symbol(re.sub(r"\s+", " ", m.group(2).strip()))
            rows.append((float(m.group(1)), name))
    return rows[:12]


profiles = {}
if profile:
    print("-- perf profile of memopt's example", flush=True)
    for policy in policies:
        rows = perf_profile(policy)
        if rows:
            profiles[policy] = rows


# --- report ----------------------------------------------------------------------------------

def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


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


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


gxx = sh(["c++", "--version"]).splitlines()
frameworks = sorted({x["framework"] for x in results if x["framework"]})


def fmt(x, spec):
    return format(x, spec) if x == x else "n/a"


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
add(f"- Software: {platform.system()} {platform.release()}, {gxx[0] if gxx else 'c++'}; "
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
add("- memopt's CPU backend runs on one thread (Eigen without OpenMP); the peers use their "
    "default thread pools (one thread per core) unless `--peer-threads` says otherwise.")
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
os.makedirs(os.path.dirname(os.path.join(root, out)) or ".", exist_ok=True)
with open(os.path.join(root, out), "a" if append else "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
print(f"\nwrote {out}; logs in {logs}")
failed = rounds * (len(policies) * (1 + 2 * len(peer_threads)) + 1) - len(results)
sys.exit(1 if failed else 0)
PY
