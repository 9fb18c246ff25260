"""The GEMM's operand decoding: the codec's decode, into reusable per-thread buffers on the CPU.

On the CPU the GEMM decodes into per-thread workspace buffers that are reused from call to call:
a fresh 16 MiB tensor per operand costs page faults that make a 2048^3 emulated GEMM about 15%
slower. The buffers grow to the largest operand seen; :func:`release_workspace` frees them.

>>> import torch
>>> from fp8lab.registry import get_format
>>> decode_values(torch.tensor([0x38, 0x7E, 0xB8, 0x01], dtype=torch.uint8), get_format("e4m3"), slot="doc").tolist()
[1.0, 448.0, -1.0, 0.001953125]
"""

from __future__ import annotations

import threading

from ..codec import ckernels
from ..codec.api import decode_tensor
from ..codec.backend import torch, transposed_layout
from ..codec.paths import path_policy
from ..codec.shift import shift_decodable, shift_decode
from ..formats import Format

__all__ = ["fast_decode", "shift_decodable", "decode_values", "workspace", "release_workspace", "values_like_codes"]

_local = threading.local()


def workspace(slot: str, numel: int, device=None):
    """A reusable flat int32 buffer of ``numel`` elements for ``slot`` (per thread; CPU only, else fresh).

    >>> workspace("doc", 4).shape, workspace("doc", 2).data_ptr() == workspace("doc", 4).data_ptr()
    (torch.Size([4]), True)
    """
    if device is not None and getattr(device, "type", None) != "cpu" and torch.device(device).type != "cpu":
        return torch.empty(numel, dtype=torch.int32, device=device)  # the CUDA caching allocator does this job
    buffers = _local.__dict__.setdefault("buffers", {})
    buf = buffers.get(slot)
    if buf is None or buf.numel() < numel:
        buf = buffers[slot] = torch.empty(numel, dtype=torch.int32)
    return buf[:numel]


def release_workspace() -> None:
    """Free this thread's decode buffers (they are kept between GEMMs to avoid page faults).

    >>> release_workspace()
    """
    _local.__dict__.pop("buffers", None)


def decode_values(codes, fmt: Format, slot: str | None = None):
    """Float32 values of ``codes`` (torch) by the codec's decode (bit shifting for 8-bit signed floats).

    With ``slot``, a CPU decode goes into that reusable :func:`workspace` buffer: the caller must be
    done with the result before the next decode into the same slot.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> decode_values(torch.tensor([56, 0x7E], dtype=torch.uint8), get_format("e4m3")).tolist()
    [1.0, 448.0]
    """
    buf = workspace(slot, codes.numel(), codes.device) if slot is not None else None
    return decode_tensor(codes, fmt, out=buf)


fast_decode = shift_decode  #: the GEMM's name for :func:`fp8lab.codec.shift.shift_decode`


def values_like_codes(v, codes):
    """``v`` laid out as ``codes`` are: contiguous, or a transposed view of a contiguous matrix.

    Every operand reaches the GEMM's matmul in its codes' layout, whichever path made its values
    (held from the cast, or decoded here, which keeps the codes' layout): a BLAS may sum in an
    order that depends on the operands' layout (MKL does for 1 to 3 rows, up to 10 ulp apart), so
    one layout per operand is what makes the paths agree bit for bit. The layout follows the
    codes, so a transposed QTensor (a view) costs no copy. A copy is made only where ``v`` differs,
    a float32 CPU matrix by the C kernels' tiled copy (faster than torch's here).

    >>> import torch
    >>> codes = torch.zeros(3, 2, dtype=torch.uint8).t()
    >>> v = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> w = values_like_codes(v, codes); w.tolist() == v.tolist(), w.stride()
    (True, (1, 2))
    >>> values_like_codes(v.t(), codes.t()).is_contiguous()
    True
    """
    want_t = transposed_layout(codes)
    if transposed_layout(v) == want_t and (want_t or v.is_contiguous()):
        return v
    if want_t:
        return _contiguous(v.t()).t()
    return _contiguous(v)


def _contiguous(v):
    """A contiguous copy of ``v`` (``v`` itself if it is); a transposed float32 CPU matrix by the C kernels' tiled copy."""
    if v.is_contiguous():
        return v
    if v.ndim == 2 and v.is_cpu and v.dtype == torch.float32 and v.t().is_contiguous() and \
            "ckernel" not in path_policy()[1] and ckernels.available():
        return ckernels.transposed(v.t())
    return v.contiguous()
