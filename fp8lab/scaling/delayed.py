"""Delayed scaling (Transformer Engine's recipe): this step's scale comes from earlier steps' amax history.

Computing a tensor's amax before casting it costs an extra pass over memory, so Transformer
Engine's ``DelayedScaling`` casts with a scale computed from the amax *history* of previous
steps and records the current amax afterwards. Per call:

1. ``amax_h`` = max of the recorded history (``algo="max"``) or its newest entry
   (``algo="most_recent"``). TE's scale is ``fp8_max / amax_h / 2^margin``; we keep its inverse,
   the dequantisation multiplier ``s = amax_h * 2^margin / fmt.max`` (float64, rounded up to
   float32; a power of two with ``pow2=True``).
2. The first call has no history: like TE, whose scale starts at 1, it uses ``s = 1.0``. If the
   history holds only zeros, the previous scale is kept (as TE does for ``amax == 0``).
3. The tensor is cast with ``s`` (saturating). If its own amax outruns the range
   ``s * fmt.max`` (i.e. ``amax > amax_h * 2^margin``), elements clip: ``info["overflow"]``.
4. Its finite amax is appended to the history (the last ``history_len`` are kept).

A NaN in the history (``quantize`` records finite amaxes, but :meth:`AmaxHistory.push` takes any
number) is handled as Transformer Engine handles it, whatever its position: TE takes
``torch.max`` over the history, which propagates NaN, and keeps the previous scale where that amax
is not finite (``torch.where(torch.isfinite(amax), sf, scale)``). So the history's amax is NaN
while a NaN is in the window (``algo="max"``; for ``"most_recent"`` when it is the newest), and
the scale stays the previous one, as for an infinite amax, until the NaN leaves the window.

The recipe is frozen configuration; the history is a separate, mutable :class:`AmaxHistory` owned
by whoever quantizes, passed as ``state=`` (``fp8lab.nn`` keeps one per layer and per role, as TE
keeps one per FP8 tensor). Without ``state=``, each recipe *object* uses a history of its own, so
``quantize_tensor(x, fmt, r)`` called again and again with one ``r`` advances its history exactly as
TE does; two equal recipe objects never share one. ``r.reset()`` forgets it.

>>> import numpy as np
>>> r = DelayedScaling(history_len=4)
>>> [r.quantize(np.array([a], np.float32), "e4m3").info["overflow"] for a in (100.0, 500.0, 200.0)]
[False, True, False]
>>> r.history
(100.0, 500.0, 200.0)
>>> h = r.new_state(); _ = r.quantize(np.array([7.0], np.float32), "e4m3", state=h); h.amaxes, len(r.history)
((7.0,), 3)
>>> h.push(float("nan")); h.push(3.0); r.amax_from_history(h), r.next_scale("e4m3", h) == h.scale
(nan, True)
"""

from __future__ import annotations

import math
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formats import Format
from ..qtensor import QTensor
from ..registry import get_format
from .base import Recipe, ScaleSet, block_stats, finalize
from .blocks import num_blocks, to_numpy, whole_block
from ..validation import check_bool, check_int
from .scales import MARGIN_LIMIT, float_scales

__all__ = ["DelayedScaling", "AmaxHistory"]


