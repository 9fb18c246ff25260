"""Seeds for hidden randomized cases: from the grading environment, so published exercises do not reveal them.

The grading tooling (``fp8lab labs autograde`` / ``grade``) sets ``FP8LAB_GRADING_SEED`` for the
nbgrader run and every kernel it starts, so one seed grades a whole class deterministically. Without
it (a learner running the source notebook by hand) each run draws a fresh seed.

>>> import os
>>> os.environ[SEED_ENV] = "1234"
>>> grading_seed(), grading_rng("decode").integers(0, 256, 3).tolist() == grading_rng("decode").integers(0, 256, 3).tolist()
(1234, True)
>>> del os.environ[SEED_ENV]
"""

from __future__ import annotations

import os
import zlib

import numpy as np

__all__ = ["SEED_ENV", "grading_seed", "grading_rng"]

SEED_ENV = "FP8LAB_GRADING_SEED"


def grading_seed() -> int:
    """The grading seed from ``FP8LAB_GRADING_SEED``, or a fresh random one when it is not set.

    >>> isinstance(grading_seed(), int)
    True
    """
    text = os.environ.get(SEED_ENV, "").strip()
    if not text:
        return int.from_bytes(os.urandom(8), "little")
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{SEED_ENV} must be an integer, got {text!r}") from None


def grading_rng(task: str) -> np.random.Generator:
    """A numpy Generator for one task's hidden cases: the grading seed mixed with the task name.

    >>> grading_rng("a").random() != grading_rng("b").random() or "unset seeds differ anyway"
    True
    """
    if not isinstance(task, str) or not task:
        raise TypeError(f"grading_rng expects the task name, got {task!r}")
    return np.random.default_rng([grading_seed() % 2**64, zlib.crc32(task.encode())])
