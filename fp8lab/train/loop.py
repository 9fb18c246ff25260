"""One training run: the GPT of ``fp8lab.nn.gpt`` on the shipped corpus with one ``LinearRecipe``, as nanoGPT trains it.

Every Linear except the tied ``lm_head`` becomes an :class:`~fp8lab.nn.Fp8Linear` (embeddings,
LayerNorms, attention's softmax and the head stay FP32, as DeepSeek-V3 keeps them in high
precision). AdamW updates FP32 master weights. A recipe with ``loss_scaling`` runs
:class:`fp8lab.LossScaler` (a step whose gradients overflow is skipped). The result is plain data
(JSON-ready): the configuration, the recipe, every step's loss and time, validation losses, and per
layer the amax and scale histories of each role, the fraction of nonzero output gradients that
underflowed to zero, and the saturated (overflowed) blocks.

A run *diverges* when a loss is not finite: a training step's (whether or not the loss scaler
skipped that step) or a validation loss. ``diverged_at`` is the first such step. Without a loss
scaler the run stops there; with one it goes on, as the scaler would. Ctrl+C raises
:class:`TrainingInterrupted`, a ``KeyboardInterrupt`` carrying the steps done (``"partial": True``).

>>> r = train("fp8-rowwise", TrainConfig(steps=2, eval_iters=1, n_layer=1, n_embd=32, n_head=2, block_size=16, batch_size=2))
>>> len(r["loss"]), sorted(r["layers"])[:2], r["recipe"]["name"]
(2, ['h.0.attn.c_attn', 'h.0.attn.c_proj'], 'fp8-rowwise')
"""

from __future__ import annotations

import math
import platform
import time
from typing import Any, Callable

import numpy as np

from .config import TrainConfig
from .data import SOURCE, load_shakespeare

__all__ = ["train", "Run", "versions", "TrainingInterrupted"]


def versions() -> dict[str, str]:
    """Versions of what produced a result.

    >>> sorted(versions())
    ['fp8lab', 'numpy', 'python', 'torch']
    """
    import torch

    import fp8lab

    return {"fp8lab": fp8lab.__version__, "torch": torch.__version__, "numpy": np.__version__,
            "python": platform.python_version()}


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl+C during :func:`train`: a KeyboardInterrupt whose ``result`` is the run so far, marked ``"partial": True``.

    >>> err = TrainingInterrupted({"partial": True, "steps_done": 3}); isinstance(err, KeyboardInterrupt), err.result["steps_done"]
    (True, 3)
    """

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(f"training interrupted after {result.get('steps_done')} steps")
        self.result = result


def _optimizer(model, cfg: TrainConfig):
    """AdamW with weight decay on matrices and embeddings only (nanoGPT's ``configure_optimizers``)."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2))


def _estimate_loss(model, corpus, cfg: TrainConfig, seed: int) -> dict[str, float]:
    """Mean loss over ``eval_iters`` batches of each split (nanoGPT's ``estimate_loss``), own RNG."""
    import torch

    from ..gemm import bf16_units

    g = torch.Generator().manual_seed(seed)
    model.eval()
    out = {}
    with torch.no_grad(), bf16_units(cfg.bf16_units):
        for split in ("train", "val"):
            losses = [float(model(*corpus.batch(split, cfg.batch_size, cfg.block_size, g))[1]) for _ in range(cfg.eval_iters)]
            out[split] = float(np.mean(losses))
    model.train()
    return out


def train(recipe: Any = "fp32", config: TrainConfig | None = None, *,
          progress: Callable[[int, float, float], None] | None = None, threads: int | None = 1) -> dict[str, Any]:
    """Train the GPT with ``recipe`` (a LinearRecipe or a preset name) and return the run as plain data.

    ``progress(step, loss, seconds)`` is called after each step (the CLI draws its bar with it).
    ``threads`` sets torch's CPU threads for the run (restored afterwards; None leaves them): one
    thread is the default because this model's matrices are small, so more threads mostly wait for
    each other (on a shared 2-core machine here, 2 threads took about 10x longer per step than 1).

    >>> train("nope")
    Traceback (most recent call last):
    ...
    ValueError: unknown training recipe 'nope'; known: fp32, bf16, fp16, fp8-tensorwise-delayed, fp8-tensorwise-current, fp8-rowwise, fp8-blockwise, mxfp8, fp8-tensorwise-delayed-te, fp8-tensorwise-current-te, fp8-rowwise-torchao, fp8-unscaled, fp16-no-loss-scaling, fp8-e4m3-grads-unscaled, fp8-acc14-no-promotion, fp8-dgrad-128x128
    """
    from ..nn import LinearRecipe

    recipe = LinearRecipe.from_name(recipe)
    cfg = TrainConfig() if config is None else config
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"config is a TrainConfig, got {type(cfg).__name__}")
    import torch

    if threads is None:
        return _train(recipe, cfg, progress)
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        return _train(recipe, cfg, progress)
    finally:
        torch.set_num_threads(before)


