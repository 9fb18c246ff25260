"""Step time of every recipe relative to fp32: 4 steps each (first dropped), two interleaved rounds, one thread.

Run after bench/train.py; it adds 'step_time_check' to bench/results/train.json (the long run's own ratios
suffer from the shared machine's changing load).
"""

import json
from pathlib import Path

import numpy as np
import torch

from fp8lab.nn import LinearRecipe
from fp8lab.train import TrainConfig
from fp8lab.train.loop import train

RESULTS = Path(__file__).resolve().parent / "results" / "train.json"


def main() -> None:
    """Time every recipe and add the ratios to the results file."""
    torch.set_num_threads(1)
    out: dict[str, list[float]] = {}
    for _ in range(2):  # two interleaved rounds, median of the step times of both
        for name in LinearRecipe.names():
            r = train(name, TrainConfig(steps=4, eval_iters=1, eval_interval=4))
            out.setdefault(name, []).extend(r["step_time_s"][1:])
    med = {n: float(np.median(v)) for n, v in out.items()}
    print(json.dumps({n: round(m / med["fp32"], 2) for n, m in med.items()}))
    rec = json.loads(RESULTS.read_text())
    rec["step_time_check"] = {"command": "python bench/train_step_time.py", "median_step_s": med,
                              "vs_fp32": {n: m / med["fp32"] for n, m in med.items()},
                              "steps_timed": {n: len(v) for n, v in out.items()},
                              "note": "measured when the shared machine was less loaded; use these ratios, not the long run's"}
    RESULTS.write_text(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
