#!/usr/bin/env python3
"""callbacks::TensorBoard read back by TensorBoard's own reader.

    test_tensorboard.py RUN_EXE WORK_DIR

1. RUN_EXE trains 4 epochs with the callback (histograms every epoch, batch scalars every 3
   batches) and writes what memopt logged to expected.txt. TensorBoard's EventAccumulator
   must find in `train/` and `validation/` every scalar and histogram with those values, the
   model's summary as text, memopt's memory figures, the memory timeline as a PNG (its size,
   and each buffer's colour in the middle of its rectangle, decoded with PIL, else with zlib),
   and no tag nobody logged.
2. The records' framing is checked by hand with TensorBoard's masked_crc32c.
3. A copy of the train file cut inside its last record still loads: every record but that one.
4. A run killed (SIGKILL) as its third epoch begins leaves files that load with the two
   finished epochs.

Exits 77 (CTest's "skipped") when `tensorboard` cannot be imported.
"""
import os
import shutil
import struct
import subprocess
import sys
import zlib

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"skipped: cannot import tensorboard ({e}); "
          "`python3 -m pip install tensorboard` enables this test")
    sys.exit(77)

from harness import check, exit_code


def f32(v):
    """What a float32 field holds for the double `v`."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def load(folder):
    ea = EventAccumulator(folder, size_guidance={"scalars": 0, "histograms": 0, "tensors": 0,
                                              "images": 0})
    ea.Reload()
    return ea


def scalar_steps(ea, tag):
    """The steps of `tag`'s scalars; none when the tag is missing."""
    return [e.step for e in ea.Scalars(tag)] if tag in ea.Tags()["scalars"] else []


def only_file(folder):
    files = os.listdir(folder)
    check(len(files) == 1, f"{folder}: one event file, found {files}")
    check(files[0].startswith("events.out.tfevents."), f"{files[0]}: TensorFlow's name")
    return os.path.join(folder, files[0])


def records(path):
    """(offset, length) of each record, checked against its masked CRCs by hand."""
    with open(path, "rb") as f:
        data = f.read()
    out, at = [], 0
    while at < len(data):
        (n,) = struct.unpack_from("<Q", data, at)
        (len_crc,) = struct.unpack_from("<I", data, at + 8)
        check(len_crc == masked_crc32c(data[at:at + 8]), f"{path}@{at}: length CRC")
        (data_crc,) = struct.unpack_from("<I", data, at + 12 + n)
        check(data_crc == masked_crc32c(data[at + 12:at + 12 + n]), f"{path}@{at}: data CRC")
        out.append((at, 12 + n + 4))
        at += 12 + n + 4
    check(at == len(data), f"{path}: records fill the file")
    return out


def decode_png(data):
    """(width, height, pixel(x, y) -> (r, g, b)): with PIL if it is installed, else by hand
    with zlib for the 8-bit RGB, unfiltered rows memopt writes."""
    try:
        import io
        from PIL import Image
        im = Image.open(io.BytesIO(data))
        im.load()
        check(im.format == "PNG" and im.mode == "RGB", f"PIL reads an RGB PNG ({im.mode})")
        rgb = im.convert("RGB")
        return im.width, im.height, lambda x, y: tuple(rgb.getpixel((x, y)))
    except ImportError:
        pass
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "the PNG signature")
    at, idat, width, height = 8, b"", 0, 0
    while at < len(data):
        (n,) = struct.unpack_from(">I", data, at)
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + n]
        (crc,) = struct.unpack_from(">I", data, at + 8 + n)
        check(crc == zlib.crc32(kind + body), f"PNG chunk {kind}: CRC")
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack_from(">IIBB", body)
            check((depth, colour) == (8, 2), "an 8-bit RGB PNG")
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
    raw = zlib.decompress(idat)
    row = 3 * width + 1
    check(len(raw) == row * height and all(raw[y * row] == 0 for y in range(height)),
          "PNG rows: unfiltered, as many as IHDR says")

    def pixel(x, y):
        i = y * row + 1 + 3 * x
        return tuple(raw[i:i + 3])
    return width, height, pixel


def read_expected(path):
    scalars, histos = {}, {}
    images, pixels = {}, []
    with open(path) as f:
        for line in f:
            p = line.split()
            if p[0] == "scalar":
                scalars.setdefault((p[1], p[2]), []).append((int(p[3]), float(p[4])))
            elif p[0] == "histo":
                histos.setdefault(p[1], []).append(
                    (int(p[2]), int(p[3]), float(p[4]), float(p[5]), float(p[6])))
            elif p[0] == "image":
                images[p[1]] = (int(p[2]), int(p[3]), int(p[4]))
            elif p[0] == "pixel":
                pixels.append(tuple(int(v) for v in p[1:]))
    return scalars, histos, images, pixels