class AmaxHistory:
    """The mutable state of a :class:`DelayedScaling`: recent amaxes and the last scale used.

    >>> h = AmaxHistory(2); h.push(3.0); h.push(5.0); h.push(1.0); h.amaxes
    (5.0, 1.0)
    """

    def __init__(self, history_len: int = 1024) -> None:
        self.history_len = check_int("AmaxHistory", "history_len", history_len, minimum=1)
        self._amax: deque[float] = deque(maxlen=self.history_len)
        self._nans = 0  #: how many of the recorded amaxes are NaN (so the max needs no second pass)
        #: the window's running maximum: (push number, amax) of the non-NaN amaxes that no later one exceeds,
        #: decreasing, so the window's max is the first (a sliding-window maximum: no pass over 1024 entries a step)
        self._peaks: deque[tuple[int, float]] = deque()
        self._pushed = 0  #: amaxes pushed since the last reset (numbers the entries of _peaks)
        #: ((amax, format max, margin, pow2), scale): the last scale float_scales gave, a pure function of the key
        self._scale_memo: tuple | None = None
        self.scale: float = 1.0  #: the dequantisation multiplier of the last call (TE starts from 1)
        self.steps: int = 0

    def push(self, amax: float) -> None:
        """Record one step's amax (the oldest leaves a full history).

        >>> h = AmaxHistory(); h.push(2.0); h.steps
        1
        """
        a = float(amax)
        if len(self._amax) == self.history_len and math.isnan(self._amax[0]):
            self._nans -= 1  # the NaN about to leave the window
        self._amax.append(a)
        self._nans += math.isnan(a)
        peaks, n = self._peaks, self._pushed
        if peaks and peaks[0][0] <= n - self.history_len:
            peaks.popleft()  # left the window
        if not math.isnan(a):
            while peaks and peaks[-1][1] <= a:
                peaks.pop()
            peaks.append((n, a))
        self._pushed = n + 1
        self.steps += 1

    def copy(self) -> "AmaxHistory":
        """An independent copy (its deques copied; their floats and tuples are immutable), for a snapshot.

        >>> h = AmaxHistory(3); h.push(2.0); c = h.copy(); c.push(9.0); h.amaxes, c.amaxes, c.window_max()
        ((2.0,), (2.0, 9.0), 9.0)
        """
        c = object.__new__(type(self))
        c.__dict__.update(self.__dict__)
        c._amax = self._amax.copy()
        c._peaks = self._peaks.copy()
        return c

    def window_max(self) -> float | None:
        """The largest recorded amax (NaN while a NaN is recorded; None for an empty history), without a pass over it.

        >>> h = AmaxHistory(2); [h.push(a) for a in (5.0, 1.0, 2.0)] and h.window_max(), max(h.amaxes)
        (2.0, 2.0)
        """
        if not self._amax:
            return None
        if self._nans:
            return math.nan
        return self._peaks[0][1]

    @property
    def has_nan(self) -> bool:
        """Whether a NaN is among the recorded amaxes.

        >>> h = AmaxHistory(2); h.push(float("nan")); h.has_nan, (h.push(1.0), h.push(2.0), h.has_nan)[-1]
        (True, False)
        """
        return self._nans > 0

    @property
    def amaxes(self) -> tuple[float, ...]:
        """The recorded amaxes, oldest first.

        >>> AmaxHistory().amaxes
        ()
        """
        return tuple(self._amax)

    def __repr__(self) -> str:
        return f"AmaxHistory(history_len={self.history_len}, steps={self.steps}, scale={self.scale!r})"

    def reset(self) -> None:
        """Forget everything: the next call starts from scale 1 again.

        >>> h = AmaxHistory(); h.push(1.0); h.reset(); h.amaxes, h.scale
        ((), 1.0)
        """
        self._amax.clear()
        self._nans = 0
        self._peaks.clear()
        self._pushed = 0
        self.scale = 1.0
        self.steps = 0


#: Each DelayedScaling object's own history, for calls without ``state=`` (keyed by identity, so two
#: equal recipe objects never share one; an entry goes when its recipe is garbage-collected).
_OWN_STATES: dict[int, AmaxHistory] = {}


