"""Values a cast computed, held by its QTensor (QTensor.hold_values) and read by scaled_matmul: the same bits as
decoding the codes, shared with transposes, and handed over (scaled in place, then dropped) only where asked."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest
import torch

import fp8lab as fl
from fp8lab.scaling import AxisScaling, BlockScaling, MXScaling, TensorScaling

RECIPES = [TensorScaling(), AxisScaling(pow2=True), BlockScaling((1, 128)), MXScaling(scale_rounding="rceil")]


def _q(x, recipe, keep):
    return fl.quantize_tensor(x, "e4m3", recipe, keep_values=keep)


@pytest.mark.parametrize("ra", range(len(RECIPES)))
@pytest.mark.parametrize("rb", range(len(RECIPES)))
@pytest.mark.parametrize("keep", ["values", "dequantized"])
@pytest.mark.parametrize("consume", [(False, False), (True, True)])
def test_held_values_give_the_bits_of_decoding_the_codes(ra, rb, keep, consume):
    g = torch.Generator().manual_seed(ra * 10 + rb)
    x, w = torch.randn(24, 256, generator=g) * 3, torch.randn(40, 256, generator=g)
    qa, qw = _q(x, RECIPES[ra], keep), _q(w, RECIPES[rb], keep)
    qb = qw.transpose()
    plain = fl.scaled_matmul(dataclasses.replace(qa), dataclasses.replace(qb))  # copies hold nothing
    before = [None if q.held_values() is None else q.held_values()[0].clone() for q in (qa, qb)]
    got = fl.scaled_matmul(qa, qb, consume=consume)
    assert torch.equal(got.view(torch.int32), plain.view(torch.int32))
    kblocked = ra >= 2 or rb >= 2  # 1x128 and MX blocks split K: the GEMM scales operands, not the result
    for q, b, c in zip((qa, qb), before, consume):
        if b is None:
            continue
        h = q.held_values()
        if c and (keep == "values" or kblocked):
            assert h is None  # read by this GEMM and handed over: dropped
        else:
            assert h is not None and torch.equal(h[0], b)  # kept, never modified
    if consume[1] and before[1] is not None and (keep == "values" or kblocked):
        assert qw.held_values() is None  # the transpose shared the holder: dropped for both


def test_the_held_values_are_what_the_codes_decode_to_and_transpose_as_views():
    x = torch.randn(8, 128)
    q = _q(x, TensorScaling(), "values")
    if q.held_values() is None:
        pytest.skip("the C kernels are not available: no values are computed in the cast")
    v, deq = q.held_values()
    assert not deq and torch.equal(v, q.values())
    t = q.transpose()
    assert torch.equal(t.held_values()[0], q.values().t()) and t.held_values()[0].data_ptr() == v.data_ptr()
    d = _q(x, BlockScaling((1, 32)), "dequantized")
    assert d.held_values()[1] and torch.equal(d.held_values()[0], d.dequantize())


def test_dequantized_values_are_not_used_where_the_scales_go_to_the_result():
    """With one K-block the GEMM scales the result, so value-times-scale operands would be scaled twice: ignored."""
    x, w = torch.randn(8, 64) * 5, torch.randn(16, 64)
    qa = fl.quantize_tensor(x, "e4m3", TensorScaling()).hold_values(fl.quantize_tensor(x, "e4m3", TensorScaling()).dequantize(),
                                                                     dequantized=True)
    qb = fl.quantize_tensor(w, "e4m3", TensorScaling()).transpose()
    assert torch.equal(fl.scaled_matmul(qa, qb), fl.scaled_matmul(dataclasses.replace(qa), qb))


def test_hold_values_checks_what_it_is_given():
    q = fl.quantize_tensor(torch.randn(4, 32), "e4m3", TensorScaling())
    with pytest.raises(ValueError, match="float32 of the codes' shape"):
        q.hold_values(torch.zeros(4, 31))
    with pytest.raises(ValueError, match="float32"):
        q.hold_values(torch.zeros(4, 32, dtype=torch.float64))
    import numpy as np
    with pytest.raises(TypeError, match="torch"):
        fl.quantize_tensor(np.ones((2, 2), np.float32), "e4m3").hold_values()
    with pytest.raises(ValueError, match="keep_values"):
        fl.quantize_tensor(torch.ones(2, 2), "e4m3", keep_values="yes")
    with pytest.raises(TypeError, match="consume"):
        fl.scaled_matmul(q, q.transpose(), consume=(1, 0))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_a_transpose_keeps_every_field_of_the_qtensor(backend):
    """``transpose`` builds the QTensor without the constructor: every dataclass field must come across (transposed
    where it is per block), so a field added to QTensor later cannot be dropped silently."""
    import numpy as np

    codes = np.arange(12, dtype=np.uint8).reshape(3, 4)
    scales = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    zp = np.ones((3, 2), np.uint8)
    if backend == "torch":
        codes, scales, zp = torch.from_numpy(codes), torch.from_numpy(scales), torch.from_numpy(zp)
    q = fl.QTensor(codes, scales, "int8", scaling=TensorScaling(), block=(1, 2), scale_format="e8m0",
                   tensor_scale=0.5, zero_point=zp, info={"amax": 3.0, "scale_codes": np.zeros((3, 2), np.uint8)},
                   dtype="float64")
    t = q.transpose()
    names = {f.name for f in dataclasses.fields(fl.QTensor)}
    assert names == {"codes", "scales", "format", "scaling", "block", "scale_format", "tensor_scale", "zero_point",
                     "info", "dtype"}, "a new QTensor field: make transpose carry it"
    for name in names:
        a, b = getattr(q, name), getattr(t, name)
        if name in ("codes", "scales", "zero_point"):
            assert tuple(b.shape) == tuple(a.shape)[::-1] and (np.asarray(b).T == np.asarray(a)).all(), name
        elif name == "block":
            assert b == a[::-1]
        elif name == "info":
            assert b.amax == a.amax and (np.asarray(b.scale_codes) == np.asarray(a.scale_codes).T).all()
        else:
            assert b == a, name
    assert np.array_equal(np.asarray(t.dequantize()), np.asarray(q.dequantize()).T)


@pytest.mark.parametrize("ra", range(len(RECIPES)))
@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("kernels", [True, False])
def test_a_bias_in_the_epilogue_is_the_fp32_result_plus_the_bias_then_rounded(ra, out_dtype, exact, kernels):
    """scaled_matmul(..., bias=b) == (the FP32 result + b) rounded to out_dtype, bit for bit: per-tensor, per-row,
    1x128 and MX scales, exact and limited accumulators, with the C kernels' one-pass epilogue and without."""
    from fp8lab.codec import disable_paths
    from fp8lab.gemm import Accumulator

    g = torch.Generator().manual_seed(ra)
    x, w = torch.randn(24, 256, generator=g) * 3, torch.randn(40, 256, generator=g)
    b = torch.randn(40, generator=g) * 10
    qa, qb = _q(x, RECIPES[ra], "values"), _q(w, RECIPES[ra], "values").transpose()
    acc = Accumulator() if exact else Accumulator(mantissa_bits=13, promote_every=32)
    with contextlib.ExitStack() as stack:
        if not kernels:
            stack.enter_context(disable_paths("ckernel"))
        want = (fl.scaled_matmul(dataclasses.replace(qa), dataclasses.replace(qb), accumulator=acc) + b)
        got = fl.scaled_matmul(qa, qb, out_dtype, accumulator=acc, bias=b)
    assert torch.equal(got, want.to(getattr(torch, out_dtype)))


def test_a_bias_of_the_wrong_length_is_a_clear_error():
    q = _q(torch.ones(2, 32), TensorScaling(), None)
    with pytest.raises(ValueError, match="vector of N = 2 elements"):
        fl.scaled_matmul(q, q.transpose(), bias=torch.ones(3))
