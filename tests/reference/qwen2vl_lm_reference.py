#!/usr/bin/python3
"""The Qwen2-VL / Qwen2.5-VL language model's forward pass in numpy (float64), transcribed from
Hugging Face transformers' Qwen2VLTextModel / Qwen2_5_VLTextModel, independent of pagedllm's
C++ code: RMSNorm, Q/K/V with biases, M-RoPE (apply_multimodal_rotary_pos_emb with
rotate_half), grouped-query causal attention, SwiGLU MLP, final norm and LM head.

Reads a Hugging Face directory (config.json + model.safetensors; text fields at the top level
or under text_config, tensors named model.* or model.language_model.*). Takes on stdin
{"model": DIR, "input_ids": [...], "positions": [[t...], [h...], [w...]],
 "embed_rows": [...], "embed_values": [[...], ...]} (the rows whose input embedding is given,
as a vision encoder's output at image tokens) and prints every token's logits as JSON.

usage: qwen2vl_lm_reference.py < request.json
"""
import json
import os
import struct
import sys

import numpy as np


def read_safetensors(path):
    data = open(path, "rb").read()
    (size,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + size])
    base = 8 + size
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[base + begin:base + end]
        if info["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            values = bits.view(np.float32)
        else:
            values = np.frombuffer(raw, dtype={"F32": np.float32, "F16": np.float16}[info["dtype"]])
        tensors[name] = values.astype(np.float64).reshape(info["shape"])
    return tensors


def text_config(config):
    merged = dict(config)
    merged.update(config.get("text_config", {}))
    return merged


def language_model_weights(tensors):
    """Both namings: model.layers.N... (Hub checkpoints) and model.language_model.layers.N...
    (transformers >= 4.52); the vision tower's tensors are left out."""
    out = {}
    for name, value in tensors.items():
        if name.startswith("visual.") or name.startswith("model.visual."):
            continue
        if name.startswith("model.language_model."):
            name = "model." + name[len("model.language_model."):]
        out[name] = value
    return out


def rms_norm(x, weight, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def mrope_cos_sin(positions, head_dim, theta, mrope_section):
    """Qwen2VLRotaryEmbedding, then apply_multimodal_rotary_pos_emb's selection: the head's
    channels split into chunks mrope_section * 2, chunk i taking position row i % 3."""
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    freqs = positions[:, :, None].astype(np.float64) * inv_freq[None, None, :]  # [3, T, D/2]
    emb = np.concatenate([freqs, freqs], axis=-1)  # [3, T, D]
    cos, sin = np.cos(emb), np.sin(emb)
    bounds = np.cumsum(mrope_section * 2)[:-1]
    pick = lambda m: np.concatenate(
        [chunk[i % 3] for i, chunk in enumerate(np.split(m, bounds, axis=-1))], axis=-1)
    return pick(cos), pick(sin)  # [T, D]


def forward(model_dir, input_ids, positions, embed_rows, embed_values):
    config = json.load(open(os.path.join(model_dir, "config.json")))
    c = text_config(config)
    w = language_model_weights(read_safetensors(os.path.join(model_dir, "model.safetensors")))
    heads, kv_heads = c["num_attention_heads"], c["num_key_value_heads"]
    head_dim = c.get("head_dim", c["hidden_size"] // heads)
    eps = c.get("rms_norm_eps", 1e-6)
    rope = c.get("rope_scaling") or c.get("rope_parameters")
    cos, sin = mrope_cos_sin(np.array(positions), head_dim, c.get("rope_theta", 1e6),
                             list(rope["mrope_section"]))
    x = w["model.embed_tokens.weight"][np.array(input_ids)]
    for row, values in zip(embed_rows, embed_values):
        x[row] = values
    T = len(input_ids)
    causal = np.triu(np.full((T, T), -np.inf), 1)
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        proj = lambda n: h @ w[p + f"self_attn.{n}_proj.weight"].T + w[p + f"self_attn.{n}_proj.bias"]
        q = proj("q").reshape(T, heads, head_dim)
        k = proj("k").reshape(T, kv_heads, head_dim)
        v = proj("v").reshape(T, kv_heads, head_dim)
        q = q * cos[:, None] + rotate_half(q) * sin[:, None]
        k = k * cos[:, None] + rotate_half(k) * sin[:, None]
        group = heads // kv_heads
        out = np.zeros((T, heads, head_dim))
        for hd in range(heads):
            scores = q[:, hd] @ k[:, hd // group].T / np.sqrt(head_dim) + causal
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            out[:, hd] = (scores / scores.sum(-1, keepdims=True)) @ v[:, hd // group]
        x = x + out.reshape(T, heads * head_dim) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        up = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w.get("lm_head.weight")
    if head is None or c.get("tie_word_embeddings", False):
        head = w["model.embed_tokens.weight"]
    return x @ head.T


def main():
    request = json.load(sys.stdin)
    logits = forward(request["model"], request["input_ids"], request["positions"],
                     request.get("embed_rows", []), request.get("embed_values", []))
    print(json.dumps(logits.tolist()))


if __name__ == "__main__":
    main()
