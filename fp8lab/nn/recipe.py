"""Per-role training recipes: a format and a scaling rule for each tensor of a linear layer, an accumulator per GEMM.

A linear layer's training step quantizes three tensors (``input`` x, ``weight`` W, ``grad_output``
dy) for three GEMMs (``fprop`` y = x W^T, ``dgrad`` dx = dy W, ``wgrad`` dW = dy^T x). A
:class:`LinearRecipe` says, for each role, which format and scaling rule it uses
(:class:`TensorQuant`; ``None`` keeps the role in FP32) and, for each GEMM, which accumulator model
(:class:`fp8lab.Accumulator`) adds the products. Scaling rules are written for the tensor with the
forward GEMM's reduction axis last (x ``(M, K)``, W ``(N, K)``, dy ``(M, N)``); ``Fp8Linear`` turns
them along each GEMM's own reduction axis.

The named presets (:data:`PRESETS`, :meth:`LinearRecipe.from_name`) follow published recipes, each
with its source in ``source``; the *controls* are recipes meant to fail or degrade.

Accumulation. The per-tensor and rowwise presets (``fp8-tensorwise-delayed``, ``fp8-tensorwise-current``,
``fp8-rowwise``) accumulate every GEMM exactly in FP32: they are the *exact-accumulation* variants,
the ones the recorded runs in ``bench/results/train.json`` used. Beside each, :data:`FAITHFUL` names
the recipe with the accumulation its source runs on Hopper, cited to the config field:

- Transformer Engine (``transformer_engine/pytorch/module/base.py``): ``_2X_ACC_FPROP = False``, so
  fprop uses the tensor core's fast accumulation, modelled as a 14-bit accumulator never promoted
  (``Accumulator(13, promote_every=None)``); ``_2X_ACC_DGRAD = _2X_ACC_WGRAD = True``, the split
  accumulator that promotes partial sums to FP32, modelled every 128 elements of K (CUTLASS's SM90 FP8
  GEMM promotes every 4 WGMMAs of K = 32; DeepSeek-V3's N_C = 128): ``Accumulator(13, 128)``;
- torchao (``Float8LinearConfig``): ``gemm_config_output = Float8GemmConfig(use_fast_accum=True)`` for
  the output GEMM (fprop), ``use_fast_accum=False`` for ``gemm_config_grad_input`` (dgrad) and
  ``gemm_config_grad_weight`` (wgrad); the same two models.

``mxfp8`` needs no second preset (its 32-element K-blocks change scale along K, so the tensor core
cannot run them unpromoted; TE's MXFP8 GEMMs accumulate in FP32) and ``fp8-blockwise`` already uses
DeepSeek-V3's promoted accumulator.

>>> r = LinearRecipe.from_name("fp8-blockwise")
>>> r.input.format.name, r.weight.scaling.block, r.fprop.promote_every
('float8_e4m3fn', (128, 128), 128)
>>> "mxfp8" in LinearRecipe.names()
True
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

from ..formats import Format
from ..gemm import Accumulator
from ..registry import get_format
from ..scaling import AxisScaling, BlockScaling, DelayedScaling, MXScaling, Recipe, TensorScaling
from ..validation import check_bool, lookup_key

__all__ = ["TensorQuant", "LinearRecipe", "PRESETS", "ROLES", "GEMMS", "FAITHFUL"]

#: The three tensors a linear layer quantizes, and the three GEMMs of its training step.
ROLES = ("input", "weight", "grad_output")
GEMMS = ("fprop", "dgrad", "wgrad")


@dataclass(frozen=True)
class TensorQuant:
    """How one role is quantized: an element format and a scaling rule (``None``: a plain cast, scale 1).

    ``saturate`` chooses what a plain cast does with values beyond the format's range: clamp to
    ±max (True, as FP8 casts do), or become inf (False, as an FP16/BF16 cast does, which is what
    lets a loss scaler see an overflow). Scaled casts always saturate.

    >>> TensorQuant("e5m2", TensorScaling()).format.name, TensorQuant("bf16").is_16bit
    ('float8_e5m2', True)
    """

    format: Format | str
    scaling: Recipe | None = None
    saturate: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "format", get_format(self.format))
        if self.scaling is not None and not isinstance(self.scaling, Recipe):
            raise TypeError(f"TensorQuant.scaling is a scaling Recipe (TensorScaling(), BlockScaling(...), ...) or None, "
                            f"got {type(self.scaling).__name__}")
        check_bool("TensorQuant", "saturate", self.saturate)
        if self.is_16bit and self.scaling is not None:
            raise ValueError(f"a 16-bit role ({self.format.name}) is a plain rounding with FP32 accumulation; "
                             "give it scaling=None")

    @property
    def is_16bit(self) -> bool:
        """Whether the role is a 16-bit float (BF16/FP16): rounded values, an FP32 matmul, no QTensor.

        >>> TensorQuant("e4m3").is_16bit
        False
        """
        return self.format.bits >= 16

    @property
    def stateful(self) -> bool:
        """Whether the scaling rule keeps state between steps (an amax history).

        >>> TensorQuant("e4m3", DelayedScaling()).stateful
        True
        """
        return bool(getattr(self.scaling, "stateful", False))

    def describe(self) -> str:
        """A short description for tables.

        >>> TensorQuant("e4m3", BlockScaling((1, 128))).describe()
        'float8_e4m3fn BlockScaling(block=(1, 128))'
        """
        if self.scaling is None:
            return f"{self.format.name} plain cast" if not self.is_16bit else f"{self.format.name} rounding"
        s = self.scaling
        knobs = {"TensorScaling": "", "DelayedScaling": f"history_len={getattr(s, 'history_len', '')}, algo={getattr(s, 'algo', '')}",
                 "AxisScaling": f"pow2={getattr(s, 'pow2', '')}", "BlockScaling": f"block={getattr(s, 'block', '')}",
                 "MXScaling": f"{getattr(s, 'block_size', '')}, {getattr(s, 'scale_rounding', '')}"}
        return f"{self.format.name} {type(s).__name__}({knobs.get(type(s).__name__, '')})"


def _check_role(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, TensorQuant):
        raise TypeError(f"LinearRecipe.{name} is a TensorQuant or None (stays FP32), got {type(value).__name__}")


@dataclass(frozen=True)
class LinearRecipe:
    """A per-role recipe for a linear layer: what each tensor is cast to and how each GEMM accumulates.

    A role of ``None`` stays FP32. ``loss_scaling=True`` asks the trainer for dynamic loss scaling
    (:class:`fp8lab.LossScaler`); ``control=True`` marks a recipe built to show a failure.

    >>> r = LinearRecipe("mine", input=TensorQuant("e4m3", TensorScaling()), weight=TensorQuant("e4m3", TensorScaling()))
    >>> r.grad_output is None, r.dgrad.exact
    (True, True)
    """

    name: str
    input: TensorQuant | None = None
    weight: TensorQuant | None = None
    grad_output: TensorQuant | None = None
    fprop: Accumulator = field(default_factory=Accumulator)
    dgrad: Accumulator = field(default_factory=Accumulator)
    wgrad: Accumulator = field(default_factory=Accumulator)
    loss_scaling: bool = False
    control: bool = False
    description: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"LinearRecipe.name is a non-empty string, got {self.name!r}")
        for role in ROLES:
            _check_role(role, getattr(self, role))
        operands = {"fprop": ("input", "weight"), "dgrad": ("grad_output", "weight"), "wgrad": ("grad_output", "input")}
        for gemm, (a, b) in operands.items():
            acc = getattr(self, gemm)
            if not isinstance(acc, Accumulator):
                raise TypeError(f"LinearRecipe.{gemm} is an fp8lab Accumulator, got {type(acc).__name__}")
            if not acc.exact and not all(self.is_quantized(r) for r in (a, b)):
                raise ValueError(f"LinearRecipe.{gemm} has a limited accumulator ({acc.describe()}), which models an FP8 "
                                 f"GEMM; both its operands ({a}, {b}) must then be 8-bit or narrower roles")
        check_bool("LinearRecipe", "loss_scaling", self.loss_scaling)
        check_bool("LinearRecipe", "control", self.control)

    def is_quantized(self, role: str) -> bool:
        """Whether ``role`` is cast to an 8-bit (or narrower) format, so its GEMMs use QTensors.

        >>> LinearRecipe.from_name("bf16").is_quantized("input"), LinearRecipe.from_name("mxfp8").is_quantized("input")
        (False, True)
        """
        tq = getattr(self, role)
        return tq is not None and not tq.is_16bit

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The preset names, recipes first, then the controls.

        >>> LinearRecipe.names()[:3]
        ('fp32', 'bf16', 'fp16')
        """
        return tuple(PRESETS)

    @classmethod
    def from_name(cls, name: "str | LinearRecipe") -> "LinearRecipe":
        """A preset by name (see :data:`PRESETS`); a LinearRecipe passes through.

        >>> LinearRecipe.from_name("FP8-Rowwise").weight.scaling
        AxisScaling(axis=-1, pow2=True, margin=0)
        """
        if isinstance(name, LinearRecipe):
            return name
        if not isinstance(name, str):
            raise TypeError(f"a recipe is a LinearRecipe or one of the names {', '.join(PRESETS)}; got {type(name).__name__}")
        key = lookup_key(name).replace("_", "-")
        if key not in PRESETS:
            raise ValueError(f"unknown training recipe {name!r}; known: {', '.join(PRESETS)}")
        return PRESETS[key]()

    def describe(self) -> dict[str, str]:
        """Each role's and GEMM's setting as text (for ``--list`` and JSON).

        >>> LinearRecipe.from_name("fp32").describe()["input"]
        'FP32'
        """
        out = {role: (getattr(self, role).describe() if getattr(self, role) else "FP32") for role in ROLES}
        out.update({g: getattr(self, g).describe() for g in GEMMS})
        out["loss_scaling"] = "dynamic (LossScaler)" if self.loss_scaling else "none"
        return out


