#!/usr/bin/python3
"""Reference for Qwen2-VL image input, independent of pagedllm's C++ code: PIL decodes and
resizes, numpy does the rest, following Hugging Face's Qwen2VLImageProcessor (the PIL one) and
Qwen2-VL's get_rope_index. Used by tests/multimodal/*_test.cpp.

usage:
  qwen2vl_reference.py images OUT_DIR         test images in every format and mode, with the RGB
                                              pixels PIL gives for each (alpha dropped as HF's
                                              convert_to_rgb, or composited on white as vLLM's)
  qwen2vl_reference.py resize OUT_DIR         random images and PIL's bicubic resizes of them
  qwen2vl_reference.py preprocess OUT_DIR     pixel_values and image_grid_thw for images, configs
                                              and per-request pixel bounds
  qwen2vl_reference.py rope < CASE.json       get_rope_index positions and delta for one prompt
  qwen2vl_reference.py vision OUT_DIR < CASE.json
                                              random vision-encoder weights (OUT_DIR/
                                              vision.safetensors), pixels and HF's encoder output
Each command but rope and vision writes OUT_DIR/manifest.json describing what it wrote.
"""
import json
import math
import os
import sys

import numpy as np
from PIL import Image

OPENAI_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
OPENAI_CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def noise(rng, h, w, c):
    """Random pixels over smooth gradients: both rounding and edges get exercised."""
    y, x = np.mgrid[0:h, 0:w]
    base = (x * 255 // max(w - 1, 1) + y * 128 // max(h - 1, 1))[..., None] % 256
    return ((base + rng.randint(0, 96, size=(h, w, c))) % 256).astype(np.uint8)


# ---------------------------------------------------------------- decoding
def png_chunk(kind, data):
    import struct
    import zlib
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write_raw_png(path, rows, width, height, bit_depth, color_type):
    """A PNG from raw scanline bytes (filter 0): for layouts PIL cannot write (16-bit colour)."""
    import struct
    import zlib
    raw = b"".join(b"\0" + row for row in rows)
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) +
                png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b""))


def write_adam7_png(path, gray):
    """An interlaced 8-bit grayscale PNG: the seven Adam7 passes, each row with filter 0."""
    import struct
    import zlib
    h, w = gray.shape
    raw = b""
    for x0, y0, dx, dy in [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
                           (1, 0, 2, 2), (0, 1, 1, 2)]:
        if x0 >= w:
            continue
        for y in range(y0, h, dy):
            raw += b"\0" + gray[y, x0::dx].tobytes()
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 1)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) +
                png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b""))


