"""GPU facts for the hardware chapter: tensor-core rates and bandwidth with sources, and roofline arithmetic.

- :mod:`.specs`: :class:`GPUSpec` per GPU from ``throughput.json`` (dense and sparse rates, each
  with its source and footnotes; memory capacity through :func:`fp8lab.get_gpu`);
- :mod:`.roofline`: FLOP, bytes and arithmetic intensity of a GEMM by operand format, the ridge
  point, which roof binds and the ideal speed-up of FP8 over BF16;
- :mod:`.results`: recorded GPU measurements from ``bench/hopper.py`` (none yet);
- :mod:`.plots`: the throughput bars, the roofline and the speed-up against tokens.

>>> from fp8lab import hardware as hw
>>> hw.get_gpu_spec("h100").throughput("fp8").dense, hw.roofline("h100", "fp8", 1, 8192, 8192).bound
(1979.0, 'memory')
"""

from .results import load_bench_results
from .roofline import (GemmCost, RooflinePoint, activation_cast_bytes, compute_bound_m, gemm_cost, operand_bits,
                       roofline, speedup)
from .specs import TENSOR_FORMATS, GPUSpec, Source, Throughput, get_gpu_spec, get_source, list_gpu_specs

__all__ = [
    "GPUSpec", "Throughput", "Source", "get_gpu_spec", "list_gpu_specs", "get_source", "TENSOR_FORMATS",
    "GemmCost", "gemm_cost", "operand_bits", "RooflinePoint", "roofline", "speedup", "compute_bound_m",
    "activation_cast_bytes", "load_bench_results",
]
