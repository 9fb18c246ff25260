"""``Fp8Linear``: a drop-in ``torch.nn.Linear`` whose three GEMMs run through ``fp8lab.scaled_matmul``.

One ``torch.autograd.Function`` computes the training step's three GEMMs with the recipe's
QTensors and accumulators (:class:`~fp8lab.nn.recipe.LinearRecipe`):

==========  ============================  =========================================================
GEMM        product                       operands, quantized along the GEMM's reduction axis
==========  ============================  =========================================================
``fprop``   y  = x  @ W^T   (M, N)        x along K (axis 1), W along K (axis 1), ``qb = qW.T``
``dgrad``   dx = dy @ W     (M, K)        dy along N (axis 1), W along N (axis 0)
``wgrad``   dW = dy^T @ x   (N, K)        dy along M (axis 0), x along M (axis 0), ``qa = qdy.T``
==========  ============================  =========================================================

A role's scaling rule is written for the tensor with the forward reduction axis last; along axis 0
the tensor is quantized transposed (``quantize(x.T).T``), so 1x128 activation tiles become the
128x1 tiles DeepSeek-V3 uses for wgrad. Where the turned rule gives the same blocks (per-tensor
scales, 128x128 weight blocks) the first QTensor is reused; a stateful rule (delayed scaling) is
always reused, so its amax history advances once per tensor per step. 16-bit roles are rounded
through the codec and multiplied in FP32; FP32 roles stay as they are; the all-FP32 recipe is
``F.linear`` itself. Parameters are FP32 master weights; the bias is added in FP32.

>>> import torch
>>> torch.manual_seed(0) is not None
True
>>> layer = Fp8Linear(256, 64, recipe="fp8-tensorwise-current")
>>> y = layer(torch.randn(8, 256)); y.sum().backward()
>>> tuple(y.shape), layer.weight.grad.shape == layer.weight.shape, sorted(layer.stats)
((8, 64), True, ['grad_output', 'input', 'weight'])
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..codec import ckernels, encode, quantize
from ..codec.paths import path_policy
from ..codec.impl import code_values
from ..gemm import Accumulator, scaled_matmul
from ..gemm.checks import prepare
from ..gemm.decode import decode_values
from ..gemm.emulated import exact_values
from ..formats import Format
from ..qtensor import QTensor
from ..scaling import quantize_tensor
from ..scaling.fast import quantize_fast_values
from .recipe import ROLES, LinearRecipe, TensorQuant

__all__ = ["Fp8Linear", "LayerState"]


class LayerState:
    """A layer's per-role scaling state: an ``AmaxHistory`` for each stateful role, else None.

    Each :class:`Fp8Linear` owns one, so no two layers ever share a history.

    >>> s = LayerState(LinearRecipe.from_name("fp8-tensorwise-delayed"))
    >>> type(s.input).__name__, s.input is s.weight
    ('AmaxHistory', False)
    """

    def __init__(self, recipe: LinearRecipe) -> None:
        for role in ROLES:
            tq = getattr(recipe, role)
            setattr(self, role, tq.scaling.new_state() if tq is not None and tq.stateful else None)

    def as_dict(self) -> dict[str, Any]:
        """The histories as plain data (amaxes oldest first, last scale, steps) or None per role.

        >>> LayerState(LinearRecipe.from_name("fp32")).as_dict()
        {'input': None, 'weight': None, 'grad_output': None}
        """
        out: dict[str, Any] = {}
        for role in ROLES:
            h = getattr(self, role)
            out[role] = None if h is None else {"amaxes": list(h.amaxes), "scale": h.scale, "steps": h.steps}
        return out

    def __repr__(self) -> str:
        return "LayerState(" + ", ".join(f"{r}={getattr(self, r)!r}" for r in ROLES) + ")"


def _t(v: Any) -> Any:
    """Transpose a QTensor (keeping its blockwise scales) or a matrix."""
    return v.transpose() if isinstance(v, QTensor) else v.t()


def _same_turned(tq: TensorQuant, shape: tuple[int, int]) -> bool:
    """Whether the rule gives the same blocks along axis 0 as along axis 1 (or is stateful: reuse anyway)."""
    if tq.scaling is None or tq.stateful:
        return True
    try:
        return _same_blocks_turned(tq.scaling, shape)
    except TypeError:  # a rule with an unhashable field: not cached
        return _same_blocks_turned.__wrapped__(tq.scaling, shape)


def _k_blocked(scaling: Any, shape: tuple[int, ...]) -> bool:
    """Whether the rule's blocks split the last axis of ``shape`` (the GEMM's reduction axis): a K-blocked operand."""
    try:
        return _k_blocked_cached(scaling, shape)
    except TypeError:  # a rule with an unhashable field: not cached
        return _k_blocked_cached.__wrapped__(scaling, shape)


@functools.lru_cache(maxsize=1024)
def _k_blocked_cached(scaling: Any, shape: tuple[int, ...]) -> bool:
    return tuple(scaling.block_for(shape))[-1] < shape[-1]


@functools.lru_cache(maxsize=1024)
def _same_blocks_turned(scaling: Any, shape: tuple[int, int]) -> bool:
    return tuple(scaling.block_for(shape[::-1]))[::-1] == tuple(scaling.block_for(shape))


def _contiguous(v: Any) -> Any:
    """``v`` laid out contiguously (None stays None); a transposed float32 CPU matrix by the C kernels' tiled copy."""
    if v is None or v.is_contiguous():
        return v
    if v.ndim == 2 and v.is_cpu and v.dtype == torch.float32 and v.t().is_contiguous() and _c_kernels_on():
        return ckernels.transposed(v.t())
    return v.contiguous()


