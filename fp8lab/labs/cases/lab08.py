"""Random cases of lab 08_memory_calculator: fresh inputs from a seed, fp8lab's answer, the comparison.

One function per task, named by its id and called as ``task(fn, rng)``: it draws the cases from
``rng``, computes what fp8lab says, calls ``fn`` (the submission's function) and raises
AssertionError with the input, the expected value and what came back at the first difference.

>>> import numpy as np
>>> kv_cache_bytes(lambda *args, **kwargs: 0, np.random.default_rng(0))  # answers 0: refused
Traceback (most recent call last):
...
AssertionError: kv_cache_bytes(32, 32, 128, 1, batch=1, bits=16)  (llama-2-7b): expected 524288, got 0 / kv_cache_bytes(32, 32, 128, 1, batch=1, bits=16)  (llama-2-7b)：期望 524288，得到 0
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import fp8lab as fl
from fp8lab.labs import expect_equal, expect_raises, no_shortcut
from fp8lab.sizing.params import resolve_params
from fp8lab.sizing.memory import TRAINING_RECIPES, TrainingComponent, TrainingRecipe
from fp8lab.sizing.units import dtype_bits

__all__ = ['kv_cache_bytes', 'mla_cache_bytes', 'kv_scale_bytes', 'max_context', 'training_bytes']


def kv_cache_bytes(kv_cache_bytes: Callable[..., Any], rng: np.random.Generator) -> None:
    """Every MHA/GQA/MQA preset in BF16, FP8, FP6 and FP4 and FP32, zero tokens, odd token counts with 4- and 6-bit elements (rounding up), batches, random configurations; against fp8lab.kv_cache_bytes."""
    dtypes = {"bf16": 16, "fp8": 8, "e2m3": 6, "fp4": 4, "float32": 32}
    cases = []
    models = [fl.get_model(m) for m in fl.list_models()]
    models = [c for c in models if c.attention != "mla" and c.sliding_window is None]
    for c in models:
        for dtype, bits in dtypes.items():
            for seq_len, batch in [(0, 1), (1, 1), (3, 1), (4096, 1), (int(rng.integers(1, 200_000)), int(rng.integers(1, 65)))]:
                cases.append(((c.layers, c.kv_heads, c.head_dim, seq_len, batch, bits), fl.kv_cache_bytes(c, seq_len, batch, dtype), c.name))
    for _ in range(60):
        kv_heads = int(rng.integers(1, 17))
        c = fl.ModelConfig(name="random", layers=int(rng.integers(1, 130)), hidden=kv_heads * 64, heads=kv_heads,
                           kv_heads=kv_heads, head_dim=int(rng.integers(1, 300)))
        dtype = str(rng.choice(list(dtypes)))
        seq_len, batch = int(rng.integers(0, 5000)), int(rng.integers(1, 9))
        cases.append(((c.layers, c.kv_heads, c.head_dim, seq_len, batch, dtypes[dtype]), fl.kv_cache_bytes(c, seq_len, batch, dtype), "random"))
    with no_shortcut(kv_cache_bytes) as kv:
        got = [kv(*args[:4], batch=args[4], bits=args[5]) for args, _, _ in cases]
    for (args, want, name), g in zip(cases, got):
        expect_equal(g, want, what=f"kv_cache_bytes({', '.join(map(str, args[:4]))}, batch={args[4]}, bits={args[5]})  ({name})")


def mla_cache_bytes(mla_cache_bytes: Callable[..., Any], rng: np.random.Generator) -> None:
    """DeepSeek-V2 and V3 in BF16, FP8, FP6, FP4, zero and odd token counts, batches, random MLA configurations; against fp8lab.kv_cache_bytes."""
    dtypes = {"bf16": 16, "fp8": 8, "e2m3": 6, "fp4": 4, "float32": 32}
    models = [fl.get_model("deepseek-v3"), fl.get_model("deepseek-v2")]
    for _ in range(30):
        models.append(fl.ModelConfig(name="random-mla", layers=int(rng.integers(1, 100)), hidden=1024, heads=8,
                                     kv_lora_rank=int(rng.integers(1, 1025)), qk_rope_head_dim=int(rng.integers(1, 129))))
    cases = []
    for c in models:
        for dtype, bits in dtypes.items():
            for seq_len, batch in [(0, 1), (1, 1), (7, 1), (int(rng.integers(1, 130_000)), int(rng.integers(1, 33)))]:
                cases.append(((c.layers, c.kv_lora_rank, c.qk_rope_head_dim, seq_len, batch, bits),
                              fl.kv_cache_bytes(c, seq_len, batch, dtype), c.name))
    with no_shortcut(mla_cache_bytes) as mla:
        got = [mla(*args[:4], batch=args[4], bits=args[5]) for args, _, _ in cases]
    for (args, want, name), g in zip(cases, got):
        expect_equal(g, want, what=f"mla_cache_bytes({', '.join(map(str, args[:4]))}, batch={args[4]}, bits={args[5]})  ({name})")


def kv_scale_bytes(kv_scale_bytes: Callable[..., Any], rng: np.random.Generator) -> None:
    """Every granularity on every MHA/GQA/MQA preset, FP32, BF16 and E8M0 scales, blocks that do not divide head_dim (ragged), zero tokens, batches, random configurations, the two errors; against fp8lab.kv_cache_size(...).scale_bytes."""
    scale_dtypes = {"float32": 32, "bf16": 16, "e8m0": 8}
    models = [fl.get_model(m) for m in fl.list_models()]
    models = [c for c in models if c.attention != "mla" and c.sliding_window is None]
    for _ in range(20):
        kv_heads = int(rng.integers(1, 17))
        models.append(fl.ModelConfig(name="random", layers=int(rng.integers(1, 130)), hidden=kv_heads * 64, heads=kv_heads,
                                     kv_heads=kv_heads, head_dim=int(rng.integers(1, 300))))
    cases = []
    for c in models:
        for gran in ["tensor", "token", "head", "block"]:
            sdt = str(rng.choice(list(scale_dtypes)))
            block = int(rng.choice([16, 32, 48, 100, 128, 1000])) if gran == "block" else None
            for seq_len, batch in [(0, 1), (1, 1), (int(rng.integers(1, 100_000)), int(rng.integers(1, 17)))]:
                want = fl.kv_cache_size(c, seq_len, batch, "fp8", scale_granularity=gran, scale_dtype=sdt, block_size=block).scale_bytes
                cases.append(((c.layers, c.kv_heads, c.head_dim, seq_len, batch, gran), block, scale_dtypes[sdt], want, c.name))
    with no_shortcut(kv_scale_bytes) as sb:
        got = [sb(*args, block_size=block, scale_bits=bits) for args, block, bits, _, _ in cases]
        expect_raises(ValueError, sb, 32, 8, 128, 10, 1, "block", what="kv_scale_bytes(32, 8, 128, 10, 1, 'block') without block_size")
        expect_raises(ValueError, sb, 32, 8, 128, 10, 1, "Tensor", what="kv_scale_bytes(32, 8, 128, 10, 1, 'Tensor')")
    for (args, block, bits, want, name), g in zip(cases, got):
        expect_equal(g, want, what=f"kv_scale_bytes({', '.join(map(repr, args))}, block_size={block}, scale_bits={bits})  ({name})")


def max_context(max_context: Callable[..., Any], rng: np.random.Generator) -> None:
    """Every MHA/GQA/MQA preset on every GPU preset, BF16/FP8/FP4 weights and caches, batches, utilization 0.9 and odd fractions, models that do not fit, a budget that fits the weights but not one token; against fp8lab.max_context."""
    dtypes = {"bf16": 16, "fp8": 8, "fp4": 4}
    models = [fl.get_model(m) for m in fl.list_models()]
    models = [c for c in models if c.attention != "mla" and c.sliding_window is None]
    cases = []
    for c in models:
        params = resolve_params(c)
        for gpu in ["h100", "h200", "a100-40gb", "rtx-4090"]:
            for _ in range(2):
                wd, kd = str(rng.choice(list(dtypes))), str(rng.choice(list(dtypes)))
                batch = int(rng.choice([1, 1, 8, 64]))
                util = float(rng.choice([1.0, 0.9, 0.85, 0.333]))
                want = fl.max_context(c, gpu, weights_dtype=wd, kv_dtype=kd, batch=batch, utilization=util)
                args = (fl.get_gpu(gpu).budget_bytes, params, dtypes[wd], c.layers, c.kv_heads, c.head_dim, dtypes[kd])
                cases.append((args, batch, util, want, f"{c.name} on {gpu}, weights {wd}, cache {kd}"))
    # a budget that holds the weights and less than one token of cache
    c = fl.get_model("llama-2-7b")
    params = resolve_params(c)
    weights = -(-params * 16 // 8)
    for extra in (0, 1, 524287, 524288, 524289):
        cases.append(((weights + extra, params, 16, c.layers, c.kv_heads, c.head_dim, 16), 1, 1.0,
                      extra // 524288, f"weights + {extra} bytes"))
    with no_shortcut(max_context) as mc:
        got = [mc(*args, batch=batch, utilization=util) for args, batch, util, _, _ in cases]
    for (args, batch, util, want, name), g in zip(cases, got):
        expect_equal(g, want, what=f"max_context({', '.join(map(str, args))}, batch={batch}, utilization={util})  ({name})")


def training_bytes(training_bytes: Callable[..., Any], rng: np.random.Generator) -> None:
    """Every built-in recipe (FP32, mixed FP16/BF16, FP8, DeepSeek-V3) on every preset model, every ZeRO stage, GPU counts that do not divide the parameter count, one parameter, random recipes with 4- and 8-bit copies; against fp8lab.training_memory."""
    def widths(recipe):
        return tuple([dtype_bits(c.dtype) for c in recipe.components if c.kind == k] for k in ("weights", "gradients", "optimizer"))

    recipes = list(TRAINING_RECIPES.values())
    for i in range(10):
        comps = [TrainingComponent(f"c{j}", str(rng.choice(["float32", "bf16", "fp8", "fp4", "e2m3"])), kind)
                 for j, kind in enumerate(["weights", "gradients"] + ["optimizer"] * int(rng.integers(0, 4)))]
        recipes.append(TrainingRecipe(f"random-{i}", tuple(comps)))
    counts = [resolve_params(m) for m in fl.list_models()] + [1, 3, 7_500_000_000, int(rng.integers(1, 10**12))]
    cases = []
    for params in counts:
        for recipe in recipes:
            stage = int(rng.integers(0, 4))
            gpus = int(rng.choice([1, 3, 7, 8, 64, 1000]))
            want = fl.training_memory(params, recipe, num_gpus=gpus, zero_stage=stage).total_bytes
            cases.append((params, widths(recipe), gpus, stage, want, recipe.name))
    with no_shortcut(training_bytes) as tb:
        got = [tb(p, *w, num_gpus=n, zero_stage=s) for p, w, n, s, _, _ in cases]
    for (p, w, n, s, want, name), g in zip(cases, got):
        expect_equal(g, want, what=f"training_bytes({p}, {w[0]}, {w[1]}, {w[2]}, num_gpus={n}, zero_stage={s})  ({name})")