def write_images(out):
    rng = np.random.RandomState(7)
    rgb = noise(rng, 37, 53, 3)
    rgba = np.concatenate([rgb, rng.randint(0, 256, size=(37, 53, 1)).astype(np.uint8)], axis=2)
    gray = noise(rng, 37, 53, 1)[..., 0]
    images = []

    def save(name, image, **kwargs):
        path = os.path.join(out, name)
        image.save(path, **kwargs)
        images.append(name)

    save("rgb.png", Image.fromarray(rgb))
    save("rgba.png", Image.fromarray(rgba, "RGBA"))
    save("gray.png", Image.fromarray(gray, "L"))
    save("gray_alpha.png", Image.fromarray(rgba[..., 2:4].copy(), "LA"))
    palette = Image.fromarray(rgb).quantize(colors=50)
    save("palette.png", palette)
    save("palette_transparent.png", palette, transparency=3)
    write_adam7_png(os.path.join(out, "interlaced.png"), gray)  # PIL cannot write Adam7
    images.append("interlaced.png")
    wide = (rgba.astype(np.uint16) * 257 + rng.randint(0, 256, size=rgba.shape)).astype(">u2")
    for name, channels, color_type in [("rgb16.png", 3, 2), ("rgba16.png", 4, 6),
                                       ("gray_alpha16.png", 2, 4)]:
        rows = [wide[y, :, :channels].tobytes() for y in range(wide.shape[0])]
        write_raw_png(os.path.join(out, name), rows, wide.shape[1], wide.shape[0], 16, color_type)
        images.append(name)
    save("bilevel.png", Image.fromarray(gray > 128))
    gray16 = (gray.astype(np.uint16) * 3 + 7).astype(np.uint16)  # some values above 255
    save("gray16.png", Image.fromarray(gray16, "I;16"))
    save("rgb.jpg", Image.fromarray(rgb), quality=90)
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90; neither HF nor vLLM applies it
    save("exif_rotated.jpg", Image.fromarray(rgb), quality=90, exif=exif)
    save("rgb_420.jpg", Image.fromarray(rgb), quality=75, subsampling=2)
    save("progressive.jpg", Image.fromarray(rgb), quality=85, progressive=True)
    save("gray.jpg", Image.fromarray(gray, "L"), quality=90)
    save("cmyk.jpg", Image.fromarray(rgba, "RGBA").convert("CMYK"), quality=90)
    save("lossy.webp", Image.fromarray(rgb), quality=80)
    save("lossless.webp", Image.fromarray(rgb), lossless=True)
    save("alpha.webp", Image.fromarray(rgba, "RGBA"), lossless=True)
    save("lossy_alpha.webp", Image.fromarray(rgba, "RGBA"), quality=70)
    save("palette.gif", palette)
    save("transparent.gif", palette, transparency=5)
    frames = [Image.fromarray(rgb).quantize(colors=32), Image.fromarray(rgb[::-1].copy()).quantize(colors=32)]
    path = os.path.join(out, "animated.gif")
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=100)
    images.append("animated.gif")
    path = os.path.join(out, "animated.webp")
    Image.fromarray(rgb).save(path, save_all=True, append_images=[Image.fromarray(rgb[::-1].copy())],
                              duration=100, lossless=True)
    images.append("animated.webp")

    manifest = []
    for name in images:
        with Image.open(os.path.join(out, name)) as im:
            im.load()
            mode = im.mode
            drop = np.asarray(im.convert("RGB"))  # HF's convert_to_rgb
            if im.mode == "RGBA":  # vLLM's rgba_to_rgb
                white = Image.new("RGB", im.size, (255, 255, 255))
                white.paste(im, mask=im.split()[3])
                white = np.asarray(white)
            else:
                white = drop
        drop.tofile(os.path.join(out, name + ".drop.rgb"))
        white.tofile(os.path.join(out, name + ".white.rgb"))
        manifest.append({"file": name, "mode": mode, "width": drop.shape[1], "height": drop.shape[0]})
    return manifest


# ---------------------------------------------------------------- resizing
RESIZE_SOURCES = [(37, 53), (1, 7), (64, 64), (300, 217)]
RESIZE_TARGETS = [(1, 1), (2, 3), (5, 4), (28, 28), (37, 106), (74, 53), (111, 159), (56, 84),
                  (13, 9), (300, 217), (412, 1), (150, 600), (17, 301)]


def write_resizes(out):
    rng = np.random.RandomState(11)
    manifest = []
    for h, w in RESIZE_SOURCES:
        name = f"src_{h}x{w}.png"
        image = Image.fromarray(noise(rng, h, w, 3))
        image.save(os.path.join(out, name))
        for th, tw in RESIZE_TARGETS:
            result = np.asarray(image.resize((tw, th), Image.BICUBIC))
            target = f"src_{h}x{w}_to_{th}x{tw}.rgb"
            result.tofile(os.path.join(out, target))
            manifest.append({"source": name, "height": th, "width": tw, "expected": target})
    return manifest


# ---------------------------------------------------------------- preprocessing
def smart_resize(height, width, factor, min_pixels, max_pixels):
    if max(height, width) / min(height, width) > 200:
        raise ValueError("aspect ratio")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def preprocess(image, cfg, overrides):
    """HF's Qwen2VLImageProcessor._preprocess for one image, on a PIL image."""
    patch, merge, temporal = cfg["patch_size"], cfg["merge_size"], cfg["temporal_patch_size"]
    if image.mode != "RGB":
        image = image.convert("RGB")
    height, width = image.height, image.width
    min_pixels = overrides.get("min_pixels", cfg["min_pixels"])
    max_pixels = overrides.get("max_pixels", cfg["max_pixels"])
    rh, rw = smart_resize(height, width, patch * merge, min_pixels, max_pixels)
    if (rh, rw) != (height, width):
        image = image.resize((rw, rh), Image.BICUBIC)
    array = np.asarray(image)
    array = (array.astype(np.float64) * cfg["rescale_factor"]).astype(np.float32)
    mean = np.array(cfg["image_mean"], dtype=np.float32)
    std = np.array(cfg["image_std"], dtype=np.float32)
    array = (array - mean) / std
    array = array.transpose(2, 0, 1)  # channels first
    patches = np.broadcast_to(array[None], (temporal,) + array.shape)
    grid_t, grid_h, grid_w = 1, rh // patch, rw // patch
    flat = (patches.reshape(grid_t, temporal, 3, grid_h // merge, merge, patch, grid_w // merge,
                            merge, patch)
            .transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
            .reshape(grid_t * grid_h * grid_w, 3 * temporal * patch * patch))
    return np.ascontiguousarray(flat, dtype=np.float32), [grid_t, grid_h, grid_w]


