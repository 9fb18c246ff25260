"""FP8 GEMM on a GPU (Hopper, or Ada sm_89): native against emulated, and TFLOP/s at 8192^3.

One script, run once wherever a CUDA GPU is at hand:

1. **Check**: ``scaled_matmul(..., backend="native")`` (torch._scaled_mm) against fp8lab's
   emulation on the device, for per-tensor, row-wise and DeepSeek-V3 block scales (1x128 /
   128x128, where the installed torch supports them), with the largest difference relative to the
   FP32-summation bound.
2. **Accumulation on real hardware**: with positive data, the relative error against float64 for
   K = 1024 .. 16384 of the native kernel (split accumulation, ``use_fast_accum=False``), the
   native kernel with ``use_fast_accum=True`` (no promotion), and the emulated 14-bit accumulator
   with and without promotion every 128: how close the accumulator model is to the chip.
3. **Speed**: TFLOP/s of bfloat16 matmul against FP8 ``torch._scaled_mm`` with per-tensor and
   row-wise scales (and fast accumulation) at M = N = K = 8192, timed with CUDA events.

Results go to ``bench/results/hopper_<gpu>.json`` (``--out`` to change). Without a CUDA device the
script says so and exits with status 0, writing nothing. ``--dry-run`` runs every step on the CPU
at small sizes (a test of the script itself; nothing is written).
Run: ``.venv/bin/python bench/hopper.py [--size 8192] [--iters 50]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fp8lab as fl  # noqa: E402
from fp8lab.codec import encode  # noqa: E402
from fp8lab.gemm import Accumulator, native_available, relative_errors, scaled_matmul  # noqa: E402
from fp8lab.qtensor import QTensor, expand_blocks  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def quantize(x: torch.Tensor, block: tuple[int, int], fmt: str = "e4m3") -> QTensor:
    """Absmax scaling per block (``block`` as in QTensor): amax / fmt.max, saturating encode."""
    f = fl.get_format(fmt)
    m, k = x.shape
    n0, n1 = math.ceil(m / block[0]), math.ceil(k / block[1])
    amax = x.abs().reshape(n0, block[0], n1, block[1]).amax(dim=(1, 3))
    scales = torch.where(amax > 0, amax / f.max, torch.ones((), device=x.device)).float()
    return QTensor(encode(x / expand_blocks(scales, block, x.shape), f, saturate=True), scales, f, block=block)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_op(fn, device: torch.device, iters: int, warmup: int = 5) -> float:
    """Median seconds per call (CUDA events on a GPU, perf_counter on the CPU)."""
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(iters):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize(device)
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def check_native(device: torch.device, n: int) -> list[dict]:
    """Native against emulated for each scale layout: largest |difference| / FP32-summation bound."""
    gen = torch.Generator(device="cpu").manual_seed(0)
    a = (torch.randn(n, n, generator=gen) * torch.exp(torch.empty(n, 1).uniform_(-2, 2, generator=gen))).to(device)
    b = (torch.randn(n, n, generator=gen) * torch.exp(torch.empty(1, n).uniform_(-2, 2, generator=gen))).to(device)
    layouts = {"per-tensor": ((n, n), (n, n)), "row-wise": ((1, n), (n, 1)),
               "blockwise 1x128 / 128x128": ((1, 128), (128, 128))}
    rows = []
    for name, (ba, bb) in layouts.items():
        qa, qb = quantize(a, ba), quantize(b, bb)
        row = {"scales": name, "shape": [n, n, n]}
        for out_dtype in ("float32", "bfloat16"):
            try:
                native = scaled_matmul(qa, qb, out_dtype, backend="native")
            except (NotImplementedError, RuntimeError, ValueError) as e:
                row[out_dtype] = {"supported": False, "error": f"{type(e).__name__}: {str(e)[:400]}"}
                continue
            emulated = scaled_matmul(qa, qb, out_dtype)
            mag = qa.dequantize().abs() @ qb.dequantize().abs()
            diff = (native.float() - emulated.float()).abs()
            if out_dtype == "float32":
                bound = (2 * n + 8) * 2.0**-24 * mag + 1e-30
                ok = bool((diff <= bound).all())
            else:  # both round an FP32 result to bfloat16: at most one bfloat16 step apart
                bound = 2.0**-7 * emulated.float().abs() + (2 * n + 8) * 2.0**-24 * mag + 1e-30
                ok = bool((diff <= bound).all())
            row[out_dtype] = {"supported": True, "max_diff_over_bound": float((diff / bound).max()), "ok": ok,
                              "rel_diff": float(torch.linalg.vector_norm(diff) / torch.linalg.vector_norm(emulated.float()))}
        rows.append(row)
        print(f"  check {name}: " + "; ".join(
            f"{k}: " + (f"ok={v['ok']} max diff/bound {v['max_diff_over_bound']:.3g}" if v["supported"] else "not supported")
            for k, v in row.items() if isinstance(v, dict)), flush=True)
    return rows


def accumulation_on_hardware(device: torch.device, ks: list[int], m: int) -> list[dict]:
    """Relative error vs float64 of native (split / fast accumulation) and emulated accumulators, per K."""
    gen = torch.Generator(device="cpu").manual_seed(1)
    kmax = max(ks)
    a = torch.rand(m, kmax, generator=gen).to(device)
    b = torch.rand(kmax, m, generator=gen).to(device)
    qa_full, qb_full = quantize(a, (m, kmax)), quantize(b, (kmax, m))
    rows = []
    for k in ks:
        qa = QTensor(qa_full.codes[:, :k].contiguous(), qa_full.scales, qa_full.format)
        qb = QTensor(qb_full.codes[:k].contiguous(), qb_full.scales, qb_full.format)
        ref = qa.dequantize().double() @ qb.dequantize().double()
        results = {}
        for label, acc in (("emulated exact FP32", Accumulator()),
                           ("emulated 14-bit, no promotion", Accumulator(13, None)),
                           ("emulated 14-bit, promoted every 128", Accumulator(13, 128))):
            results[label] = relative_errors(scaled_matmul(qa, qb, accumulator=acc), ref)
        if native_available(device) is None:
            a8 = qa.codes.view(torch.float8_e4m3fn)
            b8 = qb.codes.view(torch.float8_e4m3fn)
            b8 = b8.contiguous() if device.type == "cpu" else b8.t().contiguous().t()
            sa, sb = qa.scales.reshape(1, 1).float(), qb.scales.reshape(1, 1).float()
            if device.type == "cpu":
                sa, sb = sa.expand(m, 1).contiguous(), sb.expand(1, m).contiguous()
            for label, fast in (("native, use_fast_accum=False", False), ("native, use_fast_accum=True", True)):
                try:
                    out = torch._scaled_mm(a8, b8, sa, sb, out_dtype=torch.float32, use_fast_accum=fast)
                    results[label] = relative_errors(out, ref)
                except (RuntimeError, ValueError, NotImplementedError) as e:
                    results[label] = {"error": str(e).splitlines()[0][:300]}
        for label, r in results.items():
            rows.append({"k": k, "setting": label, **r})
        print(f"  K={k}: " + "; ".join(f"{lbl} {r.get('max_rel_error', float('nan')):.2e}" for lbl, r in results.items()),
              flush=True)
    return rows


def speed(device: torch.device, n: int, iters: int) -> list[dict]:
    """TFLOP/s of bfloat16 matmul and FP8 torch._scaled_mm (per-tensor, row-wise, fast accumulation)."""
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    a16, b16 = a.bfloat16(), b.bfloat16()
    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major
    one = torch.ones((), device=device)
    ra, rb = torch.ones(n, 1, device=device), torch.ones(1, n, device=device)
    if device.type == "cpu":
        one_a, one_b = ra, rb  # scalar scales take a ~0.03 GFLOP/s reference kernel on the CPU
    else:
        one_a, one_b = one, one
    cases = {
        "bfloat16 matmul": lambda: a16 @ b16,
        "fp8 _scaled_mm per-tensor": lambda: torch._scaled_mm(a8, b8, one_a, one_b, out_dtype=torch.bfloat16),
        "fp8 _scaled_mm per-tensor, fast accum": lambda: torch._scaled_mm(a8, b8, one_a, one_b, out_dtype=torch.bfloat16,
                                                                        use_fast_accum=True),
        "fp8 _scaled_mm row-wise": lambda: torch._scaled_mm(a8, b8, ra, rb, out_dtype=torch.bfloat16),
    }
    rows, base = [], None
    for label, fn in cases.items():
        try:
            t = time_op(fn, device, iters)
        except (RuntimeError, ValueError, NotImplementedError) as e:
            rows.append({"op": label, "error": str(e).splitlines()[0][:300]})
            print(f"  {label}: {rows[-1]['error']}", flush=True)
            continue
        tflops = 2 * n**3 / t / 1e12
        base = base or tflops
        rows.append({"op": label, "seconds": t, "tflops": tflops, "x_bf16": tflops / base})
        print(f"  {label}: {tflops:.1f} TFLOP/s ({tflops / base:.2f}x bfloat16)", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=8192, help="M = N = K of the speed test")
    ap.add_argument("--check-size", type=int, default=2048, help="M = N = K of the native-vs-emulated check")
    ap.add_argument("--iters", type=int, default=50, help="timed calls per op (median)")
    ap.add_argument("--out", default=None, help="JSON path (default bench/results/hopper_<gpu>.json)")
    ap.add_argument("--dry-run", action="store_true", help="run every step on the CPU at small sizes; write nothing")
    args = ap.parse_args()

    if args.dry_run:
        device = torch.device("cpu")
        args.size, args.check_size, args.iters, ks, m = 256, 256, 3, [256, 1024], 32
    else:
        if not torch.cuda.is_available():
            print("bench/hopper.py: no CUDA device here (torch.cuda.is_available() is False); nothing measured, "
                  "no JSON written. Run it on a Hopper (sm_90) or Ada (sm_89) GPU.")
            return 0
        device = torch.device("cuda")
        ks, m = [1024, 4096, 16384], 256
        torch.backends.cuda.matmul.allow_tf32 = False  # the emulation's float32 matmuls must be full FP32
        torch.backends.cudnn.allow_tf32 = False
    why = native_available(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    cap = list(torch.cuda.get_device_capability(device)) if device.type == "cuda" else None
    print(f"{name} (capability {cap}); torch {torch.__version__}, CUDA {torch.version.cuda}; native path: "
          f"{'available' if why is None else why}", flush=True)
    result = {"device": name, "capability": cap, "torch": torch.__version__, "cuda": torch.version.cuda,
              "date": time.strftime("%Y-%m-%d"), "native_available": why is None, "native_unavailable_reason": why}
    if why is not None and device.type == "cuda":
        print("  the native path cannot run here: only the emulation is checked", flush=True)
    print(f"native vs emulated at {args.check_size}^3:", flush=True)
    result["check"] = check_native(device, args.check_size) if why is None else []
    print(f"accumulation error against float64 (positive data, M = N = {m}):", flush=True)
    result["accumulation"] = accumulation_on_hardware(device, ks, m)
    if why is None:
        print(f"speed at {args.size}^3 (median of {args.iters}):", flush=True)
        result["speed"] = {"size": args.size, "rows": speed(device, args.size, args.iters)}
    if args.dry_run:
        print("dry run: nothing written")
        return 0
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    path = args.out or os.path.join(HERE, "results", f"hopper_{slug}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
