"""LLM-like test data: heavy-tailed activations with a few outlier channels, deterministic from a seed.

Activations of large transformers are not Gaussian. Their bulk has heavy tails, and a handful
of hidden dimensions ("emergent outlier features", Dettmers et al., LLM.int8(), 2022) are one to
two orders of magnitude larger than the rest, in every token. That is exactly what separates the
scaling recipes: a per-tensor scale is set by the outliers and the bulk loses resolution,
per-token scales do not help (every token has the outliers), per-channel and fine-grained
blocks do.

>>> x = llm_activations((4, 256), seed=0)
>>> x.dtype, x.shape, bool(abs(x).max() > 20 * abs(x).mean())
(dtype('float32'), (4, 256), True)
"""

from __future__ import annotations

import numpy as np

__all__ = ["llm_activations"]


def llm_activations(shape: "tuple[int, ...] | int", seed: int = 0, *, outlier_channels: int = 8,
                    outlier_scale: float = 50.0, df: float = 4.0) -> np.ndarray:
    """Float32 activations ``(..., hidden)``: Student-t bulk plus ``outlier_channels`` channels scaled up.

    Each element is drawn from a Student-t distribution with ``df`` degrees of freedom (heavy
    tails; ``df=4`` has finite variance but large kurtosis), rescaled to unit variance. Then
    ``outlier_channels`` hidden channels (positions along the last axis, chosen at random) are
    multiplied by factors log-uniform in ``[outlier_scale / 2, outlier_scale * 2]``, so with the
    default 50 they are 25x to 100x the bulk, in every row, as LLM.int8()'s emergent outliers.
    The result depends only on ``shape``, ``seed`` and the knobs.

    >>> a, b = llm_activations((2, 64), seed=1), llm_activations((2, 64), seed=1)
    >>> bool((a == b).all()), llm_activations(8, outlier_channels=0).shape
    (True, (8,))
    """
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(n) for n in shape)
    if any(n < 0 for n in shape) or not shape:
        raise ValueError(f"shape must be a non-empty tuple of non-negative ints, got {shape}")
    if not df > 2:
        raise ValueError(f"df must be > 2 so the variance is finite, got {df}")
    if outlier_channels < 0 or outlier_scale <= 0:
        raise ValueError(f"outlier_channels >= 0 and outlier_scale > 0 are needed, got {outlier_channels}, {outlier_scale}")
    rng = np.random.default_rng(seed)
    x = rng.standard_t(df, size=shape).astype(np.float32)
    x *= np.float32(np.sqrt((df - 2.0) / df))
    hidden = shape[-1]
    k = min(int(outlier_channels), hidden)
    if k:
        channels = rng.choice(hidden, size=k, replace=False)
        factors = np.exp(rng.uniform(np.log(outlier_scale / 2), np.log(outlier_scale * 2), size=k)).astype(np.float32)
        x[..., channels] *= factors
    return x
