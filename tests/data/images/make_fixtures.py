#!/usr/bin/env python3
"""Regenerates the image fixtures of tests/unit/test_image_decode.cpp (Pillow, numpy).

Source images with smooth content, and for each test case the reference pixels Pillow makes
of them (Image.resize, BILINEAR or BOX, after convert("RGB"/"L"); crops as Keras's load_img
with keep_aspect_ratio). Also numpy's RandomState(1337).shuffle of range(37), the order Keras's
image_dataset_from_directory gives its files for seed 1337.

    python3 tests/data/images/make_fixtures.py   # from the repository root
"""
import os

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def pattern(h, w, channels):
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 100 * np.sin(x / 7.0) * np.cos(y / 11.0)
    g = 255 * x / max(1, w - 1)
    b = 128 + 120 * np.sin((x + y) / 17.0)
    rgb = np.stack([r, g, b], axis=-1).clip(0, 255).round().astype(np.uint8)
    return rgb if channels == 3 else rgb[..., 0]


def save_sources():
    Image.fromarray(pattern(90, 120, 3), "RGB").save(os.path.join(HERE, "src_rgb.png"))
    Image.fromarray(pattern(70, 50, 1), "L").save(os.path.join(HERE, "src_gray.png"))
    Image.fromarray(pattern(60, 45, 3), "RGB").save(os.path.join(HERE, "src_rgb.bmp"))
    Image.fromarray(pattern(384, 512, 3), "RGB").save(
        os.path.join(HERE, "src_large.jpg"), quality=95, subsampling=0)


def keras_crop(width, height, target_w, target_h):
    crop_h = min(height, (width * target_h) // target_w)
    crop_w = min(width, (height * target_w) // target_h)
    top = (height - crop_h) // 2
    left = (width - crop_w) // 2
    return (left, top, left + crop_w, top + crop_h)


# name, source, mode, height, width, resample, crop
CASES = [
    ("png_rgb_bilinear_40x32", "src_rgb.png", "RGB", 40, 32, Image.BILINEAR, False),
    ("png_rgb_area_40x32", "src_rgb.png", "RGB", 40, 32, Image.BOX, False),
    ("png_rgb_bilinear_150x130", "src_rgb.png", "RGB", 150, 130, Image.BILINEAR, False),
    ("png_rgb_bilinear_48x48_crop", "src_rgb.png", "RGB", 48, 48, Image.BILINEAR, True),
    ("png_gray_bilinear_35x25", "src_gray.png", "L", 35, 25, Image.BILINEAR, False),
    ("png_rgb_as_gray_bilinear_40x32", "src_rgb.png", "L", 40, 32, Image.BILINEAR, False),
    ("bmp_rgb_bilinear_30x30", "src_rgb.bmp", "RGB", 30, 30, Image.BILINEAR, False),
    ("jpg_rgb_bilinear_48x64", "src_large.jpg", "RGB", 48, 64, Image.BILINEAR, False),
    ("jpg_rgb_bilinear_100x120", "src_large.jpg", "RGB", 100, 120, Image.BILINEAR, False),
    ("jpg_gray_area_96x128", "src_large.jpg", "L", 96, 128, Image.BOX, False),
    ("jpg_rgb_bilinear_64x64_crop", "src_large.jpg", "RGB", 64, 64, Image.BILINEAR, True),
]


def save_references():
    for name, source, mode, h, w, resample, crop in CASES:
        img = Image.open(os.path.join(HERE, source)).convert(mode)
        box = keras_crop(img.size[0], img.size[1], w, h) if crop else None
        out = np.asarray(img.resize((w, h), resample, box=box), dtype=np.uint8)
        out.tofile(os.path.join(HERE, f"ref_{name}.u8"))


def save_cmyk():
    # A CMYK JPEG as Pillow writes one (Adobe's marker, inverted samples, no colour transform)
    # and Pillow's RGB and L of it: decode_jpeg must read CMYK as Pillow does.
    rgb = pattern(30, 40, 3).astype(np.int32)
    k = np.linspace(0, 160, 40, dtype=np.int32)[None, :].repeat(30, axis=0)
    cmyk = np.concatenate([255 - rgb, k[..., None]], axis=-1).clip(0, 255).astype(np.uint8)
    Image.fromarray(cmyk, "CMYK").save(os.path.join(HERE, "src_cmyk.jpg"), quality=95)
    img = Image.open(os.path.join(HERE, "src_cmyk.jpg"))
    for mode, name in (("RGB", "rgb"), ("L", "gray")):
        np.asarray(img.convert(mode), dtype=np.uint8).tofile(
            os.path.join(HERE, f"ref_cmyk_{name}.u8"))


def save_shuffle():
    order = list(range(37))
    np.random.RandomState(1337).shuffle(order)
    with open(os.path.join(HERE, "numpy_shuffle_seed1337_n37.txt"), "w") as f:
        f.write(" ".join(map(str, order)) + "\n")


if __name__ == "__main__":
    save_sources()
    save_references()
    save_cmyk()
    save_shuffle()
