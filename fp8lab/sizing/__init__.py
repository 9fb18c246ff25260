"""KV-cache and memory sizing: the numbers interviewers ask for, computed from published configs.

- :mod:`.models`: :class:`ModelConfig` and presets of published models (:func:`get_model`);
- :mod:`.params`: parameter counts and weight bytes in any format;
- :mod:`.kvcache`: KV-cache bytes for MHA/GQA/MQA/MLA, sliding windows and scale overhead;
- :mod:`.gpus` and :mod:`.fit`: GPU memory (GB vs GiB) and the context or batch that fits;
- :mod:`.memory`: training memory per parameter by memory plan (what each state is stored in), with ZeRO stages;
- :mod:`.kv_accuracy`: attention error with an FP8/FP4 KV cache against FP32;
- :mod:`.units`: GB (10^9) and GiB (2^30), always labelled.

>>> cfg = get_model("llama-3-70b")
>>> kv_cache_bytes(cfg, seq_len=4096, batch=1, dtype="bf16") == 80 * 2 * 8 * 128 * 2 * 4096
True
"""

from .fit import FitReport, fit_report, max_batch, max_context, memory_budget
from .gpus import GPU, get_gpu, list_gpus
from .kv_accuracy import kv_cache_accuracy
from .kvcache import (SCALE_GRANULARITIES, KVCacheSize, kv_cache_bytes, kv_cache_size, kv_cache_table,
                      kv_elements_per_token)
from .memory import (MEMORY_PLANS, TRAINING_RECIPES, MemoryPlan, TrainingComponent, TrainingMemory, TrainingRecipe,
                     get_memory_plan, get_training_recipe, list_memory_plans, list_training_recipes, training_memory)
from .models import ATTENTIONS, ModelConfig, get_model, list_models, model_info
from .params import ParamCount, param_count, weights_bytes
from .units import GB, GiB, bytes_per_element, format_bytes

__all__ = [
    # models
    "ModelConfig", "get_model", "list_models", "model_info", "ATTENTIONS",
    # parameters and weights
    "ParamCount", "param_count", "weights_bytes",
    # KV cache
    "kv_cache_bytes", "kv_cache_size", "kv_cache_table", "kv_elements_per_token", "KVCacheSize",
    "SCALE_GRANULARITIES", "kv_cache_accuracy",
    # GPUs and fitting
    "GPU", "get_gpu", "list_gpus", "max_context", "max_batch", "fit_report", "FitReport", "memory_budget",
    # training memory
    "training_memory", "TrainingMemory", "MemoryPlan", "TrainingComponent", "MEMORY_PLANS",
    "get_memory_plan", "list_memory_plans", "TrainingRecipe", "TRAINING_RECIPES", "get_training_recipe",
    "list_training_recipes",
    # units
    "GB", "GiB", "format_bytes", "bytes_per_element",
]
