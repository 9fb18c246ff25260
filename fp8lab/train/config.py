"""The training run's configuration: nanoGPT's ``shakespeare_char`` CPU example by default.

nanoGPT (``config/train_shakespeare_char.py`` and its README's CPU command): 4 layers, 4 heads,
width 128, context 64, batch 12, no dropout, AdamW lr 1e-3 with 100 warmup steps and cosine decay
to 1e-4 over the run, beta2 0.99, weight decay 0.1 (matrices and embeddings only), gradient
clipping at 1.0, 2000 iterations, validation loss from 20 batches. nanoGPT reports a validation
loss of about 1.88 for that run on Tiny Shakespeare.

>>> c = TrainConfig(steps=10, warmup_steps=2); round(c.lr_at(0), 6), c.lr_at(9)
(0.000333, 0.0001)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..validation import check_bool, check_int, check_real

__all__ = ["TrainConfig"]


@dataclass(frozen=True)
class TrainConfig:
    """Steps, batch, model shape, optimizer and evaluation settings of one run.

    >>> TrainConfig(steps=0)
    Traceback (most recent call last):
    ...
    ValueError: TrainConfig.steps must be positive, got 0
    """

    steps: int = 2000
    seed: int = 0
    batch_size: int = 12
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup_steps: int = 100
    beta1: float = 0.9
    beta2: float = 0.99
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eval_interval: int = 250
    eval_iters: int = 20
    #: exact FP8 GEMMs on the CPU's BF16 matrix units (fp8lab.gemm.units: exact, another summation order; False:
    #: MKL's FP32 GEMM, as every run recorded before this field existed)
    bf16_units: bool = True

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "block_size", "n_layer", "n_head", "n_embd", "eval_interval", "eval_iters"):
            check_int("TrainConfig", name, getattr(self, name), minimum=1)
        check_int("TrainConfig", "seed", self.seed, minimum=0)
        check_int("TrainConfig", "warmup_steps", self.warmup_steps, minimum=0)
        for name in ("lr", "min_lr", "weight_decay", "grad_clip"):
            check_real("TrainConfig", name, getattr(self, name), minimum=0)
        for name in ("beta1", "beta2"):
            check_real("TrainConfig", name, getattr(self, name), minimum=0, maximum=1)
        check_bool("TrainConfig", "bf16_units", self.bf16_units)

    def lr_at(self, step: int) -> float:
        """nanoGPT's schedule: linear warmup, cosine decay to ``min_lr`` at the last step.

        >>> TrainConfig(steps=200).lr_at(100)
        0.001
        """
        if step < self.warmup_steps:
            return self.lr * (step + 1) / (self.warmup_steps + 1)
        decay = max(self.steps - 1, self.warmup_steps)
        if step >= decay:
            return self.min_lr
        ratio = (step - self.warmup_steps) / max(decay - self.warmup_steps, 1)
        return self.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (self.lr - self.min_lr)

    def as_dict(self) -> dict:
        """The fields as a plain dict.

        >>> TrainConfig().as_dict()["beta2"]
        0.99
        """
        return asdict(self)
