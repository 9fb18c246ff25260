"""The microscaling figures and the block explorer of chapter 3: right numbers, real figures, clear errors."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import fp8lab as fl  # noqa: E402
from fp8lab.scaling import mx_plots  # noqa: E402


def random_blocks(n: int = 2048, seed: int = 0) -> np.ndarray:
    """Gaussian 32-element blocks, each times 2^u with u uniform in [0, 1): block amax mantissas cover a binade."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, 32)) * 2.0 ** rng.uniform(0, 1, (n, 1))).astype(np.float32)


# ----------------------------------------------------------------------------------------------
# block_max_error
def test_block_max_error_hand_checked() -> None:
    # 957 / 2 = 478.5 saturates at 448 -> 896 under floor; rceil picks X = 4: 239.25 -> 240 -> 960
    assert mx_plots.block_max_error([957.0], "e4m3", "floor")[0] == pytest.approx((896 - 957) / 957)
    assert mx_plots.block_max_error([957.0], "e4m3", "rceil")[0] == pytest.approx((960 - 957) / 957)
    # FP4: amax 7 has floor X = 2^(2-2) = 1 and clips to 6; rceil X = 2 gives 3.5 -> 4 (tie to even) -> 8
    assert mx_plots.block_max_error([7.0], "fp4", "floor")[0] == pytest.approx(-1 / 7)
    assert mx_plots.block_max_error([7.0], "fp4", "rceil")[0] == pytest.approx(1 / 7)


@pytest.mark.parametrize("fmt", mx_plots.MX_ELEMENT_FORMATS)
def test_rceil_never_clips_and_floor_error_is_bounded_by_the_clip(fmt: str) -> None:
    f = fl.get_format(fmt)
    amax = (2.0 ** np.linspace(0, 3, 999)).astype(np.float32)
    rceil = mx_plots.block_max_error(amax, f, "rceil")
    floor = mx_plots.block_max_error(amax, f, "floor")
    half_gap = f.epsilon / 2 / (1 - f.epsilon / 2)  # round to nearest: at most half a relative gap
    assert np.all(np.abs(rceil) <= half_gap + 1e-12)
    worst_clip = f.max / 2.0 ** (fl.emax_elem(f) + 1) - 1  # amax / X just below 2^(emax+1), clipped to max
    assert floor.min() >= worst_clip - 1e-6
    assert floor.min() < worst_clip + 0.01


# ----------------------------------------------------------------------------------------------
# mx_rounding_comparison and amax_over_scale
def test_clipped_fraction_matches_the_log_uniform_prediction() -> None:
    rows = mx_plots.mx_rounding_comparison(random_blocks(), mx_plots.MX_ELEMENT_FORMATS)
    for r in rows:
        f = fl.get_format(r["format"])
        if r["rounding"] == "rceil":
            assert r["clipped_fraction"] == 0.0
        else:
            predicted = math.log2(2.0 ** (fl.emax_elem(f) + 1) / f.max)
            assert r["clipped_fraction"] == pytest.approx(predicted, abs=0.03), r
        assert r["bits_per_element"] == f.bits + 8 / 32
        assert math.isfinite(r["sqnr_db"])


def test_amax_over_scale_ranges() -> None:
    x = random_blocks(512)
    f = fl.get_format("fp4")
    floor = mx_plots.amax_over_scale(x, fl.quantize_tensor(x, f, fl.MXScaling()))
    rceil = mx_plots.amax_over_scale(x, fl.quantize_tensor(x, f, fl.MXScaling(scale_rounding="rceil")))
    nv = mx_plots.amax_over_scale(x, fl.quantize_tensor(x, f, fl.NVFP4Scaling()))
    assert floor.min() >= 4 and floor.max() < 8            # [2^emax, 2^(emax+1))
    assert rceil.min() > 3 and rceil.max() <= 6            # (max / 2, max]
    assert nv.size == 2 * floor.size and abs(nv - 6).max() < 6 * 2.0**-4 + 1e-6  # E4M3 block scale rounding


