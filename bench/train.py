"""Benchmark (not a test): training recipes from one seed per process; final validation loss, gap to fp32, step time, underflow.

Writes ``--out`` (after each recipe, so a long run keeps what it finished) and prints the table. The
recorded comparison (``bench/results/train.json``) is several such processes, one per seed (and per
half of the recipes), merged: rows carry their seed, and the README's table is
:func:`fp8lab.train.parity.parity_table` of them (mean ± sd over seeds, Welch's t against fp32).
nanoGPT's CPU example is 2000 steps (``--steps 2000``, the default); the JSON records the steps,
warmup, seed, command, commit and machine actually run.

    python bench/train.py --seed 1 --recipes fp32,bf16,mxfp8 --out /tmp/s1.json     # one seed
    python bench/train.py --merge /tmp/s0a.json /tmp/s0b.json /tmp/s1.json /tmp/s2.json --commits A,A,B,B
    python bench/train.py --steps 100 --warmup 10 --eval-interval 50 --eval-iters 10   # a quick look
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from fp8lab.machine import describe
from fp8lab.nn import LinearRecipe
from fp8lab.train import TrainConfig
from fp8lab.train.output import atomic_write, finite_json
from fp8lab.train.loop import train, versions
from fp8lab.train.parity import markdown_table, parity_table

OUT = Path(__file__).resolve().parent / "results" / "train.json"


def _commit() -> str:
    """The git commit of the code run (or "unknown" outside a git checkout)."""
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def summarize(res: dict, fp32: dict | None) -> dict:
    """One table row from a run."""
    med = float(np.median(res["step_time_s"]))
    row = {"recipe": res["recipe"]["name"], "seed": res["config"]["seed"], "control": res["recipe"]["control"],
           "final_val_loss": res["final_val_loss"], "final_train_loss_mean10": float(np.mean(res["loss"][-10:])),
           "first_loss": res["loss"][0], "median_step_s": med,
           "mean_underflow": float(np.mean(res["underflow"])), "overflowed_blocks": int(np.sum(res["overflow"])),
           "skipped_steps": res["skipped_steps"], "diverged": res["diverged"], "wall_s": res["wall_s"],
           "val": res["val"]}
    if fp32 is not None and fp32["final_val_loss"] and res["final_val_loss"] is not None:
        row["gap_to_fp32"] = res["final_val_loss"] - fp32["final_val_loss"]
        row["gap_to_fp32_pct"] = 100 * row["gap_to_fp32"] / fp32["final_val_loss"]
        row["step_time_vs_fp32"] = med / fp32["median_step_s"]
    return row


def table(rows: list[dict]) -> str:
    head = f"{'recipe':26s} {'val loss':>8s} {'gap':>7s} {'gap %':>6s} {'time x':>6s} {'underflow':>9s} {'ovf':>6s}"
    lines = [head, "-" * len(head)]
    for r in rows:
        g = r.get("gap_to_fp32")
        lines.append(f"{r['recipe']:26s} {r['final_val_loss']:8.4f} {g if g is not None else 0:+7.4f} "
                     f"{r.get('gap_to_fp32_pct', 0):+6.2f} {r.get('step_time_vs_fp32', 1):6.2f} "
                     f"{r['mean_underflow']:9.5f} {r['overflowed_blocks']:6d}")
    return "\n".join(lines)


def merge(paths: list[Path], out: Path, commits: list[str] | None = None) -> dict:
    """Join result files of runs of one configuration (seeds and recipe halves run side by side) into one record.

    Rows are keyed by (recipe, seed); the first file wins where one appears twice, and two fp32 runs of
    one seed must agree bit for bit (same code, same machine). Each file keeps its own fp32 row of the
    same seed as the baseline of its step-time ratios (same process, same load). Every file's command,
    commit, machine and times are kept under "runs"; the parity table (fp8lab.train.parity) is computed
    from the rows when read.
    """
    parts = [json.loads(Path(p).read_text()) for p in paths]
    base = {k: v for k, v in parts[0]["config"].items() if k != "seed"}
    if any({k: v for k, v in p["config"].items() if k != "seed"} != base for p in parts):
        raise SystemExit("cannot merge runs of different configurations (other than the seed)")
    fp32 = {}
    for p in parts:
        for r in p["rows"]:
            if r["recipe"] == "fp32":
                if fp32.setdefault(r["seed"], r["final_val_loss"]) != r["final_val_loss"]:
                    raise SystemExit(f"the fp32 runs of seed {r['seed']} disagree: not the same code or machine")
    seen, rows = set(), []
    for p in parts:
        for r in p["rows"]:
            if (r["recipe"], r["seed"]) not in seen:
                seen.add((r["recipe"], r["seed"]))
                rows.append(r)
    order = {n: i for i, n in enumerate(LinearRecipe.names())}  # the presets' order, as --list shows them
    rows.sort(key=lambda r: (order.get(r["recipe"], len(order)), r["seed"]))
    runs = [{"command": p["command"], "commit": (commits or [""] * len(parts))[i] or p.get("commit", "unknown"),
             "machine_record": p.get("machine_record"), "seed": p["config"]["seed"], "started": p.get("started"),
             "finished": p.get("finished")} for i, p in enumerate(parts)]
    merged = {"config": {**base, "seeds": sorted({r["seed"] for r in rows})},
              "note": parts[0]["note"] + f"; merged from {len(parts)} processes run side by side, one core each "
                      "(each row's step-time ratio is against the fp32 run of its own process and seed)",
              "machine": parts[0]["machine"], "versions": parts[0]["versions"], "runs": runs, "rows": rows}
    atomic_write(out, finite_json(merged))
    return merged


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--merge", nargs="+", type=Path, help="merge these result files into --out and print the table")
    ap.add_argument("--commits", default="", help="with --merge: the commit each file was run at, comma-separated")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-interval", type=int, default=250)
    ap.add_argument("--eval-iters", type=int, default=20)
    ap.add_argument("--recipes", default=",".join(LinearRecipe.names()))
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    if a.merge:
        merged = merge(a.merge, a.out, [c.strip() for c in a.commits.split(",")] if a.commits else None)
        print(markdown_table(parity_table(merged["rows"])))
        return
    cfg = TrainConfig(steps=a.steps, seed=a.seed, warmup_steps=a.warmup, eval_interval=min(a.eval_interval, a.steps),
                      eval_iters=a.eval_iters)
    names = [n.strip() for n in a.recipes.split(",")]
    out = {"command": "python " + " ".join(sys.argv), "commit": _commit(), "config": cfg.as_dict(),
           "note": ("nanoGPT's CPU example is 2000 steps with warmup 100" +
                    ("" if a.steps == 2000 else f"; this run has {a.steps} steps (warmup {a.warmup}) because the shared "
                     "2-core machine could not run 2000 steps of every emulated recipe in the time available")),
           "machine": "shared CPU machine (2 cores, other jobs running): step times are noisy; ratios to fp32 are indicative",
           "machine_record": describe(),
           "versions": versions(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": []}
    fp32 = None
    for name in names:
        res = train(name, cfg, threads=1)
        row = summarize(res, fp32)
        if name == "fp32":
            fp32 = row
        out["rows"].append(row)
        out["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        a.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(a.out, finite_json(out))
        print(f"{name}: val {row['final_val_loss']:.4f}  {row['median_step_s'] * 1e3:.0f} ms/step  wall {row['wall_s']:.0f} s",
              flush=True)
    print(table(out["rows"]))


if __name__ == "__main__":
    main()
