"""Blocks: pad a tensor to whole blocks, view it as ``(nb0, b0, nb1, b1, ...)``, reduce and scale per block.

Every scaling recipe is "one scale per block": per-tensor is one block as large as the tensor,
per-row is ``(1, K)``, DeepSeek-V3's tiles are ``(1, 128)`` and ``(128, 128)``, MX is ``(1, 32)``.
A shape that does not divide by the block is padded by repeating its last element along each
axis (so the padding never changes a block's max, min or amax) and cropped back afterwards.
numpy arrays and torch tensors both work; the elementwise work stays on the tensor's device.

>>> import numpy as np
>>> x = np.array([[1.0, -5.0, 2.0], [0.5, 0.25, -3.0]], np.float32)
>>> block_reduce(x, (1, 2), "amax").tolist()
[[5.0, 2.0], [0.5, 3.0]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..codec.backend import is_torch, torch
from ..validation import check_block

__all__ = ["check_block", "normalize_block", "whole_block", "axis_block", "num_blocks", "pad_to_blocks", "block_reduce",
           "apply_scales", "to_numpy", "like"]


def whole_block(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The whole tensor as one block (an empty axis counts as 1).

    >>> whole_block((4, 0))
    (4, 1)
    """
    return tuple(max(int(n), 1) for n in shape)


def axis_block(shape: tuple[int, ...], axis: int, size: int | None = None, owner: str = "recipe") -> tuple[int, ...]:
    """``size`` elements (the whole extent when None) along ``axis``, 1 on every other axis.

    >>> axis_block((4, 64), -1, 32), axis_block((4, 64), 0)
    ((1, 32), (4, 1))
    """
    nd = len(shape)
    if not -nd <= axis < nd:
        raise ValueError(f"{owner}(axis={axis}) does not fit a tensor of shape {shape} ({nd} dimensions)")
    a = axis % nd
    n = max(int(shape[a]), 1) if size is None else int(size)
    return tuple(n if i == a else 1 for i in range(nd))


def normalize_block(block: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Check ``block`` and give it one entry per dimension of ``shape`` (leading dimensions get 1).

    A block written for fewer dimensions applies to the trailing ones; a longer block may drop
    leading entries only if they are 1, so ``(1, 128)`` also works on a vector.

    >>> normalize_block((1, 128), (2, 4, 256)), normalize_block((1, 128), (300,))
    ((1, 1, 128), (128,))
    """
    block = check_block(block)
    nd = len(shape)
    if len(block) > nd:
        extra = block[: len(block) - nd]
        if any(b != 1 for b in extra):
            raise ValueError(f"block {block} has {len(block)} dimensions but the tensor has shape {shape}")
        block = block[len(block) - nd :]
    return (1,) * (nd - len(block)) + block


def num_blocks(shape: tuple[int, ...], block: tuple[int, ...]) -> tuple[int, ...]:
    """Blocks along each axis, ``ceil(shape[i] / block[i])`` (the shape of ``scales``).

    >>> num_blocks((4096, 4000), (128, 128))
    (32, 32)
    """
    return tuple(math.ceil(n / b) for n, b in zip(shape, block))


def pad_to_blocks(x: Any, block: tuple[int, ...]) -> Any:
    """Pad ``x`` to whole blocks by repeating the last element along each axis (no copy if none is needed).

    >>> pad_to_blocks(np.array([1.0, 2.0, 3.0]), (2,)).tolist()
    [1.0, 2.0, 3.0, 3.0]
    """
    pads = [(-n) % b for n, b in zip(x.shape, block)]
    if not any(pads):
        return x
    if not is_torch(x):
        return np.pad(x, [(0, p) for p in pads], mode="edge")
    for axis, (n, p) in enumerate(zip(x.shape, pads)):
        if p:
            idx = torch.arange(n + p, device=x.device).clamp_(max=n - 1)
            x = x.index_select(axis, idx)
    return x.contiguous()


def _view(x: Any, block: tuple[int, ...]) -> tuple[Any, tuple[int, ...]]:
    """``x`` (already padded) reshaped to (nb0, b0, nb1, b1, ...), dropping block axes of size 1."""
    shape, axes = [], []
    for n, b in zip(x.shape, block):
        if b == 1:
            shape.append(n)
        else:
            shape += [n // b, b]
            axes.append(len(shape) - 1)
    return x.reshape(shape), tuple(axes)


def _amax_last(a: np.ndarray) -> np.ndarray:
    """Max over the last axis by halving it (numpy reduces short inner axes slowly)."""
    while a.shape[-1] > 8 and a.shape[-1] % 2 == 0:
        h = a.shape[-1] // 2
        a = np.maximum(a[..., :h], a[..., h:])
    return a.max(axis=-1)


def block_reduce(x: Any, block: tuple[int, ...], op: str) -> Any:
    """Reduce each block of ``x`` with ``op`` (``"amax"``, ``"max"``, ``"min"``); shape ``num_blocks``.

    NaN propagates (a block holding NaN reduces to NaN); ``x`` must already be padded or
    divisible, or it is padded here.

    >>> block_reduce(np.array([[1.0, -4.0], [2.0, 3.0]]), (2, 1), "min").tolist()
    [[1.0, -4.0]]
    """
    x = pad_to_blocks(x, block)
    nb = num_blocks(tuple(x.shape), block)
    v, axes = _view(x, block)
    if not axes:
        out = abs(v) if op == "amax" else v
        return out.reshape(nb)
    if is_torch(v):
        a = v.abs() if op == "amax" else v
        red = {"amax": torch.amax, "max": torch.amax, "min": torch.amin}[op]
        return red(a, dim=axes).reshape(nb)
    if op == "amax":
        a = np.abs(v)
        if axes[-1] == v.ndim - 1:
            a = _amax_last(a)
            axes = axes[:-1]
        out = a.max(axis=axes) if axes else a
    else:
        out = v.max(axis=axes) if op == "max" else v.min(axis=axes)
    return np.asarray(out).reshape(nb)


def apply_scales(x: Any, block: tuple[int, ...], scales: Any, offset: Any = None) -> Any:
    """``x / scales (+ offset)`` with one scale per block, cropped back to ``x``'s shape.

    >>> apply_scales(np.array([[2.0, 4.0, 8.0]], np.float32), (1, 2), np.array([[2.0, 4.0]], np.float32)).tolist()
    [[1.0, 2.0, 2.0]]
    """
    shape = tuple(x.shape)
    xp = pad_to_blocks(x, block)
    v, _ = _view(xp, block)
    bshape = []
    for n, b in zip(scales.shape, block):
        bshape += [n] if b == 1 else [n, 1]
    out = v / scales.reshape(bshape)
    if offset is not None:
        out = out + offset.reshape(bshape)
    out = out.reshape(xp.shape)
    if tuple(xp.shape) != shape:
        out = out[tuple(slice(0, n) for n in shape)]
    return out


def to_numpy(a: Any) -> np.ndarray:
    """A numpy copy/view of a small array or tensor (per-block statistics live on the host).

    >>> to_numpy([1, 2]).tolist()
    [1, 2]
    """
    if is_torch(a):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def like(a: np.ndarray, ref: Any) -> Any:
    """``a`` (numpy) as the same kind as ``ref``: a tensor on ``ref``'s device, or numpy.

    >>> like(np.ones(2, np.float32), np.zeros(1)).dtype
    dtype('float32')
    """
    if is_torch(ref):
        return torch.from_numpy(np.asarray(a, order="C")).to(ref.device)  # keeps a 0-d array 0-d
    return a
