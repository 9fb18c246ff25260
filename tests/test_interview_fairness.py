"""Grading that is fair to right answers (issue 22 §1): the precision rule, the bank's own values, units."""

from __future__ import annotations

import dataclasses
import math
import re
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fp8lab.interview as iv
from fp8lab.interview.bank import DEFAULT_PRECISION, parse_precision, stated_precisions
from fp8lab.interview.grading import accepted_error

NUMERIC = [q for q in iv.load_bank() if q.kind == "numeric"]


def rounded(a: float, precision: tuple[str, int]) -> str:
    """The true value as a learner would round it to the question's precision."""
    kind, n = precision
    if kind == "exact":
        return iv.format_answer(dataclasses.replace(NUMERIC[0], answer=a, unit=""))
    return f"{a:.{n}g}" if kind == "sig" else f"{a:.{n}f}"


def unit_in_the_third_figure(a: float) -> Fraction:
    k = Decimal(a).adjusted()  # floor(log10 |a|), exactly (math.log10 rounds 9.9999999999993e299 up to 300)
    return Fraction(10) ** (k - 2)


# ----------------------------------------------------------------------------------------------
# the rule, precisely: |x - a| <= half a unit in the third significant figure of a
@pytest.mark.parametrize("answer, inside, outside", [
    (448.0, ["448", "447.5", "448.5", "447.6"], ["447.4", "448.6", "450"]),
    (0.001953125, ["0.00195", "1.95e-3", "0.001955", "0.0019485"], ["0.00194", "0.00196", "0.002"]),
    (65504.0, ["65500", "6.55e4", "65550"], ["65400", "65600", "6.6e4"]),
    (1.52587890625e-05, ["1.53e-5", "1.5259e-5", "1.526e-5"], ["1.52e-5", "1.5e-5", "1.54e-5"]),
    (-127.0, ["-127", "-126.6"], ["-126", "-128"]),
    (999.6, ["1000", "999.6", "999.2"], ["998", "1001"]),  # the rounded form has one more digit: still accepted
    (0.1, ["0.1", "0.1005", "0.0995"], ["0.101", "0.099"]),
])
def test_three_significant_figures_is_half_a_unit_in_the_third_figure(answer, inside, outside) -> None:
    q = dataclasses.replace(NUMERIC[0], answer=answer, tolerance=0.0, rel_tolerance=None, precision=None, unit="")
    for text in inside:
        assert iv.grade(q, text).correct, (answer, text)
    for text in outside:
        assert iv.grade(q, text).correct is False, (answer, text)


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-300, max_value=1e300), st.booleans())
def test_the_three_figure_form_is_accepted_and_a_unit_off_is_not(a: float, negative: bool) -> None:
    a = -a if negative else a
    q = dataclasses.replace(NUMERIC[0], answer=a, tolerance=0.0, rel_tolerance=None, precision=None, unit="")
    assert iv.grade(q, f"{a:.3g}").correct, f"{a:.3g}"
    u = unit_in_the_third_figure(a)
    half = float(u / 2)
    assert accepted_error(q) == pytest.approx(half, rel=1e-8)
    exact = Fraction(a)
    for factor, ok in ((Fraction(49, 100), True), (Fraction(51, 100), False), (Fraction(3, 2), False)):
        for sign in (1, -1):
            x = exact + sign * factor * u
            assert iv.grade(q, repr(float(x))).correct is ok, (a, factor, sign)


