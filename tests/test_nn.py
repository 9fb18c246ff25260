"""fp8lab.nn: Fp8Linear against torch.nn.Linear (SQNR in dB, as torchao states its thresholds), convert, states."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import fp8lab as fl  # noqa: E402
from fp8lab.nn import Fp8Linear, LinearRecipe, TensorQuant, convert  # noqa: E402
from fp8lab.scaling import TensorScaling  # noqa: E402

M, K, N = 256, 256, 128

#: Lower SQNR bounds (dB) of (output, input gradient, weight gradient) vs nn.Linear, measured with
#: margin (measured at these shapes, seed 0: bf16 about 53, fp16 71; E4M3 forward about 29; E5M2
#: gradients (HYBRID) about 24.7; E4M3 gradients about 28.5).
SQNR_BOUNDS = {
    "bf16": (48, 48, 48),
    "fp16": (65, 65, 65),
    "fp8-tensorwise-delayed": (25, 21, 21),
    "fp8-tensorwise-current": (25, 21, 21),
    "fp8-rowwise": (25, 25, 25),
    "fp8-blockwise": (25, 25, 25),
    "mxfp8": (25, 25, 25),
    "fp8-acc14-no-promotion": (25, 21, 21),
    "fp8-dgrad-128x128": (25, 25, 25),
    "fp16-no-loss-scaling": (65, 65, 65),
}


def sqnr(ref, got) -> float:
    return float(fl.sqnr_db(ref.detach().double().numpy(), got.detach().double().numpy()))


def run_pair(recipe, x, dy, seed=0):
    """A reference nn.Linear and an Fp8Linear with copied weights, both run forward and backward."""
    torch.manual_seed(seed)
    ref = torch.nn.Linear(x.shape[1], dy.shape[1])
    lay = Fp8Linear(x.shape[1], dy.shape[1], recipe=recipe)
    lay.load_state_dict(ref.state_dict())
    out = []
    for m in (ref, lay):
        xx = x.clone().requires_grad_()
        y = m(xx)
        y.backward(dy)
        out.append((y, xx.grad, m.weight.grad, m.bias.grad))
    return out, lay


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    return torch.randn(M, K, generator=g), torch.randn(M, N, generator=g) * 1e-3


def test_fp32_is_bitwise_nn_linear(data):
    x, dy = data
    (r, f), _ = run_pair("fp32", x, dy)
    for a, b in zip(r, f):
        assert torch.equal(a, b)


@pytest.mark.parametrize("name", sorted(SQNR_BOUNDS))
def test_forward_and_gradients_within_sqnr_bounds(name, data):
    x, dy = data
    (r, f), lay = run_pair(name, x, dy)
    bounds = SQNR_BOUNDS[name]
    got = (sqnr(r[0], f[0]), sqnr(r[1], f[1]), sqnr(r[2], f[2]))
    assert all(g > b for g, b in zip(got, bounds)), (name, got, bounds)
    assert torch.equal(r[3], f[3])  # the bias gradient is dy summed in FP32: exact
    assert set(lay.stats) == {"input", "weight", "grad_output"}


def test_bf16_equals_torch_bfloat16_casts(data):
    """Independent oracle: torch's own bfloat16 cast of the operands, an FP32 matmul."""
    x, dy = data
    (r, f), lay = run_pair("bf16", x, dy)
    bf = lambda t: t.to(torch.bfloat16).to(torch.float32)  # noqa: E731
    w = lay.weight.detach()
    torch.testing.assert_close(f[0], bf(x) @ bf(w).t() + lay.bias.detach(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(f[1], bf(dy) @ bf(w), rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(f[2], bf(dy).t() @ bf(x), rtol=1e-6, atol=1e-9)


def test_e4m3_gradients_unscaled_underflow(data):
    x, dy = data
    (r, f), lay = run_pair("fp8-e4m3-grads-unscaled", x, dy)
    assert sqnr(r[0], f[0]) > 25  # the forward is scaled and fine
    assert sqnr(r[1], f[1]) < 12 and sqnr(r[2], f[2]) < 12  # gradients of 1e-3 sit at E4M3's subnormals (2^-9)
    assert lay.stats["grad_output"]["underflow"] > 0.3


def test_wgrad_quantizes_activations_along_tokens():
    """Rowwise: x's smallest columns flush to zero under per-token scales, but wgrad scales x per column (along M)."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(M, K, generator=g) * torch.logspace(-6, 0, K, base=2.0) ** 4
    dy = torch.randn(M, N, generator=g)
    (r, f), _ = run_pair("fp8-rowwise", x, dy)
    small = slice(0, 32)  # columns 2^24 below the largest: beyond E4M3's range under one scale per token
    assert sqnr(r[2][:, small], f[2][:, small]) > 25
    x_fprop = fl.quantize_tensor(x, "e4m3", fl.AxisScaling(axis=-1, pow2=True)).dequantize()
    assert (x_fprop[:, small] == 0).float().mean() > 0.9  # what the wrong orientation would have used


def test_delayed_histories_are_per_layer_and_advance_once_per_step(data):
    x, dy = data
    a = Fp8Linear(K, N, recipe="fp8-tensorwise-delayed")
    b = Fp8Linear(K, N, recipe="fp8-tensorwise-delayed")
    assert a.state.input is not b.state.input and a.state.input is not a.state.weight
    for step in range(3):
        a(x).backward(dy)
    b(2 * x).backward(dy)
    assert (a.state.input.steps, a.state.weight.steps, a.state.grad_output.steps) == (3, 3, 3)
    assert b.state.input.steps == 1 and b.state.input.amaxes[0] == pytest.approx(2 * a.state.input.amaxes[0])
    with torch.no_grad():  # evaluation reads the history but does not advance it
        a(x)
    assert a.state.input.steps == 3
    assert a.state.as_dict()["weight"]["steps"] == 3


def test_reproducible_from_seed(data):
    x, dy = data
    (_, f1), _ = run_pair("fp8-blockwise", x, dy, seed=3)
    (_, f2), _ = run_pair("fp8-blockwise", x, dy, seed=3)
    for a, b in zip(f1, f2):
        assert torch.equal(a, b)


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(10, 16)
        self.fc = torch.nn.Linear(16, 32)
        self.ln = torch.nn.LayerNorm(32)
        self.proj = torch.nn.Linear(32, 16, bias=False)
        self.lm_head = torch.nn.Linear(16, 10, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        return self.lm_head(self.proj(self.ln(self.fc(self.wte(idx)))))


def test_convert_swaps_exactly_what_it_reports():
    torch.manual_seed(0)
    m = Tiny()
    idx = torch.arange(10)
    before = m(idx)
    rep = convert(m, "fp32")
    assert rep.swapped == ("fc", "proj")
    assert rep.left["lm_head"] == "output head: stays FP32" and "wte" in rep.left and "ln" in rep.left
    swapped = {n for n, mod in m.named_modules() if isinstance(mod, Fp8Linear)}
    assert swapped == set(rep.swapped)
    assert type(m.lm_head) is torch.nn.Linear and m.lm_head.weight is m.wte.weight
    assert torch.equal(before, m(idx))  # fp32 Fp8Linear is nn.Linear bit for bit
    rep2 = convert(m, "fp8-rowwise", skip=("proj",))
    assert rep2.swapped == () and "proj" in rep2.left and "already" in rep2.left["fc"]


def test_convert_with_skip_glob_and_state_dict_keys():
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Sequential(torch.nn.Linear(4, 4)))
    keys = list(m.state_dict())
    rep = convert(m, "mxfp8", skip=("1.*",))
    assert rep.swapped == ("0",) and rep.left["1.0"].startswith("skipped")
    assert list(m.state_dict()) == keys


def test_errors():
    with pytest.raises(ValueError, match="unknown training recipe"):
        LinearRecipe.from_name("fp7")
    with pytest.raises(TypeError):
        LinearRecipe.from_name(3)
    with pytest.raises(ValueError, match="limited accumulator"):
        LinearRecipe("x", input=TensorQuant("bf16"), weight=TensorQuant("bf16"), fprop=fl.Accumulator(13))
    with pytest.raises(ValueError, match="scaling=None"):
        TensorQuant("bf16", TensorScaling())
    with pytest.raises(TypeError):
        TensorQuant("e4m3", "tensor")
    with pytest.raises(ValueError, match="float32"):
        Fp8Linear(2, 2, dtype=torch.float16)
    with pytest.raises(TypeError):
        convert("model", "fp32")


def test_presets_are_documented():
    for name in LinearRecipe.names():
        r = LinearRecipe.from_name(name)
        assert r.name == name and r.source and r.description
    controls = {n for n in LinearRecipe.names() if LinearRecipe.from_name(n).control}
    assert controls == {"fp8-unscaled", "fp16-no-loss-scaling", "fp8-e4m3-grads-unscaled", "fp8-acc14-no-promotion",
                        "fp8-dgrad-128x128"}


def test_import_fp8lab_does_not_import_nn():
    code = "import sys, fp8lab; print('fp8lab.nn' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "fp4", "fp6_e3m2", "int8", "bf16"])
def test_the_underflow_fraction_counted_on_codes_equals_counting_values(fmt):
    """Fp8Linear counts grad_output's flushed elements on the codes (fl.flushed_fraction); the values say the same,
    with the C kernels' one-pass count and without it, and for numpy input."""
    from fp8lab.scaling import flushed_fraction
    from fp8lab.scaling import TensorScaling
    f = fl.get_format(fmt)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(64, 48, generator=g) * torch.logspace(-12, 0, 48)  # columns from tiny to large
    x[::7] = 0.0
    x[3, ::5] = -x[3, ::5].abs()
    if f.bits >= 16:
        q = fl.quantize(x * 1e-30, f)
        v = q
        x = x * 1e-30
    else:
        q = fl.quantize_tensor(x, f, TensorScaling())
        v = q.values()
    nz = x != 0
    want = float(((v == 0) & nz).sum()) / int(nz.sum())
    assert 0 < want < 1, "the case must flush some elements and keep others"
    assert flushed_fraction(x, q) == pytest.approx(want, abs=0)
    with fl.codec.disable_paths("ckernel"):
        assert flushed_fraction(x, q) == pytest.approx(want, abs=0)
    if f.bits < 16:
        assert flushed_fraction(x.numpy(), fl.quantize_tensor(x.numpy(), f, TensorScaling())) == pytest.approx(want, abs=0)


def _general_gemm(a, b, acc, consume=(False, False), bias=None):
    """Fp8Linear's GEMM without its shortcuts (operands decoded and scaled by scaled_matmul itself, every time:
    copies of the QTensors without the values their casts held; the bias added by torch afterwards, not in the
    epilogue's pass)."""
    import dataclasses
    from fp8lab.gemm import scaled_matmul
    from fp8lab.qtensor import QTensor
    if isinstance(a, QTensor) and isinstance(b, QTensor):
        out = scaled_matmul(dataclasses.replace(a), dataclasses.replace(b), accumulator=acc)
    else:
        a = a.dequantize() if isinstance(a, QTensor) else a
        b = b.dequantize() if isinstance(b, QTensor) else b
        out = a @ b
    return out if bias is None else out + bias


@pytest.mark.parametrize("name", LinearRecipe.names())
def test_the_fast_paths_change_no_bit_of_a_training_step(name, monkeypatch):
    """The fast paths (quantize_tensor's, the C kernels' values and dequantized operands handed to the GEMM, the
    decoded-once activation) give the general path's outputs, gradients and stats.

    Three steps of a two-layer stack (so delayed histories move and saturate), with shapes that exercise
    full and partial 128-blocks, compared with quantize_fast switched off and every GEMM through
    scaled_matmul.
    """
    import fp8lab.nn.linear as linear_mod

    def run():
        torch.manual_seed(1)
        layers = [Fp8Linear(256, 384, recipe=name), Fp8Linear(384, 200, recipe=name)]
        g = torch.Generator().manual_seed(2)
        seen = []
        for step in range(3):
            x = torch.randn(96, 256, generator=g) * (10.0 ** step)
            x.requires_grad_()
            y = layers[1](torch.relu(layers[0](x)))
            (y.square().sum() * 1e-3).backward()
            seen.append([y.detach().clone(), x.grad.clone()] + [p.grad.clone() for m in layers for p in m.parameters()])
            seen.append([m.stats for m in layers] + [m.state.as_dict() for m in layers])
            for m in layers:
                m.zero_grad()
        return seen

    fast = run()
    monkeypatch.setattr(linear_mod, "_gemm", _general_gemm)
    with fl.force_scaling_path("general"):  # quantize_tensor's fast paths off, and with them the values they give
        general = run()
    for f, g in zip(fast, general):
        for a, b in zip(f, g):
            if isinstance(a, torch.Tensor):
                assert torch.equal(a, b)
            else:
                assert a == b


@pytest.mark.parametrize("name", LinearRecipe.names())
def test_small_batches_give_the_same_bits_with_and_without_the_c_kernels(name):
    """1 to 8 tokens (and a few odd counts): the C-kernel path and the torch path agree bit for bit in y, dx, dW, db.

    A BLAS may pick its kernel, and so its order of summation, by the operands' layout when M is
    small (MKL did for 1 to 3 rows: up to 10 ulp apart while the C kernels handed a transposed
    view and the torch decode a contiguous copy). The GEMM now reads every operand's values in its
    codes' layout, which every path lays out alike (tests/test_scaling_paths.py), so the two paths
    give the product the same layout and the same bits; this sweeps the class over
    token counts, shapes with full and partial 128-blocks, and every preset.
    """
    from fp8lab.codec import ckernels
    from fp8lab.codec.paths import disable_paths
    if not ckernels.available():
        pytest.skip(f"no C kernels here: {ckernels.reason()}")
    for tokens in (1, 2, 3, 4, 5, 7, 8, 17):
        for k, n in ((128, 256), (256, 128), (384, 200)):
            g = torch.Generator().manual_seed(1000 * tokens + k)
            x, dy = torch.randn(tokens, k, generator=g), torch.randn(tokens, n, generator=g) * 1e-2
            got = []
            for off in (False, True):
                torch.manual_seed(3)
                lay = Fp8Linear(k, n, recipe=name)
                xx = x.clone().requires_grad_()
                if off:
                    with disable_paths("ckernel"):
                        y = lay(xx)
                        y.backward(dy)
                else:
                    y = lay(xx)
                    y.backward(dy)
                got.append([y.detach(), xx.grad, lay.weight.grad, lay.bias.grad])
            for a, b in zip(*got):
                assert torch.equal(a.view(torch.int32), b.view(torch.int32)), (name, tokens, k, n)


def test_the_layer_reaches_the_library_through_its_public_entry_points():
    """Fp8Linear speaks quantize_tensor and scaled_matmul (issue 20 §1): linear.py imports only the public packages
    (codec, gemm, scaling), QTensor and its own recipe module, at module level or inside functions."""
    import ast
    from pathlib import Path
    import fp8lab.nn.linear as linear_mod
    tree = ast.parse(Path(linear_mod.__file__).read_text())
    internal = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = "fp8lab" if node.level == 2 else "fp8lab.nn"
            internal.add(f"{base}.{node.module}" if node.module else base)
        elif isinstance(node, ast.Import):
            internal |= {a.name for a in node.names if a.name.startswith("fp8lab")}
    assert internal == {"fp8lab.codec", "fp8lab.gemm", "fp8lab.qtensor", "fp8lab.scaling", "fp8lab.nn.recipe"}


@pytest.mark.parametrize("faithful", sorted(__import__("fp8lab.nn", fromlist=["FAITHFUL"]).FAITHFUL))
def test_faithful_presets_are_their_exact_variants_with_the_sources_accumulation(faithful):
    """Each faithful preset casts as its exact-accumulation variant and accumulates as its source runs on Hopper:
    fprop fast accumulation (a 14-bit accumulator never promoted), dgrad and wgrad the split accumulator
    (promoted to FP32 every 128); its description and source cite the config fields."""
    from fp8lab.gemm import Accumulator
    from fp8lab.nn import FAITHFUL
    f, e = LinearRecipe.from_name(faithful), LinearRecipe.from_name(FAITHFUL[faithful])
    assert (f.input, f.weight, f.grad_output, f.loss_scaling, f.control) == (e.input, e.weight, e.grad_output, False, False)
    assert all(getattr(e, g).exact for g in ("fprop", "dgrad", "wgrad"))
    assert f.fprop == Accumulator(13, promote_every=None)
    assert f.dgrad == f.wgrad == Accumulator(13, promote_every=128)
    cites = ("_2X_ACC_FPROP = False", "_2X_ACC_DGRAD = _2X_ACC_WGRAD = True") if faithful.endswith("-te") else \
        ("gemm_config_output = Float8GemmConfig(use_fast_accum=True)", "gemm_config_grad_input", "gemm_config_grad_weight")
    assert all(c in f.source for c in cites) and all(c in f.description for c in cites)
    assert "exact FP32 accumulation" in e.description and "exact" not in f.description
    # the accumulators change the numbers: a layer's forward differs from the exact variant's, within FP8's error
    torch.manual_seed(3)
    x = torch.randn(64, 512) * 4
    lay_f, lay_e = Fp8Linear(512, 32, recipe=faithful), Fp8Linear(512, 32, recipe=FAITHFUL[faithful])
    lay_e.load_state_dict(lay_f.state_dict())
    yf, ye = lay_f(x), lay_e(x)
    assert not torch.equal(yf, ye) and float(fl.sqnr_db(ye.detach().numpy(), yf.detach().numpy())) > 30
