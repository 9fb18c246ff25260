"""The codec's implementations as one declared table, and the one selector that picks among them.

Every call of ``encode``, ``decode`` or ``quantize`` becomes a :class:`Request` (operation,
format, backend, rounding, saturation, device, code dtype). :data:`PATHS` lists the ways to serve
requests, in order of preference; each :class:`CodecPath` says which operations and backends it
serves and, through ``why_not``, when it applies. :func:`select` takes the first one that applies.
All paths compute the same bits as the bit-level algorithm of :mod:`fp8lab.codec.core` (tests run
every path on every format against the reference codec and ml_dtypes); they differ in speed only.

- ask which path a call takes: :func:`which_path` (and :func:`path_table` for the whole table);
- force one, for a test or to see the bit-level algorithm at work: ``with force_path("bitlevel"):``;
- rule some out: ``with disable_paths("torch_cast"):``.

Both hold **per thread** (they are :mod:`contextvars`, so per asyncio task too): a block in one
thread changes nothing for the codec calls of another, and a thread started inside a block starts
without it (run it in ``contextvars.copy_context()`` to carry the block over).

>>> import numpy as np
>>> which_path("encode", np.float32(0.3), "e4m3"), which_path("quantize", np.zeros(4), "bf16")
('table', 'inplace')
>>> with force_path("bitlevel"):
...     which_path("encode", np.float32(0.3), "e4m3")
'bitlevel'
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

import numpy as np

from ..formats import FloatFormat, Format, IntFormat
from ..registry import get_format
from . import ckernels, impl
from .backend import is_torch, torch
from .core import ROUNDINGS
from .lut import lut_ok
from .native import cast_for
from .shift import shift_decodable
from .half import half_ok
from .wide import wide_ok

__all__ = ["Request", "CodecPath", "PATHS", "select", "path_policy", "which_path", "path_table", "force_path", "disable_paths",
           "path_names", "dispatch", "rounding_name"]

OPS = ("encode", "decode", "quantize")


@dataclass(frozen=True)
class Request:
    """What a codec call asks for: everything a path's applicability depends on.

    >>> Request("encode", get_format("e4m3"), "numpy").rounding
    'nearest'
    """

    op: str
    fmt: Format
    backend: str  #: "numpy" or "torch"
    rounding: str = "nearest"
    saturate: bool = False
    device: str = "cpu"  #: torch device type ("cpu", "cuda", "meta"); "cpu" for numpy
    code_dtype: str = ""  #: for decode: the dtype name of the codes


@dataclass(frozen=True)
class CodecPath:
    """One implementation: its name, the operations and backends it serves, when it applies, and what it is.

    >>> PATHS[0].name, sorted(PATHS[0].ops)
    ('meta', ['decode', 'encode', 'quantize'])
    """

    name: str
    ops: frozenset
    backends: frozenset
    description: str
    why_not: Callable[[Request], "str | None"]  #: None when the path serves the request, else the reason
    impl: dict = field(default_factory=dict, compare=False, repr=False)  #: operation -> the function that does it

    def applies(self, req: Request) -> str | None:
        """None if this path serves ``req``, else why not.

        >>> PATHS[0].applies(Request("encode", get_format("e4m3"), "torch")), PATHS[0].applies(Request("encode", get_format("e4m3"), "numpy"))
        ('only for tensors on the meta device', 'has no numpy version')
        """
        if req.op not in self.ops:
            return f"does not {req.op}"
        if req.backend not in self.backends:
            return f"has no {req.backend} version"
        return self.why_not(req)


def _meta(r: Request) -> str | None:
    return None if r.device == "meta" else "only for tensors on the meta device"


def _torch_cast(r: Request) -> str | None:
    if r.rounding != "nearest":
        return "torch's casts round to nearest only"
    cast = cast_for(r.fmt)
    if cast is None:
        return f"torch has no cast with {r.fmt.name}'s parameters"
    if r.op == "quantize":
        if cast.signless:
            return "torch's cast maps 0 and negatives to numbers; fixing the values costs more than the table"
        if cast.clamps_overflow and not r.saturate and r.device == "cpu":
            return "on the CPU the numpy table beats the cast plus its overflow fix-up"
    return None


def _half(r: Request) -> str | None:
    if half_ok(r.fmt, r.code_dtype):
        return None
    if any(half_ok(r.fmt, d) for d in ("uint8", "int16", "uint16")):
        return f"cannot take {r.code_dtype} codes of {r.fmt.name}"
    return ("needs FP16's exponent layout (5 bits, bias 15, IEEE specials, signed, subnormals; at most 16 bits) "
            "or an 8-bit signed format with subnormals and at most 4 exponent bits")


def _ckernel(r: Request) -> str | None:
    if r.device != "cpu":
        return "runs on the CPU"
    if r.code_dtype != "uint8" or r.fmt.bits > 8:
        return "takes uint8 codes of formats of at most 8 bits"
    if not ckernels.available():
        return f"the C kernels are not available here: {ckernels.reason()}"
    return None


def _via_numpy(r: Request) -> str | None:
    if r.device != "cpu":
        return "only CPU tensors share memory with numpy"
    if r.rounding == "stochastic":
        return "stochastic rounding of a tensor draws from a torch.Generator"
    if r.op == "decode" and r.code_dtype not in ("uint8", "int32", "int64", "uint16"):
        return f"numpy cannot view {r.code_dtype} codes"
    return None


def _shift(r: Request) -> str | None:
    if not shift_decodable(r.fmt):
        return "needs an 8-bit signed float format with subnormals"
    if r.code_dtype != "uint8":
        return "needs uint8 codes"
    return None


def _inplace(r: Request) -> str | None:
    if not wide_ok(r.fmt, "nearest"):
        return "needs float32's exponent layout (8 bits, bias 127, IEEE specials, signed, subnormals)"
    if r.op != "decode" and r.rounding not in ("nearest", "toward_zero"):
        return "rounds to nearest or toward zero only"
    return None


def _table(r: Request) -> str | None:
    if r.op == "decode":
        return None if r.fmt.bits <= 16 else "decode tables exist for formats up to 16 bits"
    if not isinstance(r.fmt, FloatFormat):
        return "integer formats round arithmetically"
    if r.rounding not in ("nearest", "toward_zero"):
        return "rounds to nearest or toward zero only"
    if not lut_ok(r.fmt, r.rounding):
        return ("its index keeps 16 bits of a float32 and a sticky bit, which decides the rounding only for "
                "formats with at most 7 mantissa bits whose finest step is at least 2^-132 (2^-133 for 7 bits)")
    return None


def _integer(r: Request) -> str | None:
    return None if isinstance(r.fmt, IntFormat) else "for integer formats"


def _bitlevel(r: Request) -> str | None:
    return None if isinstance(r.fmt, FloatFormat) else "for floating-point formats"


def _compose(r: Request) -> str | None:
    return None


# ----------------------------------------------------------------------------------------------
# paths that hand the work on: a CPU tensor to the numpy paths, quantize to encode and decode.
# They call dispatch again, so they live here beside it (impl.py never imports upward).
def _numpy_request(req, code_dtype: str = "float32"):
    return Request(req.op, req.fmt, "numpy", req.rounding, req.saturate, "cpu", code_dtype)


def via_numpy_encode(flat, req, gen):
    """Encode a CPU tensor by the numpy paths, sharing its memory.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> via_numpy_encode(torch.tensor([6.0]), Request("encode", get_format("fp4"), "torch"), None).tolist()
    [7]
    """
    return torch.from_numpy(np.asarray(dispatch(flat.numpy(), _numpy_request(req))))


def via_numpy_decode(codes, req, out=None):
    """Decode the codes of a CPU tensor by the numpy paths.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> via_numpy_decode(torch.tensor([7], dtype=torch.uint8), Request("decode", get_format("fp4"), "torch", code_dtype="uint8")).tolist()
    [6.0]
    """
    c = codes.numpy()
    o = out.view(torch.float32).numpy() if out is not None else None  # an int32 workspace, filled in place
    res = np.asarray(dispatch(c, _numpy_request(req, c.dtype.name), out=o))
    return out.view(torch.float32) if (o is not None and res is o) else torch.from_numpy(res)


def via_numpy_quantize(flat, req, gen):
    """Quantize a CPU tensor by the numpy paths.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> via_numpy_quantize(torch.tensor([0.3]), Request("quantize", get_format("e4m3"), "torch"), None).tolist()
    [0.3125]
    """
    return torch.from_numpy(np.asarray(dispatch(flat.numpy(), _numpy_request(req)), dtype=np.float32))


def compose_quantize(flat, req, gen):
    """``decode(encode(x))``, each through the path the selector picks for it.

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> compose_quantize(np.array([0.3], np.float32), Request("quantize", get_format("e3m4"), "numpy", rounding="stochastic"), np.random.default_rng(0)).tolist()[0] in (0.296875, 0.3125)
    True
    """
    codes = dispatch(flat, replace(req, op="encode"), gen)
    dtype = codes.dtype.name if req.backend == "numpy" else str(codes.dtype).removeprefix("torch.")
    return dispatch(codes, replace(req, op="decode", code_dtype=dtype))


def _path(name: str, backends: str, description: str, why_not, **impl) -> CodecPath:
    return CodecPath(name, frozenset(impl), frozenset(backends.split()), description, why_not, impl)


#: Every implementation, in order of preference.
PATHS: tuple[CodecPath, ...] = (
    _path("meta", "torch", "shape-only result for meta tensors (tracing)", _meta,
          encode=impl.meta_encode, decode=impl.meta_values, quantize=impl.meta_values),
    _path("torch_cast", "torch", "torch's own cast, fixed up where its policy differs (codec/native.py)", _torch_cast,
          encode=impl.cast_encode, quantize=impl.cast_quantize),
    _path("ckernel", "torch", "one look-up per code in the table of all 256 values, in a compiled C loop (codec/ckernels.py)",
          _ckernel, decode=impl.ckernel_decode),
    _path("half", "torch", "codes whose fields fit an IEEE half's: shifted into float16, converted by torch, rebiased (codec/half.py)",
          _half, decode=impl.half_path_decode),
    _path("via_numpy", "torch", "a CPU tensor shares memory with numpy: the numpy path serves it", _via_numpy,
          encode=via_numpy_encode, decode=via_numpy_decode, quantize=via_numpy_quantize),
    _path("shift", "torch", "three integer ops and a multiply per 8-bit code (codec/shift.py)", _shift,
          decode=impl.shift_path_decode),
    _path("inplace", "numpy torch", "formats with float32's exponent: round the float32 bit pattern in place (codec/wide.py)",
          _inplace, encode=impl.inplace_encode, decode=impl.inplace_decode, quantize=impl.inplace_quantize),
    _path("table", "numpy torch", "one look-up per element in a table the bit-level algorithm filled (codec/lut.py)",
          _table, encode=impl.table_encode, decode=impl.table_decode, quantize=impl.table_quantize),
    _path("integer", "numpy torch", "round, saturate, two's complement (codec/core.py)", _integer,
          encode=impl.integer_encode, decode=impl.bitlevel_decode),
    _path("bitlevel", "numpy torch", "the bit-level algorithm: rounding bias, shift, carry into the exponent (codec/core.py)",
          _bitlevel, encode=impl.bitlevel_encode, decode=impl.bitlevel_decode),
    _path("compose", "numpy torch", "decode(encode(x)) through the paths chosen for each", _compose,
          quantize=compose_quantize),
)

_BY_NAME = {p.name: p for p in PATHS}
_forced: contextvars.ContextVar[frozenset | None] = contextvars.ContextVar("fp8lab_forced_paths", default=None)
_disabled: contextvars.ContextVar[frozenset] = contextvars.ContextVar("fp8lab_disabled_paths", default=frozenset())


def path_names() -> tuple[str, ...]:
    """The names of every path, in order of preference.

    >>> path_names()[-1]
    'compose'
    """
    return tuple(_BY_NAME)


def _check_names(names: tuple[str, ...]) -> frozenset:
    bad = [n for n in names if n not in _BY_NAME]
    if bad:
        raise ValueError(f"unknown codec path {bad[0]!r}; the paths are {list(_BY_NAME)}")
    return frozenset(names)


@contextlib.contextmanager
def force_path(*names: str) -> Iterator[None]:
    """Within the block, serve every codec call of this thread by one of ``names`` (an error where none applies).

    ``quantize`` may still compose ``decode(encode(x))`` from forced paths when it has none of them.
    The block holds for the current thread (and asyncio task) only: other threads keep their own choice.

    >>> import numpy as np
    >>> with force_path("bitlevel"):
    ...     int(__import__("fp8lab").encode(np.float32(1.0), "e4m3"))
    56
    """
    token = _forced.set(_check_names(names))
    try:
        yield
    finally:
        _forced.reset(token)


@contextlib.contextmanager
def disable_paths(*names: str) -> Iterator[None]:
    """Within the block, never use the paths ``names`` in this thread (the next ones in the table serve instead).

    Like :func:`force_path`, it holds for the current thread (and asyncio task) only.

    >>> import torch
    >>> with disable_paths("torch_cast", "via_numpy"):
    ...     which_path("encode", torch.zeros(2), "e5m2")
    'table'
    """
    token = _disabled.set(_disabled.get() | _check_names(names))
    try:
        yield
    finally:
        _disabled.reset(token)


def path_policy() -> tuple["frozenset | None", frozenset]:
    """The forced and the disabled paths in effect in this thread (a cache key for answers that depend on path selection).

    >>> path_policy()
    (None, frozenset())
    >>> with disable_paths("half"):
    ...     path_policy()
    (None, frozenset({'half'}))
    """
    return _forced.get(), _disabled.get()


def select(req: Request) -> CodecPath:
    """The first path in :data:`PATHS` that serves ``req`` (respecting forced and disabled paths).

    >>> select(Request("decode", get_format("e4m3"), "numpy", code_dtype="uint8")).name
    'table'
    """
    return _select(req, _forced.get(), _disabled.get())


@functools.lru_cache(maxsize=4096)
def _select(req: Request, forced: "frozenset | None", disabled: frozenset) -> CodecPath:
    """:func:`select` for one state of the forced and disabled paths (cached: the answer depends on nothing else)."""
    reasons = []
    for p in PATHS:
        if p.name in disabled or (forced is not None and p.name not in forced and p.name != "compose"):
            continue
        if p.name == "compose" and forced is not None and "compose" not in forced and \
                any(req.op in _BY_NAME[n].ops for n in forced):
            continue  # a forced quantize path exists: do not fall back to composing
        why = p.applies(req)
        if why is None:
            return p
        if forced is not None and req.op in p.ops and req.backend in p.backends:
            reasons.append(f"{p.name}: {why}")
    if forced is not None:
        detail = "; ".join(reasons) or "none of them serves this operation and backend"
        raise ValueError(f"no forced codec path ({', '.join(sorted(forced))}) serves {req.op} of {req.fmt.name} "
                         f"on {req.backend}/{req.device}: {detail}")
    raise LookupError(f"no codec path serves {req}")  # pragma: no cover - bitlevel/integer/compose always apply


def rounding_name(rounding: str) -> str:
    """The canonical name of a rounding mode (any spelling :data:`~fp8lab.codec.core.ROUNDINGS` knows), else a ``ValueError``.

    >>> rounding_name("RNE"), rounding_name("Toward_Zero")
    ('nearest', 'toward_zero')
    """
    try:
        return ROUNDINGS[rounding.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown rounding {rounding!r}; use one of {sorted(set(ROUNDINGS.values()))}") from None


def dispatch(data, req: Request, gen=None, out=None):
    """Run ``req`` on flat ``data`` (values, or codes for decode) through the path :func:`select` picks.

    >>> dispatch(np.array([1.0], np.float32), Request("encode", get_format("e4m3"), "numpy")).tolist()
    [56]
    """
    path = select(req)
    fn = path.impl[req.op]
    if path.name in ("via_numpy", "compose") and _forced.get() == frozenset({path.name}):
        token = _forced.set(None)  # forcing a hand-over leaves the paths it hands to their own choice
        try:
            return fn(data, req, out) if req.op == "decode" else fn(data, req, gen)
        finally:
            _forced.reset(token)
    return fn(data, req, out) if req.op == "decode" else fn(data, req, gen)


def request_for(op: str, x: Any, fmt: "str | Format", *, rounding: str = "nearest", saturate: bool = False) -> Request:
    """The :class:`Request` a call ``op(x, fmt, ...)`` makes (``x`` is values, or codes for ``decode``).

    >>> request_for("decode", __import__("numpy").zeros(2, "uint8"), "fp4").code_dtype
    'uint8'
    """
    if op not in OPS:
        raise ValueError(f"op is one of {OPS}, got {op!r}")
    fmt = get_format(fmt)
    rounding = rounding_name(rounding)
    if is_torch(x):
        dtype = str(x.dtype).removeprefix("torch.")
        return Request(op, fmt, "torch", rounding, bool(saturate), x.device.type, dtype)
    return Request(op, fmt, "numpy", rounding, bool(saturate), "cpu", np.asarray(x).dtype.name)


def which_path(op: str, x: Any, fmt: "str | Format", *, rounding: str = "nearest", saturate: bool = False) -> str:
    """The name of the path ``op(x, fmt, rounding=..., saturate=...)`` takes ("via_numpy" -> the numpy one).

    >>> import torch
    >>> which_path("encode", torch.zeros(2), "e4m3"), which_path("encode", torch.zeros(2), "fp4")
    ('torch_cast', 'via_numpy -> table')
    """
    req = request_for(op, x, fmt, rounding=rounding, saturate=saturate)
    name = select(req).name
    if name == "via_numpy":
        inner = Request(op, req.fmt, "numpy", req.rounding, req.saturate, "cpu",
                        np.dtype(req.code_dtype).name if op == "decode" else "float32")
        return f"via_numpy -> {select(inner).name}"
    return name


def path_table() -> tuple[list[str], list[list[str]]]:
    """Headers and rows describing every path (for a learner: which implementations exist and what they are).

    >>> headers, rows = path_table(); headers, rows[-2][0]
    (['path', 'operations', 'backends', 'what it is'], 'bitlevel')
    """
    rows = [[p.name, " ".join(o for o in OPS if o in p.ops), " ".join(sorted(p.backends)), p.description] for p in PATHS]
    return ["path", "operations", "backends", "what it is"], rows
