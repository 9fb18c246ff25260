"""Scaling recipes: how real systems fit a tensor into 8 or 4 bits, and what each choice costs.

``quantize_tensor(x, fmt, recipe)`` cuts ``x`` into blocks, fits one scale per block and casts
``x / scale`` to ``fmt`` with saturation, returning a :class:`~fp8lab.qtensor.QTensor`. The
recipes are frozen dataclasses:

================================  ==========================================================
``TensorScaling(margin, pow2)``   one current scale per tensor, amax / fmt.max
``DelayedScaling(history_len,…)`` Transformer Engine: scale from the amax history of earlier calls
``AxisScaling(axis)``             one scale per row (per token) or per column (per channel)
``BlockScaling(block, pow2)``     DeepSeek-V3 tiles: 1x128 activations, 128x128 weights; UE8M0
``MXScaling(block_size, …)``      OCP Microscaling: 32-element blocks, E8M0 power-of-two scales
``NVFP4Scaling()``                16-element E2M1 blocks, E4M3 block scales, FP32 tensor scale
``PercentileScaling(p)``          calibration that clips outliers at the p-th percentile
``IntScaling(bits, symmetric,…)`` INT8/INT4, symmetric or with zero point, per channel or group
================================  ==========================================================

plus :class:`LossScaler` (dynamic loss scaling, as ``torch.amp.GradScaler``), the LLM-like data
generator :func:`llm_activations`, error metrics and :func:`compare_recipes`. Which implementation
serves a ``quantize_tensor`` call is one declared table (:mod:`fp8lab.scaling.paths`:
:func:`which_scaling_path`, :func:`force_scaling_path`, :func:`disable_scaling_paths`), as the
codec's is.

>>> import numpy as np
>>> x = llm_activations((256, 512), seed=0)
>>> q = quantize_tensor(x, "e4m3", BlockScaling((1, 128)))
>>> q.scales.shape, q.bits_per_element, sqnr_db(x, q.dequantize()) > 25
((256, 4), 8.25, True)
"""

from .base import Recipe
from .compare import DEFAULT_RECIPES, compare_recipes, comparison_table
from .data import llm_activations
from .delayed import AmaxHistory, DelayedScaling
from .integer import IntScaling
from .loss_scaler import LossScaler, has_inf_or_nan
from .metrics import error_stats, flushed_fraction, sqnr_db, tensor_amax
from .mx import SCALE_ROUNDINGS, MXScaling, emax_elem, mx_scale_exponents
from .nvfp4 import NVFP4Scaling
from .paths import SCALING_PATHS
from .paths import disable_paths as disable_scaling_paths
from .paths import force_path as force_scaling_path
from .paths import path_table as scaling_path_table
from .paths import which_path as which_scaling_path
from .quantize import RECIPE_NAMES, get_recipe, quantize_tensor
from .recipes import AxisScaling, BlockScaling, PercentileScaling, TensorScaling
from .scales import float_scales, pow2_ceil

__all__ = [
    "quantize_tensor", "get_recipe", "RECIPE_NAMES", "Recipe",
    "TensorScaling", "DelayedScaling", "AmaxHistory", "AxisScaling", "BlockScaling", "MXScaling", "NVFP4Scaling",
    "PercentileScaling", "IntScaling", "LossScaler", "has_inf_or_nan",
    "llm_activations", "sqnr_db", "error_stats", "flushed_fraction", "tensor_amax", "compare_recipes", "comparison_table", "DEFAULT_RECIPES",
    "mx_scale_exponents", "emax_elem", "SCALE_ROUNDINGS", "float_scales", "pow2_ceil",
    "SCALING_PATHS", "which_scaling_path", "force_scaling_path", "disable_scaling_paths", "scaling_path_table",
]