PREPROCESS_CONFIGS = {
    "qwen2vl": {"patch_size": 14, "merge_size": 2, "temporal_patch_size": 2, "min_pixels": 3136,
                "max_pixels": 28 * 28 * 1280, "rescale_factor": 0.00392156862745098,
                "image_mean": OPENAI_CLIP_MEAN, "image_std": OPENAI_CLIP_STD},
    "small": {"patch_size": 16, "merge_size": 2, "temporal_patch_size": 2, "min_pixels": 1024,
              "max_pixels": 64 * 64 * 4, "rescale_factor": 1 / 255, "image_mean": [0.5, 0.5, 0.5],
              "image_std": [0.5, 0.5, 0.5]},
}
PREPROCESS_CASES = [  # (height, width, config, overrides)
    (28, 28, "qwen2vl", {}), (20, 30, "qwen2vl", {}), (100, 37, "qwen2vl", {}),
    (224, 224, "qwen2vl", {}), (333, 500, "qwen2vl", {}), (3, 150, "qwen2vl", {}),
    (333, 500, "qwen2vl", {"max_pixels": 128 * 28 * 28}),
    (60, 90, "qwen2vl", {"min_pixels": 256 * 28 * 28}),
    (97, 61, "small", {}), (400, 300, "small", {}), (42, 70, "small", {"min_pixels": 4096}),
]


# Files that are not RGB go through the conversion first: (height, width, PIL mode, format).
PREPROCESS_FILES = [(45, 70, "RGBA", "png"), (90, 60, "L", "jpeg"), (64, 100, "P", "gif"),
                    (50, 50, "RGB", "webp")]


def write_preprocessed(out):
    rng = np.random.RandomState(13)
    manifest = []
    cases = [(h, w, config, overrides, "RGB", "png") for h, w, config, overrides in PREPROCESS_CASES]
    cases += [(h, w, "qwen2vl", {}, mode, fmt) for h, w, mode, fmt in PREPROCESS_FILES]
    for i, (h, w, config, overrides, mode, fmt) in enumerate(cases):
        name = f"case{i}_{h}x{w}_{mode}.{fmt}"
        image = Image.fromarray(noise(rng, h, w, 4), "RGBA")
        image = image.quantize(colors=64) if mode == "P" else image.convert(mode)
        image.save(os.path.join(out, name), format=fmt.upper())
        with Image.open(os.path.join(out, name)) as opened:  # as the processor would get it
            opened.load()
            values, grid = preprocess(opened, PREPROCESS_CONFIGS[config], overrides)
        values.tofile(os.path.join(out, name + ".f32"))
        manifest.append({"image": name, "config": PREPROCESS_CONFIGS[config],
                         "overrides": overrides, "grid_thw": grid,
                         "shape": list(values.shape), "expected": name + ".f32"})
    return manifest



