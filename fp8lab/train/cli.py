"""``fp8lab train``: train the tiny GPT with a recipe, compare recipes, list them (torch imported only when training).

>>> p = build_parser(); a = p.parse_args(["--recipe", "mxfp8", "--steps", "5"]); a.recipe, a.steps
('mxfp8', 5)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from ..cli_types import nonnegative_int, positive_int

__all__ = ["register", "build_parser", "main", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``train`` options.

    >>> p = argparse.ArgumentParser(); add_arguments(p); p.parse_args([]).steps
    2000
    """
    p.add_argument("--recipe", default="fp32", help="a recipe name (see --list); default fp32")
    p.add_argument("--compare", metavar="A,B,C", help="train several recipes from one seed and plot their loss curves")
    p.add_argument("--list", action="store_true", help="describe the recipes and exit")
    p.add_argument("--memory", action="store_true",
                   help="print each recipe's training memory (weights, FP8 copies, gradients, optimizer, saved inputs) and exit")
    p.add_argument("--model", default="tiny-gpt",
                   help="with --memory: tiny-gpt (default) or a published dense model (fp8lab size --list), e.g. llama-2-7b")
    p.add_argument("--tokens", type=positive_int, help="with --memory: tokens per step (default: 12 x 64 for tiny-gpt, 4096 otherwise)")
    p.add_argument("--steps", type=positive_int, default=2000, help="training steps (default 2000, nanoGPT's CPU example)")
    p.add_argument("--seed", type=nonnegative_int, default=0)
    p.add_argument("--eval-interval", type=positive_int, default=250, help="steps between validation losses")
    p.add_argument("--eval-iters", type=positive_int, default=20, help="batches per validation loss")
    p.add_argument("--threads", type=positive_int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--json", type=Path, help="write the run(s) as JSON here")
    p.add_argument("--plot", type=Path, help="draw the loss curve(s) into this image")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def register(sub: Any) -> None:
    """Add the ``train`` subcommand to the ``fp8lab`` CLI's subparsers.

    >>> p = argparse.ArgumentParser(); s = p.add_subparsers(dest="command"); register(s)
    >>> p.parse_args(["train", "--list"]).list
    True
    """
    p = sub.add_parser("train", help="train a character-level GPT with an FP8/BF16/FP16 recipe",
                       description="Train nanoGPT's character-level GPT on the shipped Shakespeare corpus with a recipe.")
    add_arguments(p)
    p.set_defaults(func=run)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m fp8lab.train``.

    >>> build_parser().prog
    'python -m fp8lab.train'
    """
    p = argparse.ArgumentParser(prog="python -m fp8lab.train", description="Train the tiny GPT with a recipe.")
    add_arguments(p)
    return p


class _Bar:
    """A one-line progress bar on stderr: step, loss and step time."""

    def __init__(self, name: str, total: int, quiet: bool) -> None:
        self.name, self.total, self.quiet = name, total, quiet
        self.tty = sys.stderr.isatty()
        self.every = 1 if self.tty else max(1, total // 10)
        self.t0 = time.perf_counter()

    def __call__(self, step: int, loss: float, dt: float) -> None:
        if self.quiet or (step % self.every and step != self.total):
            return
        width = 24
        done = int(width * step / self.total)
        line = (f"{self.name:>24s} [{'#' * done}{'.' * (width - done)}] {step}/{self.total} "
                f"loss {loss:.4f}  {dt * 1e3:.0f} ms/step  {time.perf_counter() - self.t0:.0f} s")
        print(("\r" if self.tty else "") + line, end="" if self.tty and step != self.total else "\n",
              file=sys.stderr, flush=True)


def _list() -> int:
    from ..nn.recipe import PRESETS, ROLES

    for name, make in PRESETS.items():
        r = make()
        d = r.describe()
        print(f"{name}{'  (control)' if r.control else ''}\n  {r.description}\n  source: {r.source}")
        print("  " + "; ".join(f"{k}: {d[k]}" for k in (*ROLES, "fprop", "dgrad", "wgrad", "loss_scaling")))
    return 0


def _memory(args: argparse.Namespace) -> int:
    from ..tables import format_table
    from .memory import memory_table, model_linears

    m = model_linears(args.model, tokens=args.tokens)
    names = [n.strip() for n in args.compare.split(",")] if args.compare else None
    headers, rows = memory_table(m, names)
    print(f"{m.name}: {m.params:,} parameters, {m.tokens} tokens per step (bytes; GB = 10^9)")
    unit = 1e9 if m.params > 1e8 else 1e6
    label = "GB" if unit == 1e9 else "MB"
    print(format_table([headers[0], *[f"{h} ({label})" for h in headers[1:]]],
                       [[r[0], *[f"{v / unit:.3f}" for v in r[1:]]] for r in rows]))
    print("saved linear inputs: what wgrad reads, in the input role's format; other activations are not counted")
    return 0


def _plot(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for r in runs:
        loss = np.asarray(r["loss"])
        w = max(1, min(25, len(loss) // 10))
        smooth = np.convolve(loss, np.ones(w) / w, mode="valid")
        line, = ax.plot(np.arange(w, len(loss) + 1), smooth, label=r["recipe"]["name"], lw=1.2)
        if r["val"]:
            ax.plot([v["step"] for v in r["val"]], [v["val"] for v in r["val"]], "o", color=line.get_color(), ms=4)
    ax.set_xlabel("step")
    ax.set_ylabel(f"training loss (moving mean); dots: validation")
    ax.set_title(f"tiny GPT on Shakespeare, seed {runs[0]['config']['seed']}")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    """Carry out parsed ``train`` arguments (raises ValueError for a bad recipe name)."""
    if args.list:
        return _list()
    if args.memory:
        return _memory(args)
    from ..nn.recipe import LinearRecipe
    from .config import TrainConfig

    names = [n.strip() for n in args.compare.split(",")] if args.compare else [args.recipe]
    if any(not n for n in names):
        raise ValueError(f"--compare takes recipe names separated by commas, got {args.compare!r}")
    recipes = [LinearRecipe.from_name(n) for n in names]  # unknown names fail here, before any training
    cfg = TrainConfig(steps=args.steps, seed=args.seed, eval_interval=min(args.eval_interval, args.steps),
                      eval_iters=args.eval_iters)
    from .loop import train

    runs = []
    for r in recipes:
        res = train(r, cfg, progress=_Bar(r.name, cfg.steps, args.quiet), threads=args.threads)
        runs.append(res)
        times = sorted(res["step_time_s"])
        print(f"{r.name}: final val loss {res['final_val_loss']:.4f}, median step {1e3 * times[len(times) // 2]:.0f} ms, "
              f"mean underflow {sum(res['underflow']) / len(res['underflow']):.4f}, "
              f"overflowed blocks {sum(res['overflow'])}, wall {res['wall_s']:.1f} s"
              + (" (DIVERGED: non-finite loss)" if res["diverged"] else ""))
    if args.json:
        args.json.write_text(json.dumps(runs[0] if len(runs) == 1 else {"runs": runs}, indent=1))
    if args.plot:
        _plot(runs, args.plot)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fp8lab.train``: parse, run, exit code 2 with a clear message for bad values.

    >>> main(["--recipe", "fp9", "--steps", "1"])
    2
    """
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except (ValueError, TypeError) as err:
        print(f"fp8lab train: error: {err}", file=sys.stderr)
        return 2
