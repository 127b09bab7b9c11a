#!/usr/bin/env python3
"""Writes the Keras weight files that tests/unit/test_keras_weights.cpp loads (Keras 3, h5py).

Two small models, each the twin of a memopt model in the test, with deterministic non-zero
weights (BatchNormalization's moving statistics included):

    mlp  Input(8) -> Dense(5, relu) -> Dense(3, softmax)
    cnn  Input(8, 8, 2) -> Conv2D(4, 3, relu) -> BatchNormalization -> MaxPooling2D(2)
         -> Flatten -> Dense(3, softmax)

and for each, as real Keras writes them:

    NAME.weights.h5    model.save_weights(...): Keras 3's HDF5 layout,
                       layers/<class name, numbered per container>/vars/<index>
    NAME.h5            model.save(...) to `.h5` (what ModelCheckpoint("x.h5") calls): the
                       legacy layout, model_weights/<layer name>/<weight path>, with the attrs
                       `layer_names` and `weight_names` giving the order
    NAME.safetensors   {v.path: v.numpy() for v in model.weights}: Keras 3's variable paths,
                       "sequential/dense/kernel"

and keras_expected.json: each model's weights by path (flattened, row-major) and its
predictions on fixed inputs. Keras 3 refuses save_weights("x.h5") (it wants `.weights.h5`).

When tf_keras (Keras 2, TensorFlow's tf.keras before 2.16, what the guide's code ran on) is
importable too, the same models with the same weights also go to

    NAME.tf_keras.h5          model.save(...): model_weights/<layer>/<layer>/kernel:0
    NAME.tf_keras_weights.h5  model.save_weights(...): the same at the file's root

    tests/data/keras/make_keras_weights.py [--out DIR]   # default: this folder
    PYTHONPATH=DIR_WITH_TF_KERAS tests/data/keras/make_keras_weights.py   # with Keras 2 files

Exits with 77 (CTest's "skipped") when Keras is not importable.
"""
import argparse
import json
import os
import struct
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

try:
    import numpy as np
    import keras
except ImportError as e:  # no TensorFlow/Keras here: nothing to make
    print(f"make_keras_weights: skipped ({e})")
    sys.exit(77)

try:
    import tf_keras
except ImportError:
    tf_keras = None

HERE = os.path.dirname(os.path.abspath(__file__))


def mlp(k=keras):
    L = k.layers
    return k.Sequential([k.Input((8,)), L.Dense(5, activation="relu"),
                         L.Dense(3, activation="softmax")])


def cnn(k=keras):
    L = k.layers
    return k.Sequential([k.Input((8, 8, 2)), L.Conv2D(4, 3, activation="relu"),
                         L.BatchNormalization(), L.MaxPooling2D(2), L.Flatten(),
                         L.Dense(3, activation="softmax")])


def set_weights(model):
    # Distinct values in every position, so that a transposed or swapped tensor shows.
    for k, v in enumerate(model.weights):
        n = int(np.prod(v.shape))
        x = 0.6 * np.sin(0.7 * np.arange(n) + 1.3 * k + 0.2)
        if v.name.split(":")[0].endswith("moving_variance"):  # Keras 2 says "...:0"
            x = 0.5 + np.abs(x)  # a variance is positive
        v.assign(x.reshape(v.shape).astype(np.float32))


def save_tf_keras(out, name, build, keras3_model):
    tf_keras.backend.clear_session()
    model = build(tf_keras)
    set_weights(model)
    for a, b in zip(model.weights, keras3_model.weights):
        assert np.array_equal(a.numpy(), b.numpy()), (a.name, b.path)
    model.save(os.path.join(out, f"{name}.tf_keras.h5"))
    model.save_weights(os.path.join(out, f"{name}.tf_keras_weights.h5"))


def save_safetensors(path, tensors):
    try:
        from safetensors.numpy import save_file
        save_file(tensors, path)
        return
    except ImportError:
        pass
    # The format itself: an 8-byte little-endian header length, a JSON header, the data.
    header, offset = {}, 0
    for name, a in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=HERE)
    out = p.parse_args().out
    os.makedirs(out, exist_ok=True)
    expected = {"keras_version": keras.__version__}
    for name, build, shape in [("mlp", mlp, (8,)), ("cnn", cnn, (8, 8, 2))]:
        keras.backend.clear_session()  # layer names start again at "dense", as in a fresh run
        model = build()
        set_weights(model)
        model.save_weights(os.path.join(out, f"{name}.weights.h5"))
        model.save(os.path.join(out, f"{name}.h5"))
        if tf_keras is not None:
            save_tf_keras(out, name, build, model)
        save_safetensors(os.path.join(out, f"{name}.safetensors"),
                         {v.path: v.numpy() for v in model.weights})
        rng = np.random.default_rng(7)
        x = rng.standard_normal((4,) + shape).astype(np.float32)
        y = model.predict(x, verbose=0)
        expected[name] = {
            "input_shape": list(shape),
            "inputs": [float(v) for v in x.ravel()],
            "predictions": [float(v) for v in y.ravel()],
            "weights": {v.path: [float(t) for t in v.numpy().ravel()] for v in model.weights},
        }
    with open(os.path.join(out, "keras_expected.json"), "w") as f:
        f.write(json.dumps(expected, separators=(",", ":")) + "\n")
    also = f", tf_keras {tf_keras.__version__}" if tf_keras is not None else ""
    print(f"make_keras_weights: wrote {out} (Keras {keras.__version__}{also})")


if __name__ == "__main__":
    main()
