"""Argument checks shared by every public constructor and function, so errors read the same everywhere.

The rule: a flag is a ``bool`` and a size is an ``int`` (numpy integers accepted, ``bool`` never);
the wrong *type* raises :class:`TypeError`, a value of the right type but out of range raises
:class:`ValueError`, and both name the owner and the argument.

>>> check_int("MXScaling", "block_size", 32, minimum=1)
32
>>> check_bool("FloatFormat", "signed", "no")
Traceback (most recent call last):
...
TypeError: FloatFormat.signed must be True or False, got 'no'
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Iterable

import numpy as np

__all__ = ["check_int", "check_bool", "check_real", "check_choice", "check_str", "check_block", "lookup_key"]


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


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
    if not _is_int(value):
        what = "None or an int" if optional else "an int"
        raise TypeError(f"{owner}.{name} must be {what}, got {value!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        if maximum is None:
            rng = "positive" if minimum == 1 else f"at least {minimum}"
            raise ValueError(f"{owner}.{name} must be {rng}, got {value!r}")
        if minimum is None:
            raise ValueError(f"{owner}.{name} must be at most {maximum}, got {value!r}")
        raise ValueError(f"{owner}.{name} must be from {minimum} to {maximum}, got {value!r}")
    return int(value)


def check_bool(owner: str, name: str, value: Any) -> bool:
    """``value`` as a bool if it is True or False (numpy bools too), else a TypeError naming ``owner.name``.

    >>> import numpy as np
    >>> check_bool("TensorScaling", "pow2", np.True_)
    True
    >>> check_bool("TensorScaling", "pow2", 1)
    Traceback (most recent call last):
    ...
    TypeError: TensorScaling.pow2 must be True or False, got 1
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, np.bool_):  # NumPy 2 names its type ``numpy.bool``; it is no subclass of bool
        return bool(value)
    raise TypeError(f"{owner}.{name} must be True or False, got {value!r}")


def check_real(owner: str, name: str, value: Any, *, positive: bool = False, finite: bool = True,
               minimum: float | None = None, maximum: float | None = None, exclusive: bool = False) -> float:
    """``value`` as a Python float (ints and numpy scalars accepted, bools not), checked for range.

    ``finite=False`` lets inf and NaN through; ``exclusive`` makes ``minimum`` and ``maximum`` open bounds.

    >>> check_real("LossScaler", "init_scale", __import__("numpy").float32(4), positive=True)
    4.0
    >>> check_real("LossScaler", "backoff_factor", 1.0, minimum=0, maximum=1, exclusive=True)
    Traceback (most recent call last):
    ...
    ValueError: LossScaler.backoff_factor must be between 0 and 1 (exclusive), got 1.0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}.{name} must be a real number, got {value!r}")
    v = float(value)
    if finite and not math.isfinite(v):
        raise ValueError(f"{owner}.{name} must be a finite number, got {value!r}")
    if math.isnan(v):
        return v
    if positive and not v > 0:
        raise ValueError(f"{owner}.{name} must be positive, got {value!r}")
    lo_bad = minimum is not None and (v <= minimum if exclusive else v < minimum)
    hi_bad = maximum is not None and (v >= maximum if exclusive else v > maximum)
    if lo_bad or hi_bad:
        kind = " (exclusive)" if exclusive else ""
        if minimum is not None and maximum is not None:
            raise ValueError(f"{owner}.{name} must be between {minimum:g} and {maximum:g}{kind}, got {value!r}")
        bound = f"above {minimum:g}" if exclusive and minimum is not None else (
            f"at least {minimum:g}" if minimum is not None else (f"below {maximum:g}" if exclusive else f"at most {maximum:g}"))
        raise ValueError(f"{owner}.{name} must be {bound}, got {value!r}")
    return v


def check_choice(owner: str, name: str, value: Any, choices: Iterable[str]) -> str:
    """``value`` if it is one of the string ``choices``, else a TypeError/ValueError listing them.

    >>> check_choice("Accumulator", "model", "align", ("round", "align"))
    'align'
    """
    options = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(f"{owner}.{name} must be one of {list(options)}, got {value!r}")
    if value not in options:
        raise ValueError(f"{owner}.{name} must be one of {list(options)}, got {value!r}")
    return value


def check_str(owner: str, name: str, value: Any) -> str:
    """``value`` if it is a non-empty string, else a TypeError/ValueError naming ``owner.name``.

    >>> check_str("FloatFormat", "name", "e3m3")
    'e3m3'
    """
    if not isinstance(value, str):
        raise TypeError(f"{owner}.{name} must be a string, got {value!r}")
    if not value.strip():
        raise ValueError(f"{owner}.{name} must not be empty")
    return value


def check_block(block: Any, owner: str = "a block", *, allow_empty: bool = False) -> tuple[int, ...]:
    """``block`` as a tuple of positive ints, or a TypeError (not a tuple of ints) / ValueError (not positive).

    >>> check_block([1, 128])
    (1, 128)
    >>> check_block((2.5, 3), "QTensor.block")
    Traceback (most recent call last):
    ...
    TypeError: QTensor.block is a tuple of positive ints such as (1, 128), got (2.5, 3)
    """
    if type(block) is tuple and (block or allow_empty) and all(type(v) is int and v >= 1 for v in block):
        return block  # already what is asked for (the common case, kept cheap)
    try:
        b = tuple(block)
    except TypeError:
        raise TypeError(f"{owner} is a tuple of positive ints such as (1, 128), got {block!r}") from None
    if any(not _is_int(v) for v in b):
        raise TypeError(f"{owner} is a tuple of positive ints such as (1, 128), got {block!r}")
    if (not b and not allow_empty) or any(v < 1 for v in b):
        raise ValueError(f"{owner} is a non-empty tuple of positive ints such as (1, 128), got {block!r}")
    return tuple(int(v) for v in b)


def lookup_key(name: str) -> str:
    """The one normalisation every name look-up uses: case, surrounding space and ``-``/``_``/space ignored.

    >>> lookup_key(" Llama-3_70B "), lookup_key("float8-e4m3fn") == lookup_key("FLOAT8_E4M3FN")
    ('llama_3_70b', True)
    """
    return "_".join(name.strip().lower().replace("-", " ").replace("_", " ").split())
