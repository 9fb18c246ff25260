"""Training a character-level GPT with each recipe of ``fp8lab.nn``: data, loop, CLI (``fp8lab train``).

Importing this package is light (no torch); :func:`train` imports torch when it runs.

>>> from fp8lab.train import TrainConfig
>>> TrainConfig().batch_size, TrainConfig().lr
(12, 0.001)
"""

from .config import TrainConfig

__all__ = ["TrainConfig", "train", "Run", "load_shakespeare"]


def __getattr__(name: str):
    if name in ("train", "Run"):
        from . import loop

        return getattr(loop, name)
    if name == "load_shakespeare":
        from .data import load_shakespeare

        return load_shakespeare
    raise AttributeError(f"module 'fp8lab.train' has no attribute {name!r}")
