"""``fp8lab train``: train the tiny GPT with a recipe, compare recipes, list them (torch imported only when training).

>>> p = build_parser(); a = p.parse_args(["--recipe", "mxfp8", "--steps", "5"]); a.recipe, a.steps
('mxfp8', 5)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from ..cli_types import nonnegative_int, positive_int
from .output import _show, atomic_write, check_output_path, finite_json, partial_path

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
    p.add_argument("--model", default=None,
                   help="with --memory: tiny-gpt (default) or a published dense model (fp8lab size --list), e.g. llama-2-7b")
    p.add_argument("--tokens", type=positive_int, help="with --memory: tokens per step (default: 12 x 64 for tiny-gpt, 4096 otherwise)")
    p.add_argument("--steps", type=positive_int, default=2000, help="training steps (default 2000, nanoGPT's CPU example)")
    p.add_argument("--warmup", type=nonnegative_int, default=None,
                   help="learning-rate warm-up steps (default: nanoGPT's 100, or a tenth of --steps when that is fewer, "
                        "so that a short run leaves its warm-up)")
    p.add_argument("--seed", type=nonnegative_int, default=0)
    p.add_argument("--eval-interval", type=positive_int, default=250, help="steps between validation losses")
    p.add_argument("--eval-iters", type=positive_int, default=20, help="batches per validation loss")
    p.add_argument("--threads", type=positive_int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--fp32-gemms", action="store_true",
                   help="run the exact FP8 GEMMs on MKL's FP32 GEMM, not the CPU's BF16 matrix units (the same "
                        "exact products, another summation order; see fp8lab.gemm.units)")
    p.add_argument("--json", help="write the run(s) as JSON here (checked before training; NaN and inf written as null)")
    p.add_argument("--plot", help="draw the loss curve(s) into this image (checked before training; the extension picks the format)")
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
        self.open = False  # a tty line drawn without its newline yet

    def end_line(self) -> None:
        """End a line drawn on a terminal without its newline (before a message)."""
        if self.open:
            print(file=sys.stderr, flush=True)
            self.open = False

    def __call__(self, step: int, loss: float, dt: float) -> None:
        if self.quiet or (step % self.every and step != self.total):
            return
        width = 24
        done = int(width * step / self.total)
        line = (f"{self.name:>24s} [{'#' * done}{'.' * (width - done)}] {step}/{self.total} "
                f"loss {loss:.4f}  {dt * 1e3:.0f} ms/step  {time.perf_counter() - self.t0:.0f} s")
        self.open = self.tty and step != self.total
        print(("\r" if self.tty else "") + line, end="" if self.open else "\n", file=sys.stderr, flush=True)


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

    m = model_linears(args.model or "tiny-gpt", tokens=args.tokens)
    names = [n.strip() for n in args.compare.split(",")] if args.compare else None
    headers, rows = memory_table(m, names)
    print(f"{m.name}: {m.params:,} parameters, {m.tokens} tokens per step (bytes; GB = 10^9)")
    unit = 1e9 if m.params > 1e8 else 1e6
    label = "GB" if unit == 1e9 else "MB"
    print(format_table([headers[0], *[f"{h} ({label})" for h in headers[1:]]],
                       [[r[0], *[f"{v / unit:.3f}" for v in r[1:]]] for r in rows]))
    print("saved linear inputs: what wgrad reads, in the input role's format; other activations are not counted")
    return 0


def warmup_steps(steps: int, warmup: int | None) -> int:
    """The warm-up a run of ``steps`` gets: ``warmup`` if given (at most ``steps``), else nanoGPT's 100 or a tenth of ``steps``.

    >>> warmup_steps(2000, None), warmup_steps(80, None), warmup_steps(80, 0), warmup_steps(5, None)
    (100, 8, 0, 1)
    """
    if warmup is None:
        return min(100, max(1, steps // 10))
    if warmup > steps:
        raise ValueError(f"--warmup {warmup} is longer than the run (--steps {steps}): the learning rate would never "
                         f"reach its peak")
    return warmup


def _plot_format(path: str) -> str:
    """The image format matplotlib writes for ``path`` (its extension; png without one)."""
    return Path(path).suffix[1:].lower() or "png"


def _check_outputs(args: argparse.Namespace) -> tuple[Path | None, Path | None]:
    """The ``--json`` and ``--plot`` paths, refused (ValueError, one line) before any training when nothing can be written there."""
    js = None if args.json is None else check_output_path(args.json, "--json")
    plot = None if args.plot is None else check_output_path(args.plot, "--plot")
    if plot is not None:
        from .._optional import require

        FigureCanvasBase = require("matplotlib.backend_bases", "fp8lab train --plot").FigureCanvasBase
        kinds = FigureCanvasBase.get_supported_filetypes()
        fmt = _plot_format(args.plot)
        if fmt not in kinds:
            raise ValueError(f"--plot {_show(args.plot)}: matplotlib cannot write .{fmt} images (it writes {', '.join(sorted(kinds))})")
    if js is not None and plot is not None and js.resolve() == plot.resolve():
        raise ValueError(f"--json and --plot name the same file, {_show(args.json)}")
    return js, plot


def _plot(runs: list[dict], path: Path) -> None:
    """Draw the loss curves into ``path`` (written atomically, in the format of its extension)."""
    import io

    import matplotlib.pyplot as plt

    fig = loss_figure(runs)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, dpi=120, format=_plot_format(str(path)))
    finally:
        plt.close(fig)
    atomic_write(path, buf.getvalue())


def loss_figure(runs: list[dict]) -> Any:
    """The runs' smoothed loss curves (validation as dots), and below them, when fp32 is among them, each other
    recipe's smoothed gap to fp32: the curves themselves lie on top of each other.

    >>> run = lambda n, d: {"recipe": {"name": n}, "loss": [3.0 - 0.01 * i + d for i in range(50)], "val": [], "config": {"seed": 0}}
    >>> fig = loss_figure([run("fp32", 0.0), run("mxfp8", 0.02)]); len(fig.axes), fig.axes[1].get_ylabel()
    (2, "loss minus fp32's (moving mean)")
    >>> len(loss_figure([run("mxfp8", 0.0)]).axes)
    1
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    base = next((r for r in runs if r["recipe"]["name"] == "fp32"), None)
    others = [r for r in runs if r is not base]
    two = base is not None and bool(others) and len(base["loss"]) > 0
    fig, axes = plt.subplots(2 if two else 1, 1, figsize=(8, 7.5 if two else 4.5), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": [3, 2]} if two else None)
    ax = axes[0, 0]
    colors = {}
    for r in runs:
        loss = np.asarray(r["loss"], dtype=float)
        if not len(loss):
            continue
        steps, smooth = _smoothed(loss)
        line, = ax.plot(steps, smooth, label=r["recipe"]["name"], lw=1.2)
        colors[id(r)] = line.get_color()
        if r["val"]:
            ax.plot([v["step"] for v in r["val"]], [v["val"] for v in r["val"]], "o", color=line.get_color(), ms=4)
    ax.set_ylabel("training loss (moving mean); dots: validation")
    ax.set_title(f"tiny GPT on Shakespeare, seed {runs[0]['config']['seed']}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    if two:  # the curves lie on top of each other: the gap to fp32, smoothed, is what can be read
        gx = axes[1, 0]
        ref = np.asarray(base["loss"], dtype=float)
        for r in others:
            loss = np.asarray(r["loss"], dtype=float)
            n = min(len(loss), len(ref))
            if n:
                steps, gap = _smoothed(loss[:n] - ref[:n])
                gx.plot(steps, gap, label=r["recipe"]["name"], lw=1.2, color=colors.get(id(r)))
        gx.axhline(0.0, color="0.3", lw=0.8)
        gx.set_ylabel("loss minus fp32's (moving mean)")
        gx.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step")
    fig.tight_layout()
    return fig


def _smoothed(values: Any) -> tuple[Any, Any]:
    """(steps, moving mean over up to 25 steps, a tenth of the run at most) of a per-step series; steps count from 1.

    >>> [v.tolist() for v in _smoothed([1.0, 2.0, 3.0])]
    [[1, 2, 3], [1.0, 2.0, 3.0]]
    """
    import numpy as np

    v = np.asarray(values, dtype=float)
    w = max(1, min(25, len(v) // 10))
    return np.arange(w, len(v) + 1), np.convolve(v, np.ones(w) / w, mode="valid")


def _num(x: float | None, spec: str, scale: float = 1.0) -> str:
    """``x * scale`` formatted by ``spec``; ``n/a`` for None (a run that stopped before that number existed)."""
    return "n/a" if x is None else format(x * scale, spec)


def _summary(name: str, res: dict) -> str:
    """The one-line summary of a run; every field None-safe (a run may diverge or stop before its first validation)."""
    times = sorted(res["step_time_s"])
    under = res["underflow"]
    line = (f"{name}: final val loss {_num(res['final_val_loss'], '.4f')}, "
            f"median step {_num(times[len(times) // 2] if times else None, '.0f', 1e3)} ms, "
            f"mean underflow {_num(sum(under) / len(under) if under else None, '.4f')}, "
            f"overflowed blocks {sum(res['overflow'])}, wall {_num(res['wall_s'], '.1f')} s")
    if res.get("skipped_steps"):
        line += f", skipped {res['skipped_steps']}/{len(res['loss'])} steps"
    note = _delayed_note(res)
    if note:  # on the same line: one line per run
        line += f" [{note}]"
    if res["diverged"]:
        at = res.get("diverged_at")
        line += " (DIVERGED: non-finite loss" + (f" at step {at})" if at is not None else ")")
    return line


def _delayed_note(res: dict) -> str:
    """Why delayed scaling overflows and flushes where current scaling does not, from the run's own counts ('' otherwise).

    >>> note = _delayed_note({"states": {"l": {"input": {"steps": 3, "scale": 0.5}}}, "overflow": [0, 5, 2], "underflow": [0.4, 0.01, 0.0]})
    >>> "40.0% underflow at step 1" in note, "7 overflowed blocks in all, 0 of them at step 1" in note
    (True, True)
    """
    states = res.get("states") or {}
    if not any(s is not None for roles in states.values() for s in roles.values()):
        return ""
    over, under = res.get("overflow") or [], res.get("underflow") or []
    if not over:
        return ""
    first, total = int(over[0]), int(sum(over))
    u0 = under[0] if under else 0.0
    u_rest = sum(under[1:]) / (len(under) - 1) if len(under) > 1 else 0.0
    return (f"delayed scaling: its first step casts at scale 1, before any amax is in its history (as Transformer "
            f"Engine starts), so small gradients flush: {u0:.1%} underflow at step 1, {u_rest:.2%} on average after "
            f"it. Afterwards each scale comes from the largest amax of the earlier steps, so a tensor whose amax "
            f"grows past that maximum overflows (saturates) on that step: {total} overflowed blocks in all, "
            f"{first} of them at step 1. Current scaling fits each tensor's own amax and does neither")


def _write_json(path: Path, doc: Any) -> str:
    """Write ``doc`` as strict JSON to ``path`` atomically; where that fails, to a new file in the temporary folder.

    Returns a note for the user when the result went elsewhere (empty when it went to ``path``).
    """
    text = finite_json(doc)
    try:
        atomic_write(path, text)
        return ""
    except OSError as err:
        fd, spare = tempfile.mkstemp(prefix="fp8lab-train-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return f"could not write {_show(path)} ({err.strerror or err}), so the result went to {spare}"


def _save_partial(js: Path | None, runs: list[dict], not_run: list[str]) -> str:
    """Write the runs so far, marked partial, without replacing a complete result; the one-line note on where they went."""
    if js is None:
        return "no --json given, so nothing was written"
    if not any(r["steps_done"] for r in runs):
        return "no step finished, so nothing was written"
    doc = runs[0] if len(runs) + len(not_run) == 1 else {"runs": runs, "partial": True, "not_run": not_run}
    target, note = js, ""
    if js.exists():
        try:
            old = json.loads(js.read_text())
        except (OSError, ValueError):
            old = None
        if not (isinstance(old, dict) and old.get("partial") is True):  # a complete result, or not ours: keep it
            target = partial_path(js)
            note = f" (not to {_show(js)}, which holds an earlier result)"
    moved = _write_json(target, doc)
    return moved or f"partial result written to {_show(target)}{note}"


def _write_outputs(runs: list[dict], js: Path | None, plot: Path | None) -> int:
    """Write the finished runs' JSON, then their plot; 0, or 1 (with a one-line message) when something went elsewhere or failed."""
    rc = 0
    if js is not None:
        moved = _write_json(js, runs[0] if len(runs) == 1 else {"runs": runs})
        if moved:
            print(f"fp8lab train: {moved}", file=sys.stderr)
            rc = 1
    if plot is not None:
        try:
            _plot(runs, plot)
        except Exception as err:  # the JSON is written; a failed drawing must not hide that
            print(f"fp8lab train: could not draw {_show(plot)} ({type(err).__name__}: {err})".replace("\n", " "),
                  file=sys.stderr)
            rc = 1
    return rc


def run(args: argparse.Namespace) -> int:
    """Carry out parsed ``train`` arguments (raises ValueError for a bad recipe name or output path; Ctrl+C returns 130)."""
    if args.compare is not None and not args.compare.strip(" ,"):
        raise ValueError(f"--compare takes recipe names separated by commas, got {args.compare!r}")
    if args.list:
        return _list()
    if args.memory:
        return _memory(args)
    unused = [o for o, v in (("--model", args.model), ("--tokens", args.tokens)) if v is not None]
    if unused:  # read only with --memory: a name given for training would be ignored without a word
        raise ValueError(f"{' and '.join(unused)} apply only with --memory (training uses the tiny GPT)")
    js, plot = _check_outputs(args)  # before torch is imported, let alone a step taken
    from ..nn.recipe import LinearRecipe
    from .config import TrainConfig

    names = [n.strip() for n in args.compare.split(",")] if args.compare else [args.recipe]
    if any(not n for n in names):
        raise ValueError(f"--compare takes recipe names separated by commas, got {args.compare!r}")
    recipes = [LinearRecipe.from_name(n) for n in names]  # unknown names fail here, before any training
    warmup = warmup_steps(args.steps, args.warmup)
    cfg = TrainConfig(steps=args.steps, seed=args.seed, eval_interval=min(args.eval_interval, args.steps),
                      eval_iters=args.eval_iters, warmup_steps=warmup, bf16_units=not args.fp32_gemms)
    runs: list[dict] = []
    bar = None
    writing = False
    try:
        from .loop import train

        for r in recipes:
            bar = _Bar(r.name, cfg.steps, args.quiet)
            res = train(r, cfg, progress=bar, threads=args.threads)
            runs.append(res)
            print(_summary(r.name, res), flush=True)
        writing = True
        return _write_outputs(runs, js, plot)
    except KeyboardInterrupt as err:
        if bar is not None:
            bar.end_line()
        if writing:  # atomic writes: each file is the old one or the new one
            print("fp8lab train: interrupted while writing the results", file=sys.stderr, flush=True)
            return 130
        partial = getattr(err, "result", None)
        kept = [*runs, partial] if partial else runs
        if len(runs) < len(recipes):
            where = f"{recipes[len(runs)].name} at step {partial['steps_done'] if partial else 0}/{cfg.steps}"
        else:
            where = "after the last run"
        try:
            note = _save_partial(js, kept, [r.name for r in recipes[len(kept):]])
        except KeyboardInterrupt:
            note = "interrupted again while writing, so nothing was written"
        print(f"fp8lab train: interrupted ({where}); {note}", file=sys.stderr, flush=True)
        return 130
    except Exception:
        if runs and js is not None and not writing and len(runs) < len(recipes):  # keep the recipes that finished
            note = _save_partial(js, runs, [r.name for r in recipes[len(runs):]])
            print(f"fp8lab train: {recipes[len(runs)].name} failed; {note}", file=sys.stderr, flush=True)
        raise


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