def check_full_run(exe, work):
    logs = os.path.join(work, "logs")
    expected = os.path.join(work, "expected.txt")
    subprocess.run([exe, logs, expected], check=True)
    scalars, histos, images, pixels = read_expected(expected)
    runs = {"train": load(os.path.join(logs, "train")),
            "validation": load(os.path.join(logs, "validation"))}

    # Every scalar memopt logged, at its steps, with its value (as float32).
    for (run, tag), want in sorted(scalars.items()):
        ea = runs[run]
        if tag not in ea.Tags()["scalars"]:
            check(False, f"{run}/{tag}: found by EventAccumulator")
            continue
        got = [(e.step, e.value) for e in ea.Scalars(tag)]
        check(got == [(s, f32(v)) for s, v in want], f"{run}/{tag}: {got} == {want}")
    # And nothing else, but the peak RSS that only the callback reads.
    for run, ea in runs.items():
        extra = set(ea.Tags()["scalars"]) - {t for r, t in scalars if r == run}
        if run == "train":
            extra.discard("memory/peak_rss_bytes")
        check(not extra, f"{run}: no unexpected scalars, found {sorted(extra)}")
    rss = [e.value for e in runs["train"].Scalars("memory/peak_rss_bytes")] \
        if "memory/peak_rss_bytes" in runs["train"].Tags()["scalars"] else []
    check(len(rss) == 4 and rss[0] > 1 << 20 and rss == sorted(rss),
          f"memory/peak_rss_bytes: 4 nondecreasing values above 1 MiB, found {rss}")
    check(len(scalars[("train", "epoch_loss")]) == 4, "4 epochs of epoch_loss expected")
    check(("validation", "epoch_accuracy") in scalars, "validation accuracy expected")
    lrs = [v for _, v in scalars[("train", "epoch_learning_rate")]]
    check(lrs == sorted(lrs, reverse=True) and lrs[0] > lrs[-1],
          f"the schedule's learning rate falls: {lrs}")

    # Every weight's histogram at every epoch: its count, range and sum.
    ea = runs["train"]
    check(set(ea.Tags()["histograms"]) == set(histos),
          f"histogram tags {sorted(ea.Tags()['histograms'])} == {sorted(histos)}")
    check("batch_normalization/moving_variance/histogram" in histos,
          "non-trainable weights have histograms too")
    for tag, want in sorted(histos.items()):
        if tag not in ea.Tags()["histograms"]:
            continue
        got = ea.Histograms(tag)
        check([e.step for e in got] == [w[0] for w in want], f"{tag}: steps")
        for e, (step, num, lo, hi, total) in zip(got, want):
            h = e.histogram_value
            check(h.num == num and h.min == lo and h.max == hi, f"{tag}@{step}: num/min/max")
            check(abs(h.sum - total) <= 1e-9 * max(1.0, abs(total)), f"{tag}@{step}: sum")
            check(sum(h.bucket) == num, f"{tag}@{step}: buckets count every value")
            check(list(h.bucket_limit) == sorted(h.bucket_limit) and h.bucket_limit[-1] == hi,
                  f"{tag}@{step}: bucket limits rise to the maximum")

    # The memory timeline: one PNG at step 0, of the size memopt drew, each buffer's colour
    # in the middle of its rectangle.
    check(set(ea.Tags()["images"]) == set(images) == {"memory/timeline"},
          f"image tags {ea.Tags()['images']} == {sorted(images)}")
    for tag, (step, width, height) in images.items():
        if tag not in ea.Tags()["images"]:
            continue
        got = ea.Images(tag)
        check(len(got) == 1 and got[0].step == step, f"{tag}: one image at step {step}")
        e = got[0]
        check((e.width, e.height) == (width, height),
              f"{tag}: {e.width} x {e.height} == {width} x {height}")
        w, h, pixel = decode_png(e.encoded_image_string)
        check((w, h) == (width, height), f"{tag}: the PNG is {w} x {h}")
        check(len(pixels) >= 5, f"{tag}: pixels to check ({len(pixels)})")
        for x, y, *rgb in pixels:
            check(pixel(x, y) == tuple(rgb), f"{tag}: ({x}, {y}) is {pixel(x, y)}, not {rgb}")

    # The summary as text.
    with open(expected + ".summary") as f:
        summary = f.read()
    check("model_summary" in ea.Tags()["tensors"], "model_summary: found")
    if "model_summary" in ea.Tags()["tensors"]:
        (event,) = ea.Tensors("model_summary")
        text = event.tensor_proto.string_val[0].decode()
        check(event.step == 0 and summary.strip() and summary in text,
              "model_summary holds the model's summary")
        check(ea.SummaryMetadata("model_summary").plugin_data.plugin_name == "text",
              "model_summary is for the Text dashboard")
    return os.path.join(logs, "train")


def check_truncated(train_dir, work):
    path = only_file(train_dir)
    recs = records(path)
    full = load(train_dir)
    n_loss = len(scalar_steps(full, "epoch_loss"))
    cut = os.path.join(work, "truncated", "train")
    os.makedirs(cut)
    at, size = recs[-1]
    with open(path, "rb") as f:
        data = f.read()
    # The last record is the last epoch's peak RSS; cut it in the middle.
    with open(os.path.join(cut, os.path.basename(path)), "wb") as f:
        f.write(data[:at + size // 2])
    ea = load(cut)
    check(len(scalar_steps(ea, "epoch_loss")) == n_loss, "truncated copy: every epoch_loss loads")
    rss = scalar_steps(ea, "memory/peak_rss_bytes")
    check(len(rss) == len(scalar_steps(full, "memory/peak_rss_bytes")) - 1,
          f"truncated copy: all but the cut record load ({len(rss)})")


def check_killed(exe, work):
    logs = os.path.join(work, "killed")
    r = subprocess.run([exe, logs, os.path.join(work, "killed.txt"), "kill"])
    check(r.returncode == -9, f"the run was killed (returncode {r.returncode})")
    train = load(os.path.join(logs, "train"))
    val = load(os.path.join(logs, "validation"))
    check(scalar_steps(train, "epoch_loss") == [0, 1], "killed: 2 epochs of loss")
    check(scalar_steps(val, "epoch_loss") == [0, 1], "killed: 2 epochs of val_loss")
    histos = train.Tags()["histograms"]
    check("dense/kernel/histogram" in histos and
          len(train.Histograms("dense/kernel/histogram")) == 2, "killed: 2 epochs of histograms")


def main():
    exe, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    train_dir = check_full_run(exe, work)
    check_truncated(train_dir, work)
    check_killed(exe, work)
    if exit_code():
        return 1
    print("ok: TensorBoard's EventAccumulator reads every value memopt logged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
