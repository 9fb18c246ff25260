"""Step time of every recipe relative to fp32: all recipes stepped in turn, the ratio taken within each round.

Run after bench/train.py; it adds 'step_time_check' to bench/results/train.json (the long run's own ratios
suffer from the shared machine's changing load). One fp8lab.train.Run per recipe (same seed, same batches as
`fp8lab train`), one thread; each round runs one step of every recipe, in an order that rotates from round to
round, and a recipe's time in that round is divided by fp32's. A load change slows all recipes of a round alike,
so the median of the per-round ratios is steadier than a ratio of medians taken minutes apart. The first
--warmup rounds are dropped. Wall-clock and CPU time (time.process_time: this process's CPU time, which other
processes' load disturbs less) are both recorded and printed. Every Fp8Linear saves its input for backward in
FP8 (``save_fp8=True``, the default), as the timed training does.

    python bench/train_step_time.py [--rounds 24] [--warmup 3] [--repeats 3] [--recipes a,b,...] [--print-only]
                                    [--fp32-gemms]

``--recipes`` times a subset (fp32 is always added: the ratios are to it); ``--print-only`` prints the ratios
without touching the results file (the recorded table stays the one its runs measured). The runs use
``TrainConfig``'s default ``bf16_units=True`` (the exact FP8 GEMMs on the CPU's BF16 matrix units, as
``fp8lab train`` runs them); ``--fp32-gemms`` times them on MKL's FP32 GEMM instead.

With --repeats R the whole measurement runs R times (fresh runs each time); the ratios recorded are the
median over the repeats, and each repeat's own ratios are kept under "repeats".
"""

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import torch

from fp8lab.machine import describe
from fp8lab.nn import LinearRecipe
from fp8lab.train import TrainConfig
from fp8lab.train.output import atomic_write, finite_json
from fp8lab.train.loop import Run

RESULTS = Path(__file__).resolve().parent / "results" / "train.json"


def _commit() -> str:
    """The git commit of the code timed (or "unknown" outside a git checkout)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=RESULTS.parent, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def measure(rounds: int, warmup: int, names: list[str] | None = None, bf16_units: bool = True) -> dict:
    """Per-round wall and CPU step times of every recipe (or of ``names`` and fp32), and their ratios to fp32's in the same round."""
    torch.set_num_threads(1)
    names = list(LinearRecipe.names()) if names is None else ["fp32", *[n for n in names if n != "fp32"]]
    cfg = TrainConfig(steps=rounds, bf16_units=bf16_units)
    runs = {n: Run(LinearRecipe.from_name(n), cfg) for n in names}
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for step in range(rounds):
        k = step % len(names)
        for n in names[k:] + names[:k]:  # rotate the order: no recipe always follows the same one
            c0 = time.process_time()
            _, _, dt = runs[n].step(step)
            cpu[n].append(time.process_time() - c0)
            wall[n].append(dt)
        print(f"round {step + 1}/{rounds}: fp32 {wall['fp32'][-1] * 1e3:.0f} ms", flush=True)
    keep = slice(warmup, None)
    ratio = {n: float(np.median(np.array(wall[n][keep]) / np.array(wall["fp32"][keep]))) for n in names}
    cpu_ratio = {n: float(np.median(np.array(cpu[n][keep]) / np.array(cpu["fp32"][keep]))) for n in names}
    return {"vs_fp32": ratio, "cpu_vs_fp32": cpu_ratio,
            "median_step_s": {n: float(np.median(wall[n][keep])) for n in names},
            "median_cpu_step_s": {n: float(np.median(cpu[n][keep])) for n in names},
            "rounds_timed": rounds - warmup}


def main() -> None:
    """Time every recipe and add the ratios to the results file."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=24)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--recipes", default=None, help="comma-separated recipe names (default: every preset)")
    ap.add_argument("--print-only", action="store_true", help="print the ratios; do not write bench/results/train.json")
    ap.add_argument("--fp32-gemms", action="store_true",
                    help="TrainConfig(bf16_units=False): the exact FP8 GEMMs on MKL's FP32 GEMM, not the BF16 units")
    args = ap.parse_args()
    names = None
    if args.recipes is not None:
        names = [n.strip() for n in args.recipes.split(",") if n.strip()]
        for n in names:
            LinearRecipe.from_name(n)  # an unknown name fails here, before any timing
    if names is not None and not args.print_only:
        ap.error("--recipes times a subset, which the results file does not record: add --print-only")
    if not 0 <= args.warmup < args.rounds or args.repeats < 1:
        ap.error("need 0 <= --warmup < --rounds and --repeats >= 1")
    load_before = os.getloadavg()
    reps = []
    for r in range(args.repeats):
        reps.append(measure(args.rounds, args.warmup, names, bf16_units=not args.fp32_gemms))
        print(f"repeat {r + 1}/{args.repeats}: wall", json.dumps({n: round(v, 2) for n, v in reps[-1]["vs_fp32"].items()}),
              "cpu", json.dumps({n: round(v, 2) for n, v in reps[-1]["cpu_vs_fp32"].items()}), flush=True)
    load_after = os.getloadavg()
    m = {key: {n: float(np.median([rep[key][n] for rep in reps])) for n in reps[0][key]}
         for key in ("vs_fp32", "cpu_vs_fp32", "median_step_s", "median_cpu_step_s")}
    m["rounds_timed"] = reps[0]["rounds_timed"]
    m["repeats"] = [rep["vs_fp32"] for rep in reps]
    print("median over repeats: wall", json.dumps({n: round(v, 2) for n, v in m["vs_fp32"].items()}))
    print("median over repeats: cpu ", json.dumps({n: round(v, 2) for n, v in m["cpu_vs_fp32"].items()}))
    print(f"fp32 step: {m['median_step_s']['fp32'] * 1e3:.1f} ms wall, {m['median_cpu_step_s']['fp32'] * 1e3:.1f} ms CPU; "
          f"load average before/after {load_before[0]:.2f}/{load_after[0]:.2f}")
    if args.print_only:
        return
    rec = json.loads(RESULTS.read_text())
    rec["step_time_check"] = {"command": f"python bench/train_step_time.py --rounds {args.rounds} --warmup {args.warmup} "
                                         f"--repeats {args.repeats}" + (" --fp32-gemms" if args.fp32_gemms else ""),
                              "bf16_units": not args.fp32_gemms,
                              **m, "load_average_before_after": [load_before, load_after], "commit": _commit(),
                              "method": "all recipes stepped in turn (order rotating), one thread; median over rounds "
                                        "of each recipe's wall-clock step time divided by fp32's in the same round; "
                                        "median of that over the repeats",
                              "machine_record": describe(),
                              "note": "ratios within a round are what a changing load slows alike; the load averages "
                                      "before and after say how busy the machine was; use these ratios, not the long "
                                      "run's"}
    atomic_write(RESULTS, finite_json(rec))


if __name__ == "__main__":
    main()