class Run:
    """One run's state, owned in one place: the corpus, the converted model, its optimizer and loss scaler, the batch RNG.

    :func:`train` drives one; ``bench/train_step_time.py`` steps several in turn, so that a changing
    machine load slows all recipes alike. Building one seeds torch with ``cfg.seed`` (the model's
    initialisation), exactly as :func:`train` does.

    >>> from fp8lab.nn import LinearRecipe
    >>> r = Run(LinearRecipe.from_name("fp32"), TrainConfig(n_layer=1, n_embd=32, n_head=2, block_size=16, batch_size=2))
    >>> loss, applied, seconds = r.step(0); applied, float(loss) > 0
    (True, True)
    """

    def __init__(self, recipe: Any, cfg: TrainConfig) -> None:
        import torch

        from ..nn import Fp8Linear, convert
        from ..nn.gpt import GPT, GPTConfig
        from ..scaling import LossScaler

        self.recipe, self.cfg = recipe, cfg
        self.corpus = load_shakespeare()
        torch.manual_seed(cfg.seed)
        self.gpt_config = GPTConfig(vocab_size=self.corpus.vocab_size, block_size=cfg.block_size, n_layer=cfg.n_layer,
                                    n_head=cfg.n_head, n_embd=cfg.n_embd)
        self.model = GPT(self.gpt_config)
        self.report = convert(self.model, recipe)
        self.layers = {n: m for n, m in self.model.named_modules() if isinstance(m, Fp8Linear)}
        self.opt = _optimizer(self.model, cfg)
        self.scaler = LossScaler() if recipe.loss_scaling else None
        self.batches = torch.Generator().manual_seed(cfg.seed)
        self.params = [p for p in self.model.parameters() if p.requires_grad]

    def step(self, step: int) -> tuple[Any, bool, float]:
        """Optimizer step number ``step`` (it sets the learning rate): (the loss tensor, whether applied, seconds).

        A step is not applied when the loss scaler finds an overflow (it lowers the scale instead).
        """
        import torch

        from ..gemm import bf16_units

        cfg, opt, scaler, params = self.cfg, self.opt, self.scaler, self.params
        t0 = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = cfg.lr_at(step)
        x, y = self.corpus.batch("train", cfg.batch_size, cfg.block_size, self.batches)
        with bf16_units(cfg.bf16_units):  # exact FP8 GEMMs on the BF16 matrix units (fp8lab.gemm.units)
            _, loss = self.model(x, y)
            opt.zero_grad(set_to_none=True)
            (scaler.scale_loss(loss) if scaler else loss).backward()
        ok = True
        if scaler is not None:
            ok = scaler.step([p.grad for p in params])
        if ok:
            torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            opt.step()
        return loss, ok, time.perf_counter() - t0


