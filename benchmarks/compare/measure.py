"""What benchmarks/compare/run.sh and run_cnn.sh share: running one program while timing its
`Epoch N/M` lines, its peak memory from wait4, and the facts about the machine that go into
RESULTS.md. Standard library only (the drivers run it with the .venv's Python)."""

import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import time

EPOCH = re.compile(r"^\s*Epoch\s+(\d+)/(\d+)\b(.*)$")
TEST_ACCURACY = re.compile(r"test_accuracy\s*=\s*([0-9.]+)")
STEPS = re.compile(r"(\d+)\s+steps\b|-\s*(\d+)/(\d+)\s*-")
PER_STEP = re.compile(r"([0-9.]+)\s*(us|ms|s)/step")
SECONDS = re.compile(r"-\s*([0-9]+(?:\.[0-9]+)?)s\b")


def run_program(cmd, log, tag, cwd):
    """Runs cmd, writing its output to log; returns what it measured, or None when it failed.

    Epoch time: the time between consecutive `Epoch N/M` lines as they arrive (one measure
    for every system, whatever each prints), median over the epochs after the first. Also
    the times the program printed itself, its steps per epoch, its `test_accuracy=`, its
    peak RSS and CPU time (wait4), and the fields of a JSON line it printed, if any."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    start = time.perf_counter()
    stamps, printed, steps, accuracy, peer = [], [], None, None, {}
    with open(log, "w", buffering=1) as f:  # line by line, so that a slow run can be watched
        f.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, cwd=cwd, env=env)
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
        returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if returncode != 0 or len(stamps) < 2 or accuracy is None:
        print(f"  {tag}: FAILED (exit {returncode}, {len(stamps)} epoch lines); see {log}",
              flush=True)
        return None
    deltas = [b - a for a, b in zip(stamps, stamps[1:])]
    epoch_time = statistics.median(deltas)
    return {
        "tag": tag, "epoch_times_s": deltas, "epoch_time_s": epoch_time,
        "printed_epoch_times_s": printed, "steps": steps,
        "steps_per_s": steps / epoch_time if steps else float("nan"),
        "peak_rss_mib": usage.ru_maxrss / 1024.0, "test_accuracy": accuracy,
        "cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": wall,
        "framework": peer.get("framework", ""), "peer": peer,
    }


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def sh(cmd, cwd=None):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd).stdout.strip()
    except OSError:
        return ""


def commit_of(root):
    """The checkout's short commit, marked when tracked files differ from it."""
    commit = sh(["git", "rev-parse", "--short", "HEAD"], root) or "unknown"
    if sh(["git", "status", "--porcelain", "--untracked-files=no"], root):
        commit += " with uncommitted changes"
    return commit


def compiler():
    lines = sh(["c++", "--version"]).splitlines()
    return lines[0] if lines else "c++"


def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def fmt(x, spec):
    return format(x, spec) if x == x else "n/a"


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


def perf_profile(cmd, data_file, limit=12):
    """The hottest symbols of cmd from `perf record` (self time by symbol, above 1.5%), or
    None when perf is missing or fails."""
    if not shutil.which("perf"):
        return None
    rec = subprocess.run(["perf", "record", "-F", "999", "-o", data_file, "--"] + cmd,
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
    return rows[:limit]


# The convnet report's markers in RESULTS.md (run_cnn.sh rewrites only what lies between them).
CNN_BEGIN = "<!-- run_cnn.sh: begin -->"
CNN_END = "<!-- run_cnn.sh: end -->"


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def section_span(text, begin_marker, end_marker):
    """(where begin_marker starts, where end_marker starts) in `text`, or None without both."""
    begin, end = text.find(begin_marker), text.find(end_marker)
    return (begin, end) if begin >= 0 and end > begin else None


def write_section(path, begin_marker, end_marker, section):
    """Replaces the part of `path` between the markers with `section` (which carries them), in
    place, or adds it at the end when the file has no such part; every other line is kept."""
    text = read_text(path)
    span = section_span(text, begin_marker, end_marker)
    if span:
        begin, end = span
        rest = text[end + len(end_marker):].lstrip("\n")
        text = text[:begin] + section.rstrip("\n") + "\n" + ("\n" + rest if rest else "")
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + section
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
