"""The kv, fit and memory subcommands: tables on stdout, labelled units, exit codes."""

from __future__ import annotations

import argparse
import re

import pytest

from fp8lab.sizing import kv_cache_bytes, param_count
from fp8lab.cli import main
from fp8lab.sizing.cli import parse_count


def run(argv, capsys):
    try:
        code = main(argv)  # the real `fp8lab` entry point, which wires these subcommands in
    except SystemExit as e:  # argparse rejects a bad value before any handler runs
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def table_rows(out: str) -> dict[str, list[str]]:
    """First cell -> the other cells, for the lines after the header row."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] in (["dtype"], ["plan"], ["gpu"],
                                                                          ["component"], ["item"]))
    return {line.split()[0]: line.split()[1:] for line in lines[start + 1:] if line.strip() and line[0] != "-"}


def number(cell: str) -> float:
    return float(cell.replace(",", ""))


def test_kv_default_is_a_table_over_dtypes(capsys):
    code, out, err = run(["kv", "--model", "llama-3-70b", "--seq", "4096", "--batch", "1"], capsys)
    assert code == 0 and err == ""
    assert "GB = 10^9 bytes, GiB = 2^30 bytes" in out
    rows = table_rows(out)
    assert list(rows) == ["float32", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"]
    for dtype, cells in rows.items():
        total = int(cells[4].replace(",", ""))
        assert total == kv_cache_bytes("llama-3-70b", 4096, 1, dtype)
        assert number(cells[5]) == pytest.approx(total / 1e9, abs=1e-3)
        assert number(cells[6]) == pytest.approx(total / 2**30, abs=1e-3)
    assert rows["bfloat16"][1] == "4,096" and rows["bfloat16"][2] == "327,680"  # bytes per token per layer / token


def test_kv_single_dtype_with_block_scales(capsys):
    code, out, _ = run(["kv", "--model", "deepseek-v3", "--seq", "1000", "--dtype", "fp8", "--scales", "block",
                        "--block-size", "128"], capsys)
    assert code == 0 and "MLA, latent 512 + RoPE key 64" in out
    (cells,) = table_rows(out).values()
    assert int(cells[4].replace(",", "")) == 61 * 1000 * (576 + 5 * 4)


def test_kv_comma_separated_dtypes_and_window(capsys):
    code, out, _ = run(["kv", "--model", "mistral-7b", "--seq", "32768", "--dtype", "bf16,fp8"], capsys)
    assert code == 0 and "4,096 tokens kept by the window" in out
    assert list(table_rows(out)) == ["bfloat16", "float8_e4m3fn"]


def test_fit_one_gpu(capsys):
    code, out, _ = run(["fit", "--model", "llama-3-70b", "--gpu", "h100", "--weights-dtype", "fp8",
                        "--kv-dtype", "fp8"], capsys)
    assert code == 0
    assert "sold as 80GB, which is 80 GiB = 85.90 GB" in out
    assert "max context at batch 1" in out and "91,351 tokens" in out
    assert re.search(r"weights \(float8_e4m3fn\)\s+70\.55 GB \(65\.71 GiB\)", out)


def test_fit_table_over_gpus(capsys):
    code, out, _ = run(["fit", "--model", "llama-3-70b"], capsys)
    rows = table_rows(out)
    assert code == 0 and list(rows) == ["h100", "h200", "a100-80gb", "a100-40gb", "l40", "rtx-4090"]
    assert rows["h100"][3] == "no" and rows["h200"][3] == "yes"  # 141.1 GB of bf16 weights


def test_memory_table_over_recipes(capsys):
    code, out, _ = run(["memory", "--params", "7e9"], capsys)
    rows = table_rows(out)
    assert code == 0 and "activations not included" in out and "GiB = 2^30" in out
    assert rows["mixed-bf16"][0] == "16.000" and rows["mixed-bf16"][2] == "112,000,000,000"
    assert rows["deepseek-v3"][0] == "12.000"


def test_memory_zero_breakdown(capsys):
    code, out, _ = run(["memory", "--params", "7.5B", "--recipe", "mixed-fp16", "--num-gpus", "64",
                        "--zero-stage", "1"], capsys)
    rows = table_rows(out)
    assert code == 0 and rows["total"][-3] == "31,406,250,000"  # ZeRO paper: 31.4 GB


def test_memory_of_a_model(capsys):
    code, out, _ = run(["memory", "--model", "llama-2-7b", "--recipe", "fp32"], capsys)
    total = int(table_rows(out)["total"][-3].replace(",", ""))
    assert code == 0 and total == 16 * param_count("llama-2-7b").total


@pytest.mark.parametrize("argv,message", [
    (["kv", "--model", "gpt-5"], "unknown model 'gpt-5'; known models: llama-2-7b"),
    (["kv", "--model", "llama-2-7b", "--dtype", "fp9"], "unknown format 'fp9'"),
    (["kv", "--model", "llama-2-7b", "--seq", "-1"], "argument --seq: expected a whole number >= 1"),
    (["kv", "--model", "llama-2-7b", "--seq", "0"], "argument --seq: expected a whole number >= 1"),
    (["fit", "--model", "llama-3-70b", "--num-gpus", "0"], "argument --num-gpus: expected a whole number >= 1"),
    (["fit", "--model", "llama-3-70b", "--gpu", "h100", "--utilization", "0"], "utilization"),
    (["memory", "--params", "7e9", "--num-gpus", "0"], "argument --num-gpus: expected a whole number >= 1"),
    (["memory", "--params", "7.5"], "a parameter count is a whole number"),
    (["kv", "--model", "llama-2-7b", "--scales", "block"], "block_size"),
    (["fit", "--model", "llama-2-7b", "--gpu", "b300"], "unknown GPU 'b300'"),
    (["memory", "--params", "7e9", "--recipe", "adam"], "unknown memory plan"),
])
def test_bad_input_exits_2_with_a_message(argv, message, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and message in err, err
    assert out == "", f"nothing but the error may be printed, got {out!r}"
    assert f"fp8lab {argv[0]}: error:" in err


def test_parse_count():
    assert parse_count("7e9") == parse_count("7B") == parse_count("7b") == 7 * 10**9
    assert parse_count("175000000000") == 175 * 10**9 and parse_count("1.5T") == 1.5e12
    for bad in ["seven", "-7B", "0", "7X"]:
        with pytest.raises(argparse.ArgumentTypeError):
            parse_count(bad)
