"""The native path: ``torch._scaled_mm`` on float8 tensors, on the CPU (torch 2.13) or an sm_89/sm_90 GPU.

Our QTensor codes become torch float8 tensors by a zero-copy ``view`` (E4M3FN and E5M2 only: the
dtypes ``_scaled_mm`` takes), ``B`` is laid out column-major on a GPU as cuBLASLt wants (the CPU
kernel takes it row-major as well, with the same result, and saves the copy), and the scales are
passed in the layout each torch kernel recognises:

- **CPU**: always row-wise shapes, ``(M, 1)`` and ``(1, N)``, even for per-tensor scales. torch
  2.13 sends scalar (per-tensor) scales to a reference kernel at about 0.03 GFLOP/s, while row-wise
  scales take the oneDNN fast path (about float32-matmul speed), whose result is bitwise equal to
  dequantise-then-float32-matmul. Block scales are rejected by the CPU kernel.
- **CUDA**: per-tensor scales as one-element tensors (tensor-wise), otherwise row-wise; DeepSeek-V3
  block scales (1x128 for A with 128x128 or 1x128 for B) in the strides torch checks for, where the
  installed torch and the GPU support them (Hopper), else a ``NotImplementedError`` saying so.

The emulation applies the scales to the float32 product instead of to the operands, so the two
differ by float32 rounding (a few 1e-7 relative) unless the scales are powers of two, where they
agree bit for bit.

>>> native_available("cpu") is None
True
"""

from __future__ import annotations

from functools import lru_cache

from ..codec.backend import torch
from .checks import Problem

__all__ = ["native_available", "native", "NATIVE_FORMATS"]

