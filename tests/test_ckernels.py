"""The C kernels (fp8lab/codec/ckernels.py) against torch's casts and the codec: the cast on every finite float32.

Oracles: torch's own float8 casts (an independent implementation) for the codes, the codec's bit-level
decode for the values, torch's reductions and counts for amax and underflow, and the torch path of
the training layer (``disable_paths("ckernel")``) for whole training steps.
"""

from __future__ import annotations

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import fp8lab as fl
from fp8lab.codec import ckernels, disable_paths, force_path
from fp8lab.codec.paths import which_path

pytestmark = pytest.mark.skipif(not ckernels.available(), reason=f"no C kernels here: {ckernels.reason()}")

CASTS = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "e4m3fnuz": torch.float8_e4m3fnuz,
         "e5m2fnuz": torch.float8_e5m2fnuz}


def _floats(bits: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(bits.astype(np.uint32).view(np.float32)).reshape(1, -1)


#: Every format the kernel encodes: torch's cast is the oracle where torch has the dtype, ml_dtypes' elsewhere.
SERVED = [f.name for f in fl.list_formats() if ckernels.encode_params(f) is not None]


def _oracle_cast(x: torch.Tensor, name: str) -> torch.Tensor:
    """The codes of x (|x| <= max) by torch's cast, or by ml_dtypes' for the formats torch lacks."""
    fmt = fl.get_format(name)
    torch_dtypes = {fl.get_format(n).name: dt for n, dt in CASTS.items()}
    if fmt.name in torch_dtypes:
        return x.to(torch_dtypes[fmt.name]).view(torch.uint8)
    return torch.from_numpy(x.numpy().astype(getattr(ml_dtypes, fmt.name)).view(np.uint8))


def _check_against_torch(x: torch.Tensor, name: str) -> None:
    """C codes == the oracle's cast where |x| <= max (saturation to max beyond), values == the codec's decode, bitwise."""
    fmt = fl.get_format(name)
    x = torch.where(torch.isfinite(x), x, torch.zeros(()))
    codes, values = ckernels.scaled_encode(x, torch.ones(1, 1), tuple(x.shape), fmt, values=True)
    want = _oracle_cast(x.clamp(-fmt.max, fmt.max), name)  # saturating, as the codec does
    bad = codes != want
    assert not bool(bad.any()), (name, x[bad][:4].tolist(), codes[bad][:4].tolist(), want[bad][:4].tolist())
    dec = fl.decode(codes, fmt)
    assert torch.equal(values.view(torch.int32), dec.view(torch.int32)), name


def test_the_kernel_serves_every_8_bit_float_format_with_subnormals():
    assert len(SERVED) >= 7 and {"float8_e3m4", "float8_e4m3b11fnuz", "float8_e4m3"} <= set(SERVED)


@pytest.mark.parametrize("name", SERVED)
def test_the_cast_matches_torch_on_a_sweep_of_every_exponent_and_the_rounding_boundaries(name):
    """Every float32 sign and exponent with 64 mantissas (the ends, around each FP8 rounding point, random),
    and every FP8 code's value, its neighbours one float32 ulp away and the midpoints to the next code, for every
    format the kernel encodes (torch's cast, or ml_dtypes' for E4M3 with infinities, E3M4 and E4M3B11FNUZ)."""
    rng = np.random.default_rng(0)
    top = np.arange(1 << 9, dtype=np.uint64) << 23                      # sign and exponent
    half = 1 << (23 - fl.get_format(name).mantissa_bits - 1)  # half of the float32 mantissa step FP8 keeps
    low = np.concatenate([[0, 1, (1 << 23) - 1], [half - 1, half, half + 1, 3 * half, 3 * half - 1, 3 * half + 1],
                          rng.integers(0, 1 << 23, 55)]).astype(np.uint64)
    bits = (top[:, None] | low[None, :]).ravel()
    vals = fl.decode(np.arange(256, dtype=np.uint8), name).astype(np.float32)
    vals = np.sort(vals[np.isfinite(vals)])
    mids = ((vals[1:].astype(np.float64) + vals[:-1]) / 2).astype(np.float32)
    near = np.concatenate([vals, mids, np.nextafter(vals, np.inf), np.nextafter(vals, -np.inf),
                           np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)]).view(np.uint32)
    _check_against_torch(_floats(np.concatenate([bits, near.astype(np.uint64)])), name)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", ["e4m3", "e5m2"])
