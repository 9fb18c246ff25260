"""``QTensor``: codes + scales + format + scaling recipe, the one object passed between layers.

Scales are stored *blockwise*: ``scales`` has the same number of dimensions as the tensor, and
``scales.shape[i] == ceil(shape[i] / block[i])``. A per-tensor scale is a block as large as the
tensor (scales shape ``(1, 1)`` for a matrix), one scale per row is ``block == (1, K)`` (scales
``(M, 1)``), DeepSeek-V3's activation tiles are ``block == (1, 128)`` and its weight blocks
``(128, 128)``. ``x ≈ decode(codes) * scales`` broadcast over each block.

>>> import numpy as np
>>> from fp8lab.codec import encode
>>> q = QTensor(encode(np.array([[1.0, 2.0]]), "e4m3"), np.ones((1, 1), np.float32), "e4m3", block=(1, 2))
>>> q.dequantize().tolist(), q.bits_per_element
([[1.0, 2.0]], 24.0)
"""

from __future__ import annotations

import math
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .codec import decode
from .codec.backend import is_torch, torch
from .formats import Format
from .registry import get_format
from .validation import check_block

__all__ = ["QTensor", "QuantInfo", "expand_blocks"]


def expand_blocks(scales: Any, block: tuple[int, ...], shape: tuple[int, ...]):
    """Repeat blockwise ``scales`` over each block and crop to ``shape`` (numpy or torch).

    >>> expand_blocks(np.array([[1.0, 2.0]]), (1, 2), (1, 3)).tolist()
    [[1.0, 1.0, 2.0]]
    """
    out = scales
    for axis, b in enumerate(block):
        if b != 1:
            out = torch.repeat_interleave(out, b, dim=axis) if is_torch(out) else np.repeat(out, b, axis=axis)
    index = tuple(slice(0, n) for n in shape)
    return out[index]


_CORE_KEYS = ("amax", "nonfinite_blocks", "saturated_blocks", "overflow")


@dataclass(frozen=True, eq=False)
class QuantInfo(Mapping):
    """What quantizing a tensor reported: typed fields, also readable as a mapping (``q.info["overflow"]``).

    Optional fields are None where the recipe has nothing to say, and then absent from the mapping
    (``"scale_codes" in q.info`` is True for MX and NVFP4 only). Values live on the host.

    >>> info = QuantInfo(amax=3.0, overflow=True)
    >>> info["overflow"], info.saturated_blocks, "scale_codes" in info
    (True, 0, False)
    """

    amax: float = 0.0  #: finite amax of the whole tensor
    nonfinite_blocks: int = 0  #: blocks holding inf or NaN
    saturated_blocks: int = 0  #: blocks whose values the saturating cast clamped
    overflow: bool = False  #: any block saturated
    nonfinite_mask: Any = None  #: bool per block, where any block is non-finite
    scale_codes: Any = None  #: the scales' own codes (E8M0 for MX, E4M3 for NVFP4)
    tensor_scale: float | None = None  #: NVFP4's second-level FP32 scale
    amax_used: float | None = None  #: delayed scaling: the history's amax the scale was fitted to
    step: int | None = None  #: delayed scaling: how many amaxes the history held before this call
    nonzero: int | None = None  #: with quantize_tensor(count_flushed=True): the input's nonzero elements
    flushed: int | None = None  #: ... and how many of them the cast flushed to zero (the underflow's numerator)

    present: tuple[str, ...] | None = field(default=None, repr=False)  #: keys the mapping shows (None: the non-None ones)

    def __post_init__(self) -> None:
        if self.present is None:
            keep = _CORE_KEYS + tuple(k for k in self._names() if k not in _CORE_KEYS and getattr(self, k) is not None)
            object.__setattr__(self, "present", keep)
        else:
            names = self._names()
            unknown = [k for k in self.present if k not in names]
            if unknown:
                raise ValueError(f"QuantInfo has no field {sorted(unknown)[0]!r}")

    @classmethod
    def from_dict(cls, d: dict) -> "QuantInfo":
        """The info of a recipe's dict: every key given is shown, even one whose value is None.

        >>> QuantInfo.from_dict({"amax": 2.0, "amax_used": None})["amax_used"] is None
        True
        """
        return cls(**d, present=tuple(dict.fromkeys((*_CORE_KEYS, *d))))

    @classmethod
    def of(cls, amax: float, nonfinite_blocks: int, saturated_blocks: int, *, nonfinite_mask: Any = None,
           **extra: Any) -> "QuantInfo":
        """The one builder of a cast's report, for every path of ``quantize_tensor``: ``overflow`` is
        ``saturated_blocks > 0``, ``nonfinite_mask`` is kept where given, ``extra`` holds the recipe's own fields.

        >>> i = QuantInfo.of(3.0, 0, 2, amax_used=4.0); i.overflow, list(i)
        (True, ['amax', 'nonfinite_blocks', 'saturated_blocks', 'overflow', 'amax_used'])
        """
        d = {"amax": float(amax), "nonfinite_blocks": int(nonfinite_blocks), "saturated_blocks": int(saturated_blocks),
             "overflow": bool(saturated_blocks)}
        if nonfinite_mask is not None:
            d["nonfinite_mask"] = nonfinite_mask
        d.update(extra)
        names = cls._names()
        if not all(k in names for k in d):  # an unknown field: the constructor says which
            return cls.from_dict(d)
        # what from_dict builds, without the constructor's checks (the keys are fields): made for every cast
        info = object.__new__(cls)
        info.__dict__.update(_DEFAULTS, **d, present=tuple(dict.fromkeys((*_CORE_KEYS, *d))))
        return info

    def __getitem__(self, key: str) -> Any:
        if key not in self.present:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(self.present)

    def __len__(self) -> int:
        return len(self.present)

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        names = cls.__dict__.get("_field_names")
        if names is None:  # computed once per class (dataclasses.fields is slow, and QTensors are made often)
            names = tuple(f.name for f in fields(cls) if f.name != "present")
            setattr(cls, "_field_names", names)
        return names

    def replace(self, **changes: Any) -> "QuantInfo":
        """A copy with some fields changed.

        >>> QuantInfo().replace(overflow=True).overflow
        True
        """
        present = self.present + tuple(k for k in changes if k not in self.present)
        return dataclasses.replace(self, **changes, present=present)