#: fp8lab format names that torch._scaled_mm takes, with the torch dtype of each.
NATIVE_FORMATS = {"float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}


@lru_cache(maxsize=None)
def _why_not(device: str) -> str | None:
    if torch is None:
        return "torch is not installed"
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return f"torch {torch.__version__} has no torch._scaled_mm / float8 dtypes"
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            return "no CUDA device is available (torch.cuda.is_available() is False)"
        if torch.version.hip is None:
            cap = torch.cuda.get_device_capability(dev)
            if cap < (8, 9):
                name = torch.cuda.get_device_name(dev)
                return (f"{name} has compute capability {cap[0]}.{cap[1]}; FP8 torch._scaled_mm needs 8.9 "
                        "or higher (Ada 8.9, Hopper 9.0, Blackwell 10.0)")
    try:  # a tiny probe: the op may exist and still not run on this device or build
        a = torch.ones(16, 16, device=dev).to(torch.float8_e4m3fn)
        b = torch.ones(16, 16, device=dev).to(torch.float8_e4m3fn).t()
        s = torch.ones(16, 1, device=dev)
        out = torch._scaled_mm(a, b, s, s.t().contiguous(), out_dtype=torch.float32)
        if float(out[0, 0]) != 16.0:
            return f"torch._scaled_mm on {dev} gave {float(out[0, 0])} for a probe whose answer is 16"
    except Exception as e:  # noqa: BLE001 - any failure means "not available", with torch's reason
        return f"torch._scaled_mm does not run on {dev}: {type(e).__name__}: {str(e).splitlines()[0]}"
    return None


def native_available(device=None) -> str | None:
    """None when the native ``torch._scaled_mm`` path can run on ``device`` (default CPU), else why not.

    >>> native_available(), native_available("cuda") is None or isinstance(native_available("cuda"), str)
    (None, True)
    """
    dev = torch.device(device if device is not None else "cpu") if torch is not None else device
    return _why_not(str(dev))


def _float8(codes, fmt_name: str, which: str):
    name = NATIVE_FORMATS.get(fmt_name)
    if name is None:
        raise ValueError(f"backend='native' needs {which} in float8_e4m3fn or float8_e5m2 (the FP8 dtypes of "
                         f"torch._scaled_mm), got {fmt_name}; use backend='emulated' for other formats")
    if codes.dtype != torch.uint8:
        codes = codes.to(torch.uint8)
    return codes.view(getattr(torch, name))


def _block_scales(p: Problem):
    """``(scale_a, scale_b)`` in the layouts torch's DeepSeek-style kernels check, or None if not such blocks."""
    (am, ak), (bk, bn) = p.a_block, p.b_block
    if p.k_block != 128 or min(ak, p.k) != 128 or min(bk, p.k) != 128:
        return None
    if am == 1:                      # 1x128 tiles: (M, K/128), "outer-dim-major" (stride 1 along M)
        sa = p.a_scales.t().contiguous().t()
    elif am == 128:                  # 128x128 blocks: (M/128, K/128) row-major
        sa = p.a_scales.contiguous()
    else:
        return None
    if bn == 1:                      # per-column 128x1 tiles: (K/128, N) row-major
        sb = p.b_scales.contiguous()
    elif bn == 128:                  # 128x128 blocks: (K/128, N/128) column-major
        sb = p.b_scales.t().contiguous().t()
    else:
        return None
    if am == 128 and bn == 128:      # torch pairs 128x128 only with 1x128 tiles
        return None
    return sa, sb


def native(p: Problem, out_dtype: str):
    """``qa @ qb`` by ``torch._scaled_mm`` on the operands' device, as a torch tensor of ``out_dtype``.

    >>> import torch
    >>> from fp8lab.codec import encode
    >>> from fp8lab.qtensor import QTensor
    >>> from fp8lab.gemm.checks import prepare
    >>> q = QTensor(encode(torch.ones(2, 32), "e4m3"), torch.full((2, 1), 0.5), "e4m3", block=(1, 32))
    >>> native(prepare(q, QTensor(encode(torch.ones(32, 3), "e4m3"), torch.ones(1, 1), "e4m3")), "float32").tolist()
    [[16.0, 16.0, 16.0], [16.0, 16.0, 16.0]]
    """
    dev = p.device
    a = _float8(p.a_codes, p.a_format.name, "qa").contiguous()
    b = _float8(p.b_codes, p.b_format.name, "qb")
    # cuBLASLt wants B column-major; the CPU kernel takes either, and row-major saves a copy (same bits)
    b = b.contiguous() if dev.type == "cpu" else b.t().contiguous().t()
    why = native_available(dev)
    if why is not None:
        raise RuntimeError(f"the native path cannot run: {why}")
    odt = getattr(torch, out_dtype)
    if p.m == 0 or p.n == 0 or p.k == 0:
        return torch.zeros(p.m, p.n, dtype=odt, device=dev)
    if p.n_kblocks == 1:
        per_tensor = p.a_scales.numel() == 1 and p.b_scales.numel() == 1
        if per_tensor and dev.type != "cpu":   # tensor-wise: what cuBLASLt does best
            sa, sb = p.a_scales.reshape(1, 1).contiguous(), p.b_scales.reshape(1, 1).contiguous()
        else:                                  # row-wise shapes: on the CPU the fast path even for per-tensor
            sa, sb = p.sa.contiguous(), p.sb.contiguous()
        try:
            return torch._scaled_mm(a, b, sa, sb, out_dtype=odt)
        except (RuntimeError, ValueError, NotImplementedError) as e:
            kind = "tensor-wise" if sa.numel() == 1 else "row-wise"
            raise RuntimeError(f"torch._scaled_mm on {dev} rejected {p.a_format.name} x {p.b_format.name} "
                               f"({p.m}x{p.k} @ {p.k}x{p.n}, {kind} scales, out_dtype {out_dtype}): "
                               f"{str(e).splitlines()[0]}") from e
    supported = ("per-tensor and row-wise scales everywhere; DeepSeek-V3 blocks (qa 1x128 tiles with qb 128x128 "
                 "blocks or 128x1 tiles, or qa 128x128 with qb 128x1) only where torch and the GPU support them")
    scales = _block_scales(p)
    if scales is None:
        raise NotImplementedError(f"torch._scaled_mm has no kernel for blocks {p.a_block} x {p.b_block} "
                                  f"(K-block {p.k_block}); it takes {supported}. Use backend='emulated'")
    try:
        return torch._scaled_mm(a, b, scales[0], scales[1], out_dtype=odt)
    except (RuntimeError, ValueError, NotImplementedError) as e:
        raise NotImplementedError(f"torch {torch.__version__} on {dev} does not support block scales "
                                  f"{p.a_block} x {p.b_block} in torch._scaled_mm ({str(e).splitlines()[0]}); "
                                  f"it takes {supported}. Use backend='emulated'") from e
