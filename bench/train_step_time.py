"""Step time of every recipe relative to fp32: 4 steps each (first dropped), two interleaved rounds, one thread.

Run after bench/train.py; it adds 'step_time_check' to bench/results/train.json (the long run's own ratios
suffer from the shared machine's changing load).
"""
import json, time, numpy as np, torch
torch.set_num_threads(1)
from fp8lab.nn import LinearRecipe
from fp8lab.train import TrainConfig
from fp8lab.train.loop import train
out = {}
for rnd in range(2):  # two interleaved rounds, median of the step times of both
    for name in LinearRecipe.names():
        r = train(name, TrainConfig(steps=4, eval_iters=1, eval_interval=4))
        out.setdefault(name, []).extend(r["step_time_s"][1:])
med = {n: float(np.median(v)) for n, v in out.items()}
print(json.dumps({n: round(m / med["fp32"], 2) for n, m in med.items()}))
from pathlib import Path
res = Path(__file__).resolve().parent / "results" / "train.json"
rec = json.loads(res.read_text())
rec["step_time_check"] = {"command": "python bench/train_step_time.py", "median_step_s": med,
                          "vs_fp32": {n: m / med["fp32"] for n, m in med.items()},
                          "steps_timed": {n: len(v) for n, v in out.items()},
                          "note": "measured when the shared machine was less loaded; use these ratios, not the long run's"}
res.write_text(json.dumps(rec, indent=1))
