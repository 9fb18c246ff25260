"""The FP8 GEMM chapter's figures: fp8lab.gemm.plots (slopes, error-vs-K plot, scale-block picture)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import fp8lab as fl  # noqa: E402
from fp8lab.gemm import plots  # noqa: E402


def synthetic_rows(ks=(256, 1024, 4096), bits=13):
    """Rows shaped like accumulation_error_vs_k's: error ~ K without promotion, flat with it."""
    rows = []
    for k in ks:
        rows.append({"k": k, "setting": "exact FP32", "max_rel_error": 1e-7, "rel_error": 5e-8, "mantissa_bits": None})
        rows.append({"k": k, "setting": "no promotion", "max_rel_error": 2e-6 * k, "rel_error": 1e-6 * k,
                     "mantissa_bits": bits})
        rows.append({"k": k, "setting": "promoted every 128", "max_rel_error": 1e-4, "rel_error": 5e-5,
                     "mantissa_bits": bits})
    return rows


# ----------------------------------------------------------------------------------------------
# loglog_slope
def test_slope_of_power_laws_is_their_exponent() -> None:
    for p in (0.5, 1.0, 2.0):
        rows = [{"k": k, "setting": "s", "max_rel_error": 3e-7 * k**p} for k in (128, 512, 2048, 8192)]
        assert plots.loglog_slope(rows, "s") == pytest.approx(p)
    assert plots.loglog_slope(synthetic_rows(), "promoted every 128", "rel_error") == pytest.approx(0.0, abs=1e-12)


def test_slope_ignores_row_order_and_zero_errors() -> None:
    rows = [{"k": k, "setting": "s", "max_rel_error": 1e-6 * k} for k in (4096, 256, 1024)]
    rows.append({"k": 64, "setting": "s", "max_rel_error": 0.0})  # log(0) would break a fit: skipped
    assert plots.loglog_slope(rows, "s") == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [
    dict(setting="missing"),
    dict(metric="mean_error"),
    dict(rows=[{"k": 256, "setting": "s", "max_rel_error": 1e-3}], setting="s"),   # one point, no slope
    dict(rows=[], setting="s"),
    dict(rows=[{"k": 256, "setting": "s"}], setting="s"),                           # metric column missing
])
def test_slope_rejects_what_it_cannot_fit(bad) -> None:
    kwargs = {"rows": synthetic_rows(), "setting": "no promotion", **bad}
    with pytest.raises(ValueError):
        plots.loglog_slope(kwargs.pop("rows"), kwargs.pop("setting"), **kwargs)


def test_slope_on_a_real_experiment_is_near_one_without_promotion() -> None:
    rows = fl.accumulation_error_vs_k(ks=(1024, 4096, 16384), m=4, n=4)
    assert 0.8 < plots.loglog_slope(rows, "no promotion", "rel_error") < 1.2
    assert abs(plots.loglog_slope(rows, "promoted every 128", "rel_error")) < 0.2


# ----------------------------------------------------------------------------------------------
# plot_accumulation_error
def test_accumulation_plot_is_log_log_with_labels_and_one_line_per_setting() -> None:
    fig = plots.plot_accumulation_error(synthetic_rows())
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "K" in ax.get_xlabel() and "elements" in ax.get_xlabel()
    assert "relative error" in ax.get_ylabel()
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[:3] == ["exact FP32", "no promotion", "promoted every 128"]
    assert any("2^-14" in lbl for lbl in labels)  # the unit roundoff of a 14-bit accumulator
    xs, ys = ax.get_lines()[1].get_data()
    assert list(xs) == [256, 1024, 4096] and np.allclose(ys, [2e-6 * k for k in (256, 1024, 4096)])


def test_accumulation_plot_title_states_the_measured_growth() -> None:
    title = plots.plot_accumulation_error(synthetic_rows()).axes[0].get_title()
    assert "K^1.00" in title and "x16.0 from K=256 to 4096" in title
    assert "promoted every 128: x1.00" in title
    assert "K^" not in plots.plot_accumulation_error(synthetic_rows(), title="mine").axes[0].get_title()


def test_accumulation_plot_draws_into_a_given_axes_and_other_metrics() -> None:
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plots.plot_accumulation_error(synthetic_rows(), "rel_error", ax=right, unit_roundoff=False) is fig
    assert not left.get_lines() and len(right.get_lines()) == 3
    assert "Frobenius" in right.get_ylabel()
    with pytest.raises(ValueError, match="metric"):
        plots.plot_accumulation_error(synthetic_rows(), "median")
    with pytest.raises(ValueError, match="no rows"):
        plots.plot_accumulation_error([])


# ----------------------------------------------------------------------------------------------
# plot_scale_blocks
@pytest.mark.parametrize("as_torch", [False, True])
def test_scale_blocks_for_deepseek_layout(as_torch: bool) -> None:
    x = fl.llm_activations((8, 256), seed=0)
    w = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    if as_torch:
        x, w = torch.from_numpy(x), torch.from_numpy(w)
    qa = fl.quantize_tensor(x, "e4m3", fl.BlockScaling((1, 128)))
    qb = fl.quantize_tensor(w, "e4m3", fl.BlockScaling((128, 128)))
    fig = plots.plot_scale_blocks(qa, qb)
    assert isinstance(fig, Figure)
    a_ax, b_ax = fig.axes[:2]
    assert "1x128 blocks, 16 scales" in a_ax.get_title() and "128x128 blocks, 4 scales" in b_ax.get_title()
    assert fig.get_suptitle().endswith("every 128 elements of K")
    image = a_ax.get_images()[0].get_array()
    assert image.shape == (8, 256)  # one pixel per element, the log2 of its scale
    assert np.allclose(image[:, :128], np.log2(np.asarray(qa.scales, dtype=np.float64))[:, :1])


def test_scale_blocks_per_tensor_and_mixed() -> None:
    x = np.ones((4, 64), np.float32)
    qt = fl.quantize_tensor(x, "e4m3", fl.TensorScaling())
    qb = fl.quantize_tensor(np.ones((64, 4), np.float32), "e4m3", fl.TensorScaling())
    title = plots.plot_scale_blocks(qt, qb).get_suptitle()
    assert "one scale along K" in title and "at the end" in title
    qtile = fl.quantize_tensor(np.ones((4, 64), np.float32), "e4m3", fl.BlockScaling((1, 32)))
    assert "every 32 elements of K" in plots.plot_scale_blocks(qtile, qb).get_suptitle()


def test_scale_blocks_rejects_mismatched_operands() -> None:
    qa = fl.quantize_tensor(np.ones((4, 64), np.float32), "e4m3", fl.TensorScaling())
    qb = fl.quantize_tensor(np.ones((32, 4), np.float32), "e4m3", fl.TensorScaling())
    with pytest.raises(ValueError, match="same K"):
        plots.plot_scale_blocks(qa, qb)