def _gemm(a: Any, b: Any, acc: Accumulator, *, va: Any = None, vb: Any = None, keep: tuple = (),
          dequantized: tuple[bool, bool] = (False, False)) -> torch.Tensor:
    """``a @ b`` through the emulated GEMM when both are QTensors, else an FP32 matmul of the (dequantized) values.

    With exact accumulation it calls what ``scaled_matmul`` runs (emulated, FP32 out) directly, so that
    ``va``/``vb``, the operands' values (from the cast, or decoded once for two GEMMs), can be handed
    in; they are handed over (a K-blocked GEMM scales them in place) unless they are in ``keep``.
    ``dequantized`` says which given values already hold value times scale (K-blocked operands).

    Every operand reaches the matmul contiguous, whichever path made it (the C kernels' cast, which
    may write it transposed, or the torch decode): a BLAS sums in an order that can depend on the
    operands' layout (MKL does for 1 to 3 rows here, up to 10 ulp apart), so one layout is what
    makes the two paths agree bit for bit (``tests/test_nn.py`` sweeps small M).
    """
    if isinstance(a, QTensor) and isinstance(b, QTensor):
        if acc.exact:
            p = prepare(a, b)
            va, vb = _contiguous(va), _contiguous(vb)
            kept = {k.untyped_storage().data_ptr() for k in keep if k is not None}
            free = tuple(v is not None and v.untyped_storage().data_ptr() not in kept for v in (va, vb))
            return exact_values(p, va=va, vb=vb, consume=free, dequantized=dequantized)
        return scaled_matmul(a, b, accumulator=acc)
    a = a.dequantize() if isinstance(a, QTensor) else a
    b = b.dequantize() if isinstance(b, QTensor) else b
    return a @ b


@functools.lru_cache(maxsize=64)
def _zero_codes(fmt: Format) -> frozenset:
    """The codes of ``fmt`` whose value is zero (+0 and -0 for most formats)."""
    return frozenset(np.flatnonzero(code_values(fmt) == 0).tolist())


def _c_kernels_on() -> bool:
    """Whether the C kernels are available and not disabled (``disable_paths("ckernel")``) here (counts, copies)."""
    return "ckernel" not in path_policy()[1] and ckernels.available()


