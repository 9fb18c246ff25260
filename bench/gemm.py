"""FP8 GEMM on the CPU: emulated and native scaled matmuls beside float32 and bfloat16 matmul.

At M = N = K = 2048 (``--size 4096`` for 4096), one run measures float32 matmul (the reference
time), bfloat16 matmul, torch 2.13's native ``_scaled_mm`` (row-wise scale shapes: its fast path),
and fp8lab's emulation with per-tensor, row-wise and DeepSeek-V3 block scales (1x128 / 128x128),
with exact FP32 accumulation and with a 14-bit accumulator promoted to FP32 every 128 elements
of K. Each row gives the time ratio to float32 matmul (quantisation excluded: it is not part of
the GEMM) and two relative errors (Frobenius norm): against the float64 product of the original
float32 operands (quantisation + accumulation), and against the float64 product of the
dequantised operands (accumulation alone). A footnote measures why the native path passes
per-tensor scales as (M, 1) and (1, N) on the CPU.
Run: ``.venv/bin/python bench/gemm.py [--size 4096] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from fp8lab.gemm import Accumulator, native_available, scaled_matmul  # noqa: E402
from fp8lab.gemm.probe import SLOW_BF16_RATIO, bf16_matmul_slowdown  # noqa: E402
from fp8lab.qtensor import QTensor  # noqa: E402
from fp8lab.scaling import AxisScaling, BlockScaling, TensorScaling, quantize_tensor  # noqa: E402
from fp8lab.tables import format_table  # noqa: E402

TARGETS = {"emulated, per-tensor": 1.2, "emulated, 1x128 / 128x128 blocks": 2.0,
           "emulated, blocks + 14-bit accumulator, promoted every 128": 8.0}


def best_time(fn, repeat: int, warm_up: bool = True) -> tuple[float, object]:
    out = fn() if warm_up else None
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def quantize(x: torch.Tensor, block: tuple[int, int]) -> QTensor:
    """E4M3 with absmax scaling per tensor, per row / column, or per block (fp8lab.scaling)."""
    m, k = x.shape
    recipe = (TensorScaling() if block == (m, k) else AxisScaling(axis=-1) if block == (1, k)
              else AxisScaling(axis=0) if block == (m, 1) else BlockScaling(block=block))
    q = quantize_tensor(x, "e4m3", recipe)
    assert q.block == block, (q.block, block)
    return q


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))


def scalar_scale_footnote(n: int = 256) -> str:
    """GFLOP/s of torch._scaled_mm with scalar scales against the same scales as (M, 1) and (1, N)."""
    a = torch.randn(n, n).to(torch.float8_e4m3fn)
    b = torch.randn(n, n).to(torch.float8_e4m3fn).t()
    s = torch.tensor(0.5)
    t_scalar, o1 = best_time(lambda: torch._scaled_mm(a, b, s, s, out_dtype=torch.float32), 1, warm_up=False)
    sa, sb = s.expand(n, 1).contiguous(), s.expand(1, n).contiguous()
    t_row, o2 = best_time(lambda: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.float32), 20)
    same = "equal" if torch.equal(o1, o2) else "different"
    return (f"torch._scaled_mm at {n}^3: scalar scales {2 * n**3 / t_scalar / 1e9:.3f} GFLOP/s, the same scales as "
            f"({n}, 1) and (1, {n}) {2 * n**3 / t_row / 1e9:.1f} GFLOP/s ({t_scalar / t_row:.0f}x faster; results {same})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=2048, help="M = N = K (2048; 4096 for the larger run)")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved timed rounds after a warm-up; the best counts")
    args = ap.parse_args()
    n = args.size
    print(f"M = N = K = {n}; torch {torch.__version__}, {torch.get_num_threads()} threads; best of {args.repeat} rounds",
          flush=True)
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen) * torch.exp(torch.empty(n, 1).uniform_(-2, 2, generator=gen))
    b = torch.randn(n, n, generator=gen) * torch.exp(torch.empty(1, n).uniform_(-2, 2, generator=gen))
    print("  float64 reference ...", flush=True)
    ref = a.double() @ b.double()
    layouts = {"per-tensor": ((n, n), (n, n)), "row-wise": ((1, n), (n, 1)),
               "1x128 / 128x128 blocks": ((1, 128), (128, 128))}
    q, deq_ref = {}, {}
    for name, (ba, bb) in layouts.items():
        print(f"  quantising ({name}) and its float64 reference ...", flush=True)
        q[name] = (quantize(a, ba), quantize(b, bb))
        deq_ref[name] = q[name][0].dequantize().double() @ q[name][1].dequantize().double()

    acc14 = Accumulator(mantissa_bits=13, promote_every=128)
    cases = [("float32 matmul", lambda: a @ b, None)]  # (label, function, float64 reference of the dequantised operands)
    slowdown = bf16_matmul_slowdown()  # torch's CPU bf16 matmul speed depends on the processor: probe at 256^3 first
    skipped = []
    if slowdown > SLOW_BF16_RATIO:
        skipped.append(["bfloat16 matmul", "-", "-", "-", "-", "-",
                        f"skipped: {slowdown:.0f}x float32 at 256^3 here (no AVX-512 BF16/AMX); at {n}^3 it would stall"])
    else:
        cases.append(("bfloat16 matmul", lambda: (a16 @ b16), None))
    a16, b16 = a.bfloat16(), b.bfloat16()
    why = native_available()
    for name in ("per-tensor", "row-wise"):
        if why is None:
            cases.append((f"native _scaled_mm, {name}",
                          lambda name=name: scaled_matmul(*q[name], backend="native"), deq_ref[name]))
    for name in layouts:
        cases.append((f"emulated, {name}", lambda name=name: scaled_matmul(*q[name]), deq_ref[name]))
    blocks = "1x128 / 128x128 blocks"
    cases.append(("emulated, blocks + 14-bit accumulator, promoted every 128",
                  lambda: scaled_matmul(*q[blocks], accumulator=acc14), deq_ref[blocks]))

    # warm up every case once, then time them in interleaved rounds: a slow spell of the machine
    # (timings here vary by +-30% and more) then hits all cases alike instead of one of them
    outs, best = {}, {}
    for label, fn, _ in cases:
        print(f"  {label} ...", flush=True)
        outs[label] = fn()
    print(f"  timing {args.repeat} interleaved rounds ...", flush=True)
    for _ in range(args.repeat):
        for label, fn, _ in cases:
            t = time.perf_counter()
            fn()
            best[label] = min(best.get(label, math.inf), time.perf_counter() - t)
    rows, t32 = [], best["float32 matmul"]
    for label, _, dref in cases:
        t, out = best[label], outs[label]
        target = TARGETS.get(label)
        ratio = t / t32
        verdict = "-" if target is None else (f"<= {target}x: " + ("met" if ratio <= target else "MISSED"))
        rows.append([label, f"{t * 1e3:.1f}", f"{ratio:.2f}", f"{2 * n**3 / t / 1e9:.0f}",
                     f"{rel_error(out, ref):.2e}", "-" if dref is None else f"{rel_error(out, dref):.2e}", verdict])
    rows += skipped
    if why is not None:
        rows.append(["native _scaled_mm", "-", "-", "-", "-", "-", f"not run: {why}"])
    print()
    print(format_table(["method", "ms", "x fp32 matmul", "GFLOP/s", "rel err vs fp64", "accum. rel err", "target"],
                       rows, align="lrrrrrl"))
    print("\nrel err vs fp64: against the float64 product of the float32 inputs (quantisation + accumulation);")
    print("accum. rel err: against the float64 product of the dequantised FP8 operands (accumulation alone).")
    if why is None:
        print(scalar_scale_footnote())


if __name__ == "__main__":
    main()
