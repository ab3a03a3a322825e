#!/usr/bin/python3
"""Reference Llama-family forward pass in numpy, independent of pagedllm's C++ code.

Reads a GGUF file or a Hugging Face directory (config.json + model.safetensors), runs the
prompt through the model in float64 with plain causal attention, and prints the logits of the
last position as JSON. Used by tests/model/numpy_reference_test.cpp.

usage: llama_reference.py MODEL TOKEN_ID [TOKEN_ID ...]
"""
import json
import os
import struct
import sys

import numpy as np


# ---------------------------------------------------------------- GGUF
GGUF_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
               11: "<q", 12: "<d"}


def read_gguf(path):
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, data, pos)[0]
        pos += struct.calcsize(fmt)
        return v

    def string():
        nonlocal pos
        n = take("<Q")
        s = data[pos:pos + n].decode("utf-8", errors="replace")
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<I"), take("<Q")
            return [value(et) for _ in range(n)]
        return take(GGUF_SCALAR[t])

    assert data[:4] == b"GGUF"
    pos = 4
    take("<I")
    n_tensors, n_kv = take("<Q"), take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("<Q") for _ in range(take("<I"))]
        infos.append((name, dims, take("<I"), take("<Q")))
    align = meta.get("general.alignment", 32)
    start = (pos + align - 1) // align * align
    tensors = {}
    for name, dims, ggml_type, offset in infos:
        count = int(np.prod(dims))
        raw = memoryview(data)[start + offset:]
        values = dequantize(raw, ggml_type, count).reshape(list(reversed(dims)))
        block = 256 if ggml_type in K_QUANT_TYPES else 32
        tensors[name] = (QuantizedMatrix(values, block) if ggml_type in BLOCK_TYPES
                         else Bf16Matrix(values) if ggml_type == 30 and len(dims) == 2 else values)
    return meta, tensors


BLOCK_TYPES = (2, 8, 12, 13, 14)  # Q4_0, Q8_0, Q4_K, Q5_K, Q6_K


K_QUANT_TYPES = (12, 13, 14)  # Q4_K, Q5_K, Q6_K: 256-element super-blocks


class QuantizedMatrix:
    """A block-quantized weight: products with it see activations quantized as the engine's int8
    kernels quantize them (per weight super-block: 32 elements for Q4_0 and Q8_0, 256 for the
    k-quants; scale max|x| / 127, round to nearest even, in f32)."""

    def __init__(self, values, block=32):
        self.values = values
        self.block = block


