"""Training memory per recipe: every component checked against an independent count.

Oracles: the converted model's own modules (layer shapes, parameter count), ``QTensor.nbytes`` of
real tensors quantized by each recipe's rules, and ``fp8lab.sizing`` (FP32 Adam: 16 bytes/param;
LLaMA-2-7B's published parameter count).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import fp8lab as fl  # noqa: E402
from fp8lab.nn import LinearRecipe, convert  # noqa: E402
from fp8lab.nn.gpt import GPT, GPTConfig  # noqa: E402
from fp8lab.train.memory import memory_table, model_linears, recipe_memory  # noqa: E402

RECIPES = LinearRecipe.names()


def test_the_tiny_gpt_linears_are_the_ones_convert_swaps():
    torch.manual_seed(0)
    model = GPT(GPTConfig())
    report = convert(model, "fp8-tensorwise-current")
    swapped = {n: m for n, m in model.named_modules() if n in report.swapped}
    t = model_linears("tiny-gpt")
    assert t.params == model.num_params()
    assert len(swapped) == t.layers * len(t.sites)
    assert sum(m.weight.numel() for m in swapped.values()) == t.layers * sum(s.weight_elements for s in t.sites)
    assert t.tokens == 12 * 64


def test_llama_2_7b_parameters_match_sizing_and_the_published_count():
    m = model_linears("llama-2-7b")
    assert m.params == fl.param_count("llama-2-7b").total
    assert abs(m.params - 6.74e9) / 6.74e9 < 0.001   # Touvron et al. 2023 / the HF config: 6.74B
    assert m.tokens == 4096 and m.layers == 32


@pytest.mark.parametrize("name", RECIPES)
def test_fp32_parts_are_sizings_16_bytes_per_parameter(name):
    mem = recipe_memory(name, "tiny-gpt")
    fixed = sum(mem.component(c) for c in ("master weights", "gradients", "optimizer states"))
    assert fixed == fl.training_memory(mem.model.params, "fp32").total_bytes


def _quantized_bytes(tq, x):
    """Bytes of ``x`` cast for a role, by the library itself (QTensor.nbytes), or its 16/32-bit size."""
    if tq is None:
        return x.numel() * 4
    if tq.is_16bit:
        return x.numel() * 2
    if tq.scaling is None:
        return fl.encode(x, tq.format).numel() * tq.format.bits // 8
    state = tq.scaling.new_state() if tq.stateful else None
    return fl.quantize_tensor(x, tq.format, tq.scaling, state=state).nbytes


@pytest.mark.parametrize("name", RECIPES)
def test_weight_copies_and_saved_inputs_equal_the_bytes_of_real_quantized_tensors(name):
    r = LinearRecipe.from_name(name)
    t = model_linears("tiny-gpt")
    g = torch.Generator().manual_seed(1)
    copies, inputs = 0, {}
    for s in t.sites:
        w = torch.randn(s.out_features, s.in_features, generator=g)
        if r.weight is not None:
            copies += _quantized_bytes(r.weight, w)
            if r.weight.scaling is not None and not r.weight.stateful:
                a = fl.quantize_tensor(w, r.weight.format, r.weight.scaling)
                b = fl.quantize_tensor(w.t().contiguous(), r.weight.format, r.weight.scaling)
                if a.transpose().block != b.block:  # dgrad needs W along its other axis, in other blocks
                    copies += b.nbytes
        inputs.setdefault(s.input, s.in_features)
    saved = sum(_quantized_bytes(r.input, torch.randn(w_, t.tokens, generator=g)) for w_ in inputs.values())
    mem = recipe_memory(name, t)
    assert mem.component("weight copies for the GEMMs") == copies * t.layers
    assert mem.component("saved linear inputs") == saved * t.layers
    assert mem.total_bytes == sum(row["bytes"] for row in mem.rows()[:-1])


def test_fp8_halves_bf16s_copies_and_quarters_fp32s_saved_inputs():
    b, f = recipe_memory("bf16", "llama-2-7b"), recipe_memory("fp8-tensorwise-delayed", "llama-2-7b")
    p32 = recipe_memory("fp32", "llama-2-7b")
    assert f.component("weight copies for the GEMMs") * 2 == b.component("weight copies for the GEMMs") + 2 * 4 * 7 * 32  # + 7 FP32 scales a layer
    assert p32.component("saved linear inputs") == 4 * f.component("saved linear inputs") - 4 * 4 * 4 * 32  # 4 inputs, 1 FP32 scale each
    h, rows = memory_table("llama-2-7b")
    assert [r[0] for r in rows] == list(RECIPES) and h[-1] == "total"


def test_bad_models_and_tokens_are_refused():
    with pytest.raises(ValueError, match="mixture of experts is not modelled"):
        recipe_memory("fp32", "deepseek-v3")
    with pytest.raises(ValueError, match="tokens"):
        model_linears("tiny-gpt", tokens=0)
    with pytest.raises(ValueError, match="unknown training recipe"):
        recipe_memory("fp9", "tiny-gpt")


def test_the_cli_prints_the_table_and_refuses_bad_models():
    run = lambda *a: subprocess.run([sys.executable, "-m", "fp8lab.train", "--memory", *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=300)
    ok = run("--model", "llama-2-7b", "--compare", "fp32,fp8-blockwise")
    assert ok.returncode == 0, ok.stderr
    assert "llama-2-7b: 6,738,415,616 parameters" in ok.stdout and "fp8-blockwise" in ok.stdout
    bad = run("--model", "deepseek-v3")
    assert bad.returncode == 2 and "mixture of experts" in bad.stderr and not bad.stdout
