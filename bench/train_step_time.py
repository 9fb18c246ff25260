"""Step time of every recipe relative to fp32: 8 steps each (first 2 dropped), three interleaved rounds, one thread.

Run after bench/train.py; it adds 'step_time_check' to bench/results/train.json (the long run's own ratios
suffer from the shared machine's changing load).
"""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import torch

from fp8lab.nn import LinearRecipe
from fp8lab.train import TrainConfig
from fp8lab.train.loop import train

RESULTS = Path(__file__).resolve().parent / "results" / "train.json"


def _commit() -> str:
    """The git commit of the code timed (or "unknown" outside a git checkout)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=RESULTS.parent, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main() -> None:
    """Time every recipe and add the ratios to the results file."""
    torch.set_num_threads(1)
    out: dict[str, list[float]] = {}
    load_before = os.getloadavg()
    for _ in range(3):  # three interleaved rounds, median of the step times of all
        for name in LinearRecipe.names():
            r = train(name, TrainConfig(steps=8, eval_iters=1, eval_interval=8))
            out.setdefault(name, []).extend(r["step_time_s"][2:])
    load_after = os.getloadavg()
    med = {n: float(np.median(v)) for n, v in out.items()}
    print(json.dumps({n: round(m / med["fp32"], 2) for n, m in med.items()}))
    rec = json.loads(RESULTS.read_text())
    rec["step_time_check"] = {"command": "python bench/train_step_time.py", "median_step_s": med,
                              "vs_fp32": {n: m / med["fp32"] for n, m in med.items()},
                              "steps_timed": {n: len(v) for n, v in out.items()},
                              "load_average_before_after": [load_before, load_after],
                              "commit": _commit(),
                              "note": "measured with nothing else running on the machine (load averages recorded); "
                                      "use these ratios, not the long run's"}
    RESULTS.write_text(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