# ----------------------------------------------------------------------------------------------
# describe_mx_block, the function behind the slider
def test_describe_mx_block_957() -> None:
    text = mx_plots.describe_mx_block(957.0, "e4m3")
    floor = next(line for line in text.splitlines() if line.startswith("floor "))
    rceil = next(line for line in text.splitlines() if line.startswith("rceil "))
    assert "0x80" in floor and "2^1" in floor and "478.5" in floor and " 896 " in floor and "yes" in floor
    assert "0x81" in rceil and "2^2" in rceil and "239.25" in rceil and " 960 " in rceil and " no " in rceil


@pytest.mark.parametrize("amax", [2.0**-3, 1.0, 5.0, 7.9, 957.0, 60000.0])
@pytest.mark.parametrize("fmt", mx_plots.MX_ELEMENT_FORMATS)
def test_describe_mx_block_agrees_with_quantize_tensor(amax: float, fmt: str) -> None:
    x = mx_plots.BLOCK_PROFILE * np.float32(amax)
    for rounding in ("floor", "rceil"):
        q = fl.quantize_tensor(x, fmt, fl.MXScaling(scale_rounding=rounding))
        k = int(fl.mx_scale_exponents(np.array([np.abs(x).max()]), fl.get_format(fmt), rounding)[0])
        assert float(q.scales[0]) == 2.0**k
        line = next(s for s in mx_plots.describe_mx_block(amax, fmt).splitlines() if s.startswith(rounding + " "))
        assert f"0x{k + 127:02X}" in line and ("yes" in line) == q.info["overflow"]


def test_block_profile_has_its_max_first() -> None:
    p = mx_plots.BLOCK_PROFILE
    assert p.shape == (32,) and p.dtype == np.float32 and p[0] == 1.0 and np.abs(p[1:]).max() < 1.0


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_describe_mx_block_rejects_bad_amax(bad: float) -> None:
    with pytest.raises(ValueError, match="amax"):
        mx_plots.describe_mx_block(bad)


def test_mx_block_explorer_widget() -> None:
    pytest.importorskip("ipywidgets")
    box = mx_plots.mx_block_explorer(957.0, "e4m3")
    assert "478.5" in box.text.value
    box.format.value = "float4_e2m1fn"
    box.amax.value = 7.0
    assert "float4_e2m1fn" in box.text.value and "0x7F" in box.text.value


# ----------------------------------------------------------------------------------------------
# figures
def test_figures_are_figures_with_labelled_axes_and_titles() -> None:
    x = fl.llm_activations((16, 128), seed=0)
    figs = [
        mx_plots.plot_block_max_error(["e4m3", "fp4"], points=128),
        mx_plots.plot_scale_rounding({"random": random_blocks(64), "llm": x}, ["e4m3", "fp4"]),
        mx_plots.plot_sqnr_vs_bits(x, {"MXFP4": ("fp4", fl.MXScaling()), "NVFP4": ("fp4", fl.NVFP4Scaling())}),
        mx_plots.plot_fp4_error_distributions(x),
    ]
    for fig in figs:
        assert isinstance(fig, Figure)
        for ax in fig.axes:
            assert ax.get_xlabel() and ax.get_ylabel()
        assert fig._suptitle is not None or fig.axes[0].get_title()
    assert "NVFP4" in figs[2].axes[0].get_title() or "MXFP4" in figs[2].axes[0].get_title()
    assert len(figs[1].axes) == 3


def test_plot_scale_rounding_title_states_the_finding() -> None:
    fig = mx_plots.plot_scale_rounding({"random": random_blocks(1024)}, ["fp4"])
    title = fig._suptitle.get_text()
    assert "floor 4" in title and "rceil 0%" in title  # about 41% of FP4 blocks clip under floor


def test_plot_scale_rounding_needs_data() -> None:
    with pytest.raises(ValueError, match="dataset"):
        mx_plots.plot_scale_rounding({})
