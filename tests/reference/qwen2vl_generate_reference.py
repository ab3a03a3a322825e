#!/usr/bin/python3
"""Greedy generation with images for a Qwen2-VL / Qwen2.5-VL Hugging Face directory, end to end
in numpy + PIL, from the transcriptions of HF's code in qwen2vl_reference.py (image processor,
vision tower, get_rope_index) and qwen2vl_lm_reference.py (the language model). Nothing here
calls pagedllm.

Takes on stdin {"model": DIR, "images": [PATH...], "input_ids": [...] (one image_token_id per
image, as the chat template renders them), "max_tokens": N} and prints
{"prompt_ids": [...], "tokens": [...], "logprobs": [...]} (greedy; logprobs of the chosen
tokens, float64 softmax).

usage: qwen2vl_generate_reference.py < request.json
"""
import json
import os
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen2vl_lm_reference as lm  # noqa: E402
import qwen2vl_reference as vl  # noqa: E402


def vision_config(config):
    """The reference's vision settings from config.json's vision_config (HF's two spellings)."""
    v = config["vision_config"]
    qwen25 = config["model_type"] == "qwen2_5_vl"
    if qwen25:
        hidden, inter, out = v["hidden_size"], v["intermediate_size"], v["out_hidden_size"]
    else:
        hidden, out = v["embed_dim"], v["hidden_size"]
        inter = int(hidden * v["mlp_ratio"])
    return {"family": "qwen2.5-vl" if qwen25 else "qwen2-vl", "depth": v["depth"],
            "hidden_size": hidden, "num_heads": v["num_heads"], "intermediate_size": inter,
            "out_hidden_size": out, "patch_size": v.get("patch_size", 14),
            "temporal_patch_size": v.get("temporal_patch_size", 2),
            "spatial_merge_size": v.get("spatial_merge_size", 2),
            "window_size": v.get("window_size", 112),
            "fullatt_block_indexes": v.get("fullatt_block_indexes", [])}


def processor_config(model_dir, vcfg):
    p = json.load(open(os.path.join(model_dir, "preprocessor_config.json")))
    return {"patch_size": vcfg["patch_size"], "merge_size": vcfg["spatial_merge_size"],
            "temporal_patch_size": vcfg["temporal_patch_size"], "min_pixels": p["min_pixels"],
            "max_pixels": p["max_pixels"], "rescale_factor": p.get("rescale_factor", 1 / 255),
            "image_mean": p["image_mean"], "image_std": p["image_std"]}


def main():
    request = json.load(sys.stdin)
    model_dir = request["model"]
    config = json.load(open(os.path.join(model_dir, "config.json")))
    vcfg = vision_config(config)
    pcfg = processor_config(model_dir, vcfg)
    tensors = lm.read_safetensors(os.path.join(model_dir, "model.safetensors"))
    visual = {k[len("visual."):]: v for k, v in tensors.items() if k.startswith("visual.")}
    merge = vcfg["spatial_merge_size"]
    image_id = config["image_token_id"]

    grids, embeddings = [], []
    for path in request["images"]:
        with Image.open(path) as image:
            image.load()
            pixels, grid = vl.preprocess(image, pcfg, {})
        grids.append(grid)
        embeddings.append(vl.vision_forward(vcfg, visual, pixels.astype(np.float64), [grid]))

    ids, rows, values, k = [], [], [], 0
    for token in request["input_ids"]:
        if token != image_id:
            ids.append(token)
            continue
        t, h, w = grids[k]
        for r in range(t * h * w // (merge * merge)):
            rows.append(len(ids))
            values.append(embeddings[k][r])
            ids.append(image_id)
        k += 1
    rope = vl.get_rope_index({"tokens": ids, "spatial_merge_size": merge,
                              "image_token_id": image_id,
                              "video_token_id": config.get("video_token_id", -1),
                              "vision_start_token_id": config["vision_start_token_id"],
                              "image_grid_thw": grids,
                              "variant": vcfg["family"], "tokens_per_second": 2})
    positions, delta = [list(r) for r in rope["positions"]], rope["delta"]
    prompt_ids = list(ids)
    tokens, logprobs = [], []
    for _ in range(request["max_tokens"]):
        logits = lm.forward(model_dir, ids, positions, rows, values)[-1]
        shifted = logits - logits.max()
        log_probs = shifted - np.log(np.exp(shifted).sum())
        token = int(np.argmax(logits))
        tokens.append(token)
        logprobs.append(float(log_probs[token]))
        for row in positions:
            row.append(len(ids) + delta)
        ids.append(token)
    print(json.dumps({"prompt_ids": prompt_ids, "tokens": tokens, "logprobs": logprobs}))


if __name__ == "__main__":
    main()
