"""Benchmark every scaling recipe on LLM-like activations: speed, bytes and error, in one table.

Run: ``.venv/bin/python bench/scaling.py [--size 4096] [--repeats 3] [--torch]``. The data is
``fp8lab.scaling.llm_activations((size, size))`` (Student-t bulk, a few outlier channels 25-100x
larger). For each recipe: throughput of ``quantize_tensor`` (million elements per second), its
time divided by a plain saturating cast ``fl.quantize(x, fmt, saturate=True)`` of the same data in
the same run, bits per element (codes + scales), mean and max relative error and SQNR in dB of
the dequantized tensor, and how many blocks clipped. Timings vary between runs by +-30% on a
shared machine: compare the ratios.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np

from fp8lab.scaling import compare_recipes, comparison_table, llm_activations


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4096, help="the matrix is size x size float32 (default 4096)")
    ap.add_argument("--repeats", type=int, default=3, help="time the best of this many calls (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="seed of llm_activations")
    ap.add_argument("--torch", action="store_true", help="quantize a torch CPU tensor instead of a numpy array")
    args = ap.parse_args(argv)

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    say(f"generating llm_activations(({args.size}, {args.size}), seed={args.seed}) ...")
    x = llm_activations((args.size, args.size), seed=args.seed)
    if args.torch:
        import torch

        x = torch.from_numpy(x)
    a = np.abs(np.asarray(x))
    say(f"  amax {a.max():.1f}, mean |x| {a.mean():.3f}, {time.perf_counter() - t0:.1f} s")
    rows = compare_recipes(x, repeats=args.repeats, progress=lambda m: say("  " + m))
    kind = "torch" if args.torch else "numpy"
    print(f"scaling recipes on llm_activations(({args.size}, {args.size})), {kind}, "
          f"{platform.machine()} Python {platform.python_version()}; x cast = time / plain saturating cast of the same format")
    print(comparison_table(rows))
    say(f"total {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