def test_the_cast_matches_torch_on_every_finite_float32(name):
    """Every finite non-negative float32 (2^31 - 2^23 bit patterns), one binade (2^23 patterns) at a time: the C
    codes are torch's cast (saturating), and the values the C cast computes are the codec's table values of those
    codes. (The two formats training uses, about 35 s each. The sign is one bit the kernel copies; the sweep above
    checks negative values at every exponent, and the fnuz variants, whose parameters are the only difference.)"""
    fmt = fl.get_format(name)
    step = 1 << 23
    offsets = torch.arange(step, dtype=torch.int32)
    bits = torch.empty(1, step, dtype=torch.int32)
    for start in range(0, 1 << 31, step):
        if (start >> 23) & 0xFF == 0xFF:
            continue  # inf and NaN
        torch.add(offsets, start, out=bits[0])  # the binade's patterns
        x = bits.view(torch.float32)
        codes, values = ckernels.scaled_encode(x, torch.ones(1, 1), tuple(x.shape), fmt, values=True)
        assert torch.equal(codes, x.clamp_(-fmt.max, fmt.max).to(CASTS[name]).view(torch.uint8)), (name, hex(start))
        assert torch.equal(values.view(torch.int32), ckernels.table_decode(codes, fmt).view(torch.int32)), (name, hex(start))


@settings(max_examples=40, deadline=None)
@given(rows=st.sampled_from([1, 4, 32, 64]), cols=st.sampled_from([32, 64, 128]),
       block=st.sampled_from(["row", "col", "whole", "mx", "mxcol", "tile"]), name=st.sampled_from(list(CASTS)),
       log_scale=st.integers(-30, 20), pow2=st.booleans(), seed=st.integers(0, 2**16))
