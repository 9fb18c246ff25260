"""The exact FP8 GEMM on the BF16 matrix units against MKL's FP32 GEMM, shape by shape, in one run.

For each (M, K, N) (the training step's shapes, and small ones around ``fp8lab.gemm.units.MIN_WORK``)
it times ``a @ b`` of E4M3-valued float32 operands on the FP32 GEMM and inside ``bf16_units()``
(``units.matmul`` forced past its size threshold), prints the ratio, whether ``MIN_WORK`` picks
the faster one, and the largest difference of either from the float64 product in units of the
FP32 accumulation bound (both must stay at or below 1). One thread, the best of ``--repeat``
interleaved rounds.

    python bench/gemm_units.py [--repeat 50]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from fp8lab.gemm import units  # noqa: E402
from fp8lab.tables import format_table  # noqa: E402

SHAPES = [(768, 128, 512), (768, 512, 128), (512, 768, 128), (768, 128, 384), (128, 128, 128),
          (64, 128, 512), (16, 512, 128), (16, 128, 128), (4, 128, 512), (1, 128, 128)]


def _best(fn, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _on_units(a, b):
    with units.bf16_units():
        mk = torch.backends.mkldnn.matmul
        before = mk.fp32_precision
        mk.fp32_precision = "bf16"  # past MIN_WORK: what units.matmul does above it
        try:
            return a @ b
        finally:
            mk.fp32_precision = before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    rows = []
    for m, k, n in SHAPES:
        a = torch.randn(m, k, generator=g).to(torch.float8_e4m3fn).float()
        b = torch.randn(k, n, generator=g).to(torch.float8_e4m3fn).float()
        t32 = _best(lambda: a @ b, args.repeat)
        tbf = _best(lambda: _on_units(a, b), args.repeat)
        ref = a.double() @ b.double()
        bound = k * 2.0 ** -24 / (1 - k * 2.0 ** -24) * (a.double().abs() @ b.double().abs())
        err = lambda out: float(((out.double() - ref).abs() / bound.clamp_min(1e-300)).max())  # noqa: E731
        picks_units = m * k * n >= units.MIN_WORK
        rows.append([f"{m}x{k}x{n}", f"{t32 * 1e6:.1f}", f"{tbf * 1e6:.1f}", f"{t32 / tbf:.2f}",
                     "units" if picks_units else "FP32", "yes" if picks_units == (tbf < t32) else "no",
                     f"{err(a @ b):.2f}", f"{err(_on_units(a, b)):.2f}"])
    print(format_table(["M x K x N", "FP32 GEMM (us)", "BF16 units (us)", "FP32 / units", "MIN_WORK picks",
                        "the faster?", "FP32 error / bound", "units error / bound"], rows))
    print(f"MIN_WORK = {units.MIN_WORK} multiply-adds; one thread, best of {args.repeat}")


if __name__ == "__main__":
    main()