@pytest.mark.parametrize("precision, answer, accepted, refused", [
    ("exact", 65504.0, ["65504", "65 504", "2^16 - 2^5"], ["65500", "65503.9"]),
    ("2 significant", 1.52587890625e-05, ["1.5e-5", "1.55e-5", "2^-16"], ["1.4e-5", "1.6e-5"]),
    ("4 significant", 0.001953125, ["0.001953", "0.0019535"], ["0.00195", "0.001954"]),
    ("3 decimals", 8.001953125, ["8.002", "8.0015"], ["8.00", "8.003"]),
    ("4 decimals", 4.500030517578125, ["4.5000", "4.50008"], ["4.5001", "4.4999"]),
])
def test_a_stated_precision_replaces_three_figures(precision, answer, accepted, refused) -> None:
    q = dataclasses.replace(NUMERIC[0], answer=answer, tolerance=0.0, rel_tolerance=None, precision=precision, unit="")
    for text in accepted:
        assert iv.grade(q, text).correct, (precision, text)
    for text in refused:
        assert iv.grade(q, text).correct is False, (precision, text)


def test_a_wider_stored_tolerance_still_applies() -> None:
    q = iv.get_question("training-stochastic-rounding")  # rel_tolerance 5%: "about where"
    assert iv.grade(q, "1.9").correct and not iv.grade(q, "1.8").correct


# ----------------------------------------------------------------------------------------------
# the rule applied to every numeric question in the bank
@pytest.mark.parametrize("q", NUMERIC, ids=[q.id for q in NUMERIC])
def test_every_numeric_question_accepts_its_value_at_the_precision_it_states(q: iv.Question) -> None:
    precision = parse_precision(q.precision)
    text = rounded(q.answer, precision)
    for lang in iv.LANGS:
        assert iv.grade(q, text, lang).correct, (q.id, text)
        if q.unit:
            assert iv.grade(q, f"{text} {q.unit}", lang).correct, (q.id, text, q.unit)
    if precision == DEFAULT_PRECISION:
        # nothing stated: three figures is all one may demand, in both languages' prompts
        for lang in iv.LANGS:
            assert stated_precisions(q.text("prompt", lang), lang) <= {DEFAULT_PRECISION}, (q.id, lang)
    else:
        # a question that needs more (or allows less) says so in its prompt, in English and in Chinese
        for lang in iv.LANGS:
            assert precision in stated_precisions(q.text("prompt", lang), lang), (q.id, lang, q.text("prompt", lang))
        three = f"{q.answer:.3g}"
        if precision[0] == "exact" and float(three) != q.answer:
            assert iv.grade(q, three).correct is False, (q.id, three)  # the statement is what makes it exact


def test_the_prompts_that_state_a_precision() -> None:
    stated = {q.id: q.precision for q in NUMERIC if q.precision}
    assert stated["fb-fp16-max"] == "exact" and stated["myth-fp8-min-1e-38"] == "2 significant"
    assert "fp8-e4m3-min-subnormal" not in stated and "fp8-e4m3fn-max" not in stated
    assert all(p == "exact" or re.fullmatch(r"\d+ (significant|decimals)", p) for p in stated.values())


@pytest.mark.parametrize("qid, responses", [
    ("myth-fp8-min-1e-38", ["1.5e-5", "1.53e-5", "2^-16"]),      # its correction quotes 1.5e-5
    ("fp8-e4m3-min-subnormal", ["1.95e-3", "0.00195", "2^-9", "2⁻⁹", "1.953125e-3"]),
    ("fa-fp32-max", ["3.40e38", "3.4e38", "3.4028e+38", "2^128"]),
    ("fb-bf16-epsilon", ["0.00781", "2^-7", "7.81e-3"]),
])
def test_the_banks_own_approximate_values_are_accepted(qid: str, responses: list[str]) -> None:
    q = iv.get_question(qid)
    for r in responses:
        for lang in iv.LANGS:
            assert iv.grade(q, r, lang).correct, (qid, r)


_QUOTED = re.compile(r"(?:≈|about|约|approximately|~)\s*([-+]?\d[\d.,]*(?:e[-+]?\d+)?)", re.I)