def _nonzero_flushed(x: torch.Tensor, q: Any) -> float:
    """Fraction of the nonzero elements of ``x`` that quantized to zero (``q``: a QTensor or the rounded values).

    A zero input always quantizes to zero, so the count is (zeros after) - (zeros before). For a
    float QTensor the zeros are counted on its codes (the codes whose value is zero), which spares
    decoding the tensor once more.
    """
    n = x.numel()
    if (isinstance(q, QTensor) and q.zero_point is None and q.format.bits <= 8 and x.is_cpu and x.dtype == torch.float32
            and x.is_contiguous() and q.codes.is_contiguous() and tuple(q.codes.shape) == tuple(x.shape)
            and _c_kernels_on()):
        nonzero, flushed = ckernels.flush_count(x, q.codes, q.format)  # both counts in one pass
        return flushed / nonzero if nonzero else 0.0
    nonzero = int(torch.count_nonzero(x))
    if not nonzero:
        return 0.0
    if isinstance(q, QTensor):
        if q.zero_point is None and q.format.bits <= 16:
            zero_codes = _zero_codes(q.format)
            sign = 1 << (q.format.bits - 1)
            if zero_codes == {0, sign}:  # +0 and -0: the codes without their sign bit are zero
                zeros_after = n - int(torch.count_nonzero(q.codes & (sign - 1)))
            elif zero_codes == {0}:
                zeros_after = n - int(torch.count_nonzero(q.codes))
            else:
                zeros_after = sum(int((q.codes == c).sum()) for c in zero_codes)
        else:
            zeros_after = n - int(torch.count_nonzero(q.values()))
    else:
        zeros_after = n - int(torch.count_nonzero(q))
    return (zeros_after - (n - nonzero)) / nonzero


class _Fp8LinearFunction(torch.autograd.Function):
    """``x @ W^T`` with the recipe's three GEMMs (bias added outside, in FP32).

    Where the C kernels cast a role, they also give its values (the decoded codes, or for an
    operand used once in a K-blocked GEMM the dequantized values), which go to the GEMM instead of
    decoding and scaling the codes there: the same numbers, bit for bit.
    """

    @staticmethod
    def forward(ctx, x2: torch.Tensor, weight: torch.Tensor, layer: "Fp8Linear") -> torch.Tensor:  # type: ignore[override]
        r = layer.recipe
        reuse_x = bool(ctx.needs_input_grad[1] and r.fprop.exact and r.wgrad.exact
                       and _same_turned(r.input, tuple(x2.shape)))  # wgrad reads the same input QTensor
        reuse_w = bool(ctx.needs_input_grad[0] and r.weight is not None and r.fprop.exact and r.dgrad.exact
                       and _same_turned(r.weight, tuple(weight.shape)))  # dgrad reads the same weight QTensor
        qx, vx, dqx = layer._quantize("input", x2, axis=1, values=r.fprop.exact, reuse=reuse_x)
        qw, vw, dqw = layer._quantize("weight", weight, axis=1, values=r.fprop.exact, reuse=reuse_w)
        ctx.layer, ctx.qx, ctx.qw, ctx.vx, ctx.vw = layer, qx, qw, None, None
        ctx.save_for_backward(x2, weight)
        if reuse_x and isinstance(qx, QTensor):
            # both GEMMs read this operand: its values (from the cast, or decoded here) serve both
            ctx.vx = vx = vx if vx is not None else decode_values(qx.codes, qx.format)
        if reuse_w:
            ctx.vw = vw
        return _gemm(qx, _t(qw), r.fprop, va=vx, vb=vw.t() if vw is not None else None, keep=(ctx.vx, ctx.vw),
                     dequantized=(dqx, dqw))

    @staticmethod
    def backward(ctx, dy: torch.Tensor):  # type: ignore[override]
        layer: Fp8Linear = ctx.layer
        r = layer.recipe
        x2, weight = ctx.saved_tensors
        dy = dy.contiguous()
        same_g = r.grad_output is None or _same_turned(r.grad_output, tuple(dy.shape))
        need_dx, need_dw = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        reuse_g = bool(same_g and need_dx and need_dw and r.dgrad.exact and r.wgrad.exact)  # wgrad reads vdy again
        qdy, vdy, dqdy = layer._quantize("grad_output", dy, axis=1, values=r.dgrad.exact or (same_g and r.wgrad.exact),
                                         reuse=reuse_g or (same_g and need_dw))
        dx = dw = None
        if need_dx:
            if r.weight is None or _same_turned(r.weight, tuple(weight.shape)):
                qw0, vw0, dqw0 = ctx.qw, ctx.vw, False
            else:
                qw0, vw0, dqw0 = layer._quantize("weight", weight, axis=0, record=False, values=r.dgrad.exact)
            dx = _gemm(qdy, qw0, r.dgrad, va=vdy, vb=vw0, keep=(vdy,) if reuse_g else (), dequantized=(dqdy, dqw0))
        if need_dw:
            # dy^T along M: quantizing dy^T itself gives wgrad's operand directly (no transpose there and back)
            if same_g:
                qdyT, vdyT, dqdyT = _t(qdy), (vdy.t() if vdy is not None else None), dqdy
            else:
                qdyT, vdyT, dqdyT = layer._quantize("grad_output", dy, axis=0, record=False, turned=True,
                                                    values=r.wgrad.exact)
            same_x = r.input is None or _same_turned(r.input, tuple(x2.shape))
            if same_x:
                qx0, vx0, dqx0 = ctx.qx, ctx.vx, False
            else:
                qx0, vx0, dqx0 = layer._quantize("input", x2, axis=0, record=False, values=r.wgrad.exact)
            dw = _gemm(qdyT, qx0, r.wgrad, va=vdyT, vb=vx0, dequantized=(dqdyT, dqx0))
        ctx.qx = ctx.qw = ctx.vx = ctx.vw = None
        return dx, dw, None


