"""torch's own casts as fast paths, used only where tests prove them bit-identical to our codec.

Where torch's cast differs (its E4M3FN cast saturates; its E8M0 cast ignores the sign and maps 0
to 2^-127), a fix-up pass restores our (ml_dtypes) policy or the generic path is used instead.

>>> import torch
>>> encode(torch.tensor([1.0, 500.0]), __import__("fp8lab").get_format("e4m3"), False).tolist()
[56, 127]
"""

from __future__ import annotations

from ..formats import Format
from .backend import torch

__all__ = ["encode", "quantize", "NATIVE_DTYPES", "enabled", "cpu_via_numpy"]

#: fp8lab format name -> torch dtype name, for formats torch can cast to.
NATIVE_DTYPES = {
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz",
    "float8_e8m0fnu": "float8_e8m0fnu",
    "bfloat16": "bfloat16",
    "float16": "float16",
}

enabled = True  # tests switch this off to compare the generic torch path with the native one
#: CPU tensors share memory with numpy, so the numpy codec (table look-ups) serves them where torch has
#: no proven cast; GPU tensors always run the torch version of the algorithm. Tests switch it off.
cpu_via_numpy = True


def encode(x, fmt: Format, saturate: bool):
    """Codes of float32 tensor ``x`` via torch's cast, or None where no proven fast path exists.

    >>> encode(torch.tensor([3.0, 0.0]), __import__("fp8lab").get_format("e8m0"), False).tolist()
    [129, 255]
    """
    name = NATIVE_DTYPES.get(fmt.name)
    if not enabled or name is None or torch is None:
        return None
    dt = getattr(torch, name)
    isnan = torch.isnan(x)
    if fmt.bits == 16:
        codes = x.to(dt).view(torch.int16).to(torch.int32) & 0xFFFF
        codes = torch.where(isnan, fmt.nan_code | ((x.view(torch.int32) < 0).to(torch.int32) << 15), codes)
        if saturate:  # overflow and inf become +-max
            codes = torch.where((codes & 0x7FFF) == fmt.inf_code, (codes & 0x8000) | fmt.max_code, codes)
        return codes.to(torch.uint16)
    codes = x.to(dt).view(torch.uint8)
    if fmt.name == "float8_e4m3fn":
        if not saturate:  # torch saturates; ml_dtypes turns anything above the rounding threshold into NaN
            over = x.abs() > fmt.overflow_threshold  # 464 itself ties back to 448 (even mantissa)
            codes = torch.where(over, codes | 0x7F, codes)
        return codes
    if fmt.name == "float8_e5m2":
        sign = (x.view(torch.int32) < 0).to(torch.uint8) << 7
        codes = torch.where(isnan, fmt.nan_code | sign, codes)
        if saturate:
            codes = torch.where((codes & 0x7F) == fmt.inf_code, (codes & 0x80) | fmt.max_code, codes)
        return codes
    if fmt.name == "float8_e8m0fnu":
        # torch agrees with ml_dtypes on every positive input; it maps 0 to 2^-127 and drops the sign
        codes = torch.where(x > 0, codes, fmt.nan_code)
        if saturate:
            codes = torch.where((codes == fmt.nan_code) & (x > 0), fmt.max_code, codes)
        return codes
    if saturate:  # fnuz: torch does not saturate; let the generic path do it
        return None
    return codes


def quantize(x, fmt: Format, saturate: bool):
    """``decode(encode(x))`` of float32 tensor ``x`` through torch's casts, or None without a proven path.

    >>> quantize(torch.tensor([0.3, 500.0]), __import__("fp8lab").get_format("e4m3"), True).tolist()
    [0.3125, 448.0]
    """
    name = NATIVE_DTYPES.get(fmt.name)
    if not enabled or name is None or torch is None or fmt.name == "float8_e8m0fnu":
        return None
    if "fnuz" in fmt.name and saturate:
        return None
    if fmt.name == "float8_e4m3fn" and not saturate and cpu_via_numpy and x.device.type == "cpu":
        return None  # the fix-up pass costs more than the numpy table look-up here
    y = x.to(getattr(torch, name)).to(torch.float32)
    if fmt.name == "float8_e4m3fn" and not saturate:
        y = torch.where(x.abs() > fmt.overflow_threshold, float("nan"), y)
    elif saturate and fmt.has_inf:
        y = torch.clamp(y, -fmt.max, fmt.max)  # inf and overflow to +-max; NaN stays NaN
    return y
