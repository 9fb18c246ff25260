"""Random cases of lab 01_decode_exmy: fresh inputs from a seed, fp8lab's answer, the comparison.

One function per task, named by its id and called as ``task(fn, rng)``: it draws the cases from
``rng``, computes what fp8lab says, calls ``fn`` (the submission's function) and raises
AssertionError with the input, the expected value and what came back at the first difference.

>>> import numpy as np
>>> split_fields(lambda *args, **kwargs: 0, np.random.default_rng(0))  # answers 0: refused
Traceback (most recent call last):
...
AssertionError: split_fields(0x0, 4, 3): expected (0, 0, 0), got 0 (expected 3 items, got int) / split_fields(0x0, 4, 3)：期望 (0, 0, 0)，得到 0（期望 3 项，得到 int）
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import fp8lab as fl
from fp8lab.anatomy import fields
from fp8lab.labs import expect_equal, no_shortcut

__all__ = ['split_fields', 'decode_finite', 'decode_exmy', 'format_range']


def split_fields(split_fields: Callable[..., Any], rng: np.random.Generator) -> None:
    """Every code of the 8-bit formats, random FP16/BF16/FP32 codes and random layouts, against fp8lab's fields and an independent bit-string oracle."""
    cases = []
    for name in ["float8_e4m3fn", "float8_e5m2", "float6_e2m3fn", "float4_e2m1fn"]:
        f = fl.get_format(name)
        codes = [int(c) for c in range(2**f.bits)]
        cases.append((f.exponent_bits, f.mantissa_bits, codes, [fields(c, f) for c in codes]))
    for name in ["float16", "bfloat16", "float32"]:
        f = fl.get_format(name)
        codes = [int(c) for c in rng.integers(0, 2**f.bits, 400, dtype=np.uint64)]
        cases.append((f.exponent_bits, f.mantissa_bits, codes, [fields(c, f) for c in codes]))
    for _ in range(30):  # random layouts: the oracle slices the code's bit string
        e, m = int(rng.integers(1, 9)), int(rng.integers(0, 24))
        codes = [int(c) for c in rng.integers(0, 2 ** (1 + e + m), 40, dtype=np.uint64)]
        want = []
        for c in codes:
            bits = format(c, f"0{1 + e + m}b")
            want.append((int(bits[0]), int(bits[1:1 + e], 2), int(bits[1 + e:] or "0", 2)))
        cases.append((e, m, codes, want))

    for e, m, codes, want in cases:
        with no_shortcut(split_fields) as split:
            got = [split(c, e, m) for c in codes]
        for c, g, w in zip(codes, got, want):
            expect_equal(g, w, what=f"split_fields({c:#x}, {e}, {m})")


def decode_finite(decode_finite: Callable[..., Any], rng: np.random.Generator) -> None:
    """Every finite code of the registered formats up to 8 bits, random FP16/BF16/FP32 codes, formats with unusual biases, against fp8lab.decode."""
    formats = [f for f in fl.list_formats() if f.kind == "float" and f.signed and f.subnormals]
    for _ in range(25):
        e, m = int(rng.integers(2, 7)), int(rng.integers(0, 6))
        try:
            formats.append(fl.FloatFormat("custom", e, m, bias=int(rng.integers(-2, 2 ** e)), special="finite"))
        except ValueError:  # parameters that do not fit float32
            pass
    for f in formats:
        codes = np.arange(2**f.bits) if f.bits <= 8 else rng.integers(0, 2**f.bits, 1500, dtype=np.uint64)
        with np.errstate(invalid="ignore"):  # float32 signalling NaNs warn when widened
            want = fl.decode(codes.astype(f.code_dtype), f).astype(np.float64)
        keep = np.isfinite(want)  # inf and NaN codes belong to Task 3
        codes, want = [int(c) for c in codes[keep]], want[keep]
        with no_shortcut(decode_finite) as decode:
            got = [decode(c, f.exponent_bits, f.mantissa_bits, f.bias) for c in codes]
        expect_equal(got, want, what=f"decode_finite(code, {f.exponent_bits}, {f.mantissa_bits}, {f.bias}) for {f.name}",
                     inputs=[f"{c:#x}" for c in codes])


def decode_exmy(decode_exmy: Callable[..., Any], rng: np.random.Generator) -> None:
    """Every code of every registered signed format up to 8 bits, random FP16/BF16/FP32 codes with all their specials, random made-up formats, against fp8lab.decode."""
    formats = [f for f in fl.list_formats() if f.kind == "float" and f.signed and f.subnormals]
    for _ in range(30):
        e, m = int(rng.integers(1, 7)), int(rng.integers(0, 6))
        special = str(rng.choice(["ieee", "fn", "fnuz", "finite"]))
        try:
            formats.append(fl.FloatFormat("custom", e, m, bias=int(rng.integers(-2, 2 ** e)), special=special))
        except ValueError:  # parameters that leave no finite value or do not fit float32
            pass
    for f in formats:
        if f.bits <= 8:
            codes = np.arange(2**f.bits)
        else:  # random codes plus every code of the top binade (the specials) and the zeros
            top = ((1 << f.exponent_bits) - 1) << f.mantissa_bits
            extra = [top, top | 1, top | ((1 << f.mantissa_bits) - 1), 0, 1 << (f.bits - 1)]
            extra += [c | (1 << (f.bits - 1)) for c in extra]
            codes = np.concatenate([rng.integers(0, 2**f.bits, 1500, dtype=np.uint64), np.array(extra, dtype=np.uint64)])
        with np.errstate(invalid="ignore"):  # float32 signalling NaNs warn when widened
            want = fl.decode(codes.astype(f.code_dtype), f).astype(np.float64)
        codes = [int(c) for c in codes]
        with no_shortcut(decode_exmy) as decode:
            got = [decode(c, f.exponent_bits, f.mantissa_bits, f.bias, f.special) for c in codes]
        expect_equal(got, want, inputs=[f"{c:#x}" for c in codes],
                     what=f"decode_exmy(code, {f.exponent_bits}, {f.mantissa_bits}, {f.bias}, {f.special!r}) for {f.name}")


def format_range(format_range: Callable[..., Any], rng: np.random.Generator) -> None:
    """Every registered signed format and random made-up ones (no mantissa bits, one exponent bit, odd biases), against fp8lab's FloatFormat properties."""
    formats = [f for f in fl.list_formats() if f.kind == "float" and f.signed and f.subnormals]
    formats += [fl.FloatFormat("e3m0", 3, 0, special="fn"), fl.FloatFormat("e2m0", 2, 0, special="finite"),
                fl.FloatFormat("e1m2", 1, 2, special="finite"), fl.FloatFormat("e1m1", 1, 1, special="fn")]
    for _ in range(40):
        e, m = int(rng.integers(1, 9)), int(rng.integers(0, 8))
        special = str(rng.choice(["ieee", "fn", "fnuz", "finite"]))
        try:
            f = fl.FloatFormat("custom", e, m, bias=int(rng.integers(-3, 2 ** e + 2)), special=special)
        except ValueError:
            continue
        if f.max >= f.min_normal:  # skip degenerate layouts whose only normal code is NaN
            formats.append(f)
    want = [(f.max, f.min_normal, f.min_subnormal) for f in formats]
    with no_shortcut(format_range) as fr:
        got = [fr(f.exponent_bits, f.mantissa_bits, f.bias, f.special) for f in formats]
    for f, g, w in zip(formats, got, want):
        expect_equal(g, w, what=f"format_range({f.exponent_bits}, {f.mantissa_bits}, {f.bias}, {f.special!r}) for {f.name}")
