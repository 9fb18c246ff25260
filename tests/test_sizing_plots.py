"""The sizing figures: what they draw matches the sizing functions, titles state computed findings, no pyplot."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import fp8lab as fl  # noqa: E402
from fp8lab.sizing import plots  # noqa: E402


def _bars(ax):
    return [p for p in ax.patches if p.get_width() > 0 and p.get_height() > 0]


def test_kv_per_token_bars_are_the_cache_per_token_in_kib() -> None:
    models = ["llama-2-7b", "llama-3-70b", "falcon-7b", "deepseek-v3"]
    fig = plots.plot_kv_per_token(models)
    ax = fig.axes[0]
    widths = sorted(p.get_width() for p in _bars(ax))
    expected = sorted(fl.kv_cache_bytes(m, seq_len=1) / 1024 for m in models)
    assert widths == pytest.approx(expected)
    # LLaMA-2-7B: 0.5 MiB per token in bf16; Falcon-7B (MQA, 1 head of 64, 32 layers): 8 KiB -> 64x
    assert "llama-2-7b caches 64x more than falcon-7b" in ax.get_title()
    assert "KiB" in ax.get_xlabel()
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"MHA", "GQA", "MQA", "MLA"}


def test_kv_per_token_follows_the_dtype() -> None:
    fig = plots.plot_kv_per_token("llama-3-8b", dtype="fp8")
    (bar,) = _bars(fig.axes[0])
    assert bar.get_width() == 32 * 2 * 8 * 128 / 1024  # one byte per element
    assert "float8_e4m3fn" in fig.axes[0].get_title()


def test_kv_vs_context_stops_growing_at_the_sliding_window() -> None:
    fig = plots.plot_kv_vs_context(["mistral-7b", "llama-3-8b"], max_seq_len=16384)
    ax = fig.axes[0]
    mistral, llama = (line for line in ax.get_lines() if line.get_linestyle() == "-")
    x, y = mistral.get_data()
    window = fl.get_model("mistral-7b").sliding_window
    cap = fl.kv_cache_bytes("mistral-7b", window) / 2**30
    assert y.max() == pytest.approx(cap) and np.all(y[x >= window] == pytest.approx(cap))
    assert llama.get_ydata()[-1] == pytest.approx(fl.kv_cache_bytes("llama-3-8b", 16384) / 2**30)
    assert "GiB" in ax.get_ylabel()
    assert any(line.get_linestyle() == ":" for line in ax.get_lines())  # the window marker


def test_max_context_lines_are_max_context() -> None:
    batches = [1, 4, 16]
    fig = plots.plot_max_context("llama-3-70b", "h100", setups=[("bf16", "bf16"), ("fp8", "fp8")],
                                 batches=batches, num_gpus=8, utilization=0.9)
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if len(line.get_xdata()) == len(batches)]
    for line, (w, kv) in zip(lines, [("bf16", "bf16"), ("fp8", "fp8")]):
        want = [fl.max_context("llama-3-70b", "h100", weights_dtype=w, kv_dtype=kv, batch=b, num_gpus=8,
                               utilization=0.9) for b in batches]
        assert list(line.get_ydata()) == want
    ratio = lines[1].get_ydata()[0] / lines[0].get_ydata()[0]
    assert f"{ratio:.3g}x" in ax.get_title() and "90% of memory usable" in ax.get_title()
    trained = fl.get_model("llama-3-70b").max_position_embeddings
    assert any(np.all(np.asarray(line.get_ydata()) == trained) for line in ax.get_lines())


def test_max_context_says_when_the_weights_leave_no_room() -> None:
    # 70B parameters in bf16 (141 GB) do not fit one 80 GiB H100
    fig = plots.plot_max_context("llama-3-70b", "h100", setups=[("bf16", "bf16"), ("fp8", "fp8")], batches=[1])
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("no room left after the weights" in t for t in labels)
    best = fl.max_context("llama-3-70b", "h100", weights_dtype="fp8", kv_dtype="fp8")
    assert f"{best:,} tokens" in ax.get_title() and "leaves no room" in ax.get_title()


def test_kv_accuracy_bars_are_the_snr() -> None:
    rows = fl.kv_cache_accuracy(["e4m3", "fp4"], seq_len=64) + \
        fl.kv_cache_accuracy(["e4m3", "fp4"], seq_len=64, granularity="tensor")
    fig = plots.plot_kv_accuracy(rows)
    ax = fig.axes[0]
    assert sorted(p.get_height() for p in _bars(ax)) == pytest.approx(sorted(r["snr_db"] for r in rows))
    best = max(rows, key=lambda r: r["snr_db"])
    assert f"{best['snr_db']:.1f} dB" in ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["head", "tensor"]
    assert "dB" in ax.get_ylabel()


def test_training_memory_stacks_to_the_recipe_total() -> None:
    fig = plots.plot_training_memory()
    ax = fig.axes[0]
    recipes = fl.list_training_recipes()
    totals = {}
    for p in _bars(ax):
        i = round(p.get_x() + p.get_width() / 2)
        totals[i] = totals.get(i, 0.0) + p.get_height()
    assert [totals[i] for i in range(len(recipes))] == \
        [fl.get_training_recipe(r).bytes_per_param for r in recipes]
    assert "from 12 (deepseek-v3) to 17 (fp8)" in ax.get_title()  # FP32 master, gradients and Adam plus the FP8 copy; DeepSeek-V3's 4 + 4 + 2 + 2


@pytest.mark.parametrize("draw", [
    lambda ax: plots.plot_kv_per_token("llama-3-8b", ax=ax),
    lambda ax: plots.plot_kv_vs_context("mistral-7b", 8192, ax=ax),
    lambda ax: plots.plot_max_context("llama-3-8b", batches=[1, 2], ax=ax),
    lambda ax: plots.plot_kv_accuracy([{"format": "e4m3", "granularity": "token", "snr_db": 20.0,
                                        "bits_per_element": 8.25}], ax=ax),
    lambda ax: plots.plot_training_memory(["fp32"], ax=ax),
])
def test_draws_into_a_given_axes_without_pyplot(draw) -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    fig = Figure()
    ax = fig.add_subplot()
    assert draw(ax) is fig
    assert ax.get_title()
    assert plt.get_fignums() == before


@pytest.mark.parametrize("call", [
    lambda: plots.plot_kv_per_token([]),
    lambda: plots.plot_kv_vs_context("mistral-7b", 0),
    lambda: plots.plot_max_context("llama-3-8b", setups=[]),
    lambda: plots.plot_max_context("llama-3-8b", batches=[0]),
    lambda: plots.plot_kv_accuracy([]),
    lambda: plots.plot_training_memory([]),
    lambda: plots.plot_kv_per_token("gpt-5"),
])
def test_bad_input_raises_value_error(call) -> None:
    with pytest.raises(ValueError):
        call()


def test_no_title_claims_a_nan_or_inf() -> None:
    figs = [plots.plot_kv_per_token(["mistral-7b", "deepseek-v2"]),
            plots.plot_max_context("mistral-7b", batches=[1, 2])]  # a sliding window: max_context is inf
    for fig in figs:
        title = fig.axes[0].get_title()
        assert "nan" not in title and "inf" not in title, title
    assert math.isinf(fl.max_context("mistral-7b"))
    assert "4,096-token sliding window" in figs[1].axes[0].get_title()
