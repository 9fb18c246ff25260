"""Codec throughput: fp8lab (numpy and torch paths) beside ml_dtypes, torch's native casts and gfloat.

Measures, on the same 2^24 float32 values (normal, sigma 10, so every binade is visited), the
elements per second of a round trip (value -> nearest representable value), of encoding to codes
and of decoding codes, for E4M3FN, E5M2, E8M0, E2M1 and BF16, and prints ratios measured in the
same run. Run: ``.venv/bin/python bench/codec.py [--log2n 24] [--repeat 3] [--no-gfloat]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import ml_dtypes
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fp8lab as fl  # noqa: E402
from fp8lab.tables import format_table  # noqa: E402

FORMATS = {  # fp8lab name: (ml_dtypes dtype, torch dtype or None, gfloat format name)
    "float8_e4m3fn": (ml_dtypes.float8_e4m3fn, torch.float8_e4m3fn, "format_info_ocp_e4m3"),
    "float8_e5m2": (ml_dtypes.float8_e5m2, torch.float8_e5m2, "format_info_ocp_e5m2"),
    "float8_e8m0fnu": (ml_dtypes.float8_e8m0fnu, torch.float8_e8m0fnu, "format_info_ocp_e8m0"),
    "float4_e2m1fn": (ml_dtypes.float4_e2m1fn, None, "format_info_ocp_e2m1"),
    "bfloat16": (ml_dtypes.bfloat16, torch.bfloat16, "format_info_bfloat16"),
}


def best_time(fn, repeat: int) -> float:
    fn()  # warm up (tables, allocations)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-gfloat", action="store_true", help="skip gfloat (slowest, ~2 s per format)")
    args = ap.parse_args()
    n = 1 << args.log2n
    x = (np.random.default_rng(0).standard_normal(n) * 10).astype(np.float32)
    xt = torch.from_numpy(x)
    try:
        import gfloat
        import gfloat.formats as gformats
    except ImportError:
        gfloat = None
    if args.no_gfloat:
        gfloat = None
    print(f"{n:,} float32 values, best of {args.repeat}; torch threads: {torch.get_num_threads()}; M elements/s")
    rows = []
    for name, (md, tdt, gname) in FORMATS.items():
        print(f"  {name} ...", flush=True)
        r = {}
        codes = fl.encode(x, name)
        codes_t = torch.from_numpy(codes.astype(np.int64) if codes.dtype != np.uint8 else codes)
        r["rt numpy"] = best_time(lambda: fl.quantize(x, name), args.repeat)
        r["rt torch"] = best_time(lambda: fl.quantize(xt, name), args.repeat)
        r["rt ml_dtypes"] = best_time(lambda: x.astype(md).astype(np.float32), args.repeat)
        r["enc numpy"] = best_time(lambda: fl.encode(x, name), args.repeat)
        r["enc ml_dtypes"] = best_time(lambda: x.astype(md), args.repeat)
        r["dec numpy"] = best_time(lambda: fl.decode(codes, name), args.repeat)
        cm = codes.view(md)
        r["dec ml_dtypes"] = best_time(lambda: cm.astype(np.float32), args.repeat)
        r["rt torch native"] = best_time(lambda: xt.to(tdt).to(torch.float32), args.repeat) if tdt is not None else None
        r["dec torch"] = best_time(lambda: fl.decode(codes_t, name), args.repeat)
        if gfloat is not None:
            fi = getattr(gformats, gname)
            r["rt gfloat"] = best_time(lambda: gfloat.round_ndarray(fi, x, sat=True), 1)
        else:
            r["rt gfloat"] = None
        rate = {k: (n / v / 1e6 if v else None) for k, v in r.items()}
        ratio = lambda a, b: (rate[a] / rate[b]) if rate.get(a) and rate.get(b) else None  # noqa: E731
        rows.append([name, rate["rt numpy"], rate["rt ml_dtypes"], ratio("rt numpy", "rt ml_dtypes"),
                     rate["rt gfloat"], ratio("rt numpy", "rt gfloat"),
                     rate["rt torch"], rate["rt torch native"], ratio("rt torch", "rt torch native"),
                     rate["enc numpy"], ratio("enc numpy", "enc ml_dtypes"),
                     rate["dec numpy"], ratio("dec numpy", "dec ml_dtypes"), rate["dec torch"]])
    fmt = lambda v: "-" if v is None else (round(v, 1) if v >= 10 else round(v, 2))  # noqa: E731
    headers = ["format", "rt numpy", "rt ml_dtypes", "x ml_dtypes", "rt gfloat", "x gfloat", "rt torch",
               "rt torch native", "x native", "enc numpy", "x ml_dtypes", "dec numpy", "x ml_dtypes", "dec torch"]
    print()
    print(format_table(headers, [[row[0]] + [fmt(v) for v in row[1:]] for row in rows], align="l" + "r" * 13))
    print("\nrt = round trip (x -> nearest representable value); x ... = fp8lab's rate divided by that library's.")
    print("Targets (issue 2): numpy round trip >= 2x ml_dtypes and >= 10x gfloat; torch path >= 0.5x torch's native cast.")


if __name__ == "__main__":
    main()