#: Every QuantInfo field's default, for QuantInfo.of's direct construction.
_DEFAULTS = {f.name: f.default for f in fields(QuantInfo) if f.name != "present"}


class _Held:
    """Float32 values a cast computed for a QTensor's codes, shared by the QTensor and its transposes (dropped once)."""

    __slots__ = ("values", "dequantized")

    def __init__(self, values: Any, dequantized: bool) -> None:
        self.values, self.dequantized = values, dequantized


@dataclass(frozen=True, eq=False)
class QTensor:
    """A quantized tensor: integer ``codes`` of ``format`` and float32 blockwise ``scales``.

    ``scale_format`` is the format the scales are stored in (it sets ``nbytes``: float32 for
    DeepSeek-V3-style FP32 scales, ``e8m0`` for MX and UE8M0, ``e4m3`` for NVFP4 block scales);
    ``tensor_scale`` is a second-level FP32 scale already folded into ``scales`` (NVFP4), counted
    once in ``nbytes``. ``zero_point`` (asymmetric INT quantization) is blockwise like ``scales``:
    ``x ≈ (decode(codes) - zero_point) * scales``.

    >>> import numpy as np
    >>> QTensor(np.zeros((2, 4), np.uint8), np.ones((2, 1), np.float32), "e4m3", block=(1, 4)).nbytes
    16
    """

    codes: Any
    scales: Any
    format: Format
    scaling: Any = None
    block: tuple[int, ...] = ()
    scale_format: Format | str = "float32"
    tensor_scale: float | None = None
    zero_point: Any = None
    info: QuantInfo = field(default_factory=QuantInfo)
    dtype: str = "float32"  #: what :meth:`dequantize` returns: float32, or float64 for float64 sources

    #: the values its cast computed, kept for the GEMMs that read it: (holder, transposed) or None (not a field)
    _hold = None

    def __post_init__(self) -> None:
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 - frozen dataclass
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"QTensor.dtype is 'float32' or 'float64', got {self.dtype!r}")
        set_("format", get_format(self.format))
        set_("scale_format", get_format(self.scale_format))
        if isinstance(self.info, dict):
            set_("info", QuantInfo.from_dict(self.info))
        elif not isinstance(self.info, QuantInfo):
            raise TypeError(f"QTensor.info is a QuantInfo (or a dict of its fields), got {type(self.info).__name__}")
        shape = tuple(self.codes.shape)
        block = self.block or tuple(max(n, 1) for n in shape)  # none given: one scale for everything
        set_("block", check_block(block, "QTensor.block", allow_empty=not shape))
        if len(self.block) != len(shape):
            raise ValueError(f"block {self.block} needs one entry per dimension of codes {shape}")
        want = tuple(math.ceil(n / b) if n else 0 for n, b in zip(shape, self.block))
        got = tuple(self.scales.shape)
        if got != want:
            raise ValueError(f"scales have shape {got}, but codes {shape} in blocks {self.block} need {want}")
        if is_torch(self.codes) != is_torch(self.scales):
            raise TypeError("codes and scales must both be numpy arrays or both be torch tensors")

    @classmethod
    def _trusted(cls, codes: Any, scales: Any, format: Format, *, scaling: Any, block: tuple[int, ...],
                 scale_format: Format | str, tensor_scale: float | None, info: "QuantInfo | dict",
                 dtype: str = "float32") -> "QTensor":
        """The QTensor the constructor would build from parts its maker guarantees valid, without checking them again.

        For the fast path of ``quantize_tensor`` (``scaling/fast.py``), which makes thousands of
        QTensors per training step from shapes it has checked; ``tests/test_scaling_fast.py`` compares
        every field with the general path's.

        >>> q = QTensor._trusted(np.zeros((1, 2), np.uint8), np.ones((1, 1), np.float32), get_format("e4m3"),
        ...                      scaling=None, block=(1, 2), scale_format="float32", tensor_scale=None, info={"amax": 0.0})
        >>> q.info.amax, q.scale_format.name, q.block
        (0.0, 'float32', (1, 2))
        """
        q = object.__new__(cls)
        put = object.__setattr__
        for name, value in (("codes", codes), ("scales", scales), ("format", format), ("scaling", scaling),
                            ("block", block), ("scale_format", get_format(scale_format)), ("tensor_scale", tensor_scale),
                            ("zero_point", None),
                            ("info", info if isinstance(info, QuantInfo) else QuantInfo.from_dict(info)), ("dtype", dtype)):
            put(q, name, value)
        return q

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the tensor (and of ``codes``).

        >>> QTensor(np.zeros(3, np.uint8), np.ones(1, np.float32), "e4m3").shape
        (3,)
        """
        return tuple(self.codes.shape)

    @property
    def numel(self) -> int:
        """Number of elements.

        >>> QTensor(np.zeros((2, 3), np.uint8), np.ones((1, 1), np.float32), "e4m3").numel
        6
        """
        return int(math.prod(self.shape))

    def values(self):
        """The decoded element values before scaling (float32).

        >>> QTensor(np.array([56], np.uint8), np.array([2.0], np.float32), "e4m3").values().tolist()
        [1.0]
        """
        return decode(self.codes, self.format)

    def hold_values(self, values: Any = None, *, dequantized: bool = False) -> "QTensor":
        """Keep float32 values of the codes for the GEMMs that read this QTensor (torch only); returns ``self``.

        ``values`` are what the cast computed in the same pass (``quantize_tensor(..., keep_values=)``),
        laid out as ``codes``; by default the codes are decoded now, once, for several GEMMs.
        ``dequantized=True`` says they hold value times scale (``dequantize()``'s float32 bits).
        ``scaled_matmul`` reads them instead of decoding the codes again (the same bits), and
        :meth:`transpose` shares them. They are a cache, never part of the QTensor's value.

        >>> import torch
        >>> q = QTensor(torch.tensor([[56, 64]], dtype=torch.uint8), torch.ones(1, 1), "e4m3").hold_values()
        >>> q.held_values()[0].tolist(), q.T.held_values()[0].tolist()
        ([[1.0, 2.0]], [[1.0], [2.0]])
        """
        if not is_torch(self.codes):
            raise TypeError("hold_values keeps torch tensors; a numpy QTensor decodes when asked")
        v = self.values() if values is None else values
        if tuple(v.shape) != self.shape or v.dtype != torch.float32:
            raise ValueError(f"held values are float32 of the codes' shape {self.shape}, got {v.dtype} {tuple(v.shape)}")
        object.__setattr__(self, "_hold", (_Held(v, bool(dequantized)), False))
        return self

    def held_values(self) -> "tuple[Any, bool] | None":
        """``(values, dequantized)`` kept by :meth:`hold_values` (transposed with the QTensor), or None.

        >>> import torch
        >>> QTensor(torch.zeros(1, 2, dtype=torch.uint8), torch.ones(1, 1), "e4m3").held_values() is None
        True
        """
        h = self._hold
        if h is None or h[0].values is None:
            return None
        v = h[0].values
        return (v.t() if h[1] else v), h[0].dequantized

    def drop_values(self) -> None:
        """Forget the held values, here and in every transpose sharing them (a GEMM that scaled them in place does this).

        >>> import torch
        >>> q = QTensor(torch.zeros(1, 2, dtype=torch.uint8), torch.ones(1, 1), "e4m3").hold_values(); t = q.T
        >>> q.drop_values(); t.held_values() is None
        True
        """
        if self._hold is not None:
            self._hold[0].values = None

    def expanded_scales(self):
        """``scales`` repeated to the tensor's shape.

        >>> QTensor(np.zeros(3, np.uint8), np.array([2.0], np.float32), "e4m3").expanded_scales().tolist()
        [2.0, 2.0, 2.0]
        """
        return expand_blocks(self.scales, self.block, self.shape)

    def dequantize(self):
        """Values ``decode(codes) * scales`` with the tensor's shape (numpy or torch), in :attr:`dtype`.

        A tensor quantized from float64 dequantizes in float64, so values beyond float32's range
        (whose scale float32 holds) come back.

        >>> QTensor(np.array([56], np.uint8), np.array([2.0], np.float32), "e4m3").dequantize().tolist()
        [2.0]
        """
        v = self.values()
        s = self.expanded_scales()
        if self.dtype == "float64":
            v, s = (t.double() for t in (v, s)) if is_torch(v) else (v.astype(np.float64), s.astype(np.float64))
        if self.zero_point is not None:
            v = v - expand_blocks(self.zero_point, self.block, self.shape)
        return v * s

    @property
    def nbytes(self) -> int:
        """Bytes to store codes (packed at ``format.bits`` each), scales and any tensor scale.

        >>> QTensor(np.zeros((1, 32), np.uint8), np.ones((1, 1), np.float32), "fp4", block=(1, 32), scale_format="e8m0").nbytes
        17
        """
        bits = self.numel * self.format.bits + int(math.prod(self.scales.shape)) * self.scale_format.bits
        if self.zero_point is not None:
            bits += int(math.prod(self.zero_point.shape)) * self.format.bits
        if self.tensor_scale is not None:
            bits += 32
        return math.ceil(bits / 8)

    @property
    def bits_per_element(self) -> float:
        """Storage cost per element in bits, scales included (4.25 for MXFP4, 8.25 for 1x128 FP8 + FP32).

        >>> QTensor(np.zeros((1, 128), np.uint8), np.ones((1, 1), np.float32), "e4m3", block=(1, 128)).bits_per_element
        8.25
        """
        return 8 * self.nbytes / self.numel if self.numel else 0.0

    def transpose(self) -> "QTensor":
        """The transposed matrix: codes and blockwise scales transposed together, the block reversed.

        A (1, 128)-tiled activation becomes (128, 1)-tiled and a 128x128-blocked weight stays
        128x128, each element keeping its scale, so ``q.transpose().dequantize() == q.dequantize().T``
        exactly. The backward GEMMs use it for the weight (dgrad takes ``W`` along its other axis);
        DeepSeek-V3 instead *re-quantizes* activations 128x1 for wgrad, so that K-blocks run along the
        GEMM's reduction (see ``fp8lab.nn``).

        >>> q = QTensor(np.array([[56, 64]], np.uint8), np.array([[1.0, 2.0]], np.float32), "e4m3", block=(1, 1))
        >>> q.transpose().dequantize().tolist(), q.transpose().block
        ([[1.0], [4.0]], (1, 1))
        """
        if len(self.shape) != 2:
            raise ValueError(f"transpose needs a matrix (2 dimensions), got shape {self.shape}")
        # torch codes (and zero points) are seen transposed, a view: the values decoded from them, and
        # the held ones, keep that layout, so neither a transpose nor the GEMM copies them
        view = (lambda a: a.t()) if is_torch(self.codes) else (lambda a: np.ascontiguousarray(a.T))
        t = (lambda a: a.t().contiguous()) if is_torch(self.codes) else (lambda a: np.ascontiguousarray(a.T))
        info = self.info
        if info.nonfinite_mask is not None:
            info = info.replace(nonfinite_mask=np.ascontiguousarray(np.asarray(info.nonfinite_mask).T))
        if info.scale_codes is not None and np.ndim(info.scale_codes) == 2:
            info = info.replace(scale_codes=np.ascontiguousarray(np.asarray(info.scale_codes).T))
        zp = view(self.zero_point) if self.zero_point is not None else None
        out = object.__new__(type(self))  # the transpose of a valid QTensor is valid: built without checking again
        put = object.__setattr__
        for name, value in (("codes", view(self.codes)), ("scales", t(self.scales)), ("format", self.format),
                            ("scaling", self.scaling), ("block", self.block[::-1]), ("scale_format", self.scale_format),
                            ("tensor_scale", self.tensor_scale), ("zero_point", zp), ("info", info),
                            ("dtype", self.dtype)):
            put(out, name, value)
        if self._hold is not None:  # the held values, seen transposed (a view: no copy)
            object.__setattr__(out, "_hold", (self._hold[0], not self._hold[1]))
        return out

    @property
    def T(self) -> "QTensor":  # noqa: N802 - numpy's and torch's name
        """Shorthand for :meth:`transpose`.

        >>> QTensor(np.zeros((2, 3), np.uint8), np.ones((1, 1), np.float32), "e4m3").T.shape
        (3, 2)
        """
        return self.transpose()

    def __repr__(self) -> str:
        kind = "torch" if is_torch(self.codes) else "numpy"
        recipe = type(self.scaling).__name__ if self.scaling is not None else "None"
        return (f"QTensor(shape={self.shape}, format={self.format.name}, scaling={recipe}, block={self.block}, "
                f"scales={tuple(self.scales.shape)} {self.scale_format.name}, {self.bits_per_element:.3f} bits/elem, {kind})")
