"""The ways ``quantize_tensor`` can serve a call, as one declared table, and the one selector that picks among them.

As :mod:`fp8lab.codec.paths` does for the codec, one floor down: every call of ``quantize_tensor``
becomes a :class:`ScalingRequest` (recipe, format, backend, device, dtype, shape, memory layout);
:data:`SCALING_PATHS` lists the paths in order of preference, each saying through ``why_not`` when
it applies; :func:`select` takes the first that does. Every path gives the general path's QTensor
field for field (``tests/test_scaling_fast.py`` and ``tests/test_scaling_paths.py`` compare them);
they differ in speed only. A fast path that meets an inf, a NaN or a scale out of range at run time
steps aside to ``general``, which reports it.

- ask which path a call takes: :func:`which_path` (:func:`path_table` for the whole table);
- force one: ``with force_path("general"):`` (the general path, for a test or to see it at work);
- rule some out: ``with disable_paths("fused_band"):``.

Both hold per thread (context variables), as the codec's do. Forcing or disabling codec paths
(``fp8lab.codec.force_path``/``disable_paths``) is seen here too: the fast paths need torch's
cast (codec path ``torch_cast``), and the C kernel paths the codec's ``ckernel``.

>>> import torch
>>> from fp8lab.scaling.recipes import TensorScaling
>>> which_path(torch.ones(8, 128), "e4m3", TensorScaling()) in ("fused_band", "torch")
True
>>> with force_path("general"):
...     which_path(torch.ones(8, 128), "e4m3", TensorScaling())
'general'
>>> which_path(torch.ones(8, 100), "e4m3", BlockScaling((1, 128)))
'general'
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..codec import ckernels
from ..codec.backend import is_torch, torch, transposed_layout
from ..codec.native import cast_for
from ..codec.paths import Request, path_policy, select as select_codec_path
from ..formats import FloatFormat, Format
from ..registry import get_format
from .base import Recipe
from .blocks import num_blocks
from .delayed import DelayedScaling
from .mx import MXScaling
from .recipes import AxisScaling, BlockScaling, TensorScaling

__all__ = ["ScalingRequest", "ScalingPath", "SCALING_PATHS", "FAST_RECIPES", "select", "request_for", "which_path",
           "force_path", "disable_paths", "path_table", "path_names", "scaling_policy"]

#: The recipe classes the fast paths serve (exactly these: a subclass may change a rule).
FAST_RECIPES = (TensorScaling, AxisScaling, BlockScaling, MXScaling, DelayedScaling)


@dataclass(frozen=True)
class ScalingRequest:
    """What a ``quantize_tensor`` call asks for: everything a path's applicability depends on.

    >>> ScalingRequest(TensorScaling(), get_format("e4m3"), "torch", "cpu", "float32", (8, 128)).transposed
    False
    """

    recipe: Recipe
    fmt: Format
    backend: str  #: "torch" or "numpy"
    device: str  #: torch device type ("cpu", "cuda", "meta"); "cpu" for numpy
    dtype: str  #: the input's dtype name
    shape: tuple[int, ...]
    transposed: bool = False  #: a matrix laid out as the transpose of a contiguous one (worked in that layout)


# ----- what the fast paths need: the blocks' layout, torch's cast, the C kernels --------------------
@dataclass(frozen=True)
class _Plan:
    """Where the blocks of one recipe lie in a tensor of one shape and memory layout (a pure function of those).

    >>> _plan(BlockScaling((1, 128)), (4, 256), False).nb
    (4, 2)
    """

    block: tuple[int, ...]   #: the recipe's block for the tensor
    bblock: tuple[int, ...]  #: the block in the memory layout (turned for a transposed matrix)
    view: tuple[int, ...]    #: the blocked view of the memory layout (nb0, b0, nb1, b1, ..., axes of size-1 blocks kept)
    axes: tuple[int, ...]    #: the view's within-block axes (reduced for the amax)
    nb: tuple[int, ...]      #: blocks per axis of the tensor (the shape of ``scales``)
    nbb: tuple[int, ...]     #: blocks per axis of the memory layout
    whole: "bool"            #: one block holds the whole tensor
    divisor: tuple[int, ...]  #: the shape the layout's scales take to divide the view


def _make_plan(recipe: Recipe, shape: tuple[int, ...], flip: bool) -> _Plan | None:
    block = recipe.block_for(shape)
    if any(n % b for n, b in zip(shape, block)):
        return None  # partial blocks are padded by the general path
    base_shape = shape[::-1] if flip else shape
    bblock = block[::-1] if flip else block
    view: list[int] = []
    axes: list[int] = []
    divisor: list[int] = []
    for n, b in zip(base_shape, bblock):  # as blocks._view lays them out
        if b == 1:
            view.append(n)
            divisor.append(n)
        else:
            view += [n // b, b]
            axes.append(len(view) - 1)
            divisor += [n // b, 1]
    whole = all(n == 1 for i, n in enumerate(view) if i not in axes)
    return _Plan(tuple(block), tuple(bblock), tuple(view), tuple(axes), num_blocks(shape, block), num_blocks(base_shape, bblock),
                whole, tuple(divisor))


@functools.lru_cache(maxsize=4096)
def _cached_plan(recipe: Recipe, shape: tuple[int, ...], flip: bool) -> _Plan | None:
    return _make_plan(recipe, shape, flip)


def _plan(recipe: Recipe, shape: tuple[int, ...], flip) -> _Plan | None:
    """The :class:`_Plan` of ``recipe`` for ``shape`` (None: partial blocks), cached per recipe value.

    >>> _plan(BlockScaling((1, 128)), (4, 100), False) is None
    True
    """
    try:
        return _cached_plan(recipe, shape, flip)
    except TypeError:  # an unhashable field value: planned afresh
        return _make_plan(recipe, shape, flip)


def cast_dtype(fmt: Format, device_type: str):
    """torch's dtype for ``fmt`` when the codec's saturating encode of a float32 tensor is torch's cast, else None.

    >>> cast_dtype(get_format("e4m3"), "cpu"), cast_dtype(get_format("fp4"), "cpu")
    (torch.float8_e4m3fn, None)
    """
    return _cast_dtype_under(fmt, device_type, *path_policy())


@functools.lru_cache(maxsize=256)
def _cast_dtype_under(fmt: Format, device_type: str, forced: Any, disabled: Any):
    if not isinstance(fmt, FloatFormat):
        return None
    cast = cast_for(fmt)
    if cast is None or cast.signless or fmt.bits > 8:
        return None
    if select_codec_path(Request("encode", fmt, "torch", "nearest", True, device_type, "float32")).name != "torch_cast":
        return None
    return getattr(torch, cast.dtype)


def kernel_for(fmt: Format, device_type: str) -> bool:
    """Whether the C kernels can do the element work for ``fmt`` here (CPU, a format they encode, codec ``ckernel`` not off).

    >>> kernel_for(get_format("e4m3"), "cuda")
    False
    """
    return _kernel_under(fmt, device_type, *path_policy())


@functools.lru_cache(maxsize=256)
def _kernel_under(fmt: Format, device_type: str, forced: Any, disabled: Any) -> bool:
    return device_type == "cpu" and forced is None and "ckernel" not in disabled and ckernels.available() \
        and ckernels.encode_params(fmt) is not None


def band_rule(recipe: Recipe) -> str | None:
    """The C kernels' fused scale rule for ``recipe`` (its scales computed as its own ``compute_scales`` does), or None.

    >>> band_rule(MXScaling(scale_rounding="rceil")), band_rule(AxisScaling(pow2=True)), band_rule(TensorScaling())
    ('mx_rceil', 'pow2', 'float')
    >>> band_rule(MXScaling()) is None
    True
    """
    if type(recipe) is MXScaling and recipe.scale_rounding == "rceil":
        return "mx_rceil"  # Transformer Engine's MXFP8
    if type(recipe) in (TensorScaling, AxisScaling, BlockScaling):
        # torchao's rowwise and DeepSeek-V3.1's UE8M0 tiles (pow2); per-tensor current scaling, DeepSeek-V3's tiles
        return "pow2" if recipe.pow2 else "float"
    return None


# ----- the table -----------------------------------------------------------------------------
def _fast(r: ScalingRequest) -> str | None:
    """Why none of the fast paths serves ``r`` (None: they may)."""
    if r.backend != "torch":
        return "numpy input: the fast paths work on torch tensors"
    if type(r.recipe) not in FAST_RECIPES:
        return (f"serves exactly {', '.join(c.__name__ for c in FAST_RECIPES)} (a subclass may change a rule), "
                f"not {type(r.recipe).__name__}")
    if r.dtype != "float32":
        return f"float32 tensors only, got {r.dtype}"
    if not r.shape:
        return "a 0-d tensor is quantized as one element"
    if r.device == "meta":
        return "a meta tensor has no values to scale"
    if not all(r.shape):
        return "an empty tensor"
    if cast_dtype(r.fmt, r.device) is None:
        return f"the saturating encode of {r.fmt.name} here is not torch's cast (codec path torch_cast)"
    if _plan(r.recipe, r.shape, r.transposed) is None:
        return "the blocks do not divide the shape (the general path pads)"
    return None


def _torch(r: ScalingRequest) -> str | None:
    return _fast(r)


def _ckernel(r: ScalingRequest) -> str | None:
    why = _fast(r)
    if why is not None:
        return why
    if len(r.shape) != 2:
        return "the C kernels take matrices"
    if not kernel_for(r.fmt, r.device):
        if r.device != "cpu":
            return "the C kernels run on the CPU"
        return (f"the C kernels are off or cannot encode {r.fmt.name} here "
                f"({ckernels.reason() or 'codec path ckernel forced away or disabled'})")
    return None


def _fused_band(r: ScalingRequest) -> str | None:
    why = _ckernel(r)
    if why is not None:
        return why
    if band_rule(r.recipe) is None:
        return "fuses the float and power-of-two scales of per-tensor, row, column and block scaling, and MX rceil"
    return None


@dataclass(frozen=True)
class ScalingPath:
    """One way to serve ``quantize_tensor``: its name, what it is, and when it applies.

    >>> SCALING_PATHS[-1].name, SCALING_PATHS[-1].applies(ScalingRequest(TensorScaling(), get_format("e4m3"), "numpy", "cpu", "float64", (3,)))
    ('general', None)
    """

    name: str
    description: str
    why_not: Callable[[ScalingRequest], "str | None"]  #: None when the path serves the request, else the reason

    def applies(self, req: ScalingRequest) -> str | None:
        """None if this path serves ``req``, else why not.

        >>> SCALING_PATHS[0].applies(ScalingRequest(TensorScaling(), get_format("e4m3"), "numpy", "cpu", "float32", (2, 2)))
        'numpy input: the fast paths work on torch tensors'
        """
        return self.why_not(req)


#: Every way to serve ``quantize_tensor``, in order of preference.
SCALING_PATHS: tuple[ScalingPath, ...] = (
    ScalingPath("fused_band", "one C call, band of rows by band: amax, the recipe's scale rule and the cast "
                "(per-tensor, row, column, block scales, float or power-of-two; MX rceil; ckernels.band_encode)",
                _fused_band),
    ScalingPath("ckernel", "two C passes: the blocks' amax (with a finite check), then x / scale cast "
                "(ckernels.block_amax, scaled_encode); delayed scaling, whose scale comes from its history, "
                "in one walk that measures the amax as it casts (scaled_encode_measured)", _ckernel),
    ScalingPath("torch", "a handful of torch operations: blocked amax, one division, a clamp where a block "
                "saturates, torch's cast (scaling/fast.py)", _torch),
    ScalingPath("general", "block_stats -> compute_scales -> finalize: padding, inf and NaN, float64, zero points, "
                "every recipe and format (scaling/base.py)", lambda r: None),
)

_BY_NAME = {p.name: p for p in SCALING_PATHS}
_forced: contextvars.ContextVar[frozenset | None] = contextvars.ContextVar("fp8lab_scaling_forced", default=None)
_disabled: contextvars.ContextVar[frozenset] = contextvars.ContextVar("fp8lab_scaling_disabled", default=frozenset())


def path_names() -> tuple[str, ...]:
    """The names of the scaling paths, in order of preference.

    >>> path_names()
    ('fused_band', 'ckernel', 'torch', 'general')
    """
    return tuple(_BY_NAME)


def _check_names(names: tuple[str, ...]) -> frozenset:
    bad = [n for n in names if n not in _BY_NAME]
    if bad:
        raise ValueError(f"unknown scaling path {bad[0]!r}; the paths are {list(_BY_NAME)}")
    return frozenset(names)


@contextlib.contextmanager
def force_path(*names: str) -> Iterator[None]:
    """Within the block, serve ``quantize_tensor`` by one of ``names`` where it applies, else by ``general``.

    ``general`` serves every call, so forcing a fast path never fails: a call it cannot serve takes
    the general path. Per thread (and asyncio task), as :func:`fp8lab.codec.force_path`.

    >>> import torch
    >>> with force_path("torch"):
    ...     which_path(torch.ones(4, 32), "e4m3", MXScaling(scale_rounding="rceil"))
    'torch'
    """
    token = _forced.set(_check_names(names))
    try:
        yield
    finally:
        _forced.reset(token)


@contextlib.contextmanager
def disable_paths(*names: str) -> Iterator[None]:
    """Within the block, never use the scaling paths ``names`` (``general`` cannot be disabled: it serves every call).

    >>> import torch
    >>> with disable_paths("fused_band", "ckernel"):
    ...     which_path(torch.ones(4, 32), "e4m3", MXScaling(scale_rounding="rceil"))
    'torch'
    """
    chosen = _check_names(names)
    if "general" in chosen:
        raise ValueError("the general scaling path serves every call and cannot be disabled; force_path() another "
                         "path instead")
    token = _disabled.set(_disabled.get() | chosen)
    try:
        yield
    finally:
        _disabled.reset(token)


def scaling_policy() -> tuple["frozenset | None", frozenset]:
    """The forced and the disabled scaling paths in effect in this thread.

    >>> scaling_policy()
    (None, frozenset())
    """
    return _forced.get(), _disabled.get()


def select(req: ScalingRequest) -> ScalingPath:
    """The first path in :data:`SCALING_PATHS` that serves ``req`` (respecting forced and disabled paths, codec ones too).

    >>> select(ScalingRequest(BlockScaling((1, 128)), get_format("e4m3"), "torch", "cpu", "float32", (8, 100))).name
    'general'
    """
    key = (_forced.get(), _disabled.get(), *path_policy())
    try:
        return _select_cached(req, *key)
    except TypeError:  # a recipe with an unhashable field
        return _select(req, key[0], key[1])


@functools.lru_cache(maxsize=4096)
def _select_cached(req: ScalingRequest, forced: Any, disabled: Any, codec_forced: Any, codec_disabled: Any) -> ScalingPath:
    return _select(req, forced, disabled)


def _select(req: ScalingRequest, forced: "frozenset | None", disabled: frozenset) -> ScalingPath:
    for p in SCALING_PATHS:
        if p.name in disabled or (forced is not None and p.name not in forced and p.name != "general"):
            continue
        if p.applies(req) is None:
            return p
    raise LookupError(f"no scaling path serves {req}")  # pragma: no cover - general always applies


def request_for(x: Any, fmt: "str | Format", recipe: Recipe) -> ScalingRequest:
    """The :class:`ScalingRequest` a call ``quantize_tensor(x, fmt, recipe)`` makes.

    >>> import torch
    >>> request_for(torch.ones(3, 4).t(), "e4m3", TensorScaling()).transposed
    True
    """
    fmt = get_format(fmt)
    if is_torch(x):
        shape = tuple(x.shape)
        flip = transposed_layout(x)
        device = "cpu" if x.is_cpu else x.device.type
        return ScalingRequest(recipe, fmt, "torch", device, str(x.dtype).removeprefix("torch."), shape, flip)
    import numpy as np

    arr = np.asarray(x)
    return ScalingRequest(recipe, fmt, "numpy", "cpu", arr.dtype.name, tuple(arr.shape))


def which_path(x: Any, fmt: "str | Format", recipe: Recipe) -> str:
    """The name of the path ``quantize_tensor(x, fmt, recipe)`` takes (before it sees the values: an inf or NaN
    met on a fast path steps aside to ``general``).

    >>> import numpy as np
    >>> which_path(np.ones((2, 32), np.float32), "e4m3", MXScaling())
    'general'
    """
    if not isinstance(recipe, Recipe):
        raise TypeError(f"which_path takes a scaling Recipe object (TensorScaling(), MXScaling(), ...), "
                        f"got {type(recipe).__name__}")
    return select(request_for(x, fmt, recipe)).name


def path_table() -> tuple[list[str], list[list[str]]]:
    """Headers and rows describing every scaling path (which exist and what they are).

    >>> headers, rows = path_table(); headers, rows[-1][0]
    (['path', 'what it is'], 'general')
    """
    return ["path", "what it is"], [[p.name, p.description] for p in SCALING_PATHS]