# ----- the presets ------------------------------------------------------------------------------

_TE = "NVIDIA Transformer Engine, transformer_engine.common.recipe"
_DSV3 = "DeepSeek-V3 technical report (arXiv 2412.19437), section 3.3"
_E4M3, _E5M2 = "e4m3", "e5m2"


def _all(fmt_x: str, fmt_w: str, fmt_g: str, rule: Callable[[], Recipe | None], **kw: Any) -> dict[str, Any]:
    return dict(input=TensorQuant(fmt_x, rule()), weight=TensorQuant(fmt_w, rule()), grad_output=TensorQuant(fmt_g, rule()), **kw)


def _fp32() -> LinearRecipe:
    return LinearRecipe("fp32", description="everything FP32 (torch.nn.functional.linear)",
                        source="IEEE 754 binary32; the baseline")


def _bf16() -> LinearRecipe:
    return LinearRecipe("bf16", input=TensorQuant("bf16", saturate=False), weight=TensorQuant("bf16", saturate=False),
                        grad_output=TensorQuant("bf16", saturate=False),
                        description="operands rounded to BF16, FP32 accumulation (as tensor cores and torch.autocast compute)",
                        source="Kalamkar et al. 2019, 'A Study of BFLOAT16 for Deep Learning Training' (arXiv 1905.12322)")