def quantize_activations(x, block=32):
    x32 = x.astype(np.float32)
    blocks = x32.reshape(x32.shape[:-1] + (x32.shape[-1] // block, block))
    scale = np.abs(blocks).max(axis=-1, keepdims=True) / np.float32(127)
    with np.errstate(divide="ignore"):
        inverse = np.where(scale != 0, np.float32(1) / scale, np.float32(0)).astype(np.float32)
    codes = np.clip(np.rint(blocks * inverse), -127, 127)
    return (codes.astype(np.float64) * scale.astype(np.float64)).reshape(x.shape)


class Bf16Matrix:
    """A bf16 weight matrix: products with it see activations rounded to bf16 (to nearest even,
    from f32, denormals to zero), as the engine's bf16 kernels round them."""

    def __init__(self, values):
        self.values = values


def round_to_bf16(x):
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
    out = rounded.view(np.float32).astype(np.float64)
    return np.where(np.abs(x) < np.finfo(np.float32).tiny, 0.0, out)


def mm(x, m):
    """x @ m.T for a weight matrix m, plain, bf16 or block-quantized."""
    if isinstance(m, QuantizedMatrix):
        return quantize_activations(x, m.block) @ m.values.T
    if isinstance(m, Bf16Matrix):
        return round_to_bf16(x) @ m.values.T
    return x @ m.T


def values_of(m):
    return m.values if isinstance(m, (QuantizedMatrix, Bf16Matrix)) else m


def f16(raw, count):
    return np.frombuffer(raw, dtype="<f2", count=count).astype(np.float64)


def bf16(raw, count):
    bits = np.frombuffer(raw, dtype="<u2", count=count).astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64)


def dequantize(raw, ggml_type, count):
    if ggml_type == 0:
        return np.frombuffer(raw, dtype="<f4", count=count).astype(np.float64)
    if ggml_type == 1:
        return f16(raw, count)
    if ggml_type == 30:
        return bf16(raw, count)
    blocks = count // 32
    if ggml_type == 8:  # Q8_0: f16 scale, 32 int8
        b = np.frombuffer(raw, dtype=np.uint8, count=blocks * 34).reshape(blocks, 34)
        d = b[:, :2].copy().view("<f2").astype(np.float64)
        q = b[:, 2:].copy().view(np.int8).astype(np.float64)
        return (d * q).reshape(-1)
    if ggml_type == 2:  # Q4_0: f16 scale, 16 bytes of nibbles (low nibbles first)
        b = np.frombuffer(raw, dtype=np.uint8, count=blocks * 18).reshape(blocks, 18)
        d = b[:, :2].copy().view("<f2").astype(np.float64)
        qs = b[:, 2:]
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float64) - 8.0
        return (d * q).reshape(-1)
    if ggml_type in (12, 13, 14):
        return dequantize_k(raw, ggml_type, count // 256)
    raise SystemExit("unsupported ggml type %d" % ggml_type)


def k_scales_mins(packed):
    """Q4_K/Q5_K: 8 six-bit scales and mins from 12 bytes per super-block (ggml's layout)."""
    p = packed.astype(np.int64)
    sc = np.empty((len(p), 8), np.int64)
    mn = np.empty((len(p), 8), np.int64)
    sc[:, :4] = p[:, 0:4] & 63
    mn[:, :4] = p[:, 4:8] & 63
    sc[:, 4:] = (p[:, 8:12] & 0xF) | ((p[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (p[:, 8:12] >> 4) | ((p[:, 4:8] >> 6) << 4)
    return sc, mn


def dequantize_k(raw, ggml_type, blocks):
    size = {12: 144, 13: 176, 14: 210}[ggml_type]
    b = np.frombuffer(raw, dtype=np.uint8, count=blocks * size).reshape(blocks, size)
    if ggml_type == 14:  # Q6_K: ql[128], qh[64], int8 scales[16], f16 d
        ql, qh = b[:, :128].astype(np.int64), b[:, 128:192].astype(np.int64)
        sc = b[:, 192:208].copy().view(np.int8).astype(np.float64)
        d = b[:, 208:210].copy().view("<f2").astype(np.float64)
        q = np.empty((blocks, 256), np.int64)
        for half in range(2):
            lo, hi = ql[:, 64 * half:64 * half + 64], qh[:, 32 * half:32 * half + 32]
            base = 128 * half
            q[:, base:base + 32] = (lo[:, :32] & 0xF) | ((hi & 3) << 4)
            q[:, base + 32:base + 64] = (lo[:, 32:] & 0xF) | (((hi >> 2) & 3) << 4)
            q[:, base + 64:base + 96] = (lo[:, :32] >> 4) | (((hi >> 4) & 3) << 4)
            q[:, base + 96:base + 128] = (lo[:, 32:] >> 4) | (((hi >> 6) & 3) << 4)
        scale = np.repeat(d * sc, 16, axis=1)
        return (scale * (q - 32)).reshape(-1)
    d = b[:, 0:2].copy().view("<f2").astype(np.float64)
    dmin = b[:, 2:4].copy().view("<f2").astype(np.float64)
    sc, mn = k_scales_mins(b[:, 4:16])
    qs = b[:, 48:176] if ggml_type == 13 else b[:, 16:144]
    q = np.empty((blocks, 256), np.int64)
    for chunk in range(4):  # 64 elements: low nibbles of 32 bytes, then their high nibbles
        bytes_ = qs[:, 32 * chunk:32 * chunk + 32].astype(np.int64)
        q[:, 64 * chunk:64 * chunk + 32] = bytes_ & 0xF
        q[:, 64 * chunk + 32:64 * chunk + 64] = bytes_ >> 4
    if ggml_type == 13:  # Q5_K: bit j of qh[l] is the fifth bit of element 32 * j + l
        qh = b[:, 16:48].astype(np.int64)
        for j in range(8):
            q[:, 32 * j:32 * j + 32] += ((qh >> j) & 1) << 4
    scale = np.repeat(d * sc, 32, axis=1)
    mins = np.repeat(dmin * mn, 32, axis=1)
    return (scale * q - mins).reshape(-1)


def gguf_model(path):
    meta, t = read_gguf(path)
    arch = meta["general.architecture"]
    k = lambda s: meta[arch + "." + s]
    cfg = dict(arch=arch, dim=k("embedding_length"), layers=k("block_count"), heads=k("attention.head_count"),
               kv_heads=meta.get(arch + ".attention.head_count_kv", k("attention.head_count")),
               eps=meta.get(arch + ".attention.layer_norm_rms_epsilon", 1e-5),
               theta=meta.get(arch + ".rope.freq_base", 10000.0),
               neox=arch != "llama")
    cfg["head_dim"] = meta.get(arch + ".attention.key_length", cfg["dim"] // cfg["heads"])
    cfg["freq_factors"] = t.get("rope_freqs.weight")
    w = {"embed": t["token_embd.weight"], "norm": t["output_norm.weight"],
         "out": t.get("output.weight", t["token_embd.weight"]), "layers": []}
    for l in range(cfg["layers"]):
        g = lambda s: t.get("blk.%d.%s" % (l, s))
        w["layers"].append(dict(attn_norm=g("attn_norm.weight"), q=g("attn_q.weight"), k=g("attn_k.weight"),
                                v=g("attn_v.weight"), o=g("attn_output.weight"), bq=g("attn_q.bias"),
                                bk=g("attn_k.bias"), bv=g("attn_v.bias"), q_norm=g("attn_q_norm.weight"),
                                k_norm=g("attn_k_norm.weight"), ffn_norm=g("ffn_norm.weight"),
                                gate=g("ffn_gate.weight"), up=g("ffn_up.weight"), down=g("ffn_down.weight")))
    return cfg, w


# ---------------------------------------------------------------- safetensors
def hf_model(directory):
    c = json.load(open(os.path.join(directory, "config.json")))
    raw = open(os.path.join(directory, "model.safetensors"), "rb").read()
    n = struct.unpack_from("<Q", raw, 0)[0]
    header = json.loads(raw[8:8 + n])
    t = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        buf = memoryview(raw)[8 + n + lo:8 + n + hi]
        count = int(np.prod(info["shape"]))
        conv = {"F32": lambda b, c_: np.frombuffer(b, "<f4", c_).astype(np.float64), "F16": f16, "BF16": bf16}
        t[name] = conv[info["dtype"]](buf, count).reshape(info["shape"])
        if info["dtype"] == "BF16" and len(info["shape"]) == 2:
            t[name] = Bf16Matrix(t[name])
    heads = c["num_attention_heads"]
    cfg = dict(arch=c.get("model_type", "llama"), dim=c["hidden_size"], layers=c["num_hidden_layers"],
               heads=heads, kv_heads=c.get("num_key_value_heads", heads),
               head_dim=c.get("head_dim", c["hidden_size"] // heads), eps=c.get("rms_norm_eps", 1e-6),
               theta=c.get("rope_theta", 10000.0), neox=True, freq_factors=None)
    rs = c.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        cfg["llama3"] = rs
    w = {"embed": t["model.embed_tokens.weight"], "norm": t["model.norm.weight"],
         "out": t.get("lm_head.weight", t["model.embed_tokens.weight"]), "layers": []}
    for l in range(cfg["layers"]):
        g = lambda s: t.get("model.layers.%d.%s" % (l, s))
        w["layers"].append(dict(attn_norm=g("input_layernorm.weight"), q=g("self_attn.q_proj.weight"),
                                k=g("self_attn.k_proj.weight"), v=g("self_attn.v_proj.weight"),
                                o=g("self_attn.o_proj.weight"), bq=g("self_attn.q_proj.bias"),
                                bk=g("self_attn.k_proj.bias"), bv=g("self_attn.v_proj.bias"),
                                q_norm=g("self_attn.q_norm.weight"), k_norm=g("self_attn.k_norm.weight"),
                                ffn_norm=g("post_attention_layernorm.weight"), gate=g("mlp.gate_proj.weight"),
                                up=g("mlp.up_proj.weight"), down=g("mlp.down_proj.weight")))
    return cfg, w


# ---------------------------------------------------------------- forward
def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def inverse_frequencies(cfg):
    d = cfg["head_dim"]
    inv = 1.0 / cfg["theta"] ** (np.arange(0, d, 2) / d)
    if cfg.get("llama3"):
        s = cfg["llama3"]
        old = s["original_max_position_embeddings"]
        low, high, factor = s["low_freq_factor"], s["high_freq_factor"], s["factor"]
        wavelen = 2 * np.pi / inv
        smooth = (old / wavelen - low) / (high - low)
        scaled = np.where(wavelen > old / low, inv / factor, (1 - smooth) * inv / factor + smooth * inv)
        inv = np.where(wavelen < old / high, inv, scaled)
    if cfg["freq_factors"] is not None:
        inv = inv / cfg["freq_factors"]
    return inv


def rope(x, positions, cfg):
    # x: [tokens, heads, head_dim]
    angles = positions[:, None] * inverse_frequencies(cfg)[None, :]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    half = cfg["head_dim"] // 2
    if cfg["neox"]:
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


def forward(cfg, w, ids):
    n, hd = len(ids), cfg["head_dim"]
    x = values_of(w["embed"])[ids]
    positions = np.arange(n, dtype=np.float64)
    mask = np.triu(np.full((n, n), -np.inf), 1)
    group = cfg["heads"] // cfg["kv_heads"]
    for lw in w["layers"]:
        h = rms_norm(x, lw["attn_norm"], cfg["eps"])
        q, k, v = mm(h, lw["q"]), mm(h, lw["k"]), mm(h, lw["v"])
        if lw["bq"] is not None:
            q, k, v = q + lw["bq"], k + lw["bk"], v + lw["bv"]
        q = q.reshape(n, cfg["heads"], hd)
        k = k.reshape(n, cfg["kv_heads"], hd)
        v = v.reshape(n, cfg["kv_heads"], hd)
        if lw["q_norm"] is not None:
            q, k = rms_norm(q, lw["q_norm"], cfg["eps"]), rms_norm(k, lw["k_norm"], cfg["eps"])
        q, k = rope(q, positions, cfg), rope(k, positions, cfg)
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd) + mask
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        attn = np.einsum("hqk,khd->qhd", scores, v).reshape(n, cfg["heads"] * hd)
        x = x + mm(attn, lw["o"])
        h = rms_norm(x, lw["ffn_norm"], cfg["eps"])
        gate = mm(h, lw["gate"])
        x = x + mm((gate / (1 + np.exp(-gate))) * mm(h, lw["up"]), lw["down"])
    return mm(rms_norm(x[-1], w["norm"], cfg["eps"]), w["out"])


def main():
    path, ids = sys.argv[1], [int(a) for a in sys.argv[2:]]
    cfg, w = hf_model(path) if os.path.isdir(path) else gguf_model(path)
    print(json.dumps(forward(cfg, w, np.array(ids)).tolist()))


if __name__ == "__main__":
    main()