# ---------------------------------------------------------------- vision encoder
def to_bf16_bits(array):
    """float32 -> bfloat16 bits, rounding to nearest even (as torch does)."""
    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def write_safetensors(path, tensors, dtype="F32"):
    """F32, F16 or BF16 tensors in the safetensors layout: 8-byte header size, JSON header, data."""
    import struct
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        if dtype == "BF16":
            data = to_bf16_bits(array).tobytes()
        else:
            data = np.ascontiguousarray(array, dtype=np.float16 if dtype == "F16" else np.float32).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def vision_weights(cfg, rng):
    """Random weights with HF's names and shapes (the Conv3d as [out, c, t, p, p])."""
    qwen25 = cfg["family"] == "qwen2.5-vl"
    d, f, out = cfg["hidden_size"], cfg["intermediate_size"], cfg["out_hidden_size"]
    p, t, merged = cfg["patch_size"], cfg["temporal_patch_size"], cfg["hidden_size"] * cfg["spatial_merge_size"] ** 2
    w = {}

    def lin(name, i, o, bias=True):
        w[name + ".weight"] = rng.normal(0, 1 / math.sqrt(i), size=(o, i))
        if bias:
            w[name + ".bias"] = rng.normal(0, 0.1, size=(o,))

    def norm(name, width):
        w[name + ".weight"] = 1 + rng.normal(0, 0.2, size=(width,))
        if not qwen25:
            w[name + ".bias"] = rng.normal(0, 0.1, size=(width,))

    w["patch_embed.proj.weight"] = rng.normal(0, 1 / math.sqrt(3 * t * p * p), size=(d, 3, t, p, p))
    for i in range(cfg["depth"]):
        b = f"blocks.{i}."
        norm(b + "norm1", d)
        norm(b + "norm2", d)
        lin(b + "attn.qkv", d, 3 * d)
        lin(b + "attn.proj", d, d)
        if qwen25:
            lin(b + "mlp.gate_proj", d, f)
            lin(b + "mlp.up_proj", d, f)
            lin(b + "mlp.down_proj", f, d)
        else:
            lin(b + "mlp.fc1", d, f)
            lin(b + "mlp.fc2", f, d)
    norm("merger.ln_q", d)
    lin("merger.mlp.0", merged, merged)
    lin("merger.mlp.2", merged, out)
    return w


def rms_norm(x, weight, eps=1e-6):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * weight


