"""explain() and the fp8lab command: what a learner reads must be right."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

import fp8lab as fl
from fp8lab.cli import formats_table, main, values_table


def test_explain_fields_and_formula():
    e = fl.explain(0.8125, "e4m3")
    assert (e.code, e.sign, e.exponent, e.mantissa, e.kind, e.value) == (0x35, 0, 6, 5, "normal", 0.8125)
    assert e.bits == "0 0110 101" and "2^(6-7) x (1 + 5/8) = 0.8125" in str(e)
    assert e.value == 2.0 ** (e.exponent - 7) * (1 + e.mantissa / 8)


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "fp4", "e3m2", "bf16", "fp16", "e4m3fnuz"])
def test_explain_agrees_with_the_codec(name):
    for x in [0.1, -3.7, 1e-4, 2.5e-3, 300.0, -1e5, 0.0]:
        e = fl.explain(x, name)
        q = fl.quantize(x, name)
        assert e.value == q or (math.isnan(e.value) and math.isnan(q))
        assert e.code == int(fl.encode(x, name))


@pytest.mark.parametrize(
    "x, fmt, kind, note",
    [
        (500.0, "e4m3", "NaN", "overflow"),
        (1e6, "e5m2", "inf", "overflow"),
        (1e-4, "e4m3", "zero", "underflow"),
        (0.0, "ue8m0", "NaN", "has no zero"),
        (-2.0, "ue8m0", "NaN", "unsigned"),
        (5.0, "fp4", "normal", "even code"),
        (3.0, "ue8m0", "normal", "ties round up"),
        (-0.0, "e4m3fnuz", "zero", "no -0"),
        (100.0, "fp4", "normal", "saturated"),
        (0.001, "e4m3", "subnormal", None),
    ],
)
def test_explain_kinds_and_notes(x, fmt, kind, note):
    e = fl.explain(x, fmt)
    assert e.kind == kind
    if note:
        assert any(note in n for n in e.notes), e.notes
    else:
        assert e.notes == ()


def test_explain_integer_and_unsigned_header():
    assert "two's-complement = -100.0" in str(fl.explain(-100, "int8"))
    assert "(unsigned, 8 exponent" in str(fl.explain(1.0, "ue8m0"))


def test_formats_table_is_computed_from_the_formats():
    headers, rows = formats_table()
    by_name = {r[0]: dict(zip(headers, r)) for r in rows}
    assert by_name["float8_e4m3fn"]["max"] == fl.get_format("e4m3").max == 448
    assert by_name["float8_e5m2"]["inf"] is True and by_name["float8_e4m3fn"]["inf"] is False
    assert by_name["float4_e2m1fn"]["finite values"] == 15
    assert len(rows) == len(fl.list_formats())


def test_values_table_lists_every_code():
    headers, rows = values_table("e4m3")
    assert len(rows) == 256 and rows[0x7E][2] == 448.0 and math.isnan(rows[0x7F][2])
    assert rows[1][3] == "subnormal" and rows[0x80][2] == 0.0 and rows[0x80][3] == "zero"


def test_cli_end_to_end(capsys):
    assert main(["explain", "0.8125", "--format", "e4m3"]) == 0
    assert "0x35 = 0 0110 101" in capsys.readouterr().out
    assert main(["formats"]) == 0
    assert "float8_e8m0fnu" in capsys.readouterr().out
    assert main(["values", "nope"]) == 2
    assert "known names" in capsys.readouterr().err
    assert main(["encode", "0.1", "1000", "--format", "e4m3", "--saturate"]) == 0
    assert "0x7E" in capsys.readouterr().out


def test_console_script_is_installed():
    out = subprocess.run([sys.executable, "-m", "fp8lab.cli", "explain", "1", "-f", "bf16"], capture_output=True, text=True, check=True)
    assert "0x3F80" in out.stdout