class Fp8Linear(torch.nn.Linear):
    """``torch.nn.Linear`` with the GEMMs of a :class:`LinearRecipe` (same parameters and state_dict keys).

    ``recipe`` is a LinearRecipe or a preset name (default ``fp8-tensorwise-delayed``, Transformer
    Engine's default recipe). Parameters are FP32 master weights (``dtype`` must be float32).
    ``layer.state`` holds the per-role amax histories (:class:`LayerState`); ``layer.stats`` what
    the last step measured, per role: ``amax``, ``scale`` (the largest block scale, 1.0 for a plain
    cast), ``saturated_blocks``, and for ``grad_output`` ``underflow`` (the fraction of its nonzero
    elements that quantized to zero).

    >>> import torch
    >>> lin = Fp8Linear(4, 3, bias=False, recipe="fp32")
    >>> list(lin.state_dict()), lin.recipe.name
    (['weight'], 'fp32')
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 recipe: "LinearRecipe | str" = "fp8-tensorwise-delayed", device: Any = None, dtype: Any = None) -> None:
        if dtype is not None and dtype != torch.float32:
            raise ValueError(f"Fp8Linear keeps FP32 master weights; dtype must be torch.float32 or None, got {dtype}")
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=torch.float32)
        self.recipe = LinearRecipe.from_name(recipe)
        self.state = LayerState(self.recipe)
        self.stats: dict[str, dict[str, float]] = {}

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, recipe: "LinearRecipe | str" = "fp8-tensorwise-delayed") -> "Fp8Linear":
        """An Fp8Linear sharing ``linear``'s parameters (the same Parameter objects, so ties and optimizers hold).

        >>> import torch
        >>> lin = torch.nn.Linear(4, 2)
        >>> f = Fp8Linear.from_linear(lin, "bf16"); f.weight is lin.weight
        True
        """
        if not isinstance(linear, torch.nn.Linear):
            raise TypeError(f"from_linear takes a torch.nn.Linear, got {type(linear).__name__}")
        if linear.weight.dtype != torch.float32:
            raise ValueError(f"Fp8Linear keeps FP32 master weights; this Linear's weight is {linear.weight.dtype}")
        new = cls.__new__(cls)
        torch.nn.Module.__init__(new)
        new.in_features, new.out_features = linear.in_features, linear.out_features
        new.weight = linear.weight
        new.bias = linear.bias
        new.recipe = LinearRecipe.from_name(recipe)
        new.state = LayerState(new.recipe)
        new.stats = {}
        new.train(linear.training)
        return new

    def extra_repr(self) -> str:
        return super().extra_repr() + f", recipe={self.recipe.name!r}"

    # ----- quantizing one role ------------------------------------------------------------------
    def _quantize(self, role: str, x: torch.Tensor, *, axis: int, record: bool = True, turned: bool = False,
                  values: bool = False, reuse: bool = False) -> tuple[Any, Any, bool]:
        """``(cast, values, dequantized)``: ``x`` cast for ``role`` with its blocks along ``axis`` (a QTensor, a rounded tensor, or ``x``).

        ``turned=True`` (with ``axis=0``) returns the QTensor of ``x.T`` instead of its transpose.
        With ``values=True``, where the C kernels cast it, ``values`` is the QTensor's float32 values
        computed in the same pass (else None): dequantized (``dequantized`` True) when the operand is
        K-blocked along this GEMM's reduction axis (the last axis of the tensor cast) and read by
        this GEMM only (``reuse=False``), else the decoded codes.
        """
        tq: TensorQuant | None = getattr(self.recipe, role)
        if tq is None:
            if record:
                self.stats[role] = {"amax": float(x.abs().max()) if x.numel() else 0.0, "scale": 1.0, "saturated_blocks": 0}
            return (x.t() if turned else x), None, False
        if tq.is_16bit:
            v = quantize(x, tq.format, saturate=tq.saturate)
            if record:
                amax = float(x.abs().max()) if x.numel() else 0.0
                self._record(role, x, v, amax=amax, scale=1.0, saturated=int(amax > tq.format.max))
            return (v.t() if turned else v), None, False
        src = x if axis == 1 else x.t()
        vals, deq = None, False
        if tq.scaling is None:  # a plain cast: scale 1
            q = QTensor(encode(src.detach().contiguous(), tq.format, saturate=tq.saturate),
                        torch.ones(1, 1, dtype=torch.float32, device=x.device), tq.format)
            amax = float(src.abs().max()) if src.numel() else 0.0
            saturated = int(amax > tq.format.max)
        else:
            state = getattr(self.state, role)
            if state is not None and not (getattr(self, "_advance", True) or role == "grad_output"):
                state = copy.deepcopy(state)  # evaluation reads the history without advancing it
            # the fast path first, for the values it decodes on the way; quantize_tensor (the same QTensor) else
            deq = values and not reuse and _k_blocked(tq.scaling, tuple(src.shape))
            got = quantize_fast_values(src, tq.format, tq.scaling, state, dequantize=deq) if values else None
            q, vals = got if got is not None else (quantize_tensor(src, tq.format, tq.scaling, state=state), None)
            amax, saturated = q.info.amax, q.info.saturated_blocks
        if axis == 0 and not turned:
            q = q.transpose()
            vals = vals.t() if vals is not None else None
        if record:
            self._record(role, x, q if role == "grad_output" else None, amax=amax,
                         scale=float(q.scales.max()) if q.scales.numel() else 1.0, saturated=saturated)
        return q, vals, deq and vals is not None

    def _record(self, role: str, x: torch.Tensor, values: Any, *, amax: float, scale: float, saturated: int) -> None:
        st = {"amax": float(amax), "scale": float(scale), "saturated_blocks": int(saturated)}
        if role == "grad_output" and values is not None:
            st["underflow"] = _nonzero_flushed(x, values)
        self.stats[role] = st

    # ----- forward ------------------------------------------------------------------------------
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ W^T + b`` through the recipe's GEMMs (F.linear for the all-FP32 recipe).

        >>> import torch
        >>> lin = Fp8Linear(2, 1, bias=False, recipe="fp32"); _ = torch.nn.init.ones_(lin.weight)
        >>> lin(torch.tensor([[1.0, 2.0]])).tolist()
        [[3.0]]
        """
        r = self.recipe
        if all(getattr(r, role) is None for role in ROLES) and all(getattr(r, g).exact for g in ("fprop", "dgrad", "wgrad")):
            return F.linear(x, self.weight, self.bias)
        if x.dtype != torch.float32:
            raise TypeError(f"Fp8Linear takes float32 input (it casts per role itself), got {x.dtype}")
        lead = x.shape[:-1]
        self._advance = self.training and torch.is_grad_enabled()  # evaluation does not move amax histories
        y = _Fp8LinearFunction.apply(x.reshape(-1, self.in_features), self.weight, self)
        y = y.reshape(*lead, self.out_features)
        return y + self.bias if self.bias is not None else y