def _fp16(loss_scaling: bool = True) -> LinearRecipe:
    name = "fp16" if loss_scaling else "fp16-no-loss-scaling"
    q = TensorQuant("fp16", saturate=False)
    what = "with dynamic loss scaling (fp8lab.LossScaler, GradScaler's rules)" if loss_scaling else \
        "WITHOUT loss scaling: small gradients flush to zero in FP16"
    return LinearRecipe(name, input=q, weight=q, grad_output=q, loss_scaling=loss_scaling, control=not loss_scaling,
                        description=f"operands rounded to FP16, FP32 accumulation, {what}",
                        source="Micikevicius et al. 2018, 'Mixed Precision Training' (arXiv 1710.03740), loss scaling")


#: Hopper's FP8 fast accumulation: the tensor core's ~14-bit accumulator over all of K, never promoted.
_FAST_ACC = Accumulator(mantissa_bits=13, promote_every=None)
#: The split accumulator: partial sums promoted to FP32 every 128 elements of K (4 WGMMAs of K = 32).
_SPLIT_ACC = Accumulator(mantissa_bits=13, promote_every=128)
_EXACT = "exact FP32 accumulation in every GEMM (the exact-accumulation variant; the recorded runs used it)"
_TE_ACC = ("; accumulation as TE runs it on Hopper: fprop fast accumulation (_2X_ACC_FPROP = False), dgrad and "
           "wgrad split accumulator (_2X_ACC_DGRAD = _2X_ACC_WGRAD = True), transformer_engine/pytorch/module/base.py")