def test_values_quoted_near_the_answer_in_its_own_texts_are_accepted() -> None:
    """A number the question's explanation, correction or hints give as approximately the answer is accepted."""
    checked, refused = 0, []
    for q in NUMERIC:
        if not q.answer or not math.isfinite(q.answer):
            continue
        texts = [q.text(f, lang) for f in ("explanation", "correction") for lang in iv.LANGS]
        texts += [h for lang in iv.LANGS for h in q.items("hints", lang)]
        for text in texts:
            for m in _QUOTED.finditer(text):
                try:
                    x = iv.grading.parse_number(m.group(1).rstrip(".,"))
                except ValueError:
                    continue
                if x != q.answer and abs(x - q.answer) <= 0.05 * abs(q.answer):  # an approximation of the answer
                    checked += 1
                    if not iv.grade(q, m.group(1).rstrip(".,")).correct:
                        refused.append((q.id, m.group(0)))
    assert checked >= 5 and refused == []


# ----------------------------------------------------------------------------------------------
# units
def question(qid: str, **changes) -> iv.Question:
    return dataclasses.replace(iv.get_question(qid), **changes)


@pytest.mark.parametrize("qid, response", [
    ("kv-llama2-7b-per-token", "512 KiB"), ("kv-llama2-7b-per-token", "0.5 MiB"), ("kv-llama2-7b-per-token", "524,288 B"),
    ("kv-llama2-7b-per-token", "4194304 bits"), ("kv-llama2-7b-per-token", "524 288 字节"), ("kv-llama2-7b-per-token", "2^19 bytes"),
    ("kv-llama3-70b-4096", "1280 MiB"), ("kv-llama3-70b-4096", "1.34 GB"), ("kv-llama3-70b-4096", "1310720 KiB"),
    ("kv-h100-gb", "80 GiB"), ("kv-h100-gb", "85.9 GB"), ("kv-h100-gb", "85900 MB"), ("w4a16-llama-70b-weights", "32.9 GiB"),
    ("hw-h100-fp8-dense", "1.979 PFLOPS"), ("hw-h100-fp8-dense", "1979 TFLOP/s"), ("hw-h100-fp8-dense", "1.979e15 FLOPS"),
    ("hw-h100-fp8-dense", "1,979 tflops"), ("hw-h100-fp8-dense", "1979000 GFLOPS"), ("hw-l40-fp8", "0.362 PFLOP/s"),
    ("hw-h100-fp8-dense", "1.979 petaFLOPS"), ("kv-llama3-70b-4096", "1.25 gibibytes"), ("kv-h100-gb", "85.9 gigabytes"),
    ("kv-llama3-70b-4096", "1280 MiBytes"),
    ("hw-ridge-point", "590.7 FLOP/B"), ("hw-ridge-point", "591 FLOPs/byte"), ("hw-ridge-point", "590.7 FLOP per byte"),
    ("hw-ridge-point", "590.7 FLOP/字节"), ("hw-ridge-point", "73.8 FLOP/bit"),
    ("mx-mxfp8-bits", "8.25 bit"), ("mx-mxfp8-bits", "8.25 位"), ("mx-mxfp8-bits", "8.25 比特"), ("mx-mxfp8-bits", "1.03125 bytes"),
    ("fb-fp16-decimal-digits", "3.31 digits"), ("fb-fp16-decimal-digits", "3.31 位"), ("fb-fp16-decimal-digits", "3.31 位有效数字"),
    ("fp8-e4m3-normal-decades", "4.46 decades"), ("fp8-e4m3-normal-decades", "4.46 个数量级"),
    ("fp8-e4m3-normal-decades", "4.46 orders of magnitude"),
    ("kv-fp8-head-scales", "3.125%"), ("kv-fp8-head-scales", "3.125 percent"), ("kv-fp8-head-scales", "31.25‰"),
    ("hw-fp8-over-bf16", "2×"), ("hw-fp8-over-bf16", "2x"), ("hw-fp8-over-bf16", "2 times"), ("hw-fp8-over-bf16", "2倍"),
    ("hw-fp8-over-bf16", "200%"),
    ("kv-max-context-70b-fp8", "91,351 tokens"), ("kv-max-context-70b-fp8", "91351 个 token"),
    ("kv-max-batch-8b", "64 sequences"), ("kv-max-batch-8b", "64 条"), ("mx-block-size", "32 elements"),
    ("mx-block-size", "32 个元素"), ("fa-e4m3-subnormal-count", "7 values"),
])
def test_a_compatible_unit_is_converted(qid: str, response: str) -> None:
    for lang in iv.LANGS:
        g = iv.grade(iv.get_question(qid), response, lang)
        assert g.correct, (qid, response, g.feedback)