def layer_norm(x, weight, bias, eps=1e-6):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def rot_pos_emb(grids, head_dim, merge):
    """HF's rot_pos_emb: (row, column) of each patch in merge-block order, as rotary angles."""
    pos_ids = []
    for t, h, w in grids:
        hpos = np.broadcast_to(np.arange(h)[:, None], (h, w))
        hpos = hpos.reshape(h // merge, merge, w // merge, merge).transpose(0, 2, 1, 3).reshape(-1)
        wpos = np.broadcast_to(np.arange(w)[None, :], (h, w))
        wpos = wpos.reshape(h // merge, merge, w // merge, merge).transpose(0, 2, 1, 3).reshape(-1)
        pos_ids.append(np.tile(np.stack([hpos, wpos], -1), (t, 1)))
    pos_ids = np.concatenate(pos_ids)
    dim = head_dim // 2
    inv_freq = 1.0 / (10000 ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    max_grid = max(max(h, w) for _, h, w in grids)
    full = np.outer(np.arange(max_grid), inv_freq)
    return full[pos_ids].reshape(len(pos_ids), -1)  # [n, head_dim / 2]


def get_window_index(grids, cfg):
    """HF's Qwen2.5-VL get_window_index, padding with -100 as it does."""
    merge = cfg["spatial_merge_size"]
    ws = cfg["window_size"] // merge // cfg["patch_size"]
    unit = merge * merge
    window_index, cu_window_seqlens, base = [], [0], 0
    for t, h, w in grids:
        lh, lw = h // merge, w // merge
        index = np.arange(t * lh * lw).reshape(t, lh, lw)
        pad_h, pad_w = ws - lh % ws, ws - lw % ws
        nwh, nww = (lh + pad_h) // ws, (lw + pad_w) // ws
        padded = np.pad(index, ((0, 0), (0, pad_h), (0, pad_w)), constant_values=-100)
        padded = padded.reshape(t, nwh, ws, nww, ws).transpose(0, 1, 3, 2, 4).reshape(t, nwh * nww, ws, ws)
        seqlens = (padded != -100).sum((2, 3)).reshape(-1)
        flat = padded.reshape(-1)
        window_index.append(flat[flat != -100] + base)
        cu_window_seqlens.extend((np.cumsum(seqlens) * unit + cu_window_seqlens[-1]).tolist())
        base += t * lh * lw
    cu = [cu_window_seqlens[0]]
    for v in cu_window_seqlens[1:]:
        if v != cu[-1]:
            cu.append(v)  # unique_consecutive
    return np.concatenate(window_index), cu


def vision_attention(x, w, prefix, cos, sin, cu_seqlens, heads):
    n, d = x.shape
    hd = d // heads
    qkv = (x @ w[prefix + "qkv.weight"].T + w[prefix + "qkv.bias"]).reshape(n, 3, heads, hd)
    q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]

    def rotate(a):
        half = np.concatenate([-a[..., hd // 2:], a[..., :hd // 2]], -1)
        return a * cos[:, None, :] + half * sin[:, None, :]
    q, k = rotate(q), rotate(k)
    out = np.zeros_like(q)
    for s, e in zip(cu_seqlens[:-1], cu_seqlens[1:]):
        scores = np.einsum("qhd,khd->hqk", q[s:e], k[s:e]) / math.sqrt(hd)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        out[s:e] = np.einsum("hqk,khd->qhd", scores, v[s:e])
    return out.reshape(n, d) @ w[prefix + "proj.weight"].T + w[prefix + "proj.bias"]


def vision_forward(cfg, w, pixel_values, grids):
    """HF's Qwen2-VL / Qwen2.5-VL VisionTransformer forward, in float64."""
    qwen25 = cfg["family"] == "qwen2.5-vl"
    merge, d, heads = cfg["spatial_merge_size"], cfg["hidden_size"], cfg["num_heads"]
    unit = merge * merge
    x = pixel_values @ w["patch_embed.proj.weight"].reshape(d, -1).T
    rot = rot_pos_emb(grids, d // heads, merge)
    cu_seqlens = np.concatenate([[0], np.cumsum([h * ww for t, h, ww in grids for _ in range(t)])])
    if qwen25:
        window_index, cu_window = get_window_index(grids, cfg)
        n = x.shape[0]
        x = x.reshape(n // unit, unit, -1)[window_index].reshape(n, -1)
        rot = rot.reshape(n // unit, unit, -1)[window_index].reshape(n, -1)
    emb = np.concatenate([rot, rot], -1)
    cos, sin = np.cos(emb), np.sin(emb)
    silu = lambda a: a / (1 + np.exp(-a))
    for i in range(cfg["depth"]):
        b = f"blocks.{i}."
        if qwen25:
            seg = cu_seqlens if i in cfg["fullatt_block_indexes"] else cu_window
            h = rms_norm(x, w[b + "norm1.weight"])
            x = x + vision_attention(h, w, b + "attn.", cos, sin, seg, heads)
            h = rms_norm(x, w[b + "norm2.weight"])
            gate = h @ w[b + "mlp.gate_proj.weight"].T + w[b + "mlp.gate_proj.bias"]
            up = h @ w[b + "mlp.up_proj.weight"].T + w[b + "mlp.up_proj.bias"]
            x = x + (silu(gate) * up) @ w[b + "mlp.down_proj.weight"].T + w[b + "mlp.down_proj.bias"]
        else:
            h = layer_norm(x, w[b + "norm1.weight"], w[b + "norm1.bias"])
            x = x + vision_attention(h, w, b + "attn.", cos, sin, cu_seqlens, heads)
            h = layer_norm(x, w[b + "norm2.weight"], w[b + "norm2.bias"])
            inner = h @ w[b + "mlp.fc1.weight"].T + w[b + "mlp.fc1.bias"]
            inner = inner / (1 + np.exp(-1.702 * inner))  # QuickGELU
            x = x + inner @ w[b + "mlp.fc2.weight"].T + w[b + "mlp.fc2.bias"]
    if qwen25:
        x = rms_norm(x, w["merger.ln_q.weight"])
    else:
        x = layer_norm(x, w["merger.ln_q.weight"], w["merger.ln_q.bias"])
    x = x.reshape(-1, d * unit)
    from math import erf
    x = x @ w["merger.mlp.0.weight"].T + w["merger.mlp.0.bias"]
    x = 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))
    x = x @ w["merger.mlp.2.weight"].T + w["merger.mlp.2.bias"]
    if qwen25:
        x = x[np.argsort(window_index)]
    return x


def write_vision(out, case):
    cfg, grids = case["config"], case["grids"]
    rng = np.random.RandomState(case.get("seed", 5))
    w = vision_weights(cfg, rng)
    dtype = case.get("dtype", "F32")
    write_safetensors(os.path.join(out, "vision.safetensors"), {"visual." + k: v for k, v in w.items()}, dtype)
    stored = {"F32": lambda a: a.astype(np.float32), "F16": lambda a: a.astype(np.float16),
              "BF16": lambda a: from_bf16_bits(to_bf16_bits(a))}[dtype]
    w = {k: stored(v).astype(np.float64) for k, v in w.items()}  # what the file holds
    patch_dim = 3 * cfg["temporal_patch_size"] * cfg["patch_size"] ** 2
    n = sum(t * h * ww for t, h, ww in grids)
    pixels = rng.normal(0, 1, size=(n, patch_dim)).astype(np.float32)
    pixels.tofile(os.path.join(out, "pixels.f32"))
    result = vision_forward(cfg, w, pixels.astype(np.float64), grids)
    result.astype(np.float32).tofile(os.path.join(out, "expected.f32"))
    return {"rows": result.shape[0], "cols": result.shape[1]}


# ---------------------------------------------------------------- M-RoPE
def get_rope_index(case):
    """HF's get_rope_index (Qwen2-VL / Qwen2.5-VL) for one unpadded prompt, in numpy."""
    ids = np.array(case["tokens"], dtype=np.int64)
    merge = case["spatial_merge_size"]
    image_id, video_id, start_id = case["image_token_id"], case["video_token_id"], case["vision_start_token_id"]
    image_grids, video_grids = case.get("image_grid_thw", []), case.get("video_grid_thw", [])
    seconds = case.get("second_per_grid_ts")
    qwen25 = case["variant"] == "qwen2.5-vl"
    starts = np.argwhere(ids == start_id).reshape(-1)
    starts = starts[starts + 1 < len(ids)]
    vision_tokens = ids[starts + 1]
    image_nums, video_nums = int((vision_tokens == image_id).sum()), int((vision_tokens == video_id).sum())
    tokens = ids.tolist()
    chunks = []
    st = 0
    image_index = video_index = 0
    remain_images, remain_videos = image_nums, video_nums
    for _ in range(image_nums + video_nums):
        ed_image = tokens.index(image_id, st) if image_id in tokens and remain_images > 0 else len(tokens) + 1
        ed_video = tokens.index(video_id, st) if video_id in tokens and remain_videos > 0 else len(tokens) + 1
        if ed_image < ed_video:
            t, h, w = image_grids[image_index]
            second_per_grid_t = 0
            image_index += 1
            remain_images -= 1
            ed = ed_image
        else:
            t, h, w = video_grids[video_index]
            second_per_grid_t = seconds[video_index] if seconds is not None else 1.0
            video_index += 1
            remain_videos -= 1
            ed = ed_video
        gt, gh, gw = t, h // merge, w // merge
        text_len = ed - st
        st_idx = chunks[-1].max() + 1 if chunks else 0
        chunks.append(np.broadcast_to(np.arange(text_len)[None], (3, text_len)) + st_idx)
        if qwen25:
            expanded = np.broadcast_to(np.arange(gt).reshape(-1, 1), (gt, gh * gw))
            second = np.int64(second_per_grid_t)  # torch.as_tensor(..., dtype=int64)
            t_index = (expanded * second * case["tokens_per_second"]).astype(np.int64).reshape(-1)
        else:
            t_index = np.broadcast_to(np.arange(gt).reshape(-1, 1), (gt, gh * gw)).reshape(-1)
        h_index = np.broadcast_to(np.arange(gh).reshape(1, -1, 1), (gt, gh, gw)).reshape(-1)
        w_index = np.broadcast_to(np.arange(gw).reshape(1, 1, -1), (gt, gh, gw)).reshape(-1)
        chunks.append(np.stack([t_index, h_index, w_index]) + text_len + st_idx)
        st = ed + gt * gh * gw
    if st < len(tokens):
        st_idx = chunks[-1].max() + 1 if chunks else 0
        text_len = len(tokens) - st
        chunks.append(np.broadcast_to(np.arange(text_len)[None], (3, text_len)) + st_idx)
    positions = np.concatenate(chunks, axis=1).reshape(3, -1)
    assert positions.shape[1] == len(tokens), "positions do not cover the prompt"
    return {"positions": positions.tolist(), "delta": int(positions.max() + 1 - len(tokens))}


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "rope":
        print(json.dumps(get_rope_index(json.load(sys.stdin))))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "vision":
        os.makedirs(sys.argv[2], exist_ok=True)
        print(json.dumps(write_vision(sys.argv[2], json.load(sys.stdin))))
        return
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    command, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    writers = {"images": write_images, "resize": write_resizes, "preprocess": write_preprocessed}
    if command not in writers:
        sys.exit(__doc__)
    manifest = writers[command](out)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