_TORCHAO_ACC = ("; accumulation as torchao runs it: Float8LinearConfig.gemm_config_output = "
                "Float8GemmConfig(use_fast_accum=True) for fprop, gemm_config_grad_input and gemm_config_grad_weight "
                "use_fast_accum=False (split accumulator) for dgrad and wgrad")
_SPLIT_MODEL = (" (fast accumulation modelled as Accumulator(13, promote_every=None), the split accumulator as "
                "Accumulator(13, 128): CUTLASS's SM90 FP8 GEMM promotes every 4 WGMMAs of K=32, DeepSeek-V3's N_C = 128)")


def _faithful(exact: LinearRecipe, name: str, acc_source: str) -> LinearRecipe:
    """``exact`` with its source's accumulation: fast accumulation in fprop, the split accumulator in dgrad and wgrad."""
    return dataclasses.replace(exact, name=name, fprop=_FAST_ACC, dgrad=_SPLIT_ACC, wgrad=_SPLIT_ACC,
                               description=exact.description.replace(f"; {_EXACT}", "") + acc_source.replace("; ", "; ", 1),
                               source=exact.source + acc_source + _SPLIT_MODEL)


def _tensorwise_delayed() -> LinearRecipe:
    return LinearRecipe("fp8-tensorwise-delayed", **_all(_E4M3, _E4M3, _E5M2, lambda: DelayedScaling(history_len=1024, algo="max")),
                        description="per-tensor scales from a 1024-step amax history (max); HYBRID: E4M3 forward, E5M2 "
                                    f"gradients; {_EXACT}",
                        source=f"{_TE}.DelayedScaling defaults (fp8_format=HYBRID, amax_history_len=1024, amax_compute_algo='max', margin=0)")


def _tensorwise_current() -> LinearRecipe:
    return LinearRecipe("fp8-tensorwise-current", **_all(_E4M3, _E4M3, _E5M2, TensorScaling),
                        description=f"per-tensor scales from the tensor's own amax; HYBRID: E4M3 forward, E5M2 gradients; {_EXACT}",
                        source=f"{_TE}.Float8CurrentScaling (fp8_format=HYBRID)")


def _rowwise() -> LinearRecipe:
    return LinearRecipe("fp8-rowwise", **_all(_E4M3, _E4M3, _E4M3, lambda: AxisScaling(axis=-1, pow2=True)),
                        description=f"one power-of-two scale per row along each GEMM's reduction axis, E4M3 everywhere; {_EXACT}",
                        source="torchao.float8 Float8LinearConfig.from_recipe_name('rowwise') (axiswise E4M3, round_scales_to_power_of_2=True)")


def _blockwise(grad_block: tuple[int, int] = (1, 128)) -> LinearRecipe:
    acc = Accumulator(mantissa_bits=13, promote_every=128)
    control = grad_block != (1, 128)
    name = "fp8-blockwise" if not control else "fp8-dgrad-128x128"
    desc = ("E4M3 everywhere: 1x128 activation and gradient tiles, 128x128 weight blocks, FP32 scales, "
            "the 14-bit accumulator promoted to FP32 every 128")
    src = _DSV3 + " (fine-grained quantization, increased accumulation precision)"
    if control:
        desc = "fp8-blockwise but activation gradients in 128x128 blocks (DeepSeek-V3 saw this diverge at scale)"
        src = "DeepSeek-V3 technical report (arXiv 2412.19437), appendix B.2"
    return LinearRecipe(name, input=TensorQuant(_E4M3, BlockScaling((1, 128))), weight=TensorQuant(_E4M3, BlockScaling((128, 128))),
                        grad_output=TensorQuant(_E4M3, BlockScaling(grad_block)), fprop=acc, dgrad=acc, wgrad=acc,
                        control=control, description=desc, source=src)


