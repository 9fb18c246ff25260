"""fp8lab.hardware: the throughput data keeps its sources and rules, and the roofline arithmetic is right."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import fp8lab as fl
from fp8lab import hardware as hw
from fp8lab.hardware import plots as hplots

RAW = json.loads((__import__("importlib").resources.files("fp8lab.hardware") / "throughput.json").read_text())
GPUS = hw.list_gpu_specs()


# --- the data file ------------------------------------------------------------------------------------------------

def test_the_course_gpus_are_all_there():
    for name in ("h100-sxm", "h100-pcie", "h200", "h800", "a100-80gb", "l40", "l40s", "rtx-4090", "b200"):
        assert name in GPUS


@pytest.mark.parametrize("name", GPUS)
def test_every_figure_names_an_existing_source(name):
    spec = hw.get_gpu_spec(name)
    assert spec.source in RAW["sources"]
    for t in spec.tensor.values():
        assert t.source in RAW["sources"], f"{name} {t.format}: source {t.source!r} is not in 'sources'"
    for s in spec.sources():
        assert s.url.startswith("https://") and s.title and s.kind in {"datasheet", "whitepaper", "paper", "third-party"}


def test_sources_say_how_the_figures_were_read():
    for key, s in RAW["sources"].items():
        assert "checked_via" in s and "footnotes" in s, key
        for url in s["checked_via"]:
            assert url.startswith("https://"), (key, url)


@pytest.mark.parametrize("name", GPUS)
def test_each_rate_is_what_the_source_prints_and_dense_is_derived_only_from_a_sparse_figure(name):
    entry = RAW["gpus"][name]
    spec = hw.get_gpu_spec(name)
    raw = RAW["gpus"][entry["tensor_same_as"]]["tensor"] if entry.get("tensor_same_as") else entry["tensor"]
    assert set(raw) == set(spec.tensor)
    for fmt, printed in raw.items():
        t = spec.tensor[fmt]
        if "dense" in printed:
            assert t.dense == printed["dense"] and not t.dense_derived
        else:
            assert t.dense_derived and t.dense == printed["sparse"] / 2  # "Specifications 1/2 lower without sparsity"
        assert t.sparse == printed.get("sparse")


@pytest.mark.parametrize("name", GPUS)
def test_sparse_figures_are_twice_the_dense_ones_where_both_are_printed(name):
    # 2:4 structured sparsity doubles the rate; datasheets round (L40S prints BF16 362.05 dense, 733 sparse)
    for t in hw.get_gpu_spec(name).tensor.values():
        if t.sparse is not None and not t.dense_derived:
            assert 1.95 <= t.sparse / t.dense <= 2.05, (name, t)
        if t.fp16_accumulate is not None:
            assert t.fp16_accumulate.dense == pytest.approx(2 * t.dense, rel=0.01), (name, t.format)


def test_h100_dense_rates_derived_from_the_datasheet_match_the_whitepaper():
    spec = hw.get_gpu_spec("h100")
    check = spec.cross_check
    assert check["source"] == "hopper-whitepaper"
    for fmt, dense in check["dense"].items():
        assert spec.throughput(fmt).dense == pytest.approx(dense, rel=1e-3), fmt
    for fmt, sparse in check["sparse"].items():
        assert spec.throughput(fmt).sparse == pytest.approx(sparse, rel=1e-3), fmt


def test_fp8_tensor_cores_exactly_from_compute_capability_8_9():
    # torch._scaled_mm needs sm_89 or sm_90 (Ada, Hopper); Ampere has none
    for name in GPUS:
        spec = hw.get_gpu_spec(name)
        assert spec.supports("fp8") == (float(spec.compute_capability) >= 8.9), name
        assert spec.supports("fp4") == (spec.architecture == "Blackwell"), name


def test_architecture_and_compute_capability_agree():
    expected = {"Ampere": "8.0", "Ada Lovelace": "8.9", "Hopper": "9.0", "Blackwell": "10.0"}
    for name in GPUS:
        spec = hw.get_gpu_spec(name)
        assert expected[spec.architecture] == spec.compute_capability, name


def test_memory_figures_agree_with_the_sizing_data():
    for name in GPUS:
        spec = hw.get_gpu_spec(name)
        if spec.sizing_gpu is None:
            assert spec.memory_bytes() is None
            continue
        g = fl.get_gpu(spec.sizing_gpu)
        assert spec.memory.startswith(g.marketed), (name, spec.memory, g.marketed)
        assert spec.memory_bytes() == g.memory_bytes


def test_h200_differs_from_h100_only_in_memory():
    h100, h200 = hw.get_gpu_spec("h100"), hw.get_gpu_spec("h200")
    for fmt in h200.formats:
        assert h200.throughput(fmt).sparse == h100.throughput(fmt).sparse
    assert h200.memory_bandwidth > h100.memory_bandwidth


def test_h800_is_resolved_through_the_h100_and_says_so():
    h800 = hw.get_gpu_spec("h800")
    assert h800.tensor_same_as == "h100-sxm"
    assert h800.throughput("fp8") == hw.get_gpu_spec("h100").throughput("fp8")
    assert [s.kind for s in h800.sources()][0] == "third-party"
    assert h800.nvlink_gb_s < hw.get_gpu_spec("h100").nvlink_gb_s


def test_names_and_errors():
    assert hw.get_gpu_spec("NVIDIA H100 SXM").name == "h100-sxm"
    assert hw.get_gpu_spec("RTX 4090").name == "rtx-4090"
    with pytest.raises(ValueError, match="known GPUs"):
        hw.get_gpu_spec("h300")
    with pytest.raises(TypeError):
        hw.get_gpu_spec(100)
    with pytest.raises(ValueError, match="no recorded fp8"):
        hw.get_gpu_spec("a100").throughput("fp8")
    with pytest.raises(ValueError, match="no sparse"):
        hw.get_gpu_spec("h100").peak_flops("fp64", sparse=True)
    with pytest.raises(ValueError, match="unknown tensor-core format"):
        hw.get_gpu_spec("h100").throughput("fp12")
    with pytest.raises(ValueError, match="unknown source"):
        hw.get_source("nowhere")
    with pytest.raises(ValueError, match="positive"):
        hw.Throughput("fp8", dense=-1.0)
    assert hw.get_gpu_spec("h100").throughput("e4m3") is hw.get_gpu_spec("h100").throughput("fp8")


# --- roofline -----------------------------------------------------------------------------------------------------

def count_flops_and_bytes(m, n, k, a_bits, b_bits, c_bits):
    """An independent count: build the operands and count the multiply-adds of a naive GEMM."""
    a, b = np.ones((m, k)), np.ones((k, n))
    multiply_adds = int((a[:, :, None] * b[None, :, :]).size)  # every a[i, l] * b[l, j] term
    return 2 * multiply_adds, (a.size * a_bits + b.size * b_bits + m * n * c_bits) / 8


@pytest.mark.parametrize("shape", [(1, 8, 16), (4, 6, 10), (32, 16, 8)])
@pytest.mark.parametrize("bits", [(16, 16, 16), (8, 8, 16), (16, 4.25, 16)])
def test_gemm_cost_against_an_explicit_count(shape, bits):
    c = hw.GemmCost(*shape, *bits)
    flops, nbytes = count_flops_and_bytes(*shape, *bits)
    assert c.flops == flops and c.bytes == pytest.approx(nbytes) and c.intensity == pytest.approx(flops / nbytes)


def test_operand_bits_reads_formats_and_qtensors():
    assert hw.operand_bits("bf16") == fl.get_format("bf16").bits
    assert hw.operand_bits("int4") == 4 and hw.operand_bits("e5m2") == 8 and hw.operand_bits("fp64") == 64
    q = fl.quantize_tensor(fl.llm_activations((16, 256), seed=0), "fp4", fl.MXScaling())
    assert hw.operand_bits(q) == q.bits_per_element == 4.25
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError):
            hw.operand_bits(bad)
    with pytest.raises(TypeError):
        hw.operand_bits(True)
    with pytest.raises(TypeError):
        hw.operand_bits([8])


@pytest.mark.parametrize("gpu", ["h100", "a100", "l40s", "b200"])
@pytest.mark.parametrize("m", [1, 16, 256, 4096, 16384])
def test_roofline_time_bound_and_ridge(gpu, m):
    fmt = "bf16"
    p = hw.roofline(gpu, fmt, m, 4096, 4096)
    spec = hw.get_gpu_spec(gpu)
    flops = 2 * m * 4096 * 4096
    nbytes = (m * 4096 + 4096 * 4096 + m * 4096) * 2
    assert p.time == max(flops / spec.peak_flops(fmt), nbytes / spec.memory_bandwidth)
    assert p.bound == ("compute" if flops / nbytes >= spec.ridge_point(fmt) else "memory")
    assert p.attainable_flops == pytest.approx(min(spec.peak_flops(fmt), flops / nbytes * spec.memory_bandwidth))
    assert 0 < p.fraction_of_peak <= 1


def test_decode_intensity_is_about_two_tokens_per_weight_byte():
    for fmt, weight_bytes in (("bf16", 2), ("fp8", 1)):
        for m in (1, 2, 8):
            i = hw.roofline("h100", fmt, m, 8192, 8192).cost.intensity
            assert i == pytest.approx(2 * m / weight_bytes, rel=0.01)


def test_compute_bound_m_is_the_first_compute_bound_row_count():
    for gpu, fmt in (("h100", "bf16"), ("h100", "fp8"), ("rtx-4090", "fp8"), ("b200", "fp4")):
        m = hw.compute_bound_m(gpu, fmt, 8192, 8192)
        assert hw.roofline(gpu, fmt, m, 8192, 8192).bound == "compute"
        assert hw.roofline(gpu, fmt, m - 1, 8192, 8192).bound == "memory"
    assert hw.compute_bound_m("h100", "bf16", 8, 8) is None  # an 8x8 weight never reaches the ridge


def test_speedup_limits_and_prologue():
    # both roofs double (bytes halve, FLOP/s doubles): W8A8 with FP8 out is 2x everywhere (the output bytes aside)
    for m in (1, 64, 4096):
        assert hw.speedup("h100", m, 8192, 8192, c="fp8") == pytest.approx(2.0, rel=0.01)
    # weights-only FP8 on an A100 (BF16 tensor cores): up to 2x at decode, 1x once compute-bound
    w8a16 = [hw.speedup("a100", m, 8192, 8192, fast="bf16", fast_operands=("bf16", "fp8")) for m in (1, 16384)]
    assert w8a16[0] == pytest.approx(2.0, rel=0.01) and w8a16[1] == pytest.approx(1.0, rel=1e-3)
    cast = hw.activation_cast_bytes(8192, 8192)
    assert cast == 8192 * 8192 * 3
    slow = hw.speedup("h100", 8192, 8192, 8192, prologue_bytes=cast)
    assert 1 < slow < 2
    p = hw.roofline("h100", "fp8", 8192, 8192, 8192, prologue_bytes=cast)
    assert p.time == pytest.approx(max(p.compute_time, p.memory_time) + cast / p.bandwidth)
    with pytest.raises(ValueError):
        hw.roofline("h100", "fp8", 0, 1, 1)
    with pytest.raises(ValueError):
        hw.roofline("h100", "fp8", 1, 1, 1, prologue_bytes=-1)


# --- figures and recorded results ---------------------------------------------------------------------------------

def test_figures_label_units_and_state_findings():
    fig = hplots.plot_tensor_throughput(["h100", "h200", "a100", "l40s", "rtx-4090", "b200"])
    ax = fig.axes[0]
    assert "TFLOP/s" in ax.get_ylabel()
    ratios = {round(hw.get_gpu_spec(g).throughput("fp8").dense / hw.get_gpu_spec(g).throughput("bf16").dense, 2)
              for g in ("h100", "h200", "l40s", "rtx-4090", "b200")}
    assert ratios == {2.0, 2.02}  # the L40S datasheet's rounding, visible in the title
    assert "2x to 2.02x" in ax.get_title() and "(5 of 6)" in ax.get_title()
    pts = [("decode", hw.roofline("h100", "fp8", 1, 8192, 8192)), ("prefill", hw.roofline("h100", "fp8", 4096, 8192, 8192))]
    ax = hplots.plot_roofline("h100", points=pts).axes[0]
    assert "FLOP per byte" in ax.get_xlabel() and "TFLOP/s" in ax.get_ylabel()
    assert f"{hw.get_gpu_spec('h100').ridge_point('bf16'):.0f}" in ax.get_title()
    ax = hplots.plot_speedup_vs_tokens(["h100", "a100"], 8192, 8192, [1, 64, 4096],
                                       cases=[("W8A16", {"fast": "bf16", "fast_operands": ("bf16", "fp8")})]).axes[0]
    assert "tokens" in ax.get_xlabel() and "1x to" in ax.get_title().replace("1.0", "1")


def test_recorded_results_round_trip(tmp_path):
    assert hw.load_bench_results(tmp_path) == []
    rec = {"device": "NVIDIA H100 80GB HBM3", "capability": [9, 0], "speed": {"size": 8192, "rows": []}}
    (tmp_path / "hopper_nvidia_h100.json").write_text(json.dumps(rec))
    (tmp_path / "other.json").write_text("{}")
    got = hw.load_bench_results(tmp_path)
    assert len(got) == 1 and got[0]["device"] == rec["device"] and got[0]["path"].endswith("hopper_nvidia_h100.json")
    (tmp_path / "hopper_bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="hopper_bad"):
        hw.load_bench_results(tmp_path)
    (tmp_path / "hopper_bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        hw.load_bench_results(tmp_path)
    with pytest.raises(TypeError):
        hw.load_bench_results(3)


def test_the_import_stays_light():
    import subprocess
    import sys

    code = "import fp8lab.hardware, sys; print(sorted(m for m in ('matplotlib', 'ipywidgets', 'selenium') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
    assert math.isfinite(hw.get_gpu_spec("h100").ridge_point("fp8"))