def test_the_scaled_cast_is_torch_dividing_clamping_and_casting(rows, cols, block, name, log_scale, pow2, seed):
    """codes(x / s) with a scale per block (rows, columns, whole, 32-element blocks either way, 2x16 tiles), the
    reciprocal form with power-of-two scales, and saturation: the same as torch's x / s, clamp_ to +-max, cast."""
    fmt = fl.get_format(name)
    br, bc = {"row": (1, cols), "col": (rows, 1), "whole": (rows, cols), "mx": (1, 32), "mxcol": (min(rows, 32), 1),
              "tile": (1 if rows == 1 else 2, 16)}[block]
    if rows % br or cols % bc:
        return
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g) * torch.exp2(torch.randint(-20, 20, (rows, cols), generator=g).float())
    s = torch.exp2(torch.randint(-3, 4, (rows // br, cols // bc), generator=g).float() + log_scale)
    if not pow2:
        s = s * (1 + torch.rand(s.shape, generator=g))
    t = x / s.repeat_interleave(br, 0).repeat_interleave(bc, 1)
    want = t.clamp(-fmt.max, fmt.max).to(CASTS[name]).view(torch.uint8)
    codes, values = ckernels.scaled_encode(x, s, (br, bc), fmt, reciprocal=pow2, values=True)
    assert torch.equal(codes, want)
    assert torch.equal(values.view(torch.int32), fl.decode(codes, fmt).view(torch.int32))


@settings(max_examples=60, deadline=None)
@given(rows=st.sampled_from([1, 4, 32]), cols=st.sampled_from([32, 96]), block=st.sampled_from(["row", "col", "whole", "b32"]),
       name=st.sampled_from(list(CASTS)), special=st.sampled_from([None, "inf", "nan", "zeros"]),
       transpose=st.booleans(), seed=st.integers(0, 2**16))
def test_the_measured_cast_is_the_cast_the_amax_and_the_flush_counts_of_separate_passes(rows, cols, block, name,
                                                                                        special, transpose, seed):
    """scaled_encode_measured: the codes and values of scaled_encode, the amax of block_amax, its finite flag, and the
    flush counts of flush_count, all from one walk over x (with scales that saturate some blocks)."""
    fmt = fl.get_format(name)
    br, bc = {"row": (1, cols), "col": (rows, 1), "whole": (rows, cols), "b32": (1, 32)}[block]
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g) * torch.exp2(torch.randint(-30, 12, (rows, cols), generator=g).float())
    if special == "zeros":
        x[:, : cols // 2] = 0.0
    elif special is not None:
        x[rows // 2, cols // 3] = float(special)
    s = torch.exp2(torch.randint(-8, 3, (rows // br, cols // bc), generator=g).float())
    codes, vals, amax, finite, counts = ckernels.scaled_encode_measured(x, s, (br, bc), fmt, values=True, flush=True,
                                                                        transpose=transpose)
    want_amax, want_finite = ckernels.block_amax(x, (br, bc))
    assert finite == want_finite
    if not finite:
        return
    assert np.array_equal(amax.view(np.uint32), want_amax.view(np.uint32))
    c0, v0 = ckernels.scaled_encode(x, s, (br, bc), fmt, values=True, transpose=transpose)
    assert torch.equal(codes, c0) and torch.equal(vals.view(torch.int32), v0.view(torch.int32))
    straight = c0.t().contiguous() if transpose else c0
    assert counts == ckernels.flush_count(x, straight, fmt)


@settings(max_examples=40, deadline=None)
@given(rows=st.sampled_from([1, 3, 32]), cols=st.sampled_from([1, 32, 96]), kind=st.sampled_from(["row", "col", "whole", "b32"]),
       special=st.sampled_from([None, "inf", "-inf", "nan", "-0"]), seed=st.integers(0, 2**16))
def test_block_amax_is_torch_s_and_reports_non_finite_values(rows, cols, kind, special, seed):
    br, bc = {"row": (1, cols), "col": (rows, 1), "whole": (rows, cols), "b32": (1, 32)}[kind]
    if rows % br or cols % bc:
        return
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g) * 100
    if special:
        x[torch.randint(0, rows, (1,), generator=g), torch.randint(0, cols, (1,), generator=g)] = float(special.replace("-0", "-0.0"))
    amax, finite = ckernels.block_amax(x, (br, bc))
    assert finite == bool(torch.isfinite(x).all())
    if finite:
        want = x.abs().reshape(rows // br, br, cols // bc, bc).amax(dim=(1, 3))
        assert np.array_equal(amax.view(np.uint32), want.numpy().view(np.uint32))  # +0.0 for zeros, never -0.0


@pytest.mark.parametrize("fmt", [f for f in fl.list_formats() if f.bits <= 8], ids=lambda f: f.name)
def test_the_table_decode_is_the_codec_s_for_every_code_of_every_8_bit_format(fmt):
    codes = torch.arange(1 << fmt.bits, dtype=torch.uint8)
    with force_path("bitlevel", "integer"):
        want = fl.decode(codes.numpy(), fmt)
    got = fl.decode(codes, fmt)
    assert which_path("decode", codes, fmt) == "ckernel"
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got.numpy()), nan)
    assert np.array_equal(got.numpy()[~nan].view(np.uint32), want[~nan].astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("name", SERVED)
def test_the_decode_from_the_bits_is_the_codec_s_table_bit_for_bit(name):
    """Every code of every format the cast serves decodes (fp8lab_arith_decode) to the float32 bits of the codec's
    table: normals, subnormals, both zeros, infinities, and NaN with its sign."""
    fmt = fl.get_format(name)
    codes = torch.arange(256, dtype=torch.uint8).reshape(16, 16)
    got = ckernels.table_decode(codes, fmt).view(torch.int32).reshape(-1)
    table = torch.from_numpy(np.asarray(ckernels._table(fmt))).view(torch.int32)
    assert torch.equal(got, table), [hex(int(c)) for c in torch.nonzero(got != table).reshape(-1)[:4]]
    want = fl.decode(codes.numpy(), fmt).astype(np.float32).reshape(-1)  # the codec's numpy decode, from its bits
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got.view(torch.float32).numpy()), nan)
    assert np.array_equal(got.numpy()[~nan], want[~nan].view(np.int32))


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 70), cols=st.integers(1, 70), row_kind=st.sampled_from(["each", "one"]),
       col_kind=st.sampled_from(["each", "one"]), seed=st.integers(0, 2**16))
def test_the_one_pass_epilogue_is_torch_s_two_multiplications(rows, cols, row_kind, col_kind, seed):
    """(out * sa) * sb in one C pass gives torch's out.mul_(sa).mul_(sb) bit for bit: scales per row or column or one
    broadcast scale, values from subnormal to overflowing, zeros of both signs, inf and NaN."""
    g = torch.Generator().manual_seed(seed)
    out = torch.randn(rows, cols, generator=g) * torch.exp2(torch.randint(-140, 120, (rows, cols), generator=g).float())
    out.view(-1)[:: 11] = float("inf")
    out.view(-1)[3:: 13] = float("nan")
    out.view(-1)[5:: 17] = -0.0

    def scales(n, kind, shape):
        s = torch.exp2(torch.randint(-130, 40, (n,), generator=g).float()) * (1 + torch.rand(n, generator=g))
        return s.reshape(shape) if kind == "each" else s[:1].reshape(1, 1).expand(*shape)

    sa, sb = scales(rows, row_kind, (rows, 1)), scales(cols, col_kind, (1, cols))
    want = out.clone().mul_(sa).mul_(sb)
    got = ckernels.scale_epilogue(out.clone(), sa, sb)
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))


