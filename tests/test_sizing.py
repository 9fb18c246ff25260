"""Tests for fp8lab.sizing against independent oracles.

The oracles here are written a second way: KV-cache and parameter formulas read the raw JSON dicts
(Hugging Face field names), never the ModelConfig dataclass; published figures (LLaMA-2-7B's
0.5 MiB per token, the ZeRO paper's 120/31.4/16.6/1.88 GB, the publishers' parameter counts) are
recomputed in comments next to each assertion.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fp8lab.sizing as sz
from fp8lab.sizing import (GPU, ModelConfig, fit_report, get_gpu, get_model, kv_cache_accuracy, kv_cache_bytes,
                           kv_cache_size, kv_cache_table, list_gpus, list_models, max_batch, max_context,
                           param_count, training_memory, weights_bytes)
from fp8lab.sizing.units import format_bytes

DATA = Path(sz.__file__).resolve().parent.parent / "data"
RAW = json.loads((DATA / "models.json").read_text())["models"]
RAW_GPUS = json.loads((DATA / "gpus.json").read_text())["gpus"]
KiB, MiB, GiB = 2**10, 2**20, 2**30

BITS = {"float32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "e5m2": 8, "fp6": 6, "fp4": 4, "int4": 4, "int8": 8}


# ------------------------------------------------------------------------------------------------
# independent oracles, from the raw config dicts
def oracle_kv_bytes(raw: dict, seq_len: int, batch: int, bits: int) -> int:
    """KV-cache bytes straight from Hugging Face field names."""
    layers = raw["num_hidden_layers"]
    if "kv_lora_rank" in raw:  # MLA: latent + decoupled RoPE key, once per token and layer
        per_token_layer = raw["kv_lora_rank"] + raw["qk_rope_head_dim"]
    else:
        heads = raw["num_attention_heads"]
        kv = 1 if raw.get("multi_query") else raw.get("num_key_value_heads", heads)
        head_dim = raw.get("head_dim") or raw["hidden_size"] // heads
        per_token_layer = 2 * kv * head_dim  # K and V
    window = raw.get("sliding_window") if raw.get("use_sliding_window", True) else None
    tokens = min(seq_len, window) if window else seq_len
    total_bits = layers * per_token_layer * tokens * batch * bits
    return (total_bits + 7) // 8


def oracle_dense_params(raw: dict, qkv_bias: bool = False) -> int:
    """Parameters of a LLaMA-style dense decoder (SwiGLU MLP, RMSNorm, no biases except optional QKV)."""
    d, layers, v = raw["hidden_size"], raw["num_hidden_layers"], raw["vocab_size"]
    heads = raw["num_attention_heads"]
    kv = raw.get("num_key_value_heads", heads)
    hd = d // heads
    attn = d * d + 2 * d * kv * hd + d * d + ((d + 2 * kv * hd) if qkv_bias else 0)
    mlp = 3 * d * raw["intermediate_size"]
    per_layer = attn + mlp + 2 * d  # two RMSNorm weights
    head = v * d * (1 if raw.get("tie_word_embeddings") else 2)
    return layers * per_layer + d + head  # + final norm


# ------------------------------------------------------------------------------------------------
# presets
REQUIRED = ["llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "llama-3.1-8b",
            "llama-3.1-70b", "llama-3.1-405b", "mistral-7b", "mixtral-8x7b", "qwen2.5-7b", "qwen2.5-72b",
            "deepseek-v3"]


def test_the_issue_s_presets_are_all_there_with_a_source():
    assert set(REQUIRED) <= set(list_models())
    for name, entry in RAW.items():
        assert entry["source"].startswith("https://"), name
        assert entry["params_source"], name
        assert isinstance(entry["published_params"], int) and entry["published_params"] > 0, name


@pytest.mark.parametrize("name", list(RAW))
def test_every_preset_matches_the_independent_kv_formula(name):
    raw, cfg = RAW[name]["config"], get_model(name)
    for dtype, bits in BITS.items():
        for seq_len in (0, 1, 4095, 131072):
            for batch in (1, 3):
                want = oracle_kv_bytes(raw, seq_len, batch, bits)
                assert kv_cache_bytes(cfg, seq_len=seq_len, batch=batch, dtype=dtype) == want, (dtype, seq_len, batch)
    assert kv_cache_bytes(name, 7, 2, "fp8") == oracle_kv_bytes(raw, 7, 2, 8)  # a name works as well


@pytest.mark.parametrize("name", list(RAW))
def test_every_preset_parameter_count_matches_the_published_one(name):
    entry = RAW[name]
    pc = param_count(name)
    published = entry["published_params"]
    if published % 10**9 == 0:  # a nominal figure from a paper or model card ("671B", "7B", "175B")
        assert pc.total == pytest.approx(published, rel=0.02)
    else:  # an exact count from the checkpoint's metadata
        assert pc.total == published
    if "published_active_params" in entry:
        assert pc.active < pc.total
        assert pc.active == pytest.approx(entry["published_active_params"], rel=0.02)
    else:
        assert pc.active == pc.total


@pytest.mark.parametrize("name", ["llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b",
                                  "llama-3.1-405b", "mistral-7b", "qwen2.5-7b", "qwen2.5-72b"])
def test_dense_parameter_count_agrees_with_a_second_formula(name):
    qkv_bias = RAW[name]["arch"].get("qkv_bias", False)
    assert param_count(name).total == oracle_dense_params(RAW[name]["config"], qkv_bias)


def test_published_parameter_counts_by_hand():
    # LLaMA-2-7B: 32 x (4*4096^2 + 3*4096*11008 + 2*4096) + 4096 + 2*32000*4096 = 6,738,415,616
    assert param_count("llama-2-7b").total == 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 4096 \
        + 2 * 32000 * 4096 == 6_738_415_616
    assert round(param_count("llama-3-8b").total / 1e9, 2) == 8.03
    # DeepSeek-V3: 671B total, 37B activated (technical report); README_WEIGHTS: 36.6B without the embedding
    pc = param_count("deepseek-v3")
    assert round(pc.total / 1e9) == 671
    assert round((pc.active - 129280 * 7168) / 1e9, 1) == 36.6


def test_presets_resolve_by_alias_hf_id_and_case():
    assert get_model("Meta-Llama/Llama-2-7b-HF") is get_model("llama-2-7b")
    assert get_model("Llama2_7B").name == "llama-2-7b"
    assert get_model("mistralai/Mixtral-8x7B-v0.1").num_experts == 8
    cfg = ModelConfig(name="mine", layers=2, hidden=64, heads=4)
    assert get_model(cfg) is cfg


def test_attention_kinds_of_the_presets():
    assert get_model("llama-2-7b").attention == "mha"
    assert get_model("llama-2-70b").attention == "gqa" and get_model("llama-2-70b").group_size == 8
    assert get_model("falcon-7b").attention == "mqa" and get_model("falcon-7b").kv_heads == 1
    ds = get_model("deepseek-v3")
    assert ds.attention == "mla" and (ds.kv_lora_rank, ds.qk_rope_head_dim) == (512, 64)
    assert get_model("mistral-7b").sliding_window == 4096
    assert get_model("mixtral-8x7b").sliding_window is None  # null in the official config
    assert get_model("qwen2.5-7b").sliding_window is None  # use_sliding_window is false


def test_unknown_model_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown model 'llama-9'.*llama-3-70b.*deepseek-v3"):
        get_model("llama-9")


# ------------------------------------------------------------------------------------------------
# known figures, computed by hand
def test_famous_kv_figures():
    # LLaMA-2-7B, FP16: 2 (K,V) x 32 layers x 32 heads x 128 x 2 bytes = 524,288 = 0.5 MiB per token
    assert kv_cache_bytes("llama-2-7b", seq_len=1, dtype="fp16") == 524288 == MiB // 2
    assert kv_cache_bytes("llama-2-7b", seq_len=4096, dtype="fp16") == 2 * GiB
    # LLaMA-3-70B (and LLaMA-2-70B), BF16, GQA 8 KV heads: 2 x 80 x 8 x 128 x 2 = 327,680 = 320 KiB per token
    assert kv_cache_bytes("llama-3-70b", seq_len=1, dtype="bf16") == 320 * KiB
    assert kv_cache_bytes("llama-2-70b", seq_len=1, dtype="bf16") == 320 * KiB
    assert kv_cache_bytes("llama-3-70b", seq_len=131072, dtype="bf16") == 40 * GiB
    # GPT-3 175B, FP16, MHA: 2 x 96 x 12288 x 2 = 4,718,592 = 4.5 MiB per token
    assert kv_cache_bytes("gpt-3-175b", seq_len=1, dtype="fp16") == 4.5 * MiB
    # Falcon-7B, MQA: 2 x 32 layers x 1 head x 64 x 2 = 8 KiB per token
    assert kv_cache_bytes("falcon-7b", seq_len=1, dtype="bf16") == 8 * KiB
    # Qwen2.5-7B: 2 x 28 x 4 x 128 x 2 = 57,344 = 56 KiB per token
    assert kv_cache_bytes("qwen2.5-7b", seq_len=1) == 56 * KiB


def test_mla_size():
    # DeepSeek-V3 caches (512 + 64) elements per token per layer, 61 layers: 35,136 elements per token
    assert kv_cache_bytes("deepseek-v3", seq_len=1, dtype="bf16") == (512 + 64) * 61 * 2 == 70272
    assert kv_cache_bytes("deepseek-v3", seq_len=1000, batch=2, dtype="fp8") == (512 + 64) * 61 * 1000 * 2
    # DeepSeek-V2 paper, Table 1: MLA caches (d_c + d_h^R) l = 4.5 d_h l elements, with d_h = 128
    v2 = get_model("deepseek-v2")
    assert kv_cache_bytes(v2, seq_len=1, dtype="fp8") == 4.5 * 128 * v2.layers
    # what MHA with the same 128 heads of 128 (K) and 128 (V) would cache: 2 x 128 x 128 per layer
    mha = ModelConfig(name="v3-as-mha", layers=61, hidden=7168, heads=128, head_dim=128)
    assert kv_cache_bytes(mha, seq_len=1) / kv_cache_bytes("deepseek-v3", seq_len=1) == pytest.approx(56.89, abs=0.01)


def test_sliding_window_caps_the_cache():
    # Mistral-7B keeps 4096 tokens: 2 x 32 x 8 x 128 x 2 x 4096 = 512 MiB, at any length beyond the window
    assert kv_cache_bytes("mistral-7b", seq_len=32768) == kv_cache_bytes("mistral-7b", seq_len=4096) == 512 * MiB
    assert kv_cache_bytes("mistral-7b", seq_len=100) == 100 * 128 * KiB
    # Mixtral has the same attention but no window
    assert kv_cache_bytes("mixtral-8x7b", seq_len=32768) == 8 * kv_cache_bytes("mistral-7b", seq_len=32768)
    assert kv_cache_size("mistral-7b", seq_len=10_000).tokens == 4096


def test_fp8_halves_and_fp4_quarters_bf16():
    for name in list_models():
        b16 = kv_cache_bytes(name, seq_len=2048, dtype="bf16")
        assert kv_cache_bytes(name, seq_len=2048, dtype="fp8") * 2 == b16
        assert kv_cache_bytes(name, seq_len=2048, dtype="fp4") * 4 == b16


def test_sub_byte_formats_round_the_whole_cache_up():
    odd = ModelConfig(name="odd", layers=1, hidden=8, heads=1, attention="mla", kv_lora_rank=3, qk_rope_head_dim=2)
    assert kv_cache_bytes(odd, seq_len=1, dtype="fp4") == 3  # 5 elements x 4 bits = 2.5 bytes
    assert kv_cache_bytes(odd, seq_len=1, dtype="fp6") == 4  # 30 bits = 3.75 bytes
    assert kv_cache_bytes(odd, seq_len=2, dtype="fp4") == 5  # rounded once for the whole cache, not per token
    assert isinstance(kv_cache_bytes(odd, seq_len=1, dtype="fp4"), int)


# ------------------------------------------------------------------------------------------------
# scale overhead
@pytest.mark.parametrize("name", ["llama-3-70b", "falcon-7b", "llama-2-7b"])
def test_scale_overhead_for_standard_attention(name):
    raw = RAW[name]["config"]
    layers, heads = raw["num_hidden_layers"], raw["num_attention_heads"]
    kv = 1 if raw.get("multi_query") else raw.get("num_key_value_heads", heads)
    hd = raw["hidden_size"] // heads
    T, B = 1000, 2
    base = oracle_kv_bytes(raw, T, B, 8)

    def with_scales(**kw):
        return kv_cache_bytes(name, seq_len=T, batch=B, dtype="fp8", **kw) - base

    assert with_scales() == 0
    assert with_scales(scale_granularity="tensor") == 2 * layers * 4
    assert with_scales(scale_granularity="token") == 2 * layers * T * B * 4
    assert with_scales(scale_granularity="head") == 2 * layers * kv * T * B * 4
    assert with_scales(scale_granularity="block", block_size=32) == 2 * layers * kv * (hd // 32) * T * B * 4
    assert with_scales(scale_granularity="block", block_size=48) == 2 * layers * kv * math.ceil(hd / 48) * T * B * 4
    assert with_scales(scale_granularity="block", block_size=32, scale_dtype="e8m0") == \
        2 * layers * kv * (hd // 32) * T * B * 1  # MX-style 1-byte power-of-two scales


def test_scale_overhead_for_mla():
    T = 100
    base = (512 + 64) * 61 * T
    assert kv_cache_bytes("deepseek-v3", T, dtype="fp8", scale_granularity="token") == base + 61 * T * 4
    # blocks of 128 over the 576-element latent: ceil(576 / 128) = 5 scales per token and layer
    assert kv_cache_bytes("deepseek-v3", T, dtype="fp8", scale_granularity="block", block_size=128) == \
        base + 5 * 61 * T * 4
    assert kv_cache_bytes("deepseek-v3", T, dtype="fp8", scale_granularity="tensor") == base + 61 * 4
    with pytest.raises(ValueError, match="MLA.*'token' or 'block'"):
        kv_cache_bytes("deepseek-v3", T, dtype="fp8", scale_granularity="head")


def test_scale_arguments_are_checked():
    with pytest.raises(ValueError, match="block_size"):
        kv_cache_bytes("llama-2-7b", 10, dtype="fp8", scale_granularity="block")
    with pytest.raises(ValueError, match="scale_granularity must be None or one of"):
        kv_cache_bytes("llama-2-7b", 10, dtype="fp8", scale_granularity="channel")
    with pytest.raises(ValueError, match="block_size"):
        kv_cache_bytes("llama-2-7b", 10, dtype="fp8", block_size=32)
    with pytest.raises(ValueError, match="unknown format"):
        kv_cache_bytes("llama-2-7b", 10, dtype="fp8", scale_granularity="token", scale_dtype="fp99")


def test_breakdown_and_table():
    s = kv_cache_size("llama-3-70b", seq_len=4096, batch=2, dtype="fp8", scale_granularity="token")
    assert s.element_bytes == 2 * 80 * 8 * 128 * 4096 * 2
    assert s.scale_bytes == 2 * 80 * 4096 * 2 * 4
    assert s.total_bytes == s.element_bytes + s.scale_bytes
    assert s.gb == s.total_bytes / 1e9 and s.gib == s.total_bytes / 2**30
    assert s.bytes_per_token == s.total_bytes / (4096 * 2)
    assert s.bytes_per_token_per_layer == 2 * 8 * 128 + 2 * 4
    rows = kv_cache_table("llama-3-70b", 4096, dtypes=["float32", "bf16", "fp8", "fp4"], scale_granularity="token")
    assert [r["dtype"] for r in rows] == ["float32", "bfloat16", "float8_e4m3fn", "float4_e2m1fn"]
    assert [r["scale_bytes"] > 0 for r in rows] == [False, False, True, True]  # no scales at 16 bits and up
    assert rows[1]["total_bytes"] == kv_cache_bytes("llama-3-70b", 4096)
    assert {"total_GB", "total_GiB", "bytes_per_token_per_layer"} <= set(rows[0])


# ------------------------------------------------------------------------------------------------
# GB and GiB
def test_units_are_labelled_both_ways():
    assert format_bytes(80 * GiB) == "85.90 GB (80.00 GiB)"
    assert format_bytes(80e9) == "80.00 GB (74.51 GiB)"
    assert format_bytes(MiB // 2) == "0.52 MB (0.50 MiB)"
    assert "GB" in str(kv_cache_size("llama-3-70b", 4096)) and "GiB" in str(kv_cache_size("llama-3-70b", 4096))
    for label, value in fit_report("llama-3-8b", "h100").rows():
        if label.startswith(("GPU budget", "weights", "KV cache", "left over", "short by")):
            assert re.fullmatch(r"[\d.]+ GB \([\d.]+ GiB\)|[\d.]+ MB \([\d.]+ MiB\)", value.split(" = ")[0]), label
    m = training_memory(7e9)
    assert "GB" in str(m) and "GiB" in str(m)
    assert m.gb == 112.0 and m.gib == pytest.approx(104.308, abs=1e-3)


def test_gpu_memory_marketed_gb_is_gib():
    assert list_gpus() == ["h100", "h200", "a100-80gb", "a100-40gb", "l40", "rtx-4090"]
    for name, raw in RAW_GPUS.items():
        g = get_gpu(name)
        marketed = float(raw["marketed"].removesuffix("GB"))
        assert g.memory_gib == marketed and g.memory_bytes == marketed * GiB
        assert g.memory_gb == pytest.approx(marketed * 1.073741824)
        if raw["nvidia_smi_total_mib"] is not None:
            # what the driver sees exceeds the decimal reading of the label, so the label is GiB
            assert marketed * 1e9 < g.driver_bytes <= g.memory_bytes
    assert get_gpu("h100").memory_bytes == 85_899_345_920
    assert round(get_gpu("h200").memory_gb, 1) == 151.4


def test_gpu_lookup():
    assert get_gpu("NVIDIA H100").name == "h100" and get_gpu("A100").name == "a100-80gb"
    assert get_gpu("rtx 4090").memory_gib == 24
    with pytest.raises(ValueError, match="unknown GPU 'b300'.*h200.*rtx-4090"):
        get_gpu("b300")
    with pytest.raises(ValueError, match="memory_gib"):
        GPU(name="bad", memory_gib=0)


# ------------------------------------------------------------------------------------------------
# what fits
def test_max_context_is_the_last_token_that_fits():
    budget = 81559 * 2**20  # what nvidia-smi reports for an H100 80GB: the allocatable total
    assert get_gpu("h100").budget_bytes == budget
    weights = param_count("llama-3-8b").total * 2  # bf16
    per_token = 2 * 32 * 8 * 128 * 2  # 128 KiB
    want = (budget - weights) // per_token
    assert max_context("llama-3-8b", "h100") == want == 529939
    free = budget - weights
    assert kv_cache_bytes("llama-3-8b", want) <= free < kv_cache_bytes("llama-3-8b", want + 1)
    # batch 4 shares the room; two GPUs pool their memory; utilization 0.9 as in vLLM
    assert max_context("llama-3-8b", "h100", batch=4) == free // (4 * per_token)
    assert max_context("llama-3-8b", "h100", num_gpus=2) == (2 * budget - weights) // per_token
    assert max_context("llama-3-8b", "h100", utilization=0.9) == (int(0.9 * budget) - weights) // per_token


def test_max_context_with_fp8_and_scales():
    free = 143771 * 2**20 - param_count("llama-3-70b").total  # fp8 weights on an H200 (nvidia-smi's total)
    per_token = 80 * (2 * 8 * 128 + 2 * 8 * 4)  # fp8 elements + an fp32 scale per token and head
    got = max_context("llama-3-70b", "h200", weights_dtype="fp8", kv_dtype="fp8", scale_granularity="head")
    assert got == free // per_token


def test_max_context_edge_cases():
    assert max_context("mistral-7b", "h100") == math.inf  # the rolling buffer never fills the GPU
    assert max_context("llama-3.1-405b", "h100") == 0  # 811.7 GB of bf16 weights
    assert max_context("llama-3.1-405b", "h100", num_gpus=8, weights_dtype="fp8") > 100_000
    assert max_context("llama-2-70b", "rtx-4090", weights_dtype="fp4") == 0  # 34.5 GB of weights > 24 GiB


def test_max_batch():
    free = 143771 * 2**20 - param_count("llama-3-70b").total
    assert max_batch("llama-3-70b", "h200", 4096, weights_dtype="fp8", kv_dtype="fp8") == free // (163840 * 4096)
    assert max_batch("llama-2-70b", "a100-80gb", 4096) == 0
    r = fit_report("llama-3-8b", "rtx-4090", seq_len=8192)
    assert r.max_batch == (24564 * 2**20 - 16_060_522_496) // (8192 * 128 * KiB) == 9  # nvidia-smi: 24564 MiB
    assert r.fits and r.free_bytes == 24564 * 2**20 - 16_060_522_496 - 8192 * 128 * KiB


def test_weights_bytes():
    assert weights_bytes(7e9, "bf16") == 14e9 and weights_bytes(7e9, "fp8") == 7e9
    assert weights_bytes(7e9, "fp4") == 3.5e9 and weights_bytes(7e9, "fp6") == 5.25e9
    assert weights_bytes(3, "fp4") == 2  # 1.5 bytes rounded up
    assert weights_bytes("mixtral-8x7b", "bf16", active=True) == 2 * param_count("mixtral-8x7b").active


# ------------------------------------------------------------------------------------------------
# training memory
def test_zero_paper_figures():
    # ZeRO (arXiv 1910.02054), Figure 1: 7.5B parameters, mixed-precision Adam (K = 12), 64 GPUs:
    # baseline (2 + 2 + 12) x 7.5e9 = 120 GB; Pos 4Ψ + 12Ψ/64 = 31.4 GB; Pos+g 2Ψ + 14Ψ/64 = 16.6 GB;
    # Pos+g+p 16Ψ/64 = 1.88 GB (decimal GB as in the paper)
    got = [training_memory(7.5e9, "mixed-fp16", num_gpus=64, zero_stage=s).gb for s in range(4)]
    assert got[0] == 120.0
    assert round(got[1], 1) == 31.4 and round(got[2], 1) == 16.6 and round(got[3], 2) == 1.88
    assert training_memory(7.5e9, "mixed-fp16").bytes_per_param == 16  # the paper's 16 bytes per parameter


def test_recipes_bytes_per_parameter():
    expected = {"fp32": 4 + 4 + 4 + 4, "mixed-fp16": 2 + 2 + 4 + 4 + 4, "mixed-bf16": 2 + 2 + 4 + 4 + 4,
                "fp8": 1 + 4 + 4 + 4 + 4, "deepseek-v3": 4 + 4 + 2 + 2}
    assert sz.list_training_recipes() == list(expected)
    for name, want in expected.items():
        assert sz.get_training_recipe(name).bytes_per_param == want
        assert training_memory(10**9, name).total_bytes == want * 10**9


def test_training_memory_of_a_model_and_a_custom_recipe():
    m = training_memory("llama-2-7b", "mixed-bf16")
    assert m.total_bytes == 16 * 6_738_415_616
    adam8 = sz.TrainingRecipe("bf16-adam8bit", (sz.TrainingComponent("weights", "bf16", "weights"),
                                                sz.TrainingComponent("gradients", "bf16", "gradients"),
                                                sz.TrainingComponent("adam_m", "int8", "optimizer"),
                                                sz.TrainingComponent("adam_v", "int8", "optimizer")))
    assert training_memory(1000, adam8).total_bytes == 6000
    rows = m.rows()
    assert rows[-1]["component"] == "total" and rows[-1]["bytes"] == sum(r["bytes"] for r in rows[:-1])


def test_training_memory_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown memory plan 'adam'.*mixed-bf16"):
        training_memory(7e9, "adam")
    with pytest.raises(ValueError, match="zero_stage"):
        training_memory(7e9, zero_stage=4)
    with pytest.raises(ValueError, match="params"):
        training_memory(-7e9)
    with pytest.raises(ValueError, match="kind"):
        sz.TrainingComponent("x", "bf16", "activations")


# ------------------------------------------------------------------------------------------------
# bad configs
def test_kv_heads_must_divide_heads():
    with pytest.raises(ValueError, match=r"kv_heads \(6\) must divide heads \(64\)"):
        ModelConfig(name="bad", layers=80, hidden=8192, heads=64, kv_heads=6)
    with pytest.raises(ValueError, match="must divide"):
        ModelConfig(name="bad", layers=1, hidden=64, heads=4, kv_heads=8, attention="gqa")


@pytest.mark.parametrize("field,value", [("layers", 0), ("layers", -80), ("hidden", -1), ("heads", 0),
                                         ("kv_heads", 0), ("head_dim", -128), ("sliding_window", 0),
                                         ("layers", 2.5), ("layers", True), ("heads", "64")])
def test_negative_zero_and_non_integer_sizes_are_rejected(field, value):
    kw = dict(name="bad", layers=2, hidden=64, heads=4)
    kw[field] = value
    with pytest.raises(ValueError, match=field):
        ModelConfig(**kw)


def test_attention_kind_is_checked_against_the_heads():
    with pytest.raises(ValueError, match="'mqa' means a single K/V head"):
        ModelConfig(name="x", layers=1, hidden=64, heads=4, kv_heads=2, attention="mqa")
    with pytest.raises(ValueError, match="'mha' means kv_heads == heads"):
        ModelConfig(name="x", layers=1, hidden=64, heads=4, kv_heads=2, attention="mha")
    with pytest.raises(ValueError, match="'gqa' needs kv_heads"):
        ModelConfig(name="x", layers=1, hidden=64, heads=4, attention="gqa")
    with pytest.raises(ValueError, match="'mla' needs kv_lora_rank"):
        ModelConfig(name="x", layers=1, hidden=64, heads=4, attention="mla", qk_rope_head_dim=64)
    with pytest.raises(ValueError, match="attention must be one of"):
        ModelConfig(name="x", layers=1, hidden=64, heads=4, attention="linear")
    with pytest.raises(ValueError, match="belong to attention='mla'"):
        ModelConfig(name="x", layers=1, hidden=64, heads=4, kv_lora_rank=16, attention="mha")
    with pytest.raises(ValueError, match="not a multiple of heads"):
        ModelConfig(name="x", layers=1, hidden=100, heads=3)
    with pytest.raises(ValueError, match="experts_per_token"):
        ModelConfig(name="x", layers=1, hidden=64, heads=4, num_experts=8, experts_per_token=9)
    assert ModelConfig(name="x", layers=1, hidden=100, heads=3, head_dim=32).head_dim == 32


def test_attention_is_inferred():
    assert ModelConfig(name="a", layers=1, hidden=64, heads=4).attention == "mha"
    assert ModelConfig(name="b", layers=1, hidden=64, heads=4, kv_heads=1).attention == "mqa"
    assert ModelConfig(name="c", layers=1, hidden=64, heads=4, kv_heads=2).attention == "gqa"
    m = ModelConfig(name="d", layers=1, hidden=64, heads=4, kv_lora_rank=16, qk_rope_head_dim=8)
    assert m.attention == "mla" and sz.kv_elements_per_token(m) == 24
    assert ModelConfig(name="e", layers=1, hidden=64, heads=4, attention="MQA").kv_heads == 1


def test_contract_example():
    cfg = ModelConfig(name="my-model", layers=80, hidden=8192, heads=64, kv_heads=8, head_dim=128, attention="gqa",
                      kv_lora_rank=None, qk_rope_head_dim=None, sliding_window=None)
    assert kv_cache_bytes(cfg, seq_len=4096, batch=1, dtype="fp8") == 80 * 2 * 8 * 128 * 4096
    assert kv_cache_bytes(get_model("llama-3-70b"), seq_len=4096, batch=1, dtype="fp8") == 80 * 2 * 8 * 128 * 4096


def test_kv_cache_bytes_rejects_bad_sizes_and_names():
    with pytest.raises(ValueError, match="seq_len"):
        kv_cache_bytes("llama-2-7b", seq_len=-1)
    with pytest.raises(ValueError, match="batch"):
        kv_cache_bytes("llama-2-7b", seq_len=10, batch=0)
    with pytest.raises(ValueError, match="unknown format 'fp9'.*bf16"):
        kv_cache_bytes("llama-2-7b", seq_len=10, dtype="fp9")
    with pytest.raises(TypeError):
        kv_cache_bytes(42, seq_len=10)


def test_from_hf_config_reads_what_the_presets_hold():
    for name, entry in RAW.items():
        cfg = ModelConfig.from_hf_config(entry["config"], name=name)
        preset = get_model(name)
        for field in ("layers", "hidden", "heads", "kv_heads", "head_dim", "attention", "sliding_window",
                      "kv_lora_rank", "qk_rope_head_dim", "num_experts"):
            assert getattr(cfg, field) == getattr(preset, field), (name, field)
    with pytest.raises(ValueError, match="lacks"):
        ModelConfig.from_hf_config({"hidden_size": 64}, name="broken")


# ------------------------------------------------------------------------------------------------
# accuracy of quantized caches
def _oracle_rel_error(fmt_dtype, fmt_max: float, granularity: str) -> float:
    """The same experiment with ml_dtypes casts (an independent codec) and float64 attention."""
    from fp8lab.sizing.kv_accuracy import make_kv_data

    q, k, v = make_kv_data(seq_len=256)

    def quant(x):  # x is (kv_heads, seq_len, head_dim)
        axes = {"head": (2,), "token": (0, 2), "tensor": (0, 1, 2)}[granularity]
        amax = np.abs(x).max(axis=axes, keepdims=True)
        scale = (amax / np.float32(fmt_max)).astype(np.float32)
        return np.clip(x / scale, -fmt_max, fmt_max).astype(fmt_dtype).astype(np.float32) * scale

    def attn(q, k, v):
        s = q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64) / math.sqrt(q.shape[-1])
        p = np.exp(s - s.max(-1, keepdims=True))
        return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)

    ref, out = attn(q, k, v), attn(q, quant(k), quant(v))
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("fmt,dtype,fmax", [("e4m3", ml_dtypes.float8_e4m3fn, 448.0),
                                             ("e5m2", ml_dtypes.float8_e5m2, 57344.0),
                                             ("fp4", ml_dtypes.float4_e2m1fn, 6.0)])
@pytest.mark.parametrize("granularity", ["head", "token", "tensor"])
def test_kv_accuracy_agrees_with_an_ml_dtypes_oracle(fmt, dtype, fmax, granularity):
    row, = kv_cache_accuracy([fmt], granularity=granularity, seq_len=256)
    assert row["rel_error"] == pytest.approx(_oracle_rel_error(dtype, fmax, granularity), rel=1e-3)


def test_kv_accuracy_ranks_the_formats():
    rows = kv_cache_accuracy(["bf16", "e4m3", "e5m2", "fp4"], seq_len=256)
    snr = {r["format"]: r["snr_db"] for r in rows}
    assert snr["bfloat16"] > snr["float8_e4m3fn"] > snr["float8_e5m2"] > snr["float4_e2m1fn"]
    # 3 vs 2 mantissa bits: about 6 dB apart; FP8 E4M3 keeps the attention output above 20 dB, FP4 does not
    assert 4 < snr["float8_e4m3fn"] - snr["float8_e5m2"] < 8
    assert snr["float8_e4m3fn"] > 20 > snr["float4_e2m1fn"] > 0
    head = kv_cache_accuracy(["fp4"], granularity="head", seq_len=256)[0]
    token = kv_cache_accuracy(["fp4"], granularity="token", seq_len=256)[0]
    tensor = kv_cache_accuracy(["fp4"], granularity="tensor", seq_len=256)[0]
    assert head["rel_error"] < token["rel_error"] < tensor["rel_error"]  # finer scales, smaller error
    assert head["bits_per_element"] == 4 + 32 / 128 and token["bits_per_element"] == 4 + 32 / (4 * 128)
    assert tensor["bits_per_element"] == 4


def test_kv_accuracy_is_deterministic_and_checks_input():
    a = kv_cache_accuracy(["e4m3"], seq_len=64, seed=1)
    assert a == kv_cache_accuracy(["e4m3"], seq_len=64, seed=1)
    assert a[0]["rel_error"] != kv_cache_accuracy(["e4m3"], seq_len=64, seed=2)[0]["rel_error"]
    with pytest.raises(ValueError, match="granularity"):
        kv_cache_accuracy(granularity="channel")
    with pytest.raises(ValueError, match="outlier_channels"):
        kv_cache_accuracy(head_dim=8, outlier_channels=9)


def test_public_names():
    for name in ["ModelConfig", "get_model", "list_models", "kv_cache_bytes", "GPU", "get_gpu", "max_context",
                 "max_batch", "training_memory", "weights_bytes", "param_count", "kv_cache_table",
                 "kv_cache_accuracy", "fit_report"]:
        assert name in sz.__all__ and hasattr(sz, name)
