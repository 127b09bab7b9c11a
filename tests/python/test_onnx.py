#!/usr/bin/env python3
"""ONNX export checked by ONNX itself and by ONNX Runtime.

    test_onnx.py EXPORT_EXE WORK_DIR

EXPORT_EXE (onnx_export.cpp) trains a few models (and those of the examples), exports each in float32 and float16 and
writes memopt's predictions on 256 inputs. Every file must pass `onnx.checker.check_model`
(with shape inference) and ONNX Runtime's outputs must match memopt's `predict` within
1e-5 relative norm error for float32 exports and 1e-2 for float16 ones. A model trained under
mixed_float16 (or example 03's mixed_bfloat16) predicts in 16 bits itself, so both of its
exports get 1e-2.

Exits 77 (CTest's "skipped") when onnx, onnxruntime or numpy cannot be imported.
"""
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"skipped: cannot import onnx, onnxruntime and numpy ({e}); "
          "`python3 -m pip install onnx onnxruntime numpy` enables this test")
    sys.exit(77)

from harness import check as _check, exit_code


def check(cond, what):
    _check(cond, what, show_passes=True)


def main(exe, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    subprocess.run([exe, work], check=True)
    with open(os.path.join(work, "models.txt")) as f:
        models = [line.split() for line in f if line.strip()]
    # Five models that cover the exporter's layers, and the model type of examples 01-04
    # (05 trains 01's and 02's).
    check(len(models) == 11, f"{len(models)} models exported")
    for fields in models:
        name, colon = fields[0], fields.index(":")
        dims = [int(d) for d in fields[1:colon]]
        outputs, policy = int(fields[colon + 1]), fields[colon + 2]
        x = np.fromfile(os.path.join(work, f"{name}_inputs.f32"), dtype="<f4")
        x = x.reshape([256] + dims)
        expected = np.fromfile(os.path.join(work, f"{name}_predict.f32"), dtype="<f4")
        expected = expected.reshape(256, outputs).astype(np.float64)
        for suffix, dtype in (("", np.float32), ("_f16", np.float16)):
            path = os.path.join(work, f"{name}{suffix}.onnx")
            model = onnx.load(path)
            try:
                onnx.checker.check_model(model, full_check=True)
                check(True, f"{path}: onnx.checker")
            except onnx.checker.ValidationError as e:
                check(False, f"{path}: onnx.checker: {e}")
                continue
            check(model.opset_import[0].version == 17, f"{path}: opset 17")
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            (got,) = session.run(None, {session.get_inputs()[0].name: x.astype(dtype)})
            check(got.dtype == dtype, f"{path}: output is {np.dtype(dtype).name}")
            check(got.shape == (256, outputs), f"{path}: output shape {got.shape}")
            got = got.astype(np.float64)
            err = np.linalg.norm(got - expected) / np.linalg.norm(expected)
            tol = 1e-5 if dtype == np.float32 and policy == "float32" else 1e-2
            check(err <= tol, f"{path}: ONNX Runtime vs memopt predict, relative error "
                              f"{err:.3g} (tolerance {tol:g})")
    if exit_code():
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
