"""Graded labs: the checks their tests call (kernel side) and, in submodules, the nbgrader tooling.

Importing this package is light (numpy only): the grading kernel imports it in every test cell.
The instructor and learner tooling (``fp8lab.labs.grading``, ``fp8lab.labs.cli``) imports nbgrader
only when it runs.

>>> from fp8lab.labs import expect_equal, no_shortcut
>>> with no_shortcut(round) as f:
...     expect_equal(f(2.5), 2, what="round(2.5)")
"""

from .feedback import describe, expect_close, expect_equal, expect_raises
from .guard import DEFAULT_FORBID, ShortcutError, no_shortcut
from .seed import SEED_ENV, grading_rng, grading_seed

__all__ = [
    "expect_equal", "expect_close", "expect_raises", "describe",
    "no_shortcut", "ShortcutError", "DEFAULT_FORBID",
    "grading_rng", "grading_seed", "SEED_ENV",
]