def _mxfp8() -> LinearRecipe:
    return LinearRecipe("mxfp8", **_all(_E4M3, _E4M3, _E4M3, lambda: MXScaling(32, scale_rounding="rceil")),
                        description="OCP MX: 32-element blocks along each GEMM's reduction axis, E8M0 scales (rceil), E4M3 everywhere",
                        source=f"{_TE}.MXFP8BlockScaling (fp8_format=E4M3); OCP Microscaling Formats v1.0")


def _unscaled() -> LinearRecipe:
    return LinearRecipe("fp8-unscaled", **_all(_E4M3, _E4M3, _E5M2, lambda: None), control=True,
                        description="CONTROL: plain FP8 casts with scale 1 (HYBRID): small weights lose precision, gradients underflow",
                        source="control (no scaling); formats as TE's HYBRID")


def _e4m3_grads_unscaled() -> LinearRecipe:
    return LinearRecipe("fp8-e4m3-grads-unscaled", input=TensorQuant(_E4M3, TensorScaling()), weight=TensorQuant(_E4M3, TensorScaling()),
                        grad_output=TensorQuant(_E4M3, None), control=True,
                        description="CONTROL: per-tensor scaled forward, gradients cast to E4M3 unscaled: they fall below its range",
                        source="control; E4M3's smallest subnormal is 2^-9 (OCP FP8 spec)")


def _acc14_no_promotion() -> LinearRecipe:
    acc = Accumulator(mantissa_bits=13, promote_every=None)
    return LinearRecipe("fp8-acc14-no-promotion", **_all(_E4M3, _E4M3, _E5M2, TensorScaling), fprop=acc, dgrad=acc, wgrad=acc,
                        control=True,
                        description="CONTROL: fp8-tensorwise-current with the 14-bit accumulator never promoted to FP32",
                        source=_DSV3 + ".2 (limited accumulation precision on H800)")


#: Preset factories by name: the recipes, then the controls (``control=True``).
PRESETS: dict[str, Callable[[], LinearRecipe]] = {
    "fp32": _fp32,
    "bf16": _bf16,
    "fp16": _fp16,
    "fp8-tensorwise-delayed": _tensorwise_delayed,
    "fp8-tensorwise-current": _tensorwise_current,
    "fp8-rowwise": _rowwise,
    "fp8-blockwise": _blockwise,
    "mxfp8": _mxfp8,
    "fp8-tensorwise-delayed-te": lambda: _faithful(_tensorwise_delayed(), "fp8-tensorwise-delayed-te", _TE_ACC),
    "fp8-tensorwise-current-te": lambda: _faithful(_tensorwise_current(), "fp8-tensorwise-current-te", _TE_ACC),
    "fp8-rowwise-torchao": lambda: _faithful(_rowwise(), "fp8-rowwise-torchao", _TORCHAO_ACC),
    "fp8-unscaled": _unscaled,
    "fp16-no-loss-scaling": lambda: _fp16(loss_scaling=False),
    "fp8-e4m3-grads-unscaled": _e4m3_grads_unscaled,
    "fp8-acc14-no-promotion": _acc14_no_promotion,
    "fp8-dgrad-128x128": lambda: _blockwise((128, 128)),
}

#: The presets with their source's accumulation, each mapped to its exact-accumulation variant (same casts).
FAITHFUL: dict[str, str] = {
    "fp8-tensorwise-delayed-te": "fp8-tensorwise-delayed",
    "fp8-tensorwise-current-te": "fp8-tensorwise-current",
    "fp8-rowwise-torchao": "fp8-rowwise",
}
