"""argparse argument types shared by the command lines: bad values are reported before anything runs.

>>> positive_int("4096"), nonnegative_int("0")
(4096, 0)
"""

from __future__ import annotations

import argparse

__all__ = ["positive_int", "nonnegative_int"]


def _whole(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1.

    >>> positive_int("12")
    12
    """
    return _whole(text, 1)


def nonnegative_int(text: str) -> int:
    """An argparse type: a whole number >= 0 (seeds).

    >>> nonnegative_int("3")
    3
    """
    return _whole(text, 0)
