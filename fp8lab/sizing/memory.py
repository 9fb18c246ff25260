"""Training memory per parameter: weights, gradients and optimizer states, by memory plan.

A :class:`MemoryPlan` lists what is stored for every parameter and in which format (the name
"recipe" belongs to ``fp8lab.nn``'s training recipes and ``fp8lab.scaling``'s scaling rules; the
old names ``TrainingRecipe``, ``get_training_recipe`` ... remain as aliases); bytes per parameter follow
from the formats' bits. The ZeRO paper's mixed-precision Adam figure of 16 bytes per parameter
(fp16 weights 2 + fp16 gradients 2 + fp32 master weights, momentum and variance 12; Rajbhandari et
al. 2020, section 3.1) is the "mixed-fp16" plan. ZeRO stages 1-3 partition the optimizer states,
then the gradients, then the weights over ``num_gpus`` data-parallel ranks. Activations are not
included: they depend on batch, sequence length and recomputation, not on the parameter count.

>>> print(training_memory(7.5e9, "mixed-fp16", num_gpus=64, zero_stage=1))
mixed-fp16, 7.50B parameters, ZeRO-1 over 64 GPUs: 31.41 GB (29.25 GiB) per GPU
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real
from typing import Literal

from ..registry import get_format
from .models import ModelConfig
from .params import resolve_params
from ..validation import lookup_key
from .units import GB, GiB, check_count, dtype_bits, format_bytes

__all__ = ["TrainingComponent", "MemoryPlan", "TrainingMemory", "MEMORY_PLANS", "get_memory_plan",
           "list_memory_plans", "training_memory",
           "TrainingRecipe", "TRAINING_RECIPES", "get_training_recipe", "list_training_recipes"]

Kind = Literal["weights", "gradients", "optimizer"]


@dataclass(frozen=True)
class TrainingComponent:
    """One thing stored per parameter: its ``name``, its ``dtype`` and its ZeRO ``kind``.

    ``kind`` is "weights" (the copy the forward pass reads), "gradients", or "optimizer"
    (master weights and optimizer moments, which ZeRO-1 partitions first).

    >>> TrainingComponent("adam_m", "float32", "optimizer").bytes_per_param
    4.0
    """

    name: str
    dtype: str
    kind: Kind

    def __post_init__(self) -> None:
        if self.kind not in ("weights", "gradients", "optimizer"):
            raise ValueError(f"component {self.name!r}: kind must be 'weights', 'gradients' or 'optimizer', "
                             f"got {self.kind!r}")
        object.__setattr__(self, "dtype", get_format(self.dtype).name)  # unknown dtypes raise here

    @property
    def bytes_per_param(self) -> float:
        """Bytes this component takes per parameter (its format's bits / 8).

        >>> TrainingComponent("weights", "fp8", "weights").bytes_per_param
        1.0
        """
        return dtype_bits(self.dtype) / 8


@dataclass(frozen=True)
class MemoryPlan:
    """A memory plan: the per-parameter components (what is stored, in which format) and where it comes from.

    >>> get_memory_plan("mixed-bf16").bytes_per_param
    16.0
    """

    name: str
    components: tuple[TrainingComponent, ...]
    description: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if not self.components:
            raise ValueError(f"memory plan {self.name!r} needs at least one component")
        object.__setattr__(self, "components", tuple(self.components))

    @property
    def bytes_per_param(self) -> float:
        """Bytes per parameter, all components together.

        >>> get_memory_plan("deepseek-v3").bytes_per_param
        12.0
        """
        return sum(c.bytes_per_param for c in self.components)

    def bytes_per_param_of(self, kind: Kind) -> float:
        """Bytes per parameter of one kind ("weights", "gradients" or "optimizer").

        >>> get_memory_plan("mixed-fp16").bytes_per_param_of("optimizer")   # ZeRO's K = 12
        12.0
        """
        return sum(c.bytes_per_param for c in self.components if c.kind == kind)


_C = TrainingComponent
#: The built-in plans, by name.
MEMORY_PLANS: dict[str, MemoryPlan] = {r.name: r for r in (
    MemoryPlan("fp32", (_C("weights", "float32", "weights"), _C("gradients", "float32", "gradients"),
                            _C("adam_m", "float32", "optimizer"), _C("adam_v", "float32", "optimizer")),
                   "everything in FP32: the weights are their own master copy",
                   "plain Adam/AdamW in single precision"),
    MemoryPlan("mixed-fp16", (_C("weights", "float16", "weights"), _C("gradients", "float16", "gradients"),
                                  _C("master_weights", "float32", "optimizer"), _C("adam_m", "float32", "optimizer"),
                                  _C("adam_v", "float32", "optimizer")),
                   "FP16 weights and gradients, FP32 master weights and Adam moments",
                   "Micikevicius et al. 2018 (arXiv 1710.03740); ZeRO, Rajbhandari et al. 2020 (arXiv 1910.02054) "
                   "section 3.1: 2 + 2 + 12 = 16 bytes per parameter"),
    MemoryPlan("mixed-bf16", (_C("weights", "bfloat16", "weights"), _C("gradients", "bfloat16", "gradients"),
                                  _C("master_weights", "float32", "optimizer"), _C("adam_m", "float32", "optimizer"),
                                  _C("adam_v", "float32", "optimizer")),
                   "as mixed-fp16 with BF16 in place of FP16 (no loss scaling needed): 16 bytes per parameter",
                   "the ZeRO mixed-precision accounting with BF16 working copies"),
    MemoryPlan("fp8", (_C("weights_fp8", "float8_e4m3fn", "weights"), _C("gradients", "float32", "gradients"),
                           _C("master_weights", "float32", "optimizer"), _C("adam_m", "float32", "optimizer"),
                           _C("adam_v", "float32", "optimizer")),
                   "FP32 parameters (the master weights) with their FP32 gradients and Adam moments, plus the FP8 "
                   "(E4M3) copy of the weights the GEMMs read: 1 + 4 + 4 + 8 = 17 bytes per parameter, the "
                   "accounting of chapter 07 (fp8lab.nn.Fp8Linear); frameworks that keep gradients in BF16 save 2",
                   "NVIDIA Transformer Engine keeps each parameter in its own dtype and casts it to FP8 per GEMM "
                   "unless fp8_model_params (fp8_model_init) stores it in FP8; gradients take the parameter's "
                   "dtype; FP32 master weights: Micikevicius et al. 2018 (arXiv 1710.03740)"),
    MemoryPlan("deepseek-v3", (_C("master_weights", "float32", "optimizer"),
                                   _C("gradients", "float32", "gradients"),
                                   _C("adam_m", "bfloat16", "optimizer"), _C("adam_v", "bfloat16", "optimizer")),
                   "FP32 master weights and FP32 gradient accumulation, BF16 AdamW moments; the FP8 weight "
                   "copies the GEMMs read are made on the fly and not counted",
                   "DeepSeek-V3 Technical Report, arXiv 2412.19437, section 3.3.3 (low-precision optimizer states)"),
)}


def list_memory_plans() -> list[str]:
    """Names of the built-in memory plans.

    >>> list_memory_plans()
    ['fp32', 'mixed-fp16', 'mixed-bf16', 'fp8', 'deepseek-v3']
    """
    return list(MEMORY_PLANS)


def get_memory_plan(name: "str | MemoryPlan") -> MemoryPlan:
    """A built-in plan by name (a MemoryPlan passes through); unknown names raise listing the known ones.

    >>> [c.name for c in get_memory_plan("fp32").components]
    ['weights', 'gradients', 'adam_m', 'adam_v']
    """
    if isinstance(name, MemoryPlan):
        return name
    if not isinstance(name, str):
        raise TypeError(f"a memory plan is a name (str) or a MemoryPlan, got {type(name).__name__}")
    by_key = {lookup_key(k): r for k, r in MEMORY_PLANS.items()}
    if lookup_key(name) not in by_key:
        raise ValueError(f"unknown memory plan {name!r}; known plans: {', '.join(MEMORY_PLANS)}")
    return by_key[lookup_key(name)]


@dataclass(frozen=True)
class TrainingMemory:
    """Per-GPU training memory for a parameter count under a memory plan and a ZeRO stage.

    >>> m = training_memory(7e9, "mixed-bf16")
    >>> m.total_bytes, m.bytes_per_param
    (112000000000, 16.0)
    """

    params: int
    plan: MemoryPlan
    num_gpus: int = 1
    zero_stage: int = 0

    @property
    def recipe(self) -> MemoryPlan:
        """The plan under its old name.

        >>> training_memory(7e9, "fp32").recipe.name
        'fp32'
        """
        return self.plan

    def component_bytes(self) -> list[tuple[TrainingComponent, int]]:
        """(component, bytes on each GPU) pairs; partitioned components are divided by ``num_gpus``.

        >>> [(c.name, n) for c, n in training_memory(1000, "fp32", num_gpus=4, zero_stage=2).component_bytes()]
        [('weights', 4000), ('gradients', 1000), ('adam_m', 1000), ('adam_v', 1000)]
        """
        partitioned = {"optimizer": self.zero_stage >= 1, "gradients": self.zero_stage >= 2,
                       "weights": self.zero_stage >= 3}
        out = []
        for c in self.plan.components:
            total = self.params * dtype_bits(c.dtype)  # bits
            share = -(-total // self.num_gpus) if partitioned[c.kind] else total
            out.append((c, -(-share // 8)))
        return out

    @property
    def total_bytes(self) -> int:
        """Bytes per GPU, all components.

        >>> training_memory(7.5e9, "mixed-fp16").total_bytes   # ZeRO paper: 120 GB
        120000000000
        """
        return sum(n for _, n in self.component_bytes())

    @property
    def bytes_per_param(self) -> float:
        """Bytes per parameter per GPU (16 for mixed precision without ZeRO).

        >>> training_memory(7.5e9, "mixed-fp16", num_gpus=64, zero_stage=3).bytes_per_param
        0.25
        """
        return self.total_bytes / self.params

    @property
    def gb(self) -> float:
        """Per-GPU total in decimal GB (10^9 bytes).

        >>> training_memory(7.5e9, "mixed-fp16", num_gpus=64, zero_stage=2).gb
        16.640625
        """
        return self.total_bytes / GB

    @property
    def gib(self) -> float:
        """Per-GPU total in binary GiB (2^30 bytes).

        >>> round(training_memory(7e9, "mixed-bf16").gib, 2)
        104.31
        """
        return self.total_bytes / GiB

    def rows(self) -> list[dict]:
        """One dict per component (name, dtype, kind, bytes/param, partitioned, bytes, GB, GiB) plus a total row.

        >>> training_memory(7e9, "fp32").rows()[-1]["bytes_per_param"]
        16.0
        """
        rows = [{"component": c.name, "dtype": c.dtype, "kind": c.kind, "bytes_per_param": c.bytes_per_param,
                 "bytes": n, "GB": n / GB, "GiB": n / GiB} for c, n in self.component_bytes()]
        rows.append({"component": "total", "dtype": "", "kind": "", "bytes_per_param": self.plan.bytes_per_param,
                     "bytes": self.total_bytes, "GB": self.gb, "GiB": self.gib})
        return rows

    def __str__(self) -> str:
        zero = f", ZeRO-{self.zero_stage} over {self.num_gpus} GPUs" if self.zero_stage else \
            (f", {self.num_gpus} GPUs (replicated)" if self.num_gpus > 1 else "")
        return (f"{self.plan.name}, {self.params / 1e9:.2f}B parameters{zero}: "
                f"{format_bytes(self.total_bytes)} per GPU")


def training_memory(params: "Real | str | ModelConfig", plan: "str | MemoryPlan" = "mixed-bf16", *,
                    num_gpus: int = 1, zero_stage: int = 0, recipe: "str | MemoryPlan | None" = None) -> TrainingMemory:
    """Per-GPU memory of weights, gradients and optimizer states for ``params`` parameters (or a model).

    ``zero_stage`` 1 partitions optimizer states over ``num_gpus``, 2 also gradients, 3 also weights.
    ``recipe=`` is the old name of ``plan=``.

    >>> [round(training_memory(7.5e9, "mixed-fp16", num_gpus=64, zero_stage=s).gb, 2) for s in range(4)]
    [120.0, 31.41, 16.64, 1.88]
    """
    n = resolve_params(params)
    num_gpus = check_count("num_gpus", num_gpus, minimum=1)
    zero_stage = check_count("zero_stage", zero_stage, minimum=0)
    if zero_stage > 3:
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage}")
    if recipe is not None:
        plan = recipe
    return TrainingMemory(params=n, plan=get_memory_plan(plan), num_gpus=num_gpus, zero_stage=zero_stage)


# the names these had before "recipe" came to mean fp8lab.nn's training recipes
TrainingRecipe = MemoryPlan
TRAINING_RECIPES = MEMORY_PLANS
get_training_recipe = get_memory_plan
list_training_recipes = list_memory_plans
