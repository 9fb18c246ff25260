"""Checks of recipe fields, shared by every recipe's ``__post_init__`` so the messages read the same.

>>> check_int("MXScaling", "block_size", 32, minimum=1)
32
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_int", "check_bool"]


def check_int(owner: str, name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None,
              optional: bool = False) -> int | None:
    """``value`` as an int, or a TypeError (not an int) / ValueError (out of range) naming ``owner.name``.

    >>> check_int("IntScaling", "bits", 1, minimum=2, maximum=16)
    Traceback (most recent call last):
    ...
    ValueError: IntScaling.bits must be from 2 to 16, got 1
    """
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        what = "None or an int" if optional else "an int"
        raise TypeError(f"{owner}.{name} must be {what}, got {value!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        if maximum is None:
            rng = "positive" if minimum == 1 else f"at least {minimum}"
            raise ValueError(f"{owner}.{name} must be {rng}, got {value!r}")
        raise ValueError(f"{owner}.{name} must be from {minimum} to {maximum}, got {value!r}")
    return int(value)


def check_bool(owner: str, name: str, value: Any) -> bool:
    """``value`` if it is True or False, else a TypeError naming ``owner.name``.

    >>> check_bool("TensorScaling", "pow2", 1)
    Traceback (most recent call last):
    ...
    TypeError: TensorScaling.pow2 must be True or False, got 1
    """
    if not isinstance(value, bool):
        raise TypeError(f"{owner}.{name} must be True or False, got {value!r}")
    return value