@dataclass(frozen=True)
class DelayedScaling(Recipe):
    """Per-tensor scaling from an amax history of earlier calls (Transformer Engine's ``DelayedScaling``).

    history_len
        How many past amaxes are kept (TE's ``amax_history_len``, default 1024).
    algo
        ``"max"``: the scale fits the largest amax in the history (TE's default);
        ``"most_recent"``: it fits the previous call's amax only.
    margin
        Headroom in powers of two: the range is ``2^margin`` times the history's amax.
    pow2
        Round the scale up to a power of two (as older Transformer Engine releases did).

    The history is state, not configuration: :meth:`new_state` makes one, ``quantize(x, fmt,
    state=h)`` reads and advances it; without ``state=`` the object's own history is used.

    >>> r = DelayedScaling(algo="most_recent")
    >>> _ = r.quantize(np.array([896.0], np.float32), "e4m3"); r.scale, r.next_scale("e4m3")
    (1.0, 2.0)
    """

    history_len: int = 1024
    algo: str = "max"
    margin: int = 0
    pow2: bool = False

    stateful = True

    def __post_init__(self) -> None:
        check_int("DelayedScaling", "history_len", self.history_len, minimum=1)
        if self.algo not in ("max", "most_recent"):
            raise ValueError(f"DelayedScaling.algo is 'max' or 'most_recent', got {self.algo!r}")
        check_int("DelayedScaling", "margin", self.margin, minimum=-MARGIN_LIMIT, maximum=MARGIN_LIMIT)
        object.__setattr__(self, "pow2", check_bool("DelayedScaling", "pow2", self.pow2))

    # ----- state ------------------------------------------------------------------------------
    def new_state(self) -> AmaxHistory:
        """A fresh, empty history for this recipe (one per tensor that is quantized with it).

        >>> DelayedScaling(history_len=16).new_state().history_len
        16
        """
        return AmaxHistory(self.history_len)

    @property
    def state(self) -> AmaxHistory:
        """This object's own history, used by calls without ``state=``.

        >>> r = DelayedScaling(); r.state is r.state, r.state is DelayedScaling().state
        (True, False)
        """
        key = id(self)
        own = _OWN_STATES.get(key)
        if own is None:
            own = _OWN_STATES[key] = self.new_state()
            weakref.finalize(self, _OWN_STATES.pop, key, None)
        return own

    def _resolve(self, state: AmaxHistory | None) -> AmaxHistory:
        if state is None:
            return self.state
        if not isinstance(state, AmaxHistory):
            raise TypeError(f"DelayedScaling's state is an AmaxHistory (from recipe.new_state()), got {type(state).__name__}")
        if state.history_len != self.history_len:
            raise ValueError(f"this AmaxHistory keeps {state.history_len} amaxes but the recipe's history_len is "
                             f"{self.history_len}; make it with recipe.new_state()")
        return state

    @property
    def history(self) -> tuple[float, ...]:
        """Recorded amaxes of the object's own history, oldest first (at most ``history_len``).

        >>> DelayedScaling().history
        ()
        """
        return self.state.amaxes

    @property
    def scale(self) -> float:
        """The dequantisation multiplier of the object's own last call (1.0 before the first).

        >>> DelayedScaling().scale
        1.0
        """
        return self.state.scale

    def amax_from_history(self, state: AmaxHistory | None = None) -> float | None:
        """The amax the next call's scale will fit (None while the history is empty; NaN while a NaN is in it, as TE's ``torch.max``).

        >>> r = DelayedScaling(); r.state.push(3.0); r.state.push(2.0); r.amax_from_history()
        3.0
        """
        st = self._resolve(state)
        h = st._amax
        if not h:
            return None
        if self.algo != "max":
            return h[-1]
        return st.window_max()  # NaN while one is recorded (Python's max would depend on where the NaN sits)

    def reset(self, state: AmaxHistory | None = None) -> None:
        """Forget the history (the object's own, or ``state``); the next call uses scale 1.

        >>> r = DelayedScaling(); r.state.push(3.0); r.reset(); r.history
        ()
        """
        self._resolve(state).reset()

    # ----- the recipe -------------------------------------------------------------------------
    def block_for(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The whole tensor is one block.

        >>> DelayedScaling().block_for((2, 3))
        (2, 3)
        """
        return whole_block(shape)

    def next_scale(self, fmt: "Format | str" = "e4m3", state: AmaxHistory | None = None) -> float:
        """The dequantisation multiplier the next call will use for ``fmt``: ``amax_h * 2^margin / fmt.max``.

        >>> r = DelayedScaling(margin=1); r.state.push(224.0); r.next_scale("e4m3")
        1.0
        """
        st = self._resolve(state)
        return self._scale_for(self.amax_from_history(st), get_format(fmt), st)

    def _scale_for(self, amax_h: float | None, fmt: Format, st: AmaxHistory) -> float:
        if amax_h is None or not (amax_h > 0 and math.isfinite(amax_h)):  # zero, NaN or inf: keep the scale (TE)
            return st.scale
        key = (amax_h, fmt.max, int(self.margin), self.pow2)
        if st._scale_memo is not None and st._scale_memo[0] == key:  # the window's max rarely changes: a memo
            return st._scale_memo[1]
        scale = float(float_scales(np.array([amax_h]), fmt.max, margin=int(self.margin), pow2=self.pow2)[0])
        st._scale_memo = (key, scale)
        return scale

    def compute_scales(self, amax: np.ndarray, fmt: Format, state: AmaxHistory | None = None) -> ScaleSet:
        """The scale from the history (not from ``amax``, which is this call's and is recorded afterwards).

        >>> r = DelayedScaling(); r.state.push(896.0)
        >>> r.compute_scales(np.array([[5.0]]), __import__("fp8lab").get_format("e4m3")).scales.tolist()
        [[2.0]]
        """
        st = self._resolve(state)
        amax_h = self.amax_from_history(st)  # one pass over the history serves the scale and the report
        return ScaleSet(np.full(np.shape(amax), self._scale_for(amax_h, fmt, st), dtype=np.float32),
                        "e8m0" if self.pow2 else "float32", info={"amax_used": amax_h, "step": st.steps})

    def quantize(self, x: Any, fmt: "Format | str", state: AmaxHistory | None = None) -> QTensor:
        """Cast with the history's scale, then record this tensor's amax in the history.

        >>> r = DelayedScaling(); q = r.quantize(np.array([896.0], np.float32), "e4m3")
        >>> q.dequantize().tolist(), q.info["overflow"], r.history
        ([448.0], True, (896.0,))
        >>> r.quantize(np.array(3.0, np.float32), "e4m3").codes.shape
        ()
        """
        fmt = get_format(fmt)
        st = self._resolve(state)
        if x.ndim == 0:  # one element: quantized as shape (1,), given back 0-d (as quantize_tensor does)
            q = self.quantize(x.reshape(1), fmt, st)
            return QTensor(q.codes.reshape(()), q.scales.reshape(()), q.format, scaling=q.scaling, block=(),
                           scale_format=q.scale_format, tensor_scale=q.tensor_scale, info=q.info, dtype=q.dtype)
        block = self.block_for(tuple(x.shape))
        stats = block_stats(x, block)
        q = finalize(x, fmt, self, block, stats, self.compute_scales(np.zeros(num_blocks(tuple(x.shape), block)), fmt, st))
        if q.numel:
            st.scale = float(to_numpy(q.scales).reshape(-1)[0])
            st.push(q.info["amax"])
        return q