def test_flush_counts_and_the_transposed_copy_are_torch_s():
    fmt = fl.get_format("e5m2")
    x = torch.randn(64, 96) * torch.exp2(torch.randint(-30, 5, (64, 96)).float())
    x[::7] = 0.0
    codes = fl.encode(x, fmt, saturate=True)
    nonzero, flushed = ckernels.flush_count(x, codes, fmt)
    assert nonzero == int(torch.count_nonzero(x))
    assert flushed == int(((x != 0) & (fl.decode(codes, fmt) == 0)).sum()) > 0
    assert torch.equal(ckernels.transposed(x), x.t().contiguous())
    for bad in (x.t(), x.double()):
        with pytest.raises(ValueError, match="contiguous float32"):
            ckernels.transposed(bad)


def test_flush_counts_hold_for_every_format_of_eight_bits_or_fewer():
    """The mask test finds exactly each format's zero codes: every code of every format of at most 8 bits (signed
    zeros, fnuz's single zero, integers, FP6, FP4, E8M0 without a zero), against decoding the codes, over sizes
    across the kernel's 65536-element chunks."""
    g = torch.Generator().manual_seed(5)
    names = sorted({f.name for f in fl.list_formats() if f.bits <= 8})
    assert len(names) >= 8
    for name in names:
        fmt = fl.get_format(name)
        for n in (1, 255, 65536, 65537 + 300):
            codes = torch.randint(0, 1 << fmt.bits, (n,), generator=g, dtype=torch.int64).to(torch.uint8)
            x = torch.randn(n, generator=g)
            x[torch.rand(n, generator=g) < 0.3] = 0.0
            x[:1] = -0.0
            vals = torch.from_numpy(np.asarray(fl.decode(codes.numpy(), fmt), dtype=np.float32))
            nz = (x != 0)
            assert ckernels.flush_count(x, codes, fmt) == (int(nz.sum()), int((nz & (vals == 0)).sum())), (name, n)


def test_value_flush_counts_and_the_tensor_amax_are_torch_s():
    """flush_count_values and fp8lab.scaling.tensor_amax (the 16-bit roles' statistics) against torch's own counts and
    max, over BF16 and FP16 roundings with signed zeros, sizes across the kernel's 65536-element chunk, and
    infs and NaNs (where the amax falls back to torch's NaN-propagating max); C kernels on and off."""
    from fp8lab.codec.paths import disable_paths
    from fp8lab.scaling import flushed_fraction, tensor_amax
    g = torch.Generator().manual_seed(11)
    for n in (1, 300, 65536, 65536 * 2 + 17):
        x = torch.randn(n, generator=g) * torch.exp2(torch.randint(-140, 20, (n,), generator=g).float())
        x[torch.rand(n, generator=g) < 0.2] = 0.0
        x[:1] = -0.0
        for dt in (torch.bfloat16, torch.float16):
            v = x.to(dt).float()
            nz = x != 0
            want = (int(nz.sum()), int((nz & (v == 0)).sum()))
            assert ckernels.flush_count_values(x, v) == want, (n, dt)
            frac = want[1] / want[0] if want[0] else 0.0
            assert flushed_fraction(x, v) == frac
            with disable_paths("ckernel"):
                assert flushed_fraction(x, v) == frac
        m = x.reshape(1, -1)
        assert tensor_amax(m) == float(x.abs().max())
        for bad in (float("inf"), float("-inf"), float("nan")):
            y = m.clone()
            y[0, -1] = bad
            got, want = tensor_amax(y), float(y.abs().max())
            assert got == want or (got != got and want != want), (n, bad)
    assert tensor_amax(torch.zeros(0, 3)) == 0.0 and tensor_amax(torch.ones(4, 3).t() * -2) == 2.0


