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

import contextlib
import copy
import functools
import math
from typing import Any, Iterator

import numpy as np
import torch
import torch.nn.functional as F

from ..codec import decode, encode, quantize
from ..gemm import scaled_matmul
from ..qtensor import QTensor
from ..scaling import AmaxHistory, flushed_fraction, quantize_tensor, tensor_amax
from .recipe import ROLES, LinearRecipe, TensorQuant

__all__ = ["Fp8Linear", "LayerState", "weight_cache"]


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

    @property
    def stateful(self) -> bool:
        """Whether any role keeps a history (only then does the layer's ``state_dict`` carry ``_extra_state``).

        >>> LayerState(LinearRecipe.from_name("fp8-tensorwise-delayed")).stateful
        True
        """
        return any(getattr(self, role) is not None for role in ROLES)

    def to_checkpoint(self) -> dict[str, Any]:
        """Everything a resumed run needs, as plain data (lists, floats, ints): history, last scale and steps per role.

        >>> s = LayerState(LinearRecipe.from_name("fp8-tensorwise-delayed")); s.input.push(2.0)
        >>> s.to_checkpoint()["roles"]["input"]
        {'history_len': 1024, 'amaxes': [2.0], 'scale': 1.0, 'steps': 1}
        """
        roles: dict[str, Any] = {}
        for role in ROLES:
            h = getattr(self, role)
            roles[role] = None if h is None else {"history_len": int(h.history_len), "amaxes": [float(a) for a in h.amaxes],
                                                  "scale": float(h.scale), "steps": int(h.steps)}
        return {"format": 1, "roles": roles}

    def load_checkpoint(self, data: Any) -> None:
        """Restore what :meth:`to_checkpoint` gave, bit for bit (None or ``{}``, an older checkpoint: nothing changes).

        A history for a role this recipe keeps none for, or of another length, is a ``ValueError``.

        >>> a = LayerState(LinearRecipe.from_name("fp8-tensorwise-delayed")); a.weight.push(3.0); a.weight.scale = 0.5
        >>> b = LayerState(LinearRecipe.from_name("fp8-tensorwise-delayed")); b.load_checkpoint(a.to_checkpoint())
        >>> b.weight.amaxes, b.weight.scale, b.weight.steps
        ((3.0,), 0.5, 1)
        """
        if not data:
            return
        if not isinstance(data, dict) or not isinstance(data.get("roles"), dict):
            raise ValueError(f"an Fp8Linear extra state is a dict with 'roles' (from LayerState.to_checkpoint), got {data!r:.80}")
        for role in ROLES:
            saved = data["roles"].get(role)
            h = getattr(self, role)
            if saved is None:
                continue  # a role without history in the checkpoint: this layer's own stays as it is
            if h is None:
                raise ValueError(f"the checkpoint holds an amax history for role {role!r}, but this layer's recipe keeps "
                                 f"none for it (a checkpoint of another recipe?)")
            if int(saved["history_len"]) != h.history_len or len(saved["amaxes"]) > h.history_len:
                raise ValueError(f"the checkpoint's {role!r} history keeps {saved['history_len']} amaxes, this layer's "
                                 f"{h.history_len}")
            h.reset()
            for a in saved["amaxes"]:
                h.push(float(a))
            h.scale, h.steps = float(saved["scale"]), int(saved["steps"])

    def snapshot(self) -> dict[str, Any]:
        """Copies of the forward roles' histories (input, weight) as they are now, for a recomputed forward.

        >>> s = LayerState(LinearRecipe.from_name("fp8-tensorwise-delayed")); c = s.snapshot(); c["input"] is s.input
        False
        """
        return {role: _copy_history(getattr(self, role)) for role in ("input", "weight") if getattr(self, role) is not None}

    def __repr__(self) -> str:
        return "LayerState(" + ", ".join(f"{r}={getattr(self, r)!r}" for r in ROLES) + ")"


def _copy_history(h: Any) -> Any:
    """A copy of an amax history that shares nothing mutable with it (AmaxHistory.copy: its deques copied, not deep-copied)."""
    if isinstance(h, AmaxHistory):
        return h.copy()
    return copy.deepcopy(h)  # a state of another kind: copied whole


