"""torch in, torch out: our torch path against ml_dtypes, and against torch's own casts where they agree."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fp8lab as fl
from fp8lab.codec import disable_paths

from .conftest import ML_DTYPES
from .test_codec_oracle import e8m0_quirk, edge_inputs

TORCH_NAMES = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]


def sample(name: str) -> np.ndarray:
    u = np.random.default_rng(11).integers(0, 2**32, size=300_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([u.view(np.float32), edge_inputs(name),
                        np.arange(2**16, dtype=np.uint16).view(np.float16).astype(np.float32)])
    return x[~e8m0_quirk(x)] if name == "float8_e8m0fnu" else x


@pytest.fixture(params=[(), ("torch_cast",), ("torch_cast", "via_numpy")], ids=["native-casts", "cpu-via-numpy", "torch-ops"])
def path(request):
    """Each way a tensor can be served: torch's proven casts, the numpy codec (CPU), torch ops (any device)."""
    with disable_paths(*request.param):
        yield request.param


@pytest.mark.parametrize("saturate", [False, True])
@pytest.mark.parametrize("name", sorted(ML_DTYPES) + ["float32"])
def test_torch_path_equals_numpy_path(name, saturate, path):
    x = sample(name) if name != "float32" else sample("float16")
    ours_np = fl.encode(x, name, saturate=saturate)
    ours_t = fl.encode(torch.from_numpy(x), name, saturate=saturate)
    assert isinstance(ours_t, torch.Tensor) and ours_t.shape == ours_np.shape
    got = ours_t.to(torch.int64).numpy() if ours_t.dtype != torch.uint8 else ours_t.numpy()
    fmt = fl.get_format(name)
    diff = got != ours_np
    if fmt.bits <= 16 and diff.any():
        diff &= ~(np.isnan(fl.decode(got.astype(fmt.code_dtype), fmt)) & np.isnan(fl.decode(ours_np, fmt)))
    assert not diff.any(), f"{name} sat={saturate}: x={x[diff][:4]} torch={got[diff][:4]} numpy={ours_np[diff][:4]}"


@pytest.mark.parametrize("name", ["float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"])
def test_agrees_with_torch_native_cast_where_policies_match(name):
    x = torch.from_numpy(sample(name))
    x = x[~torch.isnan(x)]  # NaN payloads differ (torch: 0x7F, ml_dtypes: 0x7E for E5M2)
    with disable_paths("torch_cast"):
        ours = fl.encode(x, name)
    theirs = x.to(getattr(torch, name)).view(torch.uint8)
    assert torch.equal(ours, theirs)


def test_torch_e4m3fn_cast_saturates_where_ours_gives_nan():
    """torch's E4M3FN cast saturates (inf too); ours follows ml_dtypes unless saturate=True."""
    x = torch.tensor([464.0, 465.0, 1e6, float("inf"), -float("inf")])
    assert x.to(torch.float8_e4m3fn).float().tolist() == [448.0, 448.0, 448.0, 448.0, -448.0]
    assert fl.encode(x, "e4m3").tolist() == [0x7E, 0x7F, 0x7F, 0x7F, 0xFF]
    assert torch.equal(fl.encode(x, "e4m3", saturate=True), x.to(torch.float8_e4m3fn).view(torch.uint8))


def test_torch_e8m0_cast_differs_on_zero_and_negatives():
    x = torch.tensor([0.0, -1.0, -13.0, 3.0])
    theirs = x.to(torch.float8_e8m0fnu).view(torch.uint8).tolist()
    ours = fl.encode(x, "e8m0").tolist()
    assert theirs[0] == 0 and ours[0] == 0xFF  # torch: 0 -> 2^-127; ml_dtypes/ours: NaN (E8M0 has no zero)
    assert theirs[1:3] == [127, 131] and ours[1:3] == [0xFF, 0xFF]  # torch drops the sign; ours: NaN
    assert theirs[3] == ours[3] == 129  # both round 3 up to 4


@pytest.mark.parametrize("saturate", [False, True])
@pytest.mark.parametrize("name", ["e4m3", "e5m2", "fp4", "ue8m0", "bf16", "fp16", "e3m2", "e4m3fnuz", "int8", "int4"])
def test_torch_decode_and_quantize(name, saturate, path):
    x = torch.from_numpy(sample("float8_e4m3fn")[-70000:])  # ties, edges, every float16 pattern
    q = fl.quantize(x, name, saturate=saturate)
    assert isinstance(q, torch.Tensor) and q.dtype == torch.float32
    np.testing.assert_array_equal(q.numpy(), fl.quantize(x.numpy(), name, saturate=saturate))
    codes = fl.encode(x, name, saturate=saturate)
    np.testing.assert_array_equal(fl.decode(codes, name).numpy(), q.numpy())


def test_torch_dtypes_shapes_and_non_contiguous():
    x = torch.randn(6, 8, dtype=torch.float64)
    for t in (x, x.t(), x.to(torch.bfloat16), x.to(torch.float16), x[:, ::2]):
        codes = fl.encode(t, "e4m3")
        assert codes.shape == t.shape and codes.dtype == torch.uint8
        expected = fl.encode(t.to(torch.float32).contiguous().numpy(), "e4m3")
        np.testing.assert_array_equal(codes.numpy(), expected)
    assert fl.quantize(x.to(torch.bfloat16), "e4m3").dtype == torch.bfloat16
    assert fl.encode(torch.tensor(1.0), "e4m3").shape == ()
    assert fl.encode(torch.empty(0, 3), "e4m3").shape == (0, 3)
    assert fl.encode(torch.tensor([1.0]), "bf16").dtype == torch.uint16


def test_torch_errors():
    with pytest.raises(TypeError, match="complex"):
        fl.encode(torch.ones(2, dtype=torch.complex64), "e4m3")
    with pytest.raises(TypeError, match="integer tensor"):
        fl.decode(torch.ones(2), "e4m3")
    with pytest.raises(ValueError, match="out of range"):
        fl.decode(torch.tensor([16]), "fp4")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_stay_on_device():
    x = torch.randn(1000, device="cuda")
    codes = fl.encode(x, "e4m3")
    assert codes.device == x.device
    np.testing.assert_array_equal(codes.cpu().numpy(), fl.encode(x.cpu().numpy(), "e4m3"))
    assert fl.quantize(x, "e8m0").device == x.device
