"""Exact stochastic rounding: Bernoulli draws whose probability is ``sig / 2^s`` for any shift ``s``.

Stochastic rounding keeps ``E[SR(x)] = x`` only if a value that lies a fraction ``f`` of the way
from one representable number to the next rounds up with probability exactly ``f``. For a value far
below a format's smallest subnormal, ``f = sig / 2^s`` with a shift ``s`` of well over 100 bits, more
than one random integer holds. :func:`bernoulli_pow2` decides ``R < sig`` for a uniform ``s``-bit
``R`` piecewise: the low 53 bits against ``sig``, and the bits above must all be zero, drawn 62 at a
time and only for the few elements still in the running, so its cost is one draw per element plus
almost nothing.

>>> import numpy as np
>>> g = np.random.default_rng(0)
>>> hits = bernoulli_pow2(np.full(1 << 16, 3, np.int64), np.full(1 << 16, 2, np.int64), NUMPY, g)
>>> bool(0.73 < hits.mean() < 0.77)  # P = 3/4
True
"""

from __future__ import annotations

from .backend import NUMPY, Backend

__all__ = ["bernoulli_pow2", "stochastic_fraction_up"]

_LOW_BITS = 53  # sig < 2^53: one draw of this many bits settles the low part
_CHUNK_BITS = 62  # random_bits draws up to this many bits at once


def bernoulli_pow2(sig, s, be: Backend, generator, where=None):
    """Booleans with ``P(True) = sig / 2^s`` exactly (int64 ``sig`` in ``[0, 2^min(s, 53)]``, int64 ``s >= 0``).

    ``where`` (a boolean mask) limits the random draws to the elements that need them; the others are False.

    >>> import numpy as np
    >>> bernoulli_pow2(np.array([0, 4]), np.array([2, 2]), NUMPY, np.random.default_rng(1)).tolist()
    [False, True]
    """
    low = be.minimum(s, _LOW_BITS)
    high = s - low  # the bits of R above the low part must all be zero
    r = be.random_bits(tuple(sig.shape), low, generator, sig)
    hit = r < sig
    if where is not None:
        hit = hit & where
    high = be.where(hit, high, 0)
    while bool((high > 0).any()):
        idx = be.nonzero(high > 0)
        k = be.minimum(high[idx], _CHUNK_BITS)
        rb = be.random_bits(tuple(k.shape), k, generator, sig)
        hit[idx] = rb == 0
        high[idx] = be.where(rb == 0, high[idx] - k, 0)
    return hit


def stochastic_fraction_up(frac, be: Backend, generator):
    """Booleans with ``P(True) = frac`` exactly, for float ``frac`` in ``[0, 1)`` (float32 or float64).

    ``frac = mant * 2^exp`` with ``0.5 <= mant < 1``; ``mant * 2^53`` is an integer, so the
    probability is ``(mant * 2^53) / 2^(53 - exp)``, settled by :func:`bernoulli_pow2`.

    >>> import numpy as np
    >>> up = stochastic_fraction_up(np.full(1 << 16, 2.0**-20), NUMPY, np.random.default_rng(2))
    >>> int(up.sum()) < 8  # expected 1/16 of an element
    True
    """
    mant, exp = be.frexp(frac)
    sig = be.astype(be.ldexp(mant, be.full_like_int(exp, _LOW_BITS)), be.int64())
    s = be.astype(_LOW_BITS - exp, be.int64())
    s = be.where(sig == 0, 0, s)  # frac == 0 (frexp gives exponent 0): never up
    return bernoulli_pow2(sig, s, be, generator)