def _fingerprint(x: torch.Tensor) -> tuple:
    """A key for ``x``'s exact bits (shape, dtype and a sum of its bit patterns): a recomputed input has the same one.

    A contiguous float32 matrix with an even row length is summed as int64 words (pairs of bit patterns, the sum
    wrapping): one vectorized pass, about 20 times faster than widening each int32 (a full pass over every input
    of every layer, every step).
    """
    if x.numel() == 0 or x.dtype != torch.float32 or not x.is_contiguous():
        return (tuple(x.shape), str(x.dtype), x.numel() and float(x.double().sum()))
    if x.ndim and x.shape[-1] % 2 == 0 and x.storage_offset() % 2 == 0:
        return (tuple(x.shape), "i64", int(x.view(torch.int64).sum()))
    return (tuple(x.shape), int(x.view(torch.int32).sum(dtype=torch.int64)))


def _in_backward() -> bool:
    """Whether autograd is running a backward pass now (where activation checkpointing recomputes forwards)."""
    task = getattr(torch._C, "_current_graph_task_id", None)  # private, in torch since 1.13
    return task is not None and task() != -1


@contextlib.contextmanager
def weight_cache(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """Inside, each Fp8Linear of ``model`` casts its weight once and reuses that cast while the weight is unchanged.

    For gradient accumulation: the micro-batches of one optimizer step share one weight cast (a
    delayed-scaling weight history advances once per step, as with Transformer Engine's
    ``is_first_microbatch``). The cast is redone when the weight changes (an optimizer step inside
    the block), and dropped on leaving it.

    >>> import torch
    >>> lin = Fp8Linear(4, 2, recipe="fp8-tensorwise-current")
    >>> with weight_cache(lin):
    ...     _ = lin(torch.ones(3, 4)); _ = lin(torch.ones(3, 4))
    ...     lin._wcache is not None
    True
    >>> lin._wcache is None
    True
    """
    layers = [m for m in model.modules() if isinstance(m, Fp8Linear)]
    before = [m._cache_on for m in layers]
    for m in layers:
        m._cache_on = True
    try:
        yield model
    finally:
        for m, b in zip(layers, before):
            m._cache_on = b
            if not b:
                m._wcache = None


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


def _gemm(a: Any, b: Any, acc: Any, consume: tuple[bool, bool] = (False, False), bias: Any = None) -> torch.Tensor:
    """``a @ b`` (``+ bias``) through ``scaled_matmul`` when both are QTensors, else an FP32 matmul of the (dequantized) values.

    ``consume`` hands over the values an operand holds from its cast (no other GEMM reads them):
    a K-blocked GEMM may then scale them in place instead of on a copy. The bias is added to the
    FP32 result, in the epilogue's pass where the GEMM has one.
    """
    if isinstance(a, QTensor) and isinstance(b, QTensor):
        return scaled_matmul(a, b, accumulator=acc, consume=consume, bias=bias)
    a = a.dequantize() if isinstance(a, QTensor) else a
    b = b.dequantize() if isinstance(b, QTensor) else b
    out = a @ b
    return out if bias is None else out.add_(bias)


def _pack_input(layer: "Fp8Linear", x2: torch.Tensor, qx: Any, bad_x: bool) -> tuple | None:
    """What wgrad needs of the input, in the input role's format: ``(how to rebuild it, tensors to save, x if not finite)``.

    8-bit roles keep the codes of the cast along the tokens (the forward's own cast where the blocks
    are the same either way) and their scales stored in the scale format (none for a plain cast);
    16-bit roles keep the rounded values as bfloat16/float16. None: keep the FP32 input as before.
    """
    tq = layer.recipe.input
    if tq is None or x2.numel() == 0:
        return None
    extra = x2 if bad_x else None  # a non-finite input is kept as it is (its infs were clamped by the cast)
    if tq.is_16bit:
        dt = getattr(torch, tq.format.name, None)
        if not isinstance(dt, torch.dtype) or dt.itemsize * 8 != tq.format.bits:
            return None
        return ("16", dt), (qx.to(dt),), extra
    if tq.scaling is not None and not _same_turned(tq, tuple(x2.shape)):
        q = layer._quantize("input", x2, axis=0, record=False)[0]  # wgrad's own cast, made now instead of in backward
    else:
        q = qx
    if not isinstance(q, QTensor) or q.zero_point is not None:
        return None
    meta = dict(format=q.format, scaling=q.scaling, block=q.block, scale_format=q.scale_format,
                tensor_scale=q.tensor_scale, info=q.info, dtype=q.dtype, shape=tuple(q.scales.shape))
    if tq.scaling is None:
        return ("plain", meta), (q.codes,), extra
    if q.scale_format.bits < 32:
        sc = q.info.scale_codes  # the scales' own codes where the cast reported them (MX): no second encode
        coded = torch.from_numpy(np.ascontiguousarray(sc)) if isinstance(sc, np.ndarray) and sc.shape == tuple(
            q.scales.shape) and q.scales.is_cpu else encode(q.scales, q.scale_format)
        return ("coded", meta), (q.codes, coded), extra
    return ("scales", meta), (q.codes, q.scales), extra


def _unpack_input(how: tuple, tensors: tuple) -> Any:
    """The wgrad operand :func:`_pack_input` kept: the same QTensor (or 16-bit values as float32), bit for bit."""
    kind, meta = how
    if kind == "16":
        return tensors[0].float()
    codes = tensors[0]
    if kind == "plain":
        scales = torch.ones(meta["shape"], dtype=torch.float32, device=codes.device)
    elif kind == "coded":
        scales = decode(tensors[1], meta["scale_format"])
    else:
        scales = tensors[1]
    m = {k: v for k, v in meta.items() if k != "shape"}
    return QTensor(codes, scales, **m)


class _Fp8LinearFunction(torch.autograd.Function):
    """``x @ W^T + b`` with the recipe's three GEMMs (the bias added to the FP32 result, in the epilogue).

    Where the C kernels cast a role, they also give its values (the decoded codes, or for an
    operand used once in a K-blocked GEMM the dequantized values), which go to the GEMM instead of
    decoding and scaling the codes there: the same numbers, bit for bit.

    Non-finite values propagate as in ``nn.Linear``: a scaled cast clamps an inf to the format's
    range, so where a role held an inf or NaN the GEMM's result gets ``0 * (the FP32 product)``
    added, which is NaN exactly where the FP32 product is not finite and +0 elsewhere.
    """

    @staticmethod
    def forward(ctx, x2: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,  # type: ignore[override]
                layer: "Fp8Linear") -> torch.Tensor:
        r = layer.recipe
        reuse_x = bool(ctx.needs_input_grad[1] and r.fprop.exact and r.wgrad.exact
                       and _same_turned(r.input, tuple(x2.shape)))  # wgrad reads the same input QTensor
        reuse_w = bool(ctx.needs_input_grad[0] and r.weight is not None and r.fprop.exact and r.dgrad.exact
                       and _same_turned(r.weight, tuple(weight.shape)))  # dgrad reads the same weight QTensor
        qx, bad_x = layer._quantize("input", x2, axis=1, values=r.fprop.exact, reuse=reuse_x)
        mode = layer._wmode
        cache = layer._wcache if mode == "use" else None
        if cache is not None:
            qw, bad_w = cache["w"]
        else:
            # a cast kept for later micro-batches holds decoded codes (reuse=True), never consumed by a GEMM
            qw, bad_w = layer._quantize("weight", weight, axis=1, values=r.fprop.exact, reuse=reuse_w or mode == "store")
            if mode == "store":
                cache = layer._wcache = {"weight": weight, "version": weight._version, "w": (qw, bad_w)}
        ctx.layer, ctx.qx, ctx.qw = layer, qx, qw
        ctx.cache, ctx.bad, ctx.token = cache, (bad_x, bad_w), layer._token
        ctx.packed = None
        if layer.save_fp8 and ctx.needs_input_grad[1]:
            ctx.packed = _pack_input(layer, x2, qx, bad_x)
        if ctx.packed is not None:  # wgrad's input kept in the role's format: no FP32 copy of x
            ctx.save_for_backward(weight, *ctx.packed[1])
            ctx.qx, reuse_x = None, False
        else:
            ctx.save_for_backward(x2, weight)
        if reuse_x and isinstance(qx, QTensor) and qx.held_values() is None:
            qx.hold_values()  # both GEMMs read this operand: decoded once here, for both
        # values no other GEMM reads are handed over (a K-blocked GEMM scales them in place)
        bad = bad_x or bad_w
        y = _gemm(qx, _t(qw), r.fprop, consume=(not reuse_x, not (reuse_w or cache is not None)),
                  bias=None if bad else bias)
        if bad:  # (y + 0 * the FP32 product) + b: the order the bias had outside the GEMM
            y = y + 0.0 * (x2 @ weight.t())
            y = y if bias is None else y + bias
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor):  # type: ignore[override]
        if torch.is_autocast_enabled(dy.device.type):
            with torch.autocast(dy.device.type, enabled=False):
                return _Fp8LinearFunction._backward(ctx, dy)
        return _Fp8LinearFunction._backward(ctx, dy)

    @staticmethod
    def _backward(ctx, dy: torch.Tensor):
        layer: Fp8Linear = ctx.layer
        r = layer.recipe
        saved = ctx.saved_tensors  # under activation checkpointing, this recomputes the forward (and uses the token)
        if ctx.packed is not None:
            weight, x2, xin = saved[0], None, _unpack_input(ctx.packed[0], saved[1:])
        else:
            (x2, weight), xin = saved, None
        layer._drop_token(ctx.token)
        dy = dy.contiguous()
        same_g = r.grad_output is None or _same_turned(r.grad_output, tuple(dy.shape))
        need_dx, need_dw = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        reuse_g = bool(same_g and need_dx and need_dw and r.dgrad.exact and r.wgrad.exact)  # wgrad reads vdy again
        qdy, bad_dy = layer._quantize("grad_output", dy, axis=1,
                                                 values=r.dgrad.exact or (same_g and r.wgrad.exact),
                                                 reuse=reuse_g or (same_g and need_dw))
        bad_x, bad_w = ctx.bad
        dx = dw = None
        if need_dx:
            cache = ctx.cache
            if r.weight is None or _same_turned(r.weight, tuple(weight.shape)):
                qw0 = ctx.qw
            elif cache is not None and "w0" in cache:
                qw0 = cache["w0"]
            else:
                qw0 = layer._quantize("weight", weight, axis=0, record=False, values=r.dgrad.exact)[0]
                if cache is not None:
                    cache["w0"] = qw0
            dx = _gemm(qdy, qw0, r.dgrad, consume=(not reuse_g, cache is None))
            if bad_dy or bad_w:
                dx = dx + 0.0 * (dy @ weight)
        if need_dw:
            # dy^T along M: quantizing dy^T itself gives wgrad's operand directly (no transpose there and back)
            if same_g:
                qdyT = _t(qdy)  # with the values it holds, if dgrad left them
            else:
                qdyT = layer._quantize("grad_output", dy, axis=0, record=False, turned=True, values=r.wgrad.exact)[0]
            same_x = r.input is None or _same_turned(r.input, tuple(x2.shape)) if xin is None else True
            if xin is not None:
                qx0 = xin
            elif same_x:
                qx0 = ctx.qx
            else:
                qx0 = layer._quantize("input", x2, axis=0, record=False, values=r.wgrad.exact)[0]
            dw = _gemm(qdyT, qx0, r.wgrad, consume=(True, True))
            if bad_dy or bad_x:
                xs = x2 if x2 is not None else ctx.packed[2]
                if xs is None:  # only dy was not finite: any values of x carry it into dW
                    xs = xin.dequantize() if isinstance(xin, QTensor) else xin
                dw = dw + 0.0 * (dy.t() @ xs)
        ctx.qx = ctx.qw = ctx.cache = ctx.packed = None
        db = dy.sum(0) if ctx.needs_input_grad[2] else None  # as nn.Linear's: dy summed over the tokens in FP32
        return dx, dw, db, None


