"""FP8 training: per-role recipes, an FP8 linear layer, ``convert``, and a character-level GPT.

This package imports torch; ``import fp8lab`` does not import it (use ``import fp8lab.nn``).

>>> import fp8lab.nn as fnn
>>> fnn.LinearRecipe.from_name("mxfp8").weight.scaling.block_size
32
"""

from .._optional import require

require("torch", "fp8lab.nn (FP8 layers, convert, the tiny GPT)")  # an ImportError that names the extra, if it is missing
from .convert import HEAD_NAMES, ConvertReport, convert
from .linear import Fp8Linear, LayerState, weight_cache
from .recipe import FAITHFUL, GEMMS, PRESETS, ROLES, LinearRecipe, TensorQuant

__all__ = ["LinearRecipe", "TensorQuant", "PRESETS", "FAITHFUL", "ROLES", "GEMMS", "Fp8Linear", "LayerState",
           "convert", "ConvertReport", "HEAD_NAMES", "weight_cache"]