def test_a_conversion_is_shown() -> None:
    g = iv.grade(iv.get_question("kv-llama2-7b-per-token"), "512 KiB")
    assert g.correct and "(512 KiB = 524288 bytes)" in g.feedback and g.response == 524288.0
    assert "（1280 MiB = 1.25 GiB）" in iv.grade(iv.get_question("kv-llama3-70b-4096"), "1280 MiB", "zh").feedback
    g = iv.grade(iv.get_question("mx-mxfp8-bits"), "8.25 bytes")  # a conversion can also show a wrong answer
    assert g.correct is False and "(8.25 bytes = 66 bits)" in g.feedback


@pytest.mark.parametrize("qid, response, says", [
    ("fp8-e4m3fn-max", "448 apples", "pure number"), ("fp8-e4m3fn-max", "448 GiB", "pure number"),
    ("fp8-e4m3fn-max", "448 s", "pure number"), ("fp8-e4m3fn-max", "448 m²", "pure number"),
    ("mx-mxfp8-bits", "8.25 GiB/s", "bits"), ("mx-mxfp8-bits", "8.25 seconds", "bits"), ("mx-mxfp8-bits", "8.25 bananas", "bits"),
    ("fb-fp16-decimal-digits", "3.31 bits", "digits"), ("hw-h100-fp8-dense", "1979 GB", "TFLOPS"),
    ("hw-h100-fp8-dense", "1979 TFLOP", "TFLOPS"), ("kv-h100-gb", "80 GB/s", "GB"), ("kv-h100-gb", "80 tokens", "GB"),
    ("kv-fp8-head-scales", "3.125 GB", "%"), ("hw-ridge-point", "590.7 FLOPS", "FLOP/byte"),
    ("kv-llama3-70b-4096", "1.25 Gb s", "GiB"),
])
def test_an_unknown_or_incompatible_unit_is_refused_with_a_note(qid: str, response: str, says: str) -> None:
    for lang in iv.LANGS:
        g = iv.grade(iv.get_question(qid), response, lang)
        assert g.correct is False and g.response is None, (qid, response, g.feedback)
        assert says in g.feedback or (lang == "zh" and "纯数" in g.feedback), g.feedback
        assert format(iv.get_question(qid).answer) not in g.feedback  # refused, not graded: no spoiler
    with pytest.raises(ValueError):
        iv.grading.read_response(iv.get_question(qid), response)


def test_time_units_convert() -> None:
    q = question("fp8-e4m3fn-max", answer=1.5, unit="us", tolerance=0.0, precision="exact")
    for response in ("1.5 us", "1.5 µs", "1.5 μs", "1500 ns", "0.0015 ms", "1.5e-6 s", "1.5 微秒"):
        assert iv.grade(q, response).correct, response
    assert iv.grade(q, "1.5 ms").correct is False


def test_percent_and_factor_on_a_pure_number() -> None:
    q = question("fp8-e4m3fn-max", answer=0.5, tolerance=0.0)
    assert iv.grade(q, "50%").correct and iv.grade(q, "0.5").correct and not iv.grade(q, "50").correct


def test_every_unit_in_the_bank_is_known() -> None:
    from fp8lab.interview.numbers import read_unit

    for q in NUMERIC:
        read_unit(q.unit, q.unit)  # raises for a unit the grader could not convert to