def test_bad_operands_get_clear_errors():
    e4 = fl.get_format("e4m3")
    with pytest.raises(ValueError, match="whole blocks"):
        ckernels.scaled_encode(torch.zeros(4, 6), torch.ones(1, 1), (4, 4), e4)
    with pytest.raises(ValueError, match="whole blocks"):
        ckernels.scaled_encode(torch.zeros(4, 4).t(), torch.ones(1, 1), (4, 4), e4)
    with pytest.raises(RuntimeError, match="cannot encode float4_e2m1fn"):
        ckernels.scaled_encode(torch.zeros(4, 4), torch.ones(1, 1), (4, 4), fl.get_format("fp4"))
    assert ckernels.encode_params(fl.get_format("e8m0")) is None  # unsigned, no mantissa


@pytest.mark.parametrize("name", ["fp8-tensorwise-delayed", "fp8-tensorwise-current", "fp8-rowwise", "mxfp8",
                                  "fp8-blockwise", "fp8-unscaled", "fp8-e4m3-grads-unscaled"])
def test_a_training_step_is_the_same_with_and_without_the_c_kernels(name):
    """Two forward and backward passes of a layer (the second reads the first's delayed-scaling history):
    outputs, both gradients and every statistic are identical on the torch path."""
    def run():
        torch.manual_seed(0)
        lin = fl.nn.Fp8Linear(256, 128, recipe=name)
        out = []
        for i in range(2):
            x = (torch.randn(64, 256) * 10.0 ** (i - 1)).requires_grad_()
            y = lin(x)
            y.backward(torch.randn_like(y) * 1e-3)
            out.append((y.detach(), x.grad, lin.weight.grad.clone(), repr(lin.stats)))
        return out

    with_c = run()
    with disable_paths("ckernel"):
        without = run()
    for (ya, ga, wa, sa), (yb, gb, wb, sb) in zip(with_c, without):
        assert torch.equal(ya, yb) and torch.equal(ga, gb) and torch.equal(wa, wb) and sa == sb


def test_without_a_compiler_everything_runs_in_torch_with_the_same_results(tmp_path):
    """FP8LAB_NO_CKERNELS (as on a machine without gcc): no kernels, a reason, the half decode, the same QTensor."""
    code = (
        "import torch, fp8lab as fl\n"
        "from fp8lab.codec import ckernels\n"
        "from fp8lab.codec.paths import which_path\n"
        "x = torch.randn(64, 128, generator=torch.Generator().manual_seed(1))\n"
        "q = fl.quantize_tensor(x, 'e4m3', fl.scaling.AxisScaling(pow2=True))\n"
        "print(ckernels.available(), ckernels.reason(), which_path('decode', q.codes, 'e4m3'))\n"
        "torch.save((q.codes, q.scales), %r)\n")
    env = dict(os.environ, FP8LAB_NO_CKERNELS="1")
    out = subprocess.run([sys.executable, "-c", code % str(tmp_path / "off.pt")], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    assert out[0] == "False" and "FP8LAB_NO_CKERNELS" in " ".join(out) and out[-1] == "half"
    codes, scales = torch.load(tmp_path / "off.pt")
    x = torch.randn(64, 128, generator=torch.Generator().manual_seed(1))
    q = fl.quantize_tensor(x, "e4m3", fl.scaling.AxisScaling(pow2=True))
    assert torch.equal(codes, q.codes) and torch.equal(scales, q.scales)


def test_the_kernels_are_built_once_per_source_into_the_cache(tmp_path):
    """A fresh cache directory gets one library, named by a hash of the source, compiler and CPU; a second
    process reuses it."""
    env = dict(os.environ, FP8LAB_CACHE_DIR=str(tmp_path))
    code = "from fp8lab.codec import ckernels; print(ckernels.available())"
    for _ in range(2):
        assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                              check=True).stdout.strip() == "True"
    built = list(tmp_path.glob("fp8lab_kernels_*.so"))
    assert len(built) == 1 and not list(tmp_path.glob("*.tmp*"))


def test_the_cast_arguments_struct_has_one_layout_in_c_and_in_ctypes():
    """The scaled casts take their parameters as one struct (cast_args); ctypes' mirror has C's size and offsets."""
    got = ckernels.cast_args_layout()
    if got is None:
        pytest.skip(f"the C kernels are not available: {ckernels.reason()}")
    c, mirror = got
    assert len(c) == 21 and c == mirror
