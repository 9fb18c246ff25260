"""Dynamic loss scaling, step for step as ``torch.amp.GradScaler`` does it.

FP16 (and E5M2) gradients underflow: small gradients flush to zero. Multiplying the loss by a
large scale ``S`` multiplies every gradient by ``S`` (backprop is linear), lifting them into
range; the optimizer then divides by ``S``. Too large an ``S`` overflows to inf/NaN, so the scale
is adjusted while training:

- a step whose gradients hold inf or NaN is *skipped* and ``S *= backoff_factor``;
- after ``growth_interval`` consecutive clean steps, ``S *= growth_factor`` (unless that would
  overflow float32); an overflow resets that count.

The scale is a float32 number, updated as ``float32(float64(S) * factor)`` exactly like
PyTorch's ``_amp_update_scale_`` kernel, and gradients are unscaled by
``float32(1 / float64(S))`` like ``GradScaler.unscale_``; a test drives both with the same
gradient sequence and compares the scale trajectories.

>>> s = LossScaler(init_scale=8.0, growth_interval=2)
>>> [s.update(found_inf) for found_inf in (False, False, True, False)], s.scale
([True, True, False, True], 8.0)
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from ..codec.backend import is_torch, torch
from ..validation import check_int, check_real

_F32_MAX = float(np.finfo(np.float32).max)

__all__ = ["LossScaler", "has_inf_or_nan"]


def has_inf_or_nan(grads: "Iterable[Any] | Any") -> bool:
    """Whether any gradient (numpy array, torch tensor or number; ``None`` entries skipped) is not finite.

    >>> import numpy as np
    >>> has_inf_or_nan([np.ones(3), None]), has_inf_or_nan([np.array([1.0, np.inf])])
    (False, True)
    """
    if is_torch(grads) or isinstance(grads, (np.ndarray, float, int)):
        grads = [grads]
    for g in grads:
        if g is None:
            continue
        if is_torch(g):
            if not bool(torch.isfinite(g).all()):
                return True
        elif not np.isfinite(np.asarray(g)).all():
            return True
    return False


class LossScaler:
    """Dynamic loss scaling with ``torch.amp.GradScaler``'s rules and defaults.

    init_scale
        Starting scale (2^16, as GradScaler).
    growth_factor
        Multiplier after ``growth_interval`` clean steps in a row (> 1).
    backoff_factor
        Multiplier after a step with inf/NaN gradients (between 0 and 1).
    growth_interval
        Clean steps needed before the scale grows (2000).

    Use: ``scaler.scale_loss(loss)`` before backward, ``found_inf = scaler.unscale_(grads)``
    (divides the gradients by the scale in place and checks them), then
    ``if scaler.update(found_inf): optimizer_step()``. ``scaler.step(grads)`` does the last two.

    >>> import numpy as np
    >>> s = LossScaler(init_scale=4.0)
    >>> g = [np.array([8.0, 2.0], np.float32)]
    >>> s.scale_loss(0.5), s.step(g), g[0].tolist()
    (2.0, True, [2.0, 0.5])
    """

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000) -> None:
        init = check_real("LossScaler", "init_scale", init_scale, positive=True)
        with np.errstate(over="ignore"):
            init32 = float(np.float32(init))
        if not math.isfinite(init32):
            raise ValueError(f"LossScaler.init_scale must fit in float32 (at most {_F32_MAX!r}), which the scale is "
                             f"stored in, got {init_scale!r}")
        growth_factor = check_real("LossScaler", "growth_factor", growth_factor, minimum=1.0, exclusive=True)
        backoff_factor = check_real("LossScaler", "backoff_factor", backoff_factor, minimum=0.0, maximum=1.0, exclusive=True)
        growth_interval = check_int("LossScaler", "growth_interval", growth_interval, minimum=1)
        self.init_scale = init
        self.growth_factor = growth_factor
        self.backoff_factor = backoff_factor
        self.growth_interval = growth_interval
        self._scale = init32
        self.growth_tracker = 0  #: clean steps since the last growth or overflow
        self.skipped_steps = 0  #: steps skipped because of inf/NaN gradients

    @property
    def scale(self) -> float:
        """The current loss scale (a float32 value).

        >>> LossScaler().scale
        65536.0
        """
        return self._scale

    def scale_loss(self, loss: Any) -> Any:
        """``loss * scale`` (a number, numpy array or torch tensor; the scale is float32).

        >>> LossScaler(init_scale=1024).scale_loss(0.25)
        256.0
        """
        if is_torch(loss):
            return loss * torch.tensor(self._scale, dtype=torch.float32, device=loss.device)
        if isinstance(loss, np.ndarray):
            return loss * np.float32(self._scale)
        return float(loss) * self._scale

    def unscale_(self, grads: "Iterable[Any] | Any") -> bool:
        """Divide gradients in place by the scale (multiply by ``float32(1/scale)``); return whether any is inf/NaN.

        numpy arrays must be float arrays (changed in place); ``None`` entries are skipped.

        >>> import numpy as np
        >>> g = [np.array([512.0, np.inf], np.float32)]
        >>> LossScaler(init_scale=256).unscale_(g), g[0].tolist()
        (True, [2.0, inf])
        """
        if is_torch(grads) or isinstance(grads, np.ndarray):
            grads = [grads]
        # float32(1 / scale) as GradScaler computes it; a scale that underflowed to 0 gives inf (as torch does)
        inv = float(np.float32(1.0 / self._scale)) if self._scale != 0 else math.inf
        found = False
        for g in grads:
            if g is None:
                continue
            if is_torch(g):
                found |= not bool(torch.isfinite(g).all())
                g.mul_(inv)
            elif isinstance(g, np.ndarray) and g.dtype.kind == "f":
                found |= not bool(np.isfinite(g).all())
                np.multiply(g, g.dtype.type(inv), out=g)
            else:
                raise TypeError(f"unscale_ changes gradients in place: give float numpy arrays or torch tensors, got {type(g).__name__}")
        return found

    def update(self, found_inf: bool) -> bool:
        """Adjust the scale after a step; return whether the optimizer step should be applied (no inf/NaN).

        >>> s = LossScaler(init_scale=2.0**16); s.update(True), s.scale
        (False, 32768.0)
        """
        if bool(found_inf):
            self._scale = float(np.float32(self._scale * self.backoff_factor))
            self.growth_tracker = 0
            self.skipped_steps += 1
            return False
        successful = self.growth_tracker + 1
        if successful == self.growth_interval:
            with np.errstate(over="ignore"):
                grown = float(np.float32(self._scale * self.growth_factor))
            if math.isfinite(grown):
                self._scale = grown
            self.growth_tracker = 0
        else:
            self.growth_tracker = successful
        return True

    def step(self, grads: "Iterable[Any] | Any") -> bool:
        """``update(unscale_(grads))``: unscale and check the gradients, adjust the scale, say whether to step.

        >>> import numpy as np
        >>> LossScaler().step([np.array([np.nan], np.float32)])
        False
        """
        return self.update(self.unscale_(grads))

    def state_dict(self) -> dict[str, Any]:
        """The scaler's state, with GradScaler's key names.

        >>> sorted(LossScaler().state_dict())
        ['_growth_tracker', 'backoff_factor', 'growth_factor', 'growth_interval', 'scale']
        """
        return {"scale": self._scale, "growth_factor": self.growth_factor, "backoff_factor": self.backoff_factor,
                "growth_interval": self.growth_interval, "_growth_tracker": self.growth_tracker}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict` (or from ``GradScaler.state_dict()``).

        >>> s = LossScaler(); s.load_state_dict({"scale": 8.0, "_growth_tracker": 3}); s.scale, s.growth_tracker
        (8.0, 3)
        """
        self._scale = float(np.float32(state["scale"]))
        self.growth_factor = float(state.get("growth_factor", self.growth_factor))
        self.backoff_factor = float(state.get("backoff_factor", self.backoff_factor))
        self.growth_interval = int(state.get("growth_interval", self.growth_interval))
        self.growth_tracker = int(state.get("_growth_tracker", 0))

    def __repr__(self) -> str:
        return (f"LossScaler(scale={self._scale!r}, growth_factor={self.growth_factor}, backoff_factor={self.backoff_factor}, "
                f"growth_interval={self.growth_interval}, growth_tracker={self.growth_tracker})")
