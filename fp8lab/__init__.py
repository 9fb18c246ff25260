"""fp8lab: low-precision numerics for large models, from the bits up.

>>> import fp8lab as fl
>>> fl.get_format("e4m3").max
448.0
"""

from .codec import decode, decode_table, encode, quantize
from .anatomy import Explanation, explain
from .formats import FloatFormat, IntFormat
from .gemm import Accumulator, accumulation_error_vs_k, native_available, scaled_matmul
from .qtensor import QTensor
from .registry import get_format, list_formats, register_format
from .scaling import *  # noqa: F401,F403 - quantize_tensor, the recipes, LossScaler, ...
from .scaling import __all__ as _scaling_all
from .sizing import *  # noqa: F401,F403 - ModelConfig, get_model, kv_cache_bytes, ...
from .sizing import __all__ as _sizing_all

__version__ = "0.1.0"

#: Subpackages loaded on first use (``fl.nn``, ``fl.interview``, ``fl.labs``), so ``import fp8lab`` stays light.
_LAZY_SUBMODULES = ("nn", "interview", "labs", "viz", "widgets", "course", "hardware")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'fp8lab' has no attribute {name!r}")

__all__ = [
    "FloatFormat", "IntFormat", "get_format", "list_formats", "register_format",
    "encode", "decode", "quantize", "decode_table", "explain", "Explanation", "QTensor",
    "scaled_matmul", "Accumulator", "native_available", "accumulation_error_vs_k",
    *_scaling_all,
    *_sizing_all,
]