def _train(recipe, cfg: TrainConfig, progress) -> dict[str, Any]:
    """The run itself (see :func:`train`)."""
    import torch

    run = Run(recipe, cfg)
    corpus, model, layers, scaler, report, gcfg = run.corpus, run.model, run.layers, run.scaler, run.report, run.gpt_config

    hist: dict[str, dict[str, Any]] = {n: {"amax": {}, "scale": {}, "underflow": [], "overflow": []} for n in layers}
    losses, times, underflow, overflow, loss_scale, vals = [], [], [], [], [], []
    skipped, done, diverged_at = 0, 0, None
    t_start = time.perf_counter()

    def result(partial: bool) -> dict[str, Any]:
        """The run as plain data, every per-step list cut to the ``done`` steps recorded in full."""
        for h in hist.values():
            for key in ("amax", "scale"):
                for role in h[key]:
                    del h[key][role][done:]
            del h["underflow"][done:], h["overflow"][done:]
        return {
            "config": cfg.as_dict(),
            "model": {**gcfg.as_dict(), "params": model.num_params()},
            "data": {"source": SOURCE, "chars": len(corpus.text), "vocab_size": corpus.vocab_size,
                     "train_tokens": len(corpus.train), "val_tokens": len(corpus.val)},
            "recipe": {"name": recipe.name, "control": recipe.control, "description": recipe.description,
                       "source": recipe.source, **recipe.describe()},
            "convert": {"swapped": list(report.swapped), "left": report.left},
            "partial": partial,
            "steps_done": done,
            "loss": losses[:done],
            "step_time_s": times[:done],
            "val": vals,
            "final_val_loss": vals[-1]["val"] if vals else None,
            "underflow": underflow[:done],
            "overflow": overflow[:done],
            "loss_scale": loss_scale[:done],
            "skipped_steps": skipped,
            "diverged": diverged_at is not None,
            "diverged_at": diverged_at,
            "layers": hist,
            "states": {n: {role: (None if h is None else {"steps": h["steps"], "scale": h["scale"]})
                           for role, h in m.state.as_dict().items()} for n, m in layers.items()},
            "wall_s": time.perf_counter() - t_start,
            "threads": torch.get_num_threads(),
            "versions": versions(),
        }

    try:
        for step in range(cfg.steps):
            if scaler is not None:
                loss_scale.append(scaler.scale)  # the scale this step's loss is multiplied by
            loss, ok, dt = run.step(step)
            lv = float(loss.detach())
            losses.append(lv)
            times.append(dt)
            under_step, over_step = [], 0
            for n, m in layers.items():
                h = hist[n]
                for role, st in m.stats.items():
                    h["amax"].setdefault(role, []).append(st["amax"])
                    h["scale"].setdefault(role, []).append(st["scale"])
                u = m.stats.get("grad_output", {}).get("underflow", 0.0)
                o = sum(st["saturated_blocks"] for st in m.stats.values())
                h["underflow"].append(u)
                h["overflow"].append(o)
                under_step.append(u)
                over_step += o
            underflow.append(float(np.mean(under_step)) if under_step else 0.0)
            overflow.append(int(over_step))
            skipped += not ok
            done = step + 1
            if diverged_at is None and not math.isfinite(lv):
                diverged_at = done  # skipped by the loss scaler or not, a non-finite loss is a diverged run
            if progress is not None:
                progress(done, lv, dt)
            if not math.isfinite(lv) and scaler is None:
                break
            if done % cfg.eval_interval == 0 or done == cfg.steps:
                v = {"step": done, **_estimate_loss(model, corpus, cfg, cfg.seed + 1)}
                vals.append(v)
                if diverged_at is None and not (math.isfinite(v["train"]) and math.isfinite(v["val"])):
                    diverged_at = done
    except KeyboardInterrupt:
        raise TrainingInterrupted(result(partial=True)) from None
    return result(partial=False)
