#!/usr/bin/env python3
"""safetensors interoperability: memopt <-> the `safetensors` Python package.

    test_interop.py INTEROP_EXE WORK_DIR

1. memopt writes weights, a full checkpoint and one tensor of each dtype; the Python package
   reads them, and the values match what memopt says it wrote. The layout is also checked by
   hand against the specification (header length, padding, contiguous offsets).
2. Python writes weights with numpy and computes the model's outputs in float64; memopt loads
   the weights, predicts, and compares.

Exits 77 (CTest's "skipped") when safetensors or numpy cannot be imported.
"""
import json
import os
import shutil
import struct
import subprocess
import sys

try:
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"skipped: cannot import safetensors and numpy ({e}); "
          "`python3 -m pip install safetensors numpy` enables this test")
    sys.exit(77)

from harness import check, exit_code


def read_expected(path):
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts:
                out[parts[0]] = [float(v) for v in parts[1:]]
    return out


def check_layout(path):
    """The specification's rules, checked by hand rather than by the package."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    check(n % 8 == 0, f"{path}: header length {n} is a multiple of 8")
    header_bytes = data[8:8 + n]
    check(header_bytes[:1] == b"{", f"{path}: header starts with '{{'")
    text = header_bytes.decode("utf-8")
    check(text.rstrip(" ") == text.strip(), f"{path}: header padded with trailing spaces only")
    header = json.loads(text)
    meta = header.pop("__metadata__", {})
    check(all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()),
          f"{path}: metadata is string to string")
    spans = sorted(tuple(v["data_offsets"]) for v in header.values())
    pos = 0
    for b, e in spans:
        check(b == pos, f"{path}: contiguous offsets at {b}")
        pos = e
    check(pos == len(data) - 8 - n, f"{path}: tensors fill the data section")
    return header, meta, data[8 + n:]


def memopt_to_python(exe, work):
    subprocess.run([exe, "write", work], check=True)
    expected = read_expected(os.path.join(work, "memopt_expected.txt"))

    weights = load_file(os.path.join(work, "memopt_weights.safetensors"))
    check(sorted(weights) == ["dense/bias", "dense/kernel", "dense_1/bias", "dense_1/kernel"],
          f"weight names {sorted(weights)}")
    check(weights["dense/kernel"].shape == (4, 5), "dense/kernel is [inputs, units]")
    check(weights["dense_1/kernel"].shape == (5, 3), "dense_1/kernel is [inputs, units]")
    for name, arr in weights.items():
        check(arr.dtype == np.float32, f"{name} is float32")
        want = np.array(expected[name], dtype=np.float32)
        check(np.array_equal(arr.reshape(-1), want), f"{name} values")

    path = os.path.join(work, "memopt_full.safetensors")
    full = load_file(path)
    with safe_open(path, framework="np") as f:
        meta = f.metadata()
    check(meta.get("contents") == "weights+optimizer", f"full metadata {meta}")
    check(meta.get("epoch") == "2", "epoch recorded")
    check(full["optimizer/iterations"].dtype == np.int64 and full["optimizer/iterations"].shape == (),
          "optimizer/iterations is an I64 scalar")
    check(int(full["optimizer/iterations"]) == int(expected["iterations"][0]), "iterations value")
    check(meta.get("step") == str(int(expected["iterations"][0])), "step metadata")
    for name in ["dense/kernel", "dense_1/bias"]:
        slot = f"optimizer/{name}/velocity"
        check(np.array_equal(full[slot].reshape(-1), np.array(expected[slot], dtype=np.float32)),
              f"{slot} values")
        check(f"optimizer/{name}/momentum" in full, f"optimizer/{name}/momentum present")
    check_layout(path)

    path = os.path.join(work, "memopt_dtypes.safetensors")
    header, meta, data = check_layout(path)
    check(meta == {"writer": "memopt", "unicode": "\u00e9t\u00e9"}, f"dtype metadata {meta}")
    check({k: v["dtype"] for k, v in header.items()} ==
          {"f32": "F32", "f16": "F16", "bf16": "BF16", "i64": "I64"}, "dtype names")
    with safe_open(path, framework="np") as f:
        f32 = f.get_tensor("f32")
        f16 = f.get_tensor("f16")
        i64 = f.get_tensor("i64")
    check(f32.shape == (2, 3) and np.array_equal(f32.reshape(-1), np.array(expected["f32"], np.float32)),
          "F32 values")
    check(f16.dtype == np.float16 and f16.shape == (3, 2), "F16 dtype and shape")
    check(np.array_equal(f16.reshape(-1).astype(np.float32), np.array(expected["f16"], np.float32)),
          "F16 values")
    check(i64.tolist() == [-7, 0, 2 ** 53, 42], f"I64 values {i64.tolist()}")
    # numpy has no bfloat16: decode it by hand, as the upper half of a float32.
    b, e = header["bf16"]["data_offsets"]
    raw = np.frombuffer(data[b:e], dtype="<u2").astype(np.uint32) << 16
    check(np.array_equal(raw.view(np.float32), np.array(expected["bf16"], np.float32)), "BF16 values")


def python_to_memopt(exe, work):
    rng = np.random.default_rng(5)
    w = {
        "dense/kernel": rng.standard_normal((4, 5)).astype(np.float32),
        "dense/bias": rng.standard_normal(5).astype(np.float32) * 0.1,
        "dense_1/kernel": rng.standard_normal((5, 3)).astype(np.float32),
        "dense_1/bias": rng.standard_normal(3).astype(np.float32) * 0.1,
    }
    save_file(w, os.path.join(work, "python_weights.safetensors"), metadata={"format": "np"})
    x = rng.standard_normal((7, 4)).astype(np.float32)
    k0, b0, k1, b1 = (w[n].astype(np.float64) for n in
                      ["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"])
    z = np.maximum(x.astype(np.float64) @ k0 + b0, 0) @ k1 + b1
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)

    f32 = rng.standard_normal((2, 2)).astype(np.float32)
    f16 = rng.standard_normal(5).astype(np.float16)
    i64 = np.array([3, -(2 ** 40), 0], dtype=np.int64)
    save_file({"f32": f32, "f16": f16, "i64": i64}, os.path.join(work, "python_dtypes.safetensors"),
              metadata={"format": "np"})

    def line(name, values):
        return name + " " + " ".join(repr(float(v)) for v in np.asarray(values).reshape(-1)) + "\n"

    with open(os.path.join(work, "python_expected.txt"), "w") as f:
        for name, arr in w.items():
            f.write(line(name, arr))
        f.write(line("inputs", x))
        f.write(line("probabilities", p))
        f.write(line("f32", f32))
        f.write(line("f16", f16.astype(np.float32)))
        f.write("i64 " + " ".join(str(int(v)) for v in i64) + "\n")
    r = subprocess.run([exe, "read", work])
    check(r.returncode == 0, "memopt reads what Python wrote")


def main():
    exe, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    import safetensors
    print(f"safetensors {safetensors.__version__}, numpy {np.__version__}")
    memopt_to_python(exe, work)
    python_to_memopt(exe, work)
    if exit_code():
        return 1
    print("interop: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
