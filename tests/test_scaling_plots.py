"""The scaling chapter's figures: the numbers in their titles, the fractions behind them, and the ax= contract."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import fp8lab as fl  # noqa: E402
from fp8lab.scaling import plots  # noqa: E402


# ----------------------------------------------------------------------------------------------
# window_fractions
def test_window_fractions_hand_checked_e4m3() -> None:
    # 1000 > 448; 1 is normal; 1e-3 rounds to the smallest subnormal 2^-9; 1e-9 rounds to 0
    fr = plots.window_fractions(np.array([1000.0, 1.0, 1e-3, 1e-9], np.float32), "e4m3")
    assert fr == {"overflow": 0.25, "normal": 0.25, "subnormal": 0.25, "underflow": 0.25}
    assert all(type(v) is float for v in fr.values())


def test_window_fractions_underflow_follows_round_to_nearest_even() -> None:
    half = 2.0**-10  # half of E4M3's smallest subnormal: the tie rounds to 0 (even)
    fr = plots.window_fractions(np.array([half, np.nextafter(np.float32(half), np.float32(1))], np.float32), "e4m3")
    assert fr["underflow"] == 0.5 and fr["subnormal"] == 0.5


def test_window_fractions_divides_by_the_scale_and_skips_zeros_and_nonfinite() -> None:
    x = np.array([0.0, np.nan, np.inf, 896.0, 2.0], np.float32)
    assert plots.window_fractions(x, "e4m3")["overflow"] == 0.5            # 896 > 448, 2 is normal
    assert plots.window_fractions(x, "e4m3", scale=2.0)["overflow"] == 0.0   # 448 fits exactly
    blockwise = plots.window_fractions(np.array([[896.0, 1.0]], np.float32), "e4m3", np.array([[2.0, 1.0]]))
    assert blockwise["overflow"] == 0.0 and blockwise["normal"] == 1.0
    assert plots.window_fractions(np.zeros(3, np.float32), "e4m3") == {
        "overflow": 0.0, "normal": 0.0, "subnormal": 0.0, "underflow": 0.0}


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "fp4", "int8", "int4"])
def test_window_fractions_sum_to_one_and_match_the_codec(fmt: str, rng: np.random.Generator) -> None:
    f = fl.get_format(fmt)
    x = (rng.standard_normal(5000) * np.exp2(rng.uniform(-14, 12, 5000))).astype(np.float32)
    fr = plots.window_fractions(x, f)
    assert sum(fr.values()) == pytest.approx(1.0)
    fits = np.abs(x) <= f.max
    assert fr["underflow"] == pytest.approx(np.mean(fits & (fl.quantize(x, f, saturate=True) == 0)))
    if isinstance(f, fl.IntFormat):
        assert fr["subnormal"] == 0.0


# ----------------------------------------------------------------------------------------------
# scale_sweep
def test_scale_sweep_matches_tensor_scaling_and_penalises_clipping() -> None:
    x = fl.llm_activations((64, 256), seed=3)
    s = plots.scale_sweep(x, "int8", [-3, 0, 3])
    direct = fl.sqnr_db(x, fl.quantize_tensor(x, "int8", fl.TensorScaling()).dequantize())
    assert s[1] == pytest.approx(direct)
    assert s[1] > s[0] and s[1] > s[2]         # clipping and wasted headroom both cost INT8
    e = plots.scale_sweep(x, "e4m3", [0, 2])
    assert abs(e[1] - e[0]) < 0.5              # a float grid hardly notices two binades of headroom


# ----------------------------------------------------------------------------------------------
# figures: type, titles that state the finding, ax=
def test_magnitude_window_title_states_the_fractions() -> None:
    fig = plots.plot_magnitude_window(np.array([1000.0, 1.0, 1e-3, 1e-9], np.float32), "e4m3", label="demo")
    title = fig.axes[0].get_title()
    assert title.startswith("demo in float8_e4m3fn")
    assert "25.0% above max, 25.0% subnormal, 25.0% round to 0" in title
    int_title = plots.plot_magnitude_window(np.array([0.2, 3.0], np.float32), "int8").axes[0].get_title()
    assert "subnormal" not in int_title and "50.0% round to 0" in int_title


def test_percentages_never_round_to_0_or_100() -> None:
    assert plots._pct(0.0) == "0%" and plots._pct(1.0) == "100%"
    assert plots._pct(4 / 1048576) == "0.00038%"
    assert plots._pct(0.99996) == "99.996%" and plots._pct(0.0144) == "1.4%"


def test_scale_sweep_plot_reports_plateau_widths() -> None:
    x = fl.llm_activations((32, 256), seed=0)
    title = plots.plot_scale_sweep(x, ["e4m3", "int8"], range(-1, 6)).axes[0].get_title()
    assert "float8_e4m3fn" in title and "int8" in title and "binades" in title


def test_scale_map_shape_and_errors() -> None:
    q = fl.quantize_tensor(fl.llm_activations((64, 256)), "e4m3", fl.BlockScaling((1, 128)))
    fig = plots.plot_scale_map(q, title="tiles")
    assert "128 scales" in fig.axes[0].get_title() and "8.250 bits/element" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="2-D"):
        plots.plot_scale_map(fl.quantize_tensor(np.ones((2, 2, 4), np.float32), "e4m3"))


def test_amax_history_counts_overflow() -> None:
    fig = plots.plot_amax_history([100.0, 120.0, 500.0], [1.0, 0.25, 0.3], "e4m3")  # ranges 448, 112, 134.4
    assert fig.axes[0].get_title().startswith("2 of 3 steps overflow")
    given = plots.plot_amax_history([1.0, 2.0], [1.0, 1.0], "e4m3", overflow=[True, False])
    assert given.axes[0].get_title().startswith("1 of 2 steps overflow")


def test_recipe_tradeoff_labels_every_row_and_names_the_best() -> None:
    x = fl.llm_activations((128, 256), seed=1)
    rows = fl.compare_recipes(x, [("tensor", "e4m3", fl.TensorScaling), ("1x128", "e4m3", lambda: fl.BlockScaling((1, 128))),
                                  ("INT8 tensor", "int8", fl.IntScaling)], repeats=1)
    fig = plots.plot_recipe_tradeoff(rows)
    ax = fig.axes[0]
    assert len(ax.texts) == len(rows)
    best = max(rows, key=lambda r: r["sqnr_db"])
    assert ax.get_title().startswith(f"Highest: {best['recipe']} ({best['format']})")
    with pytest.raises(ValueError):
        plots.plot_recipe_tradeoff([])


def test_spread_keeps_labels_apart() -> None:
    y = np.array([31.6, 31.5, 31.6, 43.0, 11.0])
    out = plots._spread(y, 1.0)
    srt = np.sort(out)
    assert np.all(np.diff(srt) >= 1.0 - 1e-12)
    assert np.argsort(out)[-1] == 3 and np.argsort(out)[0] == 4   # order of the points is kept at the ends


def test_loss_scale_title_and_underflow_axis() -> None:
    fig = plots.plot_loss_scale([2.0**16, 2.0**17, 2.0**16, 2.0**16], [False, True, False, False],
                                underflow={"with": [0, 0, 0, 0], "without": [0.5, 0.5, 0.6, 0.6]})
    assert fig.axes[0].get_title() == "1 of 4 steps skipped (red); the scale ranged from 2^16 to 2^17"
    assert len(fig.axes) == 2 and len(fig.axes[1].lines) == 2


def test_plots_draw_into_a_given_axes() -> None:
    fig = Figure()
    a, b, c = fig.subplots(1, 3)
    x = fl.llm_activations((16, 128))
    assert plots.plot_magnitude_window(x, "e4m3", ax=a) is fig
    assert plots.plot_scale_sweep(x, ["e4m3"], [0, 1], ax=b) is fig
    assert plots.plot_loss_scale([1.0, 2.0], [False, False], ax=c) is fig
    assert all(ax.get_title() for ax in (a, b, c))