class Fp8Linear(torch.nn.Linear):
    """``torch.nn.Linear`` with the GEMMs of a :class:`LinearRecipe` (same parameters and state_dict keys).

    ``recipe`` is a LinearRecipe or a preset name (default ``fp8-tensorwise-delayed``, Transformer
    Engine's default recipe). Parameters are FP32 master weights (``dtype`` must be float32).
    ``layer.state`` holds the per-role amax histories (:class:`LayerState`); ``layer.stats`` what
    the last step measured, per role: ``amax``, ``scale`` (the largest block scale, 1.0 for a plain
    cast), ``saturated_blocks``, and for ``grad_output`` ``underflow`` (the fraction of its nonzero
    elements that quantized to zero).

    ``save_fp8=True`` (the default, as Transformer Engine saves the FP8 input) keeps what wgrad
    needs of the input in the input role's format (codes and scales, or BF16/FP16 values) and
    decodes it when backward runs, instead of the FP32 input: the same bits, and the bytes
    ``fp8lab.train.memory.saved_input_bytes`` counts. ``save_fp8=False`` keeps the FP32 input.

    >>> import torch
    >>> lin = Fp8Linear(4, 3, bias=False, recipe="fp32")
    >>> list(lin.state_dict()), lin.recipe.name
    (['weight'], 'fp32')
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 recipe: "LinearRecipe | str" = "fp8-tensorwise-delayed", device: Any = None, dtype: Any = None,
                 save_fp8: bool = True) -> None:
        if dtype is not None and dtype != torch.float32:
            raise ValueError(f"Fp8Linear keeps FP32 master weights; dtype must be torch.float32 or None, got {dtype}")
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=torch.float32)
        self.recipe = LinearRecipe.from_name(recipe)
        self.state = LayerState(self.recipe)
        self.stats: dict[str, dict[str, float]] = {}
        self.save_fp8 = bool(save_fp8)  #: keep wgrad's input in the input role's format, not in FP32
        self._init_runtime()

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, recipe: "LinearRecipe | str" = "fp8-tensorwise-delayed", *,
                    save_fp8: bool = True) -> "Fp8Linear":
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
        new.save_fp8 = bool(save_fp8)
        new._init_runtime()
        new.train(linear.training)
        return new

    def _init_runtime(self) -> None:
        """What lives only between calls, never in a checkpoint: the weight cache and the recomputation snapshots."""
        self._cache_on = False  #: inside ``weight_cache``: cast the weight once while it is unchanged
        self._wcache: dict[str, Any] | None = None  #: the kept weight cast(s), its Parameter and version
        self._wmode: str | None = None  #: this call: None (cast), "store" (cast and keep), "use" (the kept cast)
        self._pending: list[tuple[tuple, dict[str, Any]]] = []  #: (input key, histories before) per forward awaiting backward
        self._replay: dict[str, Any] | None = None  #: the histories a recomputed forward reads
        self._token: Any = None
        self._quiet = False  #: a forward recomputed in backward: it records no stats

    # ----- checkpoints: the scaling state as torch's extra state ------------------------------------
    def get_extra_state(self) -> dict[str, Any]:
        """The amax histories, last scales and step counters (``LayerState.to_checkpoint``), saved as ``<prefix>_extra_state``.

        Only a layer with a stateful role (delayed scaling) puts the key in its ``state_dict``; the
        others keep exactly ``nn.Linear``'s keys.

        >>> lin = Fp8Linear(4, 2, recipe="fp8-tensorwise-delayed")
        >>> sorted(lin.state_dict()), sorted(Fp8Linear(4, 2, recipe="mxfp8").state_dict())
        (['_extra_state', 'bias', 'weight'], ['bias', 'weight'])
        """
        return self.state.to_checkpoint()

    def set_extra_state(self, state: Any) -> None:
        """Restore the scaling state from :meth:`get_extra_state` (bit for bit; ``None`` or ``{}`` changes nothing).

        >>> import torch
        >>> a = Fp8Linear(4, 2, recipe="fp8-tensorwise-delayed"); a(torch.ones(3, 4)).sum().backward()
        >>> b = Fp8Linear(4, 2, recipe="fp8-tensorwise-delayed"); b.load_state_dict(a.state_dict())
        <All keys matched successfully>
        >>> b.state.input.amaxes == a.state.input.amaxes, b.state.grad_output.steps
        (True, 1)
        """
        self.state.load_checkpoint(state)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        if not self.state.stateful:
            destination.pop(prefix + "_extra_state", None)  # nothing to keep: nn.Linear's keys exactly

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        key = prefix + "_extra_state"
        if key in missing_keys:  # an older checkpoint (or an nn.Linear's): the histories stay as they are
            missing_keys.remove(key)

    # ----- recomputation under activation checkpointing ----------------------------------------------
    def _drop_token(self, token: Any) -> None:
        """Forget the snapshot of the forward whose backward runs now."""
        if token is not None:
            for i, t in enumerate(self._pending):
                if t is token:
                    del self._pending[i]
                    break

    def _take_snapshot(self, key: tuple) -> dict[str, Any] | None:
        """The histories before the forward this recomputation repeats (the first waiting one with the same input)."""
        for i, (k, snap) in enumerate(self._pending):
            if k == key:
                del self._pending[i]
                return snap
        return None

    def extra_repr(self) -> str:
        return super().extra_repr() + f", recipe={self.recipe.name!r}"

    # ----- quantizing one role ------------------------------------------------------------------
    def _quantize(self, role: str, x: torch.Tensor, *, axis: int, record: bool = True, turned: bool = False,
                  values: bool = False, reuse: bool = False) -> tuple[Any, bool]:
        """``(cast, nonfinite)``: ``x`` cast for ``role`` with its blocks along ``axis`` (a QTensor, a rounded tensor, or ``x``).

        ``nonfinite`` says that ``x`` held an inf or NaN that the cast may have clamped (a scaled or
        saturating cast); FP32 roles and non-saturating 16-bit roundings carry them through themselves.

        ``turned=True`` (with ``axis=0``) returns the QTensor of ``x.T`` instead of its transpose.
        With ``values=True`` the QTensor keeps the float32 values its cast computes in the same pass
        (``quantize_tensor(..., keep_values=)``, where the C kernels cast it), for the GEMM to read:
        dequantized when the operand is K-blocked along this GEMM's reduction axis (the last axis of
        the tensor cast) and read by this GEMM only (``reuse=False``), else the decoded codes.
        """
        tq: TensorQuant | None = getattr(self.recipe, role)
        record = record and not self._quiet  # a recomputed forward measures nothing new
        if tq is None:
            if record:
                self.stats[role] = {"amax": tensor_amax(x), "scale": 1.0, "saturated_blocks": 0}
            return (x.t() if turned else x), False
        if tq.is_16bit:
            v = quantize(x, tq.format, saturate=tq.saturate)
            bad = False
            if record or tq.saturate:
                amax = tensor_amax(x)
                bad = tq.saturate and not math.isfinite(amax)
                if record:
                    self._record(role, x, v, amax=amax, scale=1.0, saturated=int(amax > tq.format.max))
            return (v.t() if turned else v), bad
        src = x if axis == 1 else x.t()
        if tq.scaling is None:  # a plain cast: scale 1
            q = QTensor(encode(src.detach().contiguous(), tq.format, saturate=tq.saturate),
                        torch.ones(1, 1, dtype=torch.float32, device=x.device), tq.format)
            amax = tensor_amax(src)
            saturated = int(amax > tq.format.max)
            bad = not math.isfinite(amax)
        else:
            state = getattr(self.state, role)
            if state is not None and role != "grad_output":
                if self._replay is not None:  # a recomputed forward casts as the original did, advancing nothing
                    state = _copy_history(self._replay[role])
                elif not getattr(self, "_advance", True):
                    state = _copy_history(state)  # evaluation reads the history without advancing it
            keep = None
            if values:
                keep = "values" if reuse or not _k_blocked(tq.scaling, tuple(src.shape)) else "dequantized"
            q = quantize_tensor(src, tq.format, tq.scaling, state=state, keep_values=keep,
                                count_flushed=record and role == "grad_output")  # the underflow, in the cast's walk
            amax, saturated = q.info.amax, q.info.saturated_blocks
            bad = bool(q.info.nonfinite_blocks)
        if axis == 0 and not turned:
            q = q.transpose()  # the held values with it, as a view
        if record:
            n = q.scales.numel()
            self._record(role, x, q if role == "grad_output" else None, amax=amax, saturated=saturated,
                         scale=q.scales.item() if n == 1 else float(q.scales.max()) if n else 1.0)
        return q, bad

    def _record(self, role: str, x: torch.Tensor, values: Any, *, amax: float, scale: float, saturated: int) -> None:
        st = {"amax": float(amax), "scale": float(scale), "saturated_blocks": int(saturated)}
        if role == "grad_output" and values is not None:
            info = values.info if isinstance(values, QTensor) else None
            if info is not None and info.flushed is not None:  # counted by the cast itself
                st["underflow"] = info.flushed / info.nonzero if info.nonzero else 0.0
            else:
                st["underflow"] = flushed_fraction(x, values)
        self.stats[role] = st

    # ----- forward ------------------------------------------------------------------------------
    def forward(self, x: torch.Tensor, is_first_microbatch: bool | None = None) -> torch.Tensor:
        """``x @ W^T + b`` through the recipe's GEMMs (F.linear for the all-FP32 recipe).

        ``is_first_microbatch`` (Transformer Engine's argument) is for gradient accumulation:
        ``True`` casts the weight and keeps the cast, ``False`` reuses the kept cast (the weight must
        be unchanged since), ``None`` casts it on every call unless inside :func:`weight_cache`.
        Under ``torch.autocast`` the input is upcast to FP32, the recipe runs as usual, and ``y`` is
        returned in the autocast dtype, as ``nn.Linear``'s would be. An empty batch gives an empty
        ``y`` (and a zero weight gradient), advancing no history.

        >>> import torch
        >>> lin = Fp8Linear(2, 1, bias=False, recipe="fp32"); _ = torch.nn.init.ones_(lin.weight)
        >>> lin(torch.tensor([[1.0, 2.0]])).tolist()
        [[3.0]]
        >>> with torch.autocast("cpu", dtype=torch.bfloat16):
        ...     Fp8Linear(2, 1, recipe="mxfp8")(torch.ones(3, 2)).dtype
        torch.bfloat16
        """
        r = self.recipe
        if all(getattr(r, role) is None for role in ROLES) and all(getattr(r, g).exact for g in ("fprop", "dgrad", "wgrad")):
            return F.linear(x, self.weight, self.bias)
        dev = x.device.type
        if torch.is_autocast_enabled(dev) and x.is_floating_point():
            out_dtype = torch.get_autocast_dtype(dev)
            with torch.autocast(dev, enabled=False):
                y = self._forward(x.float(), is_first_microbatch)
            return y.to(out_dtype)
        if x.dtype != torch.float32:
            raise TypeError(f"Fp8Linear takes float32 input (it casts per role itself), got {x.dtype}")
        return self._forward(x, is_first_microbatch)

    def _forward(self, x: torch.Tensor, is_first_microbatch: bool | None) -> torch.Tensor:
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features)
        if x2.shape[0] == 0:  # no tokens: nothing to scale, no history to advance
            y = x2 @ self.weight.t()
        else:
            # this call's runtime fields, set in __dict__ directly: nn.Module.__setattr__ costs microseconds a field
            rt = self.__dict__
            rt["_advance"] = self.training and torch.is_grad_enabled()  # evaluation does not move amax histories
            rt["_wmode"] = self._weight_mode(is_first_microbatch)
            rt["_replay"] = rt["_token"] = None
            rt["_quiet"] = _in_backward()
            if self._advance and (self.state.input is not None or self.state.weight is not None):
                key = _fingerprint(x2)
                if self._quiet:  # activation checkpointing recomputes a forward: cast as it did, advance nothing
                    rt["_replay"] = self._take_snapshot(key)
                if self._replay is None:
                    rt["_token"] = (key, self.state.snapshot())
                    self._pending.append(self._token)
                    if len(self._pending) > 256:  # forwards whose backward never ran
                        del self._pending[0]
            try:
                y = _Fp8LinearFunction.apply(x2, self.weight, self.bias, self)
            finally:
                rt["_replay"] = rt["_token"] = rt["_wmode"] = None
                rt["_quiet"] = False
            return y.reshape(*lead, self.out_features)
        y = y.reshape(*lead, self.out_features)
        return y + self.bias if self.bias is not None else y

    def _weight_mode(self, is_first_microbatch: bool | None) -> str | None:
        """None (cast the weight), "store" (cast and keep it) or "use" (the kept cast) for this call."""
        if is_first_microbatch is not None and not isinstance(is_first_microbatch, bool):
            raise TypeError(f"is_first_microbatch is True, False or None, got {is_first_microbatch!r}")
        c = self._wcache
        valid = c is not None and c["weight"] is self.weight and c["version"] == self.weight._version
        if is_first_microbatch is False:
            if not valid:
                raise ValueError("is_first_microbatch=False reuses the weight cast of the first micro-batch, but "
                                 + ("none was kept (pass is_first_microbatch=True first)" if c is None else
                                    "the weight has changed since (an optimizer step?): pass is_first_microbatch=True"))
            return "use"
        if valid and _in_backward():
            return "use"  # a recomputed forward reuses the cast its original kept
        if is_first_microbatch is True:
            return "store"
        if self._cache_on:
            return "use" if valid else "store"
        return None
