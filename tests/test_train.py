"""fp8lab.train: the corpus, the config, the CLI, reproducibility, and 30 steps of every recipe."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fp8lab.nn import LinearRecipe  # noqa: E402
from fp8lab.train import TrainConfig  # noqa: E402
from fp8lab.train.cli import main as train_main  # noqa: E402
from fp8lab.train.data import load_shakespeare  # noqa: E402
from fp8lab.train.loop import train  # noqa: E402

TINY = dict(n_layer=1, n_embd=128, n_head=4, block_size=32, batch_size=4, eval_iters=1)


def test_corpus_is_tiny_shakespeare_sized_and_split_90_10():
    c = load_shakespeare()
    assert 1_100_000 <= len(c.text) <= 1_116_000
    assert len(c.train) == int(0.9 * len(c.text)) and len(c.train) + len(c.val) == len(c.text)
    assert "gutenberg" not in c.text.lower()
    assert c.decode(c.train[:25]) == "THE TRAGEDY OF CORIOLANUS"


def test_nanogpt_schedule():
    c = TrainConfig()
    assert c.lr_at(0) == pytest.approx(1e-3 / 101) and c.lr_at(100) == pytest.approx(1e-3)
    assert c.lr_at(1999) == pytest.approx(1e-4) and 1e-4 < c.lr_at(1000) < 1e-3
    with pytest.raises(ValueError):
        TrainConfig(beta2=1.5)


def test_cli_errors_and_list(capsys):
    assert train_main(["--recipe", "fp9", "--steps", "1"]) == 2
    assert "unknown training recipe" in capsys.readouterr().err
    assert train_main(["--compare", "fp32,,bf16", "--steps", "1"]) == 2
    with pytest.raises(SystemExit):
        train_main(["--steps", "0"])
    assert train_main(["--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in LinearRecipe.names())


def test_fp8lab_cli_has_train_and_stays_light():
    code = ("import sys; from fp8lab.cli import build_parser; build_parser().parse_args(['train', '--list']); "
            "print(any(m in sys.modules for m in ('torch', 'matplotlib')))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_cli_writes_json_and_plot(tmp_path):
    js, png = tmp_path / "run.json", tmp_path / "run.png"
    rc = train_main(["--recipe", "fp8-tensorwise-delayed", "--steps", "2", "--eval-iters", "1", "--quiet",
                     "--json", str(js), "--plot", str(png)])
    assert rc == 0 and png.stat().st_size > 1000
    r = json.loads(js.read_text())
    assert len(r["loss"]) == 2 and len(r["step_time_s"]) == 2 and r["val"][-1]["step"] == 2
    assert r["recipe"]["name"] == "fp8-tensorwise-delayed" and r["versions"]["torch"] == torch.__version__
    assert "lm_head" in r["convert"]["left"] and len(r["convert"]["swapped"]) == 16
    lay = r["layers"]["h.0.mlp.c_fc"]
    assert len(lay["amax"]["input"]) == 2 and len(lay["scale"]["grad_output"]) == 2 and len(lay["underflow"]) == 2
    assert r["states"]["h.0.mlp.c_fc"]["weight"]["steps"] == 2  # one history step per training step


def test_training_is_bitwise_reproducible():
    cfg = TrainConfig(steps=4, seed=5, **TINY)
    a, b = train("fp8-tensorwise-delayed", cfg), train("fp8-tensorwise-delayed", cfg)
    assert a["loss"] == b["loss"] and a["val"] == b["val"] and a["layers"] == b["layers"]
    c = train("fp8-tensorwise-delayed", TrainConfig(steps=4, seed=6, **TINY))
    assert c["loss"] != a["loss"]


def test_loss_scaling_runs_the_scaler():
    r = train("fp16", TrainConfig(steps=3, **TINY))
    assert r["loss_scale"][0] == 2.0**16 and len(r["loss_scale"]) == 3
    assert train("fp16-no-loss-scaling", TrainConfig(steps=1, **TINY))["loss_scale"] == []


# ----- 30 steps of every recipe (nanoGPT's shapes, two layers to keep it short) --------------------
SHORT = TrainConfig(steps=30, n_layer=2, eval_iters=2, warmup_steps=100)


@pytest.fixture(scope="module")
def short_runs():
    return {name: train(name, SHORT) for name in LinearRecipe.names()}


def _drop(r) -> float:
    return r["loss"][0] - float(np.mean(r["loss"][-5:]))


@pytest.mark.slow
def test_every_recipe_lowers_the_loss_in_30_steps(short_runs):
    for name, r in short_runs.items():
        print(f"{name:26s} drop {_drop(r):.3f} underflow {np.mean(r['underflow']):.5f} overflow {sum(r['overflow'])}")
    fp32 = _drop(short_runs["fp32"])
    for name in LinearRecipe.names():
        if not LinearRecipe.from_name(name).control:
            assert _drop(short_runs[name]) > 0.8 * fp32, name


@pytest.mark.slow
def test_controls_show_their_failure_mode(short_runs):
    """Measured here (seed 0, 30 steps, 2 layers): mean underflow 0.92 (E4M3 grads unscaled), 0.35 (fp8-unscaled)
    vs 0.0002 (tensorwise current), 0.034 (FP16 without loss scaling) vs 0.0009 (with); the loss falls 0.58
    instead of 0.83 with unscaled E4M3 gradients. fp8-acc14-no-promotion and fp8-dgrad-128x128 did not degrade
    at this scale in 30 steps, so nothing is asserted about them beyond training."""
    u = {n: float(np.mean(r["underflow"])) for n, r in short_runs.items()}
    # unscaled E4M3 gradients: most nonzero output gradients fall below E4M3's smallest subnormal (2^-9)
    assert u["fp8-e4m3-grads-unscaled"] > 0.5
    # unscaled HYBRID casts: E5M2 keeps more of them, but far more flush than with per-tensor scales
    assert u["fp8-unscaled"] > 20 * max(u["fp8-tensorwise-current"], 1e-6)
    # FP16 without loss scaling flushes gradients that the loss scaler (2^16) keeps
    assert u["fp16-no-loss-scaling"] > 20 * max(u["fp16"], 1e-7)
    # with most gradients gone, the loss falls markedly slower than fp32's
    assert _drop(short_runs["fp8-e4m3-grads-unscaled"]) < 0.85 * _drop(short_runs["fp32"])
    for name in ("fp8-acc14-no-promotion", "fp8-dgrad-128x128"):
        assert _drop(short_runs[name]) > 0.5 * _drop(short_runs["fp32"]), name
